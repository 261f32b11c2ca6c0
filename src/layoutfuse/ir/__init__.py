"""The IR: Fusion, TensorView, IterDomain, and ops as nodes (one row per op in ``ops``)."""

from . import ops
from .domain import AllocationDomain, IterDomain, IterType
from .fusion import Expr, Fusion, FusionGuard, OutputSpec, current_fusion
from .opdef import REGISTRY, OpDef, OpKind
from .values import Scalar, TensorView, Val, Vector

__all__ = [
    "REGISTRY",
    "AllocationDomain",
    "Expr",
    "Fusion",
    "FusionGuard",
    "IterDomain",
    "IterType",
    "OpDef",
    "OpKind",
    "OutputSpec",
    "Scalar",
    "TensorView",
    "Val",
    "Vector",
    "current_fusion",
    "ops",
]
