"""Execute-time checks of a fusion's inputs, and the concrete extents they bind.

``validate_inputs(fusion, inputs)`` checks every argument against its declared
input (count, type, rank, dtype, device, static sizes, broadcast dims, strides
against the declared allocation domain) and then propagates the concrete extent
of every IterDomain of the fusion through its ops. Only sizes, strides and
scalar values are read: tensor data never is, so this is cheap.

Stride rule (nvFuser's ``validateAllocationSizesAndStrides``), walked over the
declared allocation order from innermost to outermost:

* a broadcast dim is skipped; an expanded one of size > 1 must have stride 0;
* a dim of size 1 is skipped (its stride means nothing, as in PyTorch);
* contiguity True: stride == stride(next inner non-broadcast dim) * its size,
  and 1 for the innermost;
* contiguity False: any stride.

Stricter than nvFuser, because a tensor is never silently copied: the declared
order must also hold for strided dims. Among dims that are not broadcast, have
size > 1 and a nonzero stride, a dim declared outer must not have a smaller
stride than one declared inner. (nvFuser accepts any order for contiguity-False
dims; a frontend should declare ``stride_order`` from the actual strides, as
``from_pytorch`` and Thunder do.) Tensors with no elements pass any strides.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..dtypes import PACKED, DataType, from_torch, to_torch
from ..errors import (
    InputCountError,
    InputDeviceError,
    InputDtypeError,
    InputLayoutError,
    InputRankError,
    InputShapeError,
)
from ..ir import Fusion, IterDomain, Scalar, TensorView, Vector
from .extents import RunExtents, propagate_extents


@dataclass(frozen=True)
class Bindings:
    """What one call's inputs fix: extents, scalar values and the device.

    ``extents``: the concrete extent of every IterDomain of the fusion, by
    ``IterDomain.uid`` (reduction axes included: the extent they reduce).
    ``scalars``: the value of every scalar that is known on the host, by
    ``Val.index``: scalar inputs (as Python numbers of their declared kind),
    size queries, and scalar arithmetic on them.
    """

    extents: Mapping[int, int]
    scalars: Mapping[int, Any]
    device: torch.device

    def extent(self, d: IterDomain) -> int:
        return self.extents[d.uid]

    def shape(self, tv: TensorView) -> tuple[int, ...]:
        """The concrete shape of ``tv`` (over ``shape_domain``)."""
        return tuple(self.extents[d.uid] for d in tv.shape_domain)

    def scalar(self, s: Scalar) -> Any:
        return s.value if s.is_constant else self.scalars[s.index]


def describe_input(fusion: Fusion, pos: int) -> str:
    v = fusion.inputs[pos]
    tag = {TensorView: "T", Scalar: "S", Vector: "V"}.get(type(v), "V")
    return f"input {pos} ({tag}{v.index})"


def validate_inputs(
    fusion: Fusion, inputs: Sequence[Any], device: torch.device | str | int | None = None
) -> Bindings:
    """Check ``inputs`` against ``fusion.inputs`` and bind every extent of the fusion.

    Raises an :class:`~layoutfuse.errors.InputError` subclass naming the input's
    position, the dim, and the expected and actual values.
    """
    inputs = list(inputs)
    if len(inputs) != len(fusion.inputs):
        raise InputCountError(
            f"the fusion has {len(fusion.inputs)} inputs "
            f"({', '.join(map(repr, fusion.inputs)) or 'none'}), "
            f"got {len(inputs)} arguments"
        )
    want_device = _as_device(device)
    run_device: torch.device | None = None
    run_device_from = ""
    extents = RunExtents()
    origins: dict[int, str] = {}
    scalars: dict[int, Any] = {}
    for pos, (val, x) in enumerate(zip(fusion.inputs, inputs)):
        name = describe_input(fusion, pos)
        if isinstance(val, TensorView):
            _check_tensor_type(name, val, x)
            if not (x.dim() == 0 and x.device.type == "cpu"):
                if want_device is not None and not _same_device(x.device, want_device):
                    raise InputDeviceError(
                        f"{name} is on {x.device}, but the fusion runs on "
                        f"{want_device} (execute's device argument)"
                    )
                if run_device is None:
                    run_device, run_device_from = x.device, name
                elif not _same_device(x.device, run_device):
                    raise InputDeviceError(
                        f"{name} is on {x.device}, but {run_device_from} is on {run_device}; "
                        f"all tensor inputs must be on one device (0-dim CPU tensors excepted)"
                    )
            sizes, strides = _geometry(val, x)
            _check_sizes(name, val, sizes)
            _check_strides(name, val, sizes, strides)
            for i, d in enumerate(val.shape_domain):
                extents[d.uid] = sizes[i]
                origins[d.uid] = f"{name} dim {i}"
        elif isinstance(val, Scalar):
            scalars[val.index] = _scalar_value(name, val.dtype, x)
        elif isinstance(val, Vector):
            if not isinstance(x, list | tuple) or len(x) != val.size:
                raise InputRankError(f"{name}: expected a list of {val.size} ints, got {x!r}")
            for k, (e, xe) in enumerate(zip(val.elements, x)):
                scalars[e.index] = _scalar_value(f"{name} element {k}", e.dtype, xe)
    dev = want_device or run_device or _default_device()
    propagate_extents(fusion, extents, scalars, origins)
    return Bindings(extents, scalars, dev)


# --- devices ---------------------------------------------------------------------------
def _as_device(device: torch.device | str | int | None) -> torch.device | None:
    if device is None:
        return None
    if isinstance(device, int):
        return torch.device("cuda", device)
    return torch.device(device)


def _same_device(a: torch.device, b: torch.device) -> bool:
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)


def _default_device() -> torch.device:
    return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")


# --- tensors -----------------------------------------------------------------------------
def _check_tensor_type(name: str, val: TensorView, x: Any) -> None:
    if not isinstance(x, torch.Tensor):
        raise InputDtypeError(
            f"{name}: expected a torch.Tensor of rank {val.ndim} and dtype "
            f"{val.dtype}, got {type(x).__name__} {x!r}"
        )
    if x.dim() != val.ndim:
        raise InputRankError(
            f"{name}: expected rank {val.ndim} (shape "
            f"{_fmt_static(val)}), got rank {x.dim()} (shape {tuple(x.shape)})"
        )
    try:
        dt = from_torch(x.dtype)
    except ValueError:
        dt = None
    want = PACKED.get(val.dtype, val.dtype)  # a packed dtype's tensors hold two a byte
    if dt is not want:
        raise InputDtypeError(
            f"{name}: expected dtype {val.dtype} ({to_torch(want)}), got {x.dtype}"
        )


def _geometry(val: TensorView, x: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The sizes and strides of input ``x`` in elements of ``val``'s dtype: those of ``x``,
    or for a packed dtype (``dtypes.PACKED``) the innermost allocated dim doubled and
    every stride in elements (two a byte)."""
    sizes, strides = tuple(int(n) for n in x.shape), tuple(x.stride())
    if val.dtype not in PACKED or not sizes:
        return sizes, strides
    inner = val.allocation_order[-1]
    unpacked = tuple(2 * n if i == inner else n for i, n in enumerate(sizes))
    return unpacked, tuple(1 if i == inner else 2 * s for i, s in enumerate(strides))


