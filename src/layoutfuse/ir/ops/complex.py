"""Complex values as pairs of real parts: how each op acts on the parts.

Triton has no complex type, so a fusion with complex values is rewritten before it is
segmented (``passes/complex_lowering.py``) into one with real values only: every complex
value becomes its two parts (re, im), each a real value of the part dtype (Float for
ComplexFloat, Double for ComplexDouble). This module is the table the rewrite reads:

* ``PAIR_RULES``: an op whose result is computed from its operands' parts with the real
  builders (``add``: re = a.re + b.re, im = a.im + b.im). A real operand comes as
  ``Parts(x, 0)``, the zero a constant, so the arithmetic is torch's complex arithmetic
  after promoting the real operand to complex (``inf * (2+0j)`` has a NaN imaginary part
  there too). A rule returns ``Parts`` for a complex result, one Val for a real one.
  The operands of a ``PROMOTING`` rule are first converted to their common dtype's parts
  (torch converts them before it computes: complex128 / float32 divides in double).
* ``PER_PART_REDUCTIONS`` (and every shape op: permute, reshape, broadcast, ...): ops that
  act on each part alone; the rewrite applies them to re and to im. A Welford's per-part
  statistics combine by :func:`welford_of_parts` (a real variance, as torch's).

Any other op with a complex operand or result is refused where it is defined
(:func:`check_complex_support`), naming the op and the dtype.

Semantics are torch's: ``abs`` is ``hypot(re, im)`` (real), division is Smith's
algorithm with torch's scaling (``c10::complex`` ``operator/``), a complex-to-real cast
keeps the real part, a complex-to-Bool cast is ``re != 0 or im != 0``, ``sum`` accumulates
each part in the part dtype; ``exp``, ``log``, ``sqrt`` (the principal root) and
``reciprocal`` by their textbook formulas (exact torch values at 0, -0.0, inf, NaN are
checked in tests/ir/test_complex.py for the cases listed there, not for every special value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ...dtypes import (
    COMPLEX,
    DataType,
    compute_dtype,
    is_boolean,
    is_floating,
    part_dtype,
    to_torch,
)
from ...errors import UnsupportedError
from ..fusion import Fusion
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView, Val
from .elementwise import PROMOTION_OPERANDS, ROW_BY_NAME, cast, pointwise, result_dtype


@dataclass(frozen=True)
class Parts:
    """A complex value as its two real parts in the lowered fusion."""

    re: Val
    im: Val


PairRule = Callable[[Sequence[Parts], DataType], "Parts | Val"]
"""(the operands' parts, the result's dtype in the complex fusion) -> the result."""

# hypot(re, im): |z| without overflow, as torch's complex abs (std::abs). Internal: only the
# lowering emits it (nvFuser has no hypot operator), so it is an OpDef without a row.
HYPOT = register(
    OpDef(
        "complex_abs",
        OpKind.POINTWISE,
        reference=torch.hypot,
        triton=lambda a, b: f"lib.hypot({a}, {b})",
        doc="|re + i im| = hypot(re, im): the lowering of abs of a complex value",
    )
)


def _hypot(re: Val, im: Val) -> Val:
    from .common import combine_ids, emit

    f = re.fusion
    if not isinstance(re, TensorView):
        out: Val = Scalar(f, re.dtype)
    else:
        assert isinstance(im, TensorView)  # the parts of a complex tensor are tensors
        ids = [
            combine_ids([a, b], "abs", i)
            for i, (a, b) in enumerate(zip(re.shape_domain, im.shape_domain))
        ]
        out = TensorView(f, ids, re.dtype)
    emit(f, HYPOT, [re, im], [out])
    return out


def _p(name: str, *args: Val | float) -> Val:
    """Pointwise op ``name``; folded to a constant when every operand is one (the zero
    imaginary part of a real operand makes many)."""
    vals = [a for a in args if isinstance(a, Val)]
    if vals and all(isinstance(a, Scalar) and a.is_constant for a in vals):
        return _fold(name, vals[0].fusion, args)
    return pointwise(name, *args)


def _fold(name: str, fusion: Fusion, args: Sequence[Val | float]) -> Scalar:
    row = ROW_BY_NAME[name]
    dtypes = [a.dtype if isinstance(a, Scalar) else DataType.Double for a in args]
    values = [a.value if isinstance(a, Scalar) else a for a in args]
    dtype = result_dtype(row, [], dtypes)
    ts = [torch.tensor(v, dtype=to_torch(compute_dtype(d))) for v, d in zip(values, dtypes)]
    return Scalar(fusion, dtype, row.reference(*ts).to(to_torch(dtype)).item())


def _add(a: Sequence[Parts], out: DataType) -> Parts:
    x, y = a
    return Parts(_p("add", x.re, y.re), _p("add", x.im, y.im))


def _sub(a: Sequence[Parts], out: DataType) -> Parts:
    x, y = a
    return Parts(_p("sub", x.re, y.re), _p("sub", x.im, y.im))


def _neg(a: Sequence[Parts], out: DataType) -> Parts:
    return Parts(_p("neg", a[0].re), _p("neg", a[0].im))


def _mul(a: Sequence[Parts], out: DataType) -> Parts:
    x, y = a
    re = _p("sub", _p("mul", x.re, y.re), _p("mul", x.im, y.im))
    im = _p("add", _p("mul", x.re, y.im), _p("mul", x.im, y.re))
    return Parts(re, im)


def _div(a: Sequence[Parts], out: DataType) -> Parts:
    """(a + bi) / (c + di) as c10::complex does: scale by the larger of |c| and |d|."""
    x, y = a
    ar, ai, c, d = x.re, x.im, y.re, y.im
    abs_c, abs_d = _p("abs", c), _p("abs", d)
    c_wins = _p("ge", abs_c, abs_d)
    # |c| >= |d|: rat = d / c, scl = 1 / (c + d rat); re = (a + b rat) scl, im = (b - a rat) scl
    rat1 = _p("div", d, c)
    scl1 = _p("reciprocal", _p("add", c, _p("mul", d, rat1)))
    re1 = _p("mul", _p("add", ar, _p("mul", ai, rat1)), scl1)
    im1 = _p("mul", _p("sub", ai, _p("mul", ar, rat1)), scl1)
    # |c| < |d|: rat = c / d, scl = 1 / (d + c rat); re = (a rat + b) scl, im = (b rat - a) scl
    rat2 = _p("div", c, d)
    scl2 = _p("reciprocal", _p("add", d, _p("mul", c, rat2)))
    re2 = _p("mul", _p("add", _p("mul", ar, rat2), ai), scl2)
    im2 = _p("mul", _p("sub", _p("mul", ai, rat2), ar), scl2)
    # both zero: a / |c|, b / |d| (a complex inf or NaN, as torch gives)
    zero = _p("logical_and", _p("eq", abs_c, 0.0), _p("eq", abs_d, 0.0))
    re = _p("where", zero, _p("div", ar, abs_c), _p("where", c_wins, re1, re2))
    im = _p("where", zero, _p("div", ai, abs_d), _p("where", c_wins, im1, im2))
    return Parts(re, im)


def _eq(a: Sequence[Parts], out: DataType) -> Val:
    x, y = a
    return _p("logical_and", _p("eq", x.re, y.re), _p("eq", x.im, y.im))


def _ne(a: Sequence[Parts], out: DataType) -> Val:
    x, y = a
    return _p("logical_or", _p("ne", x.re, y.re), _p("ne", x.im, y.im))


def _where(a: Sequence[Parts], out: DataType) -> Parts:
    c, x, y = a
    return Parts(_p("where", c.re, x.re, y.re), _p("where", c.re, x.im, y.im))


def _abs(a: Sequence[Parts], out: DataType) -> Val:
    return _hypot(a[0].re, a[0].im)


def _real(a: Sequence[Parts], out: DataType) -> Val:
    return a[0].re


def _imag(a: Sequence[Parts], out: DataType) -> Val:
    return a[0].im


def _cast(a: Sequence[Parts], out: DataType) -> Parts | Val:
    """To a complex dtype: both parts converted; to a real one: the real part (torch's
    ``Tensor.to``); to Bool: ``re != 0 or im != 0``."""
    x = a[0]
    if out in COMPLEX:
        return Parts(cast(x.re, part_dtype(out)), cast(x.im, part_dtype(out)))
    if is_boolean(out):
        return _p("logical_or", _p("ne", x.re, 0), _p("ne", x.im, 0))
    return cast(x.re, out)


def _reciprocal(a: Sequence[Parts], out: DataType) -> Parts:
    """1 / z as torch computes it: the complex division (1 + 0i) / z."""
    one = Parts(
        Scalar(a[0].re.fusion, DataType.Double, 1.0), Scalar(a[0].re.fusion, DataType.Double, 0.0)
    )
    return _div([one, a[0]], out)


def _exp(a: Sequence[Parts], out: DataType) -> Parts:
    """exp(re) (cos im + i sin im)."""
    e = _p("exp", a[0].re)
    return Parts(_p("mul", e, _p("cos", a[0].im)), _p("mul", e, _p("sin", a[0].im)))


def _log(a: Sequence[Parts], out: DataType) -> Parts:
    """log |z| + i arg z."""
    return Parts(_p("log", _hypot(a[0].re, a[0].im)), _p("atan2", a[0].im, a[0].re))


def _sqrt(a: Sequence[Parts], out: DataType) -> Parts:
    """The principal root: t = sqrt((|z| + |re|) / 2); re >= 0: (t, im / 2t), else
    (|im| / 2t, t with the sign of im, -0.0 included); sqrt(0) = 0 + i im."""
    re, im = a[0].re, a[0].im
    t = _p("sqrt", _p("mul", _p("add", _hypot(re, im), _p("abs", re)), 0.5))
    zero = _p("eq", t, 0.0)
    half = _p("div", im, _p("mul", t, 2.0))
    right = _p("ge", re, 0.0)
    out_re = _p("where", zero, 0.0, _p("where", right, t, _p("abs", half)))
    negative_im = _p("lt", _p("div", 1.0, im), 0.0)  # im < 0, and im = -0.0 (1 / -0.0 = -inf)
    signed_t = _p("where", negative_im, _p("neg", t), t)
    out_im = _p("where", zero, im, _p("where", right, half, signed_t))
    return Parts(out_re, out_im)


def _isnan(a: Sequence[Parts], out: DataType) -> Val:
    return _p("logical_or", _p("isnan", a[0].re), _p("isnan", a[0].im))


def _isinf(a: Sequence[Parts], out: DataType) -> Val:
    return _p("logical_or", _p("isinf", a[0].re), _p("isinf", a[0].im))


def _isfinite(a: Sequence[Parts], out: DataType) -> Val:
    return _p("logical_and", _p("isfinite", a[0].re), _p("isfinite", a[0].im))


PAIR_RULES: dict[str, PairRule] = {
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "truediv": _div,
    "neg": _neg,
    "eq": _eq,
    "ne": _ne,
    "where": _where,
    "abs": _abs,
    "real": _real,
    "imag": _imag,
    "cast": _cast,
    "reciprocal": _reciprocal,
    "exp": _exp,
    "log": _log,
    "sqrt": _sqrt,
    "isnan": _isnan,
    "isinf": _isinf,
    "isfinite": _isfinite,
}

PROMOTING = frozenset({"add", "sub", "mul", "div", "truediv", "eq", "ne", "where"})
"""Rules whose operands torch first converts to their common (complex) dtype: their tensor
parts are cast to its part dtype before the rule (a complex128 divided by a float32 tensor
divides in double)."""


def promoted_operands(name: str, operands: Sequence[Parts], common: DataType) -> list[Parts]:
    """``operands`` of rule ``name`` with their tensor parts in ``common``'s part dtype
    (``where``'s predicate as it is); ``common``: the dtype torch promotes them to."""
    if name not in PROMOTING:
        return list(operands)
    pd = part_dtype(common)
    roles = PROMOTION_OPERANDS.get(name, range(len(operands)))

    def conv(v: Val) -> Val:
        if isinstance(v, Scalar) and v.is_constant:
            return v if v.dtype is pd else Scalar(v.fusion, pd, float(v.value))
        if isinstance(v, Scalar) and is_floating(v.dtype):
            return v  # kernels take it in the compute dtype; no host arithmetic
        return cast(v, pd)

    return [Parts(conv(p.re), conv(p.im)) if i in roles else p for i, p in enumerate(operands)]


PER_PART_REDUCTIONS = frozenset({"sum", "welford"})
"""Reductions that act on each part alone (sum of re, sum of im); shape ops always do.
A Welford's results then combine by :func:`welford_of_parts`."""


def welford_of_parts(re: Sequence[Val], im: Sequence[Val]) -> tuple[Parts, Val, Val]:
    """(mean, M2, n) of a complex value from its parts' (mean, M2, n): the mean of each
    part, and M2 = M2(re) + M2(im), the sum of |x - mean|^2 (so the variance is real and
    var(re) + var(im), as torch.var and nvFuser's Welford of a complex value give)."""
    return Parts(re[0], im[0]), _p("add", re[1], im[1]), re[2]


def check_complex_support(op: str, dtypes: Sequence[DataType]) -> None:
    """Refuse op ``op`` when a complex dtype is among ``dtypes`` and no rule here lowers it."""
    complex_dtypes = [d for d in dtypes if d in COMPLEX]
    if not complex_dtypes or op in PAIR_RULES or op in PER_PART_REDUCTIONS:
        return
    raise UnsupportedError(
        f"{op}: not supported for complex operands ({complex_dtypes[0]}); complex values "
        f"support {', '.join(sorted(set(PAIR_RULES) | PER_PART_REDUCTIONS))} and shape ops"
    )


__all__ = [
    "HYPOT",
    "PAIR_RULES",
    "PER_PART_REDUCTIONS",
    "PROMOTING",
    "Parts",
    "check_complex_support",
    "promoted_operands",
    "welford_of_parts",
]
