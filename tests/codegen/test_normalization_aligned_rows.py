"""Looped rows that Triton cannot prove aligned (``NormalizationParams.align_rows``).

A row of 50257 bf16 elements starts on a 16-byte boundary only every 8th row, and its
length is no multiple of 16: the plain R loop (tiles from element 0, masked at NR) loads
and stores one element at a time. The aligned loop takes each row's head (the elements
before its first boundary) and its tail in masked tiles, then whole tiles from the
boundary, unmasked along R. The tests run such rows on the interpreter against torch,
over contiguous, sliced (a base offset) and padded rows, with an output whose rows meet
their boundaries elsewhere (the plain loop's fallback), and compile the kernels for sm_90:
the whole tiles load and store 16-byte vectors.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers import normalization as nm
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu
from support.norm_rows import fusion, rows, run_checked

pytestmark = [
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
    # masked lanes of a partial tile compute 0/0 and inf/inf in the interpreter (never stored)
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

# rows of more than 64 elements loop in tiles of 32, a row a program
LOOPED = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_tile=32))


def _run(op, x, out_order=None, tuning=LOOPED):
    return run_checked(op, x, tuning, "looped", out_order)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "sliced", "padded"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "rms_norm", "layer_norm"])
@pytest.mark.parametrize("n", [101, 97 + 32 * 3, 70])
def test_misaligned_rows_match_torch(op, kind, n, dtype):
    """Rows whose boundaries fall anywhere in a tile: a head shorter than the tail's
    second tile (n=70 of tiles of 32), a tail that needs its second masked tile (the
    first one holds the head), and rows shorter than a whole tile after the head."""
    x = rows(kind, n, dtype)
    _, params, _ = _run(op, x)
    assert params.align_rows == 16 // x.element_size()


@pytest.mark.parametrize("op", ["softmax", "rms_norm"])
def test_an_output_whose_rows_meet_other_boundaries_runs_the_plain_loop(op):
    """The input's rows start at 3 past a boundary, the output's (contiguous, of 101) at
    row * 101: their heads differ in most rows, where the kernel takes the plain loop."""
    x = rows("sliced", 101, torch.bfloat16)
    fd, params, (out, *_) = _run(op, x)
    assert params.align_rows == 8 and out.stride() == (101, 1)
    assert "if aligned:" in fd.last_triton_code()


def test_aligned_whole_rows_keep_the_plain_loop():
    """Rows of 1024 (a multiple of 16 elements, strides too): Triton proves the plain
    loop's tiles aligned and whole; no aligned loop."""
    x = torch.randn(6, 1024).to(torch.bfloat16)
    fd, params, _ = _run("softmax", x)
    assert params.align_rows == 0 and "NFULL" not in fd.last_triton_code()


def test_the_tuning_field_turns_it_off():
    x = rows("contiguous", 101, torch.bfloat16)
    off = LOOPED.with_fields(normalization=dict(align_row_bytes=0))
    _, params, _ = _run("softmax", x, tuning=off)
    assert params.align_rows == 0
    _, params, _ = _run("softmax", x)
    assert params.align_rows == 8


@pytest.mark.parametrize(
    "op,dtype",
    [("softmax", torch.float32), ("softmax", torch.bfloat16), ("layer_norm", torch.bfloat16)],
    ids=str,
)
def test_whole_tiles_load_and_store_16_byte_vectors(op, dtype):
    """sm_90 PTX of rows of 5003 (odd, as a vocabulary of 50257), looped in tiles of 1024:
    16-byte loads and stores (the whole tiles'), where the plain loop's kernel has none."""
    x = torch.randn(4, 5003).to(dtype)
    tuning = DEFAULT.with_fields(normalization=dict(max_tile=1024, loop_tile=1024))
    fd = fusion(op, x)
    configured(fd, tuning=tuning, target=small_gpu(4))
    fd.execute([x])
    (params,) = schedules(fd)
    assert params.mode == "looped" and params.align_rows == 16 // x.element_size()
    (art,) = compile_last_run(fd.executor())
    assert "ld.global.v4" in art.ptx and "st.global.v4" in art.ptx
    fd = fusion(op, x)
    off = tuning.with_fields(normalization=dict(align_row_bytes=0))
    configured(fd, tuning=off, target=small_gpu(4))
    fd.execute([x])
    (art,) = compile_last_run(fd.executor())
    assert "ld.global.v4" not in art.ptx and "st.global.v4" not in art.ptx


def test_row_accesses_leave_out_what_stays_in_place():
    """A layer norm's weight (stride 0 along the rows) and per-row results are not row
    accesses; the input and the output are."""
    x = rows("contiguous", 101, torch.bfloat16)
    fd, params, _ = _run("rms_norm", x)
    accesses = nm.row_accesses(len(params.unit_strides), params)
    assert len(accesses) == 2  # x and the output, not the weight


def test_a_bf16_row_stored_in_fp32_aligns_for_the_narrower_access():
    """bf16 rows of 101 in, their softmax stored in fp32: V is 8 elements (16 bytes of the
    bf16 rows, 32 of the fp32 ones), and the values match torch."""
    x = rows("contiguous", 101, torch.bfloat16)
    with FusionDefinition() as fd:
        t = fd.ops.cast(fd.from_pytorch(x), DataType.Float)
        bc = lambda v: fd.ops.broadcast_in_dim(v, shape=t.shape(), broadcast_dims=[0])  # noqa: E731
        e = fd.ops.exp(fd.ops.sub(t, bc(fd.ops.max(t, dims=[1]))))
        fd.add_output(fd.ops.div(e, bc(fd.ops.sum(e, dims=[1]))))
    configured(fd, tuning=LOOPED, target=small_gpu(4))
    (out,) = fd.execute([x])
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch.softmax(x.float(), 1), atol=2e-5, rtol=2e-5)
    (params,) = schedules(fd)
    assert params.mode == "looped" and params.align_rows == 8
