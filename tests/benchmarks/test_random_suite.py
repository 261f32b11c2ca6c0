"""The randomized suite (``python -m benchmarks suite random``): reproducible draws that
cover the documented distribution, layoutfuse's results on a fixed seeded sample of
tiny CPU cases (numerics and strides), and the report of cases behind a peer."""

from __future__ import annotations

import collections
import importlib.util
import math
import sys
from pathlib import Path

import pytest
import torch

if importlib.util.find_spec("layoutfuse") is None:  # run from a checkout without install
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from benchmarks import report  # noqa: E402
from benchmarks.harness import unwritten_bytes  # noqa: E402
from benchmarks.layoutfuse_runner import LayoutfuseRunner  # noqa: E402
from benchmarks.random_cases import BYTES, VOCAB, draw_cases  # noqa: E402
from benchmarks.reference import as_outputs, check_result, make_inputs, reference  # noqa: E402
from benchmarks.suite import main  # noqa: E402

CI_SEED, CI_CASES = 2026, 24


def test_a_seed_gives_the_same_cases_and_another_seed_others():
    assert draw_cases(7, 30) == draw_cases(7, 30)
    assert [c.name for c in draw_cases(7, 30)] != [c.name for c in draw_cases(8, 30)]
    names = [c.name for c in draw_cases(7, 200)]
    assert len(set(names)) == len(names)


def test_the_draws_cover_the_distribution():
    cases = draw_cases(11, 600)
    ops = collections.Counter(c.op for c in cases)
    assert set(ops) == {
        "sum", "max", "var_mean", "softmax", "log_softmax", "layernorm", "rmsnorm",
        "copy", "add", "chain",
    }  # fmt: skip
    assert {len(c.shape) for c in cases} == {2, 3, 4}
    assert {c.dtype for c in cases} == {"float32", "bfloat16", "float16"}
    lo, hi = BYTES["cuda"]
    for c in cases:
        view_bytes = c.n_inputs * math.prod(c.shape) * c.torch_dtype.itemsize
        assert view_bytes <= hi, c.name
    sizes = [c.n_inputs * math.prod(c.shape) * c.torch_dtype.itemsize for c in cases]
    assert min(sizes) < 4 * lo and max(sizes) > hi / 4
    assert any(set(VOCAB) & set(c.shape) for c in cases)
    assert any(c.order == (0, 2, 3, 1) and len(c.shape) == 4 for c in cases)  # NHWC
    assert 0.08 < sum(c.slice is not None for c in cases) / len(cases) < 0.25
    assert 0.04 < sum(c.expand is not None for c in cases) / len(cases) < 0.18
    reductions = [c for c in cases if c.op in ("sum", "max", "var_mean")]
    assert any(len(c.dims) == len(c.shape) for c in reductions)
    assert any(c.out_order is not None for c in reductions)
    assert all(c.out_order is not None and c.out_order != c.order for c in cases if c.op == "copy")
    orders = {c.order for c in cases if len(c.shape) == 3}
    assert len(orders) == 6


def _expected_dense(out: torch.Tensor, broadcast_ok: bool) -> bool:
    """Non-overlapping and dense: the strides are a permutation of dense strides (an
    output that broadcasts an expanded input's dim may keep it expanded, stride 0, as
    nvFuser does)."""
    kept = [d for d in range(out.dim()) if out.shape[d] > 1]
    if broadcast_ok:
        kept = [d for d in kept if out.stride(d) != 0]
    dims = sorted(kept, key=lambda d: out.stride(d))
    step = 1
    for d in dims:
        if out.stride(d) != step:
            return False
        step *= out.shape[d]
    return True


@pytest.mark.parametrize("case", draw_cases(CI_SEED, CI_CASES, "cpu"), ids=lambda c: c.name)
def test_layoutfuse_matches_the_reference_on_a_seeded_sample(case):
    device = str(torch.get_default_device())
    inputs = make_inputs(case, device)
    out = LayoutfuseRunner().prepare(case, inputs)(*inputs)
    check_result(case, out, reference(case, inputs))  # values, shape, dtype, pinned strides
    for o in as_outputs(out):
        assert _expected_dense(o, case.expand is not None), (case.name, o.stride())
    plain_input = case.slice is None and case.expand is None and 1 not in case.shape
    if case.op in ("chain", "add") and case.out_order is None and plain_input:
        assert as_outputs(out)[0].stride() == inputs[0].stride(), case.name


def _row(name, lf, eager, compile_, error=None):
    def res(g, err=None):
        return {"gbps": g, "pct": g, "error": err, "schedule": f"sched-{name}"}

    return {
        "case": name,
        "layoutfuse": res(lf, error),
        "eager": res(eager),
        "compile": res(compile_),
    }


def test_behind_lists_cases_past_two_percent_worst_first():
    rows = [
        _row("even", 100, 101, 99),  # within 2%
        _row("slow", 80, 100, 90),
        _row("slower", 50, 10, 100),
        _row("broken", 0, 100, 100, error="boom"),
    ]
    found = report.behind(rows, ["layoutfuse", "eager", "compile"])
    assert [b["case"] for b in found] == ["broken", "slower", "slow"]
    assert found[1]["peer"] == "compile" and found[1]["ratio"] == pytest.approx(0.5)
    assert found[2]["schedule"] == "sched-slow"
    assert "2% behind" in report.behind_lines(found)[0]


