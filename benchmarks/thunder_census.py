"""What Thunder handed layoutfuse in a jitted function's last call: its nvFuser regions
(each with the layoutfuse ``FusionDefinition`` it ran, its kernels and schedulers), and
the ops that ran outside any region, by executor.

A region's ``FusionDefinitionWrapper`` (Thunder's callable for it, in the bound
symbol's ``_call_ctx``) keeps the definition of its last call in ``last_used``; that
definition's executor keeps the record of its last planned run (``last_run``: one
launch per kernel) and counts its planned runs (``planned_runs``: a call that replayed
a recorded plan does not count), so comparing the counts before and after the timed
calls tells whether those calls replayed.
"""

from __future__ import annotations

from collections import Counter

# Ops that are expected outside nvFuser regions, by executor: Thunder keeps matmuls on
# torch unless nv_enable_linear / nv_enable_matmul, regions of shape ops alone on torch
# (``contiguous`` is its stride_order, a shape op), and gives attention to its sdpa
# executor (CUDA only; on the CPU torch runs it without autograd, and with autograd
# it is decomposed: matmuls on torch).
EXPECTED_OUTSIDE: dict[str, frozenset[str] | None] = {
    "torch": frozenset(
        {"linear", "matmul", "scaled_dot_product_attention"}
        | {"contiguous", "permute", "reshape", "split", "transpose", "view"}
        | {"torch_prims_reshape_impl"}
    ),
    "sdpa": None,  # any of its ops
}


def region_record(name: str, fd) -> dict:
    """One region: ``on_layoutfuse`` when its definition is a layoutfuse one that ran."""
    from layoutfuse.nvfuser import FusionDefinition

    ran = isinstance(fd, FusionDefinition) and fd.executor().last_run is not None
    if not ran:
        return dict(name=name, on_layoutfuse=False, kernels=None, schedulers=[], planned_runs=0)
    return dict(
        name=name,
        on_layoutfuse=True,
        kernels=len(fd.executor().last_run.launches),
        schedulers=[type(p).__name__ for p in fd.last_schedule()],
        planned_runs=fd.executor().planned_runs,
    )


def trace_census(trace) -> tuple[list[dict], Counter]:
    """The nvFuser regions of an execution trace, in order, and the other ops by
    ``executor:op``."""
    regions, outside = [], Counter()
    for bsym in trace.bound_symbols:
        executor = getattr(bsym.sym.executor, "name", None)
        if executor == "nvfuser":
            wrapper = (bsym._call_ctx or {}).get(bsym.sym.name)
            regions.append(region_record(bsym.sym.name, getattr(wrapper, "last_used", None)))
        elif executor not in (None, "python"):
            outside[f"{executor}:{bsym.sym.name}"] += 1
    return regions, outside


def unexpected(outside: Counter) -> list[str]:
    found = []
    for key in outside:
        executor, op = key.split(":", 1)
        if executor not in EXPECTED_OUTSIDE:
            found.append(key)
            continue
        allowed = EXPECTED_OUTSIDE[executor]
        if allowed is not None and op not in allowed:
            found.append(key)
    return sorted(found)


def census(thunder, jitted, backward: bool) -> dict:
    """Regions of the last call's forward trace (and backward trace), their kernels, and
    whether every region ran on layoutfuse with nothing unexpected outside."""
    traces = {"forward": thunder.last_traces(jitted)[-1]}
    if backward:
        traces["backward"] = thunder.last_backward_traces(jitted)[-1]
    doc: dict = {"regions": {}, "outside_regions": {}}
    outside_all: Counter = Counter()
    for part, trace in traces.items():
        regions, outside = trace_census(trace)
        doc["regions"][part] = regions
        doc["outside_regions"][part] = dict(sorted(outside.items()))
        outside_all += outside
    every = [r for part in doc["regions"].values() for r in part]
    doc["region_count"] = len(every)
    doc["kernels_total"] = sum(r["kernels"] or 0 for r in every)
    doc["kernels_per_region"] = {
        part: [r["kernels"] for r in regions] for part, regions in doc["regions"].items()
    }
    doc["unexpected_outside"] = unexpected(outside_all)
    doc["all_on_layoutfuse"] = bool(every) and all(r["on_layoutfuse"] for r in every)
    return doc


def planned_runs(doc: dict) -> int:
    return sum(r["planned_runs"] for part in doc["regions"].values() for r in part)


def planned_runs_now(thunder, jitted, backward: bool) -> int:
    """The regions' planned runs as they stand (``census`` recounted)."""
    return planned_runs(census(thunder, jitted, backward))
