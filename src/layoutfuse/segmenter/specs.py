"""Kernel specs: what one kernel of a segmented fusion computes, loads and stores.

``kernel_spec`` builds a pointwise or reduction kernel from its iteration tensor,
``reduction_spec`` a reduction kernel (with siblings, or softmax's online pair), and
``group_spec`` a normalization kernel with its fallback plan (``KernelSpec.fallback``):
each reduction its own kernel (siblings together, one kernel per pass where one reads
another's result; softmax's max and sum together), then pointwise kernels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..analysis.accesses import (
    Access,
    is_indirect,
    stores_every_position,
    upstream_accesses,
    upstream_tensors,
)
from ..dtypes import is_complex
from ..ir import Expr, Fusion, OpKind, Scalar, TensorView, Vector
from ..ir.ops import COORDINATE_OPS
from ..ir.ops.library import row_of
from ..ir.ops.movement import MOVEMENT_OPS, index_scalars, static_slice_bounds
from ..ir.ops.random import N_PARAMS
from ..ir.ops.random import NAMES as RANDOM_OPS
from ..ir.ops.shape import VIEW_OPS
from .normalization import Group, group_reached


@dataclass(eq=False)
class KernelSpec:
    kind: str  # "pointwise", "reduction", "normalization", "library", "view" or "scan"
    root: TensorView  # the iteration tensor
    exprs: list[Expr]
    memory: list[TensorView]  # pointer arguments: loaded tensors, then stored ones
    accesses: list[Access]  # loads, then stores, then coordinates (iota, random ops)
    n_loads: int
    n_stores: int
    scalars: list[Scalar]
    reduction: Expr | None = None  # a reduction kernel's (first) reduction
    reason: str = ""
    outputs: list[TensorView] = field(default_factory=list)
    group: Group | None = None  # a normalization kernel's reductions
    fallback: list[KernelSpec] = field(default_factory=list)  # its multi-kernel plan
    fallback_buffers: list[TensorView] = field(default_factory=list)
    siblings: list[Expr] = field(default_factory=list)  # a reduction kernel's others
    online: dict[int, Expr] = field(default_factory=dict)  # softmax's id(sum) -> its max,
    # accumulated together (online)
    scan: Expr | None = None  # a scan kernel's per-row op (cumsum, argsort, topk)
    # a reduction kernel's per-row outputs computed from its results alone (a cast, mean =
    # sum / n), stored after them; over an empty extent, ``epilogue_kernels`` (pointwise,
    # from the results' fills) compute them
    epilogue: list[TensorView] = field(default_factory=list)
    epilogue_kernels: list[KernelSpec] = field(default_factory=list)
    # a reduction kernel's outputs of its input's coordinates, stored from its R loop as
    # each tile is computed (a GELU backward's dgelu beside the bias grad that sums it):
    # the last stores; ``fallback`` holds the plan without them (a pointwise kernel)
    loop_stores: list[TensorView] = field(default_factory=list)
    # ids of a reduction kernel's results that it computes but does not store: no kernel
    # loads them and the fusion does not return them (a Welford's M2 and count under its
    # variance, a sum under its mean: ``segments._drop_unread_results``)
    unstored: frozenset[int] = frozenset()

    @property
    def reductions(self) -> list[Expr]:
        """A reduction kernel's reductions: one, or siblings of the same rows."""
        return ([self.reduction] if self.reduction is not None else []) + self.siblings

    @property
    def computed_results(self) -> list[TensorView]:
        """What a reduction kernel computes per row: each reduction's outputs, then the
        epilogue's."""
        return [o for e in self.reductions for o in e.outputs] + self.epilogue

    @property
    def results(self) -> list[TensorView]:
        """What a reduction kernel stores, in store order: ``computed_results`` but the
        ``unstored``."""
        return [o for o in self.computed_results if id(o) not in self.unstored]

    def unstore(self, ids: set[int]) -> bool:
        """Stop storing the results ``ids`` (``unstored``): their accesses and pointer
        arguments go. False, and nothing changes, where the pointers are not the loads'
        and stores' tensors (a spec ``kernel_spec`` did not build)."""
        n, k = self.n_loads, self.n_loads + self.n_stores
        loads, stores = self.accesses[:n], self.accesses[n:k]
        if self.memory != _distinct_tensors(loads + stores):
            return False
        kept = [a for a in stores if id(a.tv) not in ids]
        self.accesses = loads + kept + self.accesses[k:]
        self.memory = _distinct_tensors(loads + kept)
        self.n_stores = len(kept)
        self.outputs = [a.tv for a in kept]
        self.unstored = self.unstored | frozenset(ids)
        return True

    def stored_values(self, values: list[str]) -> list[tuple[TensorView, str]]:
        """Each stored result with its value, of ``values`` (one per ``computed_results``),
        in store order."""
        pairs = zip(self.computed_results, values, strict=True)
        return [(o, v) for o, v in pairs if id(o) not in self.unstored]


