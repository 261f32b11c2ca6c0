"""The normalization scheduler: softmax, log_softmax, layer norm, RMS norm and var_mean +
normalize, over the last and the first dim, for every memory order of 2-D and 3-D inputs,
in fp32 and bf16, against torch (all 160 cases, in CI too). Asserts numerics, output
strides, one kernel and its family (decided by the input's layout), the modes for rows
too long for one tile, and that every kernel compiles for sm_90.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers import normalization as nm
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu
from support.tensors import with_order

# masked lanes of a partial tile compute 0/0 and inf/inf in the interpreter (never stored)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

EPS = 1e-5
DT = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}
TOL = {torch.float32: dict(atol=2e-5, rtol=2e-5), torch.bfloat16: dict(atol=2e-2, rtol=2e-2)}
# rows of more than 64 elements do not fit a tile (the modes for long rows at small sizes)
SHORT_TILE = DEFAULT.with_fields(normalization=dict(max_tile=64))


def define(op: str, x_in: torch.Tensor, dim: int) -> FusionDefinition:
    """The fusion for ``op``, its input declared with ``x_in``'s layout (from_pytorch)."""
    rank, dtype = x_in.ndim, x_in.dtype
    keep = [d for d in range(rank) if d != dim]

    def bc(fd, t, like):
        return fd.ops.broadcast_in_dim(t, shape=like.shape(), broadcast_dims=keep)

    with FusionDefinition() as fd:
        x = fd.from_pytorch(x_in)
        xf = fd.ops.cast(x, DataType.Float)
        if op in ("softmax", "log_softmax"):
            m = fd.ops.max(xf, dims=[dim])
            z = fd.ops.sub(xf, bc(fd, m, x))
            e = fd.ops.exp(z)
            s = fd.ops.sum(e, dims=[dim])
            if op == "softmax":
                y = fd.ops.div(e, bc(fd, s, x))
            else:
                y = fd.ops.sub(z, bc(fd, fd.ops.log(s), x))
            fd.add_output(fd.ops.cast(y, DT[dtype]))
        elif op == "layer_norm":
            w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DT[dtype])
            b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DT[dtype])
            var, mean = fd.ops.var_mean(xf, dims=[dim], correction=0)
            rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(EPS, dtype=DataType.Double)))
            y = fd.ops.mul(fd.ops.sub(xf, bc(fd, mean, x)), bc(fd, rstd, x))
            wb = fd.ops.broadcast_in_dim(w, shape=x.shape(), broadcast_dims=[dim])
            bb = fd.ops.broadcast_in_dim(b, shape=x.shape(), broadcast_dims=[dim])
            y = fd.ops.add(fd.ops.mul(y, wb), bb)
            fd.add_output(fd.ops.cast(y, DT[dtype]))
            fd.add_output(mean)
            fd.add_output(rstd)
        elif op == "rms_norm":
            w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DT[dtype])
            ms = fd.ops.div(fd.ops.sum(fd.ops.mul(xf, xf), dims=[dim]), fd.ops.size(x, dim))
            r = fd.ops.rsqrt(fd.ops.add(ms, fd.define_scalar(EPS, dtype=DataType.Double)))
            wb = fd.ops.broadcast_in_dim(w, shape=x.shape(), broadcast_dims=[dim])
            fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.mul(xf, bc(fd, r, x)), wb), DT[dtype]))
        elif op == "var_mean":
            var, mean = fd.ops.var_mean(xf, dims=[dim], correction=1)
            y = fd.ops.div(
                fd.ops.sub(xf, bc(fd, mean, x)),
                fd.ops.sqrt(
                    fd.ops.add(bc(fd, var, x), fd.define_scalar(EPS, dtype=DataType.Double))
                ),
            )
            fd.add_output(var)
            fd.add_output(mean)
            fd.add_output(fd.ops.cast(y, DT[dtype]))
        else:
            raise ValueError(op)
    return fd


