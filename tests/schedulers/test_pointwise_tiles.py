"""Transpose tiles when a stride-1 group is shorter than the tile's edge.

The benchmark's 4-D tensor [32, 64, 256, 256] has dims of 32 and 64 elements: when one
of them is the input's or the output's stride-1 dim, a tile edge capped at that extent
moves 64-128 contiguous bytes per row (67-85% of the H200's copy bandwidth, run
42b27f7). The scheduler then flattens that tile axis over the short group and the group
that continues it in that side's memory (``gx2``/``split_x``, ``gy2``/``split_y``), and a
short stride-1 group that the input and the output share but continue differently makes
a transpose of the continuations.

Checked here: the axes and the tile the heuristics choose at the benchmark's shape
(pure, no kernel); then at small shapes with the same stride structure, through
generated kernels on the CPU: values, output strides, the tile, and the kernel compiled
for sm_90 with 16-byte loads and stores on both sides, no spills, at most 40 registers.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from layoutfuse.analysis.canonical import canonicalize
from layoutfuse.analysis.device import H200
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import DataType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers.problem import Problem, max_offset
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu

F32, BF16 = torch.float32, torch.bfloat16
DTYPES = {F32: DataType.Float, BF16: DataType.BFloat16}
BENCH_SHAPE = (32, 64, 256, 256)
# the small shapes below stand in for large ones: their tiles without ``transpose_fill``
NO_FILL = dataclasses.replace(pw.DEFAULT_TUNING, transpose_fill=0)
NO_FILL_TUNING = DEFAULT.with_fields(pointwise=dict(transpose_fill=0))


# each module's kernels are cached in a fresh directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


def dense_strides(shape, order) -> tuple[int, ...]:
    """Strides of a dense tensor whose dims lie in memory in ``order`` (outermost first)."""
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def copy_problem(shape, in_order, out_order, dtype) -> Problem:
    """The problem of a copy from ``in_order`` to ``out_order`` (one load, one store)."""
    strides = [dense_strides(shape, in_order), dense_strides(shape, out_order)]
    groups = canonicalize(shape, [False] * len(shape), strides, n_loads=1)
    return Problem(groups, 1, 1, (DTYPES[dtype],) * 2, tuple(max_offset(shape, s) for s in strides))


def axes(params: pw.PointwiseParams, p: Problem) -> tuple:
    """The tile's axes in logical dims: ((X groups' dims), split_x, (Y groups' dims), split_y),
    inner group first on each axis."""
    x, y = pw.tile_groups(params)
    return (
        tuple(p.groups[k].dims for k in x),
        params.split_x,
        tuple(p.groups[k].dims for k in y),
        params.split_y,
    )


# (input order, output order) -> X groups' dims, split_x, Y groups' dims, split_y;
# then the tile (BLOCK_X, BLOCK_Y, num_warps) per dtype, at the benchmark's shape
BENCH_TILES = [
    # the input's stride-1 dim 0 (32) is short: X spans dims 0 and 1 (contiguous in the input)
    (
        (2, 3, 1, 0),
        (0, 1, 2, 3),
        (((0,), (1,)), 32, ((3, 2),), 1),
        {F32: (64, 64, 8), BF16: (128, 128, 16)},
    ),
    (
        (3, 2, 1, 0),
        (0, 1, 2, 3),
        (((0,), (1,)), 32, ((3,),), 1),
        {F32: (64, 64, 8), BF16: (128, 128, 16)},
    ),
    (
        (3, 1, 2, 0),
        (0, 1, 2, 3),
        (((0,), (2, 1)), 32, ((3,),), 1),
        {F32: (64, 64, 8), BF16: (128, 128, 16)},
    ),
    # the output's stride-1 dim 0 (32) is short: Y spans dims 0 and 1 (contiguous in the output)
    (
        (0, 1, 2, 3),
        (3, 2, 1, 0),
        (((3,),), 1, ((0,), (1,)), 32),
        {F32: (64, 64, 8), BF16: (128, 128, 16)},
    ),
    (
        (1, 2, 0, 3),
        (3, 2, 1, 0),
        (((3,),), 1, ((0,), (1,)), 32),
        {F32: (64, 64, 8), BF16: (128, 128, 16)},
    ),
    # dim 0 is stride-1 on both sides, continued by dim 3 in the input and dim 1 in the
    # output: X spans dims 0 and 3, Y is dim 1 (64), each store writes 64 x 32 elements
    (
        (1, 2, 3, 0),
        (3, 2, 1, 0),
        (((0,), (3,)), 32, ((1,),), 1),
        {F32: (64, 64, 8), BF16: (128, 64, 8)},
    ),
    (
        (3, 1, 2, 0),
        (3, 2, 1, 0),
        (((0,), (2,)), 32, ((1,),), 1),
        {F32: (64, 64, 8), BF16: (128, 64, 8)},
    ),
    # dim 0 is continued by dim 3, the output's stride-1 dim (Y): no flattening, the tile's
    # loads are already one contiguous [Y, 32] block
    ((2, 1, 3, 0), (0, 1, 2, 3), (((0,),), 1, ((3,),), 1), {F32: (32, 64, 4), BF16: (32, 128, 4)}),
]


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
@pytest.mark.parametrize(
    "in_order,out_order,want_axes,tiles",
    BENCH_TILES,
    ids=[f"{''.join(map(str, i))}-to-{''.join(map(str, o))}" for i, o, *_ in BENCH_TILES],
)
def test_short_stride1_dim_flattens_the_tile_axis(in_order, out_order, want_axes, tiles, dtype):
    p = copy_problem(BENCH_SHAPE, in_order, out_order, dtype)
    params = pw.heuristics(p, H200)
    assert params.transpose
    assert axes(params, p) == want_axes
    assert (params.block_x, params.block_y, params.num_warps) == tiles[dtype]
    # programs walk the grid first only where the store's run continues on the grid
    # (mem1230 -> mem3210: each program's 4 KB runs then abut its neighbours')
    assert params.rest_first == (in_order == (1, 2, 3, 0)), params
    # ... and Y (the stores' stride-1 axis) first otherwise (``transpose_store_first``)
    assert params.y_first == (not params.rest_first), params
    x, y = pw.axis_extents(params, [g.size for g in p.groups])
    px, py = pw.tile_counts(params, [g.size for g in p.groups])
    assert (px, py) == (-(-x // params.block_x), -(-y // params.block_y))
    tiles_in_grid = pw.grid(params, p.sizes) * params.block_x * params.block_y
    assert tiles_in_grid >= p.numel and tiles_in_grid < 2 * p.numel, "the grid covers the tensor"


@pytest.mark.parametrize(
    "shape,in_order,out_order",
    [
        ((256, 512, 1024), (2, 1, 0), (0, 1, 2)),
        ((256, 512, 1024), (0, 2, 1), (1, 0, 2)),
        ((8192, 16384), (1, 0), (0, 1)),
    ],
)
@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_long_stride1_dims_keep_the_edge_tile(shape, in_order, out_order, dtype):
    """No group shorter than the edge: nothing flattened, the byte-sized tile as before."""
    p = copy_problem(shape, in_order, out_order, dtype)
    params = pw.heuristics(p, H200)
    assert (params.gx2, params.gy2, params.split_x, params.split_y) == (None, None, 1, 1)
    assert (params.block_x, params.block_y, params.num_warps) == pw.transpose_tile(
        4096, 4096, dtype.itemsize, pw.DEFAULT_TUNING
    )


# small shapes with the benchmark's stride structure: (shape, input order, output order,
# X groups' dims, split_x, Y groups' dims, split_y); the tile is then the edge tile
SMALL_CASES = [
    ((32, 8, 4, 128), (3, 2, 1, 0), (0, 1, 2, 3), (((0,), (1,)), 32, ((3,),), 1)),
    ((32, 8, 4, 128), (2, 3, 1, 0), (0, 1, 2, 3), (((0,), (1,)), 32, ((3, 2),), 1)),
    ((32, 8, 4, 128), (0, 1, 2, 3), (3, 2, 1, 0), (((3,),), 1, ((0,), (1,)), 32)),
    ((32, 128, 4, 8), (1, 2, 3, 0), (3, 2, 1, 0), (((0,), (3,)), 32, ((1,),), 1)),
]


def laid_out(shape, order, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(order) + len(shape))
    physical = torch.randn([shape[d] for d in order], generator=g).to(dtype)
    return physical.permute([order.index(d) for d in range(len(shape))])


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
@pytest.mark.parametrize(
    "shape,in_order,out_order,want_axes",
    SMALL_CASES,
    ids=[f"{''.join(map(str, i))}-to-{''.join(map(str, o))}" for _, i, o, _ in SMALL_CASES],
)
def test_short_stride1_transpose_runs_and_compiles(shape, in_order, out_order, want_axes, dtype):
    x = laid_out(shape, in_order, dtype)
    assert x.stride() == dense_strides(shape, in_order)
    with FusionDefinition() as fd:
        fd.add_output(
            fd.ops.set(fd.from_pytorch(x)),
            stride_order=[len(shape) - 1 - out_order.index(d) for d in range(4)],
        )
    configured(fd, tuning=NO_FILL_TUNING)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert out.stride() == dense_strides(shape, out_order)

    (params,) = schedules(fd)
    p = copy_problem(shape, in_order, out_order, dtype)
    assert params == pw.heuristics(p, H200, NO_FILL)
    # the bf16 tile covers Y (128) whole in two of them, and the store continues on the
    # grid there: the grid-first program order runs
    assert params.rest_first == (dtype == BF16 and in_order in ((1, 2, 3, 0), (3, 2, 1, 0)))
    assert params.y_first == (not params.rest_first)
    assert params.transpose and axes(params, p) == want_axes
    assert (params.block_x, params.block_y, params.num_warps) == pw.transpose_tile(
        4096, 4096, dtype.itemsize, pw.DEFAULT_TUNING
    )

    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx and art.num_warps == params.num_warps
    widths = art.vector_widths
    # 64 bytes per thread: four 16-byte loads and four 16-byte stores, nothing narrower
    assert widths == {"ld.global.v4": 4, "st.global.v4": 4}, widths
    usage = art.resources
    assert usage["LOCAL"] == 0 and usage["STACK"] == 0, f"register spills: {usage}"
    assert usage["REG"] <= 40, f"{usage['REG']} registers/thread"


# --- tiles of shapes with short, unmergeable groups --------------------------------------
def sliced_problem(shape, step, dtype) -> Problem:
    """A copy of ``x[:, ::step]`` (x dense, dim 0 innermost, dim 1 of ``shape[1] * step -
    1``: the random suite's r1_097) into a dense output in the same order: dim 0's run
    ends at the slice's gap, and dim 2's stride is no multiple of dim 1's: no group merges."""
    parent = (shape[0], shape[1] * step - 1, shape[2])
    ps = dense_strides(parent, (2, 1, 0))
    strides = [(ps[0], ps[1] * step, ps[2]), dense_strides(shape, (2, 1, 0))]
    groups = canonicalize(shape, [False] * 3, strides, n_loads=1)
    return Problem(groups, 1, 1, (DTYPES[dtype],) * 2, tuple(max_offset(shape, s) for s in strides))


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_short_groups_fill_the_tile(dtype):
    """[2, 16, N] sliced along dim 1: the short X (2) gives its share of the tile to Y,
    and Y (16) flattens with dim 2, which continues it in the output; the tile holds
    thousands of elements, not 2 x 16."""
    p = sliced_problem((2, 16, 100003), 2, dtype)
    params = pw.heuristics(p, H200)
    assert axes(params, p)[:2] == (((0,),), 1)
    assert axes(params, p)[2:] == (((1,), (2,)), 16), params
    assert params.block_x == 2 and params.block_x * params.block_y >= 2048, params
    off = dataclasses.replace(pw.DEFAULT_TUNING, short_edge_bytes=0)
    before = pw.heuristics(p, H200, off)
    assert before.block_x * before.block_y == 32 and before.gy2 is None


def test_short_groups_fill_the_tile_runs_and_compiles():
    base = torch.randn(200, 31, 2, device=torch.get_default_device()).permute(2, 1, 0)
    x = base[:, ::2]  # [2, 16, 200]: dim 0 stride 1, dim 1 stride 4, dim 2 stride 62
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.add(fd.ops.mul(t, t), t))
    configured(fd, tuning=NO_FILL_TUNING)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x * x + x)
    (params,) = schedules(fd)
    assert params.gy2 is not None and params.block_x * params.block_y >= 2048, params
    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx


