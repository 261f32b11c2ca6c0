"""Fixtures for the nvFuser frontend tests.

``reference_executor`` runs fusions with ``layoutfuse.reference`` in place of
``FusionExecutor.run``: these tests check the frontend (what it builds and how
it calls the executor), not the generated kernels. ``region_kernels``
(``support/thunder.py``): the kernels of each layoutfuse execute, for the Thunder tests.
"""

import sys
from pathlib import Path

import pytest

try:
    import layoutfuse  # noqa: F401
except ImportError:  # running from a checkout without an installed package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from layoutfuse.nvfuser import FusionCache  # noqa: E402
from layoutfuse.reference import run_reference  # noqa: E402
from layoutfuse.runtime.executor import FusionExecutor  # noqa: E402
from support.thunder import region_kernels  # noqa: E402, F401 (a fixture for the Thunder tests)


@pytest.fixture(autouse=True)
def fresh_fusion_cache():
    FusionCache.reset()
    yield
    FusionCache.reset()


def _reference_run(self, inputs, device=None, profile=False):
    """FusionExecutor.run's contract, computed by the reference evaluator: outputs in
    add_output order, aliased outputs written into their input and not returned."""
    self.runs = getattr(self, "runs", 0) + 1
    outs = run_reference(self.fusion, list(inputs))
    returned = []
    for spec, out in zip(self.fusion.outputs, outs):
        if spec.alias_input is None:
            returned.append(out)
            continue
        k = next(i for i, v in enumerate(self.fusion.inputs) if v is spec.alias_input)
        inputs[k].copy_(out)
    return returned


@pytest.fixture
def reference_executor(monkeypatch):
    monkeypatch.setattr(FusionExecutor, "run", _reference_run)
    return FusionExecutor
