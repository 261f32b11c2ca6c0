"""``python -m benchmarks thunder --quick`` on the CPU (tiny shapes, Triton's interpreter):
every program runs through ``thunder.jit`` with every region on layoutfuse, matching
eager, and the result file records regions, kernels and the issue's reference figures.
torch.compile is slow on this CPU: it runs on one case, in the run where Thunder is made
unavailable (the run must then go on with the other systems)."""

from __future__ import annotations

import json

import pytest

from benchmarks import thunder_bench, thunder_setup
from benchmarks.__main__ import main
from benchmarks.thunder_programs import REFERENCE, Block

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

# kernels per region (forward trace, backward trace), as tests/frontend/test_thunder_jit.py
KERNELS = {
    "layer_norm-fp32-fwd": {"forward": [1]},
    "layer_norm-fp32-fwd_bwd": {"forward": [1], "backward": [2]},
    "softmax-fp32-fwd_bwd": {"forward": [1], "backward": [1]},
    "bias_gelu-fp32-fwd_bwd": {"forward": [1], "backward": [1]},
    # the log-sum-exp, the target's logit and the mean in one normalization kernel
    "cross_entropy-fp32-fwd": {"forward": [2]},
}


def run(tmp_path, *argv) -> dict:
    out = tmp_path / "thunder.json"
    assert main(["thunder", "--quick", "--out", str(out), *argv]) == 0
    return json.loads(out.read_text())


def test_quick_run_every_region_on_layoutfuse_matching_eager(tmp_path):
    if not thunder_setup.available():
        pytest.skip("lightning-thunder is not installed")
    doc = run(tmp_path, "--systems", "eager,thunder", "--samples", "3", "--warmup", "2")
    assert not doc["partial"] and doc["suite"] == "thunder" and doc["quick"]
    assert doc["env"]["command"].startswith("python -m benchmarks thunder --quick")
    assert doc["thunder"]["available"] and doc["thunder"]["nvfuser_module"] == "layoutfuse.nvfuser"
    assert [r["case"] for r in doc["rows"]] == [r.name for r in thunder_bench.select_rows("")]
    assert doc["reference"]["source"] == "issue 15, measured 2026-12-01"
    assert not doc["reference"]["measured_by_this_run"]
    for row in doc["rows"]:
        eager, thunder = row["eager"], row["thunder"]
        assert eager["error"] is None and eager["ms"] > 0, row["case"]
        assert thunder["error"] is None and thunder["ms"] > 0, (row["case"], thunder["error"])
        assert thunder["check"]["close"], (row["case"], thunder["check"])
        census = thunder["thunder"]
        assert census["all_on_layoutfuse"] and census["unexpected_outside"] == [], row["case"]
        assert census["timed_calls_replayed"], row["case"]
        parts = {"forward", "backward"} if row["mode"] == "fwd_bwd" else {"forward"}
        assert set(census["regions"]) == parts
        assert census["region_count"] == sum(len(r) for r in census["regions"].values()) > 0
        assert census["kernels_total"] == sum(sum(k) for k in census["kernels_per_region"].values())
        # Thunder's torch.compile cross-entropy left out: the nvFuser executor gets it
        # Thunder's SDPA executor left out of the block with nvFuser's SDPA switched on
        assert row["thunder_without"] == {
            "cross_entropy": ["torchcompile_xentropy"],
            "nanogpt_block_sdpa": ["sdpa"],
        }.get(row["program"], [])
        if row["case"] in KERNELS:
            assert census["kernels_per_region"] == KERNELS[row["case"]], row["case"]
        outside = census["outside_regions"].values()
        attention = [op for ops in outside for op in ops if "sdpa" in op or "scaled_dot" in op]
        if row["program"] == "nanogpt_block_sdpa":
            assert row["thunder_options"] == {"nv_enable_sdpa": True}
            if doc["env"]["device"] == "cuda":  # in a region: sdpfa_fwd/_bwd (on the CPU,
                assert not attention, row["case"]  # Thunder leaves it to torch)
    block = next(r for r in doc["rows"] if r["case"] == "nanogpt_block-bf16-fwd_bwd")
    assert len(block["shapes"]) == 1 and block["params"] > 0
    # the output, the input's gradient and every parameter's, each against eager
    params = {f"grad_{n}" for n, _ in Block(8, 2).named_parameters()}
    assert len(params) == 12 and set(block["thunder"]["check"]["diffs"]) == {
        "out",
        "grad_arg0",
        *params,
    }


def test_without_thunder_the_run_records_why_and_times_eager_and_compile(tmp_path, monkeypatch):
    def unavailable():
        raise thunder_setup.ThunderUnavailable("lightning-thunder is not installed")

    monkeypatch.setattr(thunder_setup, "load", unavailable)
    doc = run(tmp_path, "--filter", "add_sum", "--samples", "3", "--warmup", "1")
    assert doc["thunder"]["available"] is False
    assert "not installed" in doc["thunder"]["error"]
    (row,) = doc["rows"]
    assert row["thunder"]["error"].startswith("unavailable: ") and row["thunder"]["ms"] is None
    assert row["eager"]["ms"] > 0
    compiled = row["compile"]
    assert compiled["error"] is None and compiled["ms"] > 0 and compiled["check"]["close"]
    assert REFERENCE["thunder_nvfuser_0.2.36_ms"][row["case"]] == 0.285


@pytest.mark.parametrize("budget_s,samples", [(None, 20), (1e-9, 3)], ids=["cuda", "cpu"])
def test_timing_takes_every_sample_without_a_budget(budget_s, samples):
    """CUDA runs have no budget (every one of the 20 loops is timed); the CPU's cuts the
    loops to 3 when one call would pass it."""
    calls = []
    timing = thunder_bench.Timing(samples=20, budget_s=budget_s, sample_s=0.0)
    assert timing.ms_per_call(lambda: calls.append(1), "cpu") > 0
    assert len(calls) == 1 + samples  # time_loop's probe call, then one call per loop
