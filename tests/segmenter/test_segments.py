"""The segmenter: which kernels a fusion is cut into, what each stores, in which order.

Fusions are built with ``layoutfuse.testing_api`` and cut by
``segmenter.segments.segment(fusion, computed_outputs)`` (every output here is computed:
none is an alias or a view of an input), without running anything. The assertions are on
the structure: the kinds of the segments, the reductions each computes, the tensors each
stores, the run order, the fallback plan of a normalization kernel; of a reason only a
key phrase.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from layoutfuse import testing_api as api
from layoutfuse.ir import Expr, Fusion, FusionGuard, OpKind, TensorView
from layoutfuse.ir import ops as ir_ops
from layoutfuse.segmenter.segments import KernelSpec, segment, siblings


@dataclass
class Built:
    """A fusion, its inputs and its outputs (in ``add_output`` order)."""

    fusion: Fusion
    inputs: list[TensorView]
    outputs: list[TensorView]

    def reductions(self) -> list[Expr]:
        return [e for e in self.fusion.exprs if e.op.kind in (OpKind.REDUCTION, OpKind.WELFORD)]


def build(ranks: tuple[int, ...], body: Callable[..., list[TensorView]]) -> Built:
    """Contiguous Float inputs of ``ranks``; ``body(*inputs)`` returns the outputs."""
    f = Fusion()
    with FusionGuard(f):
        inputs = [api.make_contig_tensor(r) for r in ranks]
        for t in inputs:
            f.add_input(t)
        outputs = body(*inputs)
        for o in outputs:
            f.add_output(o)
    return Built(f, inputs, outputs)


def cut(b: Built) -> tuple[list[KernelSpec], list[TensorView]]:
    """The segments in run order and the intermediates that need buffers."""
    return segment(b.fusion, [spec.value for spec in b.fusion.outputs])


def kinds(specs: list[KernelSpec]) -> list[str]:
    return [s.kind for s in specs]


def names(exprs: list[Expr]) -> list[str]:
    return [e.op.name for e in exprs]


def same(tvs: list[TensorView], want: list[TensorView]) -> bool:
    """The same tensors (by identity), in order."""
    return len(tvs) == len(want) and all(a is b for a, b in zip(tvs, want))


def loads(spec: KernelSpec) -> list[TensorView]:
    return [a.tv for a in spec.accesses[: spec.n_loads]]


def rows(t: TensorView) -> TensorView:
    """A per-row value of a rank-2 tensor broadcast back over its dim 1."""
    return api.broadcast(t, [False, True])


# --- the fusions --------------------------------------------------------------------------------
def pointwise(x, y):
    return [api.exp(api.add(x, y))]


def one_sum(x):
    return [api.sum(x, [1])]


def softmax(x):
    e = api.exp(api.sub(x, rows(api.max(x, [1]))))
    return [api.div(e, rows(api.sum(e, [1])))]


def layer_norm(x):
    centered = api.sub(x, rows(api.mean(x, [1])))
    var = api.mean(api.mul(centered, centered), [1])
    return [api.mul(centered, rows(api.rsqrt(api.add(var, 1e-5))))]


def sum_and_squares(x):
    return [api.sum(x, [1]), api.sum(api.mul(x, x), [1])]


def sums_of_both_dims(x):
    return [api.sum(x, [1]), api.sum(x, [0])]


def sum_then_add(x3, y2):
    """A rank-3 sum over its last dim, added to a rank-2 input: a pointwise kernel after
    the reduction reads the reduction's result from memory."""
    return [api.add(api.sum(x3, [2]), y2)]


def exp_then_double(x):
    """Outputs 2 exp(x) and exp(x): the second is upstream of the first's kernel."""
    e = api.exp(x)
    return [api.mul(e, 2.0), e]


FUSIONS: dict[str, tuple[tuple[int, ...], Callable]] = {
    "pointwise": ((2, 2), pointwise),
    "one_sum": ((2,), one_sum),
    "softmax": ((2,), softmax),
    "layer_norm": ((2,), layer_norm),
    "sum_and_squares": ((2,), sum_and_squares),
    "sums_of_both_dims": ((2,), sums_of_both_dims),
    "sum_then_add": ((3, 2), sum_then_add),
    "exp_then_double": ((2,), exp_then_double),
}


