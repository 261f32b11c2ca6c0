"""Split a fusion into kernel segments.

A reduction whose result is used again, broadcast, in its input's coordinates
(softmax, layer norm) joins a *normalization* kernel with the other reductions of
the same dims there (``segmenter.normalization``); that kernel also stores the
per-row results the fusion returns (mean, rstd). Every other reduction
(sum/max/min/prod/welford) gets its own kernel, unless it has siblings: reductions of
the same dims over the same coordinates that do not feed each other run as one
normalization kernel that reads their inputs once (``siblings``). A plain reduction has
its pointwise and shape prologue recomputed from memory; its outputs are written to
memory (the fusion's output or an intermediate buffer). Every remaining output computed
by pointwise work gets a pointwise kernel; outputs upstream of another output's kernel,
in the same coordinates, are stored by that kernel. Each cut says why it was made
(``Segment.reason``).

A normalization kernel carries its fallback plan (``KernelSpec.fallback``), which the
runtime takes when the normalization scheduler says its rows are better served by
reduction kernels: each reduction its own kernel (siblings together; softmax's max and
sum together, ``KernelSpec.online``), then pointwise kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.accesses import Access, upstream_accesses, upstream_tensors
from ..ir import Expr, Fusion, OpKind, Scalar, TensorView, Vector
from .normalization import Group, find_group, group_reached, members_upstream, xspace_output


@dataclass(eq=False)
class KernelSpec:
    kind: str                          # "pointwise" or "reduction"
    root: TensorView                   # the iteration tensor
    exprs: list[Expr]
    memory: list[TensorView]           # pointer arguments: loaded tensors, then stored ones
    accesses: list[Access]             # loads, then stores, then coordinates (iota)
    n_loads: int
    n_stores: int
    scalars: list[Scalar]
    reduction: Expr | None = None      # a reduction kernel's (first) reduction
    reason: str = ""
    outputs: list[TensorView] = field(default_factory=list)
    group: Group | None = None                  # a normalization kernel's reductions
    fallback: list[KernelSpec] = field(default_factory=list)   # its multi-kernel plan
    fallback_buffers: list[TensorView] = field(default_factory=list)
    siblings: list[Expr] = field(default_factory=list)   # a reduction kernel's others
    online: dict[int, Expr] = field(default_factory=dict)  # softmax's id(sum) -> its max,
                                                          # accumulated together (online)

    @property
    def reductions(self) -> list[Expr]:
        """A reduction kernel's reductions: one, or siblings of the same rows."""
        return ([self.reduction] if self.reduction is not None else []) + self.siblings


def _scalars_of(exprs: list[Expr]) -> list[Scalar]:
    out: dict[int, Scalar] = {}
    for e in exprs:
        if e.op.kind in (OpKind.POINTWISE, OpKind.CREATION):
            for v in e.inputs:
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


def _spec(kind, root, memory_ids, stores: list[Access], reduction=None, reason="",
          siblings: tuple[Expr, ...] = (), online: dict[int, Expr] | None = None):
    """A kernel iterating over ``root``'s coordinates; sibling reductions' inputs share
    them, so their loads join (each access once). An ``online`` sum loads nothing of its
    own: its terms come from its max's input."""
    online = online or {}
    roots = [root] + [e.inputs[0] for e in siblings if id(e) not in online]
    reached: dict[tuple, Access] = {}
    for r in roots:
        for a in upstream_accesses(r, memory_ids):
            reached.setdefault(a.key(), a)
    ups = list(reached.values())
    loads = [a for a in ups if a.tv.definition is None or id(a.tv) in memory_ids]
    coords = [a for a in ups if a.tv.definition is not None
              and id(a.tv) not in memory_ids and a.tv.definition.op.name == "iota"]
    memory: list[TensorView] = []
    for a in loads + stores:
        if all(m is not a.tv for m in memory):
            memory.append(a.tv)
    found = {id(e): e for r in roots for e in _exprs_upstream(r, memory_ids)}
    exprs = list(found.values()) + [e for e in (reduction, *siblings) if e is not None]
    order = {id(e): i for i, e in enumerate(root.fusion.exprs)}
    exprs.sort(key=lambda e: order[id(e)])
    return KernelSpec(kind, root, exprs, memory, loads + stores + coords, len(loads), len(stores),
                      _scalars_of(exprs), reduction, reason, [a.tv for a in stores],
                      siblings=list(siblings), online=dict(online))


