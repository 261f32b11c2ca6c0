"""Each kernel's device time for chosen benchmark cases, as layoutfuse plans them:
``python -m benchmarks profile SUITE [--filter F]``.

Runs each case's fusion (``fd.execute``, the replay path) under the profiler, L2 emptied
before each call as the benchmark does, and prints the total time against the read
ceiling and each kernel's mean time: where a multi-kernel plan (a segmented fusion, a
split reduction's finishing kernel) spends its time. CUDA only. A tool for deriving the
heuristics, not part of the product.
"""

from __future__ import annotations

import argparse
import functools

from benchmarks.cases import SUITES
from benchmarks.harness import measure_ceilings, time_kernel
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.reference import check_result, make_inputs, reference
from benchmarks.tune import kernel_times


def main(argv=None) -> int:
    import layoutfuse.nvfuser as nvf

    ap = argparse.ArgumentParser(
        prog="python -m benchmarks profile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument(
        "--filter",
        action="append",
        default=[],
        help="only cases whose name contains this (repeat: all must match)",
    )
    args = ap.parse_args(argv)
    cases = [c for c in SUITES[args.suite]() if all(f in c.name for f in args.filter)]
    if not cases:
        ap.error("no case matched")
    ceiling = measure_ceilings("cuda")["read_gbps"]
    print(f"read ceiling {ceiling:.0f} GB/s", flush=True)
    for case in cases:
        inputs = make_inputs(case, "cuda")
        nvf.FusionCache.reset()
        fd = define_fusion(nvf, case)
        check_result(case, fd.execute(inputs)[0], reference(case, inputs))
        run = functools.partial(fd.execute, inputs)
        ms = time_kernel(run, "cuda")
        gbs = case.bytes_moved / ms / 1e6
        print(
            f"{case.name:<46} {1000 * ms:8.1f} us {100 * gbs / ceiling:5.1f}% | "
            f"{kernel_times(run, 'cuda')}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
