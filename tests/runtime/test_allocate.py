"""Output allocation: nvFuser's dense strides, expanded dims as stride-0 views, input views."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutfuse.dtypes import DataType
from layoutfuse.errors import InputLayoutError
from layoutfuse.ir import Fusion, FusionGuard, IterDomain, TensorView, ops
from layoutfuse.ir.ops.shape import stride_order_to_allocation
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.runtime.allocate import (
    allocate_dense,
    allocate_output,
    dense_strides,
    make_view,
    view_chain,
    writable,
)
from layoutfuse.runtime.validate import validate_inputs


def order_of(stride_order):
    """nvFuser's stride_order as an allocation order (outermost first)."""
    return tuple(stride_order_to_allocation(list(range(len(stride_order))), stride_order, ""))


DENSE = [  # shape, allocation order, expanded dims, strides
    ((2, 3, 4), (0, 1, 2), (), (12, 4, 1)),
    ((3, 4), (1, 0), (), (1, 3)),
    ((2, 3, 4, 5), (0, 2, 3, 1), (), (60, 1, 15, 3)),  # channels-last
    ((2, 1, 3, 4), order_of([0, 1, 2, 3]), (), (1, 2, 2, 6)),  # nvFuser's test case
    ((2, 5, 3), (0, 1, 2), (1,), (3, 0, 1)),  # expanded: stride 0
    ((2, 0, 3), (0, 1, 2), (), (3, 1, 1)),  # size 0: stride 1
    ((4, 0), (1, 0), (), (1, 1)),
    ((), (), (), ()),
]


@pytest.mark.parametrize("shape,order,expanded,strides", DENSE)
def test_dense_strides(shape, order, expanded, strides):
    assert dense_strides(shape, order, expanded) == strides


def test_dense_strides_rejects_a_non_permutation():
    with pytest.raises(ValueError, match="permutation"):
        dense_strides((2, 3), (0, 0))


@pytest.mark.parametrize("shape,order,expanded,strides", DENSE)
def test_allocate_dense_matches(shape, order, expanded, strides):
    t = allocate_dense(shape, order, torch.float32, torch.device("cpu"), expanded)
    assert tuple(t.shape) == shape and t.stride() == strides


def test_expanded_dims_are_views_of_one_element_and_writable_drops_them():
    t = allocate_dense((2, 5, 3), (0, 1, 2), torch.float32, torch.get_default_device(), (1,))
    assert t.untyped_storage().nbytes() == 2 * 3 * 4
    w = writable(t)
    assert tuple(w.shape) == (2, 1, 3)
    w.copy_(torch.arange(6.0).reshape(2, 1, 3))
    assert torch.equal(t, torch.arange(6.0).reshape(2, 1, 3).expand(2, 5, 3))


def test_allocate_output_uses_the_tensor_view():
    f = Fusion()
    with FusionGuard(f):
        x = TensorView(f, [IterDomain.iteration(None), IterDomain.iteration(None)], DataType.Half)
        f.add_input(x)
        y = ops.expand(ops.broadcast(x, [False, True, False]), [-1, 4, -1])
    bind = validate_inputs(f, [torch.zeros(2, 3, dtype=torch.float16)])
    out = allocate_output(y, (2, 0, 1), bind)
    assert out.dtype == torch.float16 and tuple(out.shape) == (2, 4, 3)
    assert out.stride() == (1, 0, 2)


# --- views ----------------------------------------------------------------------------------------
def _view_fusion(build):
    f = Fusion()
    with FusionGuard(f):
        x = TensorView(f, [IterDomain.iteration(None), IterDomain.iteration(None)], DataType.Float)
        x.set_allocation_domain([x.axis(1), x.axis(0)])  # column-major
        f.add_input(x)
        y = build(x)
    return f, x, y


@pytest.mark.parametrize(
    "build,direct",
    [
        (lambda x: ops.permute(x, [1, 0]), lambda t: t.t()),
        (lambda x: ops.reshape(x, [ops.size(x, 0), 1, ops.size(x, 1)]), lambda t: t.unsqueeze(1)),
        (
            lambda x: ops.expand(ops.broadcast(x, [True, False, False]), [5, -1, -1]),
            lambda t: t.expand(5, 2, 6),
        ),
        (lambda x: ops.squeeze(ops.broadcast(ops.set_(x), [False, True, False]), [1]), lambda t: t),
        (lambda x: ops.reshape(ops.permute(x, [1, 0]), [3, 2, 2]), lambda t: t.t().view(3, 2, 2)),
    ],
    ids=["permute", "reshape-insert-1", "expand", "set-squeeze", "permute-reshape"],
)
def test_make_view_shares_memory(build, direct):
    f, x, y = _view_fusion(build)
    base = torch.arange(12.0).reshape(6, 2).t()  # (2, 6), column-major
    view = make_view(view_chain(f, y, x), base, validate_inputs(f, [base]))
    assert view is not None
    assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert torch.equal(view, direct(base)) and view.stride() == direct(base).stride()


def test_make_view_gives_none_for_a_reshape_the_strides_cannot_express():
    f, x, y = _view_fusion(lambda x: ops.reshape(x, [12]))
    base = torch.zeros(6, 2).t()
    assert make_view(view_chain(f, y, x), base, validate_inputs(f, [base])) is None


@pytest.mark.parametrize("op", ["expand", "reshape"])
def test_a_view_output_of_a_zero_dim_shape(op):
    """An expand of a 0-dim input to ``[]``, a reshape of a 1-element one to ``[]``: views
    of the input of shape () (torch's ``expand(*[])`` and ``view(*[])`` take no shape)."""
    x = torch.tensor(3.5) if op == "expand" else torch.tensor([3.5])
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(
            fd.ops.expand(t, shape=[]) if op == "expand" else fd.ops.reshape(t, new_shape=[])
        )
    (out,) = fd.execute([x])
    assert out.shape == () and out.item() == 3.5
    assert out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


# --- round trip: what allocate_dense produces, validate_inputs accepts ----------------------------
@st.composite
def shapes_and_orders(draw):
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3, 5]), min_size=rank, max_size=rank)))
    order = tuple(draw(st.permutations(range(rank))))
    return shape, order, tuple(draw(st.permutations(range(rank))))


@settings(max_examples=150, deadline=None)
@given(shapes_and_orders())
def test_dense_tensors_validate_against_their_declared_order(case):
    shape, order, other = case
    f = Fusion()
    with FusionGuard(f):
        ids = [IterDomain.iteration(None) for _ in shape]
        x = TensorView(f, ids, DataType.Float)
        x.set_allocation_domain([ids[i] for i in order])
        f.add_input(x)
    validate_inputs(f, [allocate_dense(shape, order, torch.float32, torch.device("cpu"))])
    t = allocate_dense(shape, other, torch.float32, torch.device("cpu"))
    big = [i for i in order if shape[i] > 1]
    if 0 not in shape and big != [i for i in other if shape[i] > 1]:
        with pytest.raises(InputLayoutError):
            validate_inputs(f, [t])
    else:
        validate_inputs(f, [t])  # the same memory layout
