"""nvFuser's legacy Python frontend (``FusionDefinition``), built on the layoutfuse IR.

The public import path is ``layoutfuse.nvfuser``; this package holds the parts:
``fusion_definition`` (lifecycle, execute), ``define`` (inputs and outputs),
``ops_namespace`` (``fd.ops``), ``handles`` (Tensor, Scalar, Vector),
``descriptors`` (contiguity and stride order), ``cache`` (FusionCache),
``printer`` (the printed records) and ``repro`` (repro scripts).
"""

from ...dtypes import DataType
from .cache import FusionCache
from .descriptors import compute_contiguity, compute_tensor_descriptor, dense_strides
from .fusion_definition import FusionDefinition, FusionProfile
from .handles import Scalar, Tensor, Vector
from .ops_namespace import Operators
from .version import Version, version


def clone(from_fd: FusionDefinition, to_fd: FusionDefinition) -> None:
    """Record ``from_fd``'s definition into ``to_fd``, which must be defining."""
    to_fd._recorder_for("clone")
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(repr(from_fd), namespace)  # noqa: S102 - our own printed records
    func = next(v for k, v in namespace.items() if k.startswith("nvfuser_"))
    func(to_fd)


__all__ = [
    "DataType",
    "FusionCache",
    "FusionDefinition",
    "FusionProfile",
    "Operators",
    "Scalar",
    "Tensor",
    "Vector",
    "Version",
    "clone",
    "compute_contiguity",
    "compute_tensor_descriptor",
    "dense_strides",
    "version",
]
