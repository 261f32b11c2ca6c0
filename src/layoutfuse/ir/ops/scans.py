"""Per-row ops along one dim (``OpKind.SCAN``): cumsum, argsort, topk; and triu.

Each row's result at one position depends on the whole row along ``dim`` (the other
dims are independent rows), so a kernel computes them a row at a time (the ``scan``
scheduler). Semantics are torch's:

* ``cumsum(x, dim)``: integers and bools accumulate in, and return, Int (int64);
  Half/BFloat16 accumulate in Float and return their own dtype.
* ``argsort(x, dim, descending, stable)``: Int indices; always stable (ties keep their
  index order, also when descending), which is one of the orders an unstable sort may
  give. NaN sorts as the largest value, as in torch.
* ``topk(x, k, dim, largest, sorted)``: (values, Int indices), ``k`` along ``dim``;
  NaN is the largest value; always returned sorted (``sorted=False`` allows any order);
  among ties the lower index comes first.
* ``triu(x, diagonal)`` is pointwise over the indices of the last two dims: it is built
  from iota, broadcast, ``ge`` and ``where`` rows, so it fuses with its neighbours.
"""

from __future__ import annotations

from typing import Any

import torch

from ...dtypes import COMPLEX, REDUCED_PRECISION, DataType, is_boolean, is_integral
from ...errors import ArgumentTypeError, DefinitionError, describe
from ..domain import IterDomain
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView
from .common import Operand, as_val, check_tensor, clone_id, emit, normalize_dim, static_value
from .creation import iota
from .elementwise import pointwise
from .scalars import size
from .shape import broadcast


def _cumsum_ref(x: torch.Tensor, dim: int) -> tuple[torch.Tensor]:
    if x.dtype in (torch.float16, torch.bfloat16):
        return (torch.cumsum(x.float(), dim).to(x.dtype),)
    return (torch.cumsum(x, dim),)  # ints and bools: int64, as torch


def _argsort_ref(x: torch.Tensor, dim: int, descending: bool, stable: bool) -> tuple[torch.Tensor]:
    return (torch.argsort(x, dim=dim, descending=descending, stable=True),)


def _topk_ref(
    x: torch.Tensor, k: int, dim: int, largest: bool, sorted: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    # a stable sort's first k: ties keep index order (torch.topk leaves them unspecified)
    idx = torch.argsort(x, dim=dim, descending=largest, stable=True).narrow(dim, 0, int(k))
    return torch.gather(x, dim, idx), idx


CUMSUM = register(OpDef("cumsum", OpKind.SCAN, reference=_cumsum_ref, doc="inclusive prefix sum"))
ARGSORT = register(OpDef("argsort", OpKind.SCAN, reference=_argsort_ref, doc="sorting indices"))
TOPK = register(OpDef("topk", OpKind.SCAN, reference=_topk_ref, doc="k largest or smallest"))

SCAN_OPS = ("cumsum", "argsort", "topk")


def scan_dim(e: Any) -> int:
    """The dim a SCAN expr works along."""
    return int(e.attrs["dim"])


def _row_domain(
    x: TensorView, dim: int, extent: int | None, made: bool = False
) -> list[IterDomain]:
    """``x``'s dims with ``dim`` a plain dim of ``extent`` (its values differ along it;
    ``made``: topk's k, symbolic where it is not a constant)."""
    return [
        IterDomain(extent, symbolic=made) if i == dim else clone_id(d)
        for i, d in enumerate(x.shape_domain)
    ]


def _check_sortable(x: TensorView, op: str) -> None:
    if x.dtype in COMPLEX:
        raise DefinitionError(f"{op}: complex tensors have no order (torch refuses them too)")


def cumsum(x: TensorView, dim: int) -> TensorView:
    x = check_tensor(x, "cumsum")
    if x.dtype in COMPLEX:
        raise DefinitionError("cumsum: complex tensors are not supported")
    d = normalize_dim(dim, x.ndim, "cumsum")
    dtype = DataType.Int if is_integral(x.dtype) or is_boolean(x.dtype) else x.dtype
    out = TensorView(x.fusion, _row_domain(x, d, x.shape_domain[d].extent), dtype)
    emit(x.fusion, CUMSUM, [x], [out], dim=d)
    return out


def argsort(x: TensorView, dim: int, descending: bool = False, stable: bool = False) -> TensorView:
    x = check_tensor(x, "argsort")
    _check_sortable(x, "argsort")
    d = normalize_dim(dim, x.ndim, "argsort")
    out = TensorView(x.fusion, _row_domain(x, d, x.shape_domain[d].extent), DataType.Int)
    emit(x.fusion, ARGSORT, [x], [out], dim=d, descending=bool(descending), stable=bool(stable))
    return out


def topk(
    x: TensorView, k: Operand, dim: int = -1, largest: bool = True, sorted: bool = False
) -> tuple[TensorView, TensorView]:
    x = check_tensor(x, "topk")
    _check_sortable(x, "topk")
    d = normalize_dim(dim, x.ndim, "topk")
    kv = as_val(x.fusion, k, "topk")
    if not isinstance(kv, Scalar) or not is_integral(kv.dtype):
        raise ArgumentTypeError(f"topk: k must be an int or an integer Scalar, got {describe(k)}")
    ks, n = static_value(kv), x.shape_domain[d].extent
    if ks is not None and (ks < 0 or (n is not None and ks > n)):
        raise DefinitionError(f"topk: k {ks} is out of range for dim {d} of extent {n}")
    values = TensorView(x.fusion, _row_domain(x, d, ks, made=True), x.dtype)
    indices = TensorView(x.fusion, _row_domain(x, d, ks, made=True), DataType.Int)
    emit(
        x.fusion,
        TOPK,
        [x, kv],
        [values, indices],
        dim=d,
        largest=bool(largest),
        sorted=bool(sorted),
    )
    return values, indices


def triu(x: TensorView, diagonal: Operand = 0) -> TensorView:
    """``x`` with the elements below diagonal ``diagonal`` of its last two dims zeroed:
    ``where(col - row >= diagonal, x, 0)``, the indices from iota."""
    x = check_tensor(x, "triu")
    if x.ndim < 2:
        raise DefinitionError(f"triu: the input must have at least 2 dims, got {x.ndim}")
    rows = broadcast(iota(size(x, -2)), [False, True])
    cols = broadcast(iota(size(x, -1)), [True, False])
    keep = pointwise("ge", pointwise("sub", cols, rows), diagonal)
    zero: bool | int | float = False if is_boolean(x.dtype) else 0 if is_integral(x.dtype) else 0.0
    return pointwise("where", keep, x, zero)


def accumulates_in(dtype: DataType) -> DataType:
    """The dtype a cumsum of ``dtype`` adds in: Float for Half/BFloat16, Int for ints."""
    if dtype in REDUCED_PRECISION:
        return DataType.Float
    if is_integral(dtype) or is_boolean(dtype):
        return DataType.Int
    return dtype
