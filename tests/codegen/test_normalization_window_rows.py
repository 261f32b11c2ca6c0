"""Persistent rows that Triton cannot prove aligned (``NormalizationParams.align_rows`` in
the persistent mode: the window).

A row of 9747 bf16 elements (a softmax over the columns of a [50257, 9747] matrix) starts
on a 16-byte boundary only every 8th row, so the plain tile (lanes from element 0, masked
at NR) loads one element at a time. The window starts each row's tile at the boundary at
or before its first element: lane ``t`` holds element ``t - head``, the loads are masked a
whole 16-byte vector at a time and the reductions and stores by the element mask. The
tests run such rows on the interpreter against torch (contiguous, sliced and padded rows;
rows that just fit the window and rows that do not), an output whose rows meet their
boundaries elsewhere (the plain tile's branch), and compile the kernels for sm_90: the
row loads are 16-byte vectors, where the plain tile's are not.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu
from support.norm_rows import row_expected, row_fusion, rows

pytestmark = [
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

# a row a program whatever its length (a tile of rows holds at most 64 bytes of them)
ROW_A_PROGRAM = DEFAULT.with_fields(normalization=dict(inner_tile_bytes=64))


def _run(op, x, tuning=ROW_A_PROGRAM):
    fd = row_fusion(op, x)
    configured(fd, tuning=tuning, target=small_gpu(4))
    w = (torch.rand(x.shape[1], generator=torch.Generator().manual_seed(1)) + 0.5).to(x.dtype)
    outs = fd.execute([x, w] if op == "rms_norm" else [x])
    tol = dict(atol=2e-5, rtol=2e-5) if x.dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    for got, want in zip(outs, row_expected(op, x, w)):
        torch.testing.assert_close(got.float(), want.float(), **tol)
    (params,) = schedules(fd)
    assert (params.mode, params.template, params.block_x) == ("persistent", "inner", 1), params
    return fd, params, outs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "sliced", "padded"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "rms_norm", "layer_norm"])
@pytest.mark.parametrize("n", [101, 125, 37])
def test_misaligned_rows_match_torch(op, kind, n, dtype):
    """Rows of 101 and 37 fit the window from any boundary; rows of 125 fit a tile of 128
    only from a 4-element boundary (fp32: the window) and not from an 8-element one (bf16:
    the plain tile)."""
    x = rows(kind, n, dtype)
    _, params, _ = _run(op, x)
    v = 16 // x.element_size()
    assert params.align_rows == (v if n + v - 1 <= params.block_r else 0), params


@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_an_output_whose_rows_meet_other_boundaries_takes_the_plain_tile(op):
    """The input's rows start at 3 past a boundary, the output's (contiguous, of 101) at
    row * 101: their heads differ in most rows, where the kernel takes the plain tile."""
    x = rows("sliced", 101, torch.bfloat16)
    fd, params, (out, *_) = _run(op, x)
    assert params.align_rows == 8 and out.stride() == (101, 1)
    assert "if (" in fd.last_triton_code() and "vmask" in fd.last_triton_code()


def test_aligned_rows_keep_the_plain_tile():
    """Rows of 1024: Triton proves the plain tile aligned; no window."""
    x = torch.randn(6, 1024).to(torch.bfloat16)
    fd, params, _ = _run("softmax", x)
    assert params.align_rows == 0 and "vmask" not in fd.last_triton_code()


def test_rows_of_a_program_keep_the_plain_tile():
    """Several rows a program (the default tile for short rows): their heads differ within
    the tile, so no window."""
    x = rows("contiguous", 101, torch.bfloat16)
    fd, params, _ = _run_default(x)
    assert params.block_x > 1 and params.align_rows == 0


def _run_default(x):
    fd = row_fusion("softmax", x)
    configured(fd, tuning=DEFAULT, target=small_gpu(4))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out.float(), torch.softmax(x.float(), 1), atol=2e-2, rtol=2e-2)
    (params,) = schedules(fd)
    return fd, params, out


def test_the_tuning_field_turns_it_off():
    x = rows("contiguous", 101, torch.bfloat16)
    off = ROW_A_PROGRAM.with_fields(normalization=dict(window_row_bytes=0))
    _, params, _ = _run("softmax", x, tuning=off)
    assert params.align_rows == 0
    _, params, _ = _run("softmax", x)
    assert params.align_rows == 8


@pytest.mark.parametrize(
    "op,dtype",
    [("softmax", torch.float32), ("softmax", torch.bfloat16), ("layer_norm", torch.bfloat16)],
    ids=str,
)
def test_row_loads_are_16_byte_vectors(op, dtype):
    """sm_90 PTX of rows of 5003 (odd, as a vocabulary of 50257) held whole, a row a
    program: 16-byte loads, where the plain tile's kernel has none."""
    x = torch.randn(3, 5003).to(dtype)
    fd, params, _ = _run(op, x, tuning=DEFAULT)
    assert params.align_rows == 16 // x.element_size()
    (art,) = compile_last_run(fd.executor())
    assert "ld.global.v4" in art.ptx
    off = DEFAULT.with_fields(normalization=dict(window_row_bytes=0))
    fd, params, _ = _run(op, x, tuning=off)
    assert params.align_rows == 0
    (art,) = compile_last_run(fd.executor())
    assert "ld.global.v4" not in art.ptx