def test_behind_compares_times_where_a_system_wrote_fewer_bytes():
    """A system that left an expanded output unwritten counts fewer bytes, so its GB/s is
    not comparable: the cases behind a peer are found by time."""
    rows = [_row("expanded", 1, 100, 120), _row("slow", 200, 100, 120)]
    for row, ms in zip(rows, ((0.001, 4.0, 3.0), (2.0, 4.0, 1.0))):
        for system, t in zip(("layoutfuse", "eager", "compile"), ms):
            row[system]["ms"] = t
    found = report.behind(rows, ["layoutfuse", "eager", "compile"])
    assert [b["case"] for b in found] == ["slow"]
    assert found[0]["peer"] == "compile" and found[0]["ratio"] == pytest.approx(0.5)


def test_unwritten_bytes_count_an_expanded_outputs_copies():
    x = torch.zeros(5, 1, dtype=torch.bfloat16).expand(5, 7)
    assert unwritten_bytes(x) == 5 * 6 * 2
    assert unwritten_bytes([torch.zeros(5, 7), x.contiguous()]) == 0
    assert unwritten_bytes((torch.zeros(3, 1).expand(3, 4), x)) == 3 * 3 * 4 + 60


def test_without_a_seed_the_suite_picks_one_and_prints_it(capsys):
    assert main(["random", "--cases", "3", "--list", "--device", "cpu"]) == 0
    text = capsys.readouterr().out
    seed = int(text.split("seed ")[1].split(",")[0])
    names = [line.split()[0] for line in text.splitlines()[1:]]
    assert names == [c.name for c in draw_cases(seed, 3, "cpu")]


@pytest.mark.parametrize(
    "shape, order, expand, got, ok",
    [
        # r3_097: [13447, 8192] pinned column-major, dim 0 expanded: dim 1 steps by 1
        ((13447, 8192), (1, 0), 0, (0, 1), True),
        ((13447, 8192), (1, 0), 0, (1, 13447), True),  # allocated whole: dense
        ((13447, 8192), (1, 0), 0, (0, 13447), False),  # an unallocated dim's gap kept
        # r3_118: [128, 127, 472] pinned mem120, dim 2 expanded
        ((128, 127, 472), (1, 2, 0), 2, (1, 128, 0), True),
        ((128, 127, 472), (1, 2, 0), 2, (1, 60416, 0), False),
        ((128, 127, 472), (1, 2, 0), None, (1, 128, 0), False),  # nothing expanded
    ],
)
def test_pinned_outputs_may_keep_an_expanded_dim_unallocated(shape, order, expand, got, ok):
    from benchmarks.cases import Case
    from benchmarks.reference import _pinned_strides

    case = Case("t", "random", "chain", shape, order, out_order=order, expand=expand)
    out = torch.empty_strided(shape, got, device="meta")
    assert (_pinned_strides(case, out) == got) == ok


def test_a_case_sliced_and_expanded_along_one_dim_runs():
    """r101_195 (seed 101 of the CPU draws): dim 0 of [2, 1, 8000] sliced from 1 and
    expanded. The expanded input's parent holds one element past the slice's start along
    that dim (it held one, so the slice was empty and the expand failed); the input is a
    stride-0 view there and layoutfuse matches the reference."""
    (case,) = [c for c in draw_cases(101, 196, "cpu") if c.name.startswith("r101_195")]
    assert case.slice is not None and case.slice[0] == case.expand == 0 and case.slice[1] == 1
    inputs = make_inputs(case, str(torch.get_default_device()))
    assert [tuple(x.shape) for x in inputs] == [case.shape]
    assert inputs[-1].stride(case.expand) == 0
    out = LayoutfuseRunner().prepare(case, inputs)(*inputs)
    check_result(case, out, reference(case, inputs))


def test_the_suite_runs_layoutfuse_under_a_given_tuning(tmp_path, capsys):
    """``--tuning`` plans layoutfuse's fusions under those fields (the A/B of a knob on a
    seed); an unknown field is refused before anything runs."""
    from benchmarks.tune import parse_tuning

    tuning = parse_tuning("measure.min_l2=0.05,reduction.outer_row_bytes=256")
    runner = LayoutfuseRunner(tuning=tuning)
    case = draw_cases(CI_SEED, CI_CASES, "cpu")[0]
    runner.prepare(case, make_inputs(case, "cpu"))
    assert runner._fd.executor().tuning == tuning
    argv = ["random", "--seed", str(CI_SEED), "--cases", "1", "--device", "cpu"]
    out = tmp_path / "r.json"
    assert (
        main(
            [*argv, "--systems", "layoutfuse", "--out", str(out), "--tuning", "measure.min_l2=0.05"]
        )
        == 0
    )
    assert out.exists()
    assert main([*argv, "--tuning", "measure.no_such_knob=1"]) == 2
    assert "no tuning field 'no_such_knob'" in capsys.readouterr().out
