"""Indexed reads: index_select, gather, take_along_axis, embedding (one row, ``gather_dim``).

Every indexed read is one shape op whose index map loads its index: output index ``o``
reads ``arg[i_0, ..., i_{r-1}]`` with ``i_dim = index[o]`` (for take_along_axis a
negative value counts from the end of ``arg``'s dim ``dim``, as in torch; the others
take ``0 <= index < n`` only) and ``i_k = o[arg_dims[k]]`` for the other dims. Its
second input, the *index operand*, always has the output's shape (each builder first
broadcasts the user's index to it), so a kernel reads it in the output's coordinates
like any pointwise operand, and the read of ``arg`` is an indirect load at the address
the index map gives (``IndexAlgebra.indirect``): no copy, no kernel of its own.

``index_select(arg, index, dim)``: torch.index_select (``index`` 1-D; output dim ``dim``
has its extent). ``gather(arg, index, dim)``: torch.gather (output of ``index``'s shape,
its extents at most ``arg``'s off ``dim``). ``take_along_axis(arg, index, dim)``:
torch.take_along_dim (``arg`` and ``index`` broadcast against each other off ``dim``).
``embedding(input, weight)``: torch.nn.functional.embedding's forward (rows of
``weight`` at ``input``'s values; output ``input.shape + [weight.shape[1]]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from ...dtypes import DataType, is_floating, is_integral
from ...errors import DefinitionError
from ..domain import IterDomain
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView
from .common import check_tensor, clone_id, emit, normalize_dim
from .elementwise import cast
from .shape import _size_scalar, broadcast_in_dim, made_ones_as_broadcasts

if TYPE_CHECKING:
    from ..fusion import Expr
    from ..opdef import IndexAlgebra


def _gather_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any]:
    dim, arg_dims = expr.attrs["dim"], expr.attrs["arg_dims"]
    return [
        ix.indirect(expr, out_idx) if k == dim else out_idx[arg_dims[k]]
        for k in range(len(arg_dims))
    ]


def _gather_ref(
    arg: torch.Tensor,
    index: torch.Tensor,
    *,
    dim: int,
    arg_dims: Sequence[int],
    source: str,
    mode: str,
    negative: bool,
) -> torch.Tensor:
    """``arg`` read at the index map's positions, by torch advanced indexing."""
    out_shape = index.shape
    n = arg.shape[dim]
    wrapped = (torch.where(index < 0, index + n, index) if negative else index).long()
    if bool(((wrapped < 0) | (wrapped >= n)).any()):
        bad = index[(wrapped < 0) | (wrapped >= n)][0].item()
        raise IndexError(f"{source}: index {bad} is out of range for dim {dim} of extent {n}")
    pos: list[torch.Tensor] = []
    for k, j in enumerate(arg_dims):
        if k == dim:
            pos.append(wrapped)
            continue
        view = [1] * len(out_shape)
        view[j] = out_shape[j]
        extent = out_shape[j] if arg.shape[k] != 1 else 1
        pos.append(torch.arange(extent, device=arg.device).reshape(view if extent > 1 else [1]))
    return arg[tuple(pos)]


GATHER_DIM = register(
    OpDef(
        "gather_dim",
        OpKind.SHAPE,
        reference=_gather_ref,
        index_map=_gather_map,
        doc="arg read at index's values along dim (index_select, gather, take_along_axis, "
        "embedding)",
    )
)


def _check_index(index: TensorView, op: str, param: str = "index") -> TensorView:
    """``index`` as integers: an integer tensor as it is, a floating one cast to Int (its
    values truncated, as nvFuser's generated code converts them where it indexes: Thunder's
    cross-entropy takes along the class axis with ``where(target != ignore, target, 0.0)``,
    which nvFuser's promotion makes Float); any other dtype is an error."""
    if is_integral(index.dtype):
        return index
    if is_floating(index.dtype):
        return cast(index, DataType.Int)
    raise DefinitionError(f"{op}: {param} must be an integer tensor, got {index.dtype!r}")


def _extent(x: TensorView, dim: int) -> int | Scalar:
    d = x.shape_domain[dim]
    return d.extent if d.extent is not None else _size_scalar(x, dim)


def _gather_dim(
    arg: TensorView,
    index: TensorView,
    dim: int,
    arg_dims: Sequence[int],
    source: str,
    mode: str,
    negative: bool = False,
    arg_kept: bool = False,
    along: bool = False,
) -> TensorView:
    """The row's expr: ``index`` already has the output's shape. An output dim where the
    index is expanded and ``arg`` is not is a plain dim of the index's extent (gather's
    index may be shorter than ``arg`` there); where the index is a broadcast of extent 1
    the output's is one too (it broadcasts against any extent, as torch's size-1 dims).
    ``arg_kept``: the index is a 1-D one broadcast to ``arg``'s shape (index_select), so
    the output's other dims are ``arg``'s, as nvFuser's index_select makes them (a dim
    of extent 1 that is no broadcast in ``arg`` stays none: generated program 32533).
    ``along`` (take_along_axis, whose index is broadcast to ``arg``'s extents off ``dim``):
    where ``arg``'s dim is no broadcast the output's is ``arg``'s, as nvFuser's
    takeAlongAxis takes the input's axis there; that includes an iteration dim of static
    extent 1 (an op made it: topk's constant k = 1, a slice of one element), to which the
    index's broadcast grows without being expanded. It stays an axis of ``arg``'s, so the
    output layout maps the reference's dim through it and walks on (generated program
    536175: the walk stopped at a broadcast there, and the output came back row-major)."""
    ids = [clone_id(d) for d in index.shape_domain]
    for k, j in enumerate(arg_dims):
        a = arg.shape_domain[k]
        if k != dim and arg_kept:
            ids[j] = clone_id(a)
        elif k != dim and ids[j].is_broadcast and not a.is_broadcast:
            if ids[j].expanded:
                ids[j] = IterDomain(ids[j].extent)
            elif along:
                ids[j] = clone_id(a)
    out = TensorView(arg.fusion, ids, arg.dtype)
    emit(
        arg.fusion,
        GATHER_DIM,
        [arg, index],
        [out],
        dim=dim,
        arg_dims=tuple(arg_dims),
        source=source,
        mode=mode,
        negative=negative,
    )
    return out


