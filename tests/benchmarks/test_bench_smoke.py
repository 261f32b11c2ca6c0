"""The benchmark machinery on CPU with tiny cases: case data, the harness loop, error
rows, GB/s arithmetic and the result file (what it records of its run). Independent of
``layoutfuse.nvfuser``."""

from __future__ import annotations

import datetime
import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

if importlib.util.find_spec("layoutfuse") is None:  # run from a checkout without install
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from benchmarks import harness, report  # noqa: E402
from benchmarks.__main__ import main  # noqa: E402
from benchmarks.cases import SUITES, Case, reversed_kept_order  # noqa: E402
from benchmarks.harness import Harness, SystemUnavailable  # noqa: E402
from benchmarks.layoutfuse_runner import LayoutfuseRunner, stride_order  # noqa: E402
from benchmarks.peers import CompilePeer, EagerPeer, pinned_op  # noqa: E402
from benchmarks.reference import dense_strides, make_inputs, reference  # noqa: E402

FIXED_MS = 2.0
READ_GBPS = 10.0

TINY = [
    Case("t_sum_mem021_sum1", "sweep", "sum", (4, 8, 16), (0, 2, 1), dims=(1,)),
    Case("t_bf16_sum02", "bf16", "sum", (4, 8, 16), (2, 0, 1), "bfloat16", (0, 2)),
    Case("t_pinned_mem012_sum0", "pinned", "sum", (4, 8, 16), (0, 1, 2), dims=(0,),
         out_order=reversed_kept_order((0, 1, 2), (0,))),
    Case("t_view_sum01", "seed_e2e", "sum", (2, 3, 4, 5), (0, 2, 1, 3), dims=(0, 1),
         view=((0, 2, 1, 3), (2, 4, 15)), timing="host"),
    Case("t_softmax_col", "softmax", "softmax", (8, 32), (1, 0), dims=(1,)),
    Case("t_layernorm_bf16", "layernorm", "layernorm", (4, 8, 32), (0, 2, 1), "bfloat16", (2,)),
    Case("t_copy", "copy", "copy", (8, 16), (1, 0), out_order=(1, 0)),
    Case("t_permute", "permute", "copy", (4, 8, 16), (2, 1, 0), out_order=(0, 1, 2)),
    Case("t_add", "add", "add", (8, 16), (1, 0), out_order=(1, 0)),
]  # fmt: skip


class RaisingRunner:
    name = "raising"

    def prepare(self, case, inputs):
        raise NotImplementedError("no scheduler for this case yet")


class WrongRunner:
    """Right shape and layout, values off by one."""

    name = "wrong"

    def prepare(self, case, inputs):
        op = pinned_op(case)
        return lambda *xs: op(*xs) + 1


class GoneRunner:
    name = "gone"
    calls = 0

    def prepare(self, case, inputs):
        GoneRunner.calls += 1
        raise SystemUnavailable("not installed")


@pytest.fixture
def no_frontend(monkeypatch):
    """Make ``import layoutfuse.nvfuser`` fail, whether or not it exists."""
    monkeypatch.setitem(sys.modules, "layoutfuse.nvfuser", None)


def run_tiny(systems, cases=TINY):
    harness = Harness(systems, "cpu", READ_GBPS, timer=lambda fn, case: (fn(), FIXED_MS)[1])
    return [harness.run_case(c, "smoke") for c in cases]


def test_suites_have_the_anchor_case_counts():
    counts = {name: len(build()) for name, build in SUITES.items()}
    # normalization: softmax and layer norm in 5 layouts x 2 dtypes, and the two-sum
    # variance (sibling reductions) in the 4 target layouts x 2 dtypes
    assert counts == {"reduction": 94, "pointwise": 196, "normalization": 28, "seed": 4}
    for name, build in SUITES.items():
        names = [c.name for c in build()]
        assert len(names) == len(set(names)), name


def test_pinned_order_matches_the_anchor_strides():
    # anchors: pinned_mem012_sum0 writes its [512, 1024] output with strides [1, 512]
    order = reversed_kept_order((0, 1, 2), (0,))
    assert dense_strides((512, 1024), order) == (1, 512)


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (0, 2, 1, 3), (3, 1, 0, 2)])
def test_stride_order_follows_nvfuser(order):
    x = make_inputs(Case("x", "g", "copy", (2, 3, 4, 5), order), "cpu")[0]
    by_stride = sorted(range(4), key=lambda d: x.stride(d))
    assert [by_stride.index(d) for d in range(4)] == stride_order(order)


