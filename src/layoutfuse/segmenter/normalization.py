"""Find normalization groups: reductions whose results are used again, broadcast, in the
coordinates of their own input (softmax, layer norm, RMS norm, var_mean + normalize).

Walking backward from a full-shape output, a reduction's output is reached through a
chain of broadcasts. When that chain puts the reduction's kept dims back where they
were in its input, and re-inserts only the reduced dims, the reduction's value is a
per-row constant of the output's coordinates: one kernel can reduce and then use the
result on the same tile (``schedulers.normalization``). All reductions of a group reduce
the same dims of the same coordinates; anything else is computed by its own kernel
first and read from memory.

Softmax's pair of reductions (a ``max`` of ``A`` and a ``sum`` of ``exp(A - max)``) is
recorded as *online* (``Group.online``): a looped kernel accumulates the running max and
the running sum of exponentials in one pass, so the sum shares the max's level and the
group needs one pass fewer (``codegen.normalization``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.accesses import index_operands, reached
from ..dtypes import DataType, is_floating, itemsize
from ..ir import Expr, OpKind, TensorView

_TRANSPARENT = ("set", "stride_order")


def chain_restores(
    red_out: TensorView, chain: tuple[Expr, ...], rank: int, dims: tuple[int, ...]
) -> bool:
    """Whether ``chain`` (from the iteration side to ``red_out``) maps ``red_out``'s dims
    onto the kept dims of a rank-``rank`` space in order, with only ``dims`` inserted."""
    pos: list[int | None] = list(range(len(red_out.shape_domain)))
    for e in reversed(chain):
        name = e.op.name
        if name == "broadcast_in_dim":
            out = [None] * len(e.outputs[0].shape_domain)
            for i, d in enumerate(e.attrs["broadcast_dims"]):
                out[d] = pos[i]
            pos = out
        elif name == "squeeze":  # drops size-1 dims (a reduction of one element)
            pos = [p for i, p in enumerate(pos) if i not in e.attrs["dims"]]
        elif name not in _TRANSPARENT:
            return False
    kept = [d for d in range(rank) if d not in dims]
    if len(pos) != rank:
        return False
    return all(pos[d] is None for d in dims) and [pos[d] for d in kept] == list(range(len(kept)))


@dataclass
class Group:
    """Reductions computed inside one normalization kernel rooted at ``root``."""

    root: TensorView
    dims: tuple[int, ...]
    reductions: list[Expr] = field(default_factory=list)  # in fusion order
    levels: dict[int, int] = field(default_factory=dict)  # id(expr) -> pass index
    rows: bool = True  # False: only per-row results are stored (an epilogue)
    online: dict[int, Expr] = field(default_factory=dict)  # id(sum) -> its softmax max
    # outputs in the root's coordinates that reach the same reductions and are stored with
    # it (``Fusion.kernel_partners``: the other part of a complex output)
    partners: tuple[TensorView, ...] = ()
    # outputs in the root's coordinates that no reduction reaches, computed from the same
    # coordinates and stored by the kernel too (``segments._beside``: a residual sum cast
    # to bf16 beside the layer norm of its fp32 value)
    beside: tuple[TensorView, ...] = ()
    # reductions over the kept dims of tensors in the root's coordinates (a layer norm
    # backward's column sums): the kernel adds each program's rows into partial column
    # results that a finishing kernel combines (``segments._cross_reductions``); and the
    # outputs computed from their results alone (a cast), stored by the finishing kernel
    cross: list[Expr] = field(default_factory=list)
    cross_epilogue: tuple[TensorView, ...] = ()

    def red_outputs(self) -> set[int]:
        return {id(o) for o in self.results()}

    def results(self) -> list[TensorView]:
        """The group's reduction results (what its kernel computes before its rows)."""
        return [o for e in self.reductions for o in e.outputs]

    def kept_dims(self) -> tuple[int, ...]:
        """The root's coordinates the group's reductions keep: what its cross reductions
        reduce."""
        return tuple(d for d in range(len(self.root.shape_domain)) if d not in self.dims)


def _walk(root: TensorView, memory: set[int], excluded: set[int]):
    """Reductions reached from ``root`` through restoring chains, those reached otherwise
    (``bad``), and the reduced dims seen."""
    rank = len(root.shape_domain)
    reached: dict[int, Expr] = {}
    bad: set[int] = set()
    dims_seen: set[tuple[int, ...]] = set()
    seen: set[tuple] = set()
    stack: list[tuple[TensorView, tuple[Expr, ...]]] = [(root, ())]
    while stack:
        tv, chain = stack.pop()
        key = (id(tv), tuple(id(e) for e in chain))
        if key in seen or id(tv) in memory or tv.definition is None:
            continue
        seen.add(key)
        e = tv.definition
        if e.op.kind is OpKind.SHAPE:
            stack.extend((i, chain) for i in index_operands(e))
            stack.append((e.inputs[0], chain + (e,)))
        elif e.op.kind is OpKind.POINTWISE:
            stack.extend((i, chain) for i in e.inputs if isinstance(i, TensorView))
        elif e.op.kind in (OpKind.REDUCTION, OpKind.WELFORD):
            dims = tuple(e.attrs["dims"])
            x = e.inputs[0]
            if (
                id(e) in excluded
                or len(x.shape_domain) != rank
                or not chain_restores(tv, chain, rank, dims)
            ):
                bad.add(id(e))
                continue
            dims_seen.add(dims)
            reached[id(e)] = e
            stack.append((x, ()))
        # creation ops are computed in place
    return reached, bad, dims_seen