def expected(op: str, x: torch.Tensor, dim: int, params: list[torch.Tensor]):
    xf = x.float()
    if op == "softmax":
        return [torch.softmax(xf, dim).to(x.dtype)]
    if op == "log_softmax":
        return [torch.log_softmax(xf, dim).to(x.dtype)]
    view = [1] * x.ndim
    view[dim] = x.shape[dim]
    if op == "layer_norm":
        w, b = (p.float().view(view) for p in params)
        var, mean = torch.var_mean(xf, dim, correction=0)
        rstd = torch.rsqrt(var + EPS)
        y = (xf - mean.unsqueeze(dim)) * rstd.unsqueeze(dim) * w + b
        return [y.to(x.dtype), mean, rstd]
    if op == "rms_norm":
        (w,) = (p.float().view(view) for p in params)
        r = torch.rsqrt((xf * xf).mean(dim, keepdim=True) + EPS)
        return [(xf * r * w).to(x.dtype)]
    var, mean = torch.var_mean(xf, dim, correction=1)
    y = (xf - mean.unsqueeze(dim)) / torch.sqrt(var.unsqueeze(dim) + EPS)
    return [var, mean, y.to(x.dtype)]


def inputs_for(op, shape, order, dim, dtype):
    x = with_order(shape, order, dtype)
    g = torch.Generator().manual_seed(7)
    n = shape[dim]
    params = {"layer_norm": 2, "rms_norm": 1}.get(op, 0)
    extra = [(torch.rand(n, generator=g) + 0.5).to(dtype) for _ in range(params)]
    return x, extra


def expected_family(shape, order, dim) -> str:
    """Independent of analysis.canonical: the innermost non-size-1 dim in memory decides."""
    inner = [d for d in reversed(order) if shape[d] != 1]
    if inner[0] == dim:
        return "inner"
    kept_inside = any(d != dim for d in inner[: inner.index(dim)])
    kept_outside = any(d != dim for d in inner[inner.index(dim) + 1 :])
    return "outer" if kept_inside and not kept_outside else "mixed"


def run_case(op, shape, order, dim, dtype, **settings):
    """Run ``op`` and check it against torch; ``settings``: the executor's configuration
    (``tuning``, ``target``), if any."""
    x, extra = inputs_for(op, shape, order, dim, dtype)
    fd = define(op, x, dim)
    if settings:
        configured(fd, **settings)
    outs = fd.execute([x, *extra])
    want = expected(op, x, dim, extra)
    for got, ref in zip(outs, want):
        torch.testing.assert_close(got.float(), ref.float(), **TOL[dtype])
    return fd, x, outs


OPS = ["softmax", "log_softmax", "layer_norm", "rms_norm", "var_mean"]
CASES = [
    (op, shape, order, dim, dtype)
    for op in OPS
    for shape in [(37, 50), (6, 9, 20)]
    for order in itertools.permutations(range(len(shape)))
    for dim in (len(shape) - 1, 0)
    for dtype in (torch.float32, torch.bfloat16)
]


def _id(case):
    op, shape, order, dim, dtype = case
    return (
        f"{op}-{'x'.join(map(str, shape))}-mem{''.join(map(str, order))}-dim{dim}-"
        f"{str(dtype).split('.')[-1]}"
    )


@pytest.mark.parametrize("case", CASES, ids=_id)  # all 160: about 40 s on the CPU
def test_normalization_matches_torch_in_one_kernel(case):
    op, shape, order, dim, dtype = case
    fd, x, outs = run_case(op, shape, order, dim, dtype)
    segs = fd.segment([x] + inputs_for(op, shape, order, dim, dtype)[1])
    assert [s["scheduler"] for s in segs] == ["normalization"], segs
    (params,) = [p for p in schedules(fd) if p.scheduler == "normalization"]
    assert params.mode == "persistent"
    assert params.family == expected_family(shape, order, dim)
    # the full-shape output takes the input's layout (dense, same memory order)
    full = [o for o in outs if o.shape == x.shape]
    assert full and all(o.stride() == x.stride() for o in full)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_normalization_kernels_compile_for_hopper(op, order):
    dtype = torch.bfloat16
    fd, _, _ = run_case(op, (37, 50), order, 1, dtype)
    arts = compile_last_run(fd.executor())
    assert len(arts) == 1 and arts[0].ptx


def test_softmax_reads_with_16_byte_vectors_when_rows_are_contiguous():
    fd, _, _ = run_case("softmax", (64, 512), (0, 1), 1, torch.float32)
    (art,) = compile_last_run(fd.executor())
    assert "ld.global.v4" in art.ptx


