"""Reduction kernels compiled for sm_90 without a GPU (issue 4).

Each fusion runs (Triton's interpreter on the CPU, the GPU when there is one), then
``compile_last_run`` compiles every kernel of that run for sm_90 with the launcher's
specialization. Checked: the loads of the input's stride-1 axis are 16-byte vectors
(``ld.global.v4``) whether that axis is reduced (inner) or kept (outer), and every
kernel of representative fusions compiles at all, so a kernel that only the
interpreter accepts fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.reduction import ReductionParams
from support.execution import INTERPRETER_WARNINGS, schedules

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
NV_DTYPES = {
    torch.float32: DataType.Float,
    torch.float16: DataType.Half,
    torch.bfloat16: DataType.BFloat16,
}


def laid_out(shape, stride_order, dtype=torch.float32, seed=0) -> torch.Tensor:
    """A dense tensor of ``shape`` in nvFuser's ``stride_order`` (0 = innermost)."""
    rank = len(shape)
    alloc = sorted(range(rank), key=lambda d: -stride_order[d])  # outermost first
    gen = torch.Generator().manual_seed(seed)
    base = torch.randn([shape[d] for d in alloc], generator=gen).to(dtype)
    return base.permute(*[alloc.index(d) for d in range(rank)]).to(DEVICE)


def define_input(fd: FusionDefinition, x: torch.Tensor, stride_order):
    return fd.define_tensor(
        shape=[-1] * x.dim(),
        contiguity=[True] * x.dim(),
        dtype=NV_DTYPES[x.dtype],
        stride_order=list(stride_order),
    )


def reduce_and_compile(shape, stride_order, op: str, dims, dtype=torch.float32, out_order=None):
    """Run ``op(x, dims)`` on a ``stride_order`` input, check its values, and compile the
    run's kernels for sm_90. Returns (artifacts, the params of every kernel)."""
    x = laid_out(shape, stride_order, dtype)
    with FusionDefinition() as fd:
        t0 = define_input(fd, x, stride_order)
        outs = (
            fd.ops.var_mean(t0, dims=dims, correction=1)
            if op == "var_mean"
            else [getattr(fd.ops, op)(t0, dims=dims)]
        )
        for out in outs:
            fd.add_output(out, stride_order=out_order)
    results = fd.execute([x])
    x64 = x.cpu().double()
    refs = (
        torch.var_mean(x64, dims, correction=1)
        if op == "var_mean"
        else [{"sum": torch.sum, "max": torch.amax}[op](x64, dims)]
    )
    for got, ref in zip(results, refs):
        torch.testing.assert_close(got.cpu().double(), ref, rtol=1e-2, atol=1e-2)
    return compile_last_run(fd.executor()), schedules(fd)


def reduction_kernels(artifacts):
    found = [a for a in artifacts if a.name.startswith("reduction")]
    assert found, f"no reduction kernel among {[a.name for a in artifacts]}"
    return found


# --- vector widths ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape, stride_order, dims, dtype, family",
    [
        pytest.param([64, 1024], [1, 0], [1], torch.float32, "inner", id="fp32-row-major-inner"),
        pytest.param([1024, 64], [0, 1], [1], torch.float32, "outer", id="fp32-col-major-outer"),
        pytest.param([64, 1024], [1, 0], [1], torch.bfloat16, "inner", id="bf16-row-major-inner"),
    ],
)
def test_stride_one_axis_is_read_with_16_byte_vectors(shape, stride_order, dims, dtype, family):
    artifacts, (schedule,) = reduce_and_compile(shape, stride_order, "sum", dims, dtype)
    assert schedule.family == family
    for art in reduction_kernels(artifacts):
        widths = art.vector_widths
        assert widths.get("ld.global.v4", 0) > 0, f"{art.name}: loads {widths}"
        assert widths.get("ld.global.v1", 0) == 0, f"{art.name}: scalar loads {widths}"
        if dtype == torch.bfloat16:  # 8 x bf16 = 16 bytes, moved as 4 x b32
            assert "ld.global.v4.b32" in art.ptx


# --- every kernel compiles -------------------------------------------------------------------
@dataclass(frozen=True)
class Fusion:
    """A representative fusion: builds its definition and inputs, returns its references."""

    build: Callable[[FusionDefinition], list[torch.Tensor]]
    reference: Callable[[list[torch.Tensor]], list[torch.Tensor]]
    split: bool = False  # the reduction must be split (partials, then combined)


def _split_inner(fd):
    x = laid_out([8, 16384], [1, 0])
    fd.add_output(fd.ops.sum(define_input(fd, x, [1, 0]), dims=[1]))
    return [x]


def _split_outer(fd):
    x = laid_out([8192, 64], [1, 0])
    fd.add_output(fd.ops.sum(define_input(fd, x, [1, 0]), dims=[0]))
    return [x]


def _welford(fd):
    x = laid_out([16, 64], [1, 0])
    var, mean = fd.ops.var_mean(define_input(fd, x, [1, 0]), dims=[1], correction=1)
    fd.add_output(var)
    fd.add_output(mean)
    return [x]


def _welford_split(fd):
    x = laid_out([4096, 4], [1, 0])
    var, mean = fd.ops.var_mean(define_input(fd, x, [1, 0]), dims=[0], correction=1)
    fd.add_output(var)
    fd.add_output(mean)
    return [x]


def _nan_max(fd):
    x = laid_out([64, 256], [1, 0], torch.float16)
    x[3, 17] = float("nan")
    x[40, 200] = float("nan")
    fd.add_output(fd.ops.max(define_input(fd, x, [1, 0]), dims=[1]))
    return [x]


