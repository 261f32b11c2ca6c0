"""The seed bug report's C++ tests (nvFuser ``AllocationDomainTest``), line for line.

Each case runs at a small size (CPU, Triton interpreter) and at the seed's size, marked
``full`` (``--full`` runs them; meant for the GPU); the column-major PlayGround pair at
full size needs 2.4 GB and runs on a GPU only. Every case is checked by
``testing.validate`` (the reference), by an independent torch expression, and on its
output layout: outputs are dense, and an allocation domain's reduction axes are not
allocated.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.errors import InputLayoutError
from layoutfuse.testing_api import (
    Fusion,
    FusionExecutorCache,
    FusionGuard,
    make_contig_concrete_tensor,
    permute,
    reshape,
    sum,
    testing,
)
from support.execution import schedules

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
GPU_ONLY = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="2.4 GB input: the GPU benchmark's size"
)


def small_and_full(small, full, *full_marks):
    return [
        pytest.param(small, id="small"),
        pytest.param(full, marks=(pytest.mark.full, *full_marks), id="full"),
    ]


def assert_close_to_exact_sum(out: torch.Tensor, exact: torch.Tensor, n: int) -> None:
    """A float32 sum of ``n`` randn values each against the float64 sum: error grows with n."""
    torch.testing.assert_close(out.double(), exact, rtol=1e-5, atol=1e-5 + 1e-7 * n)


def assert_reduction_family(fec: FusionExecutorCache, family: str) -> None:
    """The seed's point: inner or outer follows the input's memory order, not the output's."""
    params = schedules(fec)
    assert params, "the fusion ran without generated kernels"
    first = params[0]
    assert first.family == family, f"expected an {family} reduction, got {first}"


def assert_dense_1d(out: torch.Tensor, n: int) -> None:
    assert tuple(out.shape) == (n,)
    assert out.stride() == (1,)


# --- AllocationDomainTest.ReductionOnPermutedReshape ----------------------------------------------
@pytest.mark.parametrize("pin_output", [True, False], ids=["out_alloc", "no_out_alloc"])
@pytest.mark.parametrize("shape", small_and_full((2, 3, 8, 4), (16, 12, 128, 192)))
def test_reduction_on_permuted_reshape(shape, pin_output):
    b, h, s, d = shape
    fusion = Fusion()
    with FusionGuard(fusion):
        tv_in = make_contig_concrete_tensor([b, h, s, d])
        tv_in.set_allocation_domain(
            [tv_in.axis(0), tv_in.axis(2), tv_in.axis(1), tv_in.axis(3)], True
        )
        dqkv = permute(tv_in, [0, 2, 1, 3])
        dqkv = reshape(dqkv, [b, s, h, d], [b, s, h * d])
        sum_out = sum(dqkv, [0, 1])
        if pin_output:
            sum_out.set_allocation_domain([sum_out.axis(2), sum_out.axis(0), sum_out.axis(1)], True)
        fusion.add_input(tv_in)
        fusion.add_output(sum_out)

    fec = FusionExecutorCache(fusion)
    in_tensor = torch.randn(b * h * s * d, device=DEVICE).as_strided(
        (b, h, s, d), (s * h * d, d, h * d, 1)
    )
    out_tensors = fec.run_fusion_with_inputs([in_tensor])
    testing.validate(fec.fusion(), out_tensors, [in_tensor])

    assert_dense_1d(out_tensors[0], h * d)
    assert_reduction_family(fec, "outer")
    exact = in_tensor.double().sum(dim=(0, 2)).reshape(h * d)
    assert_close_to_exact_sum(out_tensors[0], exact, b * s)


# --- AllocationDomainTest.PlayGround: output allocation only, then input and output ---------------
@pytest.mark.parametrize("shape", small_and_full((4, 8, 16), (16, 1024, 1024)))
def test_playground_output_allocation(shape):
    n0, n1, n2 = shape
    fusion = Fusion()
    with FusionGuard(fusion):
        tv_in = make_contig_concrete_tensor([n0, n1, n2])
        sum_out = sum(tv_in, [0, 1])
        sum_out.set_allocation_domain([sum_out.axis(2), sum_out.axis(0), sum_out.axis(1)], True)
        fusion.add_input(tv_in)
        fusion.add_output(sum_out)

    fec = FusionExecutorCache(fusion)
    in_tensor = torch.randn(n0 * n1 * n2, device=DEVICE).as_strided((n0, n1, n2), (n1 * n2, n2, 1))
    out_tensors = fec.run_fusion_with_inputs([in_tensor])
    testing.validate(fec.fusion(), out_tensors, [in_tensor])

    assert_dense_1d(out_tensors[0], n2)
    assert_reduction_family(fec, "outer")
    assert_close_to_exact_sum(out_tensors[0], in_tensor.double().sum(dim=(0, 1)), n0 * n1)


