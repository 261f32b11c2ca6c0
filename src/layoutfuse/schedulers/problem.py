"""The concrete problem a scheduler sees: canonical groups and the accesses' dtypes.

Built at run time from real extents and strides (cheap: a few small lists), then
cached by the runtime under the inputs' signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..analysis.canonical import Group, family, pattern
from ..dtypes import DataType, itemsize

if TYPE_CHECKING:
    from .normalization import NormalizationParams
    from .pointwise import PointwiseParams
    from .reduction import ReductionParams


@dataclass(frozen=True)
class Problem:
    groups: tuple[Group, ...]  # innermost first
    n_loads: int  # accesses [0, n_loads) are loads,
    n_stores: int  # then stores, then coordinates (iota)
    dtypes: tuple[DataType, ...]  # per access
    max_offsets: tuple[int, ...]  # per access: largest element offset reached
    affine: tuple[bool, ...] = ()  # per access (empty: all): False where no stride pattern
    #   addresses it (generic mode, see analysis.index_walk)
    accumulators: int = 1  # partial results per tile element: one per reduction,
    #   three for a Welford (sibling reductions share a kernel)
    welford: bool = False  # some reduction is a Welford (var_mean), which counts its values
    passes: int = 1  # normalization: levels of dependent reductions, plus one
    loop: bool = True  # normalization: may walk rows too long for a tile twice
    rows: bool = True  # normalization: results are used again on the rows
    cross: int = 0  # normalization: reductions over the kept dims (partial column results)
    online: bool = False  # normalization: softmax's max and sum, one running pair
    #   (``Group.online``)
    based: tuple[int, ...] = ()  # affine accesses with a base offset ``b<a>`` (a slice's
    #   start, a select's index on their chain), bound at launch
    scan_op: str = ""  # scan: the per-row op (cumsum, argsort, topk)
    descending: bool = False  # scan: argsort's descending, topk's largest
    scan_keep: int = 0  # scan: elements each row stores along the dim (a topk's k)
    random: tuple[int, ...] = ()  # coordinates of random ops (Philox at their linear
    #   index, ``ir.ops.random``)
    scan_dtype: DataType | None = None  # scan: the dtype of the scanned values
    repeat: int = 1  # reduction: copies of each value in the reduced coordinates the
    #   groups leave out (no access moves along them: an expanded input's), ``NREP``
    loop_stores: int = 0  # reduction: the last stores are full-size outputs stored from
    #   the R loop (``KernelSpec.loop_stores``), not results
    math_ops: int = 0  # the segment's pointwise ops other than casts: its body's length

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(g.size for g in self.groups)

    @property
    def generic(self) -> bool:
        """Some access is not affine: groups are single coordinates, that access walks its chain."""
        return not all(self.affine)

    def is_affine(self, access: int) -> bool:
        return not self.affine or self.affine[access]

    @property
    def pattern(self) -> str:
        return pattern(self.groups)

    @property
    def family(self) -> str:
        return family(self.groups)

    @property
    def numel(self) -> int:
        n = 1
        for g in self.groups:
            n *= g.size
        return n

    @property
    def needs_int64(self) -> bool:
        return self.numel >= 2**31 or any(m >= 2**31 for m in self.max_offsets)

    def stores(self) -> range:
        return range(self.n_loads, self.n_loads + self.n_stores)

    def result_stores(self) -> range:
        """The stores of results: all but a reduction's loop stores."""
        return range(self.n_loads, self.n_loads + self.n_stores - self.loop_stores)

    def loop_store_accesses(self) -> range:
        return range(self.n_loads + self.n_stores - self.loop_stores, self.n_loads + self.n_stores)

    def innermost_group(self, access: int) -> int | None:
        """The group where ``access`` has its smallest non-zero stride."""
        best = None
        for k, g in enumerate(self.groups):
            s = abs(g.strides[access])
            if s and (best is None or s < abs(self.groups[best].strides[access])):
                best = k
        return best

    def vector_bytes(self, access: int) -> int:
        return itemsize(self.dtypes[access])

    def kept_and_reduced(self) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
        """Kept group indices, reduced group indices (innermost first), and the product of
        each's sizes."""
        xg = tuple(k for k, g in enumerate(self.groups) if not g.reduced)
        rg = tuple(k for k, g in enumerate(self.groups) if g.reduced)
        nx = nr = 1
        for k in xg:
            nx *= self.groups[k].size
        for k in rg:
            nr *= self.groups[k].size
        return xg, rg, nx, nr

    def narrowest_load_bytes(self) -> int:
        """The itemsize of the narrowest load (4 when nothing is loaded)."""
        return min(self.vector_bytes(a) for a in range(self.n_loads)) if self.n_loads else 4


def stride_flags(p: Problem) -> tuple[tuple[tuple[bool, ...], ...], tuple[tuple[bool, ...], ...]]:
    """``[access][group]`` flags: stride 0, stride 1 (both False for an access that is not
    affine: its group strides only ordered the groups)."""
    zero = tuple(
        tuple(p.is_affine(a) and g.strides[a] == 0 for g in p.groups) for a in range(len(p.dtypes))
    )
    unit = tuple(
        tuple(p.is_affine(a) and g.strides[a] == 1 for g in p.groups) for a in range(len(p.dtypes))
    )
    return zero, unit


def generic_fields(p: Problem) -> dict[str, Any]:
    """The params fields of generic mode: the per-access affine flags and the iteration
    coordinate of every (single-coordinate) group; the accesses with a base offset. Empty
    when every access is affine and none has a base."""
    based = {"based": p.based} if p.based else {}
    if not p.generic:
        return based
    return {
        "generic": True,
        "affine": p.affine,
        "group_dims": tuple(g.dims[0] for g in p.groups),
        **based,
    }


def is_affine(params: PointwiseParams | ReductionParams | NormalizationParams, access: int) -> bool:
    """Whether ``access`` is addressed by group strides in the kernel ``params`` describe."""
    return not params.generic or params.affine[access]


def max_offset(extents: Sequence[int], strides: Sequence[int]) -> int:
    return sum((n - 1) * abs(s) for n, s in zip(extents, strides) if n > 0)


def store_group(p: Problem) -> int | None:
    """The kept group every store walks with stride 1 (None: no store, or they differ)."""
    found = {
        next((k for k, g in enumerate(p.groups) if not g.reduced and g.strides[a] == 1), None)
        for a in p.result_stores()
    }
    return found.pop() if len(found) == 1 else None
