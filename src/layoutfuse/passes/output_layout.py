"""OutputLayoutPass: the memory order of every fusion output, decided once per fusion.

Rules, in order (nvFuser's, see research/nvfuser_frontend_api.md §2):

1. ``pinned``: the output TensorView has an allocation domain (``stride_order``,
   ``set_allocation_domain``); reduction axes in it are legal and ignored. (An
   input returned as an output is a view of itself: its allocation domain
   declares its layout, it does not pin a new one.)
2. ``alias``: ``add_output(..., alias_input=)``; written into that input.
3. ``view``: a chain of set/permute/reshape/broadcast_in_dim/squeeze from an input.
   The runtime returns a torch view of the input; a reshape that the input's
   actual strides cannot express as a view is only known at run time, so a view
   layout also carries the order the next rules give (``fallback``). Likewise a
   chain of those ops from another output that the next rules lay out (nvFuser's
   alias analysis takes the nearest aliased input or output): it comes back as a view
   of that output's buffer (``view_of_output``), computed by no kernel (Thunder's
   backward returns a gradient and its reshape for a weight's matmul).
4. ``inferred``: nvFuser's AllocationDomainPass. The reference is the input the
   output depends on (through tensors) with the most non-broadcast dims; ties must
   map identically. Its allocation order is walked from innermost outward and
   each dim is mapped through the ops to an output dim; broadcast dims are skipped,
   and the walk stops at the first non-trivial dim with no counterpart (a reshape
   that splits or merges it). EXTENSION over nvFuser: a dim that a reduction
   consumed is skipped rather than mapped or stopped at, so a reduction output
   keeps the input's relative memory order of the kept axes. Unmapped output dims
   go outermost in logical order, mapped dims innermost in the reference's order.
5. ``row_major``: nothing mapped.

``order`` lists positions in the output's ``shape_domain``, outermost first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import DefinitionError
from ..ir import Expr, Fusion, IterDomain, OpKind, Scalar, TensorView
from ..ir.ops.common import static_value
from ..ir.ops.shape import VIEW_OPS

KINDS = ("pinned", "alias", "view", "inferred", "row_major")


@dataclass(frozen=True)
class OutputLayout:
    """How one tensor output is laid out.

    ``kind``: one of ``KINDS``. ``order``: positions in ``shape_domain`` from
    outermost to innermost in memory (for ``view``: the order to allocate with if
    the view is impossible at run time). ``alias_input``: index in
    ``fusion.inputs`` for ``alias``; ``view_of``: index in ``fusion.inputs`` for
    ``view`` of an input, ``view_of_output``: position in ``fusion.outputs`` for a
    ``view`` of another output (one of the two is set); ``fallback``: ``"inferred"``
    or ``"row_major"`` for ``view``. ``fallback_output``: for a view of an input, the
    position of a computed output on its chain of view ops (a reshape of a pinned
    output): where the input's strides cannot express the view at run time, the output
    is a view of that one if its strides can (nvFuser's alias analysis takes the
    nearest), else laid out by ``fallback``.
    """

    kind: str
    order: tuple[int, ...]
    alias_input: int | None = None
    view_of: int | None = None
    fallback: str | None = None
    view_of_output: int | None = None
    fallback_output: int | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown output layout kind {self.kind!r}")


@dataclass(frozen=True)
class OutputLayoutPass:
    name: str = "output_layout"

    def apply(self, fusion: Fusion) -> dict[int, OutputLayout]:
        """The layout of every TensorView output, by output position (scalars are absent)."""
        layouts = {}
        for pos, spec in enumerate(fusion.outputs):
            tv = spec.value
            if not isinstance(tv, TensorView):
                continue
            if spec.alias_input is not None:
                if tv.allocation is not None:
                    raise DefinitionError(
                        f"output {pos} (T{tv.index}) aliases an input and also "
                        f"pins its layout; an alias takes the input's layout"
                    )
                src = spec.alias_input
                order = (
                    src.allocation_order
                    if isinstance(src, TensorView) and src.ndim == tv.ndim
                    else tuple(range(tv.ndim))
                )
                layouts[pos] = OutputLayout("alias", order, alias_input=fusion.inputs.index(src))
            elif tv.allocation is not None and tv not in fusion.inputs:
                layouts[pos] = OutputLayout("pinned", tv.allocation_order)
            else:
                kind, order = infer_layout(fusion, tv)
                src = view_source(fusion, tv)
                if src is None:
                    layouts[pos] = OutputLayout(kind, order)
                else:
                    layouts[pos] = OutputLayout("view", order, view_of=src, fallback=kind)
        for pos, src in output_view_sources(fusion, layouts).items():
            layout = layouts[pos]
            layouts[pos] = OutputLayout(
                "view", layout.order, fallback=layout.kind, view_of_output=src
            )
        for pos, src in fallback_view_sources(fusion, layouts).items():
            layouts[pos] = replace(layouts[pos], fallback_output=src)
        return layouts


def view_source(fusion: Fusion, tv: TensorView) -> int | None:
    """The index of the input ``tv`` is a chain of view ops of, or None."""
    v = tv
    while v.definition is not None and v.definition.op.name in VIEW_OPS:
        v = v.definition.inputs[0]
    if v.definition is None and isinstance(v, TensorView) and v in fusion.inputs:
        return fusion.inputs.index(v)
    return None


COMPUTED = ("pinned", "inferred", "row_major")  # kinds a kernel writes (no view)


def output_view_sources(fusion: Fusion, layouts: dict[int, OutputLayout]) -> dict[int, int]:
    """Per output that is a chain of view ops of another computed output (laid out by the
    rules after ``view``), the position of the nearest such output that is no view itself."""
    computed = [q for q, lay in layouts.items() if lay.kind in COMPUTED]
    of = {id(fusion.outputs[q].value): q for q in computed}
    views = [
        q
        for q in computed
        if layouts[q].kind != "pinned" and _nearest(fusion.outputs[q].value, of) is not None
    ]
    roots = {id(fusion.outputs[q].value): q for q in computed if q not in views}
    found = {q: _nearest(fusion.outputs[q].value, roots) for q in views}
    return {q: src for q, src in found.items() if src is not None}


def fallback_view_sources(fusion: Fusion, layouts: dict[int, OutputLayout]) -> dict[int, int]:
    """Per view of an input, the position of the nearest computed output on its chain of
    view ops, where there is one."""
    of = {id(fusion.outputs[q].value): q for q, lay in layouts.items() if lay.kind in COMPUTED}
    found = {
        pos: _nearest(fusion.outputs[pos].value, of)
        for pos, lay in layouts.items()
        if lay.kind == "view" and lay.view_of is not None
    }
    return {q: src for q, src in found.items() if src is not None}


def _nearest(tv, among: dict[int, int]) -> int | None:
    """The position ``among`` gives the nearest tensor ``tv`` is a chain of view ops of."""
    return next((among[id(v)] for v in _view_ancestors(tv) if id(v) in among), None)


def _view_ancestors(tv) -> list[TensorView]:
    """The tensors ``tv`` is reached from through view ops alone, nearest first."""
    out = []
    v = tv
    while v.definition is not None and v.definition.op.name in VIEW_OPS:
        v = v.definition.inputs[0]
        out.append(v)
    return out


# --- AllocationDomainPass ---------------------------------------------------------------------
def infer_layout(fusion: Fusion, tv: TensorView) -> tuple[str, tuple[int, ...]]:
    """``("inferred", order)`` from the dominant input, else ``("row_major", range)``."""
    row_major = ("row_major", tuple(range(tv.ndim)))
    refs = tensor_input_dependencies(fusion, tv)
    if not refs or tv.ndim == 0:
        return row_major
    score = {id(r): sum(not d.is_broadcast for d in r.shape_domain) for r in refs}
    best = max(score.values())
    orders = {_map_order(fusion, r, tv) for r in refs if score[id(r)] == best}
    if len(orders) != 1:
        return row_major  # tied references disagree: propagate nothing
    order = orders.pop()
    return ("inferred", order) if order is not None else row_major


def tensor_input_dependencies(fusion: Fusion, tv: TensorView) -> list[TensorView]:
    """Tensor inputs ``tv`` depends on through tensor operands (size queries excluded)."""
    seen, stack, found = set(), [tv], []
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v.definition is None:
            if v in fusion.inputs:
                found.append(v)
            continue
        stack.extend(x for x in v.definition.inputs if isinstance(x, TensorView))
    return sorted(found, key=fusion.inputs.index)


def _map_order(fusion: Fusion, ref: TensorView, out: TensorView) -> tuple[int, ...] | None:
    """The output order from ``ref``'s allocation order, or None if no dim maps."""
    ref_of, reduced = map_reference_dims(fusion, ref)
    positions: dict[int, list[int]] = {}
    for j, d in enumerate(out.shape_domain):
        k = ref_of.get(d.uid)
        if k is not None and not d.is_broadcast:
            positions.setdefault(k, []).append(j)
    gone = reduced.get(id(out), set())
    mapped: list[int] = []
    for k in reversed(ref.allocation_order):
        d = ref.shape_domain[k]
        if d.is_broadcast or d.extent == 1 or (k in gone and k not in positions):
            # the reference's broadcast (even expanded) dims carry no order; a dim a
            # reduction consumed is skipped unless the output has it again (softmax:
            # the row is reduced, broadcast and combined with itself)
            continue
        if k in positions:
            mapped.extend(reversed(positions[k]))
        else:
            break
    if not mapped:
        return None
    unmapped = [j for j in range(out.ndim) if j not in mapped]
    return tuple(unmapped) + tuple(reversed(mapped))


