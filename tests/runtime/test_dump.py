"""LAYOUTFUSE_DUMP=code,schedule prints each new kernel's params and source once."""

import torch

from layoutfuse.nvfuser import DataType, FusionDefinition


def test_dump_prints_schedule_and_code_once(monkeypatch, capsys):
    monkeypatch.setenv("LAYOUTFUSE_DUMP", "code,schedule")
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.exp(t0), dims=[0]))
    x = torch.randn(7, 33)
    fd.execute([x])
    fd.execute([x])
    err = capsys.readouterr().err
    assert err.count("[layoutfuse] schedule: ReductionParams(") == 1
    assert err.count("[layoutfuse] code:") == 1
    assert "@triton.jit" in err and "tl.exp(" in err
