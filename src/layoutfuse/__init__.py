"""layoutfuse: a layout-aware fusion compiler for PyTorch tensors that generates Triton kernels.

Frontends: ``layoutfuse.nvfuser`` (nvFuser's FusionDefinition API) and
``layoutfuse.testing_api`` (nvFuser's C++ test API, in Python). Both build the
IR in ``layoutfuse.ir``; ``layoutfuse.runtime`` runs it.

``layoutfuse.use_as_nvfuser()`` before ``import thunder`` makes Lightning Thunder's
nvFuser executor run on layoutfuse.
"""

from __future__ import annotations

import sys
import warnings
from types import ModuleType

from .dtypes import DataType
from .errors import LayoutfuseError

__version__ = "0.1.0"
__all__ = ["DataType", "LayoutfuseError", "__version__", "use_as_nvfuser"]


def use_as_nvfuser() -> ModuleType:
    """Install ``layoutfuse.nvfuser`` as the ``nvfuser`` module (``sys.modules``), so that
    ``import nvfuser`` and code written for it, Thunder's nvFuser executor among them, run
    on layoutfuse. Call it before ``import thunder``: Thunder reads the backend and its
    ``version()`` when it is imported.

    ``nvfuser_direct`` (nvFuser's newer bindings, which Thunder prefers when importable)
    is made unimportable while layoutfuse does not provide it, so that an installed
    nvFuser's cannot take over. Returns the installed module."""
    from . import nvfuser
    from .frontend.nvfuser.version import MODULES_PROVIDED

    if "thunder.executors.nvfuserex" in sys.modules and sys.modules.get("nvfuser") is not nvfuser:
        warnings.warn(
            "use_as_nvfuser() after thunder was imported: thunder has already chosen its "
            "nvFuser backend; call it before `import thunder`",
            stacklevel=2,
        )
    sys.modules["nvfuser"] = nvfuser
    sys.modules["nvfuser._C"] = nvfuser._C
    sys.modules["nvfuser.pytorch_utils"] = nvfuser.pytorch_utils
    if "nvfuser_direct" not in MODULES_PROVIDED:
        sys.modules["nvfuser_direct"] = None  # type: ignore[assignment]  # import raises ImportError
    return nvfuser
