"""Split a fusion into kernel segments.

A reduction whose result is used again, broadcast, in its input's coordinates
(softmax, layer norm) joins a *normalization* kernel with the other reductions of
the same dims there (``segmenter.normalization``); that kernel also stores the
per-row results the fusion returns (mean, rstd), and computes the reductions over its
kept dims of tensors in its coordinates as partial column results that a finishing kernel
combines (``_cross_reductions``: a layer norm backward's dw and db). Every other reduction
(sum/max/min/prod/welford) gets its own kernel, unless it has siblings: reductions of
the same dims over the same coordinates that do not feed each other run as one
normalization kernel that reads their inputs once (``siblings``); a reduction whose input
uses other reductions of its rows again with no full-size output to root a normalization
(a log-sum-exp: the max, then the sum of ``exp(x - max)``) joins them in one kernel of
per-row results (``_chained_groups``). A plain reduction has its pointwise and shape
prologue recomputed from memory, and stores the outputs of its input's coordinates from
its R loop (``_loop_stores``: a GELU backward's dgelu beside the bias grad; a single
reduction with a per-row epilogue is then a reduction kernel, not a group), or reads an
output a pointwise kernel stores where that loads fewer bytes (``_reduction_specs``); its
outputs are written to memory (the fusion's output or an intermediate buffer). Every remaining output computed
by pointwise work gets a pointwise kernel; outputs upstream of another output's kernel,
in the same coordinates, are stored by that kernel. A per-row op (cumsum, argsort, topk)
gets a scan kernel of its own, with its prologue and its pointwise epilogue
(``segmenter.scans``); its results live in memory for every other kernel. A library op
(matmul, linear, attention: ``ir/ops/library.py``) is a segment of its own, run through
torch; the kernels around it read and write its operands and results in memory
(``segment``), except an operand that view ops alone make of an input or a library
result (permute, reshape, slice, ...: attention's heads split from a projection), which a
view segment makes as a torch view, no kernel (``view_spec``). Each cut says why it was
made (``Segment.reason``).

A normalization kernel carries its fallback plan (``KernelSpec.fallback``, built in
``segmenter.specs``), which the runtime takes when the normalization scheduler says its
rows are better served by reduction kernels: each reduction its own kernel (siblings
together; softmax's max and sum together, ``KernelSpec.online``), then pointwise
kernels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import NamedTuple

from ..analysis.accesses import (
    Access,
    reached,
    stores_every_position,
    upstream_tensors,
    waits_on,
)
from ..dtypes import itemsize
from ..ir import Expr, Fusion, OpKind, TensorView
from ..ir.ops.reductions import n_results
from .normalization import (
    Group,
    chained_group,
    find_group,
    group_reached,
    members_upstream,
    xspace_output,
)
from .scans import scan_epilogues, scan_specs
from .specs import (
    KernelSpec,
    epilogue_kernels,
    epilogue_outputs,
    group_spec,
    kernel_spec,
    library_spec,
    reduction_spec,
    view_chain_of,
    view_spec,
)

__all__ = ["KernelSpec", "segment", "siblings"]


class _GroupKernel(NamedTuple):
    """A normalization kernel's group and the tensors it stores: in its coordinates
    (``stores``) and per row (``xstores``)."""

    group: Group
    stores: list[Access]
    xstores: list[Access]


@dataclass(eq=False)
class _Segmentation:
    """What the phases of ``segment`` share: the fusion's facts, and the normalization
    kernels chosen and the outputs stored so far."""

    fusion: Fusion
    outputs: list[TensorView]  # the computed outputs
    inputs: set[int]
    reductions: list[Expr]  # in fusion order
    pending: list[TensorView]  # outputs computed by pointwise work, widest first
    writes: list[Expr] = field(default_factory=list)  # indexed writes, in fusion order
    scans: list[Expr] = field(default_factory=list)  # per-row ops, their results in memory
    covered: set[int] = field(default_factory=set)  # outputs a kernel already stores
    groups: list[_GroupKernel] = field(default_factory=list)
    live: set[int] = field(default_factory=set)  # ids of the exprs the outputs need
    # a plain reduction's per-row epilogue (by the reduction's id), where its kernel also
    # stores outputs from its loop (``_sibling_groups``): a reduction kernel, not a group
    epilogues: dict[int, tuple[TensorView, ...]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, fusion: Fusion, computed_outputs: list[TensorView], results: set[int]
    ) -> _Segmentation:
        """``results``: ids of library results (in memory, as inputs are)."""
        live = _live_exprs(computed_outputs)
        exprs = [e for e in fusion.exprs if id(e) in live]
        reductions = [e for e in exprs if e.op.kind in (OpKind.REDUCTION, OpKind.WELFORD)]
        scans = [e for e in exprs if e.op.kind is OpKind.SCAN]
        pending = [
            o
            for o in computed_outputs
            if o.definition is not None
            and o.definition.op.kind
            not in (OpKind.REDUCTION, OpKind.WELFORD, OpKind.SCAN, OpKind.WRITE)
        ]
        # widest first; of one rank, those without broadcast dims first: a per-row value
        # of keepdim shape (layer norm's rstd as Thunder returns it, [N, 1]) is stored by
        # the kernel of the full-shape output it normalizes, not a root of its own
        pending.sort(key=lambda t: (-len(t.shape_domain), _broadcast_dims(t)))
        writes = [e for e in exprs if e.op.kind is OpKind.WRITE]
        # library and scan results live in memory: every other kernel reads them as inputs
        memory = (
            {id(v) for v in fusion.inputs} | results | {id(o) for e in scans for o in e.outputs}
        )
        return cls(
            fusion,
            computed_outputs,
            memory,
            reductions,
            pending,
            writes=writes,
            scans=scans,
            live=live,
        )

    @property
    def fusion_input_ids(self) -> set[int]:
        return {id(v) for v in self.fusion.inputs}

    @property
    def output_ids(self) -> set[int]:
        return {id(v) for v in self.outputs}

    def memory_outside(self, members: list[Expr]) -> set[int]:
        """The inputs and the results of every reduction not among ``members``: what a
        kernel computing ``members`` reads from memory."""
        ids = {id(e) for e in members}
        return (
            self.inputs
            | {id(o) for e in self.reductions if id(e) not in ids for o in e.outputs}
            | {id(e.outputs[0]) for e in self.writes}
        )

    def grouped(self) -> set[int]:
        """Ids of the reductions a normalization kernel computes (its cross ones too)."""
        return {id(e) for g in self.groups for e in g.group.reductions + g.group.cross}

    def memory_ids(self) -> set[int]:
        """What the kernels read from memory: the inputs, every reduction's results and
        indexed write's output."""
        ids = self.inputs | {id(o) for e in self.reductions for o in e.outputs}
        return ids | {id(e.outputs[0]) for e in self.writes}

    def needed(self, e: Expr) -> bool:
        """Whether reduction ``e``'s results are an output or used again by an expr the
        outputs need (a reduction only dead ops use launches nothing)."""
        return id(e) in self.live


