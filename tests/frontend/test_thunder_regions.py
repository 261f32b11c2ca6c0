"""Regions as Thunder 0.2.6 emits them for norms' forward: the normalized output and the
per-row values kept for the backward (layer norm: mean ``[B, S]`` and rstd ``[B, S, 1]``;
RMS norm: rstd ``[B, S, 1]``). The per-row values are stored by the normalization
kernel of the full-shape output (one kernel when the rows are innermost), not by a group
of their own (it was 4 kernels: a welford, two pointwise kernels and the normalization
kernel again). Every memory order of the input, against torch."""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.tensors import with_order

SHAPE = (2, 3, 16)


def _bcast(fd, t, shape, dims):
    return fd.ops.broadcast_in_dim(t, shape=list(shape), broadcast_dims=dims)


def layer_norm_forward(fd, x, w, b):
    var, mean = fd.ops.var_mean(x, dims=[2], correction=0, keepdim=False)
    rstd = fd.ops.rsqrt(
        fd.ops.add(_bcast(fd, var, SHAPE[:2] + (1,), [0, 1]), fd.define_scalar(1e-5))
    )
    mean_b = _bcast(fd, _bcast(fd, mean, SHAPE[:2] + (1,), [0, 1]), SHAPE, [0, 1, 2])
    y = fd.ops.mul(fd.ops.sub(x, mean_b), _bcast(fd, rstd, SHAPE, [0, 1, 2]))
    y = fd.ops.add(fd.ops.mul(y, _bcast(fd, w, SHAPE, [2])), _bcast(fd, b, SHAPE, [2]))
    return [mean, rstd, y]


def layer_norm_ref(x, w, b):
    var, mean = torch.var_mean(x, dim=2, correction=0)
    rstd = torch.rsqrt(var + 1e-5)[..., None]
    return [mean, rstd, (x - mean[..., None]) * rstd * w + b]


def rms_norm_forward(fd, x, w):
    ss = fd.ops.sum(fd.ops.mul(x, x), dims=[2], keepdim=False, dtype=DataType.Null)
    ms = fd.ops.div(_bcast(fd, ss, SHAPE[:2] + (1,), [0, 1]), fd.define_scalar(float(SHAPE[2])))
    rstd = fd.ops.rsqrt(fd.ops.add(ms, fd.define_scalar(1e-6)))
    y = fd.ops.mul(fd.ops.mul(x, _bcast(fd, rstd, SHAPE, [0, 1, 2])), _bcast(fd, w, SHAPE, [2]))
    return [rstd, y]


def rms_norm_ref(x, w):
    rstd = torch.rsqrt(x.pow(2).mean(2, keepdim=True) + 1e-6)
    return [rstd, x * rstd * w]


PROGRAMS = {
    "layer_norm": (layer_norm_forward, layer_norm_ref, 2),
    "rms_norm": (rms_norm_forward, rms_norm_ref, 1),
}


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
@pytest.mark.parametrize("name", PROGRAMS)
def test_norm_forward_stores_per_row_values_from_one_kernel(name, order):
    define, reference, n_params = PROGRAMS[name]
    x = with_order(SHAPE, order, torch.float32, seed=1)
    params = [torch.randn(SHAPE[2]) for _ in range(n_params)]
    with FusionDefinition() as fd:
        outs = define(fd, fd.from_pytorch(x), *(fd.from_pytorch(p) for p in params))
        for o in outs:
            fd.add_output(o)
    got = fd.execute([x, *params])
    for g, w in zip(got, reference(x, *params)):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    kernels = len(fd.executor().last_run.launches)
    if order[-1] == 2:  # the rows are innermost: one normalization kernel
        assert kernels == 1 and fd.last_schedule()[0].__class__.__name__ == "NormalizationParams"
    else:
        assert kernels <= 3