def members_upstream(e: Expr, members: set[int], memory: set[int]) -> set[int]:
    """The group reductions ``e``'s input depends on."""
    found: set[int] = set()
    seen: set[int] = set()
    stack = [e.inputs[0]]
    while stack:
        tv = stack.pop()
        if id(tv) in seen or id(tv) in memory or tv.definition is None:
            continue
        seen.add(id(tv))
        d = tv.definition
        if id(d) in members:
            found.add(id(d))
            continue
        stack.extend(i for i in d.inputs if isinstance(i, TensorView))
    return found


def find_group(root: TensorView, memory: set[int]) -> tuple[Group | None, set[int]]:
    """The group rooted at ``root``, or None; and the ids of reductions reached that cannot
    join (they must run before, from memory)."""
    excluded: set[int] = set()
    while True:
        reached, bad, dims_seen = _walk(root, memory, excluded)
        if not bad - excluded:
            break
        # a reduction reached through a chain that does not restore it is computed
        # before, from memory, everywhere: walk again without it
        excluded |= bad
    if not reached or len(dims_seen) != 1:
        return None, excluded | set(reached)
    group = Group(root, dims_seen.pop())
    stop = memory | {id(o) for k in excluded for o in _outputs_of(root, k)}
    _order_and_levels(group, list(reached.values()), stop)
    return group, excluded


def chained_group(e: Expr, memory: set[int]) -> Group | None:
    """A group of epilogue kind (``rows=False``: only per-row results are stored) for a
    reduction ``e`` whose input uses reductions of the same rows again, broadcast back over
    them, where no full-size output roots a group: a log-sum-exp (cross-entropy's forward:
    the max, then the sum of ``exp(x - max)``, then its log) reads its rows in one kernel,
    not once per reduction. None where ``e``'s input reaches no such reduction."""
    found, excluded = find_group(e.inputs[0], memory)
    if found is None or found.dims != tuple(e.attrs["dims"]):
        return None
    group = Group(found.root, found.dims, rows=False)
    stop = memory | {id(o) for k in excluded for o in _outputs_of(found.root, k)}
    _order_and_levels(group, [*found.reductions, e], stop)
    return group


def _order_and_levels(group: Group, reductions: list[Expr], stop: set[int]) -> None:
    """``group``'s reductions in fusion order, its softmax pairs and each one's pass."""
    order = {id(e): i for i, e in enumerate(group.root.fusion.exprs)}
    group.reductions = sorted(reductions, key=lambda e: order[id(e)])
    members = {id(e) for e in reductions}
    group.online = online_pairs(group.reductions, stop)
    for e in group.reductions:
        if id(e) in group.online:
            # accumulated with its max in one pass: the max's level
            group.levels[id(e)] = group.levels[id(group.online[id(e)])]
            continue
        up = members_upstream(e, members, stop)
        group.levels[id(e)] = 1 + max((group.levels[u] for u in up), default=-1)


def _through(tv, stop: set[int], ok):
    """``tv`` with the ops ``ok`` accepts (computed in the kernel, not read) stripped."""
    while (
        isinstance(tv, TensorView)
        and tv.definition is not None
        and id(tv) not in stop
        and ok(tv.definition)
    ):
        tv = tv.definition.inputs[0]
    return tv


def _float_cast(e: Expr) -> bool:
    return (
        e.op.name == "cast" and is_floating(e.inputs[0].dtype) and is_floating(e.outputs[0].dtype)
    )


def _exact(e: Expr) -> bool:
    """A cast that keeps every value: a floating dtype to itself or to a wider Float/Double."""
    if not _float_cast(e):
        return False
    src, dst = e.inputs[0].dtype, e.outputs[0].dtype
    return src is dst or (
        dst in (DataType.Float, DataType.Double) and itemsize(dst) > itemsize(src)
    )


def _to_row_value(e: Expr) -> bool:
    return e.op.name in ("broadcast_in_dim", *_TRANSPARENT) or _exact(e)


def _defined(tv, name: str, stop: set[int]) -> Expr | None:
    if (
        isinstance(tv, TensorView)
        and tv.definition is not None
        and id(tv) not in stop
        and tv.definition.op.name == name
    ):
        return tv.definition
    return None


