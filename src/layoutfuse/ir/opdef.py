"""OpDef: the one row that defines an op, and the registry of all rows.

A row carries the op's name, its kind, its rule for output shape and dtype
(``build``), its exact meaning in torch (``reference``) and, for pointwise ops,
its Triton emission (``triton``: a function of the operand expressions).
Shape ops carry ``index_map`` instead: how an output index maps to an input
index, which is all a kernel needs to read through them.
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
    WRITE = "write"  # scatter, index_put_accumulate: a copy of the first input, then writes


class IndexAlgebra(Protocol):
    """What an ``index_map`` computes with: index expressions of one kind (ints, strings)."""

    zero: Any
    one: Any

    def add(self, a: Any, b: Any) -> Any: ...
    def mul(self, a: Any, b: Any) -> Any: ...
    def floordiv(self, a: Any, b: Any) -> Any: ...
    def mod(self, a: Any, b: Any) -> Any: ...
    def extent(self, tv: TensorView, dim: int) -> Any: ...

    # An indexed read (an op whose TensorView inputs after the first are index operands,
    # read in its output's coordinates): the value of ``expr.inputs[1]`` at ``out_idx``,
    # a negative one counted from the end of the dim it indexes. ``chain`` holds the exprs
    # between the iteration tensor and ``expr`` (``analysis.index_walk`` sets it), which
    # is where a kernel finds that value among its own.
    chain: tuple[Expr, ...]

    def indirect(self, expr: Expr, out_idx: Sequence[Any]) -> Any: ...


# (expr, the output's per-dim indices, the algebra) -> the input's per-dim indices
IndexMap = Callable[["Expr", Sequence[Any], IndexAlgebra], list[Any]]


@dataclass(frozen=True, eq=False)
class OpDef:
    name: str
    kind: OpKind
    reference: Callable[..., Any]
    triton: Callable[..., str] | None = None
    index_map: IndexMap | None = None
    doc: str = ""

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
