"""Normalizations over the last dim of 2-D rows that Triton cannot prove aligned, for the
aligned-rows tests (``tests/codegen/test_normalization_aligned_*.py``): the fusions, torch's
results, the rows (contiguous, sliced at a base offset, padded), and a checked run."""

from __future__ import annotations

import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import configured, schedules, small_gpu

DT = {
    torch.float32: DataType.Float,
    torch.bfloat16: DataType.BFloat16,
    torch.float16: DataType.Half,
}
EPS = 1e-5


def fusion(op: str, x: torch.Tensor, out_order=None) -> FusionDefinition:
    """``op`` over the last dim of 2-D ``x`` (softmax, log_softmax, rms_norm with a weight,
    layer_norm with its mean), the output pinned to ``out_order`` if given."""
    dtype = DT[x.dtype]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        xf = fd.ops.cast(t, DataType.Float)

        def bc(v):
            return fd.ops.broadcast_in_dim(v, shape=t.shape(), broadcast_dims=[0])

        if op in ("softmax", "log_softmax"):
            z = fd.ops.sub(xf, bc(fd.ops.max(xf, dims=[1])))
            e = fd.ops.exp(z)
            s = fd.ops.sum(e, dims=[1])
            y = fd.ops.div(e, bc(s)) if op == "softmax" else fd.ops.sub(z, bc(fd.ops.log(s)))
            outs = [y]
        elif op == "rms_norm":
            w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
            ms = fd.ops.div(fd.ops.sum(fd.ops.mul(xf, xf), dims=[1]), fd.ops.size(t, 1))
            r = fd.ops.rsqrt(fd.ops.add(ms, fd.define_scalar(EPS, dtype=DataType.Double)))
            wb = fd.ops.broadcast_in_dim(w, shape=t.shape(), broadcast_dims=[1])
            outs = [fd.ops.mul(fd.ops.mul(xf, bc(r)), wb)]
        else:  # layer_norm: Welford's pass stays plain, the store pass is aligned
            var, mean = fd.ops.var_mean(xf, dims=[1], correction=0)
            rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(EPS, dtype=DataType.Double)))
            outs = [fd.ops.mul(fd.ops.sub(xf, bc(mean)), bc(rstd)), mean]
        fd.add_output(fd.ops.cast(outs[0], dtype), stride_order=out_order)
        for o in outs[1:]:
            fd.add_output(o)
    return fd


def expected(op: str, x: torch.Tensor, w: torch.Tensor | None) -> list[torch.Tensor]:
    xf = x.float()
    if op == "softmax":
        return [torch.softmax(xf, 1).to(x.dtype)]
    if op == "log_softmax":
        return [torch.log_softmax(xf, 1).to(x.dtype)]
    if op == "rms_norm":
        r = torch.rsqrt((xf * xf).mean(1, keepdim=True) + EPS)
        return [(xf * r * w.float()).to(x.dtype)]
    var, mean = torch.var_mean(xf, 1, correction=0)
    return [((xf - mean[:, None]) * torch.rsqrt(var[:, None] + EPS)).to(x.dtype), mean]


def rows(kind: str, n: int, dtype) -> torch.Tensor:
    """6 rows of ``n``: contiguous; sliced (start 3 of rows of n + 5: a base offset);
    padded (rows of n inside rows of n + 16: a row stride other than the length)."""
    g = torch.Generator().manual_seed(n)
    if kind == "contiguous":
        return (3 * torch.randn(6, n, generator=g)).to(dtype)
    if kind == "sliced":
        return (3 * torch.randn(6, n + 5, generator=g)).to(dtype)[:, 3 : 3 + n]
    return (3 * torch.randn(6, n + 16, generator=g)).to(dtype)[:, :n]


def run_checked(op: str, x: torch.Tensor, tuning, mode: str, out_order=None):
    """``op`` over ``x``'s rows under ``tuning`` on 4 multiprocessors, against torch; the
    plan must be ``mode`` (persistent or looped), inner, a row a program. Returns the
    fusion, its params and its outputs."""
    fd = fusion(op, x, out_order)
    configured(fd, tuning=tuning, target=small_gpu(4))
    w = (torch.rand(x.shape[1], generator=torch.Generator().manual_seed(1)) + 0.5).to(x.dtype)
    outs = fd.execute([x, w] if op == "rms_norm" else [x])
    tol = dict(atol=2e-5, rtol=2e-5) if x.dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    for got, want in zip(outs, expected(op, x, w)):
        torch.testing.assert_close(got.float(), want.float(), **tol)
    (params,) = schedules(fd)
    assert (params.mode, params.template, params.block_x) == (mode, "inner", 1), params
    return fd, params, outs