def index_select(arg: TensorView, index: TensorView, dim: int) -> TensorView:
    arg = check_tensor(arg, "index_select")
    index = check_tensor(index, "index_select", "index")
    index = _check_index(index, "index_select")
    if index.ndim != 1:
        raise DefinitionError(f"index_select: index must be 1-D, got rank {index.ndim}")
    d = normalize_dim(dim, arg.ndim, "index_select")
    shape = [_extent(arg, k) if k != d else _extent(index, 0) for k in range(arg.ndim)]
    idx = broadcast_in_dim(index, shape, [d])
    return _gather_dim(arg, idx, d, range(arg.ndim), "index_select", "eq", arg_kept=True)


def gather(arg: TensorView, index: TensorView, dim: int) -> TensorView:
    arg = check_tensor(arg, "gather")
    index = check_tensor(index, "gather", "index")
    index = _check_index(index, "gather")
    if index.ndim != arg.ndim:
        raise DefinitionError(
            f"gather: arg and index must have the same rank, got {arg.ndim} and {index.ndim}"
        )
    d = normalize_dim(dim, arg.ndim, "gather")
    return _gather_dim(arg, index, d, range(arg.ndim), "gather", "le")


def take_along_axis(arg: TensorView, index: TensorView, dim: int) -> TensorView:
    arg = check_tensor(arg, "take_along_axis")
    index = check_tensor(index, "take_along_axis", "index")
    index = _check_index(index, "take_along_axis")
    if index.ndim != arg.ndim:
        raise DefinitionError(
            f"take_along_axis: arg and index must have the same rank, got {arg.ndim} "
            f"and {index.ndim}"
        )
    d = normalize_dim(dim, arg.ndim, "take_along_axis")
    # off ``dim``, an index dim an op made with extent 1 (topk's k = 1) broadcasts as a
    # declared size-1 dim does (torch.take_along_dim broadcasts the index)
    index = made_ones_as_broadcasts(index, [k for k in range(arg.ndim) if k != d])
    # off ``dim``, a broadcast index dim takes arg's extent, also an expanded one's (a
    # broadcast arg dim of extent 1 reads index 0)
    grow = [
        k != d
        and index.shape_domain[k].is_broadcast
        and not index.shape_domain[k].expanded
        and (not arg.shape_domain[k].is_broadcast or arg.shape_domain[k].expanded)
        for k in range(arg.ndim)
    ]
    if any(grow):
        shape = [_extent(arg, k) if grow[k] else -1 for k in range(arg.ndim)]
        index = broadcast_in_dim(index, shape, list(range(arg.ndim)))
    return _gather_dim(
        arg, index, d, range(arg.ndim), "take_along_axis", "eq", negative=True, along=True
    )


def embedding(input: TensorView, weight: TensorView, max_norm: object | None = None) -> TensorView:
    """``weight``'s rows at ``input``'s values. ``max_norm`` renormalizes ``weight`` in
    place in torch; layoutfuse refuses it (the other options only shape the backward)."""
    input = check_tensor(input, "embedding_fwd", "input")
    weight = check_tensor(weight, "embedding_fwd", "weight")
    input = _check_index(input, "embedding_fwd", "input")
    if weight.ndim != 2:
        raise DefinitionError(f"embedding_fwd: weight must be 2-D, got rank {weight.ndim}")
    if max_norm is not None:
        raise DefinitionError(
            "embedding_fwd: max_norm renormalizes weight in place; layoutfuse does not support it"
        )
    n = input.ndim
    shape = [_extent(input, k) for k in range(n)] + [_extent(weight, 1)]
    idx = broadcast_in_dim(input, shape, list(range(n)))
    return _gather_dim(weight, idx, 0, (0, n), "embedding_fwd", "eq")


def output_dims(expr: Expr) -> list[IterDomain | None]:
    """Per dim of ``arg``: the output axis it is read along (None at ``dim``)."""
    out = expr.outputs[0]
    assert isinstance(out, TensorView)
    dim, arg_dims = expr.attrs["dim"], expr.attrs["arg_dims"]
    return [None if k == dim else out.shape_domain[j] for k, j in enumerate(arg_dims)]


__all__ = ["embedding", "gather", "index_select", "output_dims", "take_along_axis"]
