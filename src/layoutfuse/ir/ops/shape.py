"""Shape ops: permute, reshape, broadcast_in_dim, broadcast, expand, squeeze, set, stride_order.

Each row gives the torch reference and an ``index_map``: given the output's
index expressions (one per output dim, over ``shape_domain``) and an index
algebra ``ix`` supplied by the code generator, it returns the input's index
expressions. Reading through any chain of shape ops is then pure index
arithmetic; no data moves until a kernel stores an output.

``ix`` provides ``zero``, ``add(a, b)``, ``mul(a, b)``, ``floordiv(a, b)``,
``mod(a, b)`` and ``extent(tv, dim)`` (the extent of ``tv.shape_domain[dim]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ...dtypes import DataType
from ...errors import ArgumentTypeError, DefinitionError, describe
from ..domain import AllocationDomain, IterDomain, IterType
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView
from .common import (
    Shape,
    as_shape,
    check_tensor,
    clone_id,
    emit,
    int_sequence,
    normalize_dims,
    static_value,
)

if TYPE_CHECKING:
    import torch

    from ..fusion import Expr, Fusion
    from ..opdef import IndexAlgebra


# --- set -----------------------------------------------------------------------------------
def _identity_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any]:
    return list(out_idx)


SET = register(OpDef("set", OpKind.SHAPE, reference=lambda x: x, index_map=_identity_map))


VIEW_OPS = frozenset({"set", "permute", "reshape", "broadcast_in_dim", "squeeze"})
"""The ops an output may be a torch view of an input through (``passes.output_layout``)."""


def set_(x: TensorView) -> TensorView:
    x = check_tensor(x, "set")
    out = TensorView(x.fusion, [clone_id(d) for d in x.shape_domain], x.dtype)
    emit(x.fusion, SET, [x], [out])
    return out


# --- stride_order ----------------------------------------------------------------------------
def stride_order_to_allocation(
    ids: Sequence[IterDomain], stride_order: Sequence[int], op: str
) -> list[IterDomain]:
    """nvFuser's rule: ``alloc[rank-1-stride_order[i]] = logical[i]`` (0 = innermost)."""
    r = len(ids)
    so = [s % r if -r <= s < r else s for s in stride_order]
    if len(so) != r or sorted(so) != list(range(r)):
        raise DefinitionError(
            f"{op}: stride_order {list(stride_order)} is not a permutation of range({r})"
        )
    alloc: list[IterDomain | None] = [None] * r
    for i, s in enumerate(so):
        alloc[r - 1 - s] = ids[i]
    return cast(list[IterDomain], alloc)  # no None: ``so`` is a permutation of range(r)


def stride_order(x: TensorView, order: Sequence[int]) -> TensorView:
    """A copy of ``x`` that is dense in the memory order given by nvFuser's ``stride_order``."""
    order = int_sequence(order, "stride_order", "stride_order")
    out = set_(x)
    alloc = stride_order_to_allocation(out.shape_domain, order, "stride_order")
    out.allocation = AllocationDomain(
        tuple(alloc), tuple(None if d.is_broadcast else True for d in alloc)
    )
    return out


# --- permute -----------------------------------------------------------------------------------
def _permute_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any]:
    dims = expr.attrs["dims"]
    in_idx: list[Any] = [None] * len(dims)
    for i, d in enumerate(dims):
        in_idx[d] = out_idx[i]
    return in_idx


PERMUTE = register(
    OpDef(
        "permute", OpKind.SHAPE, reference=lambda x, dims: x.permute(dims), index_map=_permute_map
    )
)


def permute(x: TensorView, dims: Sequence[int]) -> TensorView:
    x = check_tensor(x, "permute")
    dims = int_sequence(dims, "permute", "dims")
    n = x.ndim
    norm = [d % n if n and -n <= d < n else None for d in dims]
    # ``sorted`` runs (and the cast holds) only when ``norm`` has no None
    if len(dims) != n or None in norm or sorted(cast(list[int], norm)) != list(range(n)):
        raise DefinitionError(
            f"permute: dims {list(dims)} is not a permutation of range({n}) "
            f"(the input has rank {n})"
        )
    perm = cast(list[int], norm)
    src = x.shape_domain
    out = TensorView(x.fusion, [clone_id(src[d]) for d in perm], x.dtype)
    emit(x.fusion, PERMUTE, [x], [out], dims=tuple(perm))
    return out


# --- broadcast_in_dim / broadcast / expand ----------------------------------------------------------
def _bid_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any]:
    x = expr.inputs[0]
    assert isinstance(x, TensorView)
    bdims = expr.attrs["broadcast_dims"]
    return [ix.zero if x.shape_domain[i].is_broadcast else out_idx[d] for i, d in enumerate(bdims)]


