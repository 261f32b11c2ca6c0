"""nvFuser's C++ random ops: ``rand``, ``randn``, ``uniform``, ``normal``, ``rand_like``,
``randn_like`` (``csrc/ops/arith.h``: the shape first, then the distribution's two
values, the dtype and an optional ``philox_seed`` / ``philox_offset`` pair). The meaning
lives in ``layoutfuse.ir.ops.random``."""

from __future__ import annotations

from ..dtypes import DataType
from ..ir import TensorView
from ..ir.ops import random as ir_random


def uniform(shape, low, high, dtype: DataType, philox_seed=None, philox_offset=None) -> TensorView:
    return ir_random.uniform(low, high, shape, dtype, philox_seed, philox_offset)


def normal(shape, mean, std, dtype: DataType, philox_seed=None, philox_offset=None) -> TensorView:
    return ir_random.normal(mean, std, shape, dtype, philox_seed, philox_offset)


def rand(shape, dtype: DataType, philox_seed=None, philox_offset=None) -> TensorView:
    return uniform(shape, 0.0, 1.0, dtype, philox_seed, philox_offset)


def randn(shape, dtype: DataType, philox_seed=None, philox_offset=None) -> TensorView:
    return normal(shape, 0.0, 1.0, dtype, philox_seed, philox_offset)


def rand_like(tv: TensorView, philox_seed=None, philox_offset=None) -> TensorView:
    return ir_random.rand_like(tv, philox_seed, philox_offset)


def randn_like(tv: TensorView, philox_seed=None, philox_offset=None) -> TensorView:
    return ir_random.randn_like(tv, philox_seed, philox_offset)


__all__ = ["normal", "rand", "rand_like", "randn", "randn_like", "uniform"]
