"""Which calls copy tensors in a Thunder-jitted program (the ``direct_copy`` kernels of a
profile): ``PYTHONPATH=src:. python tools/dev/copy_probe.py [program ...]`` runs each
program's bf16 forward+backward a few times, then one step under ``torch.profiler`` with
shapes and Python stacks, and prints every ``aten::copy_``/``aten::clone``/
``aten::contiguous`` with its input shapes and the ops around it. ``DEV=cpu``: QUICK's sizes, a check of the tool only. A measurement tool,
not the product."""

from __future__ import annotations

import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks import thunder_setup
from benchmarks.thunder_bench import step
from benchmarks.thunder_programs import FULL, PROGRAMS, QUICK

DEVICE = os.environ.get("DEV", "cuda")
COPIES = ("aten::copy_", "aten::clone", "aten::contiguous", "aten::_to_copy")


def _frames(event) -> list[str]:
    """The ops around the copy, innermost first (``cpu_parent``): whether an ATen op copies
    inside (the attention backward) or a call copies at the top."""
    out, ev = [], event.cpu_parent
    while ev is not None and len(out) < 12:
        out.append(f"{ev.name} {ev.input_shapes}"[:200])
        ev = ev.cpu_parent
    return out


def main(names: list[str]) -> None:
    thunder, impl = thunder_setup.load()
    for name in names or ["nanogpt_block_sdpa"]:
        program = next(p for p in PROGRAMS if p.name == name)
        sizes = FULL if DEVICE == "cuda" else QUICK["cpu"]
        built = program.build(sizes, torch.bfloat16, DEVICE, torch.Generator().manual_seed(0))
        executors = [e for e in thunder.get_default_executors() if e.name != "nvfuser"]
        executors = [e for e in executors if e.name not in program.thunder_without] + [impl.ex]
        fn = thunder.jit(built.fn, executors=executors, **dict(program.thunder_options))
        out = built.fn(*built.args)
        call = step(fn, built, "fwd_bwd", torch.randn_like(out))
        for _ in range(3):
            call()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE == "cuda" else [])
        with profile(activities=activities, record_shapes=True, with_stack=True) as prof:
            call()
            if DEVICE == "cuda":
                torch.cuda.synchronize()
        print(f"== {name}")
        for ev in prof.events():
            if ev.name in COPIES and (DEVICE == "cpu" or any(k.duration > 1 for k in ev.kernels)):
                dev_us = sum(k.duration for k in ev.kernels) if ev.kernels else 0.0
                print(f"{ev.name} shapes={ev.input_shapes} device_us={dev_us:.1f}")
                for f in _frames(ev):
                    print("     ", f)


if __name__ == "__main__":
    main(sys.argv[1:])