def test_rows_longer_than_a_tile_loop_in_one_kernel():
    """More than a tile per contiguous row and enough rows to fill the GPU: one kernel,
    one pass per level of dependent reductions (softmax's max and sum share one), then a
    storing pass."""
    tuning = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_tile=32))
    for op in ("softmax", "layer_norm", "var_mean"):
        fd, x, _ = run_case(
            op, (6, 90), (0, 1), 1, torch.float32, tuning=tuning, target=small_gpu(4)
        )
        (params,) = schedules(fd)
        assert params.mode == "looped" and params.block_r < 90
        assert params.template == "inner"
        assert params.passes == 1
        compile_last_run(fd.executor())


def test_columns_longer_than_a_tile_loop_over_column_blocks():
    """Strided columns that do not fit the tile, one reduction pass and enough column
    blocks: one kernel walks each block twice, with 256-byte tile rows (64 fp32 columns:
    4 blocks of the 256 columns fill 2 multiprocessors ``loop_min_blocks`` = 2 times)."""
    assert nm.DEFAULT_TUNING.loop_min_blocks == 2
    for op in ("softmax", "log_softmax", "layer_norm", "rms_norm", "var_mean"):
        fd, x, _ = run_case(
            op, (40, 256), (0, 1), 0, torch.float32, tuning=SHORT_TILE, target=small_gpu(2)
        )
        (params,) = schedules(fd)
        assert (params.mode, params.template, params.passes) == ("looped", "outer", 1)
        assert params.block_x * 4 == nm.DEFAULT_TUNING.loop_row_bytes
        _, extra = inputs_for(op, (40, 256), (0, 1), 0, torch.float32)
        assert "columns of 40 elements exceed" in fd.segment([x, *extra])[0]["reason"]
        compile_last_run(fd.executor())


def _two_pass_variance(x_in: torch.Tensor) -> FusionDefinition:
    """(x - mean) / sqrt(mean((x - mean)^2) + eps) over dim 0: the second sum needs the
    first one's result (two passes)."""
    n = float(x_in.shape[0])
    with FusionDefinition() as fd:
        x = fd.from_pytorch(x_in)

        def cols(t):
            return fd.ops.broadcast_in_dim(t, shape=x.shape(), broadcast_dims=[1])

        d = fd.ops.sub(x, cols(fd.ops.div(fd.ops.sum(x, dims=[0]), fd.define_scalar(n))))
        var = fd.ops.div(fd.ops.sum(fd.ops.mul(d, d), dims=[0]), fd.define_scalar(n))
        fd.add_output(fd.ops.mul(d, cols(fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(EPS))))))
    return fd


def test_columns_longer_than_a_tile_run_outer_reductions_then_pointwise():
    """Strided columns that do not fit the tile and need two passes (or too few column
    blocks to fill the GPU): the reduction scheduler's outer kernels, then the pointwise
    kernel, and the cut says why."""
    x = with_order((40, 128), (0, 1), torch.float32)
    fd = configured(_two_pass_variance(x), tuning=SHORT_TILE, target=small_gpu(4))
    (y,) = fd.execute([x])
    xc = x - x.mean(0)
    torch.testing.assert_close(y, xc * torch.rsqrt((xc * xc).mean(0) + EPS))
    assert [p.scheduler for p in schedules(fd)] == ["reduction", "reduction", "pointwise"]
    assert all(p.family == "outer" for p in schedules(fd)[:2])
    segs = fd.segment([x])
    assert all(
        "columns of 40 elements exceed" in s["reason"] and "need 2 passes" in s["reason"]
        for s in segs
    )

    def columns(sm_count, tuning=SHORT_TILE):
        """A softmax over the 40 strided rows of [40, 128] fp32 planned for ``sm_count``
        multiprocessors: the executor's schedules and the cut's reasons."""
        fd, x, _ = run_case(
            "softmax",
            (40, 128),
            (0, 1),
            0,
            torch.float32,
            tuning=tuning,
            target=small_gpu(sm_count),
        )
        return schedules(fd), [s["reason"] for s in fd.segment([x])]

    # 2 blocks of 256 bytes cannot fill 2 multiprocessors twice: rows of a line (128
    # bytes), 4 blocks
    (params,), _ = columns(2)
    assert (params.mode, params.block_x) == ("looped", 32)
    # 4 column blocks of a line cannot fill 4 twice, and narrower rows are not looped
    # (``loop_min_row_bytes``: the segmented plan read 2x faster than 64-byte rows)
    scheds, reasons = columns(4)
    # softmax's max and sum: one reduction kernel (a running pair), then the pointwise one
    assert [p.scheduler for p in scheds] == ["reduction", "pointwise"]
    assert scheds[0].family == "outer"
    assert all("4 column blocks cannot fill 4 multiprocessors 2 times over" in r for r in reasons)
    assert "softmax's max and sum in one pass" in reasons[0]
    # ``loop_min_blocks`` = 1: 4 blocks of a line fill 4 multiprocessors once, looped
    once = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_min_blocks=1))
    (params,), _ = columns(4, once)
    assert (params.mode, params.block_x) == ("looped", 32)
    scheds, reasons = columns(8, once)
    assert [p.scheduler for p in scheds] == ["reduction", "pointwise"]
    assert "4 column blocks cannot fill 8 multiprocessors:" in reasons[0]
    # rows of a sector may still be looped where the tuning allows them
    narrow = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_min_row_bytes=32))
    fd, x, _ = run_case(
        "softmax", (40, 128), (0, 1), 0, torch.float32, tuning=narrow, target=small_gpu(8)
    )
    (params,) = schedules(fd)
    assert (params.mode, params.block_x) == ("looped", 8)


