"""``layoutfuse.nvfuser``: a drop-in for nvFuser's legacy ``nvfuser`` Python module.

``from layoutfuse.nvfuser import FusionDefinition, DataType`` and an nvFuser
script (or Thunder's nvFuser executor) runs on layoutfuse. The implementation
lives in ``layoutfuse.frontend.nvfuser``.
"""

import enum

from ..frontend.nvfuser import (
    DataType,
    FusionCache,
    FusionDefinition,
    Scalar,
    Tensor,
    Vector,
    Version,
    clone,
    compute_contiguity,
    compute_tensor_descriptor,
    version,
)
from . import _C, pytorch_utils

__version__ = version()


def enable_automatic_serialization() -> None:
    """Accepted for compatibility; layoutfuse does not serialize its FusionCache."""


def disable_automatic_serialization() -> None:
    """Accepted for compatibility; layoutfuse does not serialize its FusionCache."""


class CommunicatorBackend(enum.Enum):
    """Stub of nvFuser's enum (multidevice execution is not supported)."""

    nccl = "nccl"
    ucc = "ucc"


__all__ = [
    "CommunicatorBackend",
    "DataType",
    "FusionCache",
    "FusionDefinition",
    "Scalar",
    "Tensor",
    "Vector",
    "Version",
    "_C",
    "clone",
    "compute_contiguity",
    "compute_tensor_descriptor",
    "disable_automatic_serialization",
    "enable_automatic_serialization",
    "pytorch_utils",
    "version",
]
