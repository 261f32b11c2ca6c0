"""Library ops: matmul-family ops that run as a segment of their own, through torch.

layoutfuse writes no GEMM and no attention kernel. A library op is cut out of the
fusion by the segmenter (``segmenter/segments.py``) and run by the runtime as one call
of its row's ``run``, which calls torch (cuBLAS, cuDNN / flash attention on the GPU);
the generated kernels before and after it read and write its operands and results as
ordinary tensors in memory. This is nvFuser's expression-evaluator segment.

A ``LibraryRow`` is the op's one row: its operand names (``operands``; optional ones may
be absent from an expr), its shape rule (``shapes``: operand shapes, whose dims are
ints, or None where unknown at definition time, to output shapes), its dtype rule
(``dtypes``), and ``run``: its meaning in torch, which is also its execution (the
reference evaluator calls the same function). ``library`` names what torch calls, for
the segment's reason.

An expr of a library op lists its present operands as inputs and their names in
``attrs["names"]``; the row's other arguments (``dtype``, flags) are attrs too.
Scalar operands (``dropout_p``, ``is_causal``, ``scale``) are Scalar inputs, read at
run time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ...dtypes import DataType
from ...errors import DefinitionError
from ..opdef import OpDef, OpKind, register
from ..values import TensorView, Val
from .common import emit, factory_id, fusion_of

if TYPE_CHECKING:
    from ..fusion import Expr

Dims = tuple[int | None, ...]
"""A shape in a shape rule: an int per dim, or None where it is not known yet."""

ShapeRule = Callable[[Mapping[str, Dims], Mapping[str, Any]], list[Dims]]
DtypeRule = Callable[[Mapping[str, DataType], Mapping[str, Any]], list[DataType]]
Run = Callable[[Mapping[str, Any], Mapping[str, Any]], Sequence[torch.Tensor]]


@dataclass(frozen=True)
class LibraryRow:
    """One library op (see the module docstring)."""

    name: str
    operands: tuple[str, ...]
    shapes: ShapeRule
    dtypes: DtypeRule
    run: Run
    library: str
    doc: str = ""

    @property
    def reason(self) -> str:
        """Why the segmenter cuts around the op (``fd.segment()`` prints it)."""
        return f"{self.name}: runs through torch ({self.library})"

    def execute(self, expr: Expr, args: Sequence[Any]) -> list[torch.Tensor]:
        """The op's results for operand values ``args`` (in ``expr.inputs`` order)."""
        values = dict(zip(expr.attrs["names"], args))
        attrs = {k: v for k, v in expr.attrs.items() if k != "names"}
        return list(self.run(values, attrs))

    def output_shapes(self, expr: Expr, shapes: Sequence[tuple[int, ...]]) -> list[Dims]:
        """The outputs' shapes for the tensor operands' run-time ``shapes`` (in the order
        of the expr's tensor inputs)."""
        tensors = [n for n, v in zip(expr.attrs["names"], expr.inputs) if isinstance(v, TensorView)]
        attrs = {k: v for k, v in expr.attrs.items() if k != "names"}
        return self.shapes(dict(zip(tensors, shapes)), attrs)


ROWS: dict[str, LibraryRow] = {}
OPDEFS: dict[str, OpDef] = {}


def library_row(row: LibraryRow) -> LibraryRow:
    """Register ``row`` and its OpDef (kind LIBRARY; its reference is ``row.execute``)."""
    ROWS[row.name] = row
    OPDEFS[row.name] = register(OpDef(row.name, OpKind.LIBRARY, row.execute, doc=row.doc))
    return row


def row_of(expr: Expr) -> LibraryRow:
    return ROWS[expr.op.name]


def library_op(name: str, operands: Mapping[str, Val | None], **attrs: Any) -> list[TensorView]:
    """Apply library row ``name`` to ``operands`` (by name; None: absent) with ``attrs``;
    its output TensorViews. Static extents are propagated; an output dim of static extent
    1 is a broadcast dim (as a size-1 input dim is)."""
    row = ROWS[name]
    present = {n: v for n, v in operands.items() if v is not None}
    unknown = sorted(set(present) - set(row.operands))
    if unknown:
        raise DefinitionError(f"{name}: unknown operands {unknown}")
    fusion = fusion_of(*present.values())
    tensors = {n: v for n, v in present.items() if isinstance(v, TensorView)}
    shapes = row.shapes({n: t.static_shape for n, t in tensors.items()}, attrs)
    dtypes = row.dtypes({n: t.dtype for n, t in tensors.items()}, attrs)
    outs = [
        TensorView(fusion, [factory_id(e, made=False) for e in shape], dtype)
        for shape, dtype in zip(shapes, dtypes)
    ]
    names = tuple(n for n in row.operands if n in present)
    emit(fusion, OPDEFS[name], [present[n] for n in names], outs, names=names, **attrs)
    return outs


# --- shape helpers -------------------------------------------------------------------------
def check_rank(op: str, arg: str, shape: Dims, ranks: Sequence[int]) -> None:
    if len(shape) not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise DefinitionError(f"{op}: {arg} must have rank {want}, got rank {len(shape)}")


def same_extent(op: str, what: str, a: int | None, b: int | None) -> int | None:
    """Two extents that must agree (None: unknown yet, checked at run time)."""
    if a is not None and b is not None and a != b:
        raise DefinitionError(f"{op}: {what} disagree: {a} and {b}")
    return a if a is not None else b


def broadcast_dims(op: str, a: Dims, b: Dims) -> Dims:
    """torch's broadcast of batch dims ``a`` and ``b`` (aligned at the right)."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out: list[int | None] = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        else:
            out.append(same_extent(op, "batch dims", x, y))
    return tuple(out)


def matmul_shape(op: str, a: Dims, b: Dims) -> Dims:
    """torch.matmul's output shape: 1-D operands are a row / a column, removed after."""
    if not a or not b:
        raise DefinitionError(f"{op}: operands must have rank >= 1, got ranks {len(a)}, {len(b)}")
    k1 = a[-1]
    k2 = b[0] if len(b) == 1 else b[-2]
    same_extent(op, "contracted extents (a's last dim, b's second to last)", k1, k2)
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(b) == 1:
        return tuple(a[:-1])
    if len(a) == 1:
        return tuple(b[:-2]) + (b[-1],)
    return broadcast_dims(op, a[:-2], b[:-2]) + (a[-2], b[-1])


def float_result(op: str, *dtypes: DataType) -> DataType:
    """The common dtype of matmul operands (they must agree, as torch requires)."""
    if len(set(dtypes)) != 1:
        raise DefinitionError(f"{op}: operands have different dtypes {list(dtypes)}")
    return dtypes[0]


__all__ = [
    "OPDEFS",
    "ROWS",
    "LibraryRow",
    "broadcast_dims",
    "library_op",
    "library_row",
    "matmul_shape",
    "row_of",
]
