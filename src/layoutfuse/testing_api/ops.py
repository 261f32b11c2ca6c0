"""nvFuser's C++ op functions (``sum``, ``permute``, ``reshape``, ...) in snake_case.

Each one is a thin adapter from nvFuser's C++ signature to a builder of
``layoutfuse.ir.ops``; the op's meaning lives there, once. Pointwise ops are
generated from the op table in :mod:`.pointwise`, reductions here from the rows
of ``layoutfuse.ir.ops.reductions``. Operands with no fusion of their own (Python
numbers, shapes) go to the fusion of the ``FusionGuard``.

Several names here (``sum``, ``max``, ``min``, ``set``) shadow Python builtins on
purpose, as nvFuser's names do; this module does not use those builtins.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from ..dtypes import DataType, is_boolean, is_integral
from ..errors import DefinitionError
from ..ir import Scalar, TensorView, Val
from ..ir import ops as ir_ops
from ..ir.ops.common import static_value
from ..ir.ops.reductions import REDUCTION_DIMS_RULE
from ..ir.ops.reductions import ROWS as REDUCTION_ROWS

# --- reductions ------------------------------------------------------------------------------
# nvFuser's ``max(a, b)`` and ``min(a, b)`` of two Vals are the pointwise maximum and minimum.
_BINARY_OVERLOADS = {"max": "maximum", "min": "minimum"}


def _reduction_function(name: str) -> Callable:
    binary = _BINARY_OVERLOADS.get(name)

    def op(tv, axes, keep_dim: bool = False, dtype: DataType = DataType.Null):
        if binary is not None and isinstance(axes, Val):
            return ir_ops.pointwise(binary, tv, axes)
        return ir_ops.reduction(name, tv, axes, keepdim=keep_dim, dtype=dtype)

    op.__name__ = op.__qualname__ = name
    op.__module__ = __name__
    op.__doc__ = (
        f"``{name}(tv, reduction_axes, keep_dim, dtype)``"
        + (f"; with a Val second operand, nvFuser's binary ``{name}``." if binary else ".")
        + f"\n\n{REDUCTION_DIMS_RULE}"
    )
    return op


# One function per reduction row of one result (sum, prod, max, min).
REDUCTIONS: dict[str, Callable] = {
    row.name: _reduction_function(row.name) for row in REDUCTION_ROWS if row.n_results == 1
}
globals().update(REDUCTIONS)


def mean(tv: TensorView, axes, keep_dim: bool = False) -> TensorView:
    """``mean(tv, dims, keepdim)``: the sum divided by the number of reduced elements."""
    if is_integral(tv.dtype) or is_boolean(tv.dtype):
        tv = ir_ops.cast(tv, DataType.Float)
    total = ir_ops.reduction("sum", tv, axes, keepdim=keep_dim)  # checks axes
    dims = [axes] if isinstance(axes, int) else list(axes)
    count: Scalar | int = 1
    for d in dims:
        extent = tv.shape_domain[d].extent
        count = (
            count * extent
            if isinstance(count, int) and extent is not None
            else ir_ops.pointwise("mul", count, ir_ops.size(tv, d))
        )
    return ir_ops.pointwise("div", total, count)


class WelfordResult(NamedTuple):
    avg: TensorView
    var_sum: TensorView
    n: TensorView


class VarMeanResult(NamedTuple):
    var: TensorView
    mean: TensorView


def welford(tv: TensorView, axes) -> WelfordResult:
    """``welford(tv, axes)``: (avg, var_sum, n), var_sum being the sum of squared deviations."""
    return WelfordResult(*ir_ops.welford(tv, axes))


def variance(tv: TensorView, dims, correction: int | bool = 1, keepdim: bool = False) -> TensorView:
    """``variance(x, dims, unbiased | correction, keepdim)``; ``unbiased=True`` is correction 1."""
    return ir_ops.var(tv, dims, int(correction), keepdim)


def var_mean(
    tv: TensorView, dims, correction: int | bool = 1, keepdim: bool = False
) -> VarMeanResult:
    """``variance_mean(x, dims, correction, keepdim)``: (var, mean)."""
    return VarMeanResult(*ir_ops.var_mean(tv, dims, int(correction), keepdim))


variance_mean = var_mean
for _statistic in (mean, welford, variance, var_mean):
    _statistic.__doc__ = f"{_statistic.__doc__}\n\n{REDUCTION_DIMS_RULE}"


# --- casts ------------------------------------------------------------------------------------


def _cast_args(a, b, name: str):
    if isinstance(a, DataType) and not isinstance(b, DataType):
        return b, a
    if isinstance(b, DataType) and not isinstance(a, DataType):
        return a, b
    raise DefinitionError(f"{name}: expected a value and a DataType, got {a!r} and {b!r}")


def cast_op(dtype: DataType, v):
    """``castOp(dtype, v)``; the operands may come in either order."""
    return ir_ops.cast(*_cast_args(dtype, v, "cast_op"))


def cast(v, dtype: DataType):
    """``v`` converted to ``dtype``; the operands may come in either order."""
    return ir_ops.cast(*_cast_args(v, dtype, "cast"))


# --- shape ops --------------------------------------------------------------------------------


def permute(tv: TensorView, new2old) -> TensorView:
    """``permute(tv, new2old)``: output dim i is input dim ``new2old[i]``.

    A mapping is nvFuser's other overload, ``{old: new}``, with unnamed dims kept in order.
    """
    if isinstance(new2old, Mapping):
        new2old = _old2new_to_new2old(dict(new2old), tv.ndim)
    return ir_ops.permute(tv, new2old)


def _old2new_to_new2old(old2new: dict[int, int], ndim: int) -> list[int]:
    wrap = {o % ndim: n % ndim for o, n in old2new.items()} if ndim else {}
    if len(builtins.set(wrap.values())) != len(wrap):
        raise DefinitionError(f"permute: {old2new} sends two dims to the same place")
    out: list[int | None] = [None] * ndim
    for o, n in wrap.items():
        out[n] = o
    rest = iter(d for d in range(ndim) if d not in wrap)
    return [d if d is not None else next(rest) for d in out]


def reshape(tv: TensorView, original_sizes, new_sizes=None) -> TensorView:
    """``reshape(tv, original_sizes, new_sizes)``, nvFuser's two-list form, or ``reshape(tv, new)``.

    ``original_sizes`` must agree with every static extent of ``tv``.
    """
    if new_sizes is None:
        return ir_ops.reshape(tv, original_sizes)
    original = list(original_sizes)
    if len(original) != tv.ndim:
        raise DefinitionError(
            f"reshape: original_sizes {original} has {len(original)} entries "
            f"but the tensor has rank {tv.ndim}"
        )
    for i, (given, d) in enumerate(zip(original, tv.shape_domain)):
        value = static_value(given) if isinstance(given, Scalar) else given
        if d.extent is not None and value is not None and value != d.extent:
            raise DefinitionError(
                f"reshape: original_sizes[{i}] is {value} but the tensor's "
                f"dim {i} has extent {d.extent}"
            )
    return ir_ops.reshape(tv, new_sizes)


def broadcast(tv: TensorView, is_broadcast_dim: Sequence[bool]) -> TensorView:
    """``broadcast(tv, is_broadcast_dim)``: a new size-1 axis at every True entry."""
    return ir_ops.broadcast(tv, is_broadcast_dim)


def set(tv: TensorView) -> TensorView:
    """``set(tv)``: a copy of ``tv``."""
    return ir_ops.set_(tv)


def expand(tv: TensorView, expanded_sizes) -> TensorView:
    """``expand(tv, sizes)``: broadcast axes take the given extents; -1 keeps an extent."""
    return ir_ops.expand(tv, expanded_sizes)


def squeeze(tv: TensorView, dims, squeeze_expanded: bool = False) -> TensorView:
    """``squeeze(tv, dims)``, or ``squeeze(tv, to_squeeze)`` with one bool per dim."""
    dims = list(dims)
    if dims and all(isinstance(d, bool) for d in dims):
        if len(dims) != tv.ndim:
            raise DefinitionError(f"squeeze: {dims} has {len(dims)} flags for rank {tv.ndim}")
        dims = [i for i, flag in enumerate(dims) if flag]
    return ir_ops.squeeze(tv, dims, squeeze_expanded)


# --- creation ---------------------------------------------------------------------------------


def full(shape, fill_value, dtype: DataType) -> TensorView:
    """``full(shape, fill_value, dtype)``."""
    return ir_ops.full(shape, fill_value, dtype)


def zeros(shape, dtype: DataType) -> TensorView:
    return full(shape, 0.0 if dtype not in _INT_LIKE else 0, dtype)


def ones(shape, dtype: DataType) -> TensorView:
    return full(shape, 1.0 if dtype not in _INT_LIKE else 1, dtype)


_INT_LIKE = frozenset({DataType.Int, DataType.Int32, DataType.UInt64, DataType.Bool})


def iota(length, start=None, step=None, dtype: DataType = DataType.Int) -> TensorView:
    """``iota(length, start, step, dtype)``: start, start + step, ... (``length`` values)."""
    return ir_ops.iota(length, start, step, dtype)


__all__ = sorted(
    [
        "VarMeanResult",
        "WelfordResult",
        "broadcast",
        "cast",
        "cast_op",
        "expand",
        "full",
        "iota",
        "mean",
        "ones",
        "permute",
        "reshape",
        "set",
        "squeeze",
        "var_mean",
        "variance",
        "variance_mean",
        "welford",
        "zeros",
        *REDUCTIONS,
    ]
)