def layer_norm_backward(fd, mean, w, g, x, rstd):
    """Thunder 0.2.6's layer norm backward region, op for op (its printed fusion): row
    sums, sums of [B, S, 1] over their size-1 dim (squeezes), column sums for dw and db."""
    B, S, N = SHAPE
    row, full = [B, S, 1], list(SHAPE)
    mean_full = _bcast(fd, _bcast(fd, mean, row, [0, 1]), full, [0, 1, 2])
    wg = fd.ops.mul(_bcast(fd, w, full, [2]), g)
    xc = fd.ops.sub(x, mean_full)
    t23 = fd.ops.sum(fd.ops.mul(xc, wg), dims=[2], keepdim=False, dtype=DataType.Null)
    rstd_full = _bcast(fd, rstd, full, [0, 1, 2])
    t29 = fd.ops.mul(rstd_full, wg)
    t37 = fd.ops.pow(rstd, fd.define_scalar(3.0, dtype=DataType.Double))
    t39 = fd.ops.mul(fd.define_scalar(-0.5, dtype=DataType.Double), _bcast(fd, t23, row, [0, 1]))
    t41 = fd.ops.sum(fd.ops.neg(t29), dims=[2], keepdim=False, dtype=DataType.Null)
    t42 = fd.ops.sum(fd.ops.mul(t39, t37), dims=[2], keepdim=False, dtype=DataType.Null)
    t58 = fd.ops.sum(_bcast(fd, t41, row, [0, 1]), dims=[2], keepdim=False, dtype=DataType.Null)
    t68 = _bcast(fd, _bcast(fd, t42, row, [0, 1]), full, [0, 1, 2])
    t78 = fd.ops.mul(fd.ops.mul(fd.define_scalar(2.0, dtype=DataType.Double), t68), xc)
    t83 = _bcast(fd, _bcast(fd, t58, row, [0, 1]), full, [0, 1, 2])
    t87 = fd.ops.mul(t78, fd.ops.reciprocal(fd.define_scalar(float(N), dtype=DataType.Double)))
    t90 = fd.ops.add(fd.ops.mul(fd.define_scalar(1.0 / N, dtype=DataType.Double), t83), t87)
    dw = fd.ops.sum(fd.ops.mul(fd.ops.mul(xc, rstd_full), g), dims=[0, 1], dtype=DataType.Null)
    db = fd.ops.sum(g, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    return [db, dw, fd.ops.add(t29, t90)]


@pytest.mark.parametrize("order", [(0, 1, 2), (1, 0, 2), (2, 0, 1)], ids=str)
def test_layer_norm_backward_as_thunder_emits_it_takes_two_kernels(order):
    from layoutfuse.codegen.hopper_check import compile_last_run

    x = with_order(SHAPE, order, torch.float32, seed=2)
    g = with_order(SHAPE, order, torch.float32, seed=3)
    w, b = torch.randn(SHAPE[2]), torch.randn(SHAPE[2])
    var, mean = torch.var_mean(x, dim=2, correction=0)
    rstd = torch.rsqrt(var + 1e-5)[..., None]
    with FusionDefinition() as fd:
        outs = layer_norm_backward(fd, *(fd.from_pytorch(t) for t in (mean, w, g, x, rstd)))
        for o in outs:
            fd.add_output(o)
    db, dw, dx = fd.execute([mean, w, g, x, rstd])
    xr, wr, br = (t.clone().requires_grad_(True) for t in (x, w, b))
    y = torch.nn.functional.layer_norm(xr, (SHAPE[2],), wr, br, eps=1e-5)
    want = torch.autograd.grad(y, [br, wr, xr], g)
    for got, ref in zip((db, dw, dx), want):
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
    kernels = len(fd.executor().last_run.launches)
    if order[-1] == 2:  # rows innermost: the row sums with dx, then dw and db together
        assert kernels == 2
        compile_last_run(fd.executor())  # the kernels compile for sm_90
    else:
        assert kernels <= 4


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_bias_gelu_bf16_as_thunder_emits_it_is_one_kernel(order):
    """Two outputs in the same coordinates, neither upstream of the other (``x + b`` and
    ``gelu(x + b)``, each cast to bf16): one pointwise kernel stores both."""
    x = with_order(SHAPE, order, torch.bfloat16, seed=4)
    b = torch.randn(SHAPE[2]).to(torch.bfloat16)
    with FusionDefinition() as fd:
        tb, tx = fd.from_pytorch(b), fd.from_pytorch(x)
        h = fd.ops.add(
            fd.ops.cast(tx, DataType.Float), fd.ops.cast(_bcast(fd, tb, SHAPE, [2]), DataType.Float)
        )
        erf = fd.ops.erf(fd.ops.mul(h, fd.ops.reciprocal(fd.define_scalar(2.0**0.5))))
        gelu = fd.ops.mul(
            h, fd.ops.add(fd.define_scalar(0.5), fd.ops.mul(fd.define_scalar(0.5), erf))
        )
        fd.add_output(fd.ops.cast(h, DataType.BFloat16))
        fd.add_output(fd.ops.cast(gelu, DataType.BFloat16))
    h_out, y = fd.execute([b, x])
    hf = x.float() + b.float()
    torch.testing.assert_close(h_out, hf.to(torch.bfloat16))
    torch.testing.assert_close(y, torch.nn.functional.gelu(hf).to(torch.bfloat16))
    assert h_out.stride() == x.stride() and y.stride() == x.stride()
    assert len(fd.executor().last_run.launches) == 1
    if order == (0, 1, 2):
        from layoutfuse.codegen.hopper_check import compile_last_run

        compile_last_run(fd.executor())  # the kernel compiles for sm_90
