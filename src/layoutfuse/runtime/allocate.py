"""Output buffers: dense allocation in a memory order, and views of inputs.

``dense_strides`` mirrors nvFuser's ``getContiguousStrides``: walking the order
from innermost outward, an expanded broadcast dim gets stride 0 and does not
grow the running stride, a size-0 dim gets stride 1, any other dim gets the
running stride, which then grows by its size. Expanded dims come back as
expanded views of a buffer that has size 1 there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..dtypes import to_torch
from ..ir import Expr, Fusion, TensorView, Val
from ..ir.ops.movement import static_slice_bounds
from .validate import Bindings


def dense_strides(
    shape: Sequence[int], order: Sequence[int], expanded: Sequence[int] = ()
) -> tuple[int, ...]:
    """Strides of a dense tensor of ``shape`` whose dims lie in memory in ``order``.

    ``order`` lists dims outermost first; ``expanded`` dims get stride 0.
    """
    if sorted(order) != list(range(len(shape))):
        raise ValueError(f"order {tuple(order)} is not a permutation of range({len(shape)})")
    strides = [0] * len(shape)
    running = 1
    for d in reversed(order):
        if d in expanded:
            strides[d] = 0
        elif shape[d] == 0:
            strides[d] = 1
        else:
            strides[d] = running
            running *= shape[d]
    return tuple(strides)


def allocate_dense(
    shape: Sequence[int],
    order: Sequence[int],
    dtype: torch.dtype,
    device: torch.device,
    expanded: Sequence[int] = (),
) -> torch.Tensor:
    """An uninitialized tensor, dense in ``order``; ``expanded`` dims are stride-0 views.

    Write into it through :func:`writable`, which drops the expanded dims.
    """
    expanded = tuple(d for d in expanded if shape[d] != 1)
    base_shape = [1 if d in expanded else s for d, s in enumerate(shape)]
    strides = dense_strides(base_shape, order)
    base = torch.empty_strided(base_shape, strides, dtype=dtype, device=device)
    return base.expand(*shape) if expanded else base


def same_storage(a: torch.Tensor, b: object) -> bool:
    """Whether ``b`` is a tensor in ``a``'s memory (a view of it, or it a view of ``b``)."""
    return (
        isinstance(b, torch.Tensor)
        and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    )


def writable(t: torch.Tensor) -> torch.Tensor:
    """``t`` without its stride-0 dims (narrowed to one element): safe to ``copy_`` into."""
    for d in range(t.dim()):
        if t.stride(d) == 0 and t.shape[d] > 1:
            t = t.narrow(d, 0, 1)
    return t


def writable_source(dst: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``value`` narrowed like ``writable(dst)``: first element along dst's stride-0 dims."""
    for d in range(dst.dim()):
        if dst.stride(d) == 0 and dst.shape[d] > 1:
            value = value.narrow(d, 0, 1)
    return value


def expanded_dims(tv: TensorView) -> list[int]:
    """``tv``'s expanded broadcast dims: stride 0 in every buffer layoutfuse allocates for it
    (a kernel writes such a dim once)."""
    return [i for i, d in enumerate(tv.shape_domain) if d.is_broadcast and d.expanded]


def allocate_output(tv: TensorView, order: Sequence[int], bindings: Bindings) -> torch.Tensor:
    """The buffer for output ``tv``: dense in ``order``, its expanded broadcast dims stride 0
    (declared, or made by this run: ``RunExtents.made_expanded``)."""
    made = getattr(bindings.extents, "made_expanded", ())
    expanded = expanded_dims(tv) + [
        i for i, d in enumerate(tv.shape_domain) if d.uid in made and not d.is_broadcast
    ]
    return allocate_dense(bindings.shape(tv), order, to_torch(tv.dtype), bindings.device, expanded)


# --- views of inputs --------------------------------------------------------------------------
def view_chain(fusion: Fusion, tv: TensorView, source: TensorView) -> list[Expr]:
    """The exprs from ``source`` to ``tv``, first to last (each with one tensor operand)."""
    chain: list[Expr] = []
    v: Val = tv
    while v is not source:
        assert v.definition is not None  # ``source`` is an ancestor of ``tv``
        chain.append(v.definition)
        v = v.definition.inputs[0]
    return chain[::-1]


def make_view(
    chain: Sequence[Expr], base: torch.Tensor, bindings: Any, copy_reshapes: bool = False
) -> torch.Tensor | None:
    """``base`` through the view ops of ``chain``, or None where one is not a view.

    Only ops that never copy are used (``permute``, ``view``, ``unsqueeze``,
    ``expand``, integer and slice indexing, ``as_strided``), so the result shares
    ``base``'s memory. A reshape that the actual strides cannot express gives None, or with
    ``copy_reshapes`` a copy (torch's ``reshape``). A slice takes constant bounds only.
    ``bindings``: anything with ``shape(tv)``, the extents of each op's output.
    """
    t = base.as_strided(base.shape, base.stride(), base.storage_offset())
    for expr in chain:
        name, out = expr.op.name, expr.outputs[0]
        if name == "set":
            t = t.as_strided(t.shape, t.stride(), t.storage_offset())
        elif name == "permute":
            t = t.permute(expr.attrs["dims"])
        elif name == "squeeze":
            dims = expr.attrs["dims"]
            t = t[tuple(0 if i in dims else slice(None) for i in range(t.dim()))]
        elif name == "broadcast_in_dim":
            bdims = expr.attrs["broadcast_dims"]
            assert isinstance(out, TensorView)
            for j in range(out.ndim):
                if j not in bdims:
                    t = t.unsqueeze(j)
            t = t.expand(tuple(bindings.shape(out)))  # a tuple: () for a 0-dim output
        elif name == "reshape":
            assert isinstance(out, TensorView)
            try:
                t = t.view(tuple(bindings.shape(out)))
            except RuntimeError:
                if not copy_reshapes:
                    return None
                t = t.reshape(tuple(bindings.shape(out)))
        elif name == "slice" and (bounds := static_slice_bounds(expr)) is not None:
            t = expr.op.reference(t, *bounds, **expr.attrs)
        else:
            return None
    return t


__all__ = [
    "allocate_dense",
    "allocate_output",
    "dense_strides",
    "make_view",
    "view_chain",
    "writable",
    "writable_source",
]