def _scalars_of(exprs: list[Expr]) -> list[Scalar]:
    out: dict[int, Scalar] = {}
    for e in exprs:
        if e.op.kind in (OpKind.POINTWISE, OpKind.CREATION) or e.op.name in MOVEMENT_OPS:
            # a random op's shape is the kernel's extents: only its parameters are arguments
            if e.op.name in MOVEMENT_OPS:
                args = index_scalars(e)
            elif e.op.name in RANDOM_OPS:
                args = e.inputs[:N_PARAMS]
            else:
                args = e.inputs
            for v in args:
                if isinstance(v, Scalar) and not v.is_constant:
                    out.setdefault(id(v), v)
                if isinstance(v, Vector):
                    pass
    return list(out.values())


def _exprs_upstream(root: TensorView, memory: set[int]) -> list[Expr]:
    seen: dict[int, Expr] = {}
    stack = [root]
    while stack:
        tv = stack.pop()
        if id(tv) in memory or tv.definition is None:
            continue
        e = tv.definition
        if id(e) in seen:
            continue
        seen[id(e)] = e
        stack.extend(i for i in e.inputs if isinstance(i, TensorView))
    return list(seen.values())


def _distinct_tensors(accesses: list[Access]) -> list[TensorView]:
    """The tensors of ``accesses``, each once, in order: a kernel's pointer arguments."""
    tensors: list[TensorView] = []
    for a in accesses:
        if all(t is not a.tv for t in tensors):
            tensors.append(a.tv)
    return tensors


def _gathered_first(loads: list[Access]) -> list[Access]:
    """Loads read through an indexed read first (the data a gather reads, which the
    schedulers take as the dominant input), else in discovery order: an index operand is
    found before the data it addresses, so a read whose index is itself gathered comes
    after that index's read (``GenericIndex.emit`` needs its offset first)."""
    return sorted(loads, key=lambda a: not is_indirect(a.chain))


def _in_fusion_order(exprs: list[Expr], fusion: Fusion) -> list[Expr]:
    order = {id(e): i for i, e in enumerate(fusion.exprs)}
    return sorted(exprs, key=lambda e: order[id(e)])


def kernel_spec(
    kind,
    root,
    memory_ids,
    stores: list[Access],
    reduction=None,
    reason="",
    siblings: tuple[Expr, ...] = (),
    online: dict[int, Expr] | None = None,
    partners: tuple[TensorView, ...] = (),
    beside: tuple[TensorView, ...] = (),
    also: tuple[TensorView, ...] = (),
):
    """A kernel iterating over ``root``'s coordinates; sibling reductions' inputs share
    them, so their loads join (each access once); so do ``partners``' (stored tensors of
    the root's coordinates: ``Fusion.kernel_partners``). An ``online`` sum loads nothing of
    its own: its terms come from its max's input. ``beside``: outputs in the same
    coordinates that are not upstream of ``root``, computed in the same kernel. ``also``:
    other tensors computed in the same coordinates (an indexed write's src, beside its
    index)."""
    online = online or {}
    roots = (
        [root, *partners, *beside]
        + [e.inputs[0] for e in siblings if id(e) not in online]
        + list(also)
    )
    reached: dict[tuple, Access] = {}
    for r in roots:
        for a in upstream_accesses(r, memory_ids):
            reached.setdefault(a.key(), a)
    ups = list(reached.values())
    loads = _gathered_first([a for a in ups if a.tv.definition is None or id(a.tv) in memory_ids])
    coords = [
        a
        for a in ups
        if a.tv.definition is not None
        and id(a.tv) not in memory_ids
        and a.tv.definition.op.name in COORDINATE_OPS
    ]
    found = {id(e): e for r in roots for e in _exprs_upstream(r, memory_ids)}
    exprs = _in_fusion_order(
        list(found.values()) + [e for e in (reduction, *siblings) if e is not None], root.fusion
    )
    return KernelSpec(
        kind,
        root,
        exprs,
        _distinct_tensors(loads + stores),
        loads + stores + coords,
        len(loads),
        len(stores),
        _scalars_of(exprs),
        reduction,
        reason,
        [a.tv for a in stores],
        siblings=list(siblings),
        online=dict(online),
    )


