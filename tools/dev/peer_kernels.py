"""Each kernel's device time for random-suite cases, on layoutfuse, eager and torch.compile
side by side: ``PYTHONPATH=src:. python tools/dev/peer_kernels.py r1_070 r3_015 ...``.

Per system: the call's time as the benchmark measures it (``time_kernel``: CUDA events
around each call, L2 emptied before it) and the profiler's device time of every kernel
it launched (``harness.kernel_times``). Where the call's time exceeds the sum of its
kernels, the difference is launch gaps (or host time the device waited for); where a
kernel is slower, the kernel. A measurement tool for small cases, not part of the product.
"""

from __future__ import annotations

import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks.harness import kernel_times, time_kernel
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.peers import CompilePeer, EagerPeer
from benchmarks.reference import make_inputs
from benchmarks.tune import random_case_names


def main(argv: list[str]) -> int:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    cases = random_case_names(argv)
    for name in argv:
        case = cases[name]
        xs = make_inputs(case, device)
        nvf.FusionCache.reset()
        fd = define_fusion(nvf, case)
        systems = {
            "layoutfuse": lambda fd=fd, xs=xs: fd.execute(xs),
            "eager": EagerPeer().prepare(case, xs),
            "compile": CompilePeer().prepare(case, xs),
        }
        print(f"{case.name} ({case.bytes_moved / 1e6:.1f} MB)", flush=True)
        for label, fn in systems.items():
            call = fn if label == "layoutfuse" else (lambda fn=fn, xs=xs: fn(*xs))
            ms = time_kernel(call, device)
            each = kernel_times(call, device) if device == "cuda" else {}
            total = sum(each.values())
            parts = " ".join(f"{k[:26]}={v * 1e3:.1f}" for k, v in each.items())
            print(f"  {label:<10} call {ms * 1e3:7.1f} us  kernels {total * 1e3:7.1f} us  {parts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