def test_unaligned_transpose_takes_the_element_tile():
    """A bf16 transpose whose rows are not 16-byte aligned (a column-major [1001, 512]:
    columns 2002 bytes apart) has no vector loads: its tile is sized in elements as fp32's
    (64 x 64, 8 warps), not in bytes (128 x 128, 16 warps, as the aligned twin keeps)."""
    unaligned = pw.heuristics(copy_problem((1001, 512), (1, 0), (0, 1), BF16), H200, NO_FILL)
    aligned = pw.heuristics(copy_problem((1024, 512), (1, 0), (0, 1), BF16), H200, NO_FILL)
    assert unaligned.transpose and aligned.transpose
    assert (unaligned.block_x, unaligned.block_y, unaligned.num_warps) == (64, 64, 8)
    assert (aligned.block_x, aligned.block_y, aligned.num_warps) == (128, 128, 16)


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_row_indices_do_not_size_the_tile(dtype):
    """An index_select of rows (a [8192, 768]-like gather): the int64 row index is one load
    per tile row (stride 0 along X), so the tile holds 4 KB of the rows' dtype (bf16: 2048
    elements, was 512: 8 bytes of the index per element), and rows whose stride Triton
    knows a multiple of 16 elements (48; 24 is not: the launcher marks multiples of 16) move
    in 16-byte vectors."""
    table = torch.randn(50, 48, device=torch.get_default_device()).to(dtype)
    index = torch.randint(0, 50, (300,), generator=torch.Generator().manual_seed(0)).to(
        table.device
    )
    with FusionDefinition() as fd:
        t, i = fd.from_pytorch(table), fd.from_pytorch(index)
        fd.add_output(fd.ops.index_select(t, i, 0))
    (out,) = fd.execute([table, index])
    assert torch.equal(out, table[index])
    (params,) = schedules(fd)
    assert params.block_x == 64 and params.block_x * params.block_y * table.element_size() == 4096
    (art,) = compile_last_run(fd.executor())
    assert "ld.global.v4" in art.ptx or "ld.global.nc.v4" in art.ptx


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
@pytest.mark.parametrize("shape", [(301, 67), (1001, 512)])
def test_a_transpose_walks_its_stores_first(shape, dtype):
    """``transpose_store_first``: a transpose's programs walk Y (the stores' stride-1 axis)
    before X, so that neighbouring programs complete each output line; the values, the
    output's strides and the tile are those of the X-first order (the tuning's 0), and a
    transpose whose grid walks its other groups first (``rest_first``) keeps its order."""
    first = pw.DEFAULT_TUNING
    x_first = dataclasses.replace(pw.DEFAULT_TUNING, transpose_store_first=0)
    p = copy_problem(shape, (1, 0), (0, 1), dtype)
    rule, stores_first = pw.heuristics(p, H200, x_first), pw.heuristics(p, H200, first)
    assert not rule.y_first and stores_first.y_first
    assert dataclasses.replace(stores_first, y_first=False) == rule
    x = laid_out(shape, (1, 0), dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.set(fd.from_pytorch(x)), stride_order=[1, 0])
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert out.stride() == (shape[1], 1)
    (params,) = schedules(fd)
    assert params.y_first and "py = pid % NUM_PY" in fd.last_triton_code()
    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx
    rest = copy_problem(BENCH_SHAPE, (1, 2, 3, 0), (3, 2, 1, 0), dtype)
    kept = pw.heuristics(rest, H200, first)
    assert kept.rest_first and not kept.y_first


