"""benchmarks.overhead on the CPU with the launches stubbed: the replay path's host stages."""

from __future__ import annotations

import json

import torch

from benchmarks import overhead
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition


def test_stubbed_launches_keep_the_plans_outputs_and_launch_nothing():
    FusionCache.reset()
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(t0))
    x = torch.randn(16, device="cpu")
    fd.execute([x])
    overhead.stub_launches(fd.executor())
    (out,) = fd.execute([x])
    assert out.shape == x.shape and out.stride() == x.stride() and out.dtype == x.dtype
    assert fd.executor().planned_runs == 1


def test_the_stubbed_run_reports_every_stage(tmp_path):
    path = tmp_path / "overhead.json"
    assert overhead.main(["--stub-launch", "-n", "20", "--rounds", "1", "--out", str(path)]) == 0
    result = json.loads(path.read_text())
    assert result["stub_launch"] is True
    for kind in ("add", "sum"):
        stages = result["rows"][kind]["stages_us"]
        assert set(stages) == {"execute", "frontend", "key", "alloc", "launch"}
        assert stages["execute"] > 0 and stages["key"] > 0
