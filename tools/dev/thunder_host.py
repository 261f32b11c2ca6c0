"""Where a Thunder-jitted program's host time goes: wall ms per forward+backward call (a
synchronize after each) of the nanoGPT bf16 block with and without Thunder's nvFuser SDPA
(``nv_enable_sdpa``), whether a call synchronizes the host with the device
(``torch.cuda.set_sync_debug_mode``), and a cProfile of ten calls of each (the 25 functions
of most own time). ``PYTHONPATH=src:. python tools/dev/thunder_host.py``. A measurement
tool, not the product."""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import time
import warnings

import torch

from benchmarks import thunder_setup
from benchmarks.thunder_bench import step
from benchmarks.thunder_programs import FULL, PROGRAMS, QUICK

DEVICE = os.environ.get("DEV", "cuda")  # cpu: QUICK's sizes, a check of the tool only


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def bf16_step(name: str):
    """One forward+backward call of program ``name`` in bf16, jitted by Thunder with
    layoutfuse as nvFuser (FULL's sizes on the GPU, QUICK's on the CPU)."""
    thunder, impl = thunder_setup.load()
    program = next(p for p in PROGRAMS if p.name == name)
    sizes = FULL if DEVICE == "cuda" else QUICK["cpu"]
    built = program.build(sizes, torch.bfloat16, DEVICE, torch.Generator().manual_seed(0))
    executors = [e for e in thunder.get_default_executors() if e.name != "nvfuser"]
    executors = [e for e in executors if e.name not in program.thunder_without] + [impl.ex]
    fn = thunder.jit(built.fn, executors=executors, **dict(program.thunder_options))
    out = built.fn(*built.args)
    return step(fn, built, "fwd_bwd", torch.randn_like(out))


def main() -> None:
    for name in ("nanogpt_block", "nanogpt_block_sdpa"):
        call = bf16_step(name)
        for _ in range(5):
            call()
        sync()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if DEVICE == "cuda":
                torch.cuda.set_sync_debug_mode(1)
            call()
            if DEVICE == "cuda":
                torch.cuda.set_sync_debug_mode(0)
        syncs = [str(w.message)[:120] for w in caught if "synchroniz" in str(w.message)]
        print(f"{name}: {len(syncs)} synchronizing calls in one step {syncs[:3]}")
        for label in ("synchronized", "queued"):
            sync()
            t0 = time.perf_counter()
            for _ in range(20):
                call()
                if label == "synchronized":
                    sync()
            sync()
            print(f"{name}: {(time.perf_counter() - t0) / 20 * 1e3:.3f} ms a step ({label})")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(10):
            call()
        sync()
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        print("\n".join(line[:160] for line in text.getvalue().splitlines()[:45]))


if __name__ == "__main__":
    main()
