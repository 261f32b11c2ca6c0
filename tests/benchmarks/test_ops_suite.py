"""The ops suite (``python -m benchmarks ops``): its cases as the issue lists them, their
byte counts, the checks (they fail on wrong results), the target check, and the quick
suite on the CPU: every case runs on layoutfuse and passes its check, and the result
file has the report's shape with copy percentages."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import pytest
import torch

if importlib.util.find_spec("layoutfuse") is None:  # run from a checkout without install
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from benchmarks.__main__ import main  # noqa: E402
from benchmarks.op_cases import FULL, OpCase, op_cases  # noqa: E402
from benchmarks.op_rows import (  # noqa: E402
    Argsort,
    Cat,
    Dropout,
    IndexSelect,
    NormBackward,
    SlicePointwise,
    TopK,
)
from benchmarks.ops import OpsLayoutfuse, missed_targets, select_cases  # noqa: E402

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


def by_name(cases: list[OpCase]) -> dict[str, OpCase]:
    return {c.name: c for c in cases}


def test_the_full_suite_has_the_issues_cases():
    cases = by_name(op_cases(FULL))
    assert len(cases) == len(op_cases(FULL)) == 64  # 32 per dtype, names unique
    for dtype in ("float32", "bfloat16"):
        for n in (2, 3, 4):
            for side in ("inner", "outer"):
                assert len(cases[f"cat{n}_{side}_{dtype}"].shapes) == n
    assert cases["pad_inner_float32"].shapes == ((8192, 8190),)
    gather = cases["index_select_rows_bfloat16"]
    assert gather.shapes == ((50257, 768),) and gather.op == IndexSelect(8192)
    assert cases["take_along_axis_k_float32"].op.k == 64
    assert cases["topk50_vocab_rows_float32"].shapes == ((64, 50257),)
    assert cases["dropout_p0.1_bfloat16"].shapes == ((8192, 8192),)
    assert {c.op.dim for c in cases.values() if c.group == "cumsum"} == {0, 1}
    not_bound = {c.name.rsplit("_", 1)[0] for c in cases.values() if not c.memory_bound}
    assert not_bound == {"take_along_axis_k", "topk50_vocab_rows", "argsort_rows",
                         "argsort_short_rows"}  # fmt: skip
    assert all(c.why for c in cases.values() if not c.memory_bound)
    assert {c.op.kind for c in cases.values() if c.group == "backward"} == {
        "layer_norm",
        "rms_norm",
        "softmax",
    }


def test_bytes_count_what_must_move():
    s = FULL
    cat = OpCase("c", Cat(1), ((8, 3), (8, 5)))
    assert cat.bytes_moved == 2 * (8 * 8) * 4  # inputs read once, the output written once
    gather = by_name(op_cases(s))["index_select_rows_float32"]
    rows = s.n_index * s.hidden * 4
    assert gather.bytes_moved == rows + s.n_index * 8 + rows  # only the rows the index names
    assert gather.input_bytes == s.vocab * s.hidden * 4 + s.n_index * 8
    mid = OpCase("m", SlicePointwise(((0, 4, 1), (2, 6, 1))), ((4, 8),), "bfloat16")
    assert mid.bytes_moved == 2 * (4 * 4 * 2)  # the kept half read, the output written
    stepped = OpCase("s", SlicePointwise(((0, 4, 1), (0, 8, 2))), ((4, 8),))
    assert stepped.bytes_moved == (4 * 8 + 4 * 4) * 4  # every sector of x is read
    topk = OpCase("t", TopK(3), ((5, 10),))
    assert topk.bytes_moved == 5 * 10 * 4 + 5 * 3 * (4 + 8)


def _off_by_one(out):
    return out + 1


def _swapped_indices(out):
    values, indices = out
    return values, indices.flip(-1)


def _spoil_dw(out):
    dx, dw, *rest = out
    return (dx, dw * 1.1, *rest)


def _keep_all(out):
    return out.where(out != 0, 1.0)


@pytest.mark.parametrize(
    "op,shape,spoil",
    [
        (Cat(0), ((4, 6), (3, 6)), _off_by_one),
        (SlicePointwise(((0, 8, 2), (1, 5, 1))), ((8, 6),), _off_by_one),
        (TopK(4), ((6, 40),), _swapped_indices),
        (Argsort(1), ((6, 40),), lambda idx: idx.flip(-1)),
        (Dropout(0.1), ((64, 64),), _keep_all),
        (NormBackward("layer_norm"), ((16, 48),), _spoil_dw),
        (NormBackward("rms_norm"), ((16, 48),), _spoil_dw),
        (NormBackward("softmax"), ((16, 48),), _off_by_one),
    ],
    ids=["cat", "slice", "topk", "argsort", "dropout-rate", "ln-bwd", "rms-bwd", "softmax-bwd"],
)
def test_checks_pass_eager_and_fail_a_spoiled_result(op, shape, spoil):
    case = OpCase("c", op, shape)
    xs = case.inputs("cpu")
    check = op.checker(xs)
    out = op.function()(*xs)
    check(out)
    with pytest.raises(AssertionError):
        check(spoil(out))


def test_layoutfuse_dropout_keeps_its_uniform_ops_mask():
    case = by_name(select_cases("cpu", True, ""))["dropout_p0.1_float32"]
    xs = case.inputs("cpu")
    (x, p) = xs[0], case.op.p
    y = OpsLayoutfuse().prepare(case, xs)(*xs)
    mask = case.op.mask(x)
    assert torch.equal(y != 0, mask)
    torch.testing.assert_close(y[mask], x[mask] / (1 - p))


def _row(name, bound, lf, peer, copy_pct=None, error=None):
    def res(g, err=None):
        return {"gbps": g, "pct_copy": copy_pct if copy_pct is not None else g, "error": err}

    return {"case": name, "memory_bound": bound, "layoutfuse": res(lf, error),
            "eager": res(peer), "compile": res(peer / 2)}  # fmt: skip


def test_the_target_lists_memory_bound_cases_under_85pct_or_behind():
    rows = [
        _row("fine", True, 90.0, 91.0),  # within 2% of the peer, over 85% of copy
        _row("slow", True, 90.0, 100.0),
        _row("low", True, 80.0, 70.0),
        _row("broken", True, 0.0, 90.0, error="boom"),
        _row("sort", False, 10.0, 100.0),  # not memory-bound: no target
    ]
    missed = missed_targets(rows, ["layoutfuse", "eager", "compile"])
    assert [m["case"] for m in missed] == ["broken", "slow", "low"]
    assert missed[1]["behind_peer"] and not missed[1]["under_85pct"]
    assert missed[2]["under_85pct"] and not missed[2]["behind_peer"]
    assert missed[2]["ratio_to_peer"] == pytest.approx(80 / 70)


def test_the_quick_suite_runs_on_the_cpu(tmp_path, capsys):
    out = tmp_path / "ops.json"
    assert main(["ops", "--quick", "--device", "cpu", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    cases = select_cases("cpu", True, "")
    assert doc["schema"] == 1 and doc["suite"] == "ops" and not doc["partial"]
    assert doc["systems"] == ["layoutfuse", "eager"]
    assert doc["ceilings"]["read_gbps"] > 0 and doc["ceilings"]["copy_gbps"] > 0
    assert doc["env"]["command"].startswith("python -m benchmarks ops --quick")
    assert [r["case"] for r in doc["rows"]] == [c.name for c in cases]
    for row, case in zip(doc["rows"], cases):
        assert row["bytes"] == case.bytes_moved > 0 and row["memory_bound"] == case.memory_bound
        assert row["shapes"] == [list(s) for s in case.shapes]
        for system in doc["systems"]:
            res = row[system]
            assert res["error"] is None, (row["case"], system, res["error"])
            assert res["gbps"] > 0 and res["pct"] > 0 and res["pct_copy"] > 0
            ratio = doc["ceilings"]["read_gbps"] / doc["ceilings"]["copy_gbps"]
            assert math.isclose(res["pct_copy"], res["pct"] * ratio)
        assert "Params(" in row["layoutfuse"]["schedule"]
    summary = doc["summary"]
    assert summary["all"]["layoutfuse"]["n"] == len(cases)
    assert summary["memory_bound"]["layoutfuse"]["n"] == sum(c.memory_bound for c in cases)
    assert {"cat", "slice", "pad", "gather", "cumsum", "topk", "dropout"} <= set(summary)
    assert all("memory_bound" in b for b in doc["behind"])
    assert doc["target"]["checked"] is False and "target not checked" in printed


def test_a_tuning_plans_layoutfuse_under_it(tmp_path, capsys):
    """``--tuning scan.packed_keys=0``: the sorts keep (key, index) pairs; a field that is
    not the tuning's is refused."""
    out = tmp_path / "ops.json"
    argv = ["ops", "--device", "cpu", "--filter", "argsort_rows", "--out", str(out)]
    assert main([*argv, "--tuning", "scan.packed_keys=0"]) == 0
    rows = json.loads(out.read_text())["rows"]
    unpacked = re.compile(r"\bpacked=0")  # not chunk_packed's
    assert rows and all(unpacked.search(r["layoutfuse"]["schedule"]) for r in rows)
    assert main([*argv]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert rows and not any(unpacked.search(r["layoutfuse"]["schedule"]) for r in rows)
    assert main([*argv, "--tuning", "scan.no_such_field=1"]) == 2
    assert "no tuning field" in capsys.readouterr().out


def test_norm_backward_bytes_count_its_inputs_and_outputs():
    """A layer norm backward of [N, H] moves dy and x, the fp32 mean and rstd, w; dx, dw, db."""
    case = by_name(op_cases(FULL))["layer_norm_bwd_bfloat16"]
    n, h = case.shapes[0]
    assert case.bytes_moved == 3 * n * h * 2 + 2 * n * 4 + 3 * h * 2