def library_spec(e: Expr) -> KernelSpec:
    """A library segment: one library op, run through torch (``ir/ops/library.py``). Its
    loads are its tensor operands, its outputs the op's results; its scalars the
    operands that are not constants."""
    tensors = [v for v in e.inputs if isinstance(v, TensorView)]
    loads = [Access(t, ()) for t in _distinct_tensors([Access(t, ()) for t in tensors])]
    outputs = [o for o in e.outputs if isinstance(o, TensorView)]
    scalars = [v for v in e.inputs if isinstance(v, Scalar) and not v.is_constant]
    return KernelSpec(
        "library",
        outputs[0],
        [e],
        _distinct_tensors(loads) + outputs,
        loads,
        len(loads),
        0,
        scalars,
        reason=row_of(e).reason,
        outputs=outputs,
    )


# ops a view segment takes: torch expresses each as a view of its operand (a reshape where
# the strides allow it; the runtime copies where they do not), a slice of static bounds
VIEW_SEGMENT_OPS = VIEW_OPS | {"slice"}


def view_chain_of(tv: TensorView, in_memory: set[int]) -> list[Expr]:
    """The exprs that make ``tv`` of a tensor in memory (``in_memory``: ids of inputs and
    library results) through view ops alone, first to last; [] where there are none."""
    chain: list[Expr] = []
    v = tv
    while id(v) not in in_memory:
        e = v.definition
        if (
            e is None
            or e.op.name not in VIEW_SEGMENT_OPS
            or not isinstance(e.inputs[0], TensorView)
        ):
            return []
        if e.op.name == "slice" and static_slice_bounds(e) is None:
            return []  # bounds known only at run time
        if is_complex(v.dtype):
            return []  # complex tensors run as their real parts
        chain.append(e)
        v = e.inputs[0]
    return chain[::-1]


def view_spec(tv: TensorView, chain: list[Expr]) -> KernelSpec:
    """A view segment: a library op's operand ``tv`` as a torch view of the tensor in
    memory that ``chain`` (``view_chain_of``) starts from. No kernel: the runtime applies
    the chain's ops to the tensor (``runtime/library.py:ViewFn``)."""
    source = chain[0].inputs[0]
    assert isinstance(source, TensorView)
    ops = ", ".join(e.op.name for e in chain)
    return KernelSpec(
        "view",
        tv,
        list(chain),
        [source, tv],
        [Access(source, ()), Access(tv, ())],
        1,
        0,
        [],
        reason=f"a library op's operand: a view of T{source.index} ({ops}), no kernel",
        outputs=[tv],
    )


