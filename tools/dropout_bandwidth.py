"""Dropout's bandwidth on the GPU: layoutfuse's fused kernel against eager
``torch.nn.functional.dropout``, in GB/s of the bytes read and written.

    PYTHONPATH=src:. python tools/dropout_bandwidth.py [ROWS COLS] [--tuning TEXT ...]

A Philox call costs about 18 ``mul.hi.u32`` in sm_90 PTX; one call serves 4 uniform
elements (``ir.ops.random``): the dropout kernel makes about 4.7 per element, where a
call per element made 16. This says whether the kernel is still bound by memory (fp32:
8 bytes per element; bf16: 4). Each ``--tuning`` (as ``python -m benchmarks tune``
takes it, ``""`` the defaults) times the kernel its heuristics plan: the A/B of the
grouped form is ``--tuning "" --tuning pointwise.philox_run=0`` (a call per element,
selecting its words: the same numbers).
"""

from __future__ import annotations

import argparse
import sys

import torch
import triton.testing

from benchmarks.tune import parse_tuning
from layoutfuse.dtypes import from_torch
from layoutfuse.nvfuser import DataType, FusionDefinition


def dropout_fd(x: torch.Tensor, p: float) -> FusionDefinition:
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        seed, offset = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        r = fd.ops.rand_like(t, rng_seed=seed, rng_offset=offset)
        keep = fd.ops.lt(r, fd.define_scalar(1.0 - p, dtype=DataType.Double))
        scaled = fd.ops.mul(t, fd.define_scalar(1.0 / (1.0 - p), dtype=DataType.Double))
        y = fd.ops.where(keep, scaled, fd.define_scalar(0.0, dtype=DataType.Double))
        fd.add_output(fd.ops.cast(y, from_torch(x.dtype)))
    return fd


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", nargs="*", type=int, default=[16384, 8192], help="ROWS COLS")
    ap.add_argument("--tuning", action="append", help="schedulers' fields replaced")
    args = ap.parse_args(argv)
    rows, cols = args.shape
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(rows, cols, device="cuda").to(dtype)
        moved = 2 * x.numel() * x.element_size()
        eager = triton.testing.do_bench(lambda: torch.nn.functional.dropout(x, 0.1))  # noqa: B023
        for text in args.tuning or [""]:
            fd = dropout_fd(x, 0.1)
            fd.executor().configure(tuning=parse_tuning(text))
            ours = triton.testing.do_bench(lambda: fd.execute([x, 1234, 0]))  # noqa: B023
            print(
                f"{str(dtype):16} [{rows}, {cols}] [{text or 'defaults'}]"
                f"  layoutfuse {moved / ours / 1e6:7.0f} GB/s  eager {moved / eager / 1e6:7.0f} GB/s"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
