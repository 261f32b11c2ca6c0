"""Transposes whose Y is a store's whole short stride-1 group, continued by X
(``PointwiseTuning.whole_y_to_x``).

A contiguous fp32 [N, 3, 28, 28] stored with C innermost and W next: X is the input's W
(28) flattened with H, Y the output's C (3, tiled as 4), and the output continues C with
W, X's inner group. The edge x 4 tile stored runs of 3 x 32; with the rule Y gives its
share of the edge x edge tile to X, so each tile row stores a longer run. A
channels-last bf16 [N, 256, 7, 7] stored with H innermost and C next is the same with X
unflattened (the output continues H with C). Where the output continues Y with X's
flattened *outer* group instead (a [4, 14, n] input, dim 1 innermost, stored with dim 0
innermost then dim 2), the wide tile lost on the GPU and the rule leaves the tile. The
tests check the tile each way, the numerics against torch on the interpreter, and
compile the wide tiles for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.pointwise import DEFAULT_TUNING as PW
from layoutfuse.schedulers.pointwise import edge_elements
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

# the small shapes stand in for large ones: no transpose_fill (it halves small grids' tiles)
ON = DEFAULT.with_fields(pointwise=dict(whole_y_to_x=1, transpose_fill=0))
OFF = DEFAULT.with_fields(pointwise=dict(whole_y_to_x=0, transpose_fill=0))


def _copy(x: torch.Tensor, stride_order: list[int], tuning):
    """``x + 1`` stored in ``stride_order`` (nvFuser's: 0 is the innermost dim)."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.add(t, fd.define_scalar(1.0)), stride_order=stride_order)
    configured(fd, tuning=tuning)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, (x.float() + 1).to(x.dtype))
    inner = stride_order.index(0)
    assert out.stride(inner) == 1, out.stride()
    (params,) = schedules(fd)
    return fd, params


def _flattened_x(n: int, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(n)
    return torch.randn(4, n, 14, generator=g).to(dtype).permute(0, 2, 1)  # dim 1 innermost


def _channels_last(batch: int, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(batch)
    return torch.randn(batch, 7, 7, 256, generator=g).to(dtype).permute(0, 3, 1, 2)


FLAT_ORDER = [0, 2, 1]  # dim 0 innermost, then dim 2, dim 1 outermost
CL_ORDER = [2, 1, 0, 3]  # H innermost, then C, then N, W outermost


def _nchw(batch: int, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(batch)
    return torch.randn(batch, 3, 28, 28, generator=g).to(dtype)


NCHW_TO_C_W = [2, 0, 3, 1]  # C innermost, then W, then N, H outermost


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("batch", [5, 8])
def test_flattened_x_takes_y_share(batch, dtype):
    x = _nchw(batch, dtype)
    _, on = _copy(x, NCHW_TO_C_W, ON)
    _, off = _copy(x, NCHW_TO_C_W, OFF)
    assert on.transpose and on.gx2 is not None and on.block_y == 4, on
    edge = off.block_x
    assert on.block_x == edge * edge // 4, (on, off)
    assert on.block_x % on.split_x == 0


@pytest.mark.parametrize("n", [320, 333])
def test_y_continued_by_x_outer_group_keeps_the_edge(n):
    """With the loads' side flattened (``continuation_to_store=0``; by default this
    transpose flattens on the store's side, ``test_pointwise_continuation_to_store.py``)."""
    x = _flattened_x(n, torch.float32)
    loads_side = dict(continuation_to_store=0)
    _, on = _copy(x, FLAT_ORDER, ON.with_fields(pointwise=loads_side))
    _, off = _copy(x, FLAT_ORDER, OFF.with_fields(pointwise=loads_side))
    assert on.gx2 is not None and on.block_y == 4, on
    assert on.block_x == off.block_x == edge_elements(4, PW), (on, off)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_unflattened_x_takes_y_share(dtype):
    x = _channels_last(3, dtype)
    _, on = _copy(x, CL_ORDER, ON)
    _, off = _copy(x, CL_ORDER, OFF)
    assert on.transpose and on.gx2 is None and on.block_y == 8, on
    assert on.block_x == 256 > off.block_x, (on, off)


def test_a_y_longer_than_the_tile_keeps_the_edge():
    """Y of 100 (tiled as 64 of the fp32 edge) is not whole in a tile: the rule leaves it."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(100, 300, 14, generator=g).permute(0, 2, 1)
    _, on = _copy(x, FLAT_ORDER, ON)
    assert on.block_y == edge_elements(4, PW) and on.block_x == edge_elements(4, PW), on


def test_the_wide_tiles_compile_for_sm90():
    """sm_90: no spills in either wide tile; the channels-last one still loads 16-byte
    vectors along C (its X)."""
    fd, _ = _copy(_nchw(16, torch.float32), NCHW_TO_C_W, ON)
    (art,) = compile_last_run(fd.executor())
    assert art.local_bytes == 0, art.resources
    fd, _ = _copy(_channels_last(2, torch.bfloat16), CL_ORDER, ON)
    (art,) = compile_last_run(fd.executor())
    assert art.local_bytes == 0, art.resources
    assert art.vector_widths.get("ld.global.v4", 0) > 0, art.vector_widths