def map_reference_dims(fusion: Fusion, ref: TensorView):
    """Which reference dim every IterDomain of the fusion maps to, and what was reduced.

    Returns ``(ref_of, reduced)``: ``ref_of`` maps IterDomain uid to a position in
    ``ref.shape_domain``; ``reduced`` maps ``id(tv)`` to the reference dims that a
    reduction on the way to ``tv`` consumed. An IterDomain reached from two
    different reference dims maps to neither.
    """
    ref_of: dict[int, int] = {d.uid: k for k, d in enumerate(ref.shape_domain)}
    reduced: dict[int, set[int]] = {}
    for expr in fusion.exprs:
        gone: set[int] = set()
        for v in expr.inputs:
            if isinstance(v, TensorView):
                gone |= reduced.get(id(v), set())
        gone |= _reduced_by_squeeze(expr, ref_of)
        candidates: dict[int, set[int]] = {}
        for src, dst in id_pairs(expr):
            k = ref_of.get(src.uid)
            if k is None:
                continue
            if dst.is_reduction:
                gone.add(k)
            else:
                candidates.setdefault(dst.uid, set()).add(k)
        for uid, ks in candidates.items():
            if len(ks) == 1:
                ref_of[uid] = next(iter(ks))
        for o in expr.outputs:
            if isinstance(o, TensorView):
                reduced[id(o)] = gone
    return ref_of, reduced


