"""What the heuristics know about the device: one table, filled from the device when there is one."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" or "cpu"
    sm_count: int
    max_threads_per_sm: int
    l2_bytes: int
    registers_per_sm: int = 65536
    capability: int = 0  # compute capability as major * 10 + minor (90: Hopper); 0 off CUDA

    @property
    def interpreted(self) -> bool:
        return self.kind == "cpu"


# The CPU runs kernels through Triton's interpreter; heuristics then plan for an H200
# so that the CPU tests exercise the same schedules the GPU runs.
H200 = DeviceInfo("cuda", 132, 2048, 60 * 1024 * 1024, 65536, 90)


@functools.cache
def device_info(device: torch.device | str) -> DeviceInfo:
    device = torch.device(device)
    if device.type != "cuda":
        return DeviceInfo(
            "cpu", H200.sm_count, H200.max_threads_per_sm, H200.l2_bytes, H200.registers_per_sm
        )
    p = torch.cuda.get_device_properties(device)
    return DeviceInfo(
        "cuda",
        p.multi_processor_count,
        getattr(p, "max_threads_per_multi_processor", 2048),
        getattr(p, "L2_cache_size", 50 * 1024 * 1024),
        getattr(p, "regs_per_multiprocessor", 65536),
        10 * p.major + p.minor,
    )