def _bid_ref(x: torch.Tensor, *shape: int, broadcast_dims: Sequence[int]) -> torch.Tensor:
    view = [1] * len(shape)
    for i, d in enumerate(broadcast_dims):
        view[d] = x.shape[i]
    return x.reshape(view).expand(*shape)


BROADCAST_IN_DIM = register(
    OpDef("broadcast_in_dim", OpKind.SHAPE, reference=_bid_ref, index_map=_bid_map)
)


def _out_extent(s: Scalar) -> int | None:
    v = static_value(s)
    return v


def broadcast_in_dim(x: TensorView, shape: Shape, broadcast_dims: Sequence[int]) -> TensorView:
    """Input dim i becomes output dim ``broadcast_dims[i]``; the other output dims are new
    broadcasts, expanded where their extent is not 1. A -1 extent keeps the input's extent
    (1 for a new dim), as nvFuser's broadcast_in_dim (broadcast, then expand) does."""
    x = check_tensor(x, "broadcast_in_dim")
    f = x.fusion
    shape_s = as_shape(
        f, shape, "broadcast_in_dim", minus_one="keep the input's extent, 1 for a new dim"
    )
    r = len(shape_s)
    bdims = int_sequence(broadcast_dims, "broadcast_in_dim", "broadcast_dims")
    if len(bdims) != x.ndim:
        raise DefinitionError(
            f"broadcast_in_dim: broadcast_dims has {len(bdims)} entries but the "
            f"input has rank {x.ndim}"
        )
    if any(not 0 <= d < r for d in bdims) or bdims != sorted(set(bdims)):
        raise DefinitionError(
            f"broadcast_in_dim: broadcast_dims {bdims} must be strictly "
            f"increasing and within range({r}) (shape has {r} entries)"
        )
    shape_s = [
        _kept_extent(f, x, bdims, j) if static_value(s) == -1 else s for j, s in enumerate(shape_s)
    ]
    x = made_ones_as_broadcasts(x, [i for i, j in enumerate(bdims) if _out_extent(shape_s[j]) != 1])
    out_ids: list[IterDomain] = []
    for j, s in enumerate(shape_s):
        ext = _out_extent(s)
        if j in bdims:
            src = x.shape_domain[bdims.index(j)]
            if src.is_broadcast:
                out_ids.append(
                    IterDomain.broadcast(ext if ext is not None else None)
                    if ext != 1
                    else IterDomain.broadcast(1)
                )
            else:
                if ext is not None and src.extent is not None and ext != src.extent:
                    raise DefinitionError(
                        f"broadcast_in_dim: input dim {bdims.index(j)} has extent {src.extent}, "
                        f"which cannot become {ext} at output dim {j}"
                    )
                extent = src.extent if src.extent is not None else ext
                out_ids.append(IterDomain(extent, symbolic=src.symbolic))
        else:
            out_ids.append(IterDomain.broadcast(ext))
    out = TensorView(f, out_ids, x.dtype)
    emit(f, BROADCAST_IN_DIM, [x, *shape_s], [out], broadcast_dims=tuple(bdims))
    return out


def _kept_extent(f: Fusion, x: TensorView, bdims: list[int], j: int) -> Scalar:
    """What -1 at output dim ``j`` of broadcast_in_dim stands for: the extent of the input dim
    mapped there (its size at run time where it is symbolic), or 1 for a new dim."""
    if j not in bdims:
        return Scalar(f, DataType.Int, 1)
    i = bdims.index(j)
    ext = x.shape_domain[i].extent
    return Scalar(f, DataType.Int, ext) if ext is not None else _size_scalar(x, i)


def broadcast(x: TensorView, is_broadcast_dim: Sequence[bool]) -> TensorView:
    """Insert size-1 broadcast dims where ``is_broadcast_dim`` is True."""
    x = check_tensor(x, "broadcast")
    if not isinstance(is_broadcast_dim, list | tuple) or any(
        not isinstance(b, bool) for b in is_broadcast_dim
    ):
        raise ArgumentTypeError(
            f"broadcast: is_broadcast_dim must be a list of bools, got {describe(is_broadcast_dim)}"
        )
    flags = list(is_broadcast_dim)
    if len(flags) - sum(bool(b) for b in flags) != x.ndim:
        raise DefinitionError(
            f"broadcast: is_broadcast_dim {flags} has {len(flags) - sum(flags)} "
            f"kept dims but the input has rank {x.ndim}"
        )
    shape: list[int | Scalar] = []
    bdims, k = [], 0
    for j, b in enumerate(flags):
        if b:
            shape.append(1)
        else:
            d = x.shape_domain[k]
            shape.append(d.extent if d.extent is not None else _size_scalar(x, k))
            bdims.append(j)
            k += 1
    return broadcast_in_dim(x, shape, bdims)