def playground_input_and_output_allocation(n0: int, n1: int, n2: int) -> Fusion:
    fusion = Fusion()
    with FusionGuard(fusion):
        tv_in = make_contig_concrete_tensor([n0, n1, n2])
        tv_in.set_allocation_domain([tv_in.axis(2), tv_in.axis(0), tv_in.axis(1)], True)
        sum_out = sum(tv_in, [0, 1])
        sum_out.set_allocation_domain([sum_out.axis(2), sum_out.axis(0), sum_out.axis(1)], True)
        fusion.add_input(tv_in)
        fusion.add_output(sum_out)
    return fusion


@pytest.mark.parametrize("shape", small_and_full((4, 8, 16), (16, 1024, 1024)))
def test_playground_input_and_output_allocation(shape):
    # The seed passes row-major strides (n1*n2, n2, 1), which contradict the input's
    # allocation domain {axis2, axis0, axis1}; here the strides follow that domain
    # (the seed's literal input is the next test).
    n0, n1, n2 = shape
    fec = FusionExecutorCache(playground_input_and_output_allocation(n0, n1, n2))
    in_tensor = torch.randn(n0 * n1 * n2, device=DEVICE).as_strided((n0, n1, n2), (n1, 1, n0 * n1))
    out_tensors = fec.run_fusion_with_inputs([in_tensor])
    testing.validate(fec.fusion(), out_tensors, [in_tensor])

    assert_dense_1d(out_tensors[0], n2)
    assert_reduction_family(fec, "inner")
    assert_close_to_exact_sum(out_tensors[0], in_tensor.double().sum(dim=(0, 1)), n0 * n1)


def test_playground_seed_input_contradicts_its_allocation_domain():
    fec = FusionExecutorCache(playground_input_and_output_allocation(4, 8, 16))
    in_tensor = torch.randn(4 * 8 * 16, device=DEVICE).as_strided((4, 8, 16), (8 * 16, 16, 1))
    with pytest.raises(InputLayoutError):
        fec.run_fusion_with_inputs([in_tensor])


# --- AllocationDomainTest.PlayGround (column-major) and PlayGround_ref ----------------------------
COLUMN_MAJOR_SHAPES = small_and_full((64, 96), (16 * 1024, 1024 * 36), GPU_ONLY)


def column_major_input(m: int, n: int) -> torch.Tensor:
    return torch.randn(m * n, device=DEVICE).as_strided((m, n), (1, m))


@pytest.mark.parametrize("shape", COLUMN_MAJOR_SHAPES)
def test_playground_column_major(shape):
    m, n = shape
    fusion = Fusion()
    with FusionGuard(fusion):
        tv_in = make_contig_concrete_tensor([m, n])
        tv_in.set_allocation_domain([tv_in.axis(1), tv_in.axis(0)], True)
        sum_out = sum(tv_in, [1])
        fusion.add_input(tv_in)
        fusion.add_output(sum_out)

    fec = FusionExecutorCache(fusion)
    in_tensor = column_major_input(m, n)
    out_tensors = fec.run_fusion_with_inputs([in_tensor])
    testing.validate(fec.fusion(), out_tensors, [in_tensor])

    assert_dense_1d(out_tensors[0], m)
    assert_reduction_family(fec, "outer")
    assert_close_to_exact_sum(out_tensors[0], in_tensor.double().sum(dim=1), n)


def playground_ref(n: int, m: int) -> Fusion:
    fusion = Fusion()
    with FusionGuard(fusion):
        tv_in = make_contig_concrete_tensor([n, m])
        sum_out = sum(tv_in, [0])
        fusion.add_input(tv_in)
        fusion.add_output(sum_out)
    return fusion


@pytest.mark.parametrize("shape", COLUMN_MAJOR_SHAPES)
def test_playground_ref(shape):
    m, n = shape
    fec = FusionExecutorCache(playground_ref(n, m))
    in_tensor = torch.randn(n * m, device=DEVICE).as_strided((n, m), (m, 1))
    out_tensors = fec.run_fusion_with_inputs([in_tensor])
    testing.validate(fec.fusion(), out_tensors, [in_tensor])

    assert_dense_1d(out_tensors[0], m)
    assert_reduction_family(fec, "outer")
    assert_close_to_exact_sum(out_tensors[0], in_tensor.double().sum(dim=0), n)


def test_playground_column_major_and_ref_agree_on_the_same_memory():
    """The seed's point: both cases sum the same memory the same way (an outer reduction)."""
    m, n = 64, 96
    col = column_major_input(m, n)
    fusion = Fusion()
    with FusionGuard(fusion):
        tv_in = make_contig_concrete_tensor([m, n])
        tv_in.set_allocation_domain([tv_in.axis(1), tv_in.axis(0)], True)
        fusion.add_input(tv_in)
        fusion.add_output(sum(tv_in, [1]))
    (from_col,) = FusionExecutorCache(fusion).run_fusion_with_inputs([col])
    (from_ref,) = FusionExecutorCache(playground_ref(n, m)).run_fusion_with_inputs([col.t()])
    torch.testing.assert_close(from_col, from_ref, rtol=1e-5, atol=1e-5 + 1e-7 * n)
