"""Sibling reductions (issue 4: "one or more reductions of the same shape ... one kernel"):
reductions of the same dims over the same coordinates that do not feed each other run as
one kernel that reads their inputs once (``segmenter.segments.siblings``).

Asserted for every memory order of 2-D and 3-D inputs, inner, outer and mixed
reductions, fp32 and bf16 (and fp16 in the one-kernel sweep): the values and output
strides against torch, one kernel listing every reduction, its family from the input's
layout, and its sm_90 compilation; the looped and fallback plans when the rows do not fit
one tile; and what is *not* a sibling (other dims, other inputs, a reduction of another's
result).
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu
from support.tensors import with_order

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DT = {
    torch.float32: DataType.Float,
    torch.float16: DataType.Half,
    torch.bfloat16: DataType.BFloat16,
}
TOL = {
    torch.float32: dict(atol=1e-4, rtol=1e-5),
    torch.float16: dict(atol=1e-3, rtol=1e-3),
    torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
}


def four_reductions(x_in: torch.Tensor, dims: list[int]) -> FusionDefinition:
    """sum, max, sum of squares and var_mean of one input over ``dims``."""
    with FusionDefinition() as fd:
        x = fd.from_pytorch(x_in)
        xf = fd.ops.cast(x, DataType.Float)
        fd.add_output(fd.ops.sum(xf, dims=dims))
        fd.add_output(fd.ops.max(x, dims=dims))
        fd.add_output(fd.ops.sum(fd.ops.mul(xf, xf), dims=dims))
        var, mean = fd.ops.var_mean(xf, dims=dims, correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    return fd


def expected(x: torch.Tensor, dims: list[int]) -> list[torch.Tensor]:
    xf = x.float()
    var, mean = torch.var_mean(xf, dims, correction=1)
    return [xf.sum(dims), x.amax(dims), (xf * xf).sum(dims), var, mean]


def check(outs, ref, dtype) -> None:
    for o, r in zip(outs, ref, strict=True):
        assert o.dtype == r.dtype
        torch.testing.assert_close(o.cpu(), r.cpu(), **TOL[dtype])


LAYOUTS = [
    ((24, 40), order, dims) for order in itertools.permutations(range(2)) for dims in ([0], [1])
] + [
    ((6, 5, 40), order, dims)
    for order in itertools.permutations(range(3))
    for dims in ([2], [0], [0, 2], [1])
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape, order, dims", LAYOUTS)
def test_siblings_run_as_one_kernel(shape, order, dims, dtype):
    x = with_order(shape, order, dtype, seed=len(dims))
    fd = four_reductions(x, dims)
    outs = fd.execute([x])
    check(outs, expected(x, dims), dtype)
    (seg,) = fd.segment([x])
    assert seg["scheduler"] == "normalization" and "same rows" in seg["reason"], seg
    assert sorted(op for op in seg["ops"] if op in ("sum", "max", "welford")) == [
        "max",
        "sum",
        "sum",
        "welford",
    ]
    (params,) = schedules(fd)
    # the input's stride-1 dim decides the family
    inner_dim = min(range(len(shape)), key=lambda d: x.stride(d))
    assert params.template == ("inner" if inner_dim in dims else "outer"), params
    assert params.passes == 1
    kept = [d for d in range(len(shape)) if d not in dims]
    in_order = sorted(range(len(kept)), key=lambda i: -x.stride(kept[i]))
    for o in outs:  # dense, the kept dims in the input's memory order
        assert o.shape == tuple(shape[d] for d in kept)
        assert sorted(range(o.dim()), key=lambda i: -o.stride(i)) == in_order or o.dim() <= 1
        assert o.is_contiguous() or o.permute(in_order).is_contiguous()
    compile_last_run(fd.executor())


def test_siblings_with_an_epilogue_and_a_shared_second_input():
    """sum(x * y) and sum(x) are siblings (both reach x and y pointwise); the mean's
    division by n joins the kernel as an epilogue."""
    x, y = torch.randn(16, 50), torch.randn(16, 50)
    with FusionDefinition() as fd:
        tx, ty = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.sum(fd.ops.mul(tx, ty), dims=[1]))
        fd.add_output(fd.ops.div(fd.ops.sum(tx, dims=[1]), fd.define_scalar(50.0)))
    a, b = fd.execute([x, y])
    torch.testing.assert_close(a, (x * y).sum(1))
    torch.testing.assert_close(b, x.mean(1))
    assert [s["scheduler"] for s in fd.segment([x, y])] == ["normalization"]


@pytest.mark.parametrize("case", ["other dims", "other inputs", "dependent"])
def test_what_is_not_a_sibling(case):
    x, y = torch.randn(16, 50), torch.randn(16, 50)
    with FusionDefinition() as fd:
        tx, ty = fd.from_pytorch(x), fd.from_pytorch(y)
        if case == "other dims":
            fd.add_output(fd.ops.sum(tx, dims=[1]))
            fd.add_output(fd.ops.sum(tx, dims=[0]))
            ref = [x.sum(1), x.sum(0)]
        elif case == "other inputs":  # same shape, nothing shared: two reads anyway
            fd.add_output(fd.ops.sum(tx, dims=[1]))
            fd.add_output(fd.ops.sum(ty, dims=[1]))
            ref = [x.sum(1), y.sum(1)]
        else:  # the second sums the first one's result
            s = fd.ops.sum(tx, dims=[1])
            z = fd.ops.mul(
                ty,
                fd.ops.broadcast_in_dim(
                    fd.ops.sum(s, dims=[0]), shape=ty.shape(), broadcast_dims=[]
                ),
            )
            fd.add_output(s)
            fd.add_output(fd.ops.sum(z, dims=[1]))
            ref = [x.sum(1), (y * x.sum()).sum(1)]
    outs = fd.execute([x, y])
    for o, r in zip(outs, ref, strict=True):
        torch.testing.assert_close(o, r, atol=1e-4, rtol=1e-5)
    segs = fd.segment([x, y])
    assert not any("same rows" in s["reason"] for s in segs), segs
    assert len(segs) >= 2


@pytest.mark.parametrize(
    "order, dims, mode",
    [
        ((0, 1), [1], "looped"),  # contiguous rows longer than a tile: one read, looped
        ((0, 1), [0], "split"),  # strided columns, too few blocks for wide steps: one
        ((1, 0), [1], "split"),  # split reduction kernel for all four
    ],
)
def test_siblings_longer_than_a_tile_still_read_once(order, dims, mode):
    x = with_order((40, 128), order, torch.float32)
    fd = configured(
        four_reductions(x, dims),
        target=small_gpu(2),
        tuning=DEFAULT.with_fields(normalization=dict(max_tile=64, loop_tile=32)),
    )
    check(fd.execute([x]), expected(x, dims), torch.float32)
    schedule = schedules(fd)
    segs = fd.segment([x])
    if mode == "looped":
        (params,) = schedule
        assert params.mode == mode and params.passes == 1, schedule
        assert "same rows" in segs[0]["reason"]
    else:
        reductions = [p for p in schedule if isinstance(p, rd.ReductionParams)]
        assert len(reductions) == 1 and reductions[0].template == "outer", schedule
        assert "one split reduction kernel for the sibling reductions" in segs[0]["reason"]
    compile_last_run(fd.executor())


SPLIT_SIBLINGS = [
    ((3, 6200), (0, 1), [1], torch.float32),  # inner: 3 long contiguous rows
    ((9000, 3), (0, 1), [0], torch.float32),  # outer: 3 long strided columns
    ((9000, 3), (0, 1), [0], torch.bfloat16),
    ((2, 9000, 3), (0, 1, 2), [1], torch.float32),  # mixed [X, R, X]
]
IN_CI = {(2, "ticket"), (1, "kernel")}  # 30-80 s each in the interpreter


@pytest.mark.parametrize(
    "shape, order, dims, dtype, finish",
    [
        pytest.param(
            *case,
            finish,
            id=f"{i}-{finish}",
            marks=() if (i, finish) in IN_CI else (pytest.mark.full,),
        )
        for i, case in enumerate(SPLIT_SIBLINGS)
        for finish in ("ticket", "kernel")
    ],
)
def test_siblings_too_few_rows_run_as_one_split_reduction_kernel(finish, shape, order, dims, dtype):
    """Rows too long for a tile and too few to fill the GPU: the siblings run as one
    reduction kernel, split along R, whose partials (one workspace per result: 1 + 1 + 1
    + 3) are combined by the last program of each X block (ticket) or a finishing
    kernel; var_mean's epilogue (M2 / (n - 1)) is computed from the results in the same
    kernel (a per-row epilogue: no pointwise kernel after it)."""
    fields = dict(normalization=dict(max_tile=64))
    target = small_gpu(64)
    if finish == "kernel":  # no ticket steps, and no L2 to keep the problem in
        fields["reduction"] = dict(ticket_steps=0)
        target = small_gpu(64, l2_bytes=0)
    x = with_order(shape, order, dtype, seed=5)
    fd = configured(four_reductions(x, dims), tuning=DEFAULT.with_fields(**fields), target=target)
    check(fd.execute([x]), expected(x, dims), dtype)
    (red,) = fd.last_schedule()
    assert red.scheduler == "reduction"
    assert red.split > 1 and red.finish == finish, red
    segs = fd.segment([x])
    assert len(segs) == 1
    assert "reductions of the same rows in one reduction kernel" in segs[0]["reason"]
    assert "per-row epilogue stored with its results" in segs[0]["reason"]
    check(fd.execute([x]), expected(x, dims), dtype)  # a second launch: counters were reset
    compile_last_run(fd.executor())


@pytest.mark.parametrize(
    "dtype, block_x, block_r", [(torch.float32, 256, 8), (torch.bfloat16, 512, 8)]
)
def test_outer_siblings_take_the_reduction_schedulers_wide_steps(dtype, block_x, block_r):
    """Reductions only (nothing stored per element) over strided columns, enough column
    blocks (two a multiprocessor): one pass of 1 KB rows, 8 KB steps, no store pass (one
    loop in the kernel)."""
    x = with_order((40, 2048), (0, 1), dtype)
    fd = configured(four_reductions(x, [0]), target=small_gpu(2))
    check(fd.execute([x]), expected(x, [0]), dtype)
    (params,) = schedules(fd)
    assert (params.mode, params.template, params.block_x, params.block_r) == (
        "looped",
        "outer",
        block_x,
        block_r,
    ), params
    assert "reductions only" in fd.segment([x])[0]["reason"]
    assert fd.last_triton_code().count("for r0 in range(") == 1
    compile_last_run(fd.executor())
