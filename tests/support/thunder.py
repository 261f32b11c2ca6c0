"""Lightning Thunder with ``layoutfuse.nvfuser`` as its nvFuser, for the tests.

``load()`` returns ``(thunder, nvfuserex_impl)`` with Thunder's nvFuser executor running
on layoutfuse, or skips the test when ``lightning-thunder`` is not installed. What is
patched in memory to run it on torch 2.13 and on a machine without CUDA (named-tensor
placeholders at import; CPU tensors accepted by the nvFuser executor's checkers) is
described in ``benchmarks/thunder_setup.py``, which ``benchmarks thunder`` shares.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import thunder_setup


def load() -> tuple[Any, Any]:
    """``(thunder, thunder.executors.nvfuserex_impl)`` on layoutfuse; skips without Thunder."""
    try:
        return thunder_setup.load()
    except thunder_setup.ThunderUnavailable as e:
        pytest.skip(str(e))
