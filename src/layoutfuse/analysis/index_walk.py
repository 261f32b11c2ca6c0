"""Per-element addresses of accesses that no stride pattern expresses.

An access is *affine* when its real strides move forward along its chain
(``accesses.load_strides``). Otherwise (a reshape that is not a view of the actual
strides) its address is computed element by element: the iteration tensor's
per-dim indices go through every shape op's ``index_map``, from the iteration
side to the memory tensor, and the address is ``sum(index_i * real_stride_i)``.

The walk is generic over an index algebra ``ix`` (``zero``, ``one``, ``add``,
``mul``, ``floordiv``, ``mod``, ``extent(tv, dim)``, ``scalar(s)``, ``in_range(a, n)``,
``indirect(expr, out_idx)`` with ``chain`` set before each step): ``IntIndex`` evaluates it
with numbers (here, for the local strides that order the iteration space); the
code generator's string algebra emits the same walk as Triton expressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ir.opdef import split_masked
from .accesses import Access, made_one, unit_broadcasts


@dataclass
class Walk:
    """An access's walk: its memory indices, the conditions under which it is read at all
    (those of every masked map on its chain: pads), and each pad's own condition, by the
    key of the chain from the iteration side to that pad's output (``chain_key``)."""

    indices: list
    valid: list = field(default_factory=list)
    predicates: dict[tuple[int, ...], list] = field(default_factory=dict)


def chain_key(expr: Any, chain: Sequence) -> tuple[int, ...]:
    """The key of the masked op ``expr`` reached along ``chain`` (the exprs before it)."""
    return (*(id(e) for e in chain), id(expr))


def walk(access: Access, root_idx: Sequence, ix) -> Walk:
    """The walk of ``access`` from the iteration tensor's ``root_idx`` through its chain."""
    if access.backward:
        raise ValueError("an epilogue access has no index walk from the iteration side")
    idx = list(root_idx)
    out = Walk([])
    for k, e in enumerate(access.chain):
        ix.chain = access.chain[:k]
        idx, valid = split_masked(
            e.op.index_map(e, _zero_unit_broadcasts(idx, e.outputs[0], ix), ix)
        )
        if valid:
            out.predicates[chain_key(e, access.chain[:k])] = valid
            out.valid.extend(valid)
    out.indices = _zero_unit_broadcasts(idx, access.tv, ix)
    return out


def memory_indices(access: Access, root_idx: Sequence, ix) -> list:
    """The memory tensor's per-dim indices for the iteration tensor's ``root_idx``."""
    return walk(access, root_idx, ix).indices


def base_offset(
    access: Access, real_strides: Sequence[int], extents: dict[int, int], scalars: dict, rank: int
) -> int:
    """The element offset of the access at iteration index 0 (a slice's start, a select's
    index) over a rank-``rank`` iteration space, ``scalars`` giving runtime scalars by id."""
    mem = memory_indices(access, [0] * rank, IntIndex(extents, scalars))
    return sum(i * s for i, s in zip(mem, real_strides))


def _zero_unit_broadcasts(idx: list, tv, ix) -> list:
    """A pointwise op broadcasts ``tv``'s extent-1 broadcast dims: their index is 0 (those
    declared, and those the run made: ``ix.is_made``)."""
    zero = unit_broadcasts(tv)
    return [ix.zero if i in zero or ix.is_made(tv, i) else x for i, x in enumerate(idx)]


class IntIndex:
    """The index algebra over Python ints, with the run's bound extents."""

    zero = 0
    one = 1

    def __init__(self, extents: dict[int, int], scalars: dict | None = None):
        self.extents = extents
        self.scalars = scalars  # None: runtime scalars count 0 (local strides only)
        self.chain: tuple = ()
        self._made = made_one(extents)  # dims the run made broadcast (``runtime.extents``)

    def is_made(self, tv, i: int) -> bool:
        return tv.shape_domain[i].uid in self._made

    @staticmethod
    def add(a: int, b: int) -> int:
        return a + b

    @staticmethod
    def mul(a: int, b: int) -> int:
        return a * b

    @staticmethod
    def floordiv(a: int, b: int) -> int:
        return a // b

    @staticmethod
    def mod(a: int, b: int) -> int:
        return a % b

    def extent(self, tv, dim: int) -> int:
        return self.extents[tv.shape_domain[dim].uid]

    def scalar(self, s) -> int:
        if isinstance(s, int):
            return s
        if s.is_constant:
            return int(s.value)
        return 0 if self.scalars is None else int(self.scalars[id(s)])

    @staticmethod
    def in_range(a: int, n: int) -> bool:
        return 0 <= a < n

    def indirect(self, expr, out_idx) -> int:
        """A loaded index is not known here: a stand-in that only orders the iteration
        space (an access through it is never affine): the output's index along the
        indexed dim's own output dim, as if the gather were the identity. The data's
        stride along that dim then orders it, as it does the other dims: a
        take_along_axis within rows keeps the rows' stride-1 dim innermost (its
        index and output are contiguous there too; a stand-in of 0 sorted it outermost
        and tiled [32, 32] transposes at 23% of torch.compile)."""
        j = expr.attrs["arg_dims"][expr.attrs["dim"]]
        return out_idx[j] if 0 <= j < len(out_idx) else 0


def local_strides(
    access: Access, real_strides: Sequence[int], extents: dict[int, int], rank: int
) -> tuple[int, ...]:
    """How far the address moves when one iteration index goes from 0 to 1 (the others 0).

    Exact for an affine access; for any other, a stand-in that orders the
    iteration space (canonical groups are never merged then, so it never addresses).
    """
    ix = IntIndex(extents)
    base = sum(i * s for i, s in zip(memory_indices(access, [0] * rank, ix), real_strides))
    out = []
    for d in range(rank):
        root_idx = [1 if k == d else 0 for k in range(rank)]
        mem = memory_indices(access, root_idx, ix)
        out.append(sum(i * s for i, s in zip(mem, real_strides)) - base)
    return tuple(out)
