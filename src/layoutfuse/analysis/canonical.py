"""Canonical form of a kernel's iteration space, decided by the dominant input's layout.

Input: the extents of the iteration coordinates, which of them are reduced, and
for every memory access (loads first, ordered by bytes read, then stores) its
strides over those coordinates. Output: a short list of groups, innermost first,
each reduced (R) or kept (X), with every access's stride for the group.

The order is the dominant load's memory order (stride descending, ties broken by
the next accesses, then by position). Size-1 coordinates are dropped. Adjacent
coordinates of the same kind merge when they are dense with each other for every
access. Stores never decide the order: the output layout only changes the store.

A kernel with an access that is not affine (see ``index_walk``) runs in generic
mode: ``merge=False`` keeps every coordinate its own group, and ``order_by``
names the accesses whose strides decide the order (the affine loads first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    size: int
    reduced: bool
    strides: tuple[int, ...]  # one per access
    dims: tuple[int, ...]  # iteration coordinates merged here, innermost first

    @property
    def kind(self) -> str:
        return "R" if self.reduced else "X"


def dim_order(
    extents: Sequence[int],
    strides: Sequence[Sequence[int]],
    n_loads: int,
    order_by: Sequence[int] | None = None,
) -> list[int]:
    """Coordinates innermost first, by the loads' strides (the dominant load first), or by
    the accesses ``order_by`` lists."""
    dims = [d for d in range(len(extents)) if extents[d] != 1]
    keys_from = (
        list(order_by)
        if order_by
        else list(range(n_loads))
        if n_loads
        else list(range(len(strides)))
    )

    def key(d):
        return tuple(abs(strides[a][d]) if strides[a][d] != 0 else float("inf") for a in keys_from)

    # a stride-0 (broadcast) coordinate carries no layout information for that access:
    # it sorts as outermost for it, so the accesses that do read it decide.
    return sorted(dims, key=lambda d: (key(d), -d))


def canonicalize(
    extents: Sequence[int],
    reduced: Sequence[bool],
    strides: Sequence[Sequence[int]],
    n_loads: int,
    merge: bool = True,
    order_by: Sequence[int] | None = None,
) -> tuple[Group, ...]:
    order = dim_order(extents, strides, n_loads, order_by)
    groups: list[Group] = []
    for d in order:
        st = tuple(s[d] for s in strides)
        if groups and merge:
            g = groups[-1]
            if g.reduced == reduced[d] and all(
                st[a] == g.strides[a] * g.size for a in range(len(strides))
            ):
                groups[-1] = Group(g.size * extents[d], g.reduced, g.strides, g.dims + (d,))
                continue
        groups.append(Group(extents[d], reduced[d], st, (d,)))
    return tuple(groups)


def pattern(groups: Sequence[Group]) -> str:
    """Kinds innermost first, e.g. "RX" for a plain inner reduction of a row-major matrix."""
    return "".join(g.kind for g in groups)


def family(groups: Sequence[Group]) -> str:
    """``inner`` (stride-1 side reduced, all R inside all X), ``outer`` (stride-1 side kept,
    all X inside all R), else ``mixed``. Only reduced groups count for a reduction."""
    p = pattern(groups)
    if "R" not in p:
        return "pointwise"
    if p.startswith("R") and "XR" not in p:
        return "inner"
    if p.startswith("X") and "RX" not in p:
        return "outer"
    return "mixed"
