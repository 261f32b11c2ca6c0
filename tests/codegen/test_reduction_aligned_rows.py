"""Inner reductions over rows that Triton cannot prove aligned (``ReductionParams.align_rows``).

A row of 3715 bf16 elements starts on a 16-byte boundary only every 8th row, and its
length is no multiple of 16: the plain R loop (steps from element 0, masked at NR) loads
one element at a time. The aligned loop walks each row's (or split chunk's) whole
16-byte vectors from its first boundary, masked a vector at a time, and takes the head
and the tail (under a vector each) in one masked tile. The tests run sums, maxima and a sum of a product over such rows on the
interpreter against torch (several rows a program, split and unsplit, rows whose length,
stride or both are odd), and compile the kernels for sm_90: 16-byte loads where the plain
loop has none. A Welford (var_mean) keeps the plain loop.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

DT = {
    torch.float32: DataType.Float,
    torch.bfloat16: DataType.BFloat16,
    torch.float16: DataType.Half,
}
# steps of 128 bytes of a row: rows of a few hundred elements hold whole aligned steps
SHORT_STEPS = DEFAULT.with_fields(reduction=dict(inner_row_bytes=128))


def _fusion(op: str, xs: list[torch.Tensor]) -> FusionDefinition:
    """``op`` over the last dim of 2-D inputs (sum, max, dot: a sum of a product)."""
    with FusionDefinition() as fd:
        ts = [fd.ops.cast(fd.from_pytorch(x), DataType.Float) for x in xs]
        if op == "sum":
            fd.add_output(fd.ops.sum(ts[0], dims=[1]))
        elif op == "max":
            fd.add_output(fd.ops.max(ts[0], dims=[1]))
        else:
            fd.add_output(fd.ops.sum(fd.ops.mul(ts[0], ts[1]), dims=[1]))
    return fd


def _expected(op: str, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    f = [x.double() for x in xs]
    if op == "sum":
        return [f[0].sum(1)]
    if op == "max":
        return [f[0].amax(1)]
    return [(f[0] * f[1]).sum(1)]


def _rows(kind: str, m: int, n: int, dtype, seed: int = 0) -> torch.Tensor:
    """``m`` rows of ``n``: contiguous (odd n: rows meet boundaries anywhere) or padded
    (rows of n inside rows of n + 2: an odd stride for an odd n)."""
    g = torch.Generator().manual_seed(seed + n)
    if kind == "contiguous":
        return (3 * torch.randn(m, n, generator=g)).to(dtype)
    return (3 * torch.randn(m, n + 2, generator=g)).to(dtype)[:, :n]


def _run(op, xs, tuning=SHORT_STEPS, sms=4):
    fd = _fusion(op, xs)
    configured(fd, tuning=tuning, target=small_gpu(sms))
    outs = fd.execute(xs)
    for got, want in zip(outs, _expected(op, xs)):
        tol = 1e-4 * max(1.0, float(want.abs().max()))
        torch.testing.assert_close(got.double(), want, atol=tol, rtol=1e-4)
    (params,) = schedules(fd)
    assert params.template == "inner", params
    return fd, params


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "padded"])
@pytest.mark.parametrize("op", ["sum", "max", "dot"])
@pytest.mark.parametrize("n", [301, 97 + 64 * 2, 75])
def test_misaligned_rows_match_torch(op, kind, n, dtype):
    """Rows whose boundaries fall anywhere in a step, several a program: a row of 75 bf16
    ends in its second step of 64, one of 225 or 301 after several."""
    xs = [_rows(kind, 6, n, dtype, seed) for seed in range(2 if op == "dot" else 1)]
    _, params = _run(op, xs)
    assert params.align_rows == 16 // xs[0].element_size(), params
    assert params.block_x > 1  # several rows a program, each with its own head


@pytest.mark.parametrize("n", [15, 33])
def test_rows_under_two_vectors_keep_the_plain_loop(n):
    """bf16 rows of 15 get a tile 8 columns wide (two of 8 unrolled), under two 8-element
    vectors: the plain loop; rows of 33 get 32 columns and take the aligned loop."""
    x = _rows("contiguous", 6, n, torch.bfloat16)
    fd, params = _run("sum", [x])
    assert params.block_r == (32 if n >= 16 else 8), params
    assert params.align_rows == (8 if n >= 16 else 0), params
    assert ("NV" in fd.last_triton_code()) == (n >= 16)


def test_a_split_aligns_each_chunk():
    """Two rows of 5003 on 64 multiprocessors: R is split, each chunk starts its whole
    steps at its own boundary; the partials combine to torch's."""
    x = _rows("contiguous", 2, 5003, torch.bfloat16)
    _, params = _run("sum", [x], sms=64)
    assert params.split > 1 and params.align_rows == 8, params