def _reduced_by_squeeze(expr: Expr, ref_of: dict[int, int]) -> set[int]:
    """The reference dims a reduction of one element along them removed (a squeeze that
    ``reduced`` marks: the dims of an indexed read's broadcast, say), consumed as a
    reduction's are."""
    if expr.op.name != "squeeze" or not expr.attrs.get("reduced"):
        return set()
    x = expr.inputs[0]
    assert isinstance(x, TensorView)
    src = x.shape_domain
    return {ref_of[src[d].uid] for d in expr.attrs["dims"] if src[d].uid in ref_of}


def id_pairs(expr: Expr) -> list[tuple[IterDomain, IterDomain]]:
    """(producer axis, consumer axis) pairs that are the same axis through ``expr``.

    Reduction consumers list the reduced axes too (as REDUCTION axes). A reshape
    pairs only dims it keeps whole: 1:1 groups of a static reshape, or dims whose
    new extent is a size query of (or equal to the static extent of) the input dim.
    """
    outs = [o for o in expr.outputs if isinstance(o, TensorView)]
    if not outs:
        return []
    out = outs[0]
    kind, name = expr.op.kind, expr.op.name
    tvs = [v for v in expr.inputs if isinstance(v, TensorView)]
    if kind is OpKind.POINTWISE:
        return [(t.shape_domain[i], d) for t in tvs for i, d in enumerate(out.shape_domain)]
    if kind in (OpKind.REDUCTION, OpKind.WELFORD):
        return [p for o in outs for p in zip(tvs[0].shape_domain, o.logical)]
    if kind is OpKind.SCAN:  # the same dims (a topk's has k along its dim)
        return [p for o in outs for p in zip(tvs[0].shape_domain, o.shape_domain)]
    if kind is OpKind.WRITE:
        # an indexed write: its arg's dims, and its index's and src's, which are positioned
        # as arg's (the coordinates it writes from)
        return [(t.shape_domain[i], d) for t in tvs for i, d in enumerate(out.shape_domain)]
    if kind is not OpKind.SHAPE:
        return []
    src = tvs[0].shape_domain
    if name == "set":
        return list(zip(src, out.shape_domain))
    if name == "permute":
        return [(src[d], out.shape_domain[i]) for i, d in enumerate(expr.attrs["dims"])]
    if name == "squeeze":
        kept = [d for i, d in enumerate(src) if i not in expr.attrs["dims"]]
        return list(zip(kept, out.shape_domain))
    if name == "broadcast_in_dim":
        return [(src[i], out.shape_domain[j]) for i, j in enumerate(expr.attrs["broadcast_dims"])]
    if name == "reshape":
        return _reshape_pairs(expr)
    if name in ("slice", "pad"):  # same axes, other extents (a cat: every input's)
        return [(t.shape_domain[i], d) for t in tvs for i, d in enumerate(out.shape_domain)]
    if name == "select":
        kept = [d for i, d in enumerate(src) if i != expr.attrs["dim"]]
        return list(zip(kept, out.shape_domain))
    if name == "gather_dim":
        # an indexed read: arg's dims off the indexed one, and the index's own dims
        arg_dims, dim = expr.attrs["arg_dims"], expr.attrs["dim"]
        index = tvs[1].shape_domain
        return [(src[k], out.shape_domain[j]) for k, j in enumerate(arg_dims) if k != dim] + [
            (d, out.shape_domain[j]) for j, d in enumerate(index) if not d.is_broadcast
        ]
    return []


