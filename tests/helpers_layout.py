"""Helpers shared by test modules of several directories (tests/ is on ``sys.path``:
pytest's default "prepend" import mode puts the directory of tests/conftest.py there).
"""

from __future__ import annotations

import dataclasses

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
    return dataclasses.replace(device_info(torch.get_default_device()), sm_count=sm_count,
                               **fields)


def configured(fd: FusionDefinition, **settings) -> FusionDefinition:
    """``fd`` with its executor configured (``FusionExecutor.configure``: ``tuning``,
    ``target``, ``heuristics``), and its definition taken out of the process-wide cache:
    a later definition of the same fusion (another test's) gets an executor of its own,
    with the defaults."""
    fd.executor().configure(**settings)
    FusionCache.reset()
    return fd
