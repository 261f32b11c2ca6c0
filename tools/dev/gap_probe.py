"""Where a small case's call time goes, per system: ``PYTHONPATH=src:. python
tools/dev/gap_probe.py CASE ...`` (full case names). Beside the benchmark's call time
(events around each call), each call after the L2 flush and a synchronize, from the
profiler's CUDA records: the span from the call's first device record to its last and
the kernels' own time (medians over the calls), with the names of the records the call
put on the stream. Layoutfuse is also
timed as its replay function alone (``lf-replay``: the call without the cache lookup). A
measurement tool, not part of the product."""

from __future__ import annotations

import statistics
import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks.harness import flush_read, time_kernel
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.peers import CompilePeer, EagerPeer
from benchmarks.reference import make_inputs
from benchmarks.tune import random_case_names


def records(call, reps: int = 30):
    """Per call: (span, kernel sum) in us and the names of its device records."""
    from torch.profiler import ProfilerActivity, profile

    flush_read("cuda")
    call()
    torch.cuda.synchronize()
    marks = []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            flush_read("cuda")
            torch.cuda.synchronize()  # the flush's records end before the call's start
            marks.append(None)
            call()
            torch.cuda.synchronize()
    evs = sorted(
        (e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
        key=lambda e: e.time_range.start,
    )
    flush_sum = "reduce_kernel"
    calls, cur, last_flush_end = [], [], None
    for e in evs:
        if flush_sum in e.name and (not cur or flush_sum not in cur[-1].name):
            if cur:
                calls.append((last_flush_end, cur))
            cur = []
        if flush_sum in e.name:
            last_flush_end = e.time_range.end
            continue
        cur.append(e)
    if cur:
        calls.append((last_flush_end, cur))
    spans, sums, names = [], [], set()
    for _, cs in calls:
        spans.append(cs[-1].time_range.end - cs[0].time_range.start)
        sums.append(sum(c.time_range.elapsed_us() for c in cs))
        names.update(c.name[:40] for c in cs)
    return statistics.median(spans or [0]), statistics.median(sums or [0]), sorted(names)


def main(argv: list[str]) -> int:
    cases = random_case_names(argv)
    for name in argv:
        case = cases[name]
        xs = make_inputs(case, "cuda")
        nvf.FusionCache.reset()
        fd = define_fusion(nvf, case)
        fd.execute(xs)
        eager, compiled = EagerPeer().prepare(case, xs), CompilePeer().prepare(case, xs)
        systems = {
            "layoutfuse": lambda fd=fd, xs=xs: fd.execute(xs),
            "eager": lambda fn=eager, xs=xs: fn(*xs),
            "compile": lambda fn=compiled, xs=xs: fn(*xs),
        }
        entry = getattr(fd, "_entry", None)
        plan = None
        try:
            ex = entry.executor() if entry is not None else fd.executor()
            plan = next(iter(ex._plans.values()))
        except Exception as exc:  # noqa: BLE001 - the probe reports what it could not reach
            print("  no plan reached:", type(exc).__name__, exc)
        if plan is not None and hasattr(plan, "replay"):
            systems["lf-replay"] = lambda plan=plan, xs=xs: plan.replay(xs)
        print(f"{case.name} ({case.bytes_moved / 1e6:.1f} MB)", flush=True)
        for label, fn in systems.items():
            ms = time_kernel(fn, "cuda")
            span, ksum, names = records(fn)
            print(
                f"  {label:<11} call {ms * 1e3:6.1f} us  span {span:6.1f}  kernels {ksum:6.1f}"
                f"  {names}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