def _reshape_pairs(expr: Expr) -> list[tuple[IterDomain, IterDomain]]:
    x, out = expr.inputs[0], expr.outputs[0]
    src, dst = x.shape_domain, out.shape_domain
    groups = expr.attrs.get("groups")
    if groups:
        return [
            (src[g_in[0]], dst[g_out[0]])
            for g_in, g_out in groups
            if len(g_in) == 1 and len(g_out) == 1
        ]
    shape = expr.inputs[1:]
    ins = [i for i, d in enumerate(src) if d.extent != 1]
    outs = [j for j, s in enumerate(shape) if static_value(s) != 1]
    if len(ins) != len(outs):
        return []
    if not all(_same_extent(x, i, shape[j]) for i, j in zip(ins, outs)):
        return []
    return [(src[i], dst[j]) for i, j in zip(ins, outs)]


def _same_extent(x: TensorView, i: int, s: Scalar) -> bool:
    d = s.definition
    if d is not None and d.op.name == "size":
        return d.inputs[0] is x and d.attrs["dim"] == i
    v = static_value(s)
    return v is not None and v == x.shape_domain[i].extent


__all__ = [
    "KINDS",
    "OutputLayout",
    "OutputLayoutPass",
    "id_pairs",
    "infer_layout",
    "map_reference_dims",
    "tensor_input_dependencies",
    "output_view_sources",
    "view_source",
]
