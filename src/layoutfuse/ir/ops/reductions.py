"""Reductions: one row each (sum, prod, max, min, and Welford's statistics).

A row defines a reduction once: its torch reference, its identity per dtype class, its
Triton combine helper (the reduction kernels' prelude is generated from the rows), the
values an empty reduction fills its outputs with, its accumulator dtype and its results.

A reduction's output keeps the reduced axes in its logical domain as REDUCTION
axes (nvFuser's convention); ``keepdim`` adds a broadcast after it. Half and
BFloat16 accumulate in Float. ``var``, ``var_mean`` and ``welford`` are built on
the ``welford`` row, whose partial results (mean, M2, count) combine stably.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ...dtypes import COMPLEX, DataType, is_boolean, is_integral, part_dtype, to_torch
from ...errors import ArgumentTypeError, DefinitionError, describe
from ..domain import IterDomain, IterType
from ..opdef import OpDef, OpKind, register
from ..values import TensorView
from .common import check_tensor, emit, normalize_dims

if TYPE_CHECKING:
    from ..fusion import Expr

INF = float("inf")


@dataclass(frozen=True)
class Identity:
    """A reduction's identity in each dtype class: a number, or ``"min"`` / ``"max"`` for the
    integer dtype's bounds. Floats include the complex dtypes; Bool is its own class."""

    floating: float
    signed: int | str
    unsigned: int | str
    boolean: bool

    def value(self, dtype: DataType) -> float | int | bool:
        """The identity in ``dtype`` (the accumulator's), as a Python number."""
        if is_boolean(dtype):
            return self.boolean
        if not is_integral(dtype):
            return self.floating
        v = self.unsigned if dtype is DataType.UInt64 else self.signed
        if isinstance(v, str):
            info = torch.iinfo(to_torch(dtype))
            return info.min if v == "min" else info.max
        return v


@dataclass(frozen=True)
class ReductionRow:
    """One reduction. ``combine``: the name of the ``@triton.jit`` helper that combines two
    accumulators (each ``parts`` values), ``combine_source`` its text. ``identity``: the
    accumulators' start (None: every part starts at 0). ``empty_fill``: the outputs of a
    reduction over no element, one per part (None: the identity in the output's dtype).
    ``accumulator``: the accumulator dtype of the reduced values' dtype. ``promote_integers``:
    integer and Bool inputs are reduced as Int (torch's sum and prod); ``bool_inputs``: Bool
    inputs are accepted."""

    name: str
    torch_fn: Callable[..., Any]
    identity: Identity | None
    combine: str
    combine_source: str
    accumulator: Callable[[DataType], DataType]
    parts: tuple[str, ...] = ("res",)
    empty_fill: tuple[float, ...] | None = None
    kind: OpKind = OpKind.REDUCTION
    promote_integers: bool = False
    bool_inputs: bool = True
    # each part over a single element ``x`` (every reduced extent 1: the pointwise
    # scheduler computes the reduction in place): "x" (the value in the accumulator
    # dtype), an expression of it (``{x}``), or a number
    one_element: tuple[str, ...] = ("x",)
    # each part over M copies of every value (an expanded reduced dim, ``Problem.repeat``):
    # True where it is M times the part over the values once, False where it is the same;
    # None: not expressible so (a prod's is a power)
    copies: tuple[bool, ...] | None = (False,)
    doc: str = ""

    @property
    def n_results(self) -> int:
        return len(self.parts)


def float_accumulator(dtype: DataType) -> DataType:
    """Floats of up to 32 bits accumulate in Float; Double and integers in their own dtype."""
    if dtype in (
        DataType.Half,
        DataType.BFloat16,
        DataType.Float,
        DataType.Float8_e4m3fn,
        DataType.Float8_e5m2,
    ):
        return DataType.Float
    return dtype


def _welford_accumulator(dtype: DataType) -> DataType:
    """Welford's statistics: Double for doubles, else Float (integers too); a complex
    value's mean is complex (``welford``: its M2 is of the part dtype)."""
    if dtype in (DataType.ComplexFloat, DataType.ComplexDouble):
        return dtype
    return DataType.Double if dtype is DataType.Double else DataType.Float


def _jit(signature: str, *body: str) -> str:
    """The source of a ``@triton.jit`` helper: ``def signature:`` and its body lines."""
    return "@triton.jit\ndef " + signature + ":\n" + "".join(f"    {b}\n" for b in body)


