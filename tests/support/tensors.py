"""Tensors laid out in a chosen memory order."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def with_order(
    shape: Sequence[int], order: Sequence[int], dtype: torch.dtype, seed: int = 0
) -> torch.Tensor:
    """A dense tensor of logical ``shape`` whose memory order is ``order`` (outermost first)."""
    g = torch.Generator().manual_seed(seed)
    phys = (torch.randn([shape[d] for d in order], generator=g) * 2 + 0.5).to(dtype)
    return phys.permute([list(order).index(d) for d in range(len(shape))])
