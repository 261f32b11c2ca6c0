"""FusionExecutor.run end to end: values, output layouts (strides), aliases, views, scalars.

Every test runs through the executor as it is: generated kernels, each also compiled for
sm_90 (``KernelExecutor``), with values checked against torch.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import DataType
from layoutfuse.ir import Fusion, FusionGuard, IterDomain, Scalar, TensorView, ops
from layoutfuse.ir.ops.shape import stride_order_to_allocation
from layoutfuse.passes import output_layout
from layoutfuse.runtime.executor import FusionExecutor


class KernelExecutor(FusionExecutor):
    """The executor as it is; every kernel a run launches is also compiled for sm_90."""

    def run(self, inputs, device=None):
        outs = super().run(inputs, device)
        if self.last_run is not None:
            for art in compile_last_run(self):
                assert f".entry {art.name}" in art.ptx, f"{art.name}: no kernel entry"
        return outs


@pytest.fixture
def executor():
    return KernelExecutor


def define_tensor(f: Fusion, shape, stride_order=None, dtype=DataType.Float) -> TensorView:
    ids = [
        IterDomain.broadcast(1) if s == 1 else IterDomain.iteration(None if s == -1 else s)
        for s in shape
    ]
    tv = TensorView(f, ids, dtype)
    if stride_order is not None:
        tv.set_allocation_domain(stride_order_to_allocation(ids, stride_order, ""))
    f.add_input(tv)
    return tv


def build(fn) -> Fusion:
    f = Fusion()
    with FusionGuard(f):
        fn(f)
    return f


def col_major(*shape):
    return torch.randn(*reversed(shape)).permute(*reversed(range(len(shape))))


# --- inferred layouts -----------------------------------------------------------------------------
def test_channels_last_pointwise(executor):
    f = build(
        lambda f: f.add_output(
            ops.pointwise("mul", define_tensor(f, [-1, -1, -1, -1], stride_order=[3, 0, 2, 1]), 2.0)
        )
    )
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    (out,) = executor(f).run([x])
    torch.testing.assert_close(out, x * 2)
    assert out.stride() == x.stride()


def test_permute_plus_one_keeps_the_physical_layout(executor):
    f = build(
        lambda f: f.add_output(
            ops.pointwise("add", ops.permute(define_tensor(f, [-1, -1, -1]), [2, 0, 1]), 1.0)
        )
    )
    x = torch.randn(2, 3, 4)
    (out,) = executor(f).run([x])
    eager = x.permute(2, 0, 1) + 1
    torch.testing.assert_close(out, eager)
    assert out.stride() == eager.stride() == (1, 12, 4)


def test_reduction_keeps_the_input_memory_order(executor):
    f = build(
        lambda f: f.add_output(
            ops.reduction("sum", define_tensor(f, [-1, -1, -1], stride_order=[1, 0, 2]), [1])
        )
    )
    x = torch.randn(5, 2, 3).permute(1, 2, 0)  # (2, 3, 5), memory order (2, 0, 1)
    (out,) = executor(f).run([x])
    torch.testing.assert_close(out, x.sum(1))
    assert out.shape == (2, 5) and out.stride() == (1, 2)


def test_column_major_sum_over_n(executor):
    f = build(
        lambda f: f.add_output(
            ops.reduction("sum", define_tensor(f, [-1, -1], stride_order=[0, 1]), [1])
        )
    )
    x = col_major(6, 4)
    (out,) = executor(f).run([x])
    torch.testing.assert_close(out, x.sum(1))
    assert out.stride() == (1,)


# --- pinned ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "stride_order,strides",
    [([0, 1, 2], (1, 2, 6)), ([1, 2, 0], (4, 8, 1)), ([2, 1, 0], (12, 4, 1))],
)
def test_pinned_stride_order(executor, stride_order, strides):
    f = build(
        lambda f: f.add_output(
            ops.stride_order(ops.pointwise("neg", define_tensor(f, [-1, -1, -1])), stride_order)
        )
    )
    x = torch.randn(2, 3, 4)
    (out,) = executor(f).run([x])
    torch.testing.assert_close(out, -x)
    assert out.stride() == strides


def test_pinned_allocation_with_reduction_axes(executor):
    def fn(f):
        s = ops.reduction("sum", define_tensor(f, [-1, -1, -1]), [1])
        s.set_allocation_domain([s.axis(2), s.axis(0), s.axis(1)])
        f.add_output(s)

    x = torch.randn(2, 3, 4)
    (out,) = executor(build(fn)).run([x])
    torch.testing.assert_close(out, x.sum(1))
    assert out.stride() == (1, 2)


# --- aliases, views, expanded and scalar outputs --------------------------------------------------
def test_alias_is_written_in_place_and_omitted(executor):
    def fn(f):
        x = define_tensor(f, [-1, -1])
        f.add_output(ops.pointwise("mul", x, 2.0), alias_input=x)
        f.add_output(ops.pointwise("add", x, 1.0))

    x = torch.randn(3, 4)
    before = x.clone()
    outs = executor(build(fn)).run([x])
    assert len(outs) == 1
    torch.testing.assert_close(outs[0], before + 1)  # read the input before the write
    torch.testing.assert_close(x, before * 2)


def test_alias_of_another_shape_is_rejected(executor):
    def fn(f):
        x = define_tensor(f, [-1, -1])
        y = define_tensor(f, [-1])
        f.add_output(ops.reduction("sum", x, [0]), alias_input=x)
        f.add_output(ops.pointwise("neg", y))

    with pytest.raises(Exception, match="output 0"):
        executor(build(fn)).run([torch.randn(2, 3), torch.randn(3)])


@pytest.mark.parametrize(
    "view,direct",
    [
        (lambda x: ops.permute(x, [1, 0]), lambda t: t.t()),
        (lambda x: x, lambda t: t),
        (lambda x: ops.reshape(x, [ops.size(x, 0), 1, ops.size(x, 1)]), lambda t: t.unsqueeze(1)),
    ],
    ids=["permute", "identity", "reshape"],
)
def test_view_outputs_share_the_input_memory(executor, view, direct):
    f = build(lambda f: f.add_output(view(define_tensor(f, [-1, -1]))))
    x = torch.randn(3, 4)
    (out,) = executor(f).run([x])
    assert out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert torch.equal(out, direct(x)) and out.stride() == direct(x).stride()


def test_a_reshape_that_is_not_a_view_is_computed(executor):
    f = build(
        lambda f: f.add_output(ops.reshape(define_tensor(f, [3, 4], stride_order=[0, 1]), [12]))
    )
    x = col_major(3, 4)
    (out,) = executor(f).run([x])
    assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert torch.equal(out, x.reshape(12)) and out.stride() == (1,)


def test_expanded_output_dims_have_stride_zero(executor):
    def fn(f):
        x = define_tensor(f, [-1])
        y = ops.pointwise("add", x, 1.0)
        f.add_output(ops.expand(ops.broadcast(y, [True, False]), [4, -1]))

    x = torch.randn(3)
    (out,) = executor(build(fn)).run([x])
    assert out.shape == (4, 3) and out.stride() == (0, 1)
    torch.testing.assert_close(out, (x + 1).expand(4, 3))


def test_scalar_outputs_are_0_dim_tensors(executor):
    def fn(f):
        x = define_tensor(f, [-1, -1])
        s = Scalar(f, DataType.Double)
        f.add_input(s)
        f.add_output(ops.pointwise("mul", ops.size(x, 1), s))
        f.add_output(ops.pointwise("mul", x, s))

    x = torch.randn(2, 5)
    n, y = executor(build(fn)).run([x, 1.5])
    assert n.dim() == 0 and n.dtype == torch.float64 and n.item() == 7.5
    torch.testing.assert_close(y, x * 1.5)


def test_empty_inputs(executor):
    f = build(lambda f: f.add_output(ops.pointwise("exp", define_tensor(f, [-1, -1]))))
    (out,) = executor(f).run([torch.randn(0, 3)])
    assert out.shape == (0, 3)


def test_shapes_from_scalar_inputs(executor):
    def fn(f):
        x = define_tensor(f, [-1])
        rows = Scalar(f, DataType.Int)
        f.add_input(rows)
        f.add_output(ops.pointwise("add", ops.reshape(x, [rows, 3]), 1.0))

    x = torch.randn(6)
    (out,) = executor(build(fn)).run([x, 2])
    torch.testing.assert_close(out, x.reshape(2, 3) + 1)


# --- the executor's own bookkeeping ---------------------------------------------------------------
def test_reference_compute_launches_nothing():
    f = build(lambda f: f.add_output(ops.pointwise("neg", define_tensor(f, [-1]))))
    x = torch.randn(3)
    ref = FusionExecutor(f, compute="reference")
    (out,) = ref.run([x])
    torch.testing.assert_close(out, -x)
    assert ref.last_run is None and ref.last_schedule() == []
    ex = FusionExecutor(f)
    assert ex.last_schedule() == []  # nothing ran yet
    (out,) = ex.run([x])
    torch.testing.assert_close(out, -x)
    assert [p.scheduler for p in ex.last_schedule()] == ["pointwise"]
    assert [r.kernel.name for r in ex.last_run.launches] == ["pointwise_kernel"]


def test_unknown_compute_mode_is_refused():
    f = build(lambda f: f.add_output(ops.pointwise("neg", define_tensor(f, [-1]))))
    with pytest.raises(ValueError, match="compute"):
        FusionExecutor(f, compute="eager")


def test_output_layouts_are_computed_once(executor, monkeypatch):
    calls = []
    real = output_layout.OutputLayoutPass.apply
    monkeypatch.setattr(
        output_layout.OutputLayoutPass,
        "apply",
        lambda self, fusion: calls.append(1) or real(self, fusion),
    )
    f = build(lambda f: f.add_output(ops.pointwise("neg", define_tensor(f, [-1]))))
    ex = executor(f)
    first = ex.output_layouts()
    ex.run([torch.randn(3)])
    ex.run([torch.randn(5)])
    assert ex.output_layouts() is first and len(calls) == 1
