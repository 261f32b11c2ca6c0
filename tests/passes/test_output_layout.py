"""OutputLayoutPass on its own: which rule decides each output, and the order it gives.

Orders list positions in the output's shape from outermost to innermost in memory.
"""

from __future__ import annotations

import pytest

from layoutfuse.dtypes import DataType
from layoutfuse.errors import DefinitionError
from layoutfuse.ir import Fusion, FusionGuard, IterDomain, TensorView, ops
from layoutfuse.ir.ops.shape import stride_order_to_allocation
from layoutfuse.passes.output_layout import OutputLayout, OutputLayoutPass


def define_tensor(
    f: Fusion, shape, stride_order=None, contiguity=True, dtype=DataType.Float
) -> TensorView:
    """nvFuser's define_tensor: -1 symbolic, 1 broadcast, n static; stride_order 0 = innermost."""
    ids = [
        IterDomain.broadcast(1) if s == 1 else IterDomain.iteration(None if s == -1 else s)
        for s in shape
    ]
    tv = TensorView(f, ids, dtype)
    if stride_order is not None:
        tv.set_allocation_domain(stride_order_to_allocation(ids, stride_order, "test"), contiguity)
    f.add_input(tv)
    return tv


def layouts(build) -> dict[int, OutputLayout]:
    f = Fusion()
    with FusionGuard(f):
        for out in build(f):
            f.add_output(out)
    return OutputLayoutPass().apply(f)


def only(build) -> OutputLayout:
    (layout,) = layouts(build).values()
    return layout


def test_pass_is_a_named_frozen_dataclass():
    p = OutputLayoutPass()
    assert p.name == "output_layout"
    with pytest.raises(AttributeError):
        p.name = "x"


# --- inferred from the dominant input -------------------------------------------------------------
def test_channels_last_input_gives_channels_last_pointwise_output():
    def build(f):
        x = define_tensor(f, [-1, -1, -1, -1], stride_order=[3, 0, 2, 1])  # N, H, W, C in memory
        return [ops.pointwise("relu", x)]

    assert only(build) == OutputLayout("inferred", (0, 2, 3, 1))


def test_permute_plus_one_keeps_the_input_physical_layout():
    def build(f):
        x = define_tensor(f, [-1, -1, -1])
        return [ops.pointwise("add", ops.permute(x, [2, 0, 1]), 1.0)]

    # y = (x2, x0, x1): x0 outermost, then x1, x2 innermost -> y1, y2, y0
    assert only(build) == OutputLayout("inferred", (1, 2, 0))


def test_column_major_matrix_summed_over_n_gives_a_1d_output():
    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=[0, 1])
        return [ops.reduction("sum", x, [1])]

    assert only(build) == OutputLayout("inferred", (0,))


def test_reduction_keeps_the_relative_memory_order_of_kept_axes():
    def build(f):
        x = define_tensor(f, [-1, -1, -1], stride_order=[1, 0, 2])  # memory order (2, 0, 1)
        return [ops.reduction("sum", x, [1])]

    # output dims (x0, x2): x2 outer, x0 inner
    assert only(build) == OutputLayout("inferred", (1, 0))


def test_order_survives_ops_after_a_reduction():
    def build(f):
        x = define_tensor(f, [-1, -1, -1], stride_order=[1, 0, 2])
        return [ops.pointwise("mul", ops.reduction("sum", x, [1]), 2.0)]

    assert only(build) == OutputLayout("inferred", (1, 0))


@pytest.mark.parametrize("stride_order", [[1, 0], [0, 1]])
def test_a_row_reduced_then_combined_with_itself_keeps_the_input_order(stride_order):
    """softmax-like: x / sum(x, 1) has dim 1 again (from x), so the reduction that
    consumed it on the other path does not drop it from the order."""

    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=stride_order)
        s = ops.reduction("sum", x, [1])
        return [
            ops.pointwise(
                "div",
                x,
                ops.broadcast_in_dim(
                    s, [x.shape_domain[0].extent or 4, x.shape_domain[1].extent or 5], [0]
                ),
            )
        ]

    order = (0, 1) if stride_order == [1, 0] else (1, 0)
    assert only(build) == OutputLayout("inferred", order)


def test_keepdim_broadcast_goes_outermost():
    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=[0, 1])
        return [ops.reduction("sum", x, [1], keepdim=True)]

    assert only(build) == OutputLayout("inferred", (1, 0))