def test_shrinking_keeps_a_view_consistent():
    seed = next(c for c in SUITES["seed"]() if c.view is not None)
    small = seed.shrunk(1024)
    assert small.shape == (2, 12, 2, 192) and small.view[1] == (2, 2, 2304)
    x = make_inputs(small, "cpu")[0]
    assert reference(small, [x]).shape == small.out_shape
    assert TINY[0].shrunk(4).shape == (4, 4, 8)


def test_bytes_count_inputs_and_output_once():
    assert TINY[0].bytes_moved == (4 * 8 * 16 + 4 * 16) * 4
    assert TINY[1].bytes_moved == (4 * 8 * 16 + 8) * 2
    assert TINY[-1].bytes_moved == 3 * 8 * 16 * 4


def test_eager_rows_pass_and_gbps_follow_bytes_over_time():
    rows = run_tiny([EagerPeer()])
    for case, row in zip(TINY, rows):
        eager = row["eager"]
        assert eager["error"] is None, (case.name, eager["error"])
        assert eager["ms"] == FIXED_MS
        assert eager["gbps"] == pytest.approx(case.bytes_moved / FIXED_MS / 1e6)
        assert eager["pct"] == pytest.approx(100 * eager["gbps"] / READ_GBPS)


def test_pinned_peers_write_the_pinned_layout():
    for case in TINY:
        if case.out_order is None:
            continue
        inputs = make_inputs(case, "cpu")
        want = dense_strides(case.out_shape, case.out_order)
        out = EagerPeer().prepare(case, inputs)(*inputs)
        assert out.stride() == want, case.name
        assert pinned_op(case)(*inputs).stride() == want, case.name
        torch.testing.assert_close(out.float(), reference(case, inputs), rtol=2e-2, atol=2e-2)


def test_failures_become_error_rows(no_frontend):
    gone = GoneRunner()
    rows = run_tiny([LayoutfuseRunner(), RaisingRunner(), WrongRunner(), gone, EagerPeer()])
    first, later = rows[0], rows[1:]
    assert "layoutfuse.nvfuser is not importable" in first["layoutfuse"]["error"]
    assert first["layoutfuse"]["error"].startswith("unavailable:")
    assert all(r["layoutfuse"]["error"].startswith("skipped:") for r in later)
    assert GoneRunner.calls == 1  # an unavailable system is not asked again
    for row in rows:
        assert row["raising"]["error"].startswith("NotImplementedError: no scheduler")
        assert "differ from the fp32 reference" in row["wrong"]["error"]
        assert row["eager"]["error"] is None
        for name in ("layoutfuse", "raising", "wrong", "gone"):
            assert row[name]["gbps"] is None and row[name]["ms"] is None


def test_summary_counts_thresholds():
    rows = [
        {"group": "g", "s": {"gbps": 9.0, "pct": 90.0, "error": None}},
        {"group": "g", "s": {"gbps": 8.2, "pct": 82.0, "error": None}},
        {"group": "h", "s": {"gbps": 1.0, "pct": 10.0, "error": None}},
        {"group": "h", "s": {"gbps": None, "pct": None, "error": "boom"}},
    ]
    summary = report.summarize(rows, ["s"])
    assert summary["all"]["s"]["n"] == 3 and summary["all"]["s"]["errors"] == 1
    assert summary["all"]["s"]["at_least_80pct"] == 2
    assert summary["all"]["s"]["at_least_85pct"] == 1
    assert summary["h"]["s"]["median_gbps"] == 1.0
    assert summary["g"]["s"]["geomean_gbps"] == pytest.approx((9.0 * 8.2) ** 0.5)
    assert len(report.summary_lines(summary)) == 1 + 3


