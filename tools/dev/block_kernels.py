"""Each kernel's device time in one forward+backward call of a Thunder program, Thunder
on layoutfuse beside torch.compile: ``PYTHONPATH=src:. python tools/dev/block_kernels.py
[program] [dtype]`` (default the nanoGPT block in bf16, attention decomposed). Prints
the kernels of each system by device ms per call, largest first, with counts, and the
totals: where the block's time gap to torch.compile lies (the matmuls are cuBLAS's on
both). ``DEV=cpu``: QUICK's sizes, a check of the tool only. A measurement tool, not the
product."""

from __future__ import annotations

import os
import sys

import torch

from benchmarks import thunder_setup
from benchmarks.harness import kernel_times
from benchmarks.thunder_bench import step
from benchmarks.thunder_programs import FULL, PROGRAMS, QUICK

DEVICE = os.environ.get("DEV", "cuda")


def _calls(name: str, dtype: torch.dtype):
    thunder, impl = thunder_setup.load()
    program = next(p for p in PROGRAMS if p.name == name)
    sizes = FULL if DEVICE == "cuda" else QUICK["cpu"]
    built = program.build(sizes, dtype, DEVICE, torch.Generator().manual_seed(0))
    executors = [e for e in thunder.get_default_executors() if e.name != "nvfuser"]
    executors = [e for e in executors if e.name not in program.thunder_without] + [impl.ex]
    grad = torch.randn_like(built.fn(*built.args))
    jitted = thunder.jit(built.fn, executors=executors, **dict(program.thunder_options))
    torch._dynamo.reset()
    compiled = torch.compile(built.fn)
    return {
        "layoutfuse": step(jitted, built, "fwd_bwd", grad),
        "compile": step(compiled, built, "fwd_bwd", grad),
    }


def main(argv: list[str]) -> int:
    name = argv[0] if argv else "nanogpt_block"
    dtype = getattr(torch, argv[1]) if len(argv) > 1 else torch.bfloat16
    for system, call in _calls(name, dtype).items():
        for _ in range(3):
            call()
        if DEVICE != "cuda":
            print(system, "ran")
            continue
        times = kernel_times(call, DEVICE, reps=10)
        total = sum(times.values())
        print(f"{system}: {total:.3f} ms of kernels a call, {len(times)} kernel names")
        for k, ms in sorted(times.items(), key=lambda kv: -kv[1])[:30]:
            print(f"  {ms * 1e3:8.1f} us  {k[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
