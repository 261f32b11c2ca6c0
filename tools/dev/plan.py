"""Plan random-suite cases on meta tensors; print schedule and kernel source (optional).
``TUNING=normalization.loop_min_blocks=2,...`` plans under those tuning fields (the tune
tool's syntax)."""

import os
import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.random_cases import draw_cases
from benchmarks.reference import _inputs


def plan(case, show_src=False):
    nvf.FusionCache.reset()
    fd = define_fusion(nvf, case)
    ex = fd._entry.executor() if fd._entry is not None else fd.executor()
    if os.environ.get("TUNING"):
        from benchmarks.tune import parse_tuning

        ex.configure(tuning=parse_tuning(os.environ["TUNING"]))
    ins = _inputs(
        case, lambda physical: torch.empty(physical, dtype=case.torch_dtype, device="meta")
    )
    rec = ex.plan(ins)
    print(case.name, [(tuple(i.shape), i.stride()) for i in ins])
    for p in rec.params:
        print("  ", p)
    for l in rec.launches:
        print("   grid", getattr(l, "grid", None), "meta", l.meta)
        if show_src:
            print(l.kernel.source)
    return rec


if __name__ == "__main__":
    names = sys.argv[1].split(",")
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    src = "src" in sys.argv[3:]
    cases = draw_cases(seed, 120, "cuda")
    for c in cases:
        if any(n in c.name for n in names):
            plan(c, src)
