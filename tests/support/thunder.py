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
from layoutfuse.frontend.nvfuser import fusion_definition


def load() -> tuple[Any, Any]:
    """``(thunder, thunder.executors.nvfuserex_impl)`` on layoutfuse; skips without Thunder."""
    try:
        return thunder_setup.load()
    except thunder_setup.ThunderUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture
def region_kernels(monkeypatch):
    """The kernels of every layoutfuse execute, in call order (replays: those of the run
    they replay)."""
    counts: list[int] = []
    real = fusion_definition.FusionDefinition.execute

    def execute(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        counts.append(len(self.executor().last_run.launches))
        return out

    monkeypatch.setattr(fusion_definition.FusionDefinition, "execute", execute)
    return counts


def regions_and_torch_ops(trace) -> tuple[list[str], list[str]]:
    """The names of a Thunder trace's nvFuser regions, and of the ops it runs elsewhere."""
    regions, torch_ops = [], []
    for bsym in trace.bound_symbols:
        executor = getattr(bsym.sym.executor, "name", None)
        if executor == "nvfuser":
            regions.append(bsym.sym.name)
        elif executor not in (None, "python"):
            torch_ops.append(bsym.sym.name)
    return regions, torch_ops
