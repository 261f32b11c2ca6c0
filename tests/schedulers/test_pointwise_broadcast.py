"""Pointwise tiles with a load broadcast along the tile's Y axis.

A load with stride 0 along Y and not along X (a bias over the columns; the per-column
mean, M2 and count a layer norm's epilogue reads after its reductions) is the same for
every row of the tile. A [1, 4096] tile re-reads it for every element (a layer norm's
epilogue read 16 bytes of statistics per 2-byte input element from L2: 911 us where
softmax's, with 8 bytes, took 549, ``tune-normalization-segmented-fc8c535``); a tile of
``broadcast_rows`` rows reads it once per column of the tile.

Checked: the heuristics' tile for such problems and for ones without a Y broadcast
(pure); then generated kernels on the CPU (values against torch, output strides, the
tile) compiled for sm_90 with 16-byte loads and no spills.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.analysis.canonical import canonicalize
from layoutfuse.analysis.device import H200
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import DataType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers.problem import Problem, max_offset
from support.execution import schedules

# each module's kernels are cached in a fresh directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


def problem(shape, load_strides, out_strides) -> Problem:
    """Loads with the given strides (0: broadcast), one fp32 store."""
    strides = [*load_strides, out_strides]
    groups = canonicalize(shape, [False] * len(shape), strides, n_loads=len(load_strides))
    return Problem(
        groups,
        len(load_strides),
        1,
        (DataType.Float,) * len(strides),
        tuple(max_offset(shape, s) for s in strides),
    )


ROW_MAJOR = (2048, 1)
TUNING = pw.DEFAULT_TUNING


@pytest.mark.parametrize(
    "bias,block_y,elements",
    [
        # a bias over the columns: broadcast along Y, rows of the broadcast tile
        ((0, 1), TUNING.broadcast_rows, TUNING.broadcast_tile_elements),
        # a bias over the rows: varies along Y, broadcast along X; 4 KB of fp32
        ((1, 0), 1, TUNING.tile_bytes // 4),
    ],
)
def test_tile_rows_follow_a_broadcast_along_y(bias, block_y, elements):
    p = problem((512, 2048), [ROW_MAJOR, bias], ROW_MAJOR)
    params = pw.heuristics(p, H200)
    assert not params.transpose and params.gx == 0 and params.gy == 1
    assert params.block_y == block_y
    assert params.block_x * params.block_y == elements


def test_without_a_broadcast_the_dense_tensor_is_one_group():
    p = problem((512, 2048), [ROW_MAJOR, ROW_MAJOR], ROW_MAJOR)
    params = pw.heuristics(p, H200)
    assert params.gy is None and (params.block_x, params.block_y) == (TUNING.tile_bytes // 4, 1)
    assert params.num_warps == 4  # 32 bytes per thread


def test_a_short_y_extent_keeps_its_size():
    """Fewer rows than ``broadcast_rows``: the tile spans them all, X takes the rest."""
    p = problem((4, 2048), [ROW_MAJOR, (0, 1)], ROW_MAJOR)
    params = pw.heuristics(p, H200)
    expect = (4, TUNING.broadcast_tile_elements // TUNING.broadcast_rows)
    assert (params.block_y, params.block_x) == expect


def _bias_fusion(x: torch.Tensor, b: torch.Tensor) -> FusionDefinition:
    with FusionDefinition() as fd:
        tx, tb = fd.from_pytorch(x), fd.from_pytorch(b)
        bb = fd.ops.broadcast_in_dim(tb, shape=x.shape, broadcast_dims=[1])
        fd.add_output(fd.ops.mul(fd.ops.add(tx, bb), bb))
    return fd


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["row", "col", "sliced"])
def test_bias_over_columns_runs_in_tiles_of_rows(dtype, layout):
    rows, cols = 40, 320
    if layout == "row":
        x = torch.randn(rows, cols, dtype=dtype)
    elif layout == "col":
        x = torch.randn(cols, rows, dtype=dtype).t()
    else:
        x = torch.randn(rows, cols + 20, dtype=dtype)[:, 3 : cols + 3]
    b = torch.randn(cols, dtype=dtype)
    fd = _bias_fusion(x, b)
    (y,) = fd.execute([x, b])
    want = ((x.float() + b.float()) * b.float()).to(dtype)
    torch.testing.assert_close(
        y,
        want,
        atol=1e-2 if dtype is torch.bfloat16 else 1e-5,
        rtol=1e-2 if dtype is torch.bfloat16 else 1e-5,
    )
    (params,) = schedules(fd)
    assert params.scheduler == "pointwise"
    if layout == "col":
        # the stride-1 dim is dim 0 (X): the bias varies along Y and is broadcast along X,
        # so X spans its whole extent as without a bias
        assert (params.block_x, params.block_y) == (64, TUNING.tile_bytes // x.element_size() // 64)
        assert y.stride() == (1, rows)
    else:
        assert params.block_y == TUNING.broadcast_rows
        assert y.stride() == (cols, 1)
    (art,) = compile_last_run(fd.executor())
    assert art.local_bytes == 0, art.resources
    if layout == "row":
        assert art.vector_widths.get("ld.global.v4", 0) > 0
