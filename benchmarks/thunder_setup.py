"""Lightning Thunder with ``layoutfuse.nvfuser`` as its nvFuser, for the tests and the
benchmarks (``tests/support/thunder.py`` and ``benchmarks thunder`` both call ``load``).

``load()`` returns ``(thunder, nvfuserex_impl)`` with Thunder's nvFuser executor running
on layoutfuse, or raises ``ThunderUnavailable`` when ``lightning-thunder`` is not
installed. Nothing of Thunder's files changes; what the environment lacks is patched in
memory, and only where it lacks it:

* torch >= 2.13 removed named tensors, which Thunder 0.2.6 still lists among its torch
  operators (``torch.Tensor.align_as`` and four more, read at import): placeholders that
  raise stand in while ``thunder`` imports, and are removed after (on torch <= 2.12,
  the GPU image's 2.11 among them, nothing is missing and nothing is patched);
* without CUDA, Thunder reports no nvFuser (``nvfuser_version()`` is None without CUDA)
  and its checkers accept only CUDA tensors (``is_supported_device``,
  ``is_supported_devicetype``, ``is_supported_tensor``,
  ``nvFuserExecutor.has_cuda_input_or_output``, and ``_select_device``, which factory
  ops such as the ``iota`` of a causal mask call with their device) and declare CPU
  inputs ``is_cpu=True``: on a machine without CUDA these accept CPU tensors, and inputs
  are declared as device tensors. With CUDA none of this is patched.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import torch

import layoutfuse

NAMED_TENSOR_METHODS = ("align_as", "align_to", "has_names", "refine_names", "rename")
_loaded: tuple[Any, Any] | None = None


class ThunderUnavailable(Exception):
    """``lightning-thunder`` is not installed (an installed one that fails to import
    raises its own error: the tests fail on it rather than skip)."""


def _removed(name: str):
    def method(*args, **kwargs):
        raise RuntimeError(f"torch.Tensor.{name}: named tensors were removed from torch")

    method.__name__, method.__qualname__ = name, f"Tensor.{name}"
    return method


def _import_thunder():
    missing = [n for n in NAMED_TENSOR_METHODS if not hasattr(torch.Tensor, n)]
    for n in missing:
        setattr(torch.Tensor, n, _removed(n))
    try:
        import thunder
    finally:
        for n in missing:
            delattr(torch.Tensor, n)
    return thunder


def _accept_cpu_tensors(impl) -> None:
    from thunder.core.devices import DeviceType

    devicetypes = (DeviceType.CUDA, DeviceType.CPU)
    impl.is_supported_device = lambda device: device.devicetype in devicetypes
    impl.is_supported_devicetype = lambda devicetype: devicetype in devicetypes

    def is_supported_tensor(a, *, allow_low_precision_floats: bool = True) -> bool:
        if not allow_low_precision_floats and a.dtype in impl._low_precision_floats:
            return False
        return impl.is_supported_dtype(a.dtype) and a.ndim <= 8

    select_device = impl._select_device

    def select_cpu_device(fd, device) -> None:
        if device is None or device.devicetype != DeviceType.CPU:
            select_device(fd, device)

    impl.is_supported_tensor = is_supported_tensor
    impl._select_device = select_cpu_device
    impl.nvFuserExecutor.has_cuda_input_or_output = lambda self, bsym: True
    impl.cpu = object()  # `x.device == cpu` decides is_cpu=True: never, here


def available() -> bool:
    return importlib.util.find_spec("thunder") is not None


def load() -> tuple[Any, Any]:
    """``(thunder, thunder.executors.nvfuserex_impl)`` on layoutfuse; raises
    ``ThunderUnavailable`` without Thunder. Call it before anything imports ``thunder``."""
    global _loaded
    if _loaded is not None:
        return _loaded
    if not available():
        raise ThunderUnavailable("lightning-thunder is not installed")
    nvfuser = layoutfuse.use_as_nvfuser()
    thunder = _import_thunder()
    import thunder.executors.nvfuserex as nvfuserex
    from looseversion import LooseVersion

    cuda = torch.cuda.is_available()
    if not cuda:
        nvfuserex.nvfuser_version = lambda: LooseVersion(nvfuser.version())
    import thunder.executors.nvfuserex_impl as impl

    assert sys.modules["nvfuser"] is nvfuser and impl.nvfuser is nvfuser
    if not cuda:
        _accept_cpu_tensors(impl)
    _loaded = (thunder, impl)
    return _loaded