def test_outer_tiles_narrow_to_one_sector_when_that_fits_the_column():
    fd, x, _ = run_case("layer_norm", (16, 600), (1, 0), 1, torch.float32)
    (params,) = schedules(fd)
    assert params.mode == "persistent" and params.template == "outer"
    assert params.block_x * 4 == nm.DEFAULT_TUNING.row_bytes
    tuning = DEFAULT.with_fields(normalization=dict(max_tile=8 * 1024))
    fd, x, _ = run_case("layer_norm", (16, 600), (1, 0), 1, torch.float32, tuning=tuning)
    (params,) = schedules(fd)
    assert params.mode == "persistent" and params.block_x * 4 == nm.DEFAULT_TUNING.min_row_bytes


@pytest.mark.parametrize(
    "dtype, n0s",
    [(torch.float32, (16, 24, 15, 20)), (torch.bfloat16, (32, 48, 40, 36, 33))],
    ids=str,
)
def test_outer_tiles_take_one_sector_rows_only_where_rows_start_on_sectors(dtype, n0s):
    """Rows of 32 bytes hold a whole column in the persistent tile only where each row
    starts on a 32-byte boundary (its stride along R, ``n0`` elements, a multiple of 32
    bytes): else each row reads two sectors (r3_088's fp32 stride of 2157 ran 1.36x slower
    than the segmented plan), and the tile rows stay ``row_bytes`` wide, too long to hold."""
    item, t = dtype.itemsize, nm.DEFAULT_TUNING
    # a tile that holds the 600 rows (1024 padded) in one-sector rows, not in wider ones
    tuning = DEFAULT.with_fields(normalization=dict(max_tile=t.min_row_bytes // item * 1024))
    for n0 in n0s:
        sector_rows = n0 * item % t.min_row_bytes == 0
        fd, x, _ = run_case(
            "layer_norm", (n0, 600), (1, 0), 1, dtype, tuning=tuning, target=small_gpu(1)
        )
        first = schedules(fd)[0]
        persistent = first.scheduler == "normalization" and first.mode == "persistent"
        assert persistent == sector_rows, (n0, first)
        if sector_rows:
            assert first.block_x * item == t.min_row_bytes
        else:
            assert first.block_x * item >= t.row_bytes or first.block_x >= n0


@pytest.mark.parametrize("l2_kb, looped", [(1024, True), (80, True), (79, False), (16, False)])
def test_outer_looped_columns_fit_half_of_l2_in_flight(l2_kb, looped):
    """Outer looped programs re-read their column block in the store pass; where the blocks
    in flight (4 of 64 x 40 fp32: 40 KB) pass half of L2, that read goes to DRAM and the
    segmented plan, which streams, is planned instead and says why."""
    target = small_gpu(2, l2_bytes=l2_kb << 10)
    fd, x, _ = run_case(
        "softmax", (40, 256), (0, 1), 0, torch.float32, tuning=SHORT_TILE, target=target
    )
    kinds = [p.scheduler for p in schedules(fd)]
    if looped:
        assert kinds == ["normalization"] and schedules(fd)[0].mode == "looped"
    else:
        assert kinds == ["reduction", "pointwise"]
        assert (
            "the column blocks in flight hold 0 MB, more than half" in fd.segment([x])[0]["reason"]
        )
    off = SHORT_TILE.with_fields(normalization=dict(loop_outer_l2=0))
    fd, x, _ = run_case("softmax", (40, 256), (0, 1), 0, torch.float32, tuning=off, target=target)
    assert schedules(fd)[0].mode == "looped"


@pytest.mark.parametrize(
    "op, dtype, segmented",
    [
        ("softmax", torch.float32, True),
        ("layer_norm", torch.bfloat16, True),
        ("rms_norm", torch.bfloat16, True),
        # the online max and sum over 2-byte loads: the split reduction is the slower plan
        ("softmax", torch.bfloat16, False),
        ("log_softmax", torch.bfloat16, False),
    ],
)
def test_outer_looped_columns_past_l2_by_op_and_width(op, dtype, segmented):
    """Past half of L2 (16 KB of it here), the segmented plan, except softmax's running
    max and sum over 2-byte loads (``_past_l2``); the results match torch either way."""
    shape = (40, 512 // dtype.itemsize)  # 4 column blocks of 256 bytes
    fd, _, _ = run_case(
        op, shape, (0, 1), 0, dtype, tuning=SHORT_TILE, target=small_gpu(2, l2_bytes=16 << 10)
    )
    kinds = [p.scheduler for p in schedules(fd)]
    assert (kinds[0] == "reduction") == segmented, kinds
    if not segmented:
        assert kinds == ["normalization"] and schedules(fd)[0].mode == "looped"


def test_few_long_rows_fall_back_to_split_reductions():
    """Rows that do not fit a tile and too few of them to fill the GPU: split reduction
    kernels (softmax's max and sum in one, a layer norm's Welford in one), then the
    pointwise kernel; the decision is reported."""
    for op in ("softmax", "layer_norm"):
        x, extra = inputs_for(op, (2, 10000), (0, 1), 1, torch.float32)
        fd, x, _ = run_case(
            op, (2, 10000), (0, 1), 1, torch.float32, tuning=SHORT_TILE, target=small_gpu(4)
        )
        scheds = schedules(fd)
        kinds = [p.scheduler for p in scheds]  # (layer norm: mean and rstd stored apart)
        assert kinds[0] == "reduction" and set(kinds[1:]) == {"pointwise"}, kinds
        assert scheds[0].split > 1
        segs = fd.segment([x, *extra])
        assert [s["scheduler"] for s in segs] == kinds
        assert all(
            "instead of one normalization kernel" in s["reason"] and "split" in s["reason"]
            for s in segs
        )


def test_repeated_execution_replays_the_same_kernel():
    fd = define("softmax", with_order((33, 70), (1, 0), torch.float32), 1)
    for seed in range(3):
        x = with_order((33, 70), (1, 0), torch.float32, seed)
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, torch.softmax(x, 1))


def test_a_reduction_used_in_other_coordinates_runs_before_the_group():
    """sum over dim 1 used both to normalize rows and, permuted, elsewhere: the group
    stores it for the other kernel; the values match torch."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.ops.sum(x, dims=[1])
        y = fd.ops.div(x, fd.ops.broadcast_in_dim(s, shape=x.shape(), broadcast_dims=[0]))
        fd.add_output(y)
        fd.add_output(fd.ops.mul(s, s))
        fd.add_output(fd.ops.sum(y, dims=[0]))
    x = torch.rand(20, 30) + 0.1
    y, s2, col = fd.execute([x])
    torch.testing.assert_close(y, x / x.sum(1, keepdim=True))
    torch.testing.assert_close(s2, x.sum(1) ** 2)
    torch.testing.assert_close(col, (x / x.sum(1, keepdim=True)).sum(0))
    # the column sum of y reads y's rows in the group's kernel: a cross reduction
    segments = fd.segment([x])
    assert [s["scheduler"] for s in segments] == ["normalization"]
    assert "sum[0] over the kept dims" in segments[0]["reason"]


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_layer_norm_backward(order):
    """dx needs two row sums of its own rows; dw and db reduce the other dim of the same
    coordinates (cross reductions of the same kernel: dy and x read once). Checked against
    torch autograd."""
    n, d = 24, 40
    x = with_order((n, d), order, torch.float32, seed=1)
    dy = with_order((n, d), order, torch.float32, seed=2)
    w = torch.rand(d) + 0.5
    mean = x.mean(1)
    rstd = torch.rsqrt(x.var(1, correction=0) + EPS)
    with FusionDefinition() as fd:
        tdy, tx = fd.from_pytorch(dy), fd.from_pytorch(x)
        tm, tr, tw = fd.from_pytorch(mean), fd.from_pytorch(rstd), fd.from_pytorch(w)

        def rows(t):
            return fd.ops.broadcast_in_dim(t, shape=tx.shape(), broadcast_dims=[0])

        xhat = fd.ops.mul(fd.ops.sub(tx, rows(tm)), rows(tr))
        g = fd.ops.mul(tdy, fd.ops.broadcast_in_dim(tw, shape=tx.shape(), broadcast_dims=[1]))
        s1 = fd.ops.sum(g, dims=[1])
        s2 = fd.ops.sum(fd.ops.mul(g, xhat), dims=[1])
        inner = fd.ops.sub(
            fd.ops.sub(fd.ops.mul(g, fd.define_scalar(float(d))), rows(s1)),
            fd.ops.mul(xhat, rows(s2)),
        )
        fd.add_output(fd.ops.mul(fd.ops.div(rows(tr), fd.define_scalar(float(d))), inner))
        fd.add_output(fd.ops.sum(fd.ops.mul(tdy, xhat), dims=[0]))
        fd.add_output(fd.ops.sum(tdy, dims=[0]))
    dx, dw, db = fd.execute([dy, x, mean, rstd, w])
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    br = torch.zeros(d, requires_grad=True)
    torch.nn.functional.layer_norm(xr, (d,), wr, br, eps=EPS).backward(dy)
    torch.testing.assert_close(dx, xr.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(dw, wr.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(db, br.grad, atol=1e-4, rtol=1e-4)
    assert dx.stride() == x.stride()
    segments = fd.segment([dy, x, mean, rstd, w])
    # dw and db are the group's cross reductions: one kernel reads dy and x for all three
    assert [s["scheduler"] for s in segments] == ["normalization"]
    assert "sum[0], sum[0] over the kept dims" in segments[0]["reason"]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("dims", [[2], [0], [0, 2], [1]])
def test_reduction_with_a_per_row_epilogue_runs_as_one_kernel(order, dims):
    """var_mean's var (M2 / (n - 1)) and a mean (sum / n) are stored by the reducing kernel
    when the rows fit a tile; the values and the layout of the outputs match torch. The
    welford and the sum reduce the same rows of ``x``: one kernel computes both."""
    x = with_order((6, 5, 40), order, torch.float32, seed=3)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        var, mean = fd.ops.var_mean(t, dims=dims, correction=1)
        fd.add_output(var)
        fd.add_output(mean)
        n = 1
        for d in dims:
            n *= x.shape[d]
        fd.add_output(fd.ops.div(fd.ops.sum(t, dims=dims), fd.define_scalar(float(n))))
    var, mean, mean2 = fd.execute([x])
    rv, rm = torch.var_mean(x, dims, correction=1)
    torch.testing.assert_close(var, rv)
    torch.testing.assert_close(mean, rm)
    torch.testing.assert_close(mean2, rm)
    segs = fd.segment([x])
    assert [s["scheduler"] for s in segs] == ["normalization"], segs
    assert "same rows" in segs[0]["reason"]
    assert sorted(op for op in segs[0]["ops"] if op in ("welford", "sum")) == [
        "sum",
        "welford",
    ]  # the kernel lists the reductions it runs


def test_an_epilogue_after_a_large_outer_reduction_runs_in_the_reduction_kernel():
    """Columns too long for the small outer tile: the reduction scheduler's kernel, which
    computes the epilogue (a mean: sum / 600) at its stores (the decision names why)."""
    x = torch.randn(600, 64)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.div(fd.ops.sum(t, dims=[0]), fd.define_scalar(600.0)))
    (m,) = fd.execute([x])
    torch.testing.assert_close(m, x.mean(0))
    segs = fd.segment([x])
    assert [s["scheduler"] for s in segs] == ["reduction"]
    assert "per-row epilogue stored with its results" in segs[0]["reason"]
    assert "instead of one normalization kernel" in segs[0]["reason"]


@pytest.mark.parametrize("pinned", [False, True], ids=["inferred", "pinned-row-major"])
def test_softmax_of_an_expanded_input(pinned):
    """Softmax over dim 0 of a column expanded along dim 1 (stride 0). The output keeps the
    expanded dim (stride 0, as nvFuser's outputs do, pinned or not): the kernel computes
    the column once, in one program, not once per repeat."""
    col = torch.randn(37, 1, device=torch.get_default_device())
    x = col.expand(37, 300)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        m = fd.ops.max(t, dims=[0], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(t, m))
        s = fd.ops.sum(e, dims=[0], keepdim=True)
        y = fd.ops.div(e, s)
        fd.add_output(y, stride_order=[1, 0]) if pinned else fd.add_output(y)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.softmax(x, 0))
    (params,) = schedules(fd)
    assert out.stride() == (1, 0)  # pinned too: nvFuser's outputs keep expanded dims
    assert params.x_groups == () and fd.executor().last_run.launches[0].grid == (1,)
    compile_last_run(fd.executor())


def _softmax_over_rows(x):
    """Softmax over dim 0 of ``x`` on a device of 8 SMs, checked against torch: its
    definition and the outer persistent plan it took."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        m = fd.ops.max(t, dims=[0], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(t, m))
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, dims=[0], keepdim=True)))
    configured(fd, target=small_gpu(8))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.softmax(x, 0))
    (params,) = schedules(fd)
    assert params.template == "outer" and params.mode == "persistent", params
    return fd, params


