"""The runtime side of complex lowering: complex arguments as their real parts, and back.

``passes/complex_lowering.py`` turns a fusion with complex values into a real one whose
complex inputs and outputs are each two real ones (re, im). Here the call's tensors are
matched to them: a complex tensor's parts are ``torch.view_as_real(x)[..., 0]`` and
``[..., 1]`` (views of its interleaved storage, strides doubled: nothing is copied), a
complex scalar's are its ``real`` and ``imag``. Outputs are allocated complex by the
executor (their layout chosen on the complex fusion) and written through their parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..errors import InputLayoutError
from ..passes.complex_lowering import ComplexLowering


def tensor_parts(x: torch.Tensor, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The real and imaginary parts of complex tensor ``x`` as views of its storage."""
    if x.is_conj():
        raise InputLayoutError(
            f"{what} is a conjugate view (torch.conj): its storage does not hold its "
            f"values; pass x.resolve_conj()"
        )
    r = torch.view_as_real(x)
    return r[..., 0], r[..., 1]


def complex_part(x: torch.Tensor, k: int) -> torch.Tensor:
    """Part ``k`` (0: real, 1: imaginary) of complex tensor ``x``: a replay's argument."""
    return tensor_parts(x, "a complex argument")[k]


def part_ids(
    positions: Sequence[tuple[int, ...]],
    values: Sequence[Any],
    split_values: Sequence[Any],
    where: str,
) -> dict[int, tuple[str, int, int]]:
    """The id of every part view in ``split_values`` (``split``'s list of ``values``) ->
    (``where``, the position of its complex value, 0 or 1): for a replay plan."""
    out: dict[int, tuple[str, int, int]] = {}
    k = 0
    for i, pos in enumerate(positions):
        if len(pos) == 2 and isinstance(values[i], torch.Tensor):
            out[id(split_values[k])] = (where, i, 0)
            out[id(split_values[k + 1])] = (where, i, 1)
        k += len(pos)
    return out


def _parts(x: Any, what: str) -> tuple[Any, Any]:
    if isinstance(x, torch.Tensor) and x.is_complex():
        return tensor_parts(x, what)
    if x is None:
        return None, None
    if isinstance(x, torch.Tensor):  # a real tensor where a complex one is declared
        return x, x
    z = complex(x)
    return z.real, z.imag


def split(positions: Sequence[tuple[int, ...]], values: Sequence[Any], what: str) -> list[Any]:
    """``values`` (one per original input or output) as the lowered fusion's list."""
    out: list[Any] = []
    for k, (pos, x) in enumerate(zip(positions, values)):
        out.extend(_parts(x, f"{what} {k}") if len(pos) == 2 else (x,))
    return out


def split_inputs(lowering: ComplexLowering, inputs: Sequence[Any]) -> list[Any]:
    return split(lowering.inputs, inputs, "input")


def split_outputs(lowering: ComplexLowering, outputs: Sequence[Any]) -> list[Any]:
    return split(lowering.outputs, outputs, "output")


def join_scalar_outputs(
    lowering: ComplexLowering, outputs: list[Any], lowered_outputs: Sequence[Any]
) -> None:
    """Fill the scalar outputs (None in ``outputs``) from the lowered run's values."""
    for k, pos in enumerate(lowering.outputs):
        if outputs[k] is not None:
            continue
        vals = [lowered_outputs[p] for p in pos]
        outputs[k] = vals[0] if len(vals) == 1 else torch.complex(vals[0], vals[1])


__all__ = [
    "complex_part",
    "join_scalar_outputs",
    "part_ids",
    "split_inputs",
    "split_outputs",
    "tensor_parts",
]
