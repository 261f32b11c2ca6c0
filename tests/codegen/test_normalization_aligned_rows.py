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

pytestmark = [
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
    # masked lanes of a partial tile compute 0/0 and inf/inf in the interpreter (never stored)
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

DT = {
    torch.float32: DataType.Float,
    torch.bfloat16: DataType.BFloat16,
    torch.float16: DataType.Half,
}
# rows of more than 64 elements loop in tiles of 32, a row a program
LOOPED = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_tile=32))
EPS = 1e-5


def _fusion(op: str, x: torch.Tensor, out_order=None) -> FusionDefinition:
    """``op`` over the last dim of 2-D ``x`` (softmax, log_softmax, rms_norm with a weight,
    layer_norm with its mean), the output pinned to ``out_order`` if given."""
    dtype = DT[x.dtype]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        xf = fd.ops.cast(t, DataType.Float)

        def bc(v):
            return fd.ops.broadcast_in_dim(v, shape=t.shape(), broadcast_dims=[0])

        if op in ("softmax", "log_softmax"):
            z = fd.ops.sub(xf, bc(fd.ops.max(xf, dims=[1])))
            e = fd.ops.exp(z)
            s = fd.ops.sum(e, dims=[1])
            y = fd.ops.div(e, bc(s)) if op == "softmax" else fd.ops.sub(z, bc(fd.ops.log(s)))
            outs = [y]
        elif op == "rms_norm":
            w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
            ms = fd.ops.div(fd.ops.sum(fd.ops.mul(xf, xf), dims=[1]), fd.ops.size(t, 1))
            r = fd.ops.rsqrt(fd.ops.add(ms, fd.define_scalar(EPS, dtype=DataType.Double)))
            wb = fd.ops.broadcast_in_dim(w, shape=t.shape(), broadcast_dims=[1])
            outs = [fd.ops.mul(fd.ops.mul(xf, bc(r)), wb)]
        else:  # layer_norm: Welford's pass stays plain, the store pass is aligned
            var, mean = fd.ops.var_mean(xf, dims=[1], correction=0)
            rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(EPS, dtype=DataType.Double)))
            outs = [fd.ops.mul(fd.ops.sub(xf, bc(mean)), bc(rstd)), mean]
        fd.add_output(fd.ops.cast(outs[0], dtype), stride_order=out_order)
        for o in outs[1:]:
            fd.add_output(o)
    return fd


def _expected(op: str, x: torch.Tensor, w: torch.Tensor | None) -> list[torch.Tensor]:
    xf = x.float()
    if op == "softmax":
        return [torch.softmax(xf, 1).to(x.dtype)]
    if op == "log_softmax":
        return [torch.log_softmax(xf, 1).to(x.dtype)]
    if op == "rms_norm":
        r = torch.rsqrt((xf * xf).mean(1, keepdim=True) + EPS)
        return [(xf * r * w.float()).to(x.dtype)]
    var, mean = torch.var_mean(xf, 1, correction=0)
    return [((xf - mean[:, None]) * torch.rsqrt(var[:, None] + EPS)).to(x.dtype), mean]


def _rows(kind: str, n: int, dtype) -> torch.Tensor:
    """6 rows of ``n``: contiguous; sliced (start 3 of rows of n + 5: a base offset);
    padded (rows of n inside rows of n + 16, each starting aligned)."""
    g = torch.Generator().manual_seed(n)
    if kind == "contiguous":
        return (3 * torch.randn(6, n, generator=g)).to(dtype)
    if kind == "sliced":
        return (3 * torch.randn(6, n + 5, generator=g)).to(dtype)[:, 3 : 3 + n]
    return (3 * torch.randn(6, n + 16, generator=g)).to(dtype)[:, :n]


def _run(op, x, out_order=None, tuning=LOOPED):
    fd = _fusion(op, x, out_order)
    configured(fd, tuning=tuning, target=small_gpu(4))
    w = (torch.rand(x.shape[1], generator=torch.Generator().manual_seed(1)) + 0.5).to(x.dtype)
    inputs = [x, w] if op == "rms_norm" else [x]
    outs = fd.execute(inputs)
    tol = dict(atol=2e-5, rtol=2e-5) if x.dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    for got, want in zip(outs, _expected(op, x, w)):
        torch.testing.assert_close(got.float(), want.float(), **tol)
    (params,) = schedules(fd)
    assert (params.mode, params.template, params.block_x) == ("looped", "inner", 1), params
    return fd, params, outs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "sliced", "padded"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "rms_norm", "layer_norm"])
@pytest.mark.parametrize("n", [101, 97 + 32 * 3, 70])
def test_misaligned_rows_match_torch(op, kind, n, dtype):
    """Rows whose boundaries fall anywhere in a tile: a head shorter than the tail's
    second tile (n=70 of tiles of 32), a tail that needs its second masked tile (the
    first one holds the head), and rows shorter than a whole tile after the head."""
    x = _rows(kind, n, dtype)
    _, params, _ = _run(op, x)
    assert params.align_rows == 16 // x.element_size()


@pytest.mark.parametrize("op", ["softmax", "rms_norm"])
def test_an_output_whose_rows_meet_other_boundaries_runs_the_plain_loop(op):
    """The input's rows start at 3 past a boundary, the output's (contiguous, of 101) at
    row * 101: their heads differ in most rows, where the kernel takes the plain loop."""
    x = _rows("sliced", 101, torch.bfloat16)
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
    x = _rows("contiguous", 101, torch.bfloat16)
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
    fd = _fusion(op, x)
    configured(fd, tuning=tuning, target=small_gpu(4))
    fd.execute([x])
    (params,) = schedules(fd)
    assert params.mode == "looped" and params.align_rows == 16 // x.element_size()
    (art,) = compile_last_run(fd.executor())
    assert "ld.global.v4" in art.ptx and "st.global.v4" in art.ptx
    fd = _fusion(op, x)
    off = tuning.with_fields(normalization=dict(align_row_bytes=0))
    configured(fd, tuning=off, target=small_gpu(4))
    fd.execute([x])
    (art,) = compile_last_run(fd.executor())
    assert "ld.global.v4" not in art.ptx and "st.global.v4" not in art.ptx


def test_row_accesses_leave_out_what_stays_in_place():
    """A layer norm's weight (stride 0 along the rows) and per-row results are not row
    accesses; the input and the output are."""
    x = _rows("contiguous", 101, torch.bfloat16)
    fd, params, _ = _run("rms_norm", x)
    rows = nm.row_accesses(len(params.unit_strides), params)
    assert len(rows) == 2  # x and the output, not the weight


def test_a_bf16_row_stored_in_fp32_aligns_for_the_narrower_access():
    """bf16 rows of 101 in, their softmax stored in fp32: V is 8 elements (16 bytes of the
    bf16 rows, 32 of the fp32 ones), and the values match torch."""
    x = _rows("contiguous", 101, torch.bfloat16)
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