def online_pairs(reductions: list[Expr], stop: set[int]) -> dict[int, Expr]:
    """Softmax's reductions among ``reductions`` (one group: same dims): ``id(sum) -> max``
    for each ``sum(exp(A - broadcast(max(A))))``. Floating casts may sit between the sum,
    the exp and the subtraction (they only round the terms); ``A`` and the max's result may
    reach the subtraction through casts that keep every value. One sum per max."""
    outputs = {
        id(e.outputs[0]): e
        for e in reductions
        if e.op.name == "max" and is_floating(e.outputs[0].dtype)
    }
    pairs: dict[int, Expr] = {}
    for e in reductions:
        if e.op.name != "sum" or not is_floating(e.outputs[0].dtype):
            continue
        exp = _defined(_through(e.inputs[0], stop, _float_cast), "exp", stop)
        sub = exp and _defined(_through(exp.inputs[0], stop, _float_cast), "sub", stop)
        if not sub or not all(isinstance(v, TensorView) for v in sub.inputs):
            continue
        mx = outputs.get(id(_through(sub.inputs[1], stop, _to_row_value)))
        if mx is None or any(m is mx for m in pairs.values()):
            continue
        a = _through(sub.inputs[0], stop, _exact)
        if a is _through(mx.inputs[0], stop, _exact):
            pairs[id(e)] = mx
    return pairs


def _outputs_of(root: TensorView, expr_id: int):
    for e in root.fusion.exprs:
        if id(e) == expr_id:
            return e.outputs
    return ()


def xspace_output(tv: TensorView, group: Group, memory: set[int]) -> bool:
    """Whether ``tv`` is computed from the group's reduction results and scalars alone
    (mean, rstd, var): it is stored from the kernel's per-row values."""
    if tv.definition is None:
        return False
    outs = group.red_outputs()
    seen: set[int] = set()
    stack = [tv]
    found = False
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if id(t) in outs:
            found = True
            continue
        e = t.definition
        if e is None or id(t) in memory:
            return False
        if e.op.kind is OpKind.SHAPE:
            if e.op.name == "broadcast_in_dim":
                bd, src = e.attrs["broadcast_dims"], e.inputs[0]
                out = e.outputs[0].shape_domain
                assert isinstance(src, TensorView)
                if any(d.extent != 1 for j, d in enumerate(out) if j not in bd):
                    return False  # keepdim's size-1 dims only: a per-row value
                if any(
                    out[j].expanded and not src.shape_domain[i].expanded for i, j in enumerate(bd)
                ):
                    return False  # an expand of a size-1 dim: a tensor across the rows
            elif e.op.name == "squeeze":
                x = e.inputs[0]
                assert isinstance(x, TensorView)
                if any(x.shape_domain[d].expanded for d in e.attrs["dims"]):
                    return False  # an expanded kept dim squeezed: the rows lose a dim
            elif e.op.name not in _TRANSPARENT:
                return False
        elif e.op.kind is not OpKind.POINTWISE:
            return False
        stack.extend(i for i in e.inputs if isinstance(i, TensorView))
    return found and _within_rows(tv, group)


def _within_rows(tv: TensorView, group: Group) -> bool:
    """Whether ``tv`` has at most as many concrete dims as the rows have kept ones: per-row
    values that broadcast against each other out of alignment (a squeezed one against a
    keepdim one: [N] with [N, 1]) make a tensor across rows, not a per-row value."""
    x = group.reductions[0].inputs[0]
    assert isinstance(x, TensorView)
    kept = sum(
        1 for k, d in enumerate(x.shape_domain) if k not in group.dims and not d.is_broadcast
    )
    return sum(not d.is_broadcast for d in tv.shape_domain) <= kept


def group_reached(group: Group, memory: set[int]) -> list[tuple[TensorView, tuple[Expr, ...]]]:
    """Every (tensor, chain) the group's kernel reaches from its root, each once: the walk
    passes through the group's reductions, whose inputs are in the root's coordinates."""
    through = frozenset(id(e) for e in group.reductions)
    if group.rows or len(group.reductions) == 1:
        starts = [
            group.root,
            *group.partners,
            *group.beside,
            *(e.inputs[0] for e in group.cross),
        ]
    else:
        # sibling reductions (``segments.siblings``): their inputs share the root's coordinates
        starts = [e.inputs[0] for e in group.reductions]
    if len(starts) == 1:
        return reached(starts[0], memory, through)
    out: list[tuple[TensorView, tuple[Expr, ...]]] = []
    seen: set[tuple] = set()
    for start in starts:
        for tv, chain in reached(start, memory, through):
            key = (id(tv), tuple(id(x) for x in chain))
            if key not in seen:
                seen.add(key)
                out.append((tv, chain))
    return out