def reduction_spec(
    e: Expr,
    memory_ids: set[int],
    siblings: tuple[Expr, ...] = (),
    online: dict[int, Expr] | None = None,
    epilogue: tuple[TensorView, ...] = (),
    epilogue_fallback: tuple[KernelSpec, ...] = (),
    loop_stores: tuple[TensorView, ...] = (),
) -> KernelSpec:
    """A reduction kernel: ``e``, with ``siblings`` (reductions of the same rows, computed
    from the same loads into their own accumulators and outputs); ``online``: softmax's
    sum among them, with its max ``e`` (id(sum) -> max), one running pair per lane.
    ``epilogue``: per-row outputs computed from the results alone, stored after them
    (``epilogue_fallback``: their pointwise kernels, for an empty extent). ``loop_stores``:
    outputs of the input's coordinates stored from the R loop (``KernelSpec.loop_stores``;
    the caller gives the fallback)."""
    stores = [Access(o, (), store=True) for r in (e, *siblings) for o in r.outputs]
    stores += [Access(o, (), store=True, backward=True) for o in epilogue]
    stores += [Access(o, (), store=True) for o in loop_stores]
    why = (
        f"{e.op.name} over dims {e.attrs['dims']}: one reduction per kernel"
        if not siblings
        else (
            f"{', '.join(r.op.name for r in (e, *siblings))} over dims {e.attrs['dims']}: "
            + (
                "softmax's max and sum in one pass (a running max and a rescaled running sum)"
                if online
                else "reductions of the same rows in one reduction kernel"
            )
        )
    )
    if epilogue:
        why += "; its per-row epilogue stored with its results"
    if loop_stores:
        why += (
            f"; it stores {', '.join(f'T{o.index}' for o in loop_stores)} of its input's "
            "coordinates from its loop (one read for both)"
        )
    spec = kernel_spec(
        "reduction",
        e.inputs[0],
        memory_ids,
        stores,
        reduction=e,
        reason=why,
        siblings=siblings,
        online=online,
        beside=loop_stores,
    )
    spec.loop_stores = list(loop_stores)
    if epilogue:
        results = {id(o) for r in (e, *siblings) for o in r.outputs}
        found = {id(x): x for x in spec.exprs}
        for o in epilogue:
            found.update((id(x), x) for x in _exprs_upstream(o, results))
        spec.exprs = _in_fusion_order(list(found.values()), e.inputs[0].fusion)
        spec.scalars = _scalars_of(spec.exprs)
        spec.epilogue = list(epilogue)
        spec.epilogue_kernels = list(epilogue_fallback)
    return spec


def group_spec(
    group: Group,
    memory: set[int],
    stores: list[Access],
    xstores: list[Access],
    memory_ids: set[int],
) -> KernelSpec:
    """One kernel for the group, with the multi-kernel plan it falls back to."""
    reached = group_reached(group, memory)
    loads = _gathered_first(
        [Access(tv, c) for tv, c in reached if id(tv) in memory or tv.definition is None]
    )
    coords = [
        Access(tv, c)
        for tv, c in reached
        if tv.definition is not None
        and id(tv) not in memory
        and tv.definition.op.name in COORDINATE_OPS
    ]
    exprs = _group_exprs(group, reached, memory, xstores)
    if group.cross:
        fallback = _without_cross(group, memory, stores, xstores, memory_ids)
    else:
        fallback = _fallback_plan(group, stores, xstores, memory_ids)
    return KernelSpec(
        "normalization",
        group.root,
        exprs,
        _distinct_tensors(loads + stores + xstores),
        loads + stores + xstores + coords,
        len(loads),
        len(stores) + len(xstores),
        _scalars_of(exprs),
        reason=_group_reason(group),
        outputs=[a.tv for a in stores + xstores],
        group=group,
        fallback=fallback,
        fallback_buffers=[
            o
            for e in group.reductions + group.cross
            for o in e.outputs
            if all(a.tv is not o for a in xstores)
        ],
    )


def _without_cross(
    group: Group,
    memory: set[int],
    stores: list[Access],
    xstores: list[Access],
    memory_ids: set[int],
) -> list[KernelSpec]:
    """The plan of a group with cross reductions when one kernel cannot hold them (its
    rows do not fit a tile): the group's kernel without them (with its own finer plan),
    then one reduction kernel for all of them, storing their epilogue."""
    plain = dataclasses.replace(group, cross=[], cross_epilogue=())
    first, *others = group.cross
    epilogue = group.cross_epilogue
    parts = epilogue_kernels(epilogue, memory_ids, "per-column")
    return [
        group_spec(plain, memory, stores, [a for a in xstores if not a.cross], memory_ids),
        reduction_spec(first, memory_ids, tuple(others), None, epilogue, parts),
    ]