def segment(fusion: Fusion, computed_outputs: list[TensorView]) -> tuple[list[KernelSpec],
                                                                         list[TensorView]]:
    """Kernel specs in run order, and the intermediate tensors that need buffers."""
    inputs = {id(v) for v in fusion.inputs}
    reductions = [e for e in fusion.exprs if e.op.kind in (OpKind.REDUCTION, OpKind.WELFORD)]
    red_outs = {id(o) for e in reductions for o in e.outputs}
    output_ids = {id(v) for v in computed_outputs}
    pending = [o for o in computed_outputs
               if o.definition is not None and o.definition.op.kind not in (OpKind.REDUCTION,
                                                                            OpKind.WELFORD)]
    pending.sort(key=lambda t: -len(t.shape_domain))
    covered: set[int] = set()
    groups: list[tuple[Group, list[Access], list[Access]]] = []
    for root in pending:
        if id(root) in covered:
            continue
        group, _ = find_group(root, inputs)
        if group is None:
            continue
        members = {id(e) for e in group.reductions}
        memory = inputs | {id(o) for e in reductions if id(e) not in members for o in e.outputs}
        reached = group_reached(group, memory)
        xstores = [Access(o, (), store=True, backward=True) for o in computed_outputs
                   if id(o) not in covered and xspace_output(o, group, memory)]
        xs_ids = {id(a.tv) for a in xstores}
        stores = [Access(root, (), store=True)]
        for o in pending:
            if id(o) in covered or id(o) in xs_ids or o is root:
                continue
            chain = next((c for t, c in reached if t is o), None)
            if chain is not None:
                stores.append(Access(o, chain, store=True))
        covered |= {id(a.tv) for a in stores + xstores}
        groups.append((group, stores, xstores))
    # reductions of the same rows (same dims, same coordinates) that do not feed each other
    # read their input once, in one kernel; so does a reduction whose results feed only
    # per-row outputs (mean = sum / n, var_mean's var): the epilogue joins the reduction
    in_groups = {id(e) for g, _, _ in groups for e in g.reductions}
    rest = [e for e in reductions if id(e) not in in_groups
            and (any(id(o) in output_ids for o in e.outputs) or _used(fusion, e))]
    for cluster in siblings(rest, inputs):
        members = {id(e) for e in cluster}
        group = Group(cluster[0].inputs[0], tuple(cluster[0].attrs["dims"]), cluster,
                      {id(e): 0 for e in cluster}, rows=False)
        memory = inputs | {id(o) for r in reductions if id(r) not in members for o in r.outputs}
        xs = [o for o in computed_outputs
              if id(o) not in covered and xspace_output(o, group, memory)]
        if len(cluster) == 1 and all(o.definition is cluster[0] for o in xs):
            continue                           # no epilogue: a plain reduction kernel
        covered |= {id(o) for o in xs}
        groups.append((group, [], [Access(o, (), store=True, backward=True) for o in xs]))

    memory_ids = inputs | red_outs
    specs: list[KernelSpec] = []
    for root in pending:
        if id(root) in covered:
            continue
        up = upstream_tensors(root, memory_ids)
        stores = [Access(root, (), store=True)]
        covered.add(id(root))
        for o in pending:
            if id(o) not in covered and id(o) in up:
                stores.append(Access(o, up[id(o)][1], store=True))
                covered.add(id(o))
        specs.append(_spec("pointwise", root, memory_ids, stores,
                           reason="pointwise work after the reductions" if reductions else
                           "a fusion without reductions"))
    grouped = {id(e): g for g, _, _ in groups for e in g.reductions}
    loaded = {id(a.tv) for s in specs for a in s.accesses[: s.n_loads]}
    intermediates: list[TensorView] = []
    for e in reductions:
        if id(e) in grouped:
            continue
        if not (any(id(o) in output_ids for o in e.outputs) or _used(fusion, e)):
            continue
        specs.append(_reduction_spec(e, memory_ids))
        loaded |= {id(a.tv) for a in specs[-1].accesses[: specs[-1].n_loads]}
        intermediates += [o for o in e.outputs if id(o) not in output_ids]
    stored_by_group: set[int] = set()
    for group, stores, xstores in groups:
        members = {id(e) for e in group.reductions}
        memory = inputs | {id(o) for e in reductions if id(e) not in members for o in e.outputs}
        # a group's reduction result that another kernel reads is stored from the group
        extra = [Access(o, (), store=True, backward=True) for e in group.reductions
                 for o in e.outputs if id(o) in loaded and id(o) not in stored_by_group
                 and all(a.tv is not o for a in xstores)]
        for a in extra:
            intermediates.append(a.tv)
        xstores = xstores + extra
        stored_by_group |= {id(a.tv) for a in xstores}
        specs.append(_group_spec(group, memory, stores, xstores, memory_ids))
    return _run_order(specs), intermediates