def test_index_select_keeps_the_dims_of_its_arg():
    """topk's k = 1 along a column-major input's innermost dim, then an index_select: its
    output's dim of extent 1 is topk's (no broadcast, as nvFuser's index_select takes the
    looked-up tensor's dims), so the walk maps it and goes on (generated program 32533
    came back row-major: the index's broadcast had made it one, where the walk stopped)."""

    def build(f):
        x = define_tensor(f, [-1, -1, -1], stride_order=[0, 1, 2])  # dim 0 innermost
        index = define_tensor(f, [-1], dtype=DataType.Int)
        values, _ = ops.topk(x, 1, dim=0)
        return [ops.index_select(values, index, 2), values]

    selected, values = layouts(build).values()
    assert values == OutputLayout("inferred", (2, 1, 0))
    assert selected == OutputLayout("inferred", (2, 1, 0))


@pytest.mark.parametrize("op", ["sum", "prod", "max"])
def test_a_reduction_over_a_gathered_broadcast_consumes_the_data_dim(op):
    """A gather whose index is a broadcast along a dim of the data (extent 1 there), then a
    reduction over that dim: a reduction of one element is a squeeze, and the data dim it
    removes counts as consumed, as a reduction's, so the walk goes on to the next dim
    (generated program 810385 came back row-major: the squeeze had stopped the walk)."""

    def build(f):
        # data dims outermost first 2, 0, 1, 3; the index's dims 0 and 3 broadcast
        data = define_tensor(f, [-1, -1, -1, -1], stride_order=[2, 1, 3, 0], dtype=DataType.Int)
        index = define_tensor(f, [1, -1, -1, 1], stride_order=[3, 2, 1, 0], dtype=DataType.Int)
        gathered = ops.gather(data, index, 0)
        return [ops.reduction(op, gathered, [3])]

    # the data's dim 3 is consumed, dim 1 maps, dim 0 is the indexed one (the walk stops)
    assert only(build) == OutputLayout("inferred", (0, 2, 1))


def test_reference_is_the_input_with_most_non_broadcast_dims():
    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=[0, 1])
        bias = define_tensor(f, [-1])
        return [ops.pointwise("add", x, bias)]

    assert only(build) == OutputLayout("inferred", (1, 0))


def test_tied_references_that_disagree_give_row_major():
    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=[0, 1])
        y = define_tensor(f, [-1, -1])
        return [ops.pointwise("add", x, y)]

    assert only(build) == OutputLayout("row_major", (0, 1))


def test_tied_references_that_agree_propagate():
    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=[0, 1])
        y = define_tensor(f, [-1, -1], stride_order=[0, 1])
        return [ops.pointwise("add", x, y)]

    assert only(build) == OutputLayout("inferred", (1, 0))


def test_size_queries_do_not_make_an_input_a_reference():
    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=[0, 1])
        y = define_tensor(f, [-1, -1])
        return [ops.full([ops.size(x, 0), ops.size(y, 1)], 0.0, DataType.Float)]

    assert only(build) == OutputLayout("row_major", (0, 1))


def test_reshape_that_merges_the_innermost_dim_stops_the_walk():
    def build(f):
        x = define_tensor(f, [2, 3, 4])
        return [ops.pointwise("neg", ops.reshape(x, [2, 12]))]

    assert only(build) == OutputLayout("row_major", (0, 1))


def test_walk_stops_at_the_first_dim_a_reshape_merges():
    def build(f):
        x = define_tensor(f, [2, 3, 4], stride_order=[0, 2, 1])  # memory order (1, 2, 0)
        return [ops.pointwise("neg", ops.reshape(x, [2, 12]))]

    # x0 (innermost) maps 1:1 to out0; x2 is merged into out1: stop. out1 outer, out0 inner.
    assert only(build) == OutputLayout("inferred", (1, 0))


def test_symbolic_reshape_inserting_ones_maps_through_size_queries():
    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=[0, 1])
        y = ops.reshape(x, [ops.size(x, 0), 1, ops.size(x, 1)])
        return [ops.pointwise("abs", y)]

    # x0 -> out0 (innermost), x1 -> out2; the new broadcast dim goes outermost
    assert only(build) == OutputLayout("inferred", (1, 2, 0))


def test_no_tensor_input_gives_row_major():
    assert only(lambda f: [ops.full([2, 3], 1.0, DataType.Float)]) == OutputLayout(
        "row_major", (0, 1)
    )


def test_welford_outputs_follow_the_input():
    def build(f):
        x = define_tensor(f, [-1, -1, -1], stride_order=[1, 0, 2])
        return list(ops.welford(x, [1]))

    assert set(layouts(build).values()) == {OutputLayout("inferred", (1, 0))}


# --- pinned ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "stride_order,order", [([0, 1, 2], (2, 1, 0)), ([2, 0, 1], (0, 2, 1)), ([2, 1, 0], (0, 1, 2))]
)
def test_pinned_stride_order(stride_order, order):
    def build(f):
        x = define_tensor(f, [-1, -1, -1], stride_order=[0, 1, 2])
        return [ops.stride_order(ops.pointwise("exp", x), stride_order)]

    assert only(build) == OutputLayout("pinned", order)


