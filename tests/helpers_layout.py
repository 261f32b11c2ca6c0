"""Helpers shared by test modules of several directories (tests/ is on ``sys.path``:
pytest's default "prepend" import mode puts the directory of tests/conftest.py there).
"""

from __future__ import annotations

import dataclasses

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
