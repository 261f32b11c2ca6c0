"""Reproduction scripts (``fd.repro_script_for``) and the inputs they recreate."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition


class InputReproducer:
    """What a script needs to recreate an input tensor: its dtype, device, size,
    strides and value range (nvFuser's class of the same name)."""

    def __init__(self, tensor: torch.Tensor):
        if type(tensor) is not torch.Tensor:
            raise RuntimeError(f"Repro script only supports {torch.Tensor} but {type(tensor)}")
        self.low, self.high = _value_range(tensor)
        self.dtype = tensor.dtype
        self.device = tensor.device
        self.size = tuple(tensor.size())
        self.strides = tuple(tensor.stride())
        self.is_contiguous = tensor.is_contiguous()

    def to_make_tensor_str(self) -> str:
        device = repr(str(self.device))
        if self.is_contiguous:
            integral = not (self.dtype.is_floating_point or self.dtype.is_complex)
            if self.low is not None and self.low == self.high and not integral:
                # make_tensor refuses low == high (floats: deprecated since torch 2.1)
                return f"torch.full({self.size}, {self.low}, dtype={self.dtype}, device={device})"
            high = self.high
            if integral and self.dtype is not torch.bool and high is not None:
                high = int(high) + 1  # make_tensor's integer bound is exclusive
            return (
                f"torch.testing.make_tensor({self.size}, dtype={self.dtype}, "
                f"device={device}, low={self.low}, high={high})"
            )
        storage = 1 + sum((s - 1) * st for s, st in zip(self.size, self.strides) if s > 0)
        if self.dtype.is_floating_point:
            base = f"torch.randn(({storage},), dtype={self.dtype}, device={device})"
        else:
            low, high = (0, 2) if self.low is None else (int(self.low), int(self.high) + 1)
            if self.dtype is torch.bool:  # randint's bound is exclusive: False and True
                low, high = 0, 2
            base = (
                f"torch.randint({low}, {high}, ({storage},), dtype={self.dtype}, device={device})"
            )
        return f"{base}.as_strided({self.size}, {self.strides})"


def _value_range(tensor: torch.Tensor):
    if tensor.dtype is torch.bool:
        return 0, 2
    if tensor.numel() == 0 or tensor.is_complex():
        return None, None
    t = tensor.float() if tensor.dtype.is_floating_point and tensor.dtype.itemsize == 1 else tensor
    lo, hi = (v.cpu().item() for v in torch.aminmax(t))
    if isinstance(lo, float) and not (math.isfinite(lo) and math.isfinite(hi)):
        return None, None
    return lo, hi


def _scalar_text(x) -> str:
    text = str(x)
    text = re.sub(r"\binf\b", 'float("inf")', text)
    return re.sub(r"\bnan\b", 'float("nan")', text)


def repro_script(fd: FusionDefinition, inputs=None) -> str:
    """A script that rebuilds ``fd`` and, given inputs, runs it on look-alike inputs."""
    from .version import version

    msg = (
        f"# torch version: {torch.__version__}\n"
        f"# layoutfuse nvFuser-compatible frontend, nvFuser API version {version()}\n"
        "import torch\n"
        "from layoutfuse.nvfuser import FusionDefinition, DataType\n"
        f"{fd!r}"
        "with FusionDefinition() as fd:\n"
        f"    nvfuser_fusion_id{fd.id()}(fd)\n"
    )
    if inputs is not None:
        msg += "\ninputs = [\n"
        for x in inputs:
            if isinstance(x, torch.Tensor):
                x = InputReproducer(x)
            text = x.to_make_tensor_str() if isinstance(x, InputReproducer) else _scalar_text(x)
            msg += f"    {text},\n"
        msg += "]\nfd.execute(inputs)\n"
    return msg