def test_short_columns_widen_the_outer_tile():
    """Softmax over 7 strided rows (dim 0 of a row-major [7, 20000]): the outer persistent
    tile's rows widen past 64 bytes until it holds ``short_column_tile`` elements (an
    [8, 16] tile of one warp ran at 41% of torch.compile), while the column blocks still
    make ``short_column_waves`` programs per multiprocessor."""
    x = torch.randn(7, 20000, device=torch.get_default_device())
    fd, params = _softmax_over_rows(x)
    t = DEFAULT.normalization
    assert params.block_r == 8 and params.block_x * params.block_r == t.short_column_tile
    assert -(-20000 // params.block_x) >= t.short_column_waves * 8
    compile_last_run(fd.executor())


@pytest.mark.parametrize("n", [20001, 20002])
def test_misaligned_short_columns_widen_twice_as_far(n):
    """The same softmax over 7 rows that are not 16 bytes apart (20001 or 20002 fp32): the
    columns load an element (or two) at a time, and the tile widens to
    ``scalar_column_tile`` elements (a layer norm over 61 rows 694173 apart: 2271 -> 2600
    GB/s on the H100); values against torch."""
    x = torch.randn(7, n, device=torch.get_default_device())
    fd, params = _softmax_over_rows(x)
    t = DEFAULT.normalization
    assert params.block_r == 8 and params.block_x * params.block_r == t.scalar_column_tile
    compile_last_run(fd.executor())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_short_stride1_kept_group_spans_two_groups(dtype):
    """log_softmax over dim 0 of a [2, 3, 5003] tensor whose dim 1 (3) is innermost: the
    outer tile's columns span dims 1 and 2 (``x_span=2``, index % 3 and // 3), not 3 of
    4 lanes per program (the random suite's r1_103: 50257 one-warp programs, 27% of
    eager)."""
    x = with_order((2, 3, 5003), (2, 0, 1), dtype).to(torch.get_default_device())
    assert x.stride() == (3, 1, 6)
    with FusionDefinition() as fd:
        t = fd.ops.cast(fd.from_pytorch(x), DataType.Float)
        m = fd.ops.max(t, dims=[0], keepdim=True)
        sh = fd.ops.sub(t, m)
        lse = fd.ops.log(fd.ops.sum(fd.ops.exp(sh), dims=[0], keepdim=True))
        fd.add_output(
            fd.ops.cast(
                fd.ops.sub(sh, lse),
                DataType.BFloat16 if dtype == torch.bfloat16 else DataType.Float,
            )
        )
    configured(fd, target=small_gpu(8))
    (out,) = fd.execute([x])
    ref = torch.log_softmax(x.float(), 0).to(dtype)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol)
    (params,) = schedules(fd)
    assert params.template == "outer" and params.x_span == 2 and params.block_x >= 64, params
    compile_last_run(fd.executor())


