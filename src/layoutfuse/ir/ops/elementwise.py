"""Pointwise ops: one row each (name, arity, dtype rule, torch reference, Triton emission).

Operands of Half/BFloat16 are computed in Float (the reference upcasts the same
way), and the result is cast to the op's output dtype. Emission functions take
the operands' Triton expressions and return the result's expression; ``lib`` is
``triton.language.extra.libdevice``, imported by every generated kernel.

``exp`` (and sigmoid, silu) use the prelude's ``_exp``: on fp32 a multiply and
``ex2.approx.ftz.f32`` (relative error about 2 ulp plus ``|x|`` x 6e-8; results below
2**-126 flush to 0), where libdevice's ``exp`` costs 16 more instructions per element,
enough to make a bf16 softmax compute-bound on the H200 (74% of the read ceiling where
fp32 reached 90%), and ``tl.exp`` (non-ftz ``ex2.approx.f32``) 3 more; fp64 still lowers
to libdevice's precise ``exp``.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import torch

from ...dtypes import (
    REDUCED_PRECISION,
    DataType,
    is_boolean,
    is_floating,
    is_integral,
    part_dtype,
    promote,
)
from ...errors import ArgumentTypeError, DefinitionError
from ..opdef import OpDef, OpKind, register
from . import pointwise_math as pm

if TYPE_CHECKING:
    from ..values import Scalar, TensorView, Val
    from .common import Operand


class DtypeRule(enum.Enum):
    PROMOTE = "promote"  # PyTorch promotion of the operands
    FLOAT = "float"  # promotion, then integers and bools become Float
    BOOL = "bool"  # result is Bool (comparisons, predicates, logical ops)
    INTEGRAL = "integral"  # promotion; operands must be integers or bools
    FULL_FLOAT = "full_float"  # promotion; the result must be Float or Double (nvFuser's nextafter)
    PART = "part"  # promotion; a complex result becomes its parts' real dtype (abs, real, imag)


@dataclass(frozen=True)
class PointwiseRow:
    name: str
    arity: int
    rule: DtypeRule
    reference: Callable[..., Any]
    triton: Callable[..., str]
    # operand positions where nvFuser's binding takes a Scalar only (an alpha, a threshold)
    scalar_operands: tuple[int, ...] = ()
    # those scalars are rounded to a Half/BFloat16 result's dtype first (torch's alpha; a
    # threshold is compared in Float)
    round_scalars: bool = False


def _remainder_ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.remainder(a, b)


def _div_ref(a: torch.Tensor | float, b: torch.Tensor | float) -> torch.Tensor:
    def inexact(x: torch.Tensor | float) -> bool:
        return torch.is_tensor(x) and (x.is_floating_point() or x.is_complex())

    if not inexact(a) and not inexact(b):
        return torch.div(a, b, rounding_mode="trunc")
    return torch.div(a, b)


def _lerp_ref(a: torch.Tensor, b: torch.Tensor, w: torch.Tensor | float) -> torch.Tensor:
    return torch.lerp(a, b, w) if torch.is_tensor(w) else torch.lerp(a, b, float(w))


_nan_all = "propagate_nan=tl.PropagateNan.ALL"

ROWS: list[PointwiseRow] = [
    # --- unary --------------------------------------------------------------------------
    PointwiseRow("abs", 1, DtypeRule.PART, torch.abs, lambda x: f"tl.abs({x})"),
    PointwiseRow("neg", 1, DtypeRule.PROMOTE, torch.neg, lambda x: f"_neg({x})"),
    PointwiseRow("exp", 1, DtypeRule.FLOAT, torch.exp, lambda x: f"_exp({x})"),
    PointwiseRow("exp2", 1, DtypeRule.FLOAT, torch.exp2, lambda x: f"lib.exp2({x})"),
    PointwiseRow("expm1", 1, DtypeRule.FLOAT, torch.expm1, lambda x: f"lib.expm1({x})"),
    PointwiseRow("log", 1, DtypeRule.FLOAT, torch.log, lambda x: f"lib.log({x})"),
    PointwiseRow("log1p", 1, DtypeRule.FLOAT, torch.log1p, lambda x: f"lib.log1p({x})"),
    PointwiseRow("log2", 1, DtypeRule.FLOAT, torch.log2, lambda x: f"lib.log2({x})"),
    PointwiseRow("log10", 1, DtypeRule.FLOAT, torch.log10, lambda x: f"lib.log10({x})"),
    PointwiseRow("sqrt", 1, DtypeRule.FLOAT, torch.sqrt, lambda x: f"lib.sqrt({x})"),
    PointwiseRow("rsqrt", 1, DtypeRule.FLOAT, torch.rsqrt, lambda x: f"lib.rsqrt({x})"),
    PointwiseRow("reciprocal", 1, DtypeRule.FLOAT, torch.reciprocal, lambda x: f"(1.0 / {x})"),
    PointwiseRow("sin", 1, DtypeRule.FLOAT, torch.sin, lambda x: f"lib.sin({x})"),
    PointwiseRow("cos", 1, DtypeRule.FLOAT, torch.cos, lambda x: f"lib.cos({x})"),
    PointwiseRow("tan", 1, DtypeRule.FLOAT, torch.tan, lambda x: f"lib.tan({x})"),
    PointwiseRow("tanh", 1, DtypeRule.FLOAT, torch.tanh, lambda x: f"lib.tanh({x})"),
    PointwiseRow(
        "sigmoid", 1, DtypeRule.FLOAT, torch.sigmoid, lambda x: f"(1.0 / (1.0 + _exp(-{x})))"
    ),
    PointwiseRow(
        "silu",
        1,
        DtypeRule.FLOAT,
        torch.nn.functional.silu,
        lambda x: f"({x} / (1.0 + _exp(-{x})))",
    ),
    PointwiseRow("relu", 1, DtypeRule.PROMOTE, torch.relu, lambda x: f"tl.where({x} < 0, 0, {x})"),
    PointwiseRow("erf", 1, DtypeRule.FLOAT, torch.erf, lambda x: f"lib.erf({x})"),
    PointwiseRow("erfc", 1, DtypeRule.FLOAT, torch.erfc, lambda x: f"lib.erfc({x})"),
    PointwiseRow("floor", 1, DtypeRule.PROMOTE, torch.floor, lambda x: f"lib.floor({x})"),
    PointwiseRow("ceil", 1, DtypeRule.PROMOTE, torch.ceil, lambda x: f"lib.ceil({x})"),
    PointwiseRow("round", 1, DtypeRule.PROMOTE, torch.round, lambda x: f"lib.nearbyint({x})"),
    PointwiseRow("trunc", 1, DtypeRule.PROMOTE, torch.trunc, lambda x: f"lib.trunc({x})"),
    PointwiseRow(
        "sign",
        1,
        DtypeRule.PROMOTE,
        torch.sign,
        lambda x: f"(({x} > 0).to({x}.dtype) - ({x} < 0).to({x}.dtype))",
    ),
    PointwiseRow("isnan", 1, DtypeRule.BOOL, torch.isnan, lambda x: f"({x} != {x})"),
    PointwiseRow(
        "isinf", 1, DtypeRule.BOOL, torch.isinf, lambda x: f"(tl.abs({x}) == float('inf'))"
    ),
    PointwiseRow(
        "isfinite", 1, DtypeRule.BOOL, torch.isfinite, lambda x: f"(tl.abs({x}) < float('inf'))"
    ),
    PointwiseRow("logical_not", 1, DtypeRule.BOOL, torch.logical_not, lambda x: f"({x} == 0)"),
    PointwiseRow("bitwise_not", 1, DtypeRule.INTEGRAL, torch.bitwise_not, lambda x: f"(~{x})"),
    # --- binary -------------------------------------------------------------------------
    PointwiseRow("add", 2, DtypeRule.PROMOTE, torch.add, lambda a, b: f"({a} + {b})"),
    PointwiseRow("sub", 2, DtypeRule.PROMOTE, torch.sub, lambda a, b: f"({a} - {b})"),
    PointwiseRow("mul", 2, DtypeRule.PROMOTE, torch.mul, lambda a, b: f"({a} * {b})"),
    # div: true division for floats, truncation for integers (nvFuser's div)
    PointwiseRow("div", 2, DtypeRule.PROMOTE, _div_ref, lambda a, b: f"({a} / {b})"),
    PointwiseRow("truediv", 2, DtypeRule.FLOAT, torch.true_divide, lambda a, b: f"({a} / {b})"),
    PointwiseRow("fmod", 2, DtypeRule.PROMOTE, torch.fmod, lambda a, b: f"lib.fmod({a}, {b})"),
    PointwiseRow(
        "remainder", 2, DtypeRule.PROMOTE, _remainder_ref, lambda a, b: f"_remainder({a}, {b})"
    ),
    PointwiseRow("pow", 2, DtypeRule.PROMOTE, torch.pow, lambda a, b: f"lib.pow({a}, {b})"),
    PointwiseRow(
        "minimum",
        2,
        DtypeRule.PROMOTE,
        torch.minimum,
        lambda a, b: f"tl.minimum({a}, {b}, {_nan_all})",
    ),
    PointwiseRow(
        "maximum",
        2,
        DtypeRule.PROMOTE,
        torch.maximum,
        lambda a, b: f"tl.maximum({a}, {b}, {_nan_all})",
    ),
    PointwiseRow("atan2", 2, DtypeRule.FLOAT, torch.atan2, lambda a, b: f"lib.atan2({a}, {b})"),
    PointwiseRow("eq", 2, DtypeRule.BOOL, torch.eq, lambda a, b: f"({a} == {b})"),
    PointwiseRow("ne", 2, DtypeRule.BOOL, torch.ne, lambda a, b: f"({a} != {b})"),
    PointwiseRow("lt", 2, DtypeRule.BOOL, torch.lt, lambda a, b: f"({a} < {b})"),
    PointwiseRow("le", 2, DtypeRule.BOOL, torch.le, lambda a, b: f"({a} <= {b})"),
    PointwiseRow("gt", 2, DtypeRule.BOOL, torch.gt, lambda a, b: f"({a} > {b})"),
    PointwiseRow("ge", 2, DtypeRule.BOOL, torch.ge, lambda a, b: f"({a} >= {b})"),
    PointwiseRow(
        "logical_and",
        2,
        DtypeRule.BOOL,
        torch.logical_and,
        lambda a, b: f"(({a} != 0) & ({b} != 0))",
    ),
    PointwiseRow(
        "logical_or", 2, DtypeRule.BOOL, torch.logical_or, lambda a, b: f"(({a} != 0) | ({b} != 0))"
    ),
    PointwiseRow(
        "bitwise_and", 2, DtypeRule.INTEGRAL, torch.bitwise_and, lambda a, b: f"({a} & {b})"
    ),
    PointwiseRow(
        "bitwise_or", 2, DtypeRule.INTEGRAL, torch.bitwise_or, lambda a, b: f"({a} | {b})"
    ),
    PointwiseRow(
        "bitwise_xor", 2, DtypeRule.INTEGRAL, torch.bitwise_xor, lambda a, b: f"({a} ^ {b})"
    ),
    # --- ternary ------------------------------------------------------------------------
    PointwiseRow(
        "where",
        3,
        DtypeRule.PROMOTE,
        lambda c, a, b: torch.where(c != 0, a, b),
        lambda c, a, b: f"tl.where({c} != 0, {a}, {b})",
    ),
    PointwiseRow(
        "clamp",
        3,
        DtypeRule.PROMOTE,
        torch.clamp,
        # NaN propagates as in torch (Triton's minimum/maximum drop it by default on the GPU)
        lambda x, lo, hi: f"tl.minimum(tl.maximum({x}, {lo}, {_nan_all}), {hi}, {_nan_all})",
    ),
    PointwiseRow(
        "lerp",
        3,
        DtypeRule.PROMOTE,
        _lerp_ref,
        lambda a, b, w: (
            f"tl.where(tl.abs({w}) < 0.5, {a} + {w} * ({b} - {a}), {b} - ({b} - {a}) * (1.0 - {w}))"
        ),
    ),
]


# ``addcmul(a, b, c, value)`` is a + value * b * c; ``cast`` is in casts below.
def _addcmul_ref(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, v: torch.Tensor | float
) -> torch.Tensor:
    if torch.is_tensor(v) and v.dim() == 0:
        return torch.addcmul(a, b, c, value=v.item())
    return a + v * b * c


ROWS.append(
    PointwiseRow(
        "addcmul", 4, DtypeRule.PROMOTE, _addcmul_ref, lambda a, b, c, v: f"({a} + {v} * {b} * {c})"
    )
)


# --- math and predicate rows of nvFuser's frontend (references and helpers: pointwise_math) ---
_F, _B, _P, _I = DtypeRule.FLOAT, DtypeRule.BOOL, DtypeRule.PROMOTE, DtypeRule.INTEGRAL
ROWS += [
    *[
        PointwiseRow(n, 1, _F, getattr(torch, n), lambda x, n=n: f"lib.{n}({x})")
        for n in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh")
    ],
    PointwiseRow("erfinv", 1, _F, torch.erfinv, lambda x: f"lib.erfinv({x})"),
    PointwiseRow("erfcinv", 1, _F, pm.erfcinv_ref, lambda x: f"_erfcinv({x})"),
    PointwiseRow("lgamma", 1, _F, torch.lgamma, lambda x: f"_lgamma({x})"),
    PointwiseRow("frac", 1, _P, torch.frac, lambda x: f"({x} - lib.trunc({x}))"),
    PointwiseRow("signbit", 1, _B, torch.signbit, lambda x: f"_signbit({x})"),
    PointwiseRow("isneginf", 1, _B, torch.isneginf, lambda x: f"({x} == float('-inf'))"),
    PointwiseRow("isposinf", 1, _B, torch.isposinf, lambda x: f"({x} == float('inf'))"),
    # real dtypes only here: every element is real, NaN too
    PointwiseRow("isreal", 1, _B, torch.isreal, lambda x: f"(({x} == {x}) | ({x} != {x}))"),
    PointwiseRow(
        "nextafter", 2, DtypeRule.FULL_FLOAT, torch.nextafter, lambda a, b: f"_nextafter({a}, {b})"
    ),
    PointwiseRow("gcd", 2, _I, torch.gcd, lambda a, b: f"_gcd({a}, {b})"),
    PointwiseRow(
        "bitwise_left_shift", 2, _I, torch.bitwise_left_shift, lambda a, b: f"_shl({a}, {b})"
    ),
    PointwiseRow(
        "bitwise_right_shift", 2, _I, torch.bitwise_right_shift, lambda a, b: f"_shr({a}, {b})"
    ),
    PointwiseRow(
        "logical_right_shift",
        2,
        _I,
        pm.logical_right_shift_ref,
        lambda a, b: f"_logical_shr({a}, {b})",
    ),
    PointwiseRow(
        "threshold",
        3,
        _P,
        pm.threshold_ref,
        lambda x, t, v: f"tl.where({x} <= {t}, {v}, {x})",
        scalar_operands=(1, 2),
    ),
    PointwiseRow(
        "add_alpha",
        3,
        _P,
        pm.add_alpha_ref,
        lambda a, b, v: f"_axpy({a}, {b}, {v})",
        scalar_operands=(2,),
        round_scalars=True,
    ),
    PointwiseRow(
        "sub_alpha",
        3,
        _P,
        pm.sub_alpha_ref,
        lambda a, b, v: f"_axpy({a}, {b}, -1 * {v})",
        scalar_operands=(2,),
        round_scalars=True,
    ),
]

# ``real`` and ``imag``: the parts of a complex value (``ir/ops/complex.py`` lowers them);
# of a real value, ``real`` is the value itself and ``imag`` is not defined (as in torch).
ROWS += [
    PointwiseRow("real", 1, DtypeRule.PART, torch.real, lambda x: x),
    PointwiseRow("imag", 1, DtypeRule.PART, torch.imag, lambda x: f"({x} * 0)"),
]

# The operands whose dtype takes part in promotion (``where``'s predicate does not; nor do
# an alpha or threshold's scalars, which are converted to the result's compute dtype).
PROMOTION_OPERANDS = {"where": (1, 2), "threshold": (0,), "add_alpha": (0, 1), "sub_alpha": (0, 1)}


def promotion_tiers(
    operands: Iterable[Val],
) -> tuple[list[DataType], list[DataType], list[DataType]]:
    """The dtypes of ``operands`` by promotion tier: dimensioned tensors, scalars, 0-dim
    tensors (``dtypes.promote``)."""
    from ..values import TensorView

    operands = list(operands)
    tensors = [v for v in operands if isinstance(v, TensorView)]
    return (
        [v.dtype for v in tensors if v.ndim > 0],
        [v.dtype for v in operands if not isinstance(v, TensorView)],
        [v.dtype for v in tensors if v.ndim == 0],
    )


def result_dtype(
    row: PointwiseRow,
    tensor_dtypes: Iterable[DataType],
    scalar_dtypes: Iterable[DataType],
    zero_dim_dtypes: Iterable[DataType] = (),
) -> DataType:
    """The output dtype of ``row`` for operand dtypes: dimensioned tensors, scalars and
    0-dim tensors apart (``dtypes.promote``)."""
    if row.rule is DtypeRule.BOOL:
        return DataType.Bool
    out = promote(list(tensor_dtypes), list(scalar_dtypes), list(zero_dim_dtypes))
    if row.rule is DtypeRule.FLOAT and (is_integral(out) or is_boolean(out)):
        return DataType.Float
    if row.rule is DtypeRule.INTEGRAL and is_floating(out):
        raise DefinitionError(f"{row.name}: operands must be integers or bools, got {out}")
    if row.rule is DtypeRule.FULL_FLOAT and out not in (DataType.Float, DataType.Double):
        raise DefinitionError(
            f"{row.name}: the promoted dtype must be DataType.Float or DataType.Double "
            f"(as in nvFuser), got {out}"
        )
    if row.rule is DtypeRule.PART:
        return part_dtype(out)
    return out


def _make_opdef(row: PointwiseRow) -> OpDef:
    return register(OpDef(row.name, OpKind.POINTWISE, reference=row.reference, triton=row.triton))


OPDEFS = {row.name: _make_opdef(row) for row in ROWS}

CAST = register(
    OpDef(
        "cast",
        OpKind.POINTWISE,
        reference=lambda x: x,
        triton=lambda x: x,
        doc="converts to the output dtype; the conversion happens at the store or use",
    )
)


ROW_BY_NAME = {row.name: row for row in ROWS}


@overload
def pointwise(name: str, first: TensorView, /, *operands: Operand) -> TensorView: ...


@overload
def pointwise(name: str, *operands: Operand) -> Scalar | TensorView: ...


def pointwise(name: str, *operands: Operand) -> Scalar | TensorView:
    """Apply pointwise op ``name``. Lower-rank tensors are broadcast on the left (numpy rule);
    Python numbers become constant Scalars; all-scalar operands give a Scalar."""
    from ..values import Scalar, TensorView
    from .common import as_val, combine_ids, emit, fusion_of
    from .complex import check_complex_support
    from .shape import broadcast

    row = ROW_BY_NAME[name]
    if len(operands) != row.arity:
        raise DefinitionError(f"{name}: expected {row.arity} operands, got {len(operands)}")
    f = fusion_of(*operands)
    vals = [as_val(f, x, name) for x in operands]
    for v in vals:
        if v.fusion is not f:
            raise DefinitionError(f"{name}: operands belong to different fusions")
    for k in row.scalar_operands:
        if isinstance(vals[k], TensorView):
            raise ArgumentTypeError(
                f"{name}: operand {k + 1} must be a Scalar (as in nvFuser), got a TensorView"
            )
    tensors = [v for v in vals if isinstance(v, TensorView)]
    roles = PROMOTION_OPERANDS.get(name, range(row.arity))
    tdt, sdt, zdt = promotion_tiers([vals[i] for i in roles])
    dtype = result_dtype(row, tdt, sdt, zdt)
    check_complex_support(name, [v.dtype for v in vals])  # complex rows: ir/ops/complex.py
    _check_torch_defines(name, tuple((isinstance(v, TensorView), v.dtype) for v in vals))
    if row.round_scalars and dtype in REDUCED_PRECISION:
        for k in row.scalar_operands:  # torch rounds alpha to a Half/BFloat16 result's dtype
            vals[k] = cast(vals[k], dtype)
    if not tensors:
        out: Scalar | TensorView = Scalar(f, dtype)
        emit(f, OPDEFS[name], vals, [out])
        return out
    rank = max(t.ndim for t in tensors)
    for k, v in enumerate(vals):
        if isinstance(v, TensorView) and v.ndim < rank:
            vals[k] = broadcast(v, [True] * (rank - v.ndim) + [False] * v.ndim)
    _broadcast_made_ones(vals)
    ids = [
        combine_ids([v.shape_domain[i] for v in vals if isinstance(v, TensorView)], name, i)
        for i in range(rank)
    ]
    out = TensorView(f, ids, dtype)
    emit(f, OPDEFS[name], vals, [out])
    return out


def _broadcast_made_ones(vals: list[Val]) -> None:
    """Operands (in place) whose iteration dim of static extent 1 (an op made it) meets a
    wider dim of another operand (not statically 1): that dim a broadcast
    (``shape.made_ones_as_broadcasts``), so the op broadcasts it as torch does."""
    from ..values import TensorView
    from .shape import made_ones_as_broadcasts

    tensors = [(k, v) for k, v in enumerate(vals) if isinstance(v, TensorView)]
    for k, v in tensors:
        wider = [
            i
            for i in range(v.ndim)
            if any(o.shape_domain[i].extent != 1 for j, o in tensors if j != k)
        ]
        vals[k] = made_ones_as_broadcasts(v, wider)


@functools.cache
def _check_torch_defines(name: str, operands: tuple[tuple[bool, DataType], ...]) -> None:
    """Reject an operand dtype combination that the op's torch meaning does not define
    (e.g. ``neg`` or ``sub`` of Bool tensors), instead of giving it a meaning of our own."""
    from ...dtypes import compute_dtype, to_torch

    row = ROW_BY_NAME[name]
    args = []
    for is_tensor, dt in operands:
        if row.rule is DtypeRule.FLOAT and (is_integral(dt) or is_boolean(dt)):
            dt = DataType.Float  # the op computes in Float (reference.py does the same)
        t = torch.ones(1, dtype=to_torch(compute_dtype(dt)))
        args.append(t if is_tensor else t[0])
    try:
        row.reference(*args)
    except (RuntimeError, TypeError) as e:
        kinds = ", ".join(f"{'tensor' if t else 'scalar'} {d.value}" for t, d in operands)
        raise DefinitionError(
            f"{name}: not defined for operands ({kinds}); torch says: {str(e).splitlines()[0]}"
        ) from None


@overload
def cast(x: TensorView, dtype: DataType) -> TensorView: ...


@overload
def cast(x: Operand, dtype: DataType) -> Val: ...


def cast(x: Operand, dtype: DataType) -> Val:
    """``x`` converted to ``dtype`` (a no-op when it already has it)."""
    from ..values import Scalar, TensorView
    from .common import as_val, clone_id, emit, fusion_of
    from .complex import check_complex_support

    f = fusion_of(x)
    v = as_val(f, x, "cast")
    if not isinstance(dtype, DataType) or dtype is DataType.Null:
        raise DefinitionError(f"cast: invalid dtype {dtype!r}")
    if v.dtype is dtype:
        return v
    check_complex_support("cast", [v.dtype, dtype])
    out: Val
    if isinstance(v, TensorView):
        out = TensorView(f, [clone_id(d) for d in v.shape_domain], dtype)
    else:
        out = Scalar(f, dtype)
    emit(f, CAST, [v], [out], dtype=dtype)
    return out