FILL = dataclasses.replace(pw.DEFAULT_TUNING, transpose_fill=2)


@pytest.mark.parametrize(
    "shape,dtype",
    [((561, 784), F32), ((1024, 650), BF16), ((418, 2048), BF16), ((96, 7, 100), F32)],
    ids=str,
)
def test_a_small_transpose_halves_its_tile_until_the_grid_fills_the_gpu(shape, dtype):
    """Random-suite transposes of 1-2 MB (111-224 programs of 64 x 64 on 132
    multiprocessors): the longer edge halves until the tiles make ``transpose_fill``
    programs per multiprocessor, no edge under ``transpose_fill_edge_bytes``."""
    order = tuple(range(len(shape)))
    p = copy_problem(shape, order, tuple(reversed(order)), dtype)
    before, after = pw.heuristics(p, H200, NO_FILL), pw.heuristics(p, H200, FILL)
    assert pw.grid(before, p.sizes) < FILL.transpose_fill * H200.sm_count
    assert pw.grid(after, p.sizes) >= FILL.transpose_fill * H200.sm_count
    least = FILL.transpose_fill_edge_bytes // dtype.itemsize
    assert min(after.block_x, after.block_y) >= least
    assert after.block_x * after.block_y < before.block_x * before.block_y
    assert after.num_warps == pw.transpose_warps(after.block_x, after.block_y, dtype.itemsize, FILL)
    assert (
        dataclasses.replace(
            after, block_x=before.block_x, block_y=before.block_y, num_warps=before.num_warps
        )
        == before
    )


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_a_large_transpose_keeps_its_tile_under_the_fill(dtype):
    p = copy_problem((8192, 16384), (1, 0), (0, 1), dtype)
    assert pw.heuristics(p, H200, FILL) == pw.heuristics(p, H200, NO_FILL)