def _sum_ref(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return torch.sum(x, dim=dims) if dims else x.clone()


def _amax_ref(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return torch.amax(x, dim=dims) if dims else x.clone()


def _amin_ref(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return torch.amin(x, dim=dims) if dims else x.clone()


def _prod_ref(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    if not dims:
        return x.clone()  # a copy, as the other rows' references return
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, dim=d)
    return x


def _welford_ref(
    x: torch.Tensor, dims: tuple[int, ...]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if x.is_complex():  # M2 of a complex value: the sum of |x - mean|^2 (torch.var's)
        xf = x
    else:
        xf = x.to(torch.float64) if x.dtype == torch.float64 else x.to(torch.float32)
    mean = xf.mean(dim=dims) if dims else xf.clone()
    m2 = (
        ((xf - xf.mean(dim=dims, keepdim=True)).abs() ** 2).sum(dim=dims)
        if dims and x.is_complex()
        else ((xf - xf.mean(dim=dims, keepdim=True)) ** 2).sum(dim=dims)
        if dims
        else torch.zeros_like(xf.real)
    )
    n = 1
    for d in dims:
        n *= x.shape[d]
    count = torch.full(mean.shape, n, dtype=torch.int64, device=x.device)
    return mean, m2, count


_NAN_AWARE = "propagate_nan=tl.PropagateNan.ALL"

# In this order the rows' combine helpers make the reduction kernels' prelude.
ROWS = (
    ReductionRow(
        "sum",
        _sum_ref,
        Identity(0, 0, 0, False),
        "_add_combine",
        _jit("_add_combine(a, b)", "return a + b"),
        float_accumulator,
        promote_integers=True,
        doc="the sum; integers and Bool sum as Int",
        copies=(True,),
    ),
    ReductionRow(
        "prod",
        _prod_ref,
        Identity(1, 1, 1, True),
        "_mul_combine",
        _jit("_mul_combine(a, b)", "return a * b"),
        float_accumulator,
        promote_integers=True,
        doc="the product; integers and Bool multiply as Int",
        copies=None,
    ),
    ReductionRow(
        "max",
        _amax_ref,
        Identity(-INF, "min", "min", False),
        "_max_combine",
        _jit("_max_combine(a, b)", f"return tl.maximum(a, b, {_NAN_AWARE})"),
        float_accumulator,
        bool_inputs=False,
        doc="the maximum, NaN if any value is NaN (torch's amax); over no element "
        "-inf for floats, as nvFuser fills it (torch raises), the minimum for "
        "integers",
    ),
    ReductionRow(
        "min",
        _amin_ref,
        Identity(INF, "max", "max", True),
        "_min_combine",
        _jit("_min_combine(a, b)", f"return tl.minimum(a, b, {_NAN_AWARE})"),
        float_accumulator,
        bool_inputs=False,
        doc="the minimum, NaN if any value is NaN (torch's amin); over no element "
        "inf for floats, as nvFuser fills it (torch raises), the maximum for "
        "integers",
    ),
    ReductionRow(
        "welford",
        _welford_ref,
        None,
        "_welford_combine",
        _jit(
            "_welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b)",
            "n = n_a + n_b",
            "delta = mean_b - mean_a",
            "w = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))",
            "return mean_a + delta * w, m2_a + m2_b + delta * delta * n_a * w, n",
        ),
        _welford_accumulator,
        parts=("mean", "m2", "n"),
        empty_fill=(float("nan"), 0, 0),
        # M2 of one element is 0, but NaN for a NaN or infinite one (``x - x``), as the
        # combine (``delta * delta * 0``) and torch's var give it
        one_element=("x", "({x} - {x}) * ({x} - {x})", "1"),
        kind=OpKind.WELFORD,
        doc="(mean, M2, count) over dims, combined with Chan's formula; over no "
        "element (NaN, 0, 0)",
        copies=(False, True, True),
    ),
)
ROW_BY_NAME = {r.name: r for r in ROWS}

OPDEFS = {r.name: register(OpDef(r.name, r.kind, reference=r.torch_fn, doc=r.doc)) for r in ROWS}
WELFORD = OPDEFS["welford"]


def reduction_row(expr: Expr) -> ReductionRow:
    """The row of reduction (or Welford) expr ``expr``."""
    return ROW_BY_NAME[expr.op.name]


def n_results(expr: Expr) -> int:
    """Results of reduction expr ``expr``, by its row: one, or three for a Welford (mean,
    M2, n)."""
    return reduction_row(expr).n_results


def one_element_parts(expr: Expr) -> tuple[str, ...]:
    """Each output of reduction ``expr`` over one element (the row's ``one_element``)."""
    return reduction_row(expr).one_element


def copies_scale(expr: Expr) -> tuple[bool, ...] | None:
    """Which outputs of reduction ``expr`` over M copies of each value are M times the
    output over the values once (the row's ``copies``; None: not expressible so)."""
    return reduction_row(expr).copies


def accumulator_dtype(expr: Expr) -> DataType:
    """The accumulator of reduction expr ``expr``, by its row: fp32 for 16-bit and fp32
    values, fp64 for doubles; integers in their own dtype, but a Welford's statistics in
    fp32."""
    return reduction_row(expr).accumulator(expr.inputs[0].dtype)


def empty_fill_values(expr: Expr) -> tuple[float | int | bool, ...]:
    """What each output of reduction ``expr`` holds when it reduces no element: the row's
    ``empty_fill``, else its identity in the output's dtype (sum 0, prod 1, max -inf and
    min inf for floats, as nvFuser fills them; Welford NaN, 0, 0)."""
    row = reduction_row(expr)
    if row.empty_fill is not None:
        return row.empty_fill
    assert row.identity is not None  # only welford has none, and it has an empty_fill
    return tuple(row.identity.value(out.dtype) for out in expr.outputs)


def _reduced_domain(x: TensorView, dims: tuple[int, ...]) -> list[IterDomain]:
    out = []
    for i, d in enumerate(x.shape_domain):
        if i in dims:
            out.append(IterDomain(d.extent, IterType.REDUCTION))
        else:
            out.append(IterDomain(d.extent, d.iter_type, d.expanded, d.symbolic))
    return out


REDUCTION_DIMS_RULE = (
    "Dims: every dim when none are given; an empty dims list (or every dim of a 0-dim "
    'tensor) is refused, as nvFuser refuses it ("No reduction axis specified"; torch '
    "would reduce every dim). A reduction over a zero extent fills its output (sum 0, prod "
    "1, max -inf and min inf for floats, Welford NaN, 0, 0), as nvFuser does."
)


def _dims_arg(x: TensorView, dims: object, op: str) -> tuple[int, ...]:
    """The reduced dims, sorted: ``dims`` (an int or a list of ints), or None for every dim.
    No dims at all is refused (:data:`REDUCTION_DIMS_RULE`)."""
    if dims is None:
        if x.ndim == 0:
            raise DefinitionError(
                f"{op}: the input has rank 0, so reducing every dim reduces "
                f"none: no reduction axis specified (nvFuser refuses it)"
            )
        return tuple(range(x.ndim))
    if isinstance(dims, int) and not isinstance(dims, bool):
        dims = [dims]
    if not isinstance(dims, list | tuple):
        raise ArgumentTypeError(
            f"{op}: dims must be an int or a list of ints, got {describe(dims)}"
        )
    if not dims:
        raise DefinitionError(
            f"{op}: dims is empty: no reduction axis specified (nvFuser "
            f"refuses a reduction over no dims); omit dims to reduce every "
            f"dim"
        )
    return normalize_dims(list(dims), x.ndim, op)


def reduction(
    name: str,
    x: TensorView,
    dims: int | Sequence[int] | None = None,
    keepdim: bool = False,
    dtype: DataType = DataType.Null,
) -> TensorView:
    """Row ``name`` (one of one result: sum, prod, max, min) over ``dims`` (None: all dims)."""
    from .complex import check_complex_support
    from .elementwise import cast
    from .shape import broadcast

    row = ROW_BY_NAME.get(name)
    if row is None or row.n_results != 1:
        raise DefinitionError(f"{name!r} is not a reduction of one result")
    x = check_tensor(x, name)
    nd = _dims_arg(x, dims, name)
    if dtype is not None and dtype is not DataType.Null:
        x = cast(x, dtype)
    elif row.promote_integers and (is_integral(x.dtype) or is_boolean(x.dtype)):
        x = cast(x, DataType.Int)
    if not row.bool_inputs and is_boolean(x.dtype):
        raise DefinitionError(f"{name}: Bool inputs are not supported; cast to Int first")
    check_complex_support(name, [x.dtype])  # complex: ir/ops/complex.py
    if _over_one_element(x, nd):
        # a reduction of one element along each dim is that element, as in nvFuser: a
        # squeeze (Thunder's backward sums [B, S, 1] over its last dim), which kernels
        # compute in place instead of cutting a reduction there
        from .shape import squeeze

        out = squeeze(x, nd, reduced=True)
        return broadcast(out, [i in nd for i in range(x.ndim)]) if keepdim else out
    out = TensorView(x.fusion, _reduced_domain(x, nd), x.dtype)
    emit(x.fusion, OPDEFS[name], [x], [out], dims=nd)
    if keepdim:
        out = broadcast(out, [i in nd for i in range(x.ndim)])
    return out


def _over_one_element(x: TensorView, dims: tuple[int, ...]) -> bool:
    """Whether ``dims`` are all broadcast dims of extent 1 (not expanded) of a computed
    tensor (the reduction of a fusion input, or of view ops of one, stays one: its output
    is no view of the input)."""
    from .shape import VIEW_OPS

    doms = [x.shape_domain[d] for d in dims]
    src: TensorView = x
    while src.definition is not None and src.definition.op.name in VIEW_OPS:
        first = src.definition.inputs[0]
        assert isinstance(first, TensorView)
        src = first
    return (
        bool(dims)
        and src.definition is not None
        and all(d.is_broadcast and not d.expanded for d in doms)
    )


# --- Welford -----------------------------------------------------------------------------------
def welford(
    x: TensorView, dims: int | Sequence[int] | None
) -> tuple[TensorView, TensorView, TensorView]:
    """(avg, var_sum, n): the mean, the sum of squared deviations and the count.
    ``dims`` as for every reduction (:data:`REDUCTION_DIMS_RULE`)."""
    from .complex import check_complex_support

    x = check_tensor(x, "welford")
    check_complex_support("welford", [x.dtype])
    nd = _dims_arg(x, dims, "welford")
    acc = ROW_BY_NAME["welford"].accumulator(x.dtype)
    outs = (
        TensorView(x.fusion, _reduced_domain(x, nd), acc),
        TensorView(x.fusion, _reduced_domain(x, nd), part_dtype(acc)),
        TensorView(x.fusion, _reduced_domain(x, nd), DataType.Int),
    )
    emit(x.fusion, WELFORD, [x], outs, dims=nd)
    return outs


def var_mean(
    x: TensorView,
    dims: int | Sequence[int] | None = None,
    correction: float = 1,
    keepdim: bool = False,
    op: str = "var_mean",
) -> tuple[TensorView, TensorView]:
    """(var, mean) with Bessel-style ``correction``, in the input's dtype (Float for integers).
    ``dims`` as for every reduction (:data:`REDUCTION_DIMS_RULE`); ``op`` names the call in
    errors."""
    from .elementwise import cast, pointwise
    from .shape import broadcast

    x = check_tensor(x, op)
    out_dtype = (
        x.dtype
        if x.dtype in (DataType.Double, DataType.Float, DataType.Half, DataType.BFloat16, *COMPLEX)
        else DataType.Float
    )
    nd = _dims_arg(x, dims, op)
    mean, m2, n = welford(x, nd)
    denom = pointwise("sub", cast(n, m2.dtype), float(correction))
    denom = pointwise("maximum", denom, 0.0)
    var = pointwise("div", m2, denom)
    # the variance of a complex value is real (torch.var): of its parts' dtype
    var, mean = cast(var, part_dtype(out_dtype)), cast(mean, out_dtype)
    if keepdim:
        flags = [i in nd for i in range(x.ndim)]
        var, mean = broadcast(var, flags), broadcast(mean, flags)
    return var, mean


def var(
    x: TensorView,
    dims: int | Sequence[int] | None = None,
    correction: float = 1,
    keepdim: bool = False,
) -> TensorView:
    """The variance of :func:`var_mean`."""
    return var_mean(x, dims, correction, keepdim, op="var")[0]


def torch_accumulator(dtype: DataType) -> torch.dtype:
    return torch.float64 if dtype is DataType.Double else to_torch(dtype)
