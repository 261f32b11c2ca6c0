"""Running fusions in tests: the interpreter's warnings, a small device, what a run did."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from layoutfuse.nvfuser import FusionCache
from layoutfuse.runtime import pipeline

# Triton's interpreter trips a NumPy deprecation and computes masked-off lanes (0/0): the
# warnings every reduction test module ignores (``pytestmark = INTERPRETER_WARNINGS``).
INTERPRETER_WARNINGS = [
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning"),
]


def small_gpu(monkeypatch, sm_count: int) -> None:
    """Heuristics for a device of ``sm_count`` multiprocessors (small shapes fill it)."""
    FusionCache.reset()         # patched heuristics must plan anew, not replay a cached plan
    real = pipeline.device_info
    monkeypatch.setattr(pipeline, "device_info",
                        lambda d: dataclasses.replace(real(d), sm_count=sm_count))


def as_list(schedule: Any) -> list:
    """A ``last_schedule()`` as a list: None (no run yet), one params object (the older
    form, one kernel) or a list."""
    if schedule is None:
        return []
    return list(schedule) if isinstance(schedule, list) else [schedule]


def schedules(fd) -> list:
    """The params of every kernel the last run of ``fd`` (a FusionDefinition or an
    executor) launched, in launch order."""
    return as_list(fd.last_schedule())


def assert_ran_kernels(fd) -> None:
    """The last run of ``fd`` launched generated kernels: a schedule and Triton source."""
    found = schedules(fd)
    assert found, "the last run has no schedule: no kernel ran"
    code = fd.last_triton_code() or ""
    assert "@triton.jit" in code, "the last run's code holds no Triton kernel"