def segment(
    fusion: Fusion, computed_outputs: list[TensorView]
) -> tuple[list[KernelSpec], list[TensorView]]:
    """Kernel specs in run order, and the intermediate tensors that need buffers.

    A library op (matmul, attention: ``ir/ops/library.py``) is a segment of its own
    (``library_spec``): its results are in memory for the kernels after it, as inputs
    are, and the kernels before it store its operands that they compute (in buffers
    when they are not outputs), unless view ops alone make them of an input or a library
    result: a view segment each (``view_spec``). The library segment's results are not
    among the buffers: torch makes them (those that are outputs are copied into their
    destinations)."""
    library = [e for e in fusion.exprs if e.op.kind is OpKind.LIBRARY]
    results = {id(o) for e in library for o in e.outputs}
    kernel_outputs = [o for o in computed_outputs if id(o) not in results]
    operands = _library_operands(library, fusion, results)
    extra = [t for t in operands if all(t is not o for o in kernel_outputs)]
    in_memory = results | {id(t) for t in fusion.inputs}
    chains = {id(t): view_chain_of(t, in_memory) for t in extra}
    views = [view_spec(t, chains[id(t)]) for t in extra if chains[id(t)]]
    extra = [t for t in extra if not chains[id(t)]]
    specs, intermediates = _kernel_segments(fusion, kernel_outputs + extra, results, library, views)
    return specs, intermediates + extra


def _library_operands(library: list[Expr], fusion: Fusion, results: set[int]) -> list[TensorView]:
    """The tensor operands of library ops that kernels compute (each once, in order)."""
    out: list[TensorView] = []
    for e in library:
        for v in e.inputs:
            if (
                isinstance(v, TensorView)
                and v.definition is not None
                and id(v) not in results
                and all(v is not t for t in out)
            ):
                out.append(v)
    return out


def _kernel_segments(
    fusion: Fusion,
    computed_outputs: list[TensorView],
    results: set[int],
    library: list[Expr],
    views: list[KernelSpec],
) -> tuple[list[KernelSpec], list[TensorView]]:
    """The segments of ``segment``: ``results`` (library results) live in memory;
    ``views``: the view segments of library operands."""
    seg = _Segmentation.of(fusion, computed_outputs, results)
    _normalization_groups(seg)
    _chained_groups(seg)
    _cross_reductions(seg)
    _sibling_groups(seg)
    memory_ids = seg.memory_ids()
    epilogues = scan_epilogues(seg.scans, seg.pending, seg.covered, memory_ids)
    loop_stores = _loop_stores(seg, memory_ids)
    specs = _pointwise_specs(seg, memory_ids)
    reduction_specs, intermediates = _reduction_specs(
        seg, memory_ids, _stored_apart(seg, specs), loop_stores
    )
    specs += reduction_specs
    write_specs, write_buffers = _write_specs(seg, memory_ids)
    specs += write_specs
    intermediates += write_buffers
    specs += views + [library_spec(e) for e in library]
    scan_kernels, scan_buffers = scan_specs(
        seg.fusion, seg.scans, seg.output_ids, memory_ids, epilogues
    )
    specs += scan_kernels
    intermediates += scan_buffers
    # what the kernels load: the others', and the normalization kernels' own (a group can
    # read another group's results: a first pass builds them without extra stores)
    first, _ = _group_specs(seg, memory_ids, set())
    loaded = {id(a.tv) for s in specs for a in s.accesses[: s.n_loads]}
    loaded |= {
        id(a.tv)
        for s in first
        for a in _loads(s)
        if not any(a.tv is o for e in s.group.reductions for o in e.outputs)
    }
    group_specs, stored_by_groups = _group_specs(seg, memory_ids, loaded)
    specs = _run_order(specs + group_specs)
    unread = _drop_unread_results(specs, seg.output_ids)
    return specs, [t for t in intermediates + stored_by_groups if id(t) not in unread]