def _fmt_static(val: TensorView) -> str:
    return "[" + ", ".join("?" if e is None else str(e) for e in val.static_shape) + "]"


def _check_sizes(name: str, val: TensorView, shape: tuple[int, ...]) -> None:
    for i, d in enumerate(val.shape_domain):
        size = shape[i]
        if d.is_broadcast and not d.expanded and size != 1:
            raise InputShapeError(
                f"{name} dim {i} is a broadcast dim: expected size 1, got {size} (shape {shape})"
            )
        if d.extent is not None and size != d.extent:
            kind = "expanded broadcast" if d.is_broadcast else "static"
            raise InputShapeError(
                f"{name} dim {i}: expected size {d.extent} ({kind} extent), "
                f"got {size} (shape {shape})"
            )


def _check_strides(
    name: str, val: TensorView, sizes: tuple[int, ...], strides: tuple[int, ...]
) -> None:
    if 0 in sizes:
        return
    dims = val.shape_domain
    order, contig = val.allocation_order, val.contiguity

    def fail(detail: str) -> InputLayoutError:
        return InputLayoutError(
            f"{name}: strides {strides} (shape {sizes}) contradict the declared layout "
            f"(allocation order {order} outermost first, i.e. stride_order "
            f"{_stride_order(order)}; contiguity {contig}): {detail}"
        )

    expected = 1
    for k in range(len(order) - 1, -1, -1):
        i = order[k]
        size, stride = sizes[i], strides[i]
        if dims[i].is_broadcast:
            if dims[i].expanded and size > 1 and stride != 0:
                raise fail(
                    f"dim {i} is an expanded broadcast dim and must have stride 0, "
                    f"got stride {stride}"
                )
            continue
        if size == 1:
            continue
        if contig[k] and stride != expected:
            where = (
                "the innermost dim"
                if _is_innermost(k, order, dims, sizes)
                else "contiguous with the next inner dim"
            )
            raise fail(
                f"dim {i} is declared {where} (allocation position {k}) and must have "
                f"stride {expected}, got {stride}"
            )
        expected = stride * size
    ordered = [i for i in order if not dims[i].is_broadcast and sizes[i] > 1 and strides[i] != 0]
    for outer, inner in zip(ordered, ordered[1:]):
        if strides[outer] < strides[inner]:
            raise fail(
                f"dim {outer} is declared outer to dim {inner} in memory but has the "
                f"smaller stride ({strides[outer]} < {strides[inner]})"
            )


