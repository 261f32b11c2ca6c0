"""``FusionExecutorCache``: nvFuser's test entry point for running a fusion, over FusionExecutor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..errors import ArgumentTypeError, describe
from ..ir import Fusion
from ..runtime.executor import FusionExecutor


class FusionExecutorCache:
    """Owns a fusion (nvFuser takes it by ``std::move``) and runs it on given inputs.

    Kernels are compiled and cached by the FusionExecutor it holds, so running again
    with inputs of the same kind reuses them.
    """

    def __init__(self, fusion: Fusion):
        if not isinstance(fusion, Fusion):
            raise ArgumentTypeError(
                f"FusionExecutorCache: fusion must be a Fusion, got {describe(fusion)}"
            )
        self._fusion = fusion
        self._executor = FusionExecutor(fusion)

    def run_fusion_with_inputs(self, inputs: Sequence[Any]) -> list[torch.Tensor]:
        """The fusion's outputs in ``add_output`` order (outputs aliased to inputs omitted)."""
        return list(self._executor.run(list(inputs)))

    def fusion(self) -> Fusion:
        return self._fusion

    def last_schedule(self):
        """The scheduler parameters of the last run (a list when it ran several kernels)."""
        return self._executor.last_schedule()

    def last_triton_code(self) -> str | None:
        """The generated Triton source of the last run."""
        return self._executor.last_triton_code()


__all__ = ["FusionExecutorCache"]