def _drop_unread_results(specs: list[KernelSpec], output_ids: set[int]) -> set[int]:
    """Reduction kernels (and their finer plans) stop storing the results that no kernel
    loads and the fusion does not return: a var_mean's Welford stored its M2 and its int64
    count beside the variance computed from them, 20 bytes a row where 8 are asked for
    (r1_077, a var_mean over 7: more bytes stored than loaded). Returns their ids: they
    need no buffer (over an empty extent ``Pipeline._fill_empty`` makes one for the
    epilogue's fallback kernels, which read the fills)."""
    read = {id(a.tv) for s in specs for a in _loads(s)}
    dropped: set[int] = set()

    def visit(spec: KernelSpec) -> None:
        for part in spec.fallback:
            visit(part)
        if spec.kind != "reduction":
            return
        unread = {
            id(o)
            for e in spec.reductions
            for o in e.outputs
            if id(o) not in output_ids and id(o) not in read
        }
        if unread and spec.unstore(unread):
            dropped.update(unread)

    for spec in specs:
        visit(spec)
    return dropped


def _loads(spec: KernelSpec) -> list[Access]:
    """The accesses ``spec`` loads, and those of its finer plan."""
    return spec.accesses[: spec.n_loads] + [a for f in spec.fallback for a in _loads(f)]


def _normalization_groups(seg: _Segmentation) -> None:
    """A normalization kernel for each pending output that uses a reduction again,
    broadcast, in its input's coordinates; with the outputs it can store."""
    for root in seg.pending:
        if id(root) in seg.covered:
            continue
        group, _ = find_group(root, seg.inputs)
        if group is None or any(
            _per_row_dim(root.shape_domain[d]) and not _per_row_dim(_row_input(group, d))
            for d in group.dims
        ):
            # a per-row value (extent 1 where the rows are reduced): not a root; rows of
            # one element (the input's dim is extent 1 too) are, computed in place
            continue
        memory = seg.memory_outside(group.reductions)
        loaded = [tv for tv, _ in group_reached(group, memory) if _computed(tv, memory)]
        outs = [o for e in group.reductions for o in e.outputs]
        if waits_on(loaded, outs, seg.memory_outside([])):
            continue  # it would read what is computed from its own reductions (a scan's)
        group.partners = tuple(p for p in _partners(seg, root) if _same_group(p, group, seg))
        group.beside = _beside(seg, group, root)
        stores, xstores = _group_stores(seg, group, root)
        seg.covered |= {id(a.tv) for a in stores + xstores}
        seg.groups.append(_GroupKernel(group, stores, xstores))


def _beside(seg: _Segmentation, group: Group, root: TensorView) -> tuple[TensorView, ...]:
    """Pending outputs of the root's coordinates that no reduction of the group reaches
    (``_same_coordinates``): the group's kernel computes them from its tile and stores
    them, where its loads then wait on nothing it stores (a residual sum cast to bf16
    beside the layer norm of its fp32 value: one kernel, not a second that reads both
    addends again)."""
    memory = seg.memory_outside(group.reductions)
    everything = seg.memory_outside([])
    own = group.red_outputs()
    through = frozenset(id(e) for e in group.reductions)
    loaded = [tv for tv, _ in group_reached(group, memory) if _computed(tv, memory)]
    stored: list[TensorView] = [root, *group.partners]
    out: list[TensorView] = []
    for o in _same_coordinates(root, seg, memory):
        ups = reached(o, memory, through)
        if any(id(tv) in own for tv, _ in ups):
            continue  # it uses the group's results: a root of its own (or a partner)
        with_o = loaded + [tv for tv, _ in ups if _computed(tv, memory)]
        # nor on the group's results (a max's softmax sum padded into the rows: that sum's
        # kernel would wait on this one; program 398846)
        if not waits_on(with_o, stored + out + [o] + group.results(), everything):
            out.append(o)
            loaded = with_o
    return tuple(out)


def _group_stores(
    seg: _Segmentation, group: Group, root: TensorView
) -> tuple[list[Access], list[Access]]:
    """What the group's kernel stores: ``root`` and the pending outputs it reaches in its
    coordinates, and the outputs computed per row."""
    memory = seg.memory_outside(group.reductions)
    reached = group_reached(group, memory)
    # what the kernel loads that another segment computes must not need what it stores
    # or its reductions' results (a max's softmax sum read by an output of the max's rows,
    # padded into them: that sum's kernel would wait on this one; program 398846)
    loaded = [tv for tv, _ in reached if _computed(tv, memory)]
    everything = seg.memory_outside([])
    results = group.results()
    xstores = [
        Access(o, (), store=True, backward=True)
        for o in seg.outputs
        if id(o) not in seg.covered
        and xspace_output(o, group, memory)
        and not waits_on(loaded, [o, *results], everything)
    ]
    xs_ids = {id(a.tv) for a in xstores}
    stores = [Access(root, (), store=True)] + [Access(o, (), store=True) for o in group.beside]
    for o in seg.pending:
        if id(o) in seg.covered or id(o) in xs_ids or any(o is t for t in (root, *group.beside)):
            continue
        chain = next((c for t, c in reached if t is o), None)
        if (
            chain is not None
            and stores_every_position(chain)
            and not waits_on(loaded, [o, *results], everything)
        ):
            stores.append(Access(o, chain, store=True))
    return stores, xstores


