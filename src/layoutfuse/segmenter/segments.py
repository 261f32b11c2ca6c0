"""Split a fusion into kernel segments.

Every reduction (sum/max/min/prod/welford) gets its own kernel, with its
pointwise and shape prologue recomputed from memory; its outputs are written to
memory (the fusion's output or an intermediate buffer). Every remaining output
computed by pointwise work gets a pointwise kernel; outputs upstream of another
output's kernel, in the same coordinates, are stored by that kernel. Each cut
says why it was made (``Segment.reason``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.accesses import Access, upstream_accesses, upstream_tensors
from ..ir import Expr, Fusion, OpKind, Scalar, TensorView, Vector


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
    reduction: Expr | None = None
    reason: str = ""
    outputs: list[TensorView] = field(default_factory=list)


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


def _spec(kind, root, memory_ids, stores: list[Access], reduction=None, reason=""):
    loads = [a for a in upstream_accesses(root, memory_ids) if a.tv.definition is None
             or id(a.tv) in memory_ids]
    coords = [a for a in upstream_accesses(root, memory_ids) if a.tv.definition is not None
              and id(a.tv) not in memory_ids and a.tv.definition.op.name == "iota"]
    memory: list[TensorView] = []
    for a in loads + stores:
        if all(m is not a.tv for m in memory):
            memory.append(a.tv)
    exprs = _exprs_upstream(root, memory_ids)
    if reduction is not None:
        exprs = exprs + [reduction]
    order = {id(e): i for i, e in enumerate(root.fusion.exprs)}
    exprs.sort(key=lambda e: order[id(e)])
    return KernelSpec(kind, root, exprs, memory, loads + stores + coords, len(loads), len(stores),
                      _scalars_of(exprs), reduction, reason, [a.tv for a in stores])


def segment(fusion: Fusion, computed_outputs: list[TensorView]) -> tuple[list[KernelSpec],
                                                                         list[TensorView]]:
    """Kernel specs in run order, and the intermediate tensors that need buffers."""
    memory_ids = {id(v) for v in fusion.inputs}
    specs: list[KernelSpec] = []
    intermediates: list[TensorView] = []
    output_ids = {id(v) for v in computed_outputs}
    for e in fusion.exprs:
        if e.op.kind not in (OpKind.REDUCTION, OpKind.WELFORD):
            continue
        needed = any(id(o) in output_ids for o in e.outputs) or _used(fusion, e)
        if not needed:
            continue
        stores = [Access(o, (), store=True) for o in e.outputs]
        spec = _spec("reduction", e.inputs[0], memory_ids, stores, reduction=e,
                     reason=f"{e.op.name} over dims {e.attrs['dims']}: one reduction per kernel")
        specs.append(spec)
        for o in e.outputs:
            memory_ids.add(id(o))
            if id(o) not in output_ids:
                intermediates.append(o)
    covered: set[int] = set()
    pending = [o for o in computed_outputs
               if o.definition is not None and o.definition.op.kind not in (OpKind.REDUCTION,
                                                                            OpKind.WELFORD)]
    pending.sort(key=lambda t: -len(t.shape_domain))
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
                           reason="pointwise work after the reductions" if specs else
                           "a fusion without reductions"))
    return specs, intermediates


def _used(fusion: Fusion, e: Expr) -> bool:
    return any(fusion.uses(o) for o in e.outputs)