def test_a_filled_transpose_runs_and_compiles():
    """On a 4-multiprocessor target a [70, 150] fp32 transpose makes 6 tiles of 64 x 64:
    with a fill of 2 a program, 8 or more smaller ones; values, strides, sm_90."""
    x = laid_out((70, 150), (1, 0), F32)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.set(fd.from_pytorch(x)), stride_order=[1, 0])
    fill = DEFAULT.with_fields(pointwise=dict(transpose_fill=2))
    configured(fd, tuning=fill, target=small_gpu(4))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert x.stride() == (1, 70) and out.stride() == (150, 1)
    (params,) = schedules(fd)
    assert params.transpose and params.block_x * params.block_y < 64 * 64
    assert fd.executor().last_run.launches[0].grid[0] >= 8
    (art,) = compile_last_run(fd.executor())
    assert art.num_warps == params.num_warps


TILE_FILL = dataclasses.replace(pw.DEFAULT_TUNING, tile_fill=8)
NO_TILE_FILL = dataclasses.replace(pw.DEFAULT_TUNING, tile_fill=0)


@pytest.mark.parametrize(
    "shape,dtype", [((6, 16, 56, 56), BF16), ((3, 128256), F32), ((8192, 64), F32)], ids=str
)
def test_a_small_tile_halves_until_the_grid_fills_the_gpu(shape, dtype):
    """Copies of 0.6-2 MB in one layout (147-376 programs of 4 KB tiles on 132
    multiprocessors): the tile halves until the grid makes ``tile_fill`` programs per
    multiprocessor or the tile is ``tile_fill_bytes``; a large copy keeps its tile."""
    order = tuple(range(len(shape)))
    p = copy_problem(shape, order, order, dtype)
    before, after = pw.heuristics(p, H200, NO_TILE_FILL), pw.heuristics(p, H200, TILE_FILL)
    want = TILE_FILL.tile_fill * H200.sm_count
    assert pw.grid(before, p.sizes) < want
    tile = after.block_x * after.block_y
    assert tile < before.block_x * before.block_y
    assert pw.grid(after, p.sizes) >= want or tile * dtype.itemsize == TILE_FILL.tile_fill_bytes
    assert tile * dtype.itemsize >= TILE_FILL.tile_fill_bytes
    big = copy_problem((8192, 8192), (0, 1), (0, 1), dtype)
    assert pw.heuristics(big, H200, TILE_FILL) == pw.heuristics(big, H200, NO_TILE_FILL)