def test_looped_rows_keep_their_second_read_in_l2():
    """An inner looped RMS norm (bf16 rows of 40000) whose rows in flight at 16 warps would
    overflow half of L2 takes ``loop_l2_warps`` warps (fewer programs resident): values
    against torch, and the kernel compiles for sm_90 at 32 warps."""
    x = torch.randn(8, 40000, device=torch.get_default_device()).to(torch.bfloat16)
    with FusionDefinition() as fd:
        t = fd.ops.cast(fd.from_pytorch(x), DataType.Float)
        ss = fd.ops.sum(fd.ops.mul(t, t), dims=[1], keepdim=True)
        fd.add_output(fd.ops.cast(fd.ops.mul(t, fd.ops.rsqrt(ss)), DataType.BFloat16))
    # the rule's plan: on a GPU the measured choice would time it against others
    rule_only = DEFAULT.with_fields(measure=dict(enabled=False))
    configured(fd, target=small_gpu(4, l2_bytes=1 << 20), tuning=rule_only)
    (out,) = fd.execute([x])
    ref = (x.float() * torch.rsqrt((x.float() ** 2).sum(1, keepdim=True))).bfloat16()
    torch.testing.assert_close(out.float(), ref.float(), rtol=2e-2, atol=1e-2)
    (params,) = schedules(fd)
    assert params.mode == "looped" and params.num_warps == DEFAULT.normalization.loop_l2_warps
    (art,) = compile_last_run(fd.executor())
    assert art.num_warps == 32 and art.resources["LOCAL"] == 0


