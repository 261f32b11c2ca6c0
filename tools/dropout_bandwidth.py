"""Dropout's bandwidth on the GPU: layoutfuse's fused kernel (Philox per element) against
eager ``torch.nn.functional.dropout``, in GB/s of the bytes read and written.

    PYTHONPATH=src:. python tools/dropout_bandwidth.py [ROWS COLS]

Philox costs about 40 integer multiplies per element: this says whether the kernel is
still bound by memory (fp32: 8 bytes per element; bf16: 4).
"""

from __future__ import annotations

import sys

import torch
import triton.testing

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
    rows, cols = (int(a) for a in argv) if argv else (16384, 8192)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(rows, cols, device="cuda").to(dtype)
        fd = dropout_fd(x, 0.1)
        moved = 2 * x.numel() * x.element_size()
        ours = triton.testing.do_bench(lambda: fd.execute([x, 1234, 0]))  # noqa: B023
        eager = triton.testing.do_bench(lambda: torch.nn.functional.dropout(x, 0.1))  # noqa: B023
        print(
            f"{str(dtype):16} [{rows}, {cols}]  layoutfuse {moved / ours / 1e6:7.0f} GB/s"
            f"  eager {moved / eager / 1e6:7.0f} GB/s"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