def test_a_filled_gather_runs_and_compiles():
    """take_along_axis of 64 indices from each of 256 rows on 4 multiprocessors: a filled
    tile (fill 8: 32 programs), values against torch, sm_90."""
    x = torch.randn(256, 300, generator=torch.Generator().manual_seed(3))
    index = torch.randint(0, 300, (256, 64), generator=torch.Generator().manual_seed(4))
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.take_along_axis(fd.from_pytorch(x), fd.from_pytorch(index), 1))
    configured(fd, tuning=DEFAULT.with_fields(pointwise=dict(tile_fill=8)), target=small_gpu(4))
    (out,) = fd.execute([x, index])
    assert torch.equal(out, torch.take_along_dim(x, index, 1))
    (params,) = schedules(fd)
    assert params.generic and not params.transpose
    assert fd.executor().last_run.launches[0].grid[0] >= 32
    (art,) = compile_last_run(fd.executor())
    assert art.num_warps == params.num_warps


def test_a_y_the_tile_covers_whole_stays_whole_under_the_fill():
    """The random suite's r1_030 copy ([37, 64, 14, 14] fp32 stored mem2103): Y fits the
    tile whole and its stores run on the grid (``rest_first``); the fill halves X only
    (the plan that cut Y ran 0.86x)."""
    p = copy_problem((37, 64, 14, 14), (0, 1, 2, 3), (2, 1, 0, 3), F32)
    before, after = pw.heuristics(p, H200, NO_FILL), pw.heuristics(p, H200, FILL)
    assert before.transpose and before.rest_first and after.rest_first, (before, after)
    assert after.block_y == before.block_y and after.block_x < before.block_x
    assert pw.grid(after, p.sizes) >= FILL.transpose_fill * H200.sm_count
