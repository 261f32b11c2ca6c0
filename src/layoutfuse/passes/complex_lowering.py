"""ComplexLowering: a fusion with complex values rewritten into one with real values only.

Every complex value becomes its two parts (re, im), each a real value of the part dtype;
the op rules of ``ir/ops/complex.py`` say how (pair arithmetic, or each part through the
op alone). Everything downstream (segmenter, schedulers, codegen) sees real tensors.

A complex input becomes two real inputs: the parts of a complex tensor of shape S and
strides st are ``torch.view_as_real(x)[..., 0]`` and ``[..., 1]``, real tensors of shape
S and strides 2*st (the second one element further on), declared in the complex input's
allocation order with contiguity False (their strides are 2*st, not dense). A complex
output becomes two real outputs, which the runtime binds to the two parts of the complex
tensor it allocates (``runtime/complex_parts.py``), so kernels write the interleaved
storage directly. Real values are copied as they are.

``inputs[k]`` / ``outputs[k]``: the positions in the lowered fusion of the original
input / output ``k`` (two for a complex one, re first).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import COMPLEX, DataType, is_boolean, is_integral, part_dtype, promote
from ..errors import UnsupportedError
from ..ir import Expr, Fusion, OpKind, Scalar, TensorView, Val, Vector
from ..ir.domain import AllocationDomain
from ..ir.ops.common import clone_id, emit
from ..ir.ops.complex import (
    PAIR_RULES,
    PER_PART_REDUCTIONS,
    Parts,
    promoted_operands,
    welford_of_parts,
)
from ..ir.ops.elementwise import PROMOTION_OPERANDS, cast, pointwise, promotion_tiers


@dataclass(frozen=True)
class ComplexLowering:
    fusion: Fusion
    inputs: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]


def has_complex(fusion: Fusion) -> bool:
    return any(v.dtype in COMPLEX for v in fusion.vals)


def lower_complex(fusion: Fusion) -> ComplexLowering | None:
    """The real fusion of ``fusion``, or None when it has no complex value."""
    if not has_complex(fusion):
        return None
    return _Lowerer(fusion).run()


Lowered = Val | Parts


class _Lowerer:
    def __init__(self, src: Fusion):
        self.src = src
        self.dst = Fusion()
        self.env: dict[int, Lowered] = {}

    # --- values ------------------------------------------------------------------------------
    def get(self, v: Val) -> Lowered:
        if id(v) not in self.env:
            if not (isinstance(v, Scalar) and v.is_constant):
                raise AssertionError(f"{v!r} is used before it is defined")
            if v.dtype in COMPLEX:
                z = complex(v.value)
                pd = part_dtype(v.dtype)
                self.env[id(v)] = Parts(Scalar(self.dst, pd, z.real), Scalar(self.dst, pd, z.imag))
            else:
                self.env[id(v)] = Scalar(self.dst, v.dtype, v.value)
        return self.env[id(v)]

    def parts(self, v: Val) -> Parts:
        """``v`` as parts: a real value is ``Parts(x, 0)``."""
        x = self.get(v)
        if isinstance(x, Parts):
            return x
        return Parts(x, Scalar(self.dst, DataType.Double, 0.0))

    def real(self, v: Val) -> Val:
        x = self.get(v)
        assert not isinstance(x, Parts), f"{v!r} is complex"
        return x

    def tensor_parts(self, v: TensorView) -> Parts:
        """The parts of tensor ``v``, a constant part made a tensor like the other one."""
        p = self.parts(v)
        re, im = p.re, p.im
        pd = part_dtype(v.dtype) if v.dtype in COMPLEX else v.dtype
        if not isinstance(re, TensorView):
            assert isinstance(im, TensorView)  # a tensor has at least one tensor part
            re = _constant_like(re, im, pd)
        if not isinstance(im, TensorView):
            im = _constant_like(im, re, pd)
        if not _same_span(re, im):  # a real operand's 0 beside a 0-dim complex one's part
            re, im = _spanning(re, im), _spanning(im, re)
        return Parts(re, im)

    def _tensor_like(self, v: TensorView, dtype: DataType) -> TensorView:
        t = TensorView(self.dst, [clone_id(d) for d in v.logical], dtype)
        if v.allocation is not None:
            pos = {d.uid: i for i, d in enumerate(v.logical)}
            order = tuple(t.logical[pos[d.uid]] for d in v.allocation.order)
            t.allocation = AllocationDomain(order, v.allocation.contiguity)
        return t

    def _new_like(self, v: Val, dtype: DataType) -> Val:
        if isinstance(v, TensorView):
            return self._tensor_like(v, dtype)
        if isinstance(v, Scalar):
            return Scalar(self.dst, dtype, v.value)
        raise UnsupportedError(f"complex lowering: cannot copy {v!r}")

    # --- the walk ----------------------------------------------------------------------------
    def run(self) -> ComplexLowering:
        inputs = [self.input(v) for v in self.src.inputs]
        for e in self.src.exprs:
            self.expr(e)
        outputs = [self.output(spec.value, spec.alias_input) for spec in self.src.outputs]
        return ComplexLowering(self.dst, tuple(inputs), tuple(outputs))

    def input(self, v: Val) -> tuple[int, ...]:
        if isinstance(v, Vector):
            elements = [Scalar(self.dst, e.dtype) for e in v.elements]
            for e, element in zip(v.elements, elements):
                self.env[id(e)] = element
            new: Val = Vector(self.dst, elements, v.dtype)
            self.env[id(v)] = new
            self.dst.add_input(new)
            return (len(self.dst.inputs) - 1,)
        if v.dtype not in COMPLEX:
            new = self._new_like(v, v.dtype)
            self.env[id(v)] = new
            self.dst.add_input(new)
            return (len(self.dst.inputs) - 1,)
        pd = part_dtype(v.dtype)
        re, im = self._new_like(v, pd), self._new_like(v, pd)
        for t in (re, im):
            if isinstance(t, TensorView):
                _strided_parts(t)
            self.dst.add_input(t)
        if isinstance(re, TensorView) and isinstance(im, TensorView):
            self.dst.kernel_partners.append((re, im))  # sibling reductions of its parts
        self.env[id(v)] = Parts(re, im)
        n = len(self.dst.inputs)
        return (n - 2, n - 1)

    def output(self, v: Val, alias: Val | None) -> tuple[int, ...]:
        x = self.get(v)
        if not isinstance(x, Parts):
            self.dst.add_output(x, None if alias is None else self.real(alias))
            return (len(self.dst.outputs) - 1,)
        if isinstance(v, TensorView):
            x = self.tensor_parts(v)
            assert isinstance(x.re, TensorView) and isinstance(x.im, TensorView)
            self.dst.kernel_partners.append((x.re, x.im))  # one kernel reads both halves
        alias_parts = None if alias is None else self.parts(alias)
        self.dst.add_output(x.re, None if alias_parts is None else alias_parts.re)
        self.dst.add_output(x.im, None if alias_parts is None else alias_parts.im)
        n = len(self.dst.outputs)
        return (n - 2, n - 1)

    def expr(self, e: Expr) -> None:
        vals = [*e.inputs, *e.outputs]
        if not any(v.dtype in COMPLEX for v in vals if not isinstance(v, Vector)):
            ins = [self.vector(v) if isinstance(v, Vector) else self.real(v) for v in e.inputs]
            for o, n in zip(e.outputs, self.copy_expr(e, ins)):
                self.env[id(o)] = n
            return
        name = e.op.name
        if e.op.kind is OpKind.WELFORD:
            self.welford(e)
        elif e.op.kind is OpKind.SHAPE or (
            e.op.kind is OpKind.REDUCTION and name in PER_PART_REDUCTIONS
        ):
            self.per_part(e)
        elif e.op.kind is OpKind.SCALAR:  # a size query: the real part has the same shape
            ins = [
                self.tensor_parts(v).re if isinstance(v, TensorView) else self.real(v)
                for v in e.inputs
            ]
            for o, n in zip(e.outputs, self.copy_expr(e, ins)):
                self.env[id(o)] = n
        elif name == "full":
            self.full(e)
        elif name in PAIR_RULES and e.op.kind is OpKind.POINTWISE:
            out = e.outputs[0]
            dtype = e.attrs.get("dtype", out.dtype)
            roles = PROMOTION_OPERANDS.get(name, range(len(e.inputs)))
            common = promote(*promotion_tiers([e.inputs[i] for i in roles]))
            operands = promoted_operands(name, [self.parts(v) for v in e.inputs], common)
            result = PAIR_RULES[name](operands, dtype)
            if isinstance(result, Parts):
                pd = part_dtype(out.dtype)
                self.env[id(out)] = Parts(cast(result.re, pd), cast(result.im, pd))
            else:
                self.env[id(out)] = cast(result, out.dtype)
        else:
            dts = sorted({v.dtype.value for v in vals if v.dtype in COMPLEX})
            raise UnsupportedError(f"{name}: not supported for complex values ({', '.join(dts)})")

    def vector(self, v: Vector) -> Val:
        if id(v) not in self.env:
            elements = [self.real(x) for x in v.elements]
            assert all(isinstance(x, Scalar) for x in elements)
            self.env[id(v)] = Vector(
                self.dst, [x for x in elements if isinstance(x, Scalar)], v.dtype
            )
        return self.real(v)

    def copy_expr(self, e: Expr, inputs: list[Val], dtype: DataType | None = None) -> list[Val]:
        """``e`` applied to ``inputs`` in the lowered fusion; outputs of ``dtype`` (None: theirs)."""
        outs = [self._new_like(o, dtype or o.dtype) for o in e.outputs]
        attrs = dict(e.attrs)
        if dtype is not None and "dtype" in attrs:
            attrs["dtype"] = dtype
        emit(self.dst, e.op, inputs, outs, **attrs)
        return outs

    def per_part(self, e: Expr) -> None:
        """``e`` applied to the re parts and to the im parts of its tensor and complex
        operands (``pad``'s fill, ``cat``'s pieces); integer operands (bounds, widths,
        indices) go to both as they are."""

        def lane(v: Val, k: int) -> Val:
            if is_integral(v.dtype) or is_boolean(v.dtype) or isinstance(v, Vector):
                return self.real(v)  # an index, a bound, a width: the same for both parts
            if isinstance(v, TensorView):
                return self.tensor_parts(v).re if k == 0 else self.tensor_parts(v).im
            return self.parts(v).re if k == 0 else self.parts(v).im

        pd = part_dtype(e.outputs[0].dtype)
        (re,) = self.copy_expr(e, [lane(v, 0) for v in e.inputs], pd)
        (im,) = self.copy_expr(e, [lane(v, 1) for v in e.inputs], pd)
        self.env[id(e.outputs[0])] = Parts(re, im)

    def welford(self, e: Expr) -> None:
        """Each part's statistics (sibling reductions: one kernel), combined."""
        x = e.inputs[0]
        assert isinstance(x, TensorView)
        p = self.tensor_parts(x)
        pd = part_dtype(x.dtype)
        stats = []
        for part in (p.re, p.im):
            outs = [
                self._new_like(o, pd if o.dtype is not DataType.Int else o.dtype) for o in e.outputs
            ]
            emit(self.dst, e.op, [part], outs, **e.attrs)
            stats.append(outs)
        mean, m2, n = welford_of_parts(stats[0], stats[1])
        results: tuple[Lowered, ...] = (mean, m2, n)
        for o, v in zip(e.outputs, results):
            self.env[id(o)] = v

    def full(self, e: Expr) -> None:
        fill = self.parts(e.inputs[0])
        shape = [self.real(v) for v in e.inputs[1:]]
        pd = part_dtype(e.outputs[0].dtype)
        (re,) = self.copy_expr(e, [fill.re, *shape], pd)
        (im,) = self.copy_expr(e, [fill.im, *shape], pd)
        self.env[id(e.outputs[0])] = Parts(re, im)


