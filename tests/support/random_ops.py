"""Helpers of the random ops' tests (``tests/ir/test_random*.py``): the references at the
tests' seed and offset, a fusion of one random op, nvFuser's dropout."""

from __future__ import annotations

import torch

from layoutfuse.ir.ops.random import _normal_ref, _uniform_ref
from layoutfuse.nvfuser import DataType, FusionDefinition

DTYPES = {
    DataType.Float: torch.float32,
    DataType.Half: torch.float16,
    DataType.BFloat16: torch.bfloat16,
    DataType.Double: torch.float64,
}
NORMAL_TOL = {  # the backend's log and cos against torch's
    DataType.Float: dict(atol=1e-5, rtol=1e-5),
    DataType.Half: dict(atol=2e-3, rtol=2e-3),
    DataType.BFloat16: dict(atol=2e-2, rtol=2e-2),
    DataType.Double: dict(atol=1e-12, rtol=1e-12),
}
SEED, OFFSET = 0x5EED_1234_ABCD, 7


def device() -> torch.device:
    return torch.get_default_device()


def reference(op: str, shape, dtype: DataType, seed=SEED, offset=OFFSET, a=0.0, b=1.0):
    """The numbers of ``op`` ("uniform" or "normal") by the op's torch reference."""
    ref = _uniform_ref if op == "uniform" else _normal_ref
    return ref(a, b, seed, offset, *shape, dtype=dtype, device=device())


def random_fd(op: str, shape, dtype: DataType, a=0.0, b=1.0, stride_order=None):
    """``op(a, b, shape)`` with rng_seed and rng_offset as the fusion's two Int inputs."""
    with FusionDefinition() as fd:
        seed = fd.define_scalar(dtype=DataType.Int)
        offset = fd.define_scalar(dtype=DataType.Int)
        lo = fd.define_scalar(a, dtype=DataType.Double)
        hi = fd.define_scalar(b, dtype=DataType.Double)
        build = fd.ops.uniform if op == "uniform" else fd.ops.normal
        r = build(lo, hi, list(shape), rng_seed=seed, rng_offset=offset, dtype=dtype)
        fd.add_output(r, stride_order=stride_order)
    return fd


def dropout(fd, x, seed, offset, p: float):
    """nvFuser's dropout: ``rand_like(x) < 1 - p`` -> where -> scale by 1 / (1 - p)."""
    keep = fd.ops.lt(
        fd.ops.rand_like(x, rng_seed=seed, rng_offset=offset),
        fd.define_scalar(1.0 - p, dtype=DataType.Double),
    )
    scaled = fd.ops.mul(x, fd.define_scalar(1.0 / (1.0 - p), dtype=DataType.Double))
    return fd.ops.where(keep, scaled, fd.define_scalar(0.0, dtype=DataType.Double))