def epilogue_kernels(
    epilogue: tuple[TensorView, ...], memory_ids: set[int], what: str = "per-row"
) -> tuple[KernelSpec, ...]:
    """A pointwise kernel per output of a reduction kernel's epilogue, computed from its
    results' fills where no reduction kernel runs (an empty extent)."""
    return tuple(
        kernel_spec(
            "pointwise",
            o,
            memory_ids,
            [Access(o, (), store=True)],
            reason=f"{what} values after the reductions",
        )
        for o in epilogue
    )


def _group_exprs(group: Group, reached, memory: set[int], xstores: list[Access]) -> list[Expr]:
    """The group kernel's exprs in fusion order: those that compute what it reaches from
    its root, and the per-row epilogue of each ``xstores`` output."""
    exprs = {
        id(e): e
        for tv, _ in reached
        if tv.definition is not None and id(tv) not in memory
        for e in [tv.definition]
    }
    for a in xstores:
        if a.cross:
            continue
        # the per-row epilogue: everything between the group's results and the output
        for tv, _ in upstream_tensors(a.tv, group.red_outputs()).values():
            if tv.definition is not None:  # the group's reductions included
                exprs.setdefault(id(tv.definition), tv.definition)
    columns = {id(o) for e in group.cross for o in e.outputs}
    for e in group.cross:
        exprs.setdefault(id(e), e)
    for o in group.cross_epilogue:
        for tv, _ in upstream_tensors(o, columns).values():
            if tv.definition is not None and id(tv) not in columns:
                exprs.setdefault(id(tv.definition), tv.definition)
    return _in_fusion_order(list(exprs.values()), group.root.fusion)


def _group_reason(group: Group) -> str:
    names = ", ".join(f"{e.op.name}{list(e.attrs['dims'])}" for e in group.reductions)
    if group.rows and group.cross:
        columns = ", ".join(f"{e.op.name}{list(e.attrs['dims'])}" for e in group.cross)
        return (
            f"{names} used again after reducing, {columns} over the kept dims: one "
            "normalization kernel (partial column results, combined by a finishing kernel)"
        )
    if group.rows:
        return f"{names} used again after reducing: one normalization kernel"
    if len(group.reductions) == 1:
        return f"{names} with its per-row epilogue in one kernel"
    if any(group.levels.values()) or group.online:
        return f"{names}: each used again by the next on its rows, per-row results in one kernel"
    return f"{names}: reductions of the same rows, one read in one kernel"


def _fallback_plan(
    group: Group, stores: list[Access], xstores: list[Access], memory_ids: set[int]
) -> list[KernelSpec]:
    """The group's multi-kernel plan: each reduction its own kernel (siblings: one kernel
    a pass), then pointwise kernels for the rest; the per-row epilogue in the reduction
    kernel only where one pass computes every reduction."""
    epilogue = epilogue_outputs(group, xstores, memory_ids) if _one_level(group) else ()
    if epilogue:
        done = {id(o) for o in epilogue}
        rest = [a for a in xstores if id(a.tv) not in done]
        parts = _fallback_pointwise(group, [], [a for a in xstores if id(a.tv) in done], memory_ids)
        first, *others = group.reductions
        return [
            reduction_spec(first, memory_ids, tuple(others), None, epilogue, tuple(parts))
        ] + _fallback_pointwise(group, stores, rest, memory_ids)
    return _fallback_reductions(group, memory_ids) + _fallback_pointwise(
        group, stores, xstores, memory_ids
    )


def epilogue_outputs(group: Group, xstores: list[Access], memory_ids: set[int]) -> tuple:
    """The per-row outputs of an epilogue group (sibling reductions, no use on the rows)
    that its reduction kernel can compute at its stores: from the group's results, scalars
    and constants (``full``) alone, through pointwise ops (a dw cast to bf16, mean = sum /
    n). Not for softmax's online pair, nor for outputs that read other memory."""
    if group.rows or group.online:
        return ()
    results = group.red_outputs()
    members = {id(e) for e in group.reductions}
    out = []
    for a in xstores:
        if a.tv.definition is None or id(a.tv.definition) in members:
            continue
        reached = upstream_tensors(a.tv, results | memory_ids).values()
        if all(
            id(tv) in results
            or (
                id(tv) not in memory_ids
                and tv.definition is not None
                and (
                    tv.definition.op.kind is OpKind.POINTWISE
                    or tv.definition.op.name == "full"  # no coordinates (iota, random)
                )
            )
            for tv, _ in reached
        ):
            out.append(a.tv)
    return tuple(out)