def _cross_reductions(seg: _Segmentation) -> None:
    """Reductions over a normalization group's kept dims of tensors in its root's
    coordinates join its kernel (``Group.cross``: a layer norm backward's column sums, dw
    and db, beside its row sums): each program adds its rows into partial column results,
    a finishing kernel combines them and stores the outputs computed from them alone
    (``Group.cross_epilogue``: dw cast to bf16). nvFuser's inner-outer persistent
    kernels do the same; the inputs are read once for both. Only single-result
    reductions of tensors that share a leaf with the root or its rows (their extents),
    and none whose result the group's kernel reads, or another cross reduction's input
    reads; nor one whose input waits on what the kernel stores."""
    taken = seg.grouped()
    for gk in seg.groups:
        if not gk.group.rows:
            continue
        for e in seg.reductions:
            if id(e) not in taken and seg.needed(e) and _joins(seg, gk, e):
                gk.group.cross.append(e)
                taken.add(id(e))
        if gk.group.cross:
            gk.group.cross_epilogue = _cross_epilogue(seg, gk.group)
            seg.covered |= {id(o) for o in gk.group.cross_epilogue}


def _joins(seg: _Segmentation, gk: _GroupKernel, e: Expr) -> bool:
    """Whether reduction ``e`` can be a cross reduction of ``gk``'s group (beside those it
    has): over its kept dims, of a tensor that reaches a leaf of the root or its rows (so
    of their extents), not read by the kernel or another cross input, not reading one, and
    not waiting on what the kernel stores."""
    group = gk.group
    memory = seg.memory_outside(group.reductions)
    leaves = set().union(
        *(_pointwise_leaves(t, seg.inputs) for t in [group.root, *_inputs(group.reductions)])
    )
    if not _crosses(e, group, group.kept_dims()) or not leaves & _pointwise_leaves(
        e.inputs[0], seg.inputs
    ):
        return False
    reads = {id(tv) for tv, _ in group_reached(group, memory)}
    ups = _reached_in_group(e.inputs[0], memory, group)
    stored = [a.tv for a in gk.stores + gk.xstores]
    stored += [o for r in group.reductions for o in r.outputs] + list(e.outputs)
    return not (
        id(e.outputs[0]) in reads
        or any(id(c.outputs[0]) in ups for c in group.cross)
        or any(
            id(e.outputs[0]) in _reached_in_group(c.inputs[0], memory, group) for c in group.cross
        )
        or waits_on(
            [tv for tv in ups.values() if _computed(tv, memory)],
            stored,
            seg.memory_outside([]),
        )
    )


def _cross_epilogue(seg: _Segmentation, group: Group) -> tuple[TensorView, ...]:
    """The outputs no kernel stores yet computed from the cross reductions' results alone
    (a cast, a scale): the finishing kernel stores them."""
    columns = Group(group.cross[0].inputs[0], group.kept_dims(), list(group.cross), rows=False)
    memory = seg.memory_outside(group.reductions)
    return tuple(
        o
        for o in seg.outputs
        if id(o) not in seg.covered
        and o.definition is not None
        and all(o.definition is not c for c in group.cross)
        and xspace_output(o, columns, memory)
    )


def _reached_in_group(tv: TensorView, memory: set[int], group: Group) -> dict[int, TensorView]:
    """The tensors the group's kernel reaches from ``tv`` (through its own reductions)."""
    through = frozenset(id(e) for e in group.reductions)
    return {id(t): t for t, _ in reached(tv, memory, through)}


def _inputs(reductions: list[Expr]) -> list[TensorView]:
    return [e.inputs[0] for e in reductions if isinstance(e.inputs[0], TensorView)]


def _crosses(e: Expr, group: Group, kept: tuple[int, ...]) -> bool:
    """Whether ``e`` reduces exactly the group's kept dims of a tensor of its root's
    coordinates (size-1 dims where the root has them, nowhere else), one result."""
    x, root = e.inputs[0], group.root
    if (
        e.op.kind is not OpKind.REDUCTION
        or n_results(e) != 1
        or not kept
        or tuple(sorted(e.attrs["dims"])) != kept
        or not isinstance(x, TensorView)
        or len(x.shape_domain) != len(root.shape_domain)
    ):
        return False
    return all(
        _per_row_dim(a) == _per_row_dim(b) for a, b in zip(x.shape_domain, root.shape_domain)
    )


