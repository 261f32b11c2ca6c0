"""Indexed writes: scatter and index_put_accumulate (one row, ``scatter_dim``).

``scatter_dim(arg, index, src)`` is ``arg`` with ``src``'s values written at the
positions an indexed read would read (``indexing._gather_map``, the same index map):
for every position ``p`` of ``index``, ``out[p with dim := index[p]] = src[p]``, or
``+=`` with ``accumulate`` (atomic adds in the kernel). The segmenter gives it two
kernels: a copy of ``arg`` into the output, then one over ``index``'s coordinates that
stores ``src`` (computed there, with its pointwise producers) at the indirect address.

``scatter(arg, index, src, dim)``: torch.scatter (``src`` a tensor at least ``index``'s
extents, or a Scalar; duplicate indices leave one of their values, which one is not
defined, as in torch). ``index_put_accumulate(acc, index, value)``:
``acc.index_put([index], value, accumulate=True)`` with a 1-D ``index`` into ``acc``'s
dim 0 and ``value`` of ``acc``'s rank, extent ``len(index)`` at dim 0 (negative indices
count from the end, as torch's index_put).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ...errors import DefinitionError
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView
from .common import check_tensor, clone_id, emit, normalize_dim
from .creation import full
from .indexing import _check_index, _extent, _gather_map
from .shape import broadcast_in_dim


def _scatter_ref(
    arg: torch.Tensor,
    index: torch.Tensor,
    src: torch.Tensor,
    *,
    dim: int,
    arg_dims: Sequence[int],
    source: str,
    mode: str,
    negative: bool,
    accumulate: bool,
) -> torch.Tensor:
    n = arg.shape[dim]
    idx = (torch.where(index < 0, index + n, index) if negative else index).long()
    if bool(((idx < 0) | (idx >= n)).any()):
        bad = index[(idx < 0) | (idx >= n)][0].item()
        raise IndexError(f"{source}: index {bad} is out of range for dim {dim} of extent {n}")
    part = src[tuple(slice(0, k) for k in index.shape)].to(arg.dtype)
    out = arg.clone()
    return out.scatter_add_(dim, idx, part) if accumulate else out.scatter_(dim, idx, part)


SCATTER_DIM = register(
    OpDef(
        "scatter_dim",
        OpKind.WRITE,
        reference=_scatter_ref,
        index_map=_gather_map,
        doc="arg with src written (or added) at index's values along dim",
    )
)


def _scatter_dim(
    arg: TensorView,
    index: TensorView,
    src: TensorView,
    dim: int,
    source: str,
    negative: bool,
    accumulate: bool,
) -> TensorView:
    out = TensorView(arg.fusion, [clone_id(d) for d in arg.shape_domain], arg.dtype)
    emit(
        arg.fusion,
        SCATTER_DIM,
        [arg, index, src],
        [out],
        dim=dim,
        arg_dims=tuple(range(arg.ndim)),
        source=source,
        mode="le",
        negative=negative,
        accumulate=accumulate,
    )
    return out


def scatter(arg: TensorView, index: TensorView, src: TensorView | Scalar, dim: int) -> TensorView:
    arg = check_tensor(arg, "scatter")
    index = check_tensor(index, "scatter", "index")
    index = _check_index(index, "scatter")
    if index.ndim != arg.ndim:
        raise DefinitionError(
            f"scatter: arg and index must have the same rank, got {arg.ndim} and {index.ndim}"
        )
    d = normalize_dim(dim, arg.ndim, "scatter")
    if isinstance(src, Scalar):
        src = full([_extent(index, k) for k in range(index.ndim)], src, arg.dtype)
    src = check_tensor(src, "scatter", "src")
    if src.ndim != arg.ndim:
        raise DefinitionError(
            f"scatter: arg and src must have the same rank, got {arg.ndim} and {src.ndim}"
        )
    return _scatter_dim(arg, index, src, d, "scatter", negative=False, accumulate=False)


def index_put_accumulate(acc: TensorView, index: TensorView, value: TensorView) -> TensorView:
    op = "index_put_accumulate"
    acc = check_tensor(acc, op, "acc")
    index = check_tensor(index, op, "index")
    value = check_tensor(value, op, "value")
    index = _check_index(index, op)
    if index.ndim != 1:
        raise DefinitionError(f"{op}: index must be 1-D, got rank {index.ndim}")
    if value.ndim != acc.ndim:
        raise DefinitionError(
            f"{op}: value must have acc's rank {acc.ndim} (index's rows of acc), got {value.ndim}"
        )
    shape = [_extent(index, 0)] + [_extent(acc, k) for k in range(1, acc.ndim)]
    # value broadcast to [len(index), *acc.shape[1:]]; the index along its dim 0
    value = broadcast_in_dim(value, shape, list(range(acc.ndim)))
    idx = broadcast_in_dim(index, shape, [0])
    return _scatter_dim(acc, idx, value, 0, op, negative=True, accumulate=True)


__all__ = ["index_put_accumulate", "scatter"]