def _fallback_reductions(group: Group, memory_ids: set[int]) -> list[KernelSpec]:
    if len(group.reductions) == 2 and len(group.online) == 1:
        # softmax: its max and its sum of exp(x - max) in one reduction kernel, one read
        ((sid, mx),) = group.online.items()
        sm = next(e for e in group.reductions if id(e) == sid)
        return [reduction_spec(mx, memory_ids, (sm,), online=dict(group.online))]
    if not group.rows and len(group.reductions) > 1:
        # one kernel per pass: a reduction of a later one reads the earlier results from
        # memory, after the kernel that stores them (generated program 699880: a count of
        # the elements equal to their row's max, the max its sibling, read before it was
        # stored)
        specs = []
        for members in _passes(group):
            pairs = [(e, group.online[id(e)]) for e in members if id(e) in group.online]
            paired = {id(x) for pair in pairs for x in pair}
            # softmax's pairs: each its own kernel, one running pair per lane
            specs += [
                reduction_spec(mx, memory_ids, (sm,), online={id(sm): mx}) for sm, mx in pairs
            ]
            rest = [e for e in members if id(e) not in paired]
            if rest:
                specs.append(reduction_spec(rest[0], memory_ids, tuple(rest[1:])))
        return specs
    return [reduction_spec(e, memory_ids) for e in group.reductions]


def _passes(group: Group) -> list[list[Expr]]:
    """``group``'s reductions by pass (``Group.levels``), in pass order."""
    levels = sorted({group.levels[id(e)] for e in group.reductions})
    return [[e for e in group.reductions if group.levels[id(e)] == k] for k in levels]


def _one_level(group: Group) -> bool:
    """No reduction of ``group`` depends on another (one pass computes them all)."""
    return len(_passes(group)) <= 1


def _fallback_pointwise(
    group: Group, stores: list[Access], xstores: list[Access], memory_ids: set[int]
) -> list[KernelSpec]:
    """Pointwise kernels for the group's stores after the reduction kernels: the root's
    (with the outputs upstream of it), one per output computed before a reduction, one
    per per-row value that is not a reduction's result."""
    fb: list[KernelSpec] = []
    up = upstream_tensors(group.root, memory_ids)
    with_root = {id(group.root)} | {id(p) for p in group.partners + group.beside}
    # an output the group's kernel stores in its rows' coordinates (reached through its
    # reductions) that the root reaches only through a slice, a pad or an indexed read is
    # not in the root's coordinates: its own kernel (generated program 606640: a
    # threshold's output beside a compare with a one-element slice of it, stored at that
    # one element only)
    up = {k: v for k, v in up.items() if stores_every_position(v[1])}
    if stores:
        chosen = [a for a in stores if id(a.tv) in with_root or id(a.tv) in up]
        fb.append(
            kernel_spec(
                "pointwise",
                group.root,
                memory_ids,
                chosen,
                reason="pointwise work after the reductions",
                partners=group.partners,
                beside=group.beside,
                # an output upstream of the root stored in the root's coordinates: what it
                # loads there, not only along the root's path (a gather's output that the
                # root reaches through an expand: generated program 67447)
                also=tuple(a.tv for a in chosen if not a.chain and id(a.tv) not in with_root),
            )
        )
    for a in stores:
        if id(a.tv) not in with_root and id(a.tv) not in up:
            fb.append(
                kernel_spec(
                    "pointwise",
                    a.tv,
                    memory_ids,
                    [Access(a.tv, (), store=True)],
                    reason="an output computed before a reduction",
                )
            )
    members = {id(e) for e in group.reductions}
    for a in xstores:
        if id(a.tv.definition) in members:
            continue
        fb.append(
            kernel_spec(
                "pointwise",
                a.tv,
                memory_ids,
                [Access(a.tv, (), store=True)],
                reason="per-row values after the reductions",
            )
        )
    return fb
