"""Scan kernels: one per per-row op (cumsum, argsort, topk; ``OpKind.SCAN``).

A scan's result at one position depends on its whole row along the dim, so it cannot
share a kernel with work in other coordinates: each scan is its own segment. Its
pointwise and shape prologue (everything between memory and the scan's input) is
computed inside it, as a reduction kernel's is; its results are written to memory
(the fusion's outputs, or buffers that the kernels after it read).
"""

from __future__ import annotations

from ..analysis.accesses import Access
from ..ir import Expr, Fusion, TensorView
from .specs import KernelSpec, kernel_spec


def scan_specs(
    fusion: Fusion, scans: list[Expr], output_ids: set[int], memory_ids: set[int]
) -> tuple[list[KernelSpec], list[TensorView]]:
    """A scan kernel for each scan whose results are an output or used, and those of its
    results that are not outputs (they need buffers)."""
    specs: list[KernelSpec] = []
    buffers: list[TensorView] = []
    for e in scans:
        outs = [o for o in e.outputs if isinstance(o, TensorView)]
        if not any(id(o) in output_ids or fusion.uses(o) for o in outs):
            continue
        root = e.inputs[0]
        assert isinstance(root, TensorView)
        spec = kernel_spec(
            "scan",
            root,
            memory_ids,
            [Access(o, (), store=True) for o in outs],
            reason=_reason(e),
        )
        spec.scan = e
        spec.exprs.append(e)
        specs.append(spec)
        buffers += [o for o in outs if id(o) not in output_ids]
    return specs, buffers


def _reason(e: Expr) -> str:
    what = {
        "cumsum": "a prefix sum",
        "argsort": "a sort",
        "topk": "a top-k selection",
    }[e.op.name]
    return (
        f"{e.op.name} along dim {e.attrs['dim']}: {what} needs its whole row, "
        "one scan kernel (its pointwise prologue fused)"
    )