def built(name: str) -> Built:
    ranks, body = FUSIONS[name]
    return build(ranks, body)


# --- one segment ---------------------------------------------------------------------------------
def test_pointwise_only_is_one_pointwise_segment():
    b = built("pointwise")
    specs, intermediates = cut(b)
    assert kinds(specs) == ["pointwise"] and intermediates == []
    (spec,) = specs
    assert same(spec.outputs, b.outputs)
    assert names(spec.exprs) == ["add", "exp"] and spec.reductions == []
    assert "without reductions" in spec.reason


def test_one_sum_is_one_reduction_segment():
    b = built("one_sum")
    specs, intermediates = cut(b)
    assert kinds(specs) == ["reduction"] and intermediates == []
    (spec,) = specs
    assert names(spec.reductions) == ["sum"] and same(spec.outputs, b.outputs)
    assert same(loads(spec), b.inputs)
    assert "one reduction per kernel" in spec.reason


# --- normalization ----------------------------------------------------------------------------------
def test_softmax_is_one_normalization_segment_with_an_online_fallback():
    b = built("softmax")
    specs, _ = cut(b)
    assert kinds(specs) == ["normalization"]
    (spec,) = specs
    assert names(spec.group.reductions) == ["max", "sum"] and spec.group.dims == (1,)
    assert same(spec.outputs, b.outputs) and "used again" in spec.reason
    # the fallback: max and sum in one reduction kernel (online), then the division
    assert kinds(spec.fallback) == ["reduction", "pointwise"]
    red, pw = spec.fallback
    mx, sm = spec.group.reductions
    assert names(red.reductions) == ["max", "sum"]
    assert red.online == {id(sm): mx}
    assert same(red.outputs, [mx.outputs[0], sm.outputs[0]])
    assert same(pw.outputs, b.outputs)
    assert spec.fallback_buffers == [mx.outputs[0], sm.outputs[0]]


def test_layer_norm_is_one_normalization_segment_with_a_kernel_per_reduction_fallback():
    b = built("layer_norm")
    specs, _ = cut(b)
    assert kinds(specs) == ["normalization"]
    (spec,) = specs
    mean_sum, var_sum = spec.group.reductions
    assert names([mean_sum, var_sum]) == ["sum", "sum"] and spec.group.online == {}
    # the variance's sum reads the mean: a later pass of the same kernel
    assert spec.group.levels[id(var_sum)] > spec.group.levels[id(mean_sum)]
    assert same(spec.outputs, b.outputs)
    assert kinds(spec.fallback) == ["reduction", "reduction", "pointwise"]
    first, second, pw = spec.fallback
    assert first.reduction is mean_sum and second.reduction is var_sum
    assert first.online == {} and second.online == {}
    assert same(pw.outputs, b.outputs)


# --- siblings -----------------------------------------------------------------------------------------
def test_sum_and_sum_of_squares_are_siblings_in_one_segment():
    b = built("sum_and_squares")
    memory = {id(t) for t in b.inputs}
    assert siblings(b.reductions(), memory) == [b.reductions()]
    specs, intermediates = cut(b)
    assert kinds(specs) == ["normalization"] and intermediates == []
    (spec,) = specs
    assert same(spec.outputs, b.outputs) and same(loads(spec), b.inputs)  # one read of x
    assert "same rows" in spec.reason
    (fallback,) = spec.fallback  # one reduction kernel computes both
    assert fallback.kind == "reduction" and names(fallback.reductions) == ["sum", "sum"]
    assert same(fallback.outputs, b.outputs)


def test_reductions_of_different_dims_are_not_siblings():
    b = built("sums_of_both_dims")
    rows_sum, cols_sum = b.reductions()
    assert siblings(b.reductions(), {id(t) for t in b.inputs}) == [[rows_sum], [cols_sum]]
    specs, _ = cut(b)
    assert kinds(specs) == ["reduction", "reduction"]
    assert [s.reduction for s in specs] == [rows_sum, cols_sum]
    assert all(s.fallback == [] for s in specs)