def _chained_groups(seg: _Segmentation) -> None:
    """A normalization kernel of per-row results for each reduction whose input uses other
    reductions of its rows again, broadcast back over them (``chained_group``: a
    log-sum-exp), with the per-row outputs it can store."""
    for e in seg.reductions:
        if id(e) in seg.grouped() or not seg.needed(e):
            continue
        x = e.inputs[0]
        if any(_per_row_dim(x.shape_domain[d]) for d in e.attrs["dims"]):
            continue  # rows of one element (a keepdim result's): reduced in place
        group = chained_group(e, seg.inputs)
        if group is None or any(id(r) in seg.grouped() for r in group.reductions):
            continue
        if any(not _reaches_pointwise(x, r.inputs[0], seg.inputs) for r in group.reductions):
            continue  # the rows of a reduction it reaches are other coordinates
        memory = seg.memory_outside(group.reductions)
        loaded = [tv for tv, _ in group_reached(group, memory) if _computed(tv, memory)]
        outs = [o for r in group.reductions for o in r.outputs]
        if waits_on(loaded, outs, seg.memory_outside([])):
            continue  # it would read what is computed from its own reductions
        xs = [
            o for o in seg.outputs if id(o) not in seg.covered and xspace_output(o, group, memory)
        ]
        seg.covered |= {id(o) for o in xs}
        seg.groups.append(
            _GroupKernel(group, [], [Access(o, (), store=True, backward=True) for o in xs])
        )


def _sibling_groups(seg: _Segmentation) -> None:
    """Reductions of the same rows (same dims, same coordinates) that do not feed each
    other read their input once, in one kernel; so does a reduction whose results feed
    only per-row outputs (mean = sum / n, var_mean's var): the epilogue joins it."""
    in_groups = seg.grouped()
    rest = [e for e in seg.reductions if id(e) not in in_groups and seg.needed(e)]
    for cluster in siblings(rest, seg.inputs, seg.fusion.kernel_partners):
        group = Group(
            cluster[0].inputs[0],
            tuple(cluster[0].attrs["dims"]),
            cluster,
            {id(e): 0 for e in cluster},
            rows=False,
        )
        memory = seg.memory_outside(cluster)
        xs = [
            o for o in seg.outputs if id(o) not in seg.covered and xspace_output(o, group, memory)
        ]
        if len(cluster) == 1 and all(o.definition is cluster[0] for o in xs):
            continue  # no epilogue: a plain reduction kernel
        epilogue = epilogue_outputs(group, [Access(o, (), store=True) for o in xs], seg.inputs)
        if (
            len(cluster) == 1
            and all(o.definition is cluster[0] or o in epilogue for o in xs)
            and _loop_store_candidates(seg, cluster[0], seg.memory_ids())
        ):
            # a reduction kernel stores the epilogue after its results, and outputs of
            # its coordinates from its loop (a bf16 bias grad beside its bf16 dgelu)
            seg.epilogues[id(cluster[0])] = epilogue
            seg.covered |= {id(o) for o in epilogue}
            continue
        seg.covered |= {id(o) for o in xs}
        seg.groups.append(
            _GroupKernel(group, [], [Access(o, (), store=True, backward=True) for o in xs])
        )


def _pointwise_specs(seg: _Segmentation, memory_ids: set[int]) -> list[KernelSpec]:
    """A pointwise kernel for each pending output no kernel stores yet; it also stores
    the pending outputs upstream of it, in its coordinates."""
    specs: list[KernelSpec] = []
    ups = {id(r): upstream_tensors(r, memory_ids) for r in seg.pending}
    # an output upstream of another pending output is stored by that output's kernel: the
    # downstream ones are roots first (stable otherwise)
    roots = sorted(
        seg.pending, key=lambda r: any(id(r) in ups[id(o)] for o in seg.pending if o is not r)
    )
    for root in roots:
        if id(root) in seg.covered:
            continue
        up = ups[id(root)]
        stores = [Access(root, (), store=True)]
        seg.covered.add(id(root))
        partners = _partners(seg, root)
        for p in partners:  # in the root's coordinates: stored as they are
            stores.append(Access(p, (), store=True))
            seg.covered.add(id(p))
        loaded = _computed_loads([up] + [ups[id(p)] for p in partners], memory_ids)
        for o in seg.pending:
            up_o = next(
                (u[id(o)] for u in [up] + [ups[id(p)] for p in partners] if id(o) in u), None
            )
            if (
                id(o) not in seg.covered
                and up_o is not None
                and stores_every_position(up_o[1])
                and not waits_on(loaded, [o], memory_ids)
            ):
                stores.append(Access(o, up_o[1], store=True))
                seg.covered.add(id(o))
        beside = []
        for o in _same_coordinates(root, seg, memory_ids):
            with_o = loaded + _computed_loads([ups[id(o)]], memory_ids)
            if not waits_on(with_o, [a.tv for a in stores] + beside + [o], memory_ids):
                beside.append(o)
                loaded = with_o
        for o in beside:
            stores.append(Access(o, (), store=True))
            seg.covered.add(id(o))
        red_outs = {id(o) for e in seg.reductions for o in e.outputs}
        why = (
            "pointwise work after the reductions"
            if red_outs & set(up)
            else "pointwise work beside the reductions"
            if seg.reductions
            else "a fusion without reductions"
        )
        specs.append(
            kernel_spec(
                "pointwise",
                root,
                memory_ids,
                stores,
                reason=why,
                partners=partners,
                beside=tuple(beside),
            )
        )
    return specs


def _computed_loads(ups: list[dict], memory_ids: set[int]) -> list[TensorView]:
    """The tensors a kernel reaching ``ups`` loads that another segment computes (a
    library op's results, a reduction's, a scan's)."""
    return [tv for u in ups for tv, _ in u.values() if _computed(tv, memory_ids)]


