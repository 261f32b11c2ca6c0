"""Canonical form of a kernel's iteration space, decided by the dominant input's layout.

Input: the extents of the iteration coordinates, which of them are reduced, and for
every memory access (loads first, then stores) its strides over those coordinates.
Output: a short list of groups, innermost first, each reduced (R) or kept (X), with
every access's stride for the group.

The order is the dominant load's memory order (the load that moves the most elements;
stride descending, ties broken by the next accesses, then by position). Size-1
coordinates are dropped. Adjacent coordinates of the same kind merge when they are
dense with each other for every access. Stores do not decide the order while the loads
move the data: the output layout only changes the store. Where they do not
(*store-led*: every load reads at most 1/``STORE_LED_RATIO`` of the elements a store
writes, as a softmax of an expanded input, which reads one row and writes it along
169287 columns; a fill), the stores decide, then the loads: the bytes are the stores'.
A kept coordinate along which every access has stride 0 is dropped (the same values
would be computed into the same places).

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


STORE_LED_RATIO = 8


def store_led(
    extents: Sequence[int], strides: Sequence[Sequence[int]], n_loads: int, n_stores: int
) -> bool:
    """Whether every load reads at most 1/``STORE_LED_RATIO`` of the elements the largest
    store writes (elements along the coordinates where an access's stride is not 0)."""
    if not n_stores:
        return False

    stored = max(moved(extents, strides[a]) for a in range(n_loads, n_loads + n_stores))
    reads = max((moved(extents, strides[a]) for a in range(n_loads)), default=0)
    return reads * STORE_LED_RATIO <= stored


def moved(extents: Sequence[int], strides: Sequence[int]) -> int:
    """Elements an access moves: the extents of the coordinates its strides move along."""
    n = 1
    for e, s in zip(extents, strides):
        n *= e if s != 0 else 1
    return n


def dim_order(
    extents: Sequence[int],
    strides: Sequence[Sequence[int]],
    n_loads: int,
    order_by: Sequence[int] | None = None,
    n_stores: int = 0,
) -> list[int]:
    """Coordinates innermost first, by the loads' strides (the dominant load first), or by
    the accesses ``order_by`` lists; store-led (``store_led``), by the stores' strides
    first."""
    dims = [d for d in range(len(extents)) if extents[d] != 1]
    # the load that moves the most elements first (a broadcast mean or bias never
    # decides over the rows it is broadcast along), in position order among equals
    loads = sorted(range(n_loads), key=lambda a: -moved(extents, strides[a]))
    keys_from = list(order_by) if order_by else loads if n_loads else list(range(len(strides)))
    if not order_by and store_led(extents, strides, n_loads, n_stores):
        keys_from = list(range(n_loads, n_loads + n_stores)) + loads

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
    n_stores: int = 0,
) -> tuple[Group, ...]:
    order = dim_order(extents, strides, n_loads, order_by, n_stores)
    if merge:
        # a kept coordinate no access moves along (an expanded input normalized into an
        # expanded output) repeats the same values into the same places: dropped, the
        # kernel computes and stores them once (a reduced one still counts its extent)
        order = [d for d in order if reduced[d] or any(s[d] != 0 for s in strides)]
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
