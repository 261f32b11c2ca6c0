"""Host-side bounds checks of indexed reads and writes (``ir.ops.indexing``, ``writes``)
before any launch.

An index tensor that is a fusion input on the CPU (reached from the read's index operand
through shape ops, which keep its values) is checked on every call, replays included:
each value must lie in ``[0, n)`` (take_along_axis: ``[-n, n)``), ``n`` the extent of
the dim it indexes, as torch requires; a bad one raises ``IndexError`` naming the op, the value and the extent.
Indices on a GPU are not checked on the host (that would synchronize): the kernel's
``tl.device_assert`` fires where Triton compiles asserts (``TRITON_DEBUG=1``); without it
an out-of-range index reads outside the tensor (undefined, as a CUDA kernel without
device asserts). Indices the fusion computes are checked only by that assert, which
Triton's CPU interpreter evaluates (``codegen.backend``): an ``IndexError`` naming the op.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..ir import Fusion, OpKind, TensorView

_VALUE_KEEPING = ("set", "broadcast_in_dim", "permute", "squeeze", "reshape")


@dataclass(frozen=True)
class IndexCheck:
    input_pos: int  # position of the index tensor in the fusion's inputs
    extent: int  # the extent of the dim it indexes, in this call's shapes
    source: str  # the op the user called
    dim: int
    negative: bool  # negative indices count from the end


def index_checks(fusion: Fusion, extents: Mapping[int, int]) -> tuple[IndexCheck, ...]:
    """The checks of the fusion's indexed reads whose index is an input, for ``extents``."""
    out = []
    for e in fusion.exprs:
        if e.op.name not in ("gather_dim", "scatter_dim"):
            continue
        v = e.inputs[1]
        while (
            isinstance(v, TensorView)
            and v.definition is not None
            and v.definition.op.kind is OpKind.SHAPE
            and v.definition.op.name in _VALUE_KEEPING
        ):
            v = v.definition.inputs[0]
        if isinstance(v, TensorView) and v.definition is None and v in fusion.inputs:
            arg = e.inputs[0]
            assert isinstance(arg, TensorView)
            dim = e.attrs["dim"]
            n = extents[arg.shape_domain[dim].uid]
            out.append(
                IndexCheck(fusion.inputs.index(v), n, e.attrs["source"], dim, e.attrs["negative"])
            )
    return tuple(out)


def check_indices(checks: Sequence[IndexCheck], inputs: Sequence[Any]) -> None:
    for c in checks:
        x = inputs[c.input_pos]
        if not torch.is_tensor(x) or x.device.type != "cpu" or x.numel() == 0:
            continue
        bad = (x < (-c.extent if c.negative else 0)) | (x >= c.extent)
        if bool(bad.any()):
            value = int(x[bad].flatten()[0])
            raise IndexError(
                f"{c.source}: index {value} (input {c.input_pos}) is out of range for dim "
                f"{c.dim} of extent {c.extent}"
            )