def _computed(tv: TensorView, memory: set[int]) -> bool:
    """``tv`` is read from memory and another segment computes it (not a fusion input)."""
    return id(tv) in memory and tv.definition is not None


def _same_coordinates(
    root: TensorView, seg: _Segmentation, memory_ids: set[int]
) -> list[TensorView]:
    """Pending outputs not yet stored that have ``root``'s coordinates (both reach one
    tensor without broadcast dims through pointwise ops alone, neither has broadcast
    dims): ``x + b`` cast to bf16 beside ``gelu(x + b)`` cast to bf16, one kernel."""
    if any(d.is_broadcast for d in root.shape_domain):
        return []
    leaves = _pointwise_leaves(root, memory_ids)
    return [
        o
        for o in seg.pending
        if id(o) not in seg.covered
        and o is not root
        and len(o.shape_domain) == len(root.shape_domain)
        and not any(d.is_broadcast for d in o.shape_domain)
        and leaves & _pointwise_leaves(o, memory_ids)
    ]


def _same_group(tv: TensorView, group: Group, seg: _Segmentation) -> bool:
    """Whether ``tv`` roots a group of ``group``'s dims and reductions (a partner that one
    normalization kernel stores with the root)."""
    other, _ = find_group(tv, seg.inputs)
    return (
        other is not None
        and other.rows == group.rows
        and other.dims == group.dims
        and {id(e) for e in other.reductions} == {id(e) for e in group.reductions}
    )


def _partners(seg: _Segmentation, root: TensorView) -> tuple[TensorView, ...]:
    """The pending outputs no kernel stores yet that ``Fusion.kernel_partners`` pairs with
    ``root`` (the other part of a complex output), of its rank."""
    pending = {id(o) for o in seg.pending} - seg.covered
    out = []
    for a, b in seg.fusion.kernel_partners:
        other = b if a is root else a if b is root else None
        if other is not None and id(other) in pending and other.ndim == root.ndim:
            out.append(other)
    return tuple(out)


def _loop_stores(seg: _Segmentation, memory_ids: set[int]) -> dict[int, tuple[TensorView, ...]]:
    """Per plain reduction (by id), the pending outputs its kernel stores from its R loop
    (``_loop_store_candidates``). The kernel reads their inputs once for both, where a
    pointwise kernel would store them and the reduction read them (or theirs) again: a
    GELU backward's dgelu and the bias grad that sums it, nvFuser's reduction with a
    pointwise output."""
    grouped = seg.grouped()
    found: dict[int, tuple[TensorView, ...]] = {}
    for e in seg.reductions:
        if id(e) in grouped or not seg.needed(e):
            continue
        outs = _loop_store_candidates(seg, e, memory_ids)
        if outs:
            seg.covered |= {id(o) for o in outs}
            found[id(e)] = tuple(outs)
    return found


def _loop_store_candidates(seg: _Segmentation, e: Expr, memory_ids: set[int]) -> list[TensorView]:
    """The pending outputs not yet stored that reduction ``e``'s kernel can store from its
    loop: of its input's coordinates (the same rank, no broadcast dims, a tensor reached
    from both through pointwise ops alone), computed from what the kernel reads, not from
    its own results."""
    x = e.inputs[0]
    if not isinstance(x, TensorView) or any(d.is_broadcast for d in x.shape_domain):
        return []
    leaves = _pointwise_leaves(x, memory_ids)
    results = list(e.outputs)
    ups_x = upstream_tensors(x, memory_ids)
    outs: list[TensorView] = []
    for o in seg.pending:
        if (
            id(o) in seg.covered
            or len(o.shape_domain) != len(x.shape_domain)
            or any(d.is_broadcast for d in o.shape_domain)
            or not leaves & _pointwise_leaves(o, memory_ids)
        ):
            continue
        ups_o = upstream_tensors(o, memory_ids)
        if any(id(r) in ups_o for r in results):
            continue  # computed from the reduction's own results
        if waits_on(_computed_loads([ups_x, ups_o], memory_ids), [o, *results], memory_ids):
            continue
        outs.append(o)
    return outs


def _with_loop_stores(
    seg: _Segmentation, e: Expr, memory_ids: set[int], outs: tuple[TensorView, ...]
) -> KernelSpec:
    """``e``'s reduction kernel storing ``outs`` from its loop; its fallback (where the
    reduction scheduler declines the loop's stores: an expanded input, a store laid out
    unlike the loads) a pointwise kernel of them, then the reduction kernel alone, which
    reads what the pointwise kernel stores where that loads fewer bytes."""
    epilogue = seg.epilogues.get(id(e), ())
    fills = epilogue_kernels(epilogue, memory_ids)
    spec = reduction_spec(e, memory_ids, (), None, epilogue, fills, loop_stores=outs)
    pointwise = kernel_spec(
        "pointwise",
        outs[0],
        memory_ids,
        [Access(o, (), store=True) for o in outs],
        reason="outputs of a reduction input's coordinates, stored apart from the reduction",
        beside=outs[1:],
    )
    plain = _plain_reduction(e, memory_ids, _stored_apart(seg, [pointwise]), epilogue)
    spec.fallback = [pointwise, plain]
    return spec