def _is_innermost(
    k: int, order: Sequence[int], dims: Sequence[IterDomain], sizes: Sequence[int]
) -> bool:
    return all(dims[i].is_broadcast or sizes[i] == 1 for i in order[k + 1 :])


def _stride_order(order: tuple[int, ...]) -> list[int]:
    """nvFuser's stride_order for an allocation order: rank by stride, 0 = innermost."""
    r = len(order)
    so = [0] * r
    for k, i in enumerate(order):
        so[i] = r - 1 - k
    return so


# --- scalars -----------------------------------------------------------------------------
_KIND_RANK = {bool: 0, int: 1, float: 2, complex: 3}


def _declared_kind(dtype: DataType) -> type:
    if dtype is DataType.Bool:
        return bool
    if dtype in (DataType.Int, DataType.Int32, DataType.UInt64):
        return int
    if dtype in (DataType.ComplexFloat, DataType.ComplexDouble):
        return complex
    return float


def _scalar_value(name: str, dtype: DataType, x: Any) -> Any:
    """``x`` as a Python number of the declared dtype's kind (bool, int, float, complex)."""
    if isinstance(x, torch.Tensor):
        if x.dim() != 0:
            raise InputRankError(
                f"{name}: expected a scalar (a Python number or a 0-dim "
                f"tensor) of dtype {dtype}, got a tensor of shape "
                f"{tuple(x.shape)}"
            )
        x = x.item()
    kind: type
    if isinstance(x, bool):
        kind = bool
    elif isinstance(x, numbers.Integral):
        kind = int
    elif isinstance(x, numbers.Real):
        kind = float
    elif isinstance(x, numbers.Complex):
        kind = complex
    else:
        raise InputDtypeError(f"{name}: expected a {dtype} scalar, got {type(x).__name__} {x!r}")
    want = _declared_kind(dtype)
    if _KIND_RANK[kind] > _KIND_RANK[want]:
        raise InputDtypeError(
            f"{name}: expected a {dtype} scalar ({want.__name__}), got {kind.__name__} {x!r}"
        )
    return want(x)


__all__ = ["Bindings", "describe_input", "validate_inputs"]