def test_reduction_axes_in_a_pinned_allocation_domain_are_ignored():
    def build(f):
        x = define_tensor(f, [-1, -1, -1])
        s = ops.reduction("sum", x, [1])  # logical [i0, r1, i2]
        s.set_allocation_domain([s.axis(2), s.axis(0), s.axis(1)])
        return [s]

    assert only(build) == OutputLayout("pinned", (1, 0))


# --- alias and views ------------------------------------------------------------------------------
def test_alias_output():
    def build(f):
        x = define_tensor(f, [-1, -1])
        y = define_tensor(f, [-1, -1], stride_order=[0, 1])
        f.add_output(ops.set_(ops.pointwise("add", x, 1.0)), alias_input=y)
        return [ops.pointwise("mul", x, 2.0)]

    got = layouts(build)
    assert got[0] == OutputLayout("alias", (1, 0), alias_input=1)
    assert got[1].kind == "inferred"


def test_alias_that_also_pins_its_layout_is_rejected():
    f = Fusion()
    with FusionGuard(f):
        x = define_tensor(f, [-1, -1])
        f.add_output(ops.stride_order(x, [0, 1]), alias_input=x)
    with pytest.raises(DefinitionError, match="output 0"):
        OutputLayoutPass().apply(f)


# chains of view ops from a [2, 3] tensor
VIEW_CHAINS = {
    "permute": lambda x: ops.permute(x, [1, 0]),
    "set": lambda x: ops.set_(x),
    "reshape": lambda x: ops.reshape(x, [6]),
    "squeeze": lambda x: ops.squeeze(ops.broadcast(x, [True, False, False]), [0]),
    "expand": lambda x: ops.expand(ops.broadcast(x, [True, False, False]), [4, -1, -1]),
    "identity": lambda x: x,
}


@pytest.mark.parametrize("chain", list(VIEW_CHAINS.values()), ids=list(VIEW_CHAINS))
def test_pure_views_of_an_input(chain):
    def build(f):
        define_tensor(f, [-1, -1])
        x = define_tensor(f, [2, 3], stride_order=[0, 1])
        return [chain(x)]

    layout = only(build)
    assert layout.kind == "view" and layout.view_of == 1
    assert layout.fallback in ("inferred", "row_major")


def test_a_view_carries_the_order_to_allocate_with_when_it_fails():
    def build(f):
        x = define_tensor(f, [-1, -1], stride_order=[0, 1])
        return [ops.permute(x, [1, 0])]

    assert only(build) == OutputLayout("view", (0, 1), view_of=0, fallback="inferred")


def test_scalar_outputs_have_no_layout():
    def build(f):
        x = define_tensor(f, [-1])
        return [ops.size(x, 0), ops.pointwise("neg", x)]

    assert set(layouts(build)) == {1}


OUTPUT_VIEW_CHAINS = ("permute", "set", "reshape", "squeeze")


@pytest.mark.parametrize(
    "chain", [VIEW_CHAINS[k] for k in OUTPUT_VIEW_CHAINS], ids=OUTPUT_VIEW_CHAINS
)
def test_pure_views_of_another_output(chain):
    """A chain of view ops from a computed output: a view of it, with the order to
    allocate with where the view fails; the computed output keeps its own layout."""

    def build(f):
        x = define_tensor(f, [2, 3], stride_order=[0, 1])
        y = ops.pointwise("neg", x)
        return [y, chain(y)]

    got = layouts(build)
    assert got[0] == OutputLayout("inferred", (1, 0))
    assert got[1].kind == "view" and got[1].view_of is None and got[1].view_of_output == 0
    assert got[1].fallback in ("inferred", "row_major")


def test_a_view_of_views_of_an_output_is_one_of_the_topmost_output():
    """y, z = permute(y) and w = reshape(z), all outputs: z and w are views of y (the
    topmost computed output on their chains), whatever the order of the outputs."""

    def build(f):
        x = define_tensor(f, [2, 3])
        y = ops.pointwise("neg", x)
        z = ops.permute(y, [1, 0])
        return [ops.reshape(z, [6]), z, y]

    got = layouts(build)
    assert got[2].kind in ("inferred", "row_major")
    assert got[0].view_of_output == 2 and got[1].view_of_output == 2


def test_a_pinned_output_is_no_view_of_another():
    def build(f):
        x = define_tensor(f, [2, 3])
        y = ops.pointwise("neg", x)
        return [y, ops.stride_order(ops.permute(y, [1, 0]), [0, 1])]

    got = layouts(build)
    assert got[1].kind == "pinned", got[1]
