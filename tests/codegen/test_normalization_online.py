"""Looped normalization kernels: softmax's online max and sum (one reduction pass, then the
store pass) over rows (inner template) and strided columns (outer template), and layer
norm looping over strided columns. Small shapes on the interpreter, with tuning variants
of the tile limits so that rows do not fit one tile; values against torch, -inf, NaN and +inf
entries included; every kernel compiled for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers import normalization as nm
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu

# masked lanes and the special rows compute inf - inf in the interpreter (as torch does)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DT = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}
TOL = {torch.float32: dict(atol=2e-5, rtol=2e-5), torch.bfloat16: dict(atol=2e-2, rtol=2e-2)}
LOOP = "for r0 in range(0, NR, BLOCK_R):"


def looped(fd: FusionDefinition) -> FusionDefinition:
    """``fd`` planned so that rows of more than 64 elements do not fit a tile and loops
    take several chunks (the last one partial for the shapes below), on one
    multiprocessor that one program fills (``loop_min_blocks`` 1), so any grid does."""
    tuning = DEFAULT.with_fields(
        normalization=dict(max_tile=64, loop_tile=16, loop_outer_tile=512, loop_min_blocks=1)
    )
    return configured(fd, tuning=tuning, target=small_gpu(1))


def rows_with_specials(
    n_rows: int, n: int, dtype, layout: str, specials: bool = True
) -> torch.Tensor:
    """``[n_rows, n]``: row 0 starts with -inf entries (the running max starts at -inf),
    row 1 is all -inf, row 2 holds a NaN, row 3 a +inf, row 4 -inf at its end; the
    rest random. ``layout``: "row" (row-major) or "col" (column-major)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n_rows, n, generator=g) * 3
    if specials:
        x[0, : n // 2 + 3] = float("-inf")
        x[1] = float("-inf")
        x[2, n // 3] = float("nan")
        x[3, n - 5] = float("inf")
        x[4, -7:] = float("-inf")
    x = x.to(dtype)
    return x if layout == "row" else x.t().contiguous().t()


def softmax_fusion(op: str, x_in: torch.Tensor, per_row: bool = False) -> FusionDefinition:
    """softmax or log_softmax over the last dim, in fp32, cast back; ``per_row`` also
    returns the row max and the row sum of exponentials."""
    with FusionDefinition() as fd:
        x = fd.from_pytorch(x_in)
        xf = fd.ops.cast(x, DataType.Float)
        m = fd.ops.max(xf, dims=[1])
        z = fd.ops.sub(xf, fd.ops.broadcast_in_dim(m, shape=x.shape(), broadcast_dims=[0]))
        e = fd.ops.exp(z)
        s = fd.ops.sum(e, dims=[1])
        sb = fd.ops.broadcast_in_dim(s, shape=x.shape(), broadcast_dims=[0])
        y = fd.ops.div(e, sb) if op == "softmax" else fd.ops.sub(z, fd.ops.log(sb))
        fd.add_output(fd.ops.cast(y, DT[x_in.dtype]))
        if per_row:
            fd.add_output(m)
            fd.add_output(s)
    return fd


def reference(op: str, x: torch.Tensor) -> torch.Tensor:
    f = torch.softmax if op == "softmax" else torch.log_softmax
    return f(x.float(), 1).to(x.dtype)


def the_schedule(fd):
    (params,) = schedules(fd)
    return params


def compiles(fd) -> None:
    (art,) = compile_last_run(fd.executor())
    assert art.ptx and art.num_warps == the_schedule(fd).num_warps


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("layout,template", [("row", "inner"), ("col", "outer")])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_online_softmax_matches_torch_in_two_loops(op, layout, template, dtype):
    x = rows_with_specials(40, 150, dtype, layout)
    fd = looped(softmax_fusion(op, x))
    (y,) = fd.execute([x])
    torch.testing.assert_close(y.float(), reference(op, x).float(), equal_nan=True, **TOL[dtype])
    assert y[1].isnan().all() and y[2].isnan().all() and y[3].isnan().all()
    assert not y[[0, 4, 5]].isnan().any()
    params = the_schedule(fd)
    assert (params.mode, params.template, params.passes) == ("looped", template, 1)
    assert params.block_r < 150
    # the max and the sum of exponentials share the first loop; the second stores
    assert fd.last_triton_code().count(LOOP) == 2
    compiles(fd)


@pytest.mark.parametrize("layout", ["row", "col"])
def test_online_row_max_and_sum_are_stored_as_torch_computes_them(layout):
    """The per-row outputs come from the online pass: a row of -inf alone has max -inf and
    a NaN sum (torch sums exp(-inf - -inf)); a NaN gives NaN; a +inf gives an inf max and
    a NaN sum."""
    x = rows_with_specials(40, 150, torch.float32, layout)
    fd = looped(softmax_fusion("softmax", x, per_row=True))
    y, m, s = fd.execute([x])
    rm = x.amax(1)
    rs = torch.exp(x - rm[:, None]).sum(1)
    torch.testing.assert_close(m, rm, equal_nan=True)
    torch.testing.assert_close(s, rs, equal_nan=True)
    assert m[1] == float("-inf") and s[1].isnan() and s[3].isnan()
    assert the_schedule(fd).passes == 1


def test_online_softmax_through_casts_and_a_non_matching_pair():
    """exp reached through casts of the difference, the max of a cast input: still one
    pass. A sum of exp(x - max(|x|)) is no softmax: two passes, then the store."""
    x = rows_with_specials(40, 150, torch.bfloat16, "row", specials=False)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        m = fd.ops.max(t, dims=[1])  # max of the bf16 input
        xf = fd.ops.cast(t, DataType.Float)
        z = fd.ops.sub(xf, fd.ops.broadcast_in_dim(m, shape=t.shape(), broadcast_dims=[0]))
        e = fd.ops.exp(fd.ops.cast(fd.ops.cast(z, DataType.BFloat16), DataType.Float))
        s = fd.ops.sum(e, dims=[1])
        fd.add_output(
            fd.ops.div(e, fd.ops.broadcast_in_dim(s, shape=t.shape(), broadcast_dims=[0]))
        )
    (y,) = looped(fd).execute([x])
    torch.testing.assert_close(y, torch.softmax(x.float(), 1), atol=2e-2, rtol=2e-2)
    assert the_schedule(fd).passes == 1 and fd.last_triton_code().count(LOOP) == 2

    x = x.float()
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        m = fd.ops.max(fd.ops.abs(t), dims=[1])
        z = fd.ops.sub(t, fd.ops.broadcast_in_dim(m, shape=t.shape(), broadcast_dims=[0]))
        s = fd.ops.sum(fd.ops.exp(z), dims=[1])
        fd.add_output(
            fd.ops.div(
                fd.ops.exp(z), fd.ops.broadcast_in_dim(s, shape=t.shape(), broadcast_dims=[0])
            )
        )
    (y,) = looped(fd).execute([x])
    ez = torch.exp(x - x.abs().amax(1, keepdim=True))
    torch.testing.assert_close(y, ez / ez.sum(1, keepdim=True))
    params = the_schedule(fd)
    assert (params.mode, params.passes) == ("looped", 2)
    assert fd.last_triton_code().count(LOOP) == 3
    compiles(fd)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_layer_norm_loops_over_strided_columns(dtype):
    """var_mean (one welford pass), then the store pass, one program per column block."""
    x = rows_with_specials(40, 150, dtype, "col", specials=False)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        xf = fd.ops.cast(t, DataType.Float)
        var, mean = fd.ops.var_mean(xf, dims=[1], correction=0)
        rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))
        y = fd.ops.mul(
            fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape=t.shape(), broadcast_dims=[0])),
            fd.ops.broadcast_in_dim(rstd, shape=t.shape(), broadcast_dims=[0]),
        )
        fd.add_output(fd.ops.cast(y, DT[dtype]))
        fd.add_output(mean)
        fd.add_output(rstd)
    y, mean, rstd = looped(fd).execute([x])
    xf = x.float()
    rv, rm = torch.var_mean(xf, 1, correction=0)
    torch.testing.assert_close(mean, rm, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rstd, torch.rsqrt(rv + 1e-5), atol=1e-5, rtol=1e-5)
    want = (xf - rm[:, None]) * torch.rsqrt(rv + 1e-5)[:, None]
    torch.testing.assert_close(y.float(), want, **TOL[dtype])
    assert y.stride() == x.stride()
    params = the_schedule(fd)
    assert (params.mode, params.template, params.passes) == ("looped", "outer", 1)
    assert fd.last_triton_code().count(LOOP) == 2
    compiles(fd)


