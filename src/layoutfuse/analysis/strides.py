"""Moving a tensor's strides across shape ops, in either direction (pure functions).

Every tensor a kernel touches is addressed through strides over the kernel's
iteration coordinates. A tensor that reaches those coordinates through shape
ops (permute, broadcast, squeeze, expand, set, and reshapes that are views of
the actual strides) keeps an affine address; this module computes its strides
there. ``None`` means "not affine": a reshape that no stride pattern can express.
"""

from __future__ import annotations

from collections.abc import Sequence

Strides = tuple[int, ...]


def view_strides(
    old_shape: Sequence[int], old_strides: Sequence[int], new_shape: Sequence[int]
) -> Strides | None:
    """Strides that make ``new_shape`` a view of (old_shape, old_strides), or None.

    PyTorch's rule (``computeStride``): dims are split and merged in chunks; a chunk of
    old dims can merge only where each is dense with the next one.
    """
    numel = 1
    for s in old_shape:
        numel *= s
    if numel == 0 or len(old_shape) == 0:
        return _dense(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1] if old_strides else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1
            and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def _dense(shape: Sequence[int]) -> Strides:
    st, cur = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        st[i] = cur
        cur *= max(shape[i], 1)
    return tuple(st)


def forward(
    op: str, attrs: dict, in_shape: Sequence[int], in_strides: Strides, out_shape: Sequence[int]
) -> Strides | None:
    """Strides over the op's output coordinates of a tensor addressed by ``in_strides``
    over its input coordinates."""
    if op in ("set", "stride_order") or op == "cast":
        return tuple(in_strides)
    if op == "permute":
        return tuple(in_strides[d] for d in attrs["dims"])
    if op == "broadcast_in_dim":
        out = [0] * len(out_shape)
        for i, d in enumerate(attrs["broadcast_dims"]):
            out[d] = 0 if (in_shape[i] == 1 and out_shape[d] != 1) else in_strides[i]
        return tuple(out)
    if op == "squeeze":
        return tuple(s for i, s in enumerate(in_strides) if i not in attrs["dims"])
    if op == "reshape":
        return view_strides(in_shape, in_strides, out_shape)
    if op == "slice":  # a strided view; its start is the access's base offset
        return tuple(s * k for s, k in zip(in_strides, attrs["steps"]))
    if op == "select":  # the selected index is in the base offset
        return tuple(s for i, s in enumerate(in_strides) if i != attrs["dim"])
    if op == "pad":  # masked: the access walks its chain (index_walk)
        return None
    raise ValueError(f"no stride rule for {op}")


def backward(
    op: str, attrs: dict, in_shape: Sequence[int], out_strides: Strides, out_shape: Sequence[int]
) -> Strides | None:
    """Strides over the op's input coordinates of a tensor addressed by ``out_strides``
    over its output coordinates (used to store a value computed in input coordinates
    into a tensor laid out in output coordinates). Expanding dims cannot go backward."""
    if op in ("set", "stride_order") or op == "cast":
        return tuple(out_strides)
    if op == "permute":
        res = [0] * len(out_strides)
        for i, d in enumerate(attrs["dims"]):
            res[d] = out_strides[i]
        return tuple(res)
    if op == "broadcast_in_dim":
        bd = attrs["broadcast_dims"]
        for j, n in enumerate(out_shape):
            if j not in bd and n != 1:
                return None
        return tuple(
            out_strides[d] if not (in_shape[i] == 1 and out_shape[d] != 1) else 0
            for i, d in enumerate(bd)
        )
    if op == "squeeze":
        it = iter(out_strides)
        return tuple(0 if i in attrs["dims"] else next(it) for i in range(len(in_shape)))
    if op == "reshape":
        return view_strides(out_shape, out_strides, in_shape)
    if op in ("slice", "select", "pad"):  # a store through them writes part of a tensor
        return None
    raise ValueError(f"no stride rule for {op}")
