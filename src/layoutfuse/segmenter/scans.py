"""Scan kernels: one per per-row op (cumsum, argsort, topk; ``OpKind.SCAN``).

A scan's result at one position depends on its whole row along the dim, so it cannot
share a kernel with work that reads it in other coordinates: each scan is its own
segment. Its pointwise and shape prologue (everything between memory and the scan's
input) is computed inside it, as a reduction kernel's is. Its *epilogue* joins it too:
an output computed from the scan's result by pointwise ops alone, in the result's own
coordinates (``cumsum(x) * y``; not a topk's, whose dim is ``k`` long), is stored by the
scan kernel from the values it holds. The scan's results are always written to memory
(the fusion's outputs, or buffers that later kernels read).
"""

from __future__ import annotations

from ..analysis.accesses import Access, reached, upstream_accesses, waits_on
from ..ir import Expr, Fusion, TensorView
from ..ir.ops import COORDINATE_OPS
from .specs import (
    KernelSpec,
    _distinct_tensors,
    _exprs_upstream,
    _in_fusion_order,
    _scalars_of,
    kernel_spec,
)


def scan_epilogues(
    scans: list[Expr], pending: list[TensorView], covered: set[int], memory_ids: set[int]
) -> dict[int, list[TensorView]]:
    """By id of a scan, the pending outputs its kernel stores as its epilogue (added to
    ``covered``): each reaches the scan's first result through pointwise ops only and no
    other scan's results, and reads nothing computed from the scan's results (a reduction
    of them); a topk (another extent along its dim) has none."""
    found: dict[int, list[TensorView]] = {}
    others = {id(o) for e in scans for o in e.outputs}
    for e in scans:
        result = e.outputs[0]
        assert isinstance(result, TensorView)
        if e.op.name == "topk" or any(d.is_broadcast for d in result.shape_domain):
            continue
        mine = {id(o) for o in e.outputs}
        for o in pending:
            if id(o) in covered:
                continue
            walk = reached(o, memory_ids)
            hits = [chain for tv, chain in walk if tv is result]
            if not hits or any(hits) or any(id(tv) in others - mine for tv, _ in walk):
                continue
            loaded = [tv for tv, _ in walk if id(tv) in memory_ids - mine and tv.definition]
            if waits_on(loaded, list(e.outputs), memory_ids):
                continue  # it reads a reduction of the scan's results, computed after it
            found.setdefault(id(e), []).append(o)
            covered.add(id(o))
    return found


def scan_specs(
    fusion: Fusion,
    scans: list[Expr],
    output_ids: set[int],
    memory_ids: set[int],
    epilogues: dict[int, list[TensorView]],
) -> tuple[list[KernelSpec], list[TensorView]]:
    """A scan kernel for each scan whose results are an output or used, and those of its
    results that are not outputs (they need buffers)."""
    specs: list[KernelSpec] = []
    buffers: list[TensorView] = []
    for e in scans:
        outs = [o for o in e.outputs if isinstance(o, TensorView)]
        if not any(id(o) in output_ids or fusion.uses(o) for o in outs):
            continue
        specs.append(scan_spec(e, memory_ids, epilogues.get(id(e), [])))
        buffers += [o for o in outs if id(o) not in output_ids]
    return specs, buffers


def scan_spec(e: Expr, memory_ids: set[int], epilogue: list[TensorView]) -> KernelSpec:
    """The kernel of scan ``e``: its prologue's loads, its results' stores (first), then
    the stores of its ``epilogue`` outputs, whose loads join the prologue's. With a
    prologue or an epilogue, its finer plan (``fallback``: taken when the scan scheduler
    refuses a load, through a reshape that is not a view or an indexed read) is a
    pointwise kernel that stores the scan's input, the scan reading it, then a pointwise
    kernel per epilogue output reading the scan's results (in memory: outputs or
    buffers)."""
    spec = _scan_kernel(e, memory_ids, epilogue)
    root = e.inputs[0]
    assert isinstance(root, TensorView)
    computed = id(root) not in memory_ids and root.definition is not None
    if not computed and not epilogue:
        return spec
    fallback, scanned = [], memory_ids
    if computed:
        fallback.append(
            kernel_spec(
                "pointwise",
                root,
                memory_ids,
                [Access(root, (), store=True)],
                reason=f"the input of {e.op.name}, stored for it",
            )
        )
        scanned = memory_ids | {id(root)}
        spec.fallback_buffers = [root]
    fallback.append(_scan_kernel(e, scanned, []))
    fallback += [
        kernel_spec(
            "pointwise",
            o,
            memory_ids,
            [Access(o, (), store=True)],
            reason=f"an output of {e.op.name}'s epilogue, after it",
        )
        for o in epilogue
    ]
    spec.fallback = fallback
    return spec


def _scan_kernel(e: Expr, memory_ids: set[int], epilogue: list[TensorView]) -> KernelSpec:
    root = e.inputs[0]
    assert isinstance(root, TensorView)
    results = {id(o) for o in e.outputs}
    found: dict[tuple, Access] = {}
    for r in [root, *epilogue]:
        for a in upstream_accesses(r, memory_ids):
            if id(a.tv) not in results:
                found.setdefault(a.key(), a)
    ups = list(found.values())
    loads = [a for a in ups if a.tv.definition is None or id(a.tv) in memory_ids]
    coords = [
        a
        for a in ups
        if a.tv.definition is not None
        and id(a.tv) not in memory_ids
        and a.tv.definition.op.name in COORDINATE_OPS  # iota, random ops
    ]
    stores = [Access(o, (), store=True) for o in e.outputs if isinstance(o, TensorView)]
    stores += [Access(o, (), store=True) for o in epilogue]
    exprs = {id(x): x for r in [root, *epilogue] for x in _exprs_upstream(r, memory_ids)}
    exprs[id(e)] = e
    ordered = _in_fusion_order(list(exprs.values()), root.fusion)
    spec = KernelSpec(
        "scan",
        root,
        ordered,
        _distinct_tensors(loads + stores),
        loads + stores + coords,
        len(loads),
        len(stores),
        _scalars_of(ordered),
        reason=_reason(e, epilogue),
        outputs=[a.tv for a in stores],
    )
    spec.scan = e
    return spec


def _reason(e: Expr, epilogue: list[TensorView]) -> str:
    what = {
        "cumsum": "a prefix sum",
        "argsort": "a sort",
        "topk": "a top-k selection",
    }[e.op.name]
    after = f" and its pointwise epilogue ({len(epilogue)} outputs)" if epilogue else ""
    return (
        f"{e.op.name} along dim {e.attrs['dim']}: {what} needs its whole row, "
        f"one scan kernel (its pointwise prologue{after} fused)"
    )


__all__ = ["scan_epilogues", "scan_spec", "scan_specs"]
