"""Short outer tiles stack rows of the next kept group (issue 16).

Where the outer template's stride-1 kept group and R are both short (a max over H of
NCHW images of 14 x 14: 14 columns, 14 rows), its tile was one image, [16, 16] with
2 warps, one program per image: 256000 programs at 40% of eager's rate. The tile now
stacks rows of the next kept group along Y (``y_group``, the transposed store's tile) to
fill the template's step. Checked: the choice on the H200 for a family of short images,
none where the tile already fills its step or for 2-byte inputs; numbers and strides
against torch on tiny shapes (fp32, a pinned output, an expanded input).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from layoutfuse.analysis.canonical import Group
from layoutfuse.analysis.device import H200, DeviceInfo
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import DataType, itemsize
from layoutfuse.nvfuser import DataType as NvType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers import reduction_tiles as tiles
from layoutfuse.schedulers.problem import Problem
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules
from support.reductions import dense_problem

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]
# stacking itself: short stride-1 groups that would span the tile's columns with the next
# kept group (``reduction._spanned``, tests/schedulers/test_reduction_spanned.py) do not
UNSPANNED = dataclasses.replace(tiles.DEFAULT_TUNING, span_row_bytes=0)
UNSPANNED_ALL = DEFAULT.with_fields(reduction=dict(span_row_bytes=0))


@pytest.mark.parametrize(
    "sizes",
    [
        (14, 14, 256000),  # max over H of [1000, 256, 14, 14]
        (7, 7, 50000),  # 7 x 7 images
        (28, 3, 100000),  # a short R
    ],
)
def test_short_images_stack_rows_of_the_next_kept_group(sizes):
    p = dense_problem(sizes, "XRX")
    params = rd.heuristics(p, H200, UNSPANNED)
    assert params.template == "outer" and params.y_group == 2 and params.split == 1
    assert params.block_y >= 2
    programs, _ = rd.grid(params, p.sizes)
    assert programs * params.block_y >= sizes[2]  # every image in some program
    if sizes[2] >= 256000:  # enough images: the tile fills the 4-byte step (8 warps x 32 B)
        assert params.block_x * params.block_r * params.block_y == 2048


@pytest.mark.parametrize(
    "sizes, kinds, dtype",
    [
        ((256, 512, 1024), "XRX", DataType.Float),  # the fixed suite's outer tile: full
        ((16, 4096, 256), "XRX", DataType.Float),  # short X, long R: the step is full
        ((14, 14, 256000), "XRX", DataType.BFloat16),  # 2-byte: its measured narrow tile
    ],
)
def test_full_steps_and_narrow_inputs_do_not_stack(sizes, kinds, dtype):
    params = rd.heuristics(dense_problem(sizes, kinds, dtype), H200, UNSPANNED)
    assert params.template == "outer" and params.y_group is None


# a device of 2 SMs: the tiny shapes below stack as the big ones do on the H200
SMALL = DeviceInfo("cpu", 2, 256, 1 << 20, 65536)


@pytest.mark.parametrize("layout", ["dense", "pinned", "expanded"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_stacked_numbers(layout, op):
    """[40, 6, 5, 7] reduced over dim 2 (5 rows of 7 columns per image): values against
    torch, the output's strides (row-major, or pinned column-major), on the planned call
    and on a replay of other data."""
    shape = (40, 6, 5, 7)
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1] * 4,
            contiguity=[None if layout == "expanded" else True, True, True, True],
            dtype=NvType.Float,
            stride_order=[3, 2, 1, 0],
        )
        out = getattr(fd.ops, op)(t, dims=[2], keepdim=False)
        fd.add_output(out, stride_order=[0, 1, 2] if layout == "pinned" else None)
    configured(fd, target=SMALL, tuning=UNSPANNED_ALL)
    for seed in range(2):
        g = torch.Generator().manual_seed(seed)
        if layout == "expanded":
            x = torch.randn((1, *shape[1:]), generator=g).expand(*shape)
        else:
            x = torch.randn(shape, generator=g)
        x = x.to(torch.get_default_device())
        (res,) = fd.execute([x])
        expect = x.sum(2) if op == "sum" else x.amax(2)
        torch.testing.assert_close(res, expect, rtol=1e-5, atol=1e-5)
        if layout == "pinned":
            assert res.stride() == (1, 40, 240)
    (params,) = schedules(fd)
    if layout == "dense":
        assert params.template == "outer" and params.y_group is not None and params.block_y > 1
        (art,) = compile_last_run(fd.executor())  # and it compiles for sm_90
        assert ".target sm_90" in art.ptx


def _sliced_problem(n0, pitch, n1, nr, dtype=DataType.BFloat16) -> Problem:
    """X(n0, stride 1), X(n1, stride ``pitch``: a slice's gap), R(nr) outermost; the store
    dense over X."""
    groups = (
        Group(n0, False, (1, 1), (0,)),
        Group(n1, False, (pitch, n0), (1,)),
        Group(nr, True, (pitch * n1, 0), (2,)),
    )
    return Problem(groups, 1, 1, (dtype, dtype), (pitch * n1 * nr, n0 * n1))


@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float], ids=str)
def test_rows_shorter_than_a_sector_stack_the_next_kept_group(dtype):
    """A bf16 [2, 109545] of a sliced [4, 109545, 1536] summed over its outer dim (the
    random r3_079): the tile was [1024, 2] x 2, one 4-byte row per R step and program
    (9% of the read ceiling); rows of the next kept group now stack along Y."""
    p = _sliced_problem(2, 4, 109545, 1536, dtype)
    params = rd.heuristics(p, H200, UNSPANNED)
    assert params.template == "outer" and params.y_group == 1 and params.block_x == 2
    assert params.block_x * params.block_y * itemsize(dtype) >= 32  # a sector per R row
    programs, _ = rd.grid(params, p.sizes)
    assert programs * params.block_y >= 109545


@pytest.mark.parametrize(
    "n0, pitch",
    [(32, 64), (8, 16)],  # bf16 rows of 64 B; fp32 rows of 32 B below: a whole sector
)
def test_rows_of_a_sector_do_not_stack(n0, pitch):
    dtype = DataType.BFloat16 if n0 == 32 else DataType.Float
    params = rd.heuristics(_sliced_problem(n0, pitch, 109545, 1536, dtype), H200, UNSPANNED)
    assert params.y_group is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_short_rows_numbers(dtype):
    """Sum over dim 2 of x[2:] for x [4, 300, 37] with dim 0 innermost (rows of 2 elements
    4 apart): values and strides against torch, planned and replayed."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1, -1, -1],
            contiguity=[False, False, True],
            dtype=NvType.BFloat16 if dtype == torch.bfloat16 else NvType.Float,
            stride_order=[0, 1, 2],
        )
        fd.add_output(fd.ops.sum(t, dims=[2], keepdim=False))
    configured(fd, target=SMALL, tuning=UNSPANNED_ALL)
    for seed in range(2):
        g = torch.Generator().manual_seed(seed)
        base = torch.randn(37, 300, 4, generator=g).to(dtype).permute(2, 1, 0)
        x = base[2:].to(torch.get_default_device())
        (out,) = fd.execute([x])
        tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
        torch.testing.assert_close(out.float(), x.float().sum(2), rtol=tol, atol=tol)
    (params,) = schedules(fd)
    assert params.template == "outer" and params.y_group == 1, params
