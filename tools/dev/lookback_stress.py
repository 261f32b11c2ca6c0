"""Stress cumsum's one-pass look-back on the GPU: every launch of a program waits on its
predecessors' published words, so an ordering bug shows as a wrong running sum now and
then, not every time. Runs each case ``REPEATS`` times (fresh random inputs, the kept
flags reused across launches, so every epoch is exercised) against torch's cumsum in
fp64, and prints the worst error per case. A measurement tool, not part of the product:
``PYTHONPATH=src:. python tools/dev/lookback_stress.py [REPEATS]``."""

from __future__ import annotations

import sys

import torch

from layoutfuse.nvfuser import FusionCache, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT

CASES = [
    # (shape, dim, dtype, scan tuning fields)
    ((8192, 4096), 0, torch.float32, {}),
    ((4096, 8192), 1, torch.float32, {}),  # column-major below: the scanned dim strided
    ((4, 1 << 24), 1, torch.float32, {}),
    ((3, 1000003), 1, torch.bfloat16, {}),
    ((1024, 65536), 1, torch.float32, {"loop_tiles_per_sm": 1 << 20}),
    ((2, 8, 50000), 2, torch.float16, {"lookback_window": 2}),
    ((8192, 256), 0, torch.bfloat16, {}),
]


def main(repeats: int) -> int:
    bad = 0
    for shape, dim, dtype, fields in CASES:
        FusionCache.reset()
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(shape, device="cuda", generator=g).to(dtype)
        if shape == (4096, 8192):
            x = x.t().contiguous().t()
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), dim))
        fd.executor().configure(tuning=DEFAULT.with_fields(scan=fields))
        worst = 0.0
        for _ in range(repeats):
            x.normal_(generator=g)
            (out,) = fd.execute([x])
            want = torch.cumsum(x.double(), dim)
            scale = torch.cumsum(x.double().abs(), dim).clamp_min(1.0)
            worst = max(worst, ((out.double() - want).abs() / scale).max().item())
        mode = fd.executor().last_run.segments[0].params.mode
        limit = 1e-5 if dtype == torch.float32 else 1e-2
        ok = worst <= limit
        bad += not ok
        print(
            f"{'ok ' if ok else 'BAD'} {shape} dim {dim} {dtype} {fields} mode {mode}: "
            f"worst relative error {worst:.2e} over {repeats} calls",
            flush=True,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
