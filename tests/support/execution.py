"""Running fusions in tests: the interpreter's warnings, a small device, what a run did."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

from layoutfuse.analysis.device import DeviceInfo, device_info
from layoutfuse.nvfuser import FusionCache, FusionDefinition

# Triton's interpreter trips a NumPy deprecation and computes masked-off lanes (0/0): the
# warnings every reduction test module ignores (``pytestmark = INTERPRETER_WARNINGS``).
INTERPRETER_WARNINGS = [
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning"),
]


def small_gpu(sm_count: int, **fields) -> DeviceInfo:
    """The tests' device table with ``sm_count`` multiprocessors (small shapes fill it) and
    ``fields`` replaced (``l2_bytes=0``): a ``target`` for ``configured``."""
    return dataclasses.replace(device_info(torch.get_default_device()), sm_count=sm_count, **fields)


def configured(fd: FusionDefinition, **settings) -> FusionDefinition:
    """``fd`` with its executor configured (``FusionExecutor.configure``: ``tuning``,
    ``target``, ``heuristics``), and its definition taken out of the process-wide cache:
    a later definition of the same fusion (another test's) gets an executor of its own,
    with the defaults."""
    fd.executor().configure(**settings)
    FusionCache.reset()
    return fd


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
