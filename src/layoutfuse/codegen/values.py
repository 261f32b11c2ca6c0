"""Emit the values of a fused computation at the kernel's current tile of coordinates.

Shape ops are free here: they only change how an access is addressed, which
the access analysis already folded into strides (or, for an access that is not
affine, into its index walk: ``generic_index``). Pointwise ops are emitted from
their OpDef rows in the compute dtype (Float for Half/BFloat16, each result rounded to its
own dtype, as torch and nvFuser round it); creation ops
are built from constants and coordinates (random ops: Philox at the coordinate).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..analysis.accesses import chain_step
from ..dtypes import DataType, compute_dtype, is_boolean, is_integral, promote
from ..ir import Expr, OpKind, Scalar, TensorView
from ..ir.ops.elementwise import promotion_tiers
from ..ir.ops.random import NAMES as RANDOM_OPS
from ..ir.ops.reductions import accumulator_dtype, copies_scale, one_element_parts
from .helpers import FP8_CONVERT
from .writer import Writer, tl_compute, tl_dtype

SCALAR = object()  # marks a scalar operand's dtype in ``_pointwise``

# Integer forms that differ from the float emission in the op rows.
_INTEGER_FORMS = {
    "pow": lambda a, b: f"_ipow({a}, {b})",
    "div": lambda a, b: f"({a} // {b})",
    "fmod": lambda a, b: f"({a} % {b})",
    "remainder": lambda a, b: f"_remainder({a}, {b})",
    "abs": lambda a: f"tl.where({a} < 0, -{a}, {a})",
    "floor": lambda a: a,
    "ceil": lambda a: a,
    "round": lambda a: a,
    "trunc": lambda a: a,
}


def _small_power(exponent) -> int:
    """2 or 3 where a float power's exponent is that constant, else 0: the power is then
    the product in the compute dtype (``x * x``), as torch computes a tensor to a scalar
    power of 2 or 3; a Half or BFloat16 result is rounded once, as nvFuser rounds an op
    computed in Float. libdevice's ``pow`` costs some 40 instructions an element
    (Thunder's GELU backward squares with it)."""
    if not (isinstance(exponent, Scalar) and exponent.is_constant):
        return 0
    v = exponent.value
    if isinstance(v, bool) or not isinstance(v, int | float):
        return 0
    return int(v) if v in (2, 3) else 0


def literal(s: Scalar) -> str:
    v = s.value
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        if v != v:
            return "float('nan')"
        if v in (float("inf"), float("-inf")):
            return f"float('{v}')"
        if v == 0 and math.copysign(1.0, v) < 0:
            # Triton makes a constant equal to 0 +0.0 (and negates as 0 - x): the bits
            return "tl.full([], -(2**63), tl.int64).to(tl.float64, bitcast=True)"
        return repr(v)
    return repr(int(v)) if isinstance(v, int) else repr(v)


class ValueEmitter:
    """Emits values of TensorViews into ``writer``.

    ``load(tv, chain)`` returns the variable holding a memory read (or None when
    ``tv`` is not read from memory); ``scalar(s)`` names a non-constant Scalar's
    kernel argument; ``special`` maps a TensorView id to a precomputed variable
    (a reduction's result in the epilogue); ``coordinate(tv, chain)`` returns the
    linear index expression of a creation op's own coordinate; ``predicate(expr, chain)``
    the condition under which a pad reached along ``chain`` reads its input (the generic
    walk's, ``GenericIndex.predicates``), its fill elsewhere. ``one_element``: reductions
    reduce extents of 1 only (a pointwise kernel's segment), so each is its row's
    ``one_element`` of its input at the same coordinates. ``coordinate_run(tv, chain)``:
    the elements of the aligned, unit-stride runs that coordinate walks along the last
    axis of the tile, whose shape is ``tile`` (constexpr names) and whose threads hold
    ``vector`` elements along that axis: a random op computes one Philox call per run
    where they hold its elements per call (``ir.ops.random``); None: runs of 1.
    """

    def __init__(
        self,
        writer: Writer,
        load: Callable,
        scalar: Callable[[Scalar], str],
        coordinate: Callable,
        tile_zeros: str,
        special: dict[int, str] | None = None,
        predicate: Callable | None = None,
        one_element: bool = False,
        coordinate_run: Callable[..., int] | None = None,
        tile: tuple[str, ...] = (),
        vector: int = 1,
        repeat: str | None = None,
    ):
        self.w = writer
        self.load = load
        self.scalar = scalar
        self.coordinate = coordinate
        self.tile_zeros = tile_zeros
        self.special = dict(special or {})
        self.predicate = predicate
        self.one_element = one_element
        self.coordinate_run = coordinate_run
        self.tile = tile
        self.vector = vector
        self.repeat = repeat  # copies of each one-element reduction's value (``NREP``)
        self.cache: dict[tuple, str] = {}

    def scalar_expr(self, s: Scalar) -> str:
        return literal(s) if s.is_constant else self.scalar(s)

    def value(self, tv: TensorView, chain: tuple[Expr, ...] = ()) -> str:
        if id(tv) in self.special:
            return self.special[id(tv)]
        key = (id(tv), tuple(id(e) for e in chain))
        if key in self.cache:
            return self.cache[key]
        loaded = self.load(tv, chain)
        if loaded is not None:
            self.cache[key] = loaded
            return loaded
        e = tv.definition
        if e is None:
            raise ValueError(f"{tv!r} is neither loaded nor computed in this kernel")
        kind = e.op.kind
        if kind is OpKind.SHAPE and e.op.name == "pad":
            name = self._pad(e, chain)
        elif kind is OpKind.SHAPE:
            name = self.value(e.inputs[0], chain_step(chain, e))
        elif kind is OpKind.POINTWISE:
            name = self._pointwise(e, chain)
        elif kind is OpKind.CREATION:
            name = self._creation(e, chain)
        elif kind in (OpKind.REDUCTION, OpKind.WELFORD) and self.one_element:
            name = self._one_element(e, tv)
        else:
            raise ValueError(f"{e.op.name} cannot be computed inside this kernel")
        self.cache[key] = name
        return name

    def _one_element(self, e: Expr, tv: TensorView) -> str:
        """Output ``tv`` of reduction ``e`` over a single element: the input (reached as the
        reduction kernels reach it) in the accumulator dtype, an expression of it, or the
        row's constant. Over ``repeat`` copies of it (expanded reduced dims the problem
        left out): times the copies where the row's ``copies`` says so."""
        k = [id(o) for o in e.outputs].index(id(tv))
        form = one_element_parts(e)[k]
        scale = copies_scale(e)
        times = f" * {self.repeat}" if self.repeat and scale and scale[k] else ""
        ct = tl_compute(tv.dtype)
        if form == "x":
            form = "{x}"
        if "{x}" not in form:
            return self.w.assign("t", f"({self.tile_zeros} + {form}{times}).to({ct})")
        x = self.value(e.inputs[0], ())
        xa = self.w.assign("t", f"({x}).to({tl_compute(accumulator_dtype(e))})")
        return self.w.assign("t", f"(({form.format(x=xa)}){times}).to({ct})")

    def _pad(self, e: Expr, chain) -> str:
        """``tl.where(inside, input, fill)``: the input's load is masked by the same condition."""
        out = e.outputs[0]
        inner = self.value(e.inputs[0], chain + (e,))
        cond = self.predicate(e, chain) if self.predicate is not None else None
        if cond is None:
            raise ValueError(f"{e!r}: no index walk reaches this pad's input in this kernel")
        fill = self._operand(e.inputs[1], chain)
        ct = tl_compute(out.dtype)
        return self.w.assign("t", f"tl.where({cond}, {inner}, ({fill})).to({ct})")

    def _operand(self, v, chain) -> str:
        if isinstance(v, TensorView):
            return self.value(v, chain)
        return self.scalar_expr(v)

    def _pointwise(self, e: Expr, chain) -> str:
        out = e.outputs[0]
        out_c = compute_dtype(out.dtype)
        if e.op.name == "cast":
            x = self._operand(e.inputs[0], chain)
            if is_boolean(out.dtype):
                return self.w.assign("t", f"({x} != 0)")
            if out.dtype in FP8_CONVERT:  # rounded here, as torch rounds, then computed in Float
                return self.w.assign("t", f"{FP8_CONVERT[out.dtype]}({x}).to(tl.float32)")
            return self.w.assign("t", _rounded(x, out.dtype))
        args = [self._operand(v, chain) for v in e.inputs]
        name = e.op.name
        # scalar operands (kernel arguments or literals) are made 0-d tensors of the
        # compute dtype, so libdevice and integer helpers see one dtype
        operand_dtypes = [
            compute_dtype(v.dtype) if isinstance(v, TensorView) else SCALAR for v in e.inputs
        ]
        if name in ("where",):
            args = [args[0]] + [self._as(a, out_c, d) for a, d in zip(args[1:], operand_dtypes[1:])]
        elif out_c is not DataType.Bool and name not in ("bitwise_not",):
            args = [self._as(a, out_c, d) for a, d in zip(args, operand_dtypes)]
        elif name in ("eq", "ne", "lt", "le", "gt", "ge") and len(args) == 2:
            common = compute_dtype(promote(*promotion_tiers(e.inputs)))
            args = [self._as(a, common, d) for a, d in zip(args, operand_dtypes)]
        if name == "sign" and is_boolean(out_c):
            expr = args[0]  # sign of a Bool is itself (torch.sign)
        elif name == "add" and is_boolean(out_c):
            # torch adds Bools as a logical or; int1 addition wraps (True + True == False
            # on the GPU, where the interpreter's numpy bools saturate)
            expr = f"({args[0]} | {args[1]})"
        elif name == "add_alpha" and is_boolean(out_c):
            expr = f"({args[0]} | ({args[1]} & ({args[2]} != 0)))"  # torch: a or (alpha and b)
        elif (is_integral(out_c) or is_boolean(out_c)) and name in _INTEGER_FORMS:
            expr = _INTEGER_FORMS[name](*args)
        elif name == "pow" and _small_power(e.inputs[1]):
            expr = " * ".join([f"({args[0]})"] * _small_power(e.inputs[1]))
        else:
            expr = e.op.triton(*args)
        if is_boolean(out_c):
            return self.w.assign("t", expr)
        return self.w.assign("t", _rounded(expr, out.dtype))

    @staticmethod
    def _as(arg: str, target: DataType, have) -> str:
        if have is SCALAR:
            if target is DataType.Bool:
                return arg
            if is_integral(target) and _is_float_literal(arg):
                # a float constant where the result is an integer (threshold's scalars):
                # converted in the kernel, truncating as torch does (tl.full takes no float
                # for an integer dtype when compiled)
                return f"tl.full([], {arg}, tl.float64).to({tl_compute(target)})"
            return f"tl.full([], {arg}, {tl_compute(target)})"
        if have is target:
            return arg
        if have is DataType.Bool:
            return f"({arg}).to({tl_compute(target)})"
        return f"({arg}).to({tl_compute(target)})" if not _is_literal(arg) else arg

    def _creation(self, e: Expr, chain) -> str:
        out = e.outputs[0]
        if e.op.name == "full":
            fill = self.scalar_expr(e.inputs[0])
            return self.w.assign("t", f"({self.tile_zeros} + {fill}).to({tl_compute(out.dtype)})")
        if e.op.name == "iota":
            idx = self.coordinate(out, chain)
            start, step = (self.scalar_expr(v) for v in e.inputs[1:3])
            return self.w.assign(
                "t", f"({start} + {step} * ({idx} + {self.tile_zeros})).to({tl_compute(out.dtype)})"
            )
        if e.op.name in RANDOM_OPS:
            a, b, seed, offset = (self.scalar_expr(v) for v in e.inputs[:4])
            idx = self.coordinate(out, chain)
            run = self.coordinate_run(out, chain) if self.coordinate_run else 1
            args = {"idx": idx, "zeros": self.tile_zeros, "seed": seed, "offset": offset}
            args |= {"a": a, "b": b, "run": run, "tile": self.tile, "vector": self.vector}
            name = e.op.triton(self.w, e.op.name, out.dtype, args)
            return self.w.assign("t", f"({name}).to({tl_compute(out.dtype)})")
        raise ValueError(e.op.name)


def _rounded(expr: str, dtype: DataType) -> str:
    """``expr`` (computed in ``dtype``'s compute dtype) as a value of ``dtype``: a Half or
    BFloat16 result rounded to its dtype and held in Float, as torch and nvFuser round every
    op's result (``(x + y) - x`` of bf16 operands is 0 where ``x + y`` rounds to ``x``)."""
    if dtype in (DataType.Half, DataType.BFloat16):
        return f"(({expr}).to({tl_dtype(dtype)})).to(tl.float32)"
    return f"({expr}).to({tl_compute(dtype)})"


def _is_float_literal(arg: str) -> bool:
    try:
        int(arg)
        return False
    except ValueError:
        return _is_literal(arg)


def _is_literal(arg: str) -> bool:
    try:
        float(arg)
        return True
    except ValueError:
        return arg.startswith("float(")