_SAME_COORDINATES = ("set", "stride_order")     # shape ops that keep every coordinate


def siblings(reductions: list[Expr], memory: set[int]) -> list[list[Expr]]:
    """``reductions`` in clusters (fusion order) that one kernel can compute in one read:
    the same reduced dims of inputs in the same coordinates (both reach one tensor without
    broadcast dims through pointwise ops alone), none depending on another."""
    clusters: list[list[Expr]] = []
    leaves = {id(e): _pointwise_leaves(e.inputs[0], memory) for e in reductions}
    for e in reductions:
        dims, rank = tuple(e.attrs["dims"]), len(e.inputs[0].shape_domain)
        for c in clusters:
            head = c[0]
            if (tuple(head.attrs["dims"]) == dims and len(head.inputs[0].shape_domain) == rank
                    and leaves[id(e)] & leaves[id(head)]
                    and not members_upstream(e, {id(r) for r in c}, memory)):
                c.append(e)
                break
        else:
            clusters.append([e])
    return clusters


def _pointwise_leaves(tv: TensorView, memory: set[int]) -> set[int]:
    """Tensors in memory (or inputs) without broadcast dims that ``tv`` reaches through
    pointwise ops (and copies) alone: ``tv`` has their coordinates and extents."""
    found: set[int] = set()
    seen: set[int] = set()
    stack = [tv]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if id(t) in memory or t.definition is None:
            if not any(d.is_broadcast for d in t.shape_domain):
                found.add(id(t))
            continue
        d = t.definition
        if d.op.kind is OpKind.POINTWISE or d.op.name in _SAME_COORDINATES:
            stack.extend(i for i in d.inputs if isinstance(i, TensorView))
    return found


def _reduction_spec(e: Expr, memory_ids: set[int], siblings: tuple[Expr, ...] = (),
                    online: dict[int, Expr] | None = None) -> KernelSpec:
    """A reduction kernel: ``e``, with ``siblings`` (reductions of the same rows, computed
    from the same loads into their own accumulators and outputs); ``online``: softmax's
    sum among them, with its max ``e`` (id(sum) -> max), one running pair per lane."""
    stores = [Access(o, (), store=True) for r in (e, *siblings) for o in r.outputs]
    why = f"{e.op.name} over dims {e.attrs['dims']}: one reduction per kernel" if not siblings \
        else (f"{', '.join(r.op.name for r in (e, *siblings))} over dims {e.attrs['dims']}: "
              + ("softmax's max and sum in one pass (a running max and a rescaled running "
                 "sum)" if online else "reductions of the same rows in one reduction kernel"))
    return _spec("reduction", e.inputs[0], memory_ids, stores, reduction=e, reason=why,
                 siblings=siblings, online=online)