def _nan_min_outer(fd):
    x = laid_out([256, 64], [1, 0], torch.bfloat16)
    x[5, 7] = float("nan")
    fd.add_output(fd.ops.min(define_input(fd, x, [1, 0]), dims=[0]))
    return [x]


def _pinned_transposed(fd):
    x = laid_out([48, 32, 64], [2, 1, 0], torch.bfloat16)
    fd.add_output(fd.ops.sum(define_input(fd, x, [2, 1, 0]), dims=[1]), stride_order=[0, 1])
    return [x]


def _seed_permuted_reshape(fd):
    """The seed's ReductionOnPermutedReshape, smaller: input allocated (0, 2, 1, 3),
    permuted to that order, reshaped and reduced over dims 0 and 1."""
    x = torch.randn(4, 16, 3, 32).permute(0, 2, 1, 3).to(DEVICE)  # [4, 3, 16, 32]
    t = fd.ops.permute(define_input(fd, x, [3, 1, 2, 0]), dims=[0, 2, 1, 3])
    t = fd.ops.reshape(t, new_shape=[4, 16, 96])
    fd.add_output(fd.ops.sum(t, dims=[0, 1]), stride_order=[0])
    return [x]


def _exp_prologue_mixed(fd):
    """A pointwise prologue on two inputs of different layouts, a mixed reduction (the
    first input's memory order, innermost first, is dims 0, 2, 1: R X R)."""
    x = laid_out([16, 24, 32], [0, 2, 1])
    y = laid_out([16, 24, 32], [2, 1, 0])
    t = fd.ops.mul(fd.ops.exp(define_input(fd, x, [0, 2, 1])), define_input(fd, y, [2, 1, 0]))
    fd.add_output(fd.ops.sum(t, dims=[0, 1]))
    return [x, y]


def _var(xs):
    return list(torch.var_mean(xs[0].cpu().double(), [1], correction=1))


FUSIONS = {
    "split-inner-sum": Fusion(_split_inner, lambda xs: [xs[0].cpu().double().sum(1)], True),
    "split-outer-sum": Fusion(_split_outer, lambda xs: [xs[0].cpu().double().sum(0)], True),
    "welford-var-mean": Fusion(_welford, _var),
    "welford-split-outer": Fusion(
        _welford_split, lambda xs: list(torch.var_mean(xs[0].cpu().double(), [0])), True
    ),
    "max-nan-fp16": Fusion(_nan_max, lambda xs: [xs[0].cpu().double().amax(1)]),
    "min-nan-bf16-outer": Fusion(_nan_min_outer, lambda xs: [xs[0].cpu().double().amin(0)]),
    "pinned-transposed-bf16": Fusion(_pinned_transposed, lambda xs: [xs[0].cpu().double().sum(1)]),
    "seed-permuted-reshape": Fusion(
        _seed_permuted_reshape,
        lambda xs: [xs[0].cpu().double().permute(0, 2, 1, 3).reshape(4, 16, 96).sum([0, 1])],
    ),
    "exp-mul-mixed": Fusion(
        _exp_prologue_mixed,
        lambda xs: [(xs[0].cpu().double().exp() * xs[1].cpu().double()).sum([0, 1])],
    ),
}


@pytest.mark.parametrize("name", FUSIONS)
def test_every_kernel_compiles_for_sm90(name):
    fusion = FUSIONS[name]
    with FusionDefinition() as fd:
        inputs = fusion.build(fd)
    outs = fd.execute(inputs)
    for got, ref in zip(outs, fusion.reference(inputs), strict=True):
        torch.testing.assert_close(got.cpu().double(), ref, rtol=1e-2, atol=1e-2, equal_nan=True)
    params = schedules(fd)
    if fusion.split:
        assert any(getattr(p, "split", 1) > 1 for p in params), f"not split: {params}"
    artifacts = compile_last_run(fd.executor())
    n_reductions = sum(isinstance(p, ReductionParams) for p in params)
    assert artifacts and len(artifacts) >= n_reductions, [a.name for a in artifacts]
    for art in artifacts:
        assert ".entry" in art.ptx, f"{art.name}: no kernel entry in its PTX"
        assert art.vector_widths, f"{art.name}: no global memory access in its PTX"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_the_half_step_alternative_compiles_for_sm90(dtype):
    """The measured choice's half step (``ReductionTuning.alternatives``: half the bytes a
    thread, at the whole step's warps) on rows of 3715: the same sums, loads of 16-byte
    vectors from each row's first aligned element, no spills."""
    from layoutfuse.schedulers import reduction_tiles
    from layoutfuse.schedulers.tuning import DEFAULT
    from support.execution import configured

    (half,) = [a for a in reduction_tiles.DEFAULT_TUNING.alternatives if "load_bytes" in dict(a)]
    x = laid_out((6, 3715), (1, 0), dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum(define_input(fd, x, (1, 0)), dims=[1]))
    fd = configured(fd, tuning=DEFAULT.with_fields(reduction=dict(half)))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.float().sum(1).to(dtype), rtol=1e-2, atol=1e-2)
    (params,) = schedules(fd)
    # a step of 4096 bytes of each row (inner_row_bytes), 8 warps
    step = params.block_r * params.unroll * x.element_size()
    assert (step, params.block_x, params.num_warps) == (4096, 2, 8), params
    (art,) = compile_last_run(fd.executor())
    assert art.local_bytes == 0 and art.vector_widths.get("ld.global.v4", 0) > 0, art.resources