def test_a_welford_keeps_the_plain_loop():
    """var_mean of 3 fp32 rows of odd length: a Welford counts its values per tile, which
    the aligned loop's masked rest cannot (a division an element), so it keeps the plain
    loop; split over 64 multiprocessors, the values match torch's."""
    n = 12001
    x = 3 * torch.randn(3, n, generator=torch.Generator().manual_seed(n)) + 1
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.from_pytorch(x), dims=[1], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    # rows past a persistent tile of 4096 (as rows of 40001 are past the scheduler's own)
    tuning = SHORT_STEPS.with_fields(normalization=dict(max_tile=4096))
    configured(fd, tuning=tuning, target=small_gpu(64))
    var, mean = fd.execute([x])
    want_var, want_mean = torch.var_mean(x.double(), 1, correction=1)
    torch.testing.assert_close(var.double(), want_var, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mean.double(), want_mean, rtol=1e-5, atol=1e-5)
    (params,) = schedules(fd)
    assert params.scheduler == "reduction" and params.split > 1 and params.align_rows == 0, params


def test_a_whole_tensor_reduced_keeps_the_plain_loop():
    """The sum of a whole 1-D tensor of odd length: its one row starts where the tensor
    does, and its split chunks are whole steps; the plain loop's steps are aligned."""
    x = torch.randn(40001)
    _, params = _run("sum", [x.view(1, -1)], sms=64)
    assert params.align_rows == 0, params


@pytest.mark.parametrize("pad,aligned", [(1, True), (2, True), (4, False)])
def test_rows_8_bytes_apart_keep_the_plain_loop(pad, aligned):
    """bf16 rows of 300 padded to 301, 302 or 304: the size factors tell Triton a row
    stride of 302 is 4-byte aligned (aligned loop), of 304 16-byte aligned (plain)."""
    x = torch.randn(6, 300 + pad).to(torch.bfloat16)[:, :300]
    _, params = _run("sum", [x])
    assert params.align_rows == (8 if aligned else 0), params


def test_aligned_rows_keep_the_plain_loop():
    """Rows of 1024 at a stride of 1024: Triton proves the plain loop's tiles aligned."""
    _, params = _run("sum", [_rows("contiguous", 6, 1024, torch.bfloat16)])
    assert params.align_rows == 0


def test_loads_that_walk_rows_differently_keep_the_plain_loop():
    """A product of a contiguous and a padded input: their rows meet boundaries at
    different places, so no one boundary serves both."""
    a = _rows("contiguous", 6, 301, torch.bfloat16)
    b = _rows("padded", 6, 301, torch.bfloat16, 1)
    fd, params = _run("dot", [a, b])
    assert params.align_rows == 0 and "NV" not in fd.last_triton_code()


def test_the_tuning_field_turns_it_off():
    x = _rows("contiguous", 6, 301, torch.bfloat16)
    off = SHORT_STEPS.with_fields(reduction=dict(align_row_bytes=0))
    _, params = _run("sum", [x], tuning=off)
    assert params.align_rows == 0
    _, params = _run("sum", [x])
    assert params.align_rows == 8


@pytest.mark.parametrize("op", ["sum", "max"])
def test_whole_steps_load_16_byte_vectors(op):
    """sm_90 PTX of bf16 rows of 3715 (odd length and stride): 16-byte loads, where the
    plain loop's kernel has none."""
    x = _rows("contiguous", 64, 3715, torch.bfloat16)
    fd = _fusion(op, [x])
    configured(fd, target=small_gpu(4))
    fd.execute([x])
    (params,) = schedules(fd)
    assert params.align_rows == 8, params
    (art, *_) = compile_last_run(fd.executor())
    assert "ld.global.v4" in art.ptx
    fd = _fusion(op, [x])
    configured(
        fd, tuning=DEFAULT.with_fields(reduction=dict(align_row_bytes=0)), target=small_gpu(4)
    )
    fd.execute([x])
    (art, *_) = compile_last_run(fd.executor())
    assert "ld.global.v4" not in art.ptx


@pytest.mark.parametrize("tail", [1, 3, 7, 9])
def test_a_split_whose_last_chunk_is_under_a_vector(tail):
    """Two bf16 rows split into chunks of whole steps, the last chunk ``tail`` elements
    long (under one or two 8-element vectors, the row starting off a boundary): that chunk
    is all rest; no element is read twice or past the row."""
    probe = _rows("contiguous", 2, 5003, torch.bfloat16)
    _, params = _run("sum", [probe], sms=64)
    chunk = rd.chunk(params, (5003, 2))
    n = chunk * (params.split - 1) + tail
    x = _rows("padded", 2, n, torch.bfloat16)
    _, params = _run("sum", [x], sms=64)
    assert params.align_rows == 8 and params.split > 1, params
    assert n - (params.split - 1) * rd.chunk(params, (n, 2)) == tail
