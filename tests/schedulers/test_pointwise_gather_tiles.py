"""A gather's tile (``PointwiseTuning.gather_tile_elements``).

A tile with an indirect load (take_along_axis, index_select) loads its gathered elements
one by one, and its int64 indices, the widest dtype, size a ``tile_bytes`` tile at 512
elements (4 a thread at 4 warps). The knob sets a floor on such a tile's elements; an
affine kernel (no gather) keeps its tile whatever the knob. Checked through generated
kernels on the CPU: the tile, the values against torch, and the kernel compiled for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import DataType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

DTYPES = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}
ROWS, N = 8, 4096


def take_along(dtype: torch.dtype, floor: int) -> tuple[FusionDefinition, list]:
    torch.manual_seed(0)
    x = torch.randn(ROWS, N, dtype=dtype)
    index = torch.stack([torch.randperm(N) for _ in range(ROWS)])
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DTYPES[dtype])
        i = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        fd.add_output(fd.ops.take_along_axis(a, i, 1))
    tuning = DEFAULT.with_fields(pointwise=dict(gather_tile_elements=floor))
    return configured(fd, tuning=tuning), [x, index]


def add_rows(floor: int) -> tuple[FusionDefinition, list]:
    x, y = torch.randn(ROWS, N), torch.randn(ROWS, N)
    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(a, b))
    tuning = DEFAULT.with_fields(pointwise=dict(gather_tile_elements=floor))
    return configured(fd, tuning=tuning), [x, y]


def tile(fd) -> int:
    (params,) = schedules(fd)
    assert isinstance(params, pw.PointwiseParams)
    return params.block_x * params.block_y


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("floor", [0, 1024, 2048])
def test_a_gathers_tile_holds_the_floor(dtype, floor):
    fd, xs = take_along(dtype, floor)
    (out,) = fd.execute(xs)
    assert torch.equal(out, torch.take_along_dim(*xs, 1))
    by_index = pw.DEFAULT_TUNING.tile_bytes // 8  # the int64 index sizes the plain tile
    assert tile(fd) == max(by_index, floor)
    compile_last_run(fd.executor())


@pytest.mark.parametrize("floor", [0, 4096])
def test_an_affine_tile_ignores_the_floor(floor):
    fd, xs = add_rows(floor)
    (out,) = fd.execute(xs)
    torch.testing.assert_close(out, xs[0] + xs[1])
    assert tile(fd) == pw.DEFAULT_TUNING.tile_bytes // 4