def _size_scalar(x: TensorView, dim: int) -> Scalar:
    from .scalars import size

    return size(x, dim)


def expand(x: TensorView, shape: Shape) -> TensorView:
    """Expand broadcast dims to ``shape``; -1 keeps the input extent."""
    x = check_tensor(x, "expand")
    shape_s = as_shape(x.fusion, shape, "expand", minus_one="keep the input's extent")
    if len(shape_s) != x.ndim:
        raise DefinitionError(f"expand: shape has {len(shape_s)} entries, input rank is {x.ndim}")
    full: list[int | Scalar] = []
    for i, s in enumerate(shape_s):
        v = static_value(s)
        d = x.shape_domain[i]
        if v == -1:
            full.append(d.extent if d.extent is not None else _size_scalar(x, i))
        else:
            if (
                not d.is_broadcast
                and v is not None
                and d.extent not in (None, 1)  # a made dim of 1 expands (broadcast_in_dim)
                and v != d.extent
            ):
                raise DefinitionError(
                    f"expand: dim {i} has extent {d.extent} and is not a "
                    f"broadcast; it cannot expand to {v}"
                )
            full.append(s)
    return broadcast_in_dim(x, full, list(range(x.ndim)))


def made_ones_as_broadcasts(x: TensorView, dims: Sequence[int]) -> TensorView:
    """``x`` with those of ``dims`` that are iteration dims of static extent 1 made broadcast
    dims (squeezed and broadcast again). Such a dim is one an op made (topk's constant k
    of 1, a slice of one element of a static extent; a declared size-1 dim is a broadcast
    already): torch broadcasts it as any size-1 dim, and nvFuser once it concretizes the
    symbolic dim. Where a wider dim meets it: a pointwise op, broadcast_in_dim, expand."""
    ones = [i for i in dims if x.shape_domain[i].is_iteration and x.shape_domain[i].extent == 1]
    if not ones:
        return x
    return broadcast(squeeze(x, ones), [i in ones for i in range(x.ndim)])


# --- squeeze --------------------------------------------------------------------------------------
def _squeeze_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any]:
    dims = expr.attrs["dims"]
    it = iter(out_idx)
    n = len(out_idx) + len(dims)
    return [ix.zero if i in dims else next(it) for i in range(n)]


def _squeeze_ref(x: torch.Tensor, dims: Sequence[int], reduced: bool = False) -> torch.Tensor:
    index = tuple(0 if i in dims else slice(None) for i in range(x.dim()))
    return x[index]


SQUEEZE = register(OpDef("squeeze", OpKind.SHAPE, reference=_squeeze_ref, index_map=_squeeze_map))


def squeeze(
    x: TensorView, dims: Sequence[int], squeeze_expanded: bool = False, reduced: bool = False
) -> TensorView:
    """``x`` without ``dims`` (each of extent 1). ``reduced``: a reduction over them made
    it (a reduction of one element is that element), so the output layout's inference
    counts them consumed, as a reduction's (``passes/output_layout.py``)."""
    x = check_tensor(x, "squeeze")
    nd = normalize_dims(int_sequence(dims, "squeeze", "dims"), x.ndim, "squeeze")
    for d in nd:
        dom = x.shape_domain[d]
        if dom.is_broadcast and dom.expanded and not squeeze_expanded:
            raise DefinitionError(
                f"squeeze: dim {d} is an expanded broadcast; pass "
                f"squeeze_expanded=True to squeeze it"
            )
        if not dom.is_broadcast and dom.extent != 1 and not dom.symbolic:
            raise DefinitionError(
                f"squeeze: dim {d} has extent "
                f"{'symbolic' if dom.extent is None else dom.extent}, expected 1 (a dim an op "
                f"makes at run time may be squeezed, checked when the fusion runs; a declared "
                f"input's may not)"
            )
    out_ids = [clone_id(d) for i, d in enumerate(x.shape_domain) if i not in nd]
    out = TensorView(x.fusion, out_ids, x.dtype)
    emit(x.fusion, SQUEEZE, [x], [out], dims=nd, **({"reduced": True} if reduced else {}))
    return out


