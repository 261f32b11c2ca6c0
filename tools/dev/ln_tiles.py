"""Thunder-style bf16 layer norm regions of nanoGPT (``[B*T, C]`` rows, weight and bias,
mean and rstd kept), alone and after a residual add, under normalization tunings, with
eager ``F.layer_norm`` and torch.compile of the same function beside them (CUDA events,
L2 emptied: ``harness.time_kernel``). ``PYTHONPATH=src:. python tools/dev/ln_tiles.py
768,1024 "" normalization.inner_tile_bytes=8192 ...``. A measurement tool, not the product."""

from __future__ import annotations

import os
import sys

import torch

from benchmarks.harness import time_kernel
from benchmarks.tune import parse_tuning
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition

ROWS = int(os.environ.get("LN_ROWS", "8192"))


def define(fd, rows, cols, residual):
    def t(shape):
        return fd.define_tensor(
            shape=list(shape),
            contiguity=[True] * len(shape),
            dtype=DataType.BFloat16,
            is_cpu=False,
            stride_order=list(range(len(shape)))[::-1],
        )

    x, w, b = t([rows, cols]), t([cols]), t([cols])
    x0 = fd.ops.cast(x, DataType.Float)
    if residual:
        r = fd.ops.cast(t([rows, cols]), DataType.Float)
        x0 = fd.ops.add(x0, r)
        fd.add_output(fd.ops.cast(x0, DataType.BFloat16))
    var, mean = fd.ops.var_mean(x0, dims=[1], correction=0, keepdim=False)
    var_b = fd.ops.broadcast_in_dim(var, shape=[rows, 1], broadcast_dims=[0])
    mean_b = fd.ops.broadcast_in_dim(mean, shape=[rows, 1], broadcast_dims=[0])
    rstd = fd.ops.rsqrt(fd.ops.add(var_b, fd.define_scalar(1e-5, dtype=DataType.Double)))
    xc = fd.ops.sub(x0, fd.ops.broadcast_in_dim(mean_b, shape=[rows, cols], broadcast_dims=[0, 1]))
    y = fd.ops.mul(xc, fd.ops.broadcast_in_dim(rstd, shape=[rows, cols], broadcast_dims=[0, 1]))
    wf, bf = fd.ops.cast(w, DataType.Float), fd.ops.cast(b, DataType.Float)
    y = fd.ops.mul(y, fd.ops.broadcast_in_dim(wf, shape=[rows, cols], broadcast_dims=[1]))
    y = fd.ops.add(y, fd.ops.broadcast_in_dim(bf, shape=[rows, cols], broadcast_dims=[1]))
    fd.add_output(mean)
    fd.add_output(rstd)
    fd.add_output(fd.ops.cast(y, DataType.BFloat16))


def main(argv: list[str]) -> int:
    widths = [int(c) for c in argv[0].split(",")]
    tunings = argv[1:] or [""]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for cols in widths:
        for residual in (False, True):
            g = torch.Generator(device=dev).manual_seed(0)
            x = torch.randn(ROWS, cols, device=dev, generator=g).bfloat16()
            w = torch.randn(cols, device=dev, generator=g).bfloat16()
            b = torch.randn(cols, device=dev, generator=g).bfloat16()
            r = torch.randn(ROWS, cols, device=dev, generator=g).bfloat16()
            ins = [x, w, b, r] if residual else [x, w, b]
            nbytes = sum(i.numel() * 2 for i in ins) + x.numel() * 2 * (2 if residual else 1)

            def ref(x, w, b, r=None, cols=cols):
                h = x + r if r is not None else x
                return h, torch.nn.functional.layer_norm(h, (cols,), w, b)

            label = f"[{ROWS}, {cols}] {'add+ln' if residual else 'ln'}"
            for name, fn in (("eager", ref), ("compile", torch.compile(ref))):
                ms = time_kernel(lambda fn=fn, ins=ins: fn(*ins), dev)
                print(
                    f"{label:22} {name:28} {ms * 1e3:7.1f} us {nbytes / ms / 1e6:6.0f} GB/s",
                    flush=True,
                )
            for text in tunings:
                FusionCache.reset()
                with FusionDefinition() as fd:
                    define(fd, ROWS, cols, residual)
                fd.executor().configure(tuning=parse_tuning(text) if text else None)
                outs = fd.execute(ins)
                want = ref(*ins)[1]
                torch.testing.assert_close(outs[-1].float(), want.float(), rtol=3e-2, atol=3e-2)
                ms = time_kernel(lambda fd=fd, ins=ins: fd.execute(ins), dev)
                p = fd.last_schedule()[0]
                plan = f"bx={p.block_x} br={p.block_r} w={p.num_warps}"
                print(
                    f"{label:22} {(text or 'defaults')[:28]:28} {ms * 1e3:7.1f} us "
                    f"{nbytes / ms / 1e6:6.0f} GB/s {plan}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
