"""FusionExecutor: validate inputs, lay out outputs, and run a fusion's kernels.

INTERFACE (stable; frontends call only this):

    ex = FusionExecutor(fusion)
    outs = ex.run(inputs, device=None)   # list in add_output order, aliased outputs omitted
    ex.last_schedule()                   # scheduler params of the last run (list if several)
    ex.last_triton_code()                # generated Triton source of the last run

The body below is a placeholder that the runtime work replaces.
"""

from __future__ import annotations

from typing import Any

from ..ir import Fusion


class FusionExecutor:
    def __init__(self, fusion: Fusion):
        self.fusion = fusion
        self._last_schedule: Any = None
        self._last_code: str | None = None

    def run(self, inputs: list[Any], device=None) -> list[Any]:
        raise NotImplementedError("FusionExecutor.run is not implemented yet")

    def last_schedule(self):
        return self._last_schedule

    def last_triton_code(self) -> str | None:
        return self._last_code
