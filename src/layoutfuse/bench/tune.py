"""Try reduction params variants on chosen cases: ``python -m layoutfuse.bench.tune``.

Each variant overrides fields of the heuristics' ReductionParams (block sizes,
warps); the kernel time is the median of ``do_bench`` over ``fd.execute`` (the
replay path), against the read ceiling. A tool for deriving the heuristics from
measurements, not part of the product.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import torch

from layoutfuse.bench.cases import SUITES
from layoutfuse.bench.layoutfuse_runner import define_fusion
from layoutfuse.bench.reference import make_inputs
from layoutfuse.schedulers import reduction as rd

VARIANTS = {
    "outer": [dict(), dict(block_x=256, block_r=16, num_warps=4), dict(block_x=256, block_r=32,
              num_warps=8), dict(block_x=128, block_r=32, num_warps=4),
              dict(block_x=512, block_r=8, num_warps=4), dict(block_x=128, block_r=64, num_warps=8),
              dict(block_x=64, block_r=64, num_warps=4)],
    "inner": [dict(), dict(block_x=4, block_r=1024, num_warps=4), dict(block_x=1, block_r=4096,
              num_warps=8), dict(block_x=16, block_r=512, num_warps=8),
              dict(block_x=8, block_r=512, num_warps=4), dict(block_x=2, block_r=1024, num_warps=4),
              dict(block_x=32, block_r=256, num_warps=8)],
}


def main(argv=None) -> int:
    import triton

    import layoutfuse.nvfuser as nvf

    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    all_cases = {c.name: c for c in SUITES["reduction"]()}
    big = torch.empty(2**30, device="cuda")
    ceiling = big.numel() * 4 / triton.testing.do_bench(big.sum, return_mode="median") / 1e6
    del big
    print(f"read ceiling {ceiling:.0f} GB/s", flush=True)
    base = rd.heuristics
    rows = []
    for name in args.cases:
        case = all_cases[name]
        inputs = make_inputs(case, "cuda")
        nvf.FusionCache.reset()
        probe = define_fusion(nvf, case)
        probe.execute(inputs)
        template = probe.last_schedule().template
        for var in VARIANTS[template]:
            rd.heuristics = lambda p, d, var=var: dataclasses.replace(base(p, d), **var)
            try:
                nvf.FusionCache.reset()     # a fresh executor: no cached plan of another variant
                fd = define_fusion(nvf, case)
                fd.execute(inputs)
                ms = triton.testing.do_bench(lambda fd=fd, xs=inputs: fd.execute(xs),
                                             return_mode="median")
                gbs = case.bytes_moved / ms / 1e6
                params = fd.last_schedule()
                line = (f"{name:<24} {template} bx={params.block_x} br={params.block_r} "
                        f"w={params.num_warps} split={params.split}: {gbs:6.0f} GB/s "
                        f"{100 * gbs / ceiling:5.1f}%")
                rows.append(dict(case=name, variant=var, gbps=gbs, pct=100 * gbs / ceiling,
                                 params=str(params)))
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported, not fatal
                line = f"{name:<24} {var}: failed {e!r}"[:200]
            finally:
                rd.heuristics = base
            print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(ceiling=ceiling, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
