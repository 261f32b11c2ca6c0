"""OpDef: the one row that defines an op, and the registry of all rows.

A row carries the op's name, its kind, its rule for output shape and dtype
(``build``), its exact meaning in torch (``reference``) and, for pointwise ops,
its Triton emission (``triton``: a function of the operand expressions).
Shape ops carry ``index_map`` instead: how an output index maps to an input
index, which is all a kernel needs to read through them. A map may return a
``MaskedIndex`` (the indices and the conditions under which the output position reads
the input at all: pad, and the pads cat is built from); elsewhere the op's value is its
fill, and the kernel's load of the input is masked by the same conditions.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .fusion import Expr
    from .values import TensorView


class OpKind(enum.Enum):
    POINTWISE = "pointwise"
    REDUCTION = "reduction"  # sum, max, min, prod
    WELFORD = "welford"  # var, var_mean, welford: (mean, m2, n) statistics
    SHAPE = "shape"  # permute, reshape, broadcast, squeeze, expand, set
    CREATION = "creation"  # full, iota
    SCALAR = "scalar"  # scalar arithmetic and size queries, evaluated on the host
    LIBRARY = "library"  # matmul, attention: a segment of its own that calls torch (ops/library.py)
    SCAN = "scan"  # per-row ops along one dim: cumsum, argsort, topk (``ops.scans``)


class IndexAlgebra(Protocol):
    """What an ``index_map`` computes with: index expressions of one kind (ints, strings)."""

    zero: Any
    one: Any

    def add(self, a: Any, b: Any) -> Any: ...
    def mul(self, a: Any, b: Any) -> Any: ...
    def floordiv(self, a: Any, b: Any) -> Any: ...
    def mod(self, a: Any, b: Any) -> Any: ...
    def extent(self, tv: TensorView, dim: int) -> Any: ...
    def scalar(self, s: Any) -> Any: ...  # an int, or an index-valued Scalar (slice start)
    def in_range(self, a: Any, n: Any) -> Any: ...  # the condition ``0 <= a < n``


@dataclass(frozen=True)
class MaskedIndex:
    """An index map's result where only some output positions read the input.

    ``indices``: the input's per-dim indices, meaningful where every condition of
    ``valid`` (built with ``ix.in_range``) holds; at the other positions the op's value
    is its fill and the input is not read.
    """

    indices: list[Any]
    valid: list[Any]


# (expr, the output's per-dim indices, the algebra) -> the input's per-dim indices
IndexMap = Callable[["Expr", Sequence[Any], IndexAlgebra], "list[Any] | MaskedIndex"]


def split_masked(result: list[Any] | MaskedIndex) -> tuple[list[Any], list[Any]]:
    """(indices, validity conditions) of an index map's result (no condition: all valid)."""
    if isinstance(result, MaskedIndex):
        return list(result.indices), list(result.valid)
    return list(result), []


@dataclass(frozen=True, eq=False)
class OpDef:
    name: str
    kind: OpKind
    reference: Callable[..., Any]
    triton: Callable[..., str] | None = None
    index_map: IndexMap | None = None
    doc: str = ""
    # a shape op's tensor inputs read at its own output coordinates, not through its
    # index map (a pad's tensor fill: the earlier inputs of a cat)
    same_coordinate_inputs: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return f"OpDef({self.name}, {self.kind.value})"


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is registered twice")
    REGISTRY[op.name] = op
    return op


def get(name: str) -> OpDef:
    return REGISTRY[name]
