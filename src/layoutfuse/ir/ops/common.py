"""Helpers shared by the op builders: operand conversion, dims, broadcasting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from ...dtypes import DataType, is_integral
from ...errors import ArgumentTypeError, DefinitionError, describe
from ..domain import IterDomain, IterType
from ..fusion import Expr, Fusion, current_fusion
from ..opdef import OpDef
from ..values import Scalar, TensorView, Val, Vector

Operand = Val | bool | int | float | complex
"""An op's operand: a Val, or a Python number (it becomes a constant Scalar)."""

Shape = Vector | Sequence[Scalar | int]
"""A shape argument: a Vector, or a list or tuple of ints and Scalars."""


def fusion_of(*operands: object) -> Fusion:
    for x in operands:
        if isinstance(x, Val):
            return x.fusion
        if isinstance(x, list | tuple):
            for y in x:
                if isinstance(y, Val):
                    return y.fusion
    return current_fusion()


def check_tensor(x: object, op: str, arg: str = "arg") -> TensorView:
    """``x``, which must be a TensorView (an input of op ``op``)."""
    if not isinstance(x, TensorView):
        raise ArgumentTypeError(f"{op}: {arg} must be a TensorView, got {describe(x)}")
    return x


def as_val(fusion: Fusion, x: object, op: str) -> Val:
    """A Val for ``x``; Python numbers become constant Scalars."""
    if isinstance(x, Val):
        return x
    if isinstance(x, bool):
        return Scalar(fusion, DataType.Bool, x)
    if isinstance(x, int):
        return Scalar(fusion, DataType.Int, x)
    if isinstance(x, float):
        return Scalar(fusion, DataType.Double, x)
    if isinstance(x, complex):
        return Scalar(fusion, DataType.ComplexDouble, x)
    raise ArgumentTypeError(f"{op}: cannot use {describe(x)} as an operand")


def as_shape(
    fusion: Fusion, shape: object, op: str, arg: str = "shape", minus_one: str | None = None
) -> list[Scalar]:
    """A shape argument (Vector, or list/tuple of ints and Scalars) as a list of Scalars.

    Static extents must be >= 0; -1 too where ``minus_one`` says what it means for op
    ``op`` (reshape: inferred; expand, broadcast_in_dim: the input's extent is kept).
    """
    v: Scalar | int | None  # a Scalar in the first loop, a static extent in the second
    if isinstance(shape, Vector):
        out = list(shape.elements)
    elif isinstance(shape, list | tuple):
        out = []
        for k, s in enumerate(shape):
            v = s if isinstance(s, Scalar) and is_integral(s.dtype) else None
            if v is None and (not isinstance(s, int) or isinstance(s, bool)):
                raise ArgumentTypeError(
                    f"{op}: {arg}[{k}] must be an int or an integer Scalar, got {describe(s)}"
                )
            out.append(v if v is not None else Scalar(fusion, DataType.Int, s))
    else:
        raise ArgumentTypeError(
            f"{op}: {arg} must be a Vector, list or tuple of ints and "
            f"Scalars, got {describe(shape)}"
        )
    values = [static_value(s) for s in out]
    for k, v in enumerate(values):
        if v is None or v >= 0 or (v == -1 and minus_one is not None):
            continue
        allowed = f"or -1 ({minus_one})" if minus_one else "(-1 has no meaning here)"
        raise DefinitionError(
            f"{op}: {arg} {values} has the extent {v} at index {k}; extents are >= 0 {allowed}"
        )
    return out


def static_value(s: Scalar) -> int | None:
    """The value of a Scalar when it is known at definition time, else None."""
    return s.value if s.is_constant else None


def int_sequence(x: object, op: str, arg: str) -> list[int]:
    """``x``, a list or tuple of ints (dims, a permutation, a stride order), as a list."""
    if not isinstance(x, list | tuple):
        hint = f"; for one dim pass [{x}]" if isinstance(x, int) and not isinstance(x, bool) else ""
        raise ArgumentTypeError(f"{op}: {arg} must be a list of ints, got {describe(x)}{hint}")
    for k, v in enumerate(x):
        if not isinstance(v, int) or isinstance(v, bool):
            raise ArgumentTypeError(f"{op}: {arg}[{k}] must be an int, got {describe(v)}")
    return list(x)


def normalize_dim(dim: int, ndim: int, op: str, arg: str = "dim") -> int:
    """``dim`` in ``range(ndim)`` (negative dims count from the end); ``arg`` names it in
    errors (``dim``, or ``dims [..]`` when it is an entry of a list)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise ArgumentTypeError(f"{op}: {arg} must be an int, got {describe(dim)}")
    if not -ndim <= dim < max(ndim, 1):
        raise DefinitionError(f"{op}: {arg} {dim} is out of range for an input of rank {ndim}")
    return dim % ndim if ndim else 0


def normalize_dims(dims: Sequence[int], ndim: int, op: str, arg: str = "dims") -> tuple[int, ...]:
    """``dims`` normalized and sorted; out of range or repeated dims are errors naming ``arg``."""
    out = [normalize_dim(d, ndim, op, f"{arg} {list(dims)}: dim") for d in dims]
    if len(set(out)) != len(out):
        raise DefinitionError(f"{op}: {arg} {list(dims)} repeat a dim")
    return tuple(sorted(out))


def emit(
    fusion: Fusion, op: OpDef, inputs: Iterable[Val], outputs: Iterable[Val], **attrs: Any
) -> Expr:
    return fusion.add_expr(Expr(op, tuple(inputs), tuple(outputs), dict(attrs)))


def factory_id(extent: int | None, made: bool = True) -> IterDomain:
    """A dim of a tensor a factory makes (full, the random ops, a library result): a
    broadcast dim where its extent is the constant 1, as nvFuser's factories make it, so
    it broadcasts against any extent; else an iteration dim, symbolic where ``made`` (a
    factory's run-time extent; a library result's dims follow its operands')."""
    if extent == 1:
        return IterDomain(extent, IterType.BROADCAST)
    return IterDomain(extent, symbolic=made)


def clone_id(d: IterDomain) -> IterDomain:
    return IterDomain(d.extent, d.iter_type, d.expanded, d.symbolic)


def combine_ids(ids: list[IterDomain], op: str, dim: int) -> IterDomain:
    """The output axis of a pointwise op whose operands have axes ``ids`` at ``dim``."""
    concrete = [d for d in ids if not d.is_broadcast]
    if not concrete:
        ext = [d.extent for d in ids]
        if any(e is None for e in ext):
            return IterDomain(None, IterType.BROADCAST, expanded=True)
        m = max(cast(list[int], ext))  # no None: returned above
        return IterDomain(m, IterType.BROADCAST, expanded=m != 1)
    statics = {d.extent for d in concrete if d.extent is not None}
    expanded = {d.extent for d in ids if d.is_broadcast and d.expanded and d.extent is not None}
    if len(statics) > 1 or (statics and expanded and expanded != statics):
        raise DefinitionError(
            f"{op}: operands have incompatible extents {sorted(statics | expanded)} at dim {dim}"
        )
    # symbolic where every operand's axis there is (an iteration axis wins, as in nvFuser)
    made = all(d.symbolic for d in concrete)
    return IterDomain(next(iter(statics)) if statics else None, symbolic=made)


__all__ = ["Scalar", "TensorView", "Val", "Vector"]