@pytest.mark.parametrize("few", [False, True], ids=["blocks", "few-blocks"])
@pytest.mark.parametrize("dtype,block_x", [(torch.float32, 64), (torch.bfloat16, 128)])
def test_outer_looped_tile_spans_256_bytes_and_compiles_without_spills(dtype, block_x, few):
    """The real outer looped tile (``loop_outer_tile`` elements, 256-byte rows, 8 warps), or,
    with fewer than ``loop_few_blocks`` column blocks per multiprocessor, more warps (bf16:
    twice the elements at 16 warps; fp32: the same tile at 32 warps): no register spills
    on sm_90 with the online softmax's two accumulators."""
    t = nm.DEFAULT_TUNING
    blocks = t.loop_min_blocks if few else t.loop_few_blocks
    assert blocks < t.loop_few_blocks or not few
    x = rows_with_specials(block_x * blocks, 300, dtype, "col")
    fd = configured(
        softmax_fusion("softmax", x),
        target=small_gpu(1),
        tuning=DEFAULT.with_fields(normalization=dict(max_tile=64)),
    )
    (y,) = fd.execute([x])
    torch.testing.assert_close(
        y.float(), reference("softmax", x).float(), equal_nan=True, **TOL[dtype]
    )
    params = the_schedule(fd)
    tile, warps = {
        (False, torch.float32): (1, 1),
        (False, torch.bfloat16): (1, 1),
        (True, torch.float32): (1, 4),
        (True, torch.bfloat16): (2, 2),
    }[few, dtype]
    assert (params.mode, params.template) == ("looped", "outer")
    assert params.block_x == block_x == t.loop_row_bytes // x.element_size()
    assert params.block_x * params.block_r == t.loop_outer_tile * tile
    assert params.num_warps == t.loop_outer_warps * warps == 8 * warps
    (art,) = compile_last_run(fd.executor())
    assert art.local_bytes == 0, art.resources


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_the_half_alternative_loops_vocabulary_rows_in_4096_at_16_warps(dtype):
    """The measured choice's half direction (``NormalizationTuning.alternatives[1]``) on
    softmax rows of 50257 (a vocabulary) that the rule loops in tiles of 16384 at 32
    warps (on a device whose L2 the rows in flight overflow): tiles of 4096 at 16 warps,
    torch's values, -inf and NaN rows included, and an sm_90 kernel of at most 64
    registers a thread (bf16: no local memory; fp32 keeps the 8-byte stack frame of the
    rule's kernel)."""
    x = rows_with_specials(6, 50257, dtype, "row")
    # the measured choice off: on a GPU it would time the other alternatives against it
    tuning = DEFAULT.with_fields(
        normalization=dict(nm.DEFAULT_TUNING.alternatives[1]), measure=dict(enabled=False)
    )
    target = small_gpu(1, l2_bytes=1 << 20)
    fd = configured(softmax_fusion("softmax", x), tuning=tuning, target=target)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, reference("softmax", x), equal_nan=True, **TOL[dtype])
    params = the_schedule(fd)
    assert (params.mode, params.block_r, params.num_warps) == ("looped", 4096, 16), params
    (art,) = compile_last_run(fd.executor())
    assert art.resources["REG"] <= 64 and art.local_bytes <= (8 if dtype == torch.float32 else 0)
