"""The concrete problem a scheduler sees: canonical groups and the accesses' dtypes.

Built at run time from real extents and strides (cheap: a few small lists), then
cached by the runtime under the inputs' signature.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.canonical import Group, family, pattern
from ..dtypes import DataType, itemsize


@dataclass(frozen=True)
class Problem:
    groups: tuple[Group, ...]          # innermost first
    n_loads: int                       # accesses [0, n_loads) are loads,
    n_stores: int                      # then stores, then coordinates (iota)
    dtypes: tuple[DataType, ...]       # per access
    max_offsets: tuple[int, ...]       # per access: largest element offset reached

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


def max_offset(extents, strides) -> int:
    return sum((n - 1) * abs(s) for n, s in zip(extents, strides) if n > 0)
