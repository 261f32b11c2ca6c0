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

sys.path.insert(0, os.path.dirname(__file__))
from thunder_host import DEVICE, bf16_step  # noqa: E402

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
    for name in names or ["nanogpt_block_sdpa"]:
        call = bf16_step(name)
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