def _group_spec(group: Group, memory: set[int], stores: list[Access], xstores: list[Access],
                memory_ids: set[int]) -> KernelSpec:
    """One kernel for the group, with the multi-kernel plan it falls back to."""
    reached = group_reached(group, memory)
    loads = [Access(tv, c) for tv, c in reached if id(tv) in memory or tv.definition is None]
    coords = [Access(tv, c) for tv, c in reached if tv.definition is not None
              and id(tv) not in memory and tv.definition.op.name == "iota"]
    mem: list[TensorView] = []
    for a in loads + stores + xstores:
        if all(m is not a.tv for m in mem):
            mem.append(a.tv)
    members = {id(e) for e in group.reductions}
    exprs = {id(e): e for tv, _ in reached if tv.definition is not None
             and id(tv) not in memory for e in [tv.definition]}
    for a in xstores:
        # the per-row epilogue: everything between the group's results and the output
        for tv, _ in upstream_tensors(a.tv, group.red_outputs()).values():
            if tv.definition is not None:          # the group's reductions included
                exprs.setdefault(id(tv.definition), tv.definition)
    order = {id(e): i for i, e in enumerate(group.root.fusion.exprs)}
    ex = sorted(exprs.values(), key=lambda e: order[id(e)])
    names = ", ".join(f"{e.op.name}{list(e.attrs['dims'])}" for e in group.reductions)
    why = f"{names} used again after reducing: one normalization kernel" if group.rows else \
        f"{names} with its per-row epilogue in one kernel" if len(group.reductions) == 1 else \
        f"{names}: reductions of the same rows, one read in one kernel"
    spec = KernelSpec("normalization", group.root, ex, mem, loads + stores + xstores + coords,
                      len(loads), len(stores) + len(xstores), _scalars_of(ex), reason=why,
                      outputs=[a.tv for a in stores + xstores])
    spec.group = group
    # the fallback: each reduction its own kernel (siblings: one kernel for all), then
    # pointwise kernels for the rest
    fb: list[KernelSpec] = []
    if len(group.reductions) == 2 and len(group.online) == 1:
        # softmax: its max and its sum of exp(x - max) in one reduction kernel, one read
        (sid, mx), = group.online.items()
        sm = next(e for e in group.reductions if id(e) == sid)
        fb.append(_reduction_spec(mx, memory_ids, (sm,), online=dict(group.online)))
    elif not group.rows and len(group.reductions) > 1:
        fb.append(_reduction_spec(group.reductions[0], memory_ids,
                                  tuple(group.reductions[1:])))
    else:
        for e in group.reductions:
            fb.append(_reduction_spec(e, memory_ids))
    up = upstream_tensors(group.root, memory_ids)
    if stores:
        fb.append(_spec("pointwise", group.root, memory_ids,
                        [a for a in stores if a.tv is group.root or id(a.tv) in up],
                        reason="pointwise work after the reductions"))
    for a in stores:
        if a.tv is not group.root and id(a.tv) not in up:
            fb.append(_spec("pointwise", a.tv, memory_ids, [Access(a.tv, (), store=True)],
                            reason="an output computed before a reduction"))
    for a in xstores:
        e = a.tv.definition
        if id(e) in members:
            continue
        fb.append(_spec("pointwise", a.tv, memory_ids, [Access(a.tv, (), store=True)],
                        reason="per-row values after the reductions"))
    spec.fallback = fb
    spec.fallback_buffers = [o for e in group.reductions for o in e.outputs
                             if all(a.tv is not o for a in xstores)]
    return spec


def _run_order(specs: list[KernelSpec]) -> list[KernelSpec]:
    """Specs ordered so that every kernel runs after the kernels that store what it loads
    (stable otherwise)."""
    producer = {}
    for i, s in enumerate(specs):
        for tv in s.outputs:
            producer.setdefault(id(tv), i)
    done: list[int] = []
    state: dict[int, int] = {}

    def visit(i: int) -> None:
        if state.get(i) == 2:
            return
        if state.get(i) == 1:
            raise ValueError("segments depend on each other in a cycle")
        state[i] = 1
        s = specs[i]
        for a in s.accesses[: s.n_loads]:
            j = producer.get(id(a.tv))
            if j is not None and j != i:
                visit(j)
        state[i] = 2
        done.append(i)

    for i in range(len(specs)):
        visit(i)
    return [specs[i] for i in done]


def _used(fusion: Fusion, e: Expr) -> bool:
    return any(fusion.uses(o) for o in e.outputs)
