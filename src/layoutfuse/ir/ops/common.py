"""Helpers shared by the op builders: operand conversion, dims, broadcasting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from ...dtypes import DataType
from ...errors import DefinitionError
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
    raise DefinitionError(f"{op}: cannot use {type(x).__name__} {x!r} as an operand")


def as_shape(fusion: Fusion, shape: object, op: str) -> list[Scalar]:
    """A shape argument (Vector, or list/tuple of ints and Scalars) as a list of Scalars."""
    if isinstance(shape, Vector):
        return list(shape.elements)
    if isinstance(shape, list | tuple):
        out: list[Scalar] = []
        for s in shape:
            v = as_val(fusion, s, op)
            if not isinstance(v, Scalar):
                raise DefinitionError(f"{op}: shape entries must be ints or Scalars, got {v!r}")
            out.append(v)
        return out
    raise DefinitionError(f"{op}: shape must be a Vector, list or tuple, got {type(shape).__name__}")


def static_value(s: Scalar) -> int | None:
    """The value of a Scalar when it is known at definition time, else None."""
    return s.value if s.is_constant else None


def normalize_dim(dim: int, ndim: int, op: str) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise DefinitionError(f"{op}: dim must be an int, got {dim!r}")
    if not -ndim <= dim < max(ndim, 1):
        raise DefinitionError(f"{op}: dim {dim} is out of range for a tensor of rank {ndim}")
    return dim % ndim if ndim else 0


def normalize_dims(dims: Sequence[int], ndim: int, op: str) -> tuple[int, ...]:
    out = [normalize_dim(d, ndim, op) for d in dims]
    if len(set(out)) != len(out):
        raise DefinitionError(f"{op}: dims {list(dims)} repeat a dim")
    return tuple(sorted(out))


def emit(fusion: Fusion, op: OpDef, inputs: Iterable[Val], outputs: Iterable[Val],
         **attrs: Any) -> Expr:
    return fusion.add_expr(Expr(op, tuple(inputs), tuple(outputs), dict(attrs)))


def clone_id(d: IterDomain) -> IterDomain:
    return IterDomain(d.extent, d.iter_type, d.expanded)


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
    return IterDomain(next(iter(statics)) if statics else None)


__all__ = ["Scalar", "TensorView", "Val", "Vector"]
