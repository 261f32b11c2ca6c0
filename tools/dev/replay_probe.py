"""A random-suite case's call after its measured choice, taken apart:
``PYTHONPATH=src:. python tools/dev/replay_probe.py CASE ...`` (full names). Per case: the
choice, the call's device time as the benchmark measures it, the planned runs before and
after the timing (a call that does not replay plans again), the host time of a call,
each kernel's device time, and the replay function alone. A measurement tool, not part
of the product."""

from __future__ import annotations

import sys
import time

import torch

import layoutfuse.nvfuser as nvf
from benchmarks.harness import kernel_times, time_kernel
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.reference import make_inputs
from benchmarks.tune import random_case_names


def host_us(fn, n: int = 200) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def probe(case) -> None:
    xs = make_inputs(case, "cuda")
    nvf.FusionCache.reset()
    fd = define_fusion(nvf, case)
    fd.execute(xs)
    entry = getattr(fd, "_entry", None)
    ex = entry.executor() if entry is not None else fd.executor()
    seg = ex.last_run.segments if ex.last_run is not None else []
    print(case.name, [s.measured.describe() if s.measured else None for s in seg])
    print("  params", [str(p)[:160] for p in ex.last_schedule()])

    def call() -> None:
        fd.execute(xs)

    before = ex.planned_runs
    ms = time_kernel(call, "cuda")
    print(f"  call {ms * 1e3:.1f} us; planned runs {before} -> {ex.planned_runs}")
    print(f"  plans {len(ex._plans)}; host per call {host_us(call):.1f} us")
    each = kernel_times(call, "cuda")
    print("  kernels", {k[:30]: round(v * 1e3, 1) for k, v in each.items()})
    if ex._plans:
        plan = next(iter(ex._plans.values()))

        def replay() -> None:
            plan.replay(xs)

        ms = time_kernel(replay, "cuda")
        print(f"  replay alone {ms * 1e3:.1f} us; host {host_us(replay):.1f} us")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    cases = random_case_names(argv)
    for name in argv:
        probe(cases[name])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
