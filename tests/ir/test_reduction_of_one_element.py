"""A reduction over broadcast dims of extent 1 is the element itself: the IR records a
squeeze (as nvFuser does), which a kernel computes in place instead of being cut at a
reduction (Thunder's backward regions sum [B, S, 1] over its last dim). A fusion input's
reduction stays a reduction (its output is no view of the input)."""

from __future__ import annotations

import pytest
import torch

from layoutfuse.ir import OpKind
from layoutfuse.nvfuser import DataType, FusionDefinition

REFS = {"sum": torch.sum, "max": torch.amax, "min": torch.amin, "prod": torch.prod}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", REFS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32], ids=["fp32", "int32"])
def test_reduction_over_a_size_one_broadcast_dim_is_a_squeeze(name, keepdim, dtype):
    x = (torch.randn(5, 3) * 4).to(dtype)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        row = fd.ops.broadcast_in_dim(fd.ops.neg(t), shape=[5, 1, 3], broadcast_dims=[0, 2])
        fd.add_output(getattr(fd.ops, name)(row, dims=[1], keepdim=keepdim))
    (out,) = fd.execute([x])
    want = REFS[name](-x[:, None, :], dim=1, keepdim=keepdim)
    assert out.dtype == want.dtype  # sum and prod of int32 promote to int64, as torch
    torch.testing.assert_close(out, want)
    assert not any(e.op.kind is OpKind.REDUCTION for e in fd.executor().fusion.exprs)
    assert len(fd.executor().last_run.launches) == 1


def test_a_fusion_inputs_reduction_over_its_size_one_dim_stays_a_reduction():
    x = torch.randn(5, 1)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t, dims=[1]))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.sum(1))
    assert out.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("view", ["stride_order", "set", "permute"])
def test_a_reduction_of_a_view_of_an_input_over_its_size_one_dim_stays_a_reduction(view):
    """Through view ops of an input too: a squeeze there would make the output a view of
    the input (the generated programs found max(stride_order(x)) aliasing x)."""
    x = torch.randn(6, 7, 1)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if view == "stride_order":
            t = fd.ops.stride_order(t, stride_order=[0, 2, 1])
        elif view == "set":
            t = fd.ops.set(t)
        else:
            t = fd.ops.permute(t, dims=[1, 0, 2])
        fd.add_output(fd.ops.max(t, dims=[2]))
    (out,) = fd.execute([x])
    want = x.amax(2).t() if view == "permute" else x.amax(2)
    torch.testing.assert_close(out, want)
    assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
