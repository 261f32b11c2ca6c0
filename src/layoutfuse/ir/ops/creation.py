"""Creation ops: full and iota. Their values are computed inside kernels from the index."""

from __future__ import annotations

from typing import cast

import torch

from ...dtypes import DataType, is_integral, to_torch
from ...errors import ArgumentTypeError, DefinitionError, describe
from ..domain import IterDomain
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView
from .common import Operand, Shape, as_shape, as_val, emit, factory_id, fusion_of, static_value


def _full_ref(fill: complex, *shape: int, dtype: DataType, device: torch.device) -> torch.Tensor:
    return torch.full(tuple(int(s) for s in shape), fill, dtype=to_torch(dtype), device=device)


def _iota_ref(
    length: int, start: complex, step: complex, dtype: DataType, device: torch.device
) -> torch.Tensor:
    t = to_torch(dtype)
    return (
        start
        + torch.arange(
            int(length), dtype=torch.float64 if t.is_floating_point else torch.int64, device=device
        ).to(t)
        * step
    )


FULL = register(OpDef("full", OpKind.CREATION, reference=_full_ref))
IOTA = register(OpDef("iota", OpKind.CREATION, reference=_iota_ref))


def full(shape: Shape, fill_value: Operand, dtype: DataType) -> TensorView:
    f = fusion_of(shape, fill_value)
    shape_s = as_shape(f, shape, "full")
    fill = as_val(f, fill_value, "full")
    if not isinstance(fill, Scalar):
        raise ArgumentTypeError(f"full: fill_value must be a Scalar, got {describe(fill)}")
    ids = [factory_id(static_value(s)) for s in shape_s]
    out = TensorView(f, ids, dtype)
    emit(f, FULL, [fill, *shape_s], [out], dtype=dtype)
    return out


def iota(
    length: Operand,
    start: Operand | None = None,
    step: Operand | None = None,
    dtype: DataType = DataType.Int,
) -> TensorView:
    f = fusion_of(length, start, step)
    n = as_val(f, length, "iota")
    zero, one = (
        (0.0, 1.0)
        if dtype in (DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16)
        else (0, 1)
    )
    st = as_val(f, zero if start is None else start, "iota")
    sp = as_val(f, one if step is None else step, "iota")
    if not isinstance(n, Scalar) or not is_integral(n.dtype):
        raise ArgumentTypeError(f"iota: length must be an integer Scalar, got {describe(n)}")
    # cast: the same pure call was just checked to be not None
    if static_value(n) is not None and cast(int, static_value(n)) < 0:
        raise DefinitionError(f"iota: length {static_value(n)} must be >= 0")
    out = TensorView(f, [IterDomain.made(static_value(n))], dtype)
    emit(f, IOTA, [n, st, sp], [out], dtype=dtype)
    return out