def _strided_parts(t: TensorView) -> None:
    """Declare a part of a complex input: its order, every non-broadcast dim strided."""
    order = t.allocation.order if t.allocation is not None else t.logical
    contig = tuple(None if (d.is_broadcast or d.is_reduction) else False for d in order)
    t.allocation = AllocationDomain(tuple(order), contig)


def _same_span(a: TensorView, b: TensorView) -> bool:
    """Both parts have the same dims, broadcast in the same places."""
    return a.ndim == b.ndim and all(
        x.is_broadcast == y.is_broadcast for x, y in zip(a.shape_domain, b.shape_domain)
    )


def _spanning(t: TensorView, other: TensorView) -> TensorView:
    """``t`` over the dims of ``t`` and ``other`` together (its values where ``other``
    broadcasts it): a part of a complex output must cover every element of the output, as
    its other part does, not be stored once along a dim it lacks."""
    return pointwise("where", other, t, t)


def _constant_like(c: Val, like: TensorView, dtype: DataType) -> TensorView:
    """A tensor shaped as ``like`` (its broadcast dims too) holding the constant ``c``."""
    zero = Scalar(like.fusion, dtype, 0.0)
    t = pointwise("where", like, zero, zero)
    if isinstance(c, Scalar) and c.is_constant and c.value == 0:
        return t
    return cast(pointwise("add", t, c), dtype)


__all__ = ["ComplexLowering", "has_complex", "lower_complex"]
