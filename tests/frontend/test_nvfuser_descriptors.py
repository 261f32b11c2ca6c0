"""compute_tensor_descriptor / compute_contiguity, and how define_tensor turns shape,
contiguity and stride_order into a TensorView's logical and allocation domains."""

import pytest
import torch

from layoutfuse.frontend.nvfuser.descriptors import dense_strides
from layoutfuse.nvfuser import (
    DataType,
    FusionDefinition,
    compute_contiguity,
    compute_tensor_descriptor,
)

# nvFuser's reference cases (test_compute_tensor_descriptor), then channels-last NCHW.
DESCRIPTOR_CASES = [
    (
        [2, 1, 3, 1, 4, 3],
        [12, 4, 4, 4, 1, 0],
        [True, None, True, None, True, None],
        [5, 4, 3, 2, 1, 0],
    ),
    ([2, 3, 1, 5, 4], [28, 4, 14, 0, 1], [False, None, True, None, True], [4, 2, 3, 1, 0]),
    (
        [2, 2, 1, 1, 2, 2, 2],
        [8, 4, 3, 9, 2, 0, 1],
        [None, True, True, None, True, None, True],
        [5, 4, 3, 6, 2, 1, 0],
    ),
    (
        [2, 2, 1, 2, 4, 2],
        [2, 32, 1, 8, 0, 4],
        [False, True, True, False, None, None],
        [2, 5, 0, 4, 1, 3],
    ),
    ([2, 2, 2, 2], [8, 4, 2, 1], [True, True, True, True], [3, 2, 1, 0]),
    ([2, 1, 3, 1, 4], [24, 4, 8, 4, 2], [True, True, None, None, False], [4, 2, 3, 1, 0]),
    ([2, 2, 2, 2], [8, 4, 0, 2], [True, True, None, False], [3, 2, 1, 0]),
    ([2, 3, 4, 5], [60, 1, 15, 3], [True, True, True, True], [3, 0, 2, 1]),
]


@pytest.mark.parametrize("sizes, strides, contiguity, stride_order", DESCRIPTOR_CASES)
def test_compute_tensor_descriptor(sizes, strides, contiguity, stride_order):
    assert compute_tensor_descriptor(sizes, strides) == (contiguity, stride_order)


@pytest.mark.parametrize(
    "sizes, strides, expected",
    [
        ([2, 3], [3, 1], [True, True]),
        ([2, 3], [6, 2], [True, False]),
        ([2, 3], [7, 2], [False, False]),
        ([2, 1, 3], [3, 3, 1], [True, None, True]),
        ([4, 5], [0, 1], [None, True]),
        ([], [], []),
    ],
)
def test_compute_contiguity(sizes, strides, expected):
    assert compute_contiguity(sizes, strides) == expected


def test_compute_tensor_descriptor_rejects_negative_strides():
    with pytest.raises(ValueError, match="negative stride"):
        compute_tensor_descriptor([2, 3], [-3, 1])


def _define(**kwargs):
    with FusionDefinition() as fd:
        t = fd.define_tensor(**kwargs)
        fd.add_output(t)
    return fd, t._val


def _alloc_strides(tv, sizes):
    """Dense strides of ``sizes`` in the TensorView's allocation order."""
    strides, cur = [0] * len(sizes), 1
    for d in reversed(tv.allocation_order):
        dom = tv.shape_domain[d]
        strides[d] = 0 if dom.expanded else cur
        cur *= 1 if dom.expanded else sizes[d]
    return tuple(strides)


def test_channels_last_from_pytorch_gives_nhwc_allocation():
    x = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
    assert x.stride() == (60, 1, 15, 3)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(t)
    tv = t._val
    assert tv.allocation_order == (0, 2, 3, 1)  # N, H, W, C
    assert tv.contiguity == (True, True, True, True)
    assert _alloc_strides(tv, x.shape) == x.stride()
    assert "contiguity=[True, True, True, True]" in repr(fd)
    assert "stride_order=[3, 0, 2, 1]" in repr(fd)


def test_stride_order_with_broadcast_gives_nvfuser_dense_strides():
    # test_broadcast_and_stride_order: shape (2,1,3,4), stride_order [0,1,2,3]
    _, tv = _define(shape=[-1, 1, -1, -1], contiguity=True, stride_order=[0, 1, 2, 3])
    assert tv.allocation_order == (3, 2, 1, 0)
    assert tv.contiguity == (True, True, None, True)
    assert _alloc_strides(tv, (2, 1, 3, 4)) == (1, 2, 2, 6)
    assert dense_strides((2, 1, 3, 4), [0, 1, 2, 3]) == (1, 2, 2, 6)


def test_row_major_input_still_gets_an_allocation_domain():
    _, tv = _define(shape=[-1, -1], contiguity=[True, False])
    assert tv.allocation is not None
    assert tv.allocation_order == (0, 1)
    assert tv.contiguity == (True, False)


def test_contiguity_is_indexed_in_allocation_order():
    # logical (a, b, c) with stride_order [0, 2, 1]: allocation is (b, c, a)
    _, tv = _define(shape=[-1, -1, 1], contiguity=[True, None, False], stride_order=[0, 2, 1])
    ids = tv.logical
    assert [d.uid for d in tv.allocation.order] == [ids[1].uid, ids[2].uid, ids[0].uid]
    assert tv.allocation.contiguity == (True, None, False)


def test_none_contiguity_on_a_non_1_dim_is_an_expanded_broadcast():
    _, tv = _define(shape=[-1, 5], contiguity=[True, None])
    dom = tv.logical[1]
    assert dom.is_broadcast and dom.expanded and dom.extent == 5
    _, tv = _define(shape=[-1], contiguity=[None])
    assert tv.logical[0].expanded and tv.logical[0].extent is None


def test_shape_kinds():
    _, tv = _define(shape=[-1, 1, 0, 7], contiguity=[True, None, True, True])
    sym, bcast, zero, static = tv.logical
    assert sym.is_iteration and sym.extent is None
    assert bcast.is_broadcast and not bcast.expanded
    assert zero.extent == 0 and static.extent == 7


def test_bool_contiguity_marks_size_1_dims_none():
    fd, tv = _define(shape=[-1, 1, -1], contiguity=True)
    assert "contiguity=[True, None, True]" in repr(fd)
    fd, tv = _define(shape=[-1, -1])
    assert "contiguity=[False, False]" in repr(fd)


def test_sizes_strides_overload():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor([2, 1, 3], [3, 3, 1], DataType.Half)
        t1 = fd.define_tensor(sizes=[2, 1, 3], strides=[3, 3, 1], static_sizes=True)
        fd.add_output(t0)
        fd.add_output(t1)
    lines = repr(fd).splitlines()
    assert lines[2].strip() == (
        "T0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, "
        "True], dtype=DataType.Half, is_cpu=False, stride_order=[2, 1, 0])"
    )
    assert "shape=[2, 1, 3]" in lines[3]
    assert t1._val.static_shape == (2, 1, 3)


def test_from_pytorch_expanded_and_scalar_cpu():
    x = torch.randn(3, 1).expand(3, 4)
    s = torch.tensor(2.0, dtype=torch.float64, device="cpu")  # a CPU scalar on any default
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        c = fd.from_pytorch(s)
        fd.add_output(t)
        fd.add_output(c)
    text = repr(fd)
    assert "shape=[-1, -1], contiguity=[True, None]" in text
    assert (
        "T1 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Double, is_cpu=True)" in text
    )
    assert t._val.logical[1].expanded
