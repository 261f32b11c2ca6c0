"""Reductions: sum, max, min, prod (one row each), and Welford statistics.

A reduction's output keeps the reduced axes in its logical domain as REDUCTION
axes (nvFuser's convention); ``keepdim`` adds a broadcast after it. Half and
BFloat16 accumulate in Float. ``var``, ``var_mean`` and ``welford`` are built on
the ``welford`` row, whose partial results (mean, M2, count) combine stably.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...dtypes import DataType, is_boolean, is_integral, to_torch
from ...errors import DefinitionError
from ..domain import IterDomain, IterType
from ..opdef import OpDef, OpKind, register
from ..values import TensorView
from .common import emit, normalize_dims


@dataclass(frozen=True)
class ReductionRow:
    name: str
    torch_fn: object
    identity: str          # Triton expression of the identity, in the accumulator dtype
    combine: str           # Triton expression combining accumulators a and b
    triton_reduce: str     # Triton reduction over an axis: "{fn}(x, axis)"


def _sum_ref(x, dims):
    return torch.sum(x, dim=dims) if dims else x.clone()


def _amax_ref(x, dims):
    return torch.amax(x, dim=dims) if dims else x.clone()


def _amin_ref(x, dims):
    return torch.amin(x, dim=dims) if dims else x.clone()


def _prod_ref(x, dims):
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, dim=d)
    return x


ROWS = [
    ReductionRow("sum", _sum_ref, "0", "a + b", "tl.sum"),
    ReductionRow("max", _amax_ref, "-inf", "tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)",
                 "_max_nan"),
    ReductionRow("min", _amin_ref, "inf", "tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)",
                 "_min_nan"),
    ReductionRow("prod", _prod_ref, "1", "a * b", "_prod"),
]
ROW_BY_NAME = {r.name: r for r in ROWS}

OPDEFS = {
    r.name: register(OpDef(r.name, OpKind.REDUCTION, reference=r.torch_fn)) for r in ROWS
}


def _reduced_domain(x: TensorView, dims: tuple[int, ...]) -> list[IterDomain]:
    out = []
    for i, d in enumerate(x.shape_domain):
        if i in dims:
            out.append(IterDomain(d.extent, IterType.REDUCTION))
        else:
            out.append(IterDomain(d.extent, d.iter_type, d.expanded))
    return out


def _dims_arg(x: TensorView, dims, op: str) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(x.ndim))
    if isinstance(dims, int):
        dims = [dims]
    return normalize_dims(list(dims), x.ndim, op)


def reduction(name: str, x: TensorView, dims=None, keepdim: bool = False,
              dtype: DataType = DataType.Null) -> TensorView:
    """``name`` in {sum, max, min, prod} over ``dims`` (None: all dims)."""
    from .elementwise import cast
    from .shape import broadcast

    if not isinstance(x, TensorView):
        raise DefinitionError(f"{name}: expected a Tensor, got {x!r}")
    nd = _dims_arg(x, dims, name)
    if dtype is not None and dtype is not DataType.Null:
        x = cast(x, dtype)
    elif name in ("sum", "prod") and (is_integral(x.dtype) or is_boolean(x.dtype)):
        x = cast(x, DataType.Int)
    if name in ("max", "min") and is_boolean(x.dtype):
        raise DefinitionError(f"{name}: Bool inputs are not supported; cast to Int first")
    out = TensorView(x.fusion, _reduced_domain(x, nd), x.dtype)
    emit(x.fusion, OPDEFS[name], [x], [out], dims=nd)
    if keepdim:
        out = broadcast(out, [i in nd for i in range(x.ndim)])
    return out


# --- Welford -----------------------------------------------------------------------------------
def _welford_ref(x, dims):
    xf = x.to(torch.float64) if x.dtype == torch.float64 else x.to(torch.float32)
    mean = xf.mean(dim=dims) if dims else xf.clone()
    m2 = ((xf - xf.mean(dim=dims, keepdim=True)) ** 2).sum(dim=dims) if dims else \
        torch.zeros_like(xf)
    n = 1
    for d in dims:
        n *= x.shape[d]
    count = torch.full(mean.shape, n, dtype=torch.int64, device=x.device)
    return mean, m2, count


WELFORD = register(OpDef("welford", OpKind.WELFORD, reference=_welford_ref,
                         doc="(mean, M2, count) over dims, combined with Chan's formula"))


def welford(x: TensorView, dims) -> tuple[TensorView, TensorView, TensorView]:
    """(avg, var_sum, n): the mean, the sum of squared deviations and the count."""
    if not isinstance(x, TensorView):
        raise DefinitionError(f"welford: expected a Tensor, got {x!r}")
    nd = _dims_arg(x, dims, "welford")
    acc = DataType.Double if x.dtype is DataType.Double else DataType.Float
    outs = (
        TensorView(x.fusion, _reduced_domain(x, nd), acc),
        TensorView(x.fusion, _reduced_domain(x, nd), acc),
        TensorView(x.fusion, _reduced_domain(x, nd), DataType.Int),
    )
    emit(x.fusion, WELFORD, [x], outs, dims=nd)
    return outs


def var_mean(x: TensorView, dims=None, correction=1, keepdim: bool = False):
    """(var, mean) with Bessel-style ``correction``, in the input's dtype (Float for integers)."""
    from .elementwise import cast, pointwise
    from .shape import broadcast

    if not isinstance(x, TensorView):
        raise DefinitionError(f"var_mean: expected a Tensor, got {x!r}")
    out_dtype = x.dtype if x.dtype in (DataType.Double, DataType.Float, DataType.Half,
                                       DataType.BFloat16) else DataType.Float
    nd = _dims_arg(x, dims, "var_mean")
    mean, m2, n = welford(x, nd)
    denom = pointwise("sub", cast(n, mean.dtype), float(correction))
    denom = pointwise("maximum", denom, 0.0)
    var = pointwise("div", m2, denom)
    var, mean = cast(var, out_dtype), cast(mean, out_dtype)
    if keepdim:
        flags = [i in nd for i in range(x.ndim)]
        var, mean = broadcast(var, flags), broadcast(mean, flags)
    return var, mean