def _plain_reduction(
    e: Expr, memory_ids: set[int], stored: set[int], epilogue: tuple[TensorView, ...] = ()
) -> KernelSpec:
    """``e``'s reduction kernel (with its per-row ``epilogue``), reading an output that a
    pointwise kernel stores (``stored``) instead of recomputing it where that loads fewer
    bytes of its coordinates (``_streamed_bytes``)."""
    fills = epilogue_kernels(epilogue, memory_ids)
    spec = reduction_spec(e, memory_ids, (), None, epilogue, fills)
    if stored:
        reading = reduction_spec(e, memory_ids | stored, (), None, epilogue, fills)
        if _streamed_bytes(reading) < _streamed_bytes(spec):
            spec = dataclasses.replace(
                reading, reason=reading.reason + "; it reads an output another kernel stores"
            )
    return spec


def _reduction_specs(
    seg: _Segmentation,
    memory_ids: set[int],
    stored: set[int] = frozenset(),
    loop_stores: dict[int, tuple[TensorView, ...]] | None = None,
) -> tuple[list[KernelSpec], list[TensorView]]:
    """A reduction kernel for each needed reduction outside the normalization kernels,
    and its results that are not outputs (they need buffers). ``loop_stores``: the outputs
    a reduction kernel stores from its loop (``_loop_stores``). Otherwise a reduction reads
    an output that a pointwise kernel of fusion inputs stores (``stored``) where that
    loads fewer bytes (``_plain_reduction``)."""
    grouped = seg.grouped()
    specs: list[KernelSpec] = []
    intermediates: list[TensorView] = []
    for e in seg.reductions:
        if id(e) in grouped or not seg.needed(e):
            continue
        intermediates += [o for o in e.outputs if id(o) not in seg.output_ids]
        if loop_stores and id(e) in loop_stores:
            specs.append(_with_loop_stores(seg, e, memory_ids, loop_stores[id(e)]))
        else:  # (an epilogue taken from its group: its loop stores went to a scan's kernel)
            specs.append(_plain_reduction(e, memory_ids, stored, seg.epilogues.get(id(e), ())))
    return specs, intermediates


def _stored_apart(seg: _Segmentation, pointwise: list[KernelSpec]) -> set[int]:
    """Ids of the outputs that pointwise kernels of fusion inputs alone store (no load of a
    reduction's, scan's or library op's result: a reduction may read them, run after them,
    without a cycle)."""
    return {
        id(a.tv)
        for s in pointwise
        if all(id(a.tv) in seg.fusion_input_ids for a in s.accesses[: s.n_loads])
        for a in s.accesses[s.n_loads :]
    }


def _streamed_bytes(spec: KernelSpec) -> int:
    """Bytes per iteration element that ``spec`` loads: of each load of the reduction
    input's rank without broadcast dims (the tensors read in full; a bias is read once per
    column, a per-row value once per row)."""
    rank = len(spec.reduction.inputs[0].shape_domain)
    return sum(
        itemsize(a.tv.dtype)
        for a in spec.accesses[: spec.n_loads]
        if len(a.tv.shape_domain) == rank and not any(d.is_broadcast for d in a.tv.shape_domain)
    )


def _write_specs(
    seg: _Segmentation, memory_ids: set[int]
) -> tuple[list[KernelSpec], list[TensorView]]:
    """Two kernels per indexed write (``ir.ops.writes``): its arg copied into its output,
    then, over its index's coordinates, its src (with its pointwise producers) stored at
    the indirect address (added atomically when it accumulates); and the outputs that are
    not fusion outputs (they need buffers)."""
    specs: list[KernelSpec] = []
    buffers: list[TensorView] = []
    for e in seg.writes:
        arg, index, src = (v for v in e.inputs if isinstance(v, TensorView))
        out = e.outputs[0]
        assert isinstance(out, TensorView)
        name = e.attrs["source"]
        copy = Access(out, (), store=True, value=arg)
        specs.append(kernel_spec("pointwise", arg, memory_ids, [copy], reason=f"{name}: the copy"))
        write = Access(out, (e,), store=True, value=src)
        how = "added atomically" if e.attrs["accumulate"] else "stored"
        why = f"{name}: src {how} at the index's positions"
        specs.append(kernel_spec("pointwise", index, memory_ids, [write], reason=why, also=(src,)))
        if id(out) not in seg.output_ids:
            buffers.append(out)
    return specs, buffers


def _group_specs(
    seg: _Segmentation, memory_ids: set[int], loaded: set[int]
) -> tuple[list[KernelSpec], list[TensorView]]:
    """The normalization kernels, and the group results they store because another
    kernel reads them (``loaded``; they need buffers)."""
    specs: list[KernelSpec] = []
    extras: list[TensorView] = []
    stored_by_group: set[int] = set()
    for group, stores, xstores in seg.groups:
        # a group's reduction result that another kernel reads is stored from the group
        extra = [
            Access(o, (), store=True, backward=True)
            for e in group.reductions
            for o in e.outputs
            if id(o) in loaded
            and id(o) not in stored_by_group
            and all(a.tv is not o for a in xstores)
        ]
        # its cross reductions' results that are outputs or read elsewhere, then the
        # outputs computed from them, all stored by its finishing kernel
        cross = [
            Access(o, (), store=True, cross=True)
            for e in group.cross
            for o in e.outputs
            if id(o) in seg.output_ids or id(o) in loaded
        ] + [Access(o, (), store=True, cross=True) for o in group.cross_epilogue]
        extras += [a.tv for a in extra]
        extras += [a.tv for a in cross if id(a.tv) not in seg.output_ids]
        xstores = xstores + extra + cross
        stored_by_group |= {id(a.tv) for a in xstores}
        memory = seg.memory_outside(group.reductions)
        specs.append(group_spec(group, memory, stores, xstores, memory_ids))
    return specs, extras