@pytest.mark.parametrize("op", ["take_along_axis", "gather"])
@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_a_read_indexed_by_the_groups_own_result_runs_after_it(op, order, dtype):
    """A row's max of an index tensor picks the element of ``x`` the row is then scaled
    by (generated program 178065: a gather indexed by a keepdim prod): the index is the
    group's own result, which one normalization kernel would need before its loads. The
    scheduler declines, saying why; the reduction kernel, then a pointwise kernel, match
    torch in every memory order."""
    x = with_order([6, 10], order, dtype)
    i = (with_order([6, 10], order, torch.float32, seed=1) * 7).long().remainder(10)
    assert i.stride() == x.stride()  # the index in the same memory order
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(i)
        m = fd.ops.max(b, dims=[1], keepdim=True)
        g = getattr(fd.ops, op)(a, m, 1)
        fd.add_output(fd.ops.mul(fd.ops.add(a, b), g))
    (out,) = fd.execute([x, i])
    m = i.max(1, keepdim=True).values
    want = (x + i) * torch.take_along_dim(x, m, 1)
    torch.testing.assert_close(out, want.to(out.dtype), rtol=1e-2, atol=1e-2)
    segments = fd.segment([x, i])
    assert [s["scheduler"] for s in segments] == ["reduction", "pointwise"]
    assert "takes its index from the group's own results" in segments[0]["reason"]


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize(
    "shape, order, dim, template",
    [((6, 90), (0, 1), 1, "inner"), ((40, 256), (0, 1), 0, "outer")],
)
@pytest.mark.parametrize("op", ["softmax", "layer_norm", "var_mean"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_looped_rows_pipeline_their_walks(op, shape, order, dim, template, stages, dtype):
    """``looped_stages``: each walk along R of a looped row is a Triton loop of that many
    pipelining stages; the results match torch, the kernel compiles for sm_90, and its
    loads are asynchronous copies (tiles of 128 bytes: a copy moves 4 bytes at least, so a
    1-warp bf16 tile of 32 elements, one a thread, would load as it did)."""
    tile = 128 // dtype.itemsize
    tuning = DEFAULT.with_fields(
        normalization=dict(
            max_tile=64, loop_tile=tile, looped_stages=stages, looped_stage_bytes=1 << 20
        )
    )
    fd, _, _ = run_case(op, shape, order, dim, dtype, tuning=tuning, target=small_gpu(2))
    (params,) = schedules(fd)
    assert (params.mode, params.template, params.loop_stages) == ("looped", template, stages)
    (art,) = compile_last_run(fd.executor())
    assert "cp.async" in art.ptx


@pytest.mark.parametrize("budget, stages", [(1 << 20, 3), (256, 2), (255, 1)])
def test_looped_stages_keep_their_buffers_within_the_budget(budget, stages):
    """Each further stage holds a tile of every load for each walk (an fp32 softmax of
    rows of 90 in tiles of 32: 128 bytes, two walks): three stages asked for, as many
    granted as ``looped_stage_bytes`` holds."""
    tuning = DEFAULT.with_fields(
        normalization=dict(max_tile=64, loop_tile=32, looped_stages=3, looped_stage_bytes=budget)
    )
    fd, _, _ = run_case(
        "softmax", (6, 90), (0, 1), 1, torch.float32, tuning=tuning, target=small_gpu(4)
    )
    (params,) = schedules(fd)
    assert params.mode == "looped" and params.block_x * params.block_r == 32
    assert params.loop_stages == stages