def var(x: TensorView, dims=None, correction=1, keepdim: bool = False) -> TensorView:
    return var_mean(x, dims, correction, keepdim)[0]


def torch_accumulator(dtype: DataType) -> torch.dtype:
    return torch.float64 if dtype is DataType.Double else to_torch(dtype)


def n_results(expr) -> int:
    """Partial results of one reduction expr: one, or three for a Welford (mean, M2, n)."""
    return len(expr.outputs)


def accumulator_dtype(expr) -> DataType:
    """The accumulator of reduction expr ``expr``: fp32 for 16-bit, 8-bit and fp32 floats,
    fp64 for doubles (a Welford of doubles too), the output dtype otherwise."""
    if expr.op.kind is OpKind.WELFORD:
        return DataType.Double if expr.inputs[0].dtype is DataType.Double else DataType.Float
    dtype = expr.outputs[0].dtype
    if dtype in (DataType.Half, DataType.BFloat16, DataType.Float, DataType.Float8_e4m3fn,
                 DataType.Float8_e5m2):
        return DataType.Float
    return dtype


_EMPTY_FILL = {"sum": (0,), "prod": (1,), "max": (float("-inf"),), "min": (float("inf"),),
               "welford": (float("nan"), 0, 0)}


def empty_fill_values(expr) -> tuple[float, ...]:
    """Each result's value over an empty reduced extent: sum 0, prod 1, max -inf and min
    inf (nvFuser's fill, where torch refuses), a Welford's mean NaN, M2 0 and count 0."""
    return _EMPTY_FILL[expr.op.name]
