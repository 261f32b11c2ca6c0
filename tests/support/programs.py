"""Generated fusion programs: values, their torch reference with an error bound, and layouts.

Used by ``tests/test_generated_programs.py``, which draws programs step by step. A program
has tensor inputs (logical values, dtype, memory layout), scalar inputs and constants, and
steps; each step is one op (``STEP_KINDS``) with three meanings, all computed while the
program is drawn: how ``FusionDefinition`` defines it (``define``), what torch computes for
it (``compute``: the values as torch computes them in the result's dtype, per op, and an
error bound) and which input dims the result's dims come from (``layout``: for the
output layout inferred from the dominant input).

The error bound decides how a result is compared (``assert_close_to``):

* exact values (``err == 0``) must be equal: a value is exact when its operands are and
  the op's result is representable, which the float64 computation tells (inputs are
  small multiples of 1/4; ``support.program_reductions`` for reductions in any order);
* library functions (``LIBRARY``: exp, div, ...) are never exact: a few ulps of their
  compute dtype (plus ``|x|`` ulps for exp and trig: the GPU's ``_exp``) and the
  rounding to the result's dtype (one whole ulp: the CPU interpreter truncates to bf16,
  and layoutfuse keeps Half/BFloat16 intermediates in Float within a kernel);
* an op that is not continuous in its operands (comparisons, floor, casts to integers,
  ``where``'s predicate, ...) only takes exact operands, and an approximate operand only
  reaches ops that do not amplify its error (``KEEPS``, ``SCALES``; ``add``/``sub``, with
  a relative bound where the signs do not cancel; reductions of values of one sign);
* a bound may be absolute (``abs_err``: sums that may cancel, var_mean): ``add``, ``sub``
  and ``mul`` carry absolute bounds (``absolute_bound``, ``magnitude``), ``exp`` turns one
  into a relative bound and ``log`` a relative one into an absolute one, and a divisor or
  a root's operand takes one where it stays far from zero (``relative_bound``: layer
  norm's ``rsqrt(var + eps)``). ``compute`` raises ``Unusable`` for anything else, and
  the drawing picks another op.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from layoutfuse.ir.ops.elementwise import ROWS

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
I32, I64, BOOL = torch.int32, torch.int64, torch.bool
FLOATS, INTS = (F32, BF16, F16), (I32, I64)
DTYPES = FLOATS + INTS + (BOOL,)
EPS32 = torch.finfo(F32).eps
ULPS = 8  # library functions: within 8 ulps of their compute dtype


class Unusable(Exception):
    """The op cannot be checked on these operands (it would amplify an error, divide by
    zero, overflow its dtype): the drawing picks another."""


class TorchRejects(Exception):
    """torch does not define the op for these operand dtypes."""


# --- inputs ----------------------------------------------------------------------------------
DOMAINS = ("any", "positive", "nonzero", "small")


def input_values(
    shape: Sequence[int],
    dtype: torch.dtype,
    domain: str,
    constant_dims: Sequence[int],
    gen: torch.Generator,
) -> torch.Tensor:
    """Logical values (CPU, contiguous): floats are multiples of 1/4 in [-4, 4] (exact in
    every float dtype, and sums and products of a few stay exact); integers in [-9, 9];
    ``constant_dims`` hold one value along them (the dims an input gives stride 0)."""
    draw = [1 if d in constant_dims else s for d, s in enumerate(shape)]
    if dtype is BOOL:
        x = torch.rand(draw, generator=gen) > 0.5
    else:
        hi = 16 if dtype.is_floating_point else 9
        lo = {"any": -hi, "positive": 1, "nonzero": 1, "small": 0}[domain]
        top = {"small": hi // 2 if dtype.is_floating_point else 3}.get(domain, hi)
        x = torch.randint(lo, top + 1, draw, generator=gen)
        if domain == "nonzero":
            x = x * (torch.randint(0, 2, draw, generator=gen) * 2 - 1)
        x = (x / 4.0 if dtype.is_floating_point else x).to(dtype)
    return x.expand(tuple(shape)).contiguous()


@dataclass(frozen=True)
class Layout:
    """An input's memory: ``alloc`` its dims outermost first; ``expanded`` dims have stride 0;
    ``sliced`` dims step over every other element of a buffer twice as long (offset 1)."""

    alloc: tuple[int, ...]
    expanded: frozenset[int] = frozenset()
    sliced: frozenset[int] = frozenset()


def realize(values: torch.Tensor, layout: Layout) -> torch.Tensor:
    """``values`` in ``layout``, on the default device; the gaps of sliced dims hold garbage."""
    shape = values.shape
    base = [
        1 if d in layout.expanded else 2 * shape[d] if d in layout.sliced else shape[d]
        for d in range(values.dim())
    ]
    phys = torch.empty([base[d] for d in layout.alloc], dtype=values.dtype)
    phys.copy_(torch.full_like(phys, 7) if values.dtype is not BOOL else phys.fill_(True))
    x = phys.to(torch.get_default_device()).permute(
        tuple(layout.alloc.index(d) for d in range(values.dim()))
    )
    x = x[
        tuple(slice(1, None, 2) if d in layout.sliced else slice(None) for d in range(values.dim()))
    ]
    x.copy_(
        values[
            tuple(slice(0, 1) if d in layout.expanded else slice(None) for d in range(values.dim()))
        ]
    )
    return x.expand(tuple(shape))


# --- torch's meaning of the pointwise rows -------------------------------------------------------
def _div(a, b):
    if a.is_floating_point() or b.is_floating_point():
        return torch.true_divide(a, b)
    return torch.div(a, b, rounding_mode="trunc")  # nvFuser's div of integers truncates


def _erfcinv(x: torch.Tensor) -> torch.Tensor:
    """The inverse of erfc (torch has none), in the operand's float dtype (Float for Half and
    BFloat16, which ndtri lacks)."""
    wide = x.float() if x.dtype in (F16, BF16) else x
    return (-torch.special.ndtri(wide / 2) / math.sqrt(2)).to(x.dtype)


def _logical_right_shift(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """nvFuser's definition (torch has none), element by element: counts 0..w shift zeros
    in; past w or below 0, -1 for a negative x and 0 otherwise."""
    dtype = torch.result_type(x, s)
    if dtype.is_floating_point or dtype is BOOL:
        raise RuntimeError(f"logical_right_shift: integer operands only, got {dtype}")
    w = torch.iinfo(dtype).bits
    xs, ss = torch.broadcast_tensors(x.to(dtype), s.to(dtype))
    out = []
    for a, b in zip(xs.flatten().tolist(), ss.flatten().tolist()):
        v = ((a % 2**w) >> b) if 0 <= b <= w else (-1 if a < 0 else 0)
        out.append(v - 2**w if v >= 2 ** (w - 1) else v)
    return torch.tensor(out, dtype=dtype).reshape(xs.shape)


TORCH = {
    "div": _div,
    "truediv": torch.true_divide,
    "silu": F.silu,
    "addcmul": lambda a, b, c, v: torch.addcmul(a, b, c, value=v.item()),
    "erfcinv": lambda x: _erfcinv(x),
    "logical_right_shift": _logical_right_shift,
    "threshold": lambda x, t, v: F.threshold(x, t.item(), v.item()),
    "add_alpha": lambda a, b, v: torch.add(a, b, alpha=v.item()),
    "sub_alpha": lambda a, b, v: torch.sub(a, b, alpha=v.item()),
}
# nvFuser's nextafter takes Float and Double only (torch's Half and BFloat16 too)
FULL_PRECISION_ONLY = {"nextafter"}

# Rows that compute in Float: integer and bool operands become Float (torch has no integer
# silu; nvFuser's rule).
FLOAT_COMPUTE = {
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "silu",
    "erf",
    "erfc",
    "truediv",
    "atan2",
    *("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"),
    *("erfinv", "erfcinv", "lgamma"),
}
# How a row carries error on float results (each row is in EXACT or LIBRARY):
KEEPS = {
    "abs",
    "neg",
    "relu",
    "minimum",
    "maximum",
    "clamp",
    "where",
    "real",
    "imag",
}  # max of the operands'
# rows of complex values only (real inputs are refused): tests/ir/test_complex.py runs them
COMPLEX_ONLY = {"imag"}
SCALES = {"mul": 1.0, "div": 1.0, "truediv": 1.0, "reciprocal": 1.0, "sqrt": 0.5, "rsqrt": 0.5}
NO_CANCEL = {"add": 1, "sub": -1}  # relative bounds where signs do not cancel, else absolute
EXPONENTIALS = {"exp": 1.0, "exp2": math.log(2)}  # of values with an absolute bound
LOGARITHMS = {"log": 1.0, "log2": 1 / math.log(2), "log10": 1 / math.log(10)}
# Exact on approximate operands too: the error bound never crosses to or from nan or inf
# (``check_finite`` refuses results that overflow).
CLASSIFIES = {"isnan", "isinf", "isfinite"}
# rows whose integer operands compute at the result's dtype: a logical shift's zeros come
# in at its width (a 0-dim Int shift of an Int32 tensor, computed as a 1-element tensor,
# would otherwise promote the computation to 64 bits; generated program 818646)
AT_RESULT_DTYPE = {"logical_right_shift"}
EXACT = (
    KEEPS
    | set(NO_CANCEL)
    | {
        "mul",
        "sign",
        "floor",
        "ceil",
        "round",
        "trunc",
        "isnan",
        "isinf",
        "isfinite",
        "logical_not",
        "bitwise_not",
        "fmod",
        "remainder",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "lerp",
        "addcmul",
        *("frac", "signbit", "isneginf", "isposinf", "isreal", "nextafter", "gcd"),
        *("bitwise_left_shift", "bitwise_right_shift", "logical_right_shift"),
        *("threshold", "add_alpha", "sub_alpha"),
    }
)
LIBRARY = {
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "silu",
    "erf",
    "erfc",
    "div",
    "truediv",
    "pow",
    "atan2",
    *("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"),
    *("erfinv", "erfcinv", "lgamma"),
}
GROWS_WITH_ARG = {"exp", "exp2", "expm1", "sigmoid", "silu", "sin", "cos", "tan"}
# Operands that must hold no zero: integer division faults; a signed zero flips the sign
# of an infinite (or pi-sized) result, and kernels need not keep it.
NONZERO = {
    "div": (1,),
    "truediv": (1,),
    "fmod": (1,),
    "remainder": (1,),
    "reciprocal": (0,),
    "rsqrt": (0,),
    "atan2": (0,),
    "pow": (0,),
}
ARITY = {row.name: row.arity for row in ROWS}


def direct(name: str) -> Callable:
    return TORCH.get(name) or getattr(torch, name)


def compute_form(x: torch.Tensor, name: str) -> torch.Tensor:
    """``x`` as torch computes with it: Half/BF16 in Float; integers and bools of the
    Float-computing rows in Float."""
    if x.dtype in (F16, BF16) or (name in FLOAT_COMPUTE and not x.is_floating_point()):
        return x.float()
    return x


def true_form(x: torch.Tensor, name: str) -> torch.Tensor:
    """``x`` in float64 (integers too, for the Float-computing rows): the exact operand."""
    return x.double() if x.is_floating_point() or name in FLOAT_COMPUTE else x


def scalar_tensor(value, float_tensors: bool) -> torch.Tensor:
    """A Python number as a 0-dim tensor that promotes like it: a float over integer
    tensors gives the default Float, not Double."""
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float64 if float_tensors else F32)
    return torch.tensor(value, dtype=I64)


def torch_result_dtype(name: str, operands: Sequence[torch.Tensor]) -> torch.dtype:
    """The dtype torch gives ``name`` on operands of these dtypes (probed on ones, as
    layoutfuse probes); ``TorchRejects`` where torch defines none."""
    if name in FLOAT_COMPUTE and not any(x.is_floating_point() for x in operands):
        return F32
    probes = [torch.ones([1] * x.dim(), dtype=x.dtype) for x in operands]
    try:
        dtype = direct(name)(*probes).dtype
    except (RuntimeError, TypeError) as e:
        raise TorchRejects(str(e).splitlines()[0]) from None
    if name in FULL_PRECISION_ONLY and dtype not in (F32, torch.float64):
        raise TorchRejects(f"{name}: nvFuser takes Float and Double only")
    return dtype


# --- values ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Value:
    """A tensor of the program: its reference (CPU), error bound and layout facts.

    ``err``: relative error bound of the reference and of any correct kernel against the
    true value (0: exact); ``abs_err``: an absolute bound on top (reductions that may
    cancel, var_mean). Per dim: ``bcast`` (a broadcast: extent 1 or expanded),
    ``expanded`` (a broadcast of extent > 1) and ``origins`` ({input: its dim} that the
    dim is, through pointwise, permute, broadcast and reductions' kept dims); ``consumed``:
    (input, dim) pairs a reduction on the way consumed; ``deps``: the tensor inputs it
    depends on; ``reshaped``: a reshape lies on the way; ``view``: (input, torch view
    functions) when it is a chain of view ops of an input; ``out_view``: (the ``ref`` of
    the computed value the chain of view ops ending here starts at, ((torch view function,
    the ``ref`` it gives), ...)): layoutfuse returns such an output as a view of the
    topmost other output on the chain (``expected_strides``); ``pinned``: its own memory
    order (a ``stride_order`` op), outermost first. ``verify``: a check of a result that
    torch leaves partly unspecified (topk's indices among ties), which replaces the
    comparison with ``ref`` (returns why it fails, or None); such a value is ``opaque``:
    an output only, never another op's operand.
    """

    ref: torch.Tensor
    bcast: tuple[bool, ...]
    expanded: tuple[bool, ...]
    origins: tuple[dict, ...]
    err: float = 0.0
    abs_err: float = 0.0
    consumed: frozenset = frozenset()
    deps: frozenset = frozenset()
    reshaped: bool = False
    view: tuple | None = None
    out_view: tuple | None = None
    pinned: tuple[int, ...] | None = None
    verify: Callable[[torch.Tensor], str | None] | None = None

    @property
    def opaque(self) -> bool:
        return self.verify is not None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.ref.shape)

    @property
    def dtype(self) -> torch.dtype:
        return self.ref.dtype

    @property
    def exact(self) -> bool:
        return self.err == 0 and self.abs_err == 0


@dataclass(frozen=True)
class Const:
    """A constant scalar operand (``fd.define_scalar(value)``)."""

    value: int | float


@dataclass(frozen=True)
class ScalarInput:
    """A symbolic scalar input (``fd.define_scalar(dtype)``), its value given to execute."""

    index: int  # position among the program's inputs
    value: int | float


Operand = Value | Const | ScalarInput


def input_value(i: int, values: torch.Tensor, layout: Layout) -> Value:
    n = values.dim()
    bcast = tuple(values.shape[d] == 1 or d in layout.expanded for d in range(n))
    return Value(
        values,
        bcast,
        tuple(d in layout.expanded and values.shape[d] > 1 for d in range(n)),
        tuple({i: d} for d in range(n)),
        deps=frozenset({i}),
        view=(i, ()),
    )


def rounding(dtype: torch.dtype) -> float:
    """The relative error of rounding a Float result to ``dtype`` (one whole ulp)."""
    return EPS32 + (torch.finfo(dtype).eps if dtype in (F16, BF16) else 0.0)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values (NaN equal to NaN), wherever each tensor lives (under ``--device cuda``
    a kernel's output beside a reference built on the CPU: draw 12's unsorted topk)."""
    a, b = a.cpu(), b.cpu()
    return bool(
        torch.equal(a.double(), b.double())
        or ((a.double() == b.double()) | (a.isnan() & b.isnan())).all()
    )


def check_finite(faithful: torch.Tensor, true: torch.Tensor) -> None:
    if faithful.is_floating_point() and bool((~faithful.isfinite() & true.isfinite()).any()):
        raise Unusable("overflows its dtype")


def magnitude(a: Operand) -> float:
    """A bound on the true value's magnitude (a tensor's largest, a scalar's own)."""
    if not isinstance(a, Value):
        return abs(float(a.value))
    m = float(a.ref.double().abs().max()) if a.ref.numel() else 0.0
    if not math.isfinite(m):
        raise Unusable("an absolute error bound of a value with infinities or NaN")
    return (m + a.abs_err) * (1 + 2 * a.err)


def absolute_bound(a: Operand) -> float:
    """A bound on ``a``'s error against its true value, as one absolute number."""
    return a.err * magnitude(a) + a.abs_err if isinstance(a, Value) else 0.0


def relative_bound(a: Operand) -> float:
    """``a``'s error as a relative bound, where its absolute part is small against its
    smallest magnitude (a divisor, a root's operand); ``Unusable`` where it is not."""
    if not isinstance(a, Value) or not a.abs_err:
        return a.err if isinstance(a, Value) else 0.0
    low = float(a.ref.double().abs().min()) if a.ref.numel() else 0.0
    e = absolute_bound(a)
    if low <= 100 * e:
        raise Unusable("an absolute error bound near zero (of a divisor or a root)")
    return e / (low - e)


# --- pointwise ----------------------------------------------------------------------------------
def pointwise_compute(name: str, args: Sequence[Operand]) -> tuple[torch.Tensor, float, float]:
    """The result, its relative and absolute error bounds. 0-dim tensor operands are
    computed as 1-element tensors, Python numbers as 0-dim tensors (``_probed_dtype``
    gives the result dtype of the operands as they are)."""
    tensors = [a for a in args if isinstance(a, Value)]
    floats = any(t.dtype.is_floating_point for t in tensors)
    try:
        shape = torch.broadcast_shapes(*[t.shape for t in tensors])
    except RuntimeError:
        raise Unusable(f"{name}: operands that do not broadcast") from None
    as_torch = [
        (a.ref.reshape(1) if not a.ref.dim() else a.ref)
        if isinstance(a, Value)
        else scalar_tensor(a.value, floats)
        for a in args
    ]
    faithful, err, abs_err = _pointwise_compute(
        name, args, as_torch, _probed_dtype(name, args, as_torch)
    )
    return faithful.reshape(shape), err, abs_err


def _probed_dtype(name: str, args: Sequence[Operand], as_torch: list[torch.Tensor]) -> torch.dtype:
    """torch's three tiers (dimensioned tensors, 0-dim tensors, Python numbers) with the
    numbers probed as 0-dim tensors one tier up: 0-dim tensors probe as dimensioned where
    none is; a number above the dimensioned tensors' category beside 0-dim ones is not drawn
    (the probe cannot put it in a tier of its own)."""
    values = [a for a in args if isinstance(a, Value)]
    dimensioned = [a.dtype for a in values if a.shape]
    if not dimensioned:
        return torch_result_dtype(name, as_torch)
    top = max(_category(d) for d in dimensioned)
    numbers = [a.value for a in args if not isinstance(a, Value)]
    if any(not a.shape for a in values) and any(_category(type(v)) > top for v in numbers):
        raise Unusable("a Python number above the tensors' category beside a 0-dim tensor")
    probes = [a.ref if isinstance(a, Value) else t for a, t in zip(args, as_torch)]
    return torch_result_dtype(name, probes)


def _category(dtype) -> int:
    """bool 0, integer 1, floating 2, complex 3: of a torch dtype or a Python number type."""
    if dtype in (bool, torch.bool):
        return 0
    if dtype is int or (
        isinstance(dtype, torch.dtype) and not dtype.is_floating_point and not dtype.is_complex
    ):
        return 1
    if dtype is complex or (isinstance(dtype, torch.dtype) and dtype.is_complex):
        return 3
    return 2


def _pointwise_compute(
    name: str, args: Sequence[Operand], as_torch: list[torch.Tensor], dtype: torch.dtype
):
    tensors = [a for a in args if isinstance(a, Value)]
    for k in NONZERO.get(name, ()):
        if bool((as_torch[k] == 0).any()):
            raise Unusable(f"{name}: operand {k} has a zero")
    if name in AT_RESULT_DTYPE and not dtype.is_floating_point:
        as_torch = [x.to(dtype) for x in as_torch]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            faithful = direct(name)(*[compute_form(x, name) for x in as_torch]).to(dtype)
        except (RuntimeError, TypeError) as e:  # a value torch refuses
            raise Unusable(f"{name}: {str(e).splitlines()[0]}") from None
        if not dtype.is_floating_point:
            if name not in CLASSIFIES and any(not t.exact for t in tensors):
                raise Unusable(f"{name}: not continuous in an approximate operand")
            return faithful, 0.0, 0.0
        true = direct(name)(*[true_form(x, name) for x in as_torch]).double()
    check_finite(faithful, true)
    errs = [a.err if isinstance(a, Value) else 0.0 for a in args]
    abs_errs = [a.abs_err if isinstance(a, Value) else 0.0 for a in args]
    own = rounding(dtype)
    if name in LIBRARY:
        scale = max((float(x.double().abs().max()) for x in as_torch if x.numel()), default=0.0)
        own += ULPS * EPS32 + (2 * EPS32 * scale if name in GROWS_WITH_ARG else 0.0)
    if all(e == 0 for e in errs + abs_errs):
        if name == "addcmul" and faithful.numel() and same_values(faithful, true):
            # a + v * b * c: the product rounds before the add, which torch's CPU kernel
            # may fuse into one rounding (program 91430: 1 ulp apart)
            a, b, c, v = (x.double() for x in as_torch)
            return faithful, own, 2 * EPS32 * float((v * b * c).abs().max())
        if name in LIBRARY or not same_values(faithful, true):
            return faithful, own, 0.0
        return faithful, 0.0, 0.0
    if name == "where" and (errs[0] or abs_errs[0]):
        raise Unusable("where: an approximate predicate")
    if name in KEEPS:
        return faithful, max(errs), max(abs_errs)
    if name in NO_CANCEL:
        a, b = as_torch[0].double(), as_torch[1].double() * NO_CANCEL[name]
        if any(abs_errs) or bool((a * b < 0).any()):  # the operands' absolute bounds add
            return faithful, own, sum(absolute_bound(x) for x in args)
        return faithful, max(errs) + own, 0.0
    if name == "mul" and any(abs_errs):  # |ab - AB| <= |a - A| |b| + |A| |b - B|
        a, b = args
        ea, eb = absolute_bound(a), absolute_bound(b)
        return faithful, own, ea * magnitude(b) + magnitude(a) * eb + ea * eb
    if name in SCALES:
        rel = [relative_bound(x) for x in args]
        return faithful, SCALES[name] * sum(rel) + own, 0.0
    if name in EXPONENTIALS:  # e^(x + d) = e^x e^d: an absolute error becomes a relative one
        d = EXPONENTIALS[name] * absolute_bound(args[0])
        if d < 0.01:
            return faithful, math.expm1(d) + own, 0.0
    if name in LOGARITHMS:  # log(x (1 + r)) = log x + log(1 + r): the other way round
        r = relative_bound(args[0])
        if r < 0.01:
            return faithful, own, -math.log1p(-r) * LOGARITHMS[name]
    raise Unusable(f"{name}: not continuous in an approximate operand")


def pointwise_layout(args: Sequence[Operand], out_rank: int) -> dict:
    """Layout facts of a pointwise result: operands aligned on the right (numpy)."""
    tensors = [a for a in args if isinstance(a, Value)]
    bcast, origins = [], []
    for j in range(out_rank):
        at = [(t, j - out_rank + len(t.shape)) for t in tensors if j - out_rank + len(t.shape) >= 0]
        bcast.append(all(t.bcast[i] for t, i in at))
        origins.append(merge_origins([t.origins[i] for t, i in at]))
    return dict(bcast=tuple(bcast), origins=tuple(origins), **joined(tensors))


def merge_origins(maps: Sequence[dict]) -> dict:
    """{input: dim} for an axis that several operand axes are: an input reached at two
    different dims maps to neither."""
    out: dict = {}
    for i in {i for m in maps for i in m}:
        dims = {m[i] for m in maps if i in m}
        if len(dims) == 1:
            out[i] = dims.pop()
    return out


def joined(tensors: Sequence[Value]) -> dict:
    return dict(
        consumed=frozenset().union(*(t.consumed for t in tensors)),
        deps=frozenset().union(*(t.deps for t in tensors)),
        reshaped=any(t.reshaped for t in tensors),
    )


def make_value(ref: torch.Tensor, err: float, abs_err: float, bcast, origins, **facts) -> Value:
    expanded = tuple(b and s > 1 for b, s in zip(bcast, ref.shape))
    return Value(ref, tuple(bcast), expanded, tuple(origins), err, abs_err, **facts)


# --- shape ops ----------------------------------------------------------------------------------
def shaped(x: Value, ref: torch.Tensor, src: Sequence[int | None], view_fn, **over) -> Value:
    """``x`` reshaped to ``ref``: output dim j is input dim ``src[j]`` (None: a new
    broadcast); ``view_fn`` extends the view chain (None: not a view)."""
    bcast = tuple(True if s is None else x.bcast[s] for s in src)
    origins = tuple({} if s is None else x.origins[s] for s in src)
    view = None if x.view is None or view_fn is None else (x.view[0], x.view[1] + (view_fn,))
    out_view = extend_out_view(x, view_fn, ref)
    facts = dict(consumed=x.consumed, deps=x.deps, reshaped=x.reshaped, view=view)
    facts.update(out_view=out_view, **over)
    return make_value(ref, x.err, x.abs_err, bcast, origins, **facts)


def extend_out_view(x: Value, view_fn, ref: torch.Tensor) -> tuple | None:
    """``x``'s chain of view ops (``Value.out_view``) one op longer (``view_fn`` giving
    ``ref``), or a new chain at ``x``; None where the op is no view."""
    if view_fn is None:
        return None
    if x.out_view is not None:
        return (x.out_view[0], x.out_view[1] + ((view_fn, ref),))
    return (x.ref, ((view_fn, ref),))


def bid_view(t: torch.Tensor, shape: Sequence[int], bdims: Sequence[int]) -> torch.Tensor:
    """broadcast_in_dim as torch views (unsqueeze, expand), as layoutfuse makes it."""
    for j in range(len(shape)):
        if j not in bdims:
            t = t.unsqueeze(j)
    return t.expand(tuple(shape))


def squeeze_view(t: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    return t[tuple(0 if i in dims else slice(None) for i in range(t.dim()))]


def order_from_stride_order(stride_order: Sequence[int]) -> tuple[int, ...]:
    """nvFuser's ``alloc[rank-1-stride_order[i]] = i``: dims outermost first."""
    r = len(stride_order)
    alloc = [0] * r
    for i, s in enumerate(stride_order):
        alloc[r - 1 - s] = i
    return tuple(alloc)


# --- output layouts -------------------------------------------------------------------------------
def dense_strides(
    shape: Sequence[int], order: Sequence[int], expanded: Sequence[bool]
) -> tuple[int, ...]:
    strides, running = [0] * len(shape), 1
    for d in reversed(order):
        if not expanded[d]:
            strides[d] = running
            running *= shape[d]
    return tuple(strides)


def inferred_order(
    v: Value, inputs: Sequence[Value | None], allocs: Sequence[tuple[int, ...] | None]
) -> tuple[int, ...]:
    """nvFuser's AllocationDomainPass (README, research §2): the dominant input's memory
    order mapped onto ``v``'s dims; dims a reduction consumed are skipped; row-major if
    the dominant inputs disagree or nothing maps."""
    rank = len(v.shape)
    row_major = tuple(range(rank))
    if not v.deps or not rank:
        return row_major
    score = {i: sum(not b for b in inputs[i].bcast) for i in v.deps}
    best = [i for i in sorted(v.deps) if score[i] == max(score.values())]
    orders = {mapped_order(v, i, inputs[i], allocs[i]) for i in best}
    order = orders.pop() if len(orders) == 1 else None
    return row_major if order is None else order


def mapped_order(v: Value, i: int, ref: Value, alloc: tuple[int, ...]):
    mapped: list[int] = []
    for k in reversed(alloc):
        if ref.bcast[k]:
            continue
        positions = [j for j in range(len(v.shape)) if not v.bcast[j] and v.origins[j].get(i) == k]
        if positions:
            mapped.extend(reversed(positions))
        elif (i, k) not in v.consumed:
            break
    if not mapped:
        return None
    return tuple(j for j in range(len(v.shape)) if j not in mapped) + tuple(reversed(mapped))


def is_dense(t: torch.Tensor, expanded: Sequence[bool]) -> bool:
    """``t`` is dense in some memory order (its expanded dims stride 0)."""
    if any(expanded[d] and t.shape[d] > 1 and t.stride(d) != 0 for d in range(t.dim())):
        return False
    running = 1
    dims = [d for d in range(t.dim()) if t.shape[d] > 1 and not expanded[d]]
    for d in sorted(dims, key=t.stride):
        if t.stride(d) != running:
            return False
        running *= t.shape[d]
    return True


# --- comparing --------------------------------------------------------------------------------------
def mismatch(got: torch.Tensor, v: Value) -> str | None:
    """Why ``got`` is not ``v``'s value within its bound, or None."""
    ref = v.ref
    if got.dtype != ref.dtype:
        return f"dtype {got.dtype}, expected {ref.dtype}"
    if tuple(got.shape) != tuple(ref.shape):
        return f"shape {tuple(got.shape)}, expected {tuple(ref.shape)}"
    got, ref = got.cpu(), ref.cpu()  # compared on the CPU (with --device cuda too)
    if v.verify is not None:
        return v.verify(got)
    if not ref.is_floating_point():
        bad = got != ref
        allowed = None
    else:
        g, r = got.double(), ref.double()
        tiny = 4 * torch.finfo(ref.dtype).tiny
        allowed = 2.5 * v.err * r.abs() + 2 * v.abs_err + (tiny if not v.exact else 0.0)
        same = (g == r) | (g.isnan() & r.isnan())
        bad = ~same & ~((g - r).abs() <= allowed)
    if not bool(bad.any()):
        return None
    idx = tuple(int(i) for i in bad.nonzero()[0])
    bound = "exact" if allowed is None or v.exact else f"allowed {float(allowed[idx]):.3g}"
    return (
        f"{int(bad.sum())} of {bad.numel()} elements differ; first at {idx}: got "
        f"{got[idx].item()!r}, expected {ref[idx].item()!r} ({bound})"
    )
