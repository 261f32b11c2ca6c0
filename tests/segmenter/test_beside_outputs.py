"""Outputs beside a normalization: pending outputs in the root's coordinates that no
reduction of the group reaches (``segments._beside``) are stored by the group's kernel.

Thunder's region for a GPT-2 block's second layer norm returns the residual sum cast to
bf16 beside the layer norm of its fp32 value: one normalization kernel, where a second
(pointwise) kernel read both addends again. Checked: the plan (one segment, both stored)
and the numbers and strides against torch in every memory order of the addends, bf16 and
fp32; an output that uses the group's reductions is not beside (it needs their results);
the segmented plan (rows too long for a tile, too few for the loop) stores the beside
output in the root's pointwise kernel, not in one of its own.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.analysis.device import DeviceInfo
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

NVF = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}


def _residual_layer_norm(a, b, w, bias):
    """(a + b) cast to the inputs' dtype, and the layer norm of the fp32 sum over the last
    dim, as Thunder's region writes them."""
    dt = NVF[a.dtype]
    fd = FusionDefinition()
    with fd:
        ta, tb, tw, tbias = (fd.from_pytorch(t) for t in (a, b, w, bias))
        s = fd.ops.add(fd.ops.cast(ta, DataType.Float), fd.ops.cast(tb, DataType.Float))
        var, mean = fd.ops.var_mean(s, dims=[2], correction=0, keepdim=True)
        shape = fd.ops.shape(s)
        rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))
        full = dict(shape=shape, broadcast_dims=[0, 1, 2])
        y = fd.ops.mul(
            fd.ops.sub(s, fd.ops.broadcast_in_dim(mean, **full)),
            fd.ops.broadcast_in_dim(rstd, **full),
        )
        y = fd.ops.mul(
            y,
            fd.ops.broadcast_in_dim(
                fd.ops.cast(tw, DataType.Float), shape=shape, broadcast_dims=[2]
            ),
        )
        y = fd.ops.add(
            y,
            fd.ops.broadcast_in_dim(
                fd.ops.cast(tbias, DataType.Float), shape=shape, broadcast_dims=[2]
            ),
        )
        fd.add_output(fd.ops.cast(s, dt))
        fd.add_output(fd.ops.cast(y, dt))
    return fd


def _inputs(dt, shape, order):
    gen = torch.Generator().manual_seed(0)

    def tensor():
        t = torch.randn([shape[d] for d in order], generator=gen)
        return t.permute(*[order.index(d) for d in range(3)]).to(dt)

    h = shape[-1]
    return [
        tensor(),
        tensor(),
        torch.randn(h, generator=gen).to(dt),
        torch.randn(h, generator=gen).to(dt),
    ]


def _check(fd, inputs):
    a, b, w, bias = inputs
    s, y = fd.execute(inputs)
    ref_s = a.float() + b.float()
    ref_y = torch.nn.functional.layer_norm(ref_s, (ref_s.shape[-1],), w.float(), bias.float(), 1e-5)
    tol = 2e-2 if a.dtype == torch.bfloat16 else 1e-5
    torch.testing.assert_close(s, ref_s.to(a.dtype), rtol=tol, atol=tol)
    torch.testing.assert_close(y.float(), ref_y, rtol=tol, atol=tol)
    return s, y


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_the_residual_sum_is_stored_by_the_layer_norm_kernel(dt, order):
    inputs = _inputs(dt, (3, 5, 40), order)
    fd = _residual_layer_norm(*inputs)
    for _ in range(2):  # planned, then replayed
        s, y = _check(fd, inputs)
    (run,) = fd.executor().last_run.segments
    assert run.scheduler == "normalization" and len(run.kernels) == 1, run.reason
    # each output in the layout nvFuser infers from the dominant input (the addends')
    assert s.stride() == y.stride()
    assert sorted(range(3), key=lambda d: -s.stride(d)) == sorted(
        range(3), key=lambda d: -inputs[0].stride(d)
    )


def test_an_output_that_uses_the_reductions_is_not_beside():
    """x - max(x) is an output beside a softmax of x: it needs the max, so it is not a
    beside output (it would read the group's result inside the kernel, before it exists);
    both run and match torch."""
    x = torch.randn(4, 7)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        m = fd.ops.max(t, dims=[1], keepdim=True)
        d = fd.ops.sub(t, fd.ops.broadcast_in_dim(m, shape=[4, 7], broadcast_dims=[0, 1]))
        e = fd.ops.exp(d)
        sm = fd.ops.div(
            e,
            fd.ops.broadcast_in_dim(
                fd.ops.sum(e, dims=[1], keepdim=True), shape=[4, 7], broadcast_dims=[0, 1]
            ),
        )
        fd.add_output(sm)
        fd.add_output(d)
    sm, d = fd.execute([x])
    torch.testing.assert_close(sm, torch.softmax(x, 1))
    torch.testing.assert_close(d, x - x.amax(1, keepdim=True))


def test_the_segmented_plan_stores_the_beside_output_in_the_roots_kernel():
    """Rows too long for a tile (``max_tile`` 16) and too few programs for the loop (a
    device of 1024 multiprocessors): the reductions run as their own kernel, then one
    pointwise kernel stores the layer norm and the residual sum."""
    inputs = _inputs(torch.float32, (2, 3, 40), (0, 1, 2))
    fd = _residual_layer_norm(*inputs)
    tuning = DEFAULT.with_fields(normalization=dict(max_tile=16, loop_tile=16))
    configured(fd, tuning=tuning, target=DeviceInfo("cpu", 1024, 2048, 1 << 20, 65536))
    _check(fd, inputs)
    runs = fd.executor().last_run.segments
    pointwise = [r for r in runs if r.scheduler == "pointwise"]
    assert len(pointwise) == 1, [(r.scheduler, r.reason) for r in runs]
    assert len(fd.executor().last_run.launches) == 2, [r.reason for r in runs]
