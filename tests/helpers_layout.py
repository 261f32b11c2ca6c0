"""Helpers shared by test modules of several directories (tests/ is on ``sys.path``:
pytest's default "prepend" import mode puts the directory of tests/conftest.py there).
"""

from __future__ import annotations

import dataclasses

from layoutfuse.nvfuser import FusionCache
from layoutfuse.runtime import kernels


def small_gpu(monkeypatch, sm_count: int) -> None:
    """Heuristics for a device of ``sm_count`` multiprocessors (small shapes fill it)."""
    FusionCache.reset()         # patched heuristics must plan anew, not replay a cached plan
    real = kernels.device_info
    monkeypatch.setattr(kernels, "device_info",
                        lambda d: dataclasses.replace(real(d), sm_count=sm_count))
