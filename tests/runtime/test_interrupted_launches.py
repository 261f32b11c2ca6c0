"""A launch interrupted part way through its grid (on the CPU, Triton's interpreter runs
the programs one by one into the tensors themselves: an error or a KeyboardInterrupt
stops it between programs) leaves the kept workspaces zeroed again, so the next call
runs from a clean counter: a chained cumsum's ticket counter (else the next launch would
start mid-way and wait for chunks no program draws) and a split reduction's tickets
(else the next launch's finish would fall to the wrong program). Both through the
planning call (``CompiledFusion``) and through the cached replay."""

from __future__ import annotations

import pytest
import torch
import triton.runtime.interpreter as interpreter

from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]


def _chained_cumsum(x):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), 1))
    # rows of 20000 in chunks, whatever bytes the links carry (the default wants 3 MB)
    configured(fd, tuning=DEFAULT.with_fields(scan=dict(chain_link_bytes=0)))
    return fd, lambda out: torch.testing.assert_close(out, torch.cumsum(x, 1), rtol=1e-5, atol=1e-3)


def _split_sum(x):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum(fd.from_pytorch(x), [0, 1]))
    return fd, lambda out: torch.testing.assert_close(out, x.sum(), rtol=1e-5, atol=1e-2)


def _kept(fd) -> list[torch.Tensor]:
    ex = fd.executor()
    compiled = ex._compiled if ex._lowered is None else ex._lowered._compiled
    return list(compiled._tickets.values())


@pytest.mark.parametrize("build, mode", [(_chained_cumsum, "chain"), (_split_sum, "ticket")])
@pytest.mark.parametrize("when", ["planning", "replay"])
def test_an_interrupted_launch_leaves_its_kept_workspace_zeroed(monkeypatch, build, mode, when):
    x = torch.randn(6, 20000, generator=torch.Generator().manual_seed(29))
    if x.is_cuda:
        pytest.skip("interpreted launches only: a CUDA launch runs whole or not at all")
    fd, check = build(x)
    if when == "replay":
        check(fd.execute([x])[0])  # plans; the calls below replay
    set_idx = interpreter.InterpreterBuilder.set_grid_idx

    ran = []

    def stop_at_third(self, gx, gy, gz):
        ran.append((gx, gy, gz))
        if len(ran) == 3:  # two programs ran
            raise KeyboardInterrupt
        set_idx(self, gx, gy, gz)

    monkeypatch.setattr(interpreter.InterpreterBuilder, "set_grid_idx", stop_at_third)
    with pytest.raises(KeyboardInterrupt):
        fd.execute([x])
    monkeypatch.setattr(interpreter.InterpreterBuilder, "set_grid_idx", set_idx)
    kept = _kept(fd)
    assert kept and all(int(t.count_nonzero()) == 0 for t in kept)
    for _ in range(2):
        check(fd.execute([x])[0])
    params = schedules(fd)
    got = [getattr(p, "mode", getattr(p, "finish", None)) for p in params]
    assert mode in got, params