def test_a_reduction_that_depends_on_another_is_not_its_sibling():
    b = built("layer_norm")
    mean_sum, var_sum = b.reductions()
    assert siblings([mean_sum, var_sum], {id(t) for t in b.inputs}) == [[mean_sum], [var_sum]]


# --- several segments: order and stores ------------------------------------------------------------
def test_a_pointwise_segment_runs_after_the_reduction_it_reads():
    b = built("sum_then_add")
    specs, intermediates = cut(b)
    assert kinds(specs) == ["reduction", "pointwise"]  # producers first
    red, pw = specs
    (summed,) = red.outputs
    assert intermediates == [summed]  # a buffer between the two
    assert any(t is summed for t in loads(pw)) and same(pw.outputs, b.outputs)
    assert "after the reductions" in pw.reason


def test_an_output_upstream_of_another_outputs_kernel_is_stored_by_it():
    b = built("exp_then_double")
    specs, _ = cut(b)
    assert kinds(specs) == ["pointwise"]
    (spec,) = specs
    doubled, e = b.outputs
    assert same(spec.outputs, [doubled, e]) and same(loads(spec), b.inputs)


def test_an_upstream_output_listed_first_is_stored_by_the_downstream_kernel():
    b = build((2,), lambda x: list(reversed(exp_then_double(x))))
    (spec,), _ = cut(b)
    assert spec.kind == "pointwise" and len(spec.outputs) == 2


def test_a_pointwise_output_beside_a_reduction_says_so():
    """exp(y) is an output, and so is the sum of x (other coordinates): the pointwise
    kernel does not come after the reduction, and its reason says beside."""

    def body(x, y):
        return [api.exp(y), api.sum(x, [0])]

    specs, _ = cut(build((2, 2), body))
    reasons = [s.reason for s in specs if s.kind == "pointwise"]
    assert reasons == ["pointwise work beside the reductions"], reasons


def test_a_pointwise_output_of_the_reduction_input_is_stored_from_its_loop():
    """exp(x) is an output, and so is the sum of it: one reduction kernel stores both, its
    pointwise kernel only in its fallback plan."""

    def body(x):
        e = api.exp(x)
        return [e, api.sum(e, [0])]

    (spec,), _ = cut(build((2,), body))
    assert spec.kind == "reduction" and [o.index for o in spec.loop_stores] == [
        spec.outputs[-1].index
    ]
    assert "from its loop" in spec.reason
    assert [s.kind for s in spec.fallback] == ["pointwise", "reduction"]


# --- every fusion -------------------------------------------------------------------------------------
def all_specs(specs: list[KernelSpec]) -> list[KernelSpec]:
    """The segments and the segments of their fallback plans."""
    return [s for spec in specs for s in (spec, *spec.fallback)]


@pytest.mark.parametrize("name", list(FUSIONS))
def test_every_cut_has_a_reason(name):
    for spec in all_specs(cut(built(name))[0]):
        assert spec.reason.strip(), f"{name}: a {spec.kind} segment without a reason"


@pytest.mark.parametrize("name", list(FUSIONS))
def test_every_segment_runs_after_the_segments_that_store_what_it_loads(name):
    specs, _ = cut(built(name))
    stored_by = {id(t): i for i, s in enumerate(specs) for t in s.outputs}
    for i, spec in enumerate(specs):
        for t in loads(spec):
            assert stored_by.get(id(t), -1) < i, f"{name}: segment {i} loads T{t.index} first"


@pytest.mark.parametrize("name", list(FUSIONS))
def test_every_output_and_intermediate_is_stored_once(name):
    b = built(name)
    specs, intermediates = cut(b)
    stored = [id(t) for s in specs for t in s.outputs]
    assert sorted(stored) == sorted(id(t) for t in b.outputs + intermediates), name


def test_a_reduction_and_a_scan_only_dead_ops_use_launch_nothing():
    """sum(x) feeds only a product that is no output, and cumsum(x) nothing: the one
    kernel computes x + 1 (both used to launch a kernel of their own)."""

    def body(x):
        api.mul(api.sum(x, [0]), api.max(x, [0]))
        ir_ops.cumsum(x, 0)
        return [api.add(x, x)]

    specs, _ = cut(build((2,), body))
    assert [s.kind for s in specs] == ["pointwise"], [(s.kind, s.reason) for s in specs]
