"""Persistent rows that Triton cannot prove aligned (``NormalizationParams.align_rows`` in
the persistent mode, tuning ``normalization.align_persistent``).

A tile that holds a whole row of 9747 bf16 elements loads it one element at a time where
the row starts off a 16-byte boundary. Aligned, the tile's lanes start at the row loads'
boundary before the row (lane ``t`` holds element ``t - hd``), the row loads read whole
vectors masked by vector, every value outside the row is masked after, the stores write
the row's whole vectors and its edges from a tile of their own; the last rows
in memory, whose last vector would end past the tensor, and rows whose accesses meet
their boundaries at different places take the plain tile. The tests run such rows on the
interpreter against torch (contiguous, sliced and padded rows, rows that just fit the
tile after the shift, an output whose rows start elsewhere), check the rules that keep
the plain tile, and compile the kernels for sm_90: the row loads and stores are 16-byte
vectors.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu
from support.norm_rows import fusion, rows, run_checked

pytestmark = [
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
    # masked lanes compute on other rows' elements in the interpreter (never stored)
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

# a row a program (the inner tile's rows by bytes: one), persistent rows aligned
ALIGNED = DEFAULT.with_fields(normalization=dict(align_persistent=1, inner_tile_bytes=1))
PLAIN = ALIGNED.with_fields(normalization=dict(align_persistent=0))


def _run(op, x, tuning=ALIGNED, out_order=None):
    return run_checked(op, x, tuning, "persistent", out_order)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "sliced", "padded"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "rms_norm", "layer_norm"])
@pytest.mark.parametrize("n", [101, 70, 121, 9])
def test_misaligned_rows_match_torch(op, kind, n, dtype):
    """Rows starting anywhere in a vector: rows of 121 bf16 fill the 128-lane tile when
    they start 7 past a boundary; rows of 9 may hold no whole vector (edges only); the
    last row in memory takes the plain tile."""
    x = rows(kind, n, dtype)
    fd, params, _ = _run(op, x)
    assert params.align_rows == 16 // x.element_size()
    assert "vmask" in fd.last_triton_code()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("n", [101, 2491])
def test_a_var_mean_without_row_stores(n, dtype):
    """Statistics only (no output walks the rows): the loads align, the per-row results
    are stored by both branches."""
    x = rows("padded", n, dtype)
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.ops.cast(fd.from_pytorch(x), DataType.Float), dims=[1])
        fd.add_output(var)
        fd.add_output(mean)
    configured(fd, tuning=ALIGNED, target=small_gpu(4))
    var, mean = fd.execute([x])
    want_var, want_mean = torch.var_mean(x.float(), 1)
    torch.testing.assert_close(var, want_var, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(mean, want_mean, atol=1e-5, rtol=1e-5)
    (params,) = schedules(fd)
    assert params.mode == "persistent" and params.align_rows == 16 // x.element_size(), params


@pytest.mark.parametrize("op", ["softmax", "rms_norm"])
def test_an_output_whose_rows_start_elsewhere_runs_the_plain_tile(op):
    """The input's rows start 3 past a boundary (a slice of rows of 106), the output's
    (contiguous rows of 101) at row * 101: their first lanes differ in most rows, which
    take the plain tile; the values match torch either way."""
    x = rows("sliced", 101, torch.bfloat16)
    fd, params, (out, *_) = _run(op, x)
    assert params.align_rows == 8 and out.stride() == (101, 1)


def test_rows_that_the_shift_would_widen_keep_the_plain_tile():
    """Rows of 122 bf16 fit a tile of 128 from element 0 but not from up to 7 lanes past
    it: no alignment (the tile would double)."""
    fd, params, _ = _run("softmax", rows("contiguous", 122, torch.bfloat16))
    assert params.block_r == 128 and params.align_rows == 0
    assert "vmask" not in fd.last_triton_code()


def test_a_weight_that_loads_vectors_keeps_the_plain_tile():
    """An RMS norm's weight walks the rows from element 0: with rows of 104 (a multiple of
    8) its loads are vectors in the plain tile, which the shifted lanes would split."""
    _, params, _ = _run("rms_norm", rows("sliced", 104, torch.bfloat16))
    assert params.align_rows == 0
    _, params, _ = _run("rms_norm", rows("sliced", 101, torch.bfloat16))
    assert params.align_rows == 8


def test_aligned_rows_and_the_tuning_field_off_keep_the_plain_tile():
    """Rows of 128 (whole vectors from element 0): nothing to align. The field off: the
    plain tile for misaligned rows too."""
    _, params, _ = _run("softmax", rows("contiguous", 128, torch.bfloat16))
    assert params.align_rows == 0
    _, params, _ = _run("softmax", rows("contiguous", 101, torch.bfloat16), tuning=PLAIN)
    assert params.align_rows == 0


@pytest.mark.parametrize(
    "op,dtype",
    [("softmax", torch.bfloat16), ("layer_norm", torch.float32)],
    ids=str,
)
def test_row_loads_and_stores_are_16_byte_vectors(op, dtype):
    """sm_90 PTX of rows of 5003 (odd, as a vocabulary of 50257) held whole: 16-byte row
    loads and stores (the row's whole vectors), where the plain tile's kernel has none."""
    x = torch.randn(4, 5003).to(dtype)
    for tuning, vectors in ((ALIGNED, True), (PLAIN, False)):
        fd = fusion(op, x)
        configured(fd, tuning=tuning, target=small_gpu(4))
        fd.execute([x])
        (params,) = schedules(fd)
        assert params.mode == "persistent" and bool(params.align_rows) == vectors, params
        (art,) = compile_last_run(fd.executor())
        assert ("ld.global.v4" in art.ptx) == vectors
        assert ("st.global.v4" in art.ptx) == vectors


@pytest.mark.parametrize("rows_of_101, aligned", [(1000, True), ((2**31 - 1) // 101, False)])
def test_offsets_near_the_32_bit_limit_keep_the_plain_tile(rows_of_101, aligned):
    """Planned on meta tensors (nothing runs): rows of 101 bf16 whose last offsets come
    within a tile of 2**31 (32-bit offsets still) keep the plain tile, whose masked lanes
    never take an offset past the tensor."""
    x = torch.empty(rows_of_101, 101, dtype=torch.bfloat16, device="meta")
    fd = fusion("softmax", x)
    configured(fd, tuning=ALIGNED, target=small_gpu(4))
    (params,) = fd.executor().plan([x]).params
    assert (params.mode, params.index64) == ("persistent", False), params
    assert params.align_rows == (8 if aligned else 0)
