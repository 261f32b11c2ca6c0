"""nvFuser's extension module names (``nvfuser._C.Tensor`` and friends)."""

from ..frontend.nvfuser import (
    DataType,
    FusionCache,
    FusionDefinition,
    Scalar,
    Tensor,
    Vector,
    compute_contiguity,
    compute_tensor_descriptor,
)

_FusionDefinition = FusionDefinition

__all__ = [
    "DataType",
    "FusionCache",
    "FusionDefinition",
    "Scalar",
    "Tensor",
    "Vector",
    "_FusionDefinition",
    "compute_contiguity",
    "compute_tensor_descriptor",
]
