"""layoutfuse: a layout-aware fusion compiler for PyTorch tensors that generates Triton kernels.

Frontends: ``layoutfuse.nvfuser`` (nvFuser's FusionDefinition API) and
``layoutfuse.testing_api`` (nvFuser's C++ test API, in Python). Both build the
IR in ``layoutfuse.ir``; ``layoutfuse.runtime`` runs it.
"""

from .dtypes import DataType
from .errors import LayoutfuseError

__version__ = "0.1.0"
__all__ = ["DataType", "LayoutfuseError", "__version__"]