# --- reshape ----------------------------------------------------------------------------------------
def _reshape_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any]:
    """Linearize the output index in row-major order and split it over the input's extents.

    Groups of dims whose extent products agree (found when both shapes are static)
    are handled one group at a time, so a reshape that only splits or merges dims
    costs one multiply-add or one div/mod per dim.
    """
    x, out = expr.inputs[0], expr.outputs[0]
    assert isinstance(x, TensorView) and isinstance(out, TensorView)
    groups = expr.attrs.get("groups")
    if groups is None:
        groups = [(tuple(range(x.ndim)), tuple(range(out.ndim)))]
    in_idx: list[Any] = [None] * x.ndim
    for in_dims, out_dims in groups:
        lin = ix.zero
        for j in out_dims:
            lin = ix.add(ix.mul(lin, ix.extent(out, j)), out_idx[j])
        for pos, i in enumerate(in_dims):
            inner = ix.one
            for k in in_dims[pos + 1 :]:
                inner = ix.mul(inner, ix.extent(x, k))
            q = ix.floordiv(lin, inner)
            in_idx[i] = q if pos == 0 else ix.mod(q, ix.extent(x, i))
    for i in range(x.ndim):
        if in_idx[i] is None:
            in_idx[i] = ix.zero
    return in_idx


RESHAPE = register(
    OpDef(
        "reshape",
        OpKind.SHAPE,
        reference=lambda x, *shape: x.reshape(shape),
        index_map=_reshape_map,
    )
)


def reshape_groups(
    in_shape: Sequence[int | None], out_shape: Sequence[int | None]
) -> list[tuple[tuple[int, ...], tuple[int, ...]]] | None:
    """Pairs (input dims, output dims) with equal extent products, for static shapes.

    Size-1 dims on either side form no group (their index is 0). Returns None
    when the shapes are not both static.
    """
    if any(e is None for e in in_shape) or any(e is None for e in out_shape):
        return None
    ins = [i for i, e in enumerate(in_shape) if e != 1]
    outs = [j for j, e in enumerate(out_shape) if e != 1]
    groups, gi, go, pi, po = [], [], [], 1, 1
    i = j = 0
    while i < len(ins) or j < len(outs):
        if pi <= po and i < len(ins):
            gi.append(ins[i])
            pi *= cast(int, in_shape[ins[i]])  # static: checked above
            i += 1
        elif j < len(outs):
            go.append(outs[j])
            po *= cast(int, out_shape[outs[j]])
            j += 1
        else:
            return None
        if pi == po and gi and go:
            groups.append((tuple(gi), tuple(go)))
            gi, go, pi, po = [], [], 1, 1
    if gi or go:
        return None
    return groups


def reshape(x: TensorView, new_shape: Shape) -> TensorView:
    x = check_tensor(x, "reshape")
    f = x.fusion
    shape_s = as_shape(f, new_shape, "reshape", "new_shape", minus_one="inferred, at most one")
    vals = [static_value(s) for s in shape_s]
    if sum(1 for v in vals if v == -1) > 1:
        raise DefinitionError(f"reshape: at most one -1 is allowed in new_shape {vals}")
    in_static = [d.extent for d in x.shape_domain]
    numel = None if None in in_static else _prod(in_static)
    if -1 in vals:
        known = [v for v in vals if v != -1]
        if None in known or numel is None:
            raise DefinitionError(
                f"reshape: the -1 in new_shape {vals} needs the input's and the "
                f"other extents to be static"
            )
        rest = _prod(known)
        if rest == 0 or numel % rest:
            raise DefinitionError(
                f"reshape: cannot infer -1 in new_shape {vals} for {numel} elements"
            )
        k = vals.index(-1)
        vals[k] = numel // rest
        shape_s[k] = Scalar(f, shape_s[k].dtype, vals[k])
    if numel is not None and None not in vals and _prod(vals) != numel:
        raise DefinitionError(
            f"reshape: cannot reshape {in_static} ({numel} elements) into "
            f"{vals} ({_prod(vals)} elements)"
        )
    out_ids = [IterDomain.broadcast(1) if v == 1 else IterDomain.made(v) for v in vals]
    out = TensorView(f, out_ids, x.dtype)
    groups = reshape_groups(in_static, vals)
    emit(f, RESHAPE, [x, *shape_s], [out], **({"groups": groups} if groups else {}))
    return out


def _prod(xs: Sequence[int | None]) -> int:
    """The product of extents that the caller has checked are all static."""
    p = 1
    for v in xs:
        assert v is not None
        p *= v
    return p


__all__ = [
    "broadcast",
    "broadcast_in_dim",
    "expand",
    "permute",
    "reshape",
    "set_",
    "squeeze",
    "stride_order",
    "IterType",
]
