"""Which memory a segment's kernel reads and writes, and along which chain of shape ops.

A kernel iterates over the coordinates of one TensorView (the *iteration
tensor*: a pointwise segment's output, or a reduction's input). Every tensor
upstream of it is reached backward through pointwise ops (which keep
coordinates) and shape ops (which change them). A *load* is a segment input
reached along such a chain; its strides over the iteration coordinates come from
moving its real strides forward along the chain (``strides.forward``); where no
stride pattern can express it (a reshape that is not a view), the access is not
affine and walks its chain per element (``index_walk``). A store of an
intermediate output works the same way.

After a reduction, the epilogue lives in the reduction output's coordinates:
an epilogue output is stored by moving its strides *backward* to them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..ir import Expr, OpKind, TensorView, Val
from ..ir.ops.movement import MOVEMENT_OPS
from . import strides as st


@dataclass(frozen=True, eq=False)
class Access:
    """Memory ``tv`` addressed over the iteration coordinates through ``chain``.

    ``chain`` lists the shape exprs from the iteration side to ``tv`` (load), or
    from ``tv``'s coordinates to the iteration side (epilogue store, ``backward``).
    """

    tv: TensorView
    chain: tuple[Expr, ...]
    store: bool = False
    backward: bool = False
    value: TensorView | None = None  # what a store writes, when not ``tv``'s own value
    #   (an indexed write stores its src into its output; the copy before it, its arg)
    cross: bool = False  # a column result of a normalization kernel (``Group.cross``),
    #   stored by its finishing kernel: strides over the reduced coordinates alone

    def key(self):
        return (id(self.tv), tuple(id(e) for e in self.chain), self.store)


def is_shape_expr(e: Expr) -> bool:
    return e.op.kind is OpKind.SHAPE


def index_operands(e: Expr) -> list[TensorView]:
    """A shape op's TensorView inputs after the first: an indexed read's index operands,
    read in the op's output coordinates (``ir.ops.indexing``). A pad's tensor fill (cat),
    read at the same coordinates but as a value, not an address, is not one
    (``OpDef.same_coordinate_inputs``)."""
    if e.op.kind is not OpKind.SHAPE:
        return []
    fills = e.op.same_coordinate_inputs
    return [v for k, v in enumerate(e.inputs) if k and k not in fills and isinstance(v, TensorView)]


def is_indirect(chain: tuple[Expr, ...]) -> bool:
    """Whether ``chain`` passes an indexed read (or write): its addresses depend on loaded
    values, so a store along it writes only the positions read (only an indexed write's
    own store takes one)."""
    return any(index_operands(e) or e.op.kind is OpKind.WRITE for e in chain)


def indexed_by(chain: tuple[Expr, ...], targets: Collection[int], memory: Collection[int]) -> bool:
    """Whether an indexed read along ``chain`` takes its index from one of ``targets``
    (tensor ids, results the kernel computes), through the pointwise and shape ops the
    kernel computes (not through ``memory``): that read can only be made once those
    results are done (a gather indexed by its own row's prod)."""
    stack = [i for e in chain for i in index_operands(e)]
    seen: set[int] = set()
    while stack:
        tv = stack.pop()
        if id(tv) in targets:
            return True
        if id(tv) in seen or id(tv) in memory or tv.definition is None:
            continue
        seen.add(id(tv))
        e = tv.definition
        if e.op.kind in (OpKind.SHAPE, OpKind.POINTWISE):
            stack.extend(v for v in e.inputs if isinstance(v, TensorView))
    return False


def stores_every_position(chain: tuple[Expr, ...]) -> bool:
    """Whether a store along ``chain`` (from a kernel's coordinates back to a tensor upstream
    of them) writes every position of that tensor: only the view-like shape ops (set,
    permute, reshape, broadcasts, squeeze) map the coordinates onto all of it. A slice or a
    select reaches part of its input, a pad that crops too, a cat (pads filled by one
    another) each input's range, and an indexed read the positions its index holds: a
    tensor upstream of those is stored by a kernel of its own."""
    return not is_indirect(chain) and not any(e.op.name in MOVEMENT_OPS for e in chain)


def chain_step(chain: tuple[Expr, ...], e: Expr) -> tuple[Expr, ...]:
    """``chain`` extended by shape op ``e`` on the way to its input; a copy (``set``) keeps
    every coordinate and address, so it is no step: two paths to one tensor, one of them
    through a copy (an fp32 cast to fp32 is one), are one load."""
    return chain if e.op.name == "set" else chain + (e,)


def reached(
    root: TensorView, memory: set[int], through: frozenset[int] = frozenset()
) -> list[tuple[TensorView, tuple[Expr, ...]]]:
    """Every (tensor, chain) reached backward from ``root``, each once, in discovery order.

    The walk passes through pointwise ops unchanged, records shape ops in the chain and
    stops at tensors in ``memory``, at fusion inputs and at creation ops. Each distinct
    (tensor, chain) is expanded once, so shared subexpressions cost nothing extra.
    ``through``: ids of reductions computed in the same kernel on the root's coordinates
    (a normalization group): the walk continues into their inputs with an empty chain.
    """
    seen: dict[tuple, tuple[TensorView, tuple[Expr, ...]]] = {}

    def walk(tv: TensorView, chain: tuple[Expr, ...]) -> None:
        key = (id(tv), tuple(id(e) for e in chain))
        if key in seen:
            return
        seen[key] = (tv, chain)
        if id(tv) in memory or tv.definition is None:
            return
        e = tv.definition
        if e.op.kind is OpKind.SHAPE:
            for i in index_operands(e):  # first: their loads precede the read they address
                walk(i, chain)
            walk(e.inputs[0], chain_step(chain, e))
            for k in e.op.same_coordinate_inputs:  # a pad's tensor fill (cat)
                if isinstance(e.inputs[k], TensorView):
                    walk(e.inputs[k], chain)
        elif e.op.kind is OpKind.POINTWISE:
            for i in e.inputs:
                if isinstance(i, TensorView):
                    walk(i, chain)
        elif id(e) in through:
            walk(e.inputs[0], ())
        elif e.op.kind is not OpKind.CREATION:
            raise ValueError(f"{e.op.name} cannot be read inside this kernel")

    walk(root, ())
    return list(seen.values())


def upstream_accesses(root: TensorView, memory: set[int]) -> list[Access]:
    """Loads (and creation ops) reached backward from ``root``, whose coordinates are the
    iteration space; ``memory`` holds the ids of tensors that live in memory."""
    return [
        Access(tv, chain)
        for tv, chain in reached(root, memory)
        if id(tv) in memory or tv.definition is None or tv.definition.op.kind is OpKind.CREATION
    ]


def upstream_tensors(root: TensorView, memory: set[int]) -> dict[int, tuple[TensorView, tuple]]:
    """Every tensor computed upstream of ``root`` with the chain leading to it (first found)."""
    out: dict[int, tuple[TensorView, tuple]] = {}
    for tv, chain in reached(root, memory):
        out.setdefault(id(tv), (tv, chain))
    return out


def waits_on(loaded: list[TensorView], stored: list[TensorView], memory: set[int]) -> bool:
    """Whether the segments that compute ``loaded`` (tensors a kernel reads from ``memory``)
    read one of ``stored`` from memory, directly or through what they read in turn: a
    kernel that stores the one and loads the other would wait on itself. A library op
    reads its operands from memory; every other segment recomputes what it reads from
    the tensors in ``memory`` (a scan's input, a reduction's prologue)."""
    targets = {id(t) for t in stored}
    seen: set[int] = set()
    stack = list(loaded)
    while stack:
        t = stack.pop()
        if id(t) in seen or t.definition is None:
            continue
        seen.add(id(t))
        e = t.definition
        for v in (x for x in e.inputs if isinstance(x, TensorView)):
            if e.op.kind is OpKind.LIBRARY and id(v) in targets:
                return True
            for u, _ in upstream_tensors(v, memory).values():
                if id(u) in memory:
                    if id(u) in targets:
                        return True
                    stack.append(u)
    return False


def has_base(access: Access) -> bool:
    """Whether the access's address at index 0 may be past its tensor's start (a slice or
    select on its chain): an affine access then gets a base offset (``index_walk.base_offset``)."""
    return any(e.op.name in ("slice", "select") for e in access.chain)


def shape_of(tv: TensorView, extents: dict[int, int]) -> tuple[int, ...]:
    return tuple(extents[d.uid] for d in tv.shape_domain)


def unit_broadcasts(tv: TensorView, made_one: Collection[int] = ()) -> set[int]:
    """Dims of ``tv`` that are broadcasts of extent 1: declared, or made at run time
    (``made_one``: uids, ``runtime.extents``). The pointwise ops that consume ``tv``
    broadcast them to their own extents, so along a chain every such dim has index 0
    (its stride means nothing, its coordinate may be larger)."""
    return {
        i
        for i, d in enumerate(tv.shape_domain)
        if (d.is_broadcast and not d.expanded) or d.uid in made_one
    }


def made_one(extents: Mapping[int, int]) -> frozenset[int]:
    """The uids of dims the run made broadcast (``runtime.extents.RunExtents``)."""
    return frozenset(getattr(extents, "made_one", ()))


def made_dims(
    accesses: Sequence[Access], extents: Mapping[int, int]
) -> tuple[tuple[int, int], ...]:
    """(tensor index, dim) of every dim the run made broadcast on the accesses' chains: a
    generic walk reads them at index 0 (``params.made_ones``, ``index_walk``)."""
    made = made_one(extents)
    if not made:
        return ()
    found = set()
    for a in accesses:
        for tv in (a.tv, *(e.outputs[0] for e in a.chain)):  # the chain, memory side last
            found.update((tv.index, i) for i, d in enumerate(tv.shape_domain) if d.uid in made)
    return tuple(sorted(found))


def load_strides(
    access: Access, real_strides: tuple[int, ...], extents: dict[int, int]
) -> tuple[int, ...] | None:
    """Strides of a load over the iteration coordinates (None when not affine)."""
    made = made_one(extents)
    s = _zero_unit_broadcasts(tuple(real_strides), access.tv, made)
    for e in reversed(access.chain):
        s = st.forward(
            e.op.name, e.attrs, shape_of(e.inputs[0], extents), s, shape_of(e.outputs[0], extents)
        )
        if s is None:
            return None
        s = _zero_unit_broadcasts(s, e.outputs[0], made)
    return s


def _zero_unit_broadcasts(
    strides: tuple[int, ...], tv: TensorView, made: Collection[int]
) -> tuple[int, ...]:
    zero = unit_broadcasts(tv, made)
    return tuple(0 if i in zero else x for i, x in enumerate(strides))


def store_strides_backward(
    chain: tuple[Expr, ...], real_strides: tuple[int, ...], extents: dict[int, int]
) -> tuple[int, ...] | None:
    """Strides over the reduction output's coordinates of an epilogue tensor, ``chain``
    running from the reduction output to the tensor."""
    s = tuple(real_strides)
    for e in reversed(chain):
        s = st.backward(
            e.op.name, e.attrs, shape_of(e.inputs[0], extents), s, shape_of(e.outputs[0], extents)
        )
        if s is None:
            return None
    return s


def vals_of(exprs: list[Expr]) -> set[int]:
    out: set[int] = set()
    for e in exprs:
        out.update(id(v) for v in e.inputs)
        out.update(id(v) for v in e.outputs)
    return out


__all__ = [
    "Access",
    "chain_step",
    "Val",
    "index_operands",
    "is_indirect",
    "stores_every_position",
    "waits_on",
    "load_strides",
    "reached",
    "store_strides_backward",
    "unit_broadcasts",
    "upstream_accesses",
    "upstream_tensors",
]