def test_cli_writes_the_result_file(tmp_path, no_frontend, capsys):
    out = tmp_path / "seed.json"
    args = ["seed", "--quick", "--device", "cpu", "--filter", "playground"]
    args += ["--systems", "layoutfuse,eager", "--out", str(out)]
    assert main(["suite", *args]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == report.SCHEMA and doc["partial"] is False
    assert doc["systems"] == ["layoutfuse", "eager"]
    assert doc["env"]["flush"] == "read"  # how L2 is emptied before a timed call
    assert doc["ceilings"]["read_gbps"] > 0 and doc["ceilings"]["copy_gbps"] > 0
    (row,) = doc["rows"]
    assert row["case"] == "seed_playground_sum01" and row["timing"] == "host"
    header = {"case", "suite", "shape", "dtype", "order", "dims", "pinned", "bytes"}
    assert header <= set(row)
    assert row["layoutfuse"]["error"] and row["eager"]["error"] is None
    assert row["eager"]["gbps"] == pytest.approx(row["bytes"] / row["eager"]["ms"] / 1e6)
    assert set(row["eager"]) == {"ms", "gbps", "pct", "error", "schedule", "first_s"}
    assert row["eager"]["first_s"] > 0  # the first call, timed apart from the timed runs
    assert doc["summary"]["all"]["eager"]["n"] == 1
    assert "seed_playground_sum01" in capsys.readouterr().out

    png = tmp_path / "seed.png"
    assert main(["chart", str(out), "--png", str(png)]) == 0
    assert png.exists() == (importlib.util.find_spec("matplotlib") is not None)


def test_the_result_file_records_how_it_was_made(tmp_path, no_frontend, monkeypatch):
    """The command (as typed, and the process's argv), the date, the commit named by
    LAYOUTFUSE_BENCH_COMMIT, the torch and Triton versions and the device."""
    import triton

    monkeypatch.setenv(harness.COMMIT_ENV, "c0ffee1")
    out = tmp_path / "the result.json"
    args = [
        "seed",
        "--quick",
        "--device",
        "cpu",
        "--filter",
        "playground",
        "--systems",
        "eager",
        "--out",
        str(out),
    ]
    before = datetime.datetime.now(datetime.UTC)
    assert main(["suite", *args]) == 0
    env = json.loads(out.read_text())["env"]
    assert env["command"] == (
        "python -m benchmarks suite seed --quick --device cpu --filter playground "
        f"--systems eager --out '{out}'"
    )
    assert shlex.split(env["command"])[4:] == args
    assert env["argv"] == sys.argv
    when = datetime.datetime.fromisoformat(env["date"])
    assert when.tzinfo is not None
    assert before - datetime.timedelta(seconds=1) <= when <= datetime.datetime.now(datetime.UTC)
    assert env["git_commit"] == "c0ffee1"
    assert (env["torch"], env["triton"]) == (torch.__version__, triton.__version__)
    assert env["device"] == "cpu" and env["device_name"]


def test_the_commit_comes_from_the_checkout_without_the_variable(monkeypatch, tmp_path):
    """``git rev-parse HEAD`` of the checkout that holds the code, wherever it runs from."""
    monkeypatch.delenv(harness.COMMIT_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # not a git checkout
    checkout = Path(harness.__file__).resolve().parents[1]
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except OSError:
        pytest.skip("no git")
    head = done.stdout.strip() if done.returncode == 0 else None
    env = harness.environment("cpu", "python -m benchmarks suite seed")
    assert env["git_commit"] == head and env["command"] == "python -m benchmarks suite seed"
    assert (env["git_dirty"] is None) == (head is None)


class AliasRunner:
    """Returns its input: a "copy" that copies nothing."""

    name = "alias"

    def prepare(self, case, inputs):
        return lambda x: x


def test_an_output_aliasing_an_input_is_an_error():
    (row,) = run_tiny([AliasRunner()], [TINY[6]])
    assert "aliases an input" in row["alias"]["error"]


@pytest.mark.parametrize("case", [TINY[0], TINY[6]], ids=lambda c: c.name)
def test_compile_peer_on_cpu_runs_or_is_unavailable(case):
    inputs = make_inputs(case, "cpu")
    try:
        fn = CompilePeer().prepare(case, inputs)
    except SystemUnavailable:
        return
    out = fn(*inputs)
    assert out.untyped_storage().data_ptr() != inputs[0].untyped_storage().data_ptr()
    torch.testing.assert_close(out, reference(case, inputs), rtol=1e-3, atol=1e-3)


def test_flush_mode_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(harness.FLUSH_ENV, raising=False)
    assert harness.flush_mode() == "read"
    monkeypatch.setenv(harness.FLUSH_ENV, "write")
    assert harness.flush_mode() == "write"
    monkeypatch.setenv(harness.FLUSH_ENV, "zero")
    with pytest.raises(ValueError, match="LAYOUTFUSE_BENCH_FLUSH='zero'"):
        harness.flush_mode()


def test_memory_after_cases_reports_the_growth():
    from benchmarks.suite import memory_after_cases

    rows = [{"cuda_allocated_after": n} for n in (512, 1024, 512)]
    assert memory_after_cases(rows) == {"first": 512, "max": 1024, "last": 512}
    assert memory_after_cases([{"case": "cpu"}]) == {}