_SAME_COORDINATES = ("set", "stride_order")  # shape ops that keep every coordinate


def siblings(
    reductions: list[Expr],
    memory: set[int],
    partners: list[tuple[TensorView, TensorView]] | None = None,
) -> list[list[Expr]]:
    """``reductions`` in clusters (fusion order) that one kernel can compute in one read:
    the same reduced dims of inputs in the same coordinates (both reach one tensor without
    broadcast dims through pointwise ops alone, or two ``partners``: the parts of one
    complex tensor), none depending on another."""
    clusters: list[list[Expr]] = []
    same = {id(b): id(a) for a, b in partners or ()}
    leaves = {
        id(e): {same.get(t, t) for t in _pointwise_leaves(e.inputs[0], memory, within=True)}
        for e in reductions
    }
    for e in reductions:
        dims, rank = tuple(e.attrs["dims"]), len(e.inputs[0].shape_domain)
        for c in clusters:
            head = c[0]
            if (
                tuple(head.attrs["dims"]) == dims
                and len(head.inputs[0].shape_domain) == rank
                and leaves[id(e)] & leaves[id(head)]
                and not members_upstream(e, {id(r) for r in c}, memory)
            ):
                c.append(e)
                break
        else:
            clusters.append([e])
    return clusters


def _pointwise_leaves(tv: TensorView, memory: set[int], within: bool = False) -> set[int]:
    """Tensors in memory (or inputs) without broadcast dims that ``tv`` reaches through
    pointwise ops (and copies) alone: ``tv`` has their coordinates and extents; ``within``:
    the computed tensors without broadcast dims on the way too (a reshaped input, which two
    reductions may both reach: cross-entropy's loss sum and its count of valid targets)."""
    found: set[int] = set()
    seen: set[int] = set()
    stack = [tv]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        flat = not any(d.is_broadcast for d in t.shape_domain)
        if id(t) in memory or t.definition is None:
            if flat:
                found.add(id(t))
            continue
        if within and flat:
            found.add(id(t))
        d = t.definition
        if d.op.kind is OpKind.POINTWISE or d.op.name in _SAME_COORDINATES:
            stack.extend(i for i in d.inputs if isinstance(i, TensorView))
    return found


def _reaches_pointwise(tv: TensorView, target: TensorView, memory: set[int]) -> bool:
    """Whether ``tv`` reaches ``target`` through pointwise ops (and copies) alone: the two
    have the same coordinates and extents (a log-sum-exp's ``exp(x - max)`` reaches ``x``)."""
    seen: set[int] = set()
    stack = [tv]
    while stack:
        t = stack.pop()
        if t is target:
            return True
        if id(t) in seen or id(t) in memory or t.definition is None:
            continue
        seen.add(id(t))
        d = t.definition
        if d.op.kind is OpKind.POINTWISE or d.op.name in _SAME_COORDINATES:
            stack.extend(i for i in d.inputs if isinstance(i, TensorView))
    return False


def _run_order(specs: list[KernelSpec]) -> list[KernelSpec]:
    """Specs ordered so that every kernel runs after the kernels that store what it loads
    and after the earlier kernels that store what it stores (an indexed write's copy, then
    its writes), stable otherwise."""
    producers: dict[int, list[int]] = {}
    for i, s in enumerate(specs):
        for tv in s.outputs:
            producers.setdefault(id(tv), []).append(i)
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
            for j in producers.get(id(a.tv), []):
                if j != i:
                    visit(j)
        for tv in s.outputs:
            for j in producers[id(tv)]:
                if j < i:
                    visit(j)
        state[i] = 2
        done.append(i)

    for i in range(len(specs)):
        visit(i)
    return [specs[i] for i in done]


def _per_row_dim(d) -> bool:
    """A dim of extent 1 (a keepdim result's), not an expanded one (an expanded input's
    rows are real rows, their values repeated)."""
    return d.is_broadcast and not d.expanded


def _row_input(group: Group, d: int):
    """Dim ``d`` of the group's reduced input (the rows)."""
    x = group.reductions[0].inputs[0]
    assert isinstance(x, TensorView)
    return x.shape_domain[d]


def _broadcast_dims(tv: TensorView) -> int:
    return sum(d.is_broadcast for d in tv.shape_domain)


def _live_exprs(outputs: list[TensorView]) -> set[int]:
    """Ids of the exprs that ``outputs`` depend on (through tensors and scalars)."""
    live: set[int] = set()
    stack: list = list(outputs)
    while stack:
        e = stack.pop().definition
        if e is None or id(e) in live:
            continue
        live.add(id(e))
        for v in e.inputs:
            stack.extend(getattr(v, "elements", [v]))  # a Vector's Scalars
    return live
