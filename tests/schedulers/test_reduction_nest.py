"""The nested inner template (``r_nest``) gives way to a flat R walk where its split is
held back by too few outer R rows (issue 16).

``r_nest`` tiles the stride-1 reduced group and loops the others, so a split can cut only
those outer rows. A long stride-1 group under a short outer one (an expanded dim of 16
over 3.6M elements, the random suite's ``sum_float16_16x3572x1024_mem210_d012_e0``) then
ran as 16 programs for the whole GPU. Checked: the choice on the H200 (pure heuristics)
for a family of such shapes and for shapes whose outer rows suffice (still nested), and
numbers against torch on tiny shapes of both kinds, expanded inputs included.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.analysis.canonical import Group
from layoutfuse.analysis.device import H200, DeviceInfo
from layoutfuse.dtypes import DataType
from layoutfuse.nvfuser import DataType as NvType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.problem import Problem
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]


def _problem(sizes, strides, kinds, dtype=DataType.Half) -> Problem:
    """Groups innermost first with the load's ``strides`` (0: expanded); the store dense
    over the kept groups."""
    running, store = 1, []
    for n, kind in zip(sizes, kinds):
        store.append(running if kind == "X" else 0)
        running *= n if kind == "X" else 1
    groups = tuple(
        Group(n, kind == "R", (s, st), (k,))
        for k, (n, s, st, kind) in enumerate(zip(sizes, strides, store, kinds))
    )
    reach = sum((n - 1) * s for n, s in zip(sizes, strides)) + 1
    return Problem(groups, 1, 1, (dtype, dtype), (reach, running))


@pytest.mark.parametrize(
    "sizes, strides, kinds",
    [
        ((3572 * 1024, 16), (1, 0), "RR"),  # all of an expanded [16, 3572, 1024]: one result
        ((1 << 22, 7), (1, 1 << 22), "RR"),  # 7 long rows, all reduced
        ((1 << 20, 3, 5), (1, 0, 1 << 20), "RXR"),  # 3 results (expanded), 5 outer rows
    ],
)
def test_few_outer_rows_walk_r_flat_and_fill_the_gpu(sizes, strides, kinds):
    p = _problem(sizes, strides, kinds)
    params = rd.heuristics(p, H200)
    assert params.template == "inner" and not params.r_nest
    programs, split = rd.grid(params, p.sizes)
    assert programs * split >= 2 * H200.sm_count  # not one program per outer row
    # what the nested walk would have given: the outer rows at most
    assert split > sizes[-1]


@pytest.mark.parametrize(
    "sizes, strides, kinds",
    [
        ((1024, 512, 256), (1, 1024, 1 << 19), "RXR"),  # the fixed suite's nested [R, X, R]
        ((4096, 8, 1024), (1, 4096, 1 << 15), "RXR"),  # enough outer rows for the split
    ],
)
def test_enough_outer_rows_stay_nested(sizes, strides, kinds):
    params = rd.heuristics(_problem(sizes, strides, kinds, DataType.Float), H200)
    assert params.template == "inner" and params.r_nest


# a device of 8 SMs: the small shapes below split as the big ones do on the H200
SMALL = DeviceInfo("cpu", 8, 256, 1 << 20, 65536)


@pytest.mark.parametrize("expanded", [True, False])
def test_flat_walk_numbers(expanded):
    """[2, 3, 8192] reduced over dims 0 and 2 (outer rows: 2), dim 0 expanded or dense:
    values against torch, on the planned call and on replays of other data. Expanded,
    dim 0 is left out of the walk and its 2 copies scale the sums."""
    shape = (2, 3, 8192)
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1, -1, -1],
            contiguity=[None if expanded else True, True, True],
            dtype=NvType.Float,
            stride_order=[2, 1, 0],
        )
        fd.add_output(fd.ops.sum(t, dims=[0, 2], keepdim=False))
    # as the big shapes split (few_rounds_inner plans this one, under half of SMALL's L2)
    configured(fd, target=SMALL, tuning=DEFAULT.with_fields(reduction=dict(few_rounds_inner=0)))
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        if expanded:
            x = torch.randn((1, *shape[1:]), generator=g).expand(*shape)
        else:
            x = torch.randn(shape, generator=g)
        x = x.to(torch.get_default_device())
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, x.double().sum((0, 2)).float(), rtol=1e-5, atol=1e-4)
    (params,) = schedules(fd)
    if expanded:  # the expanded dim is not walked (``Problem.repeat``): one reduced group
        assert params.repeat and len(params.r_groups) == 1, params
        return
    assert params.template == "inner" and not params.r_nest and params.split > 2


@pytest.mark.parametrize(
    "sizes, strides",
    [
        ((13, 1021, 158), (1, 26, 13 * 2043)),  # a sliced [13, 1021, 158] (the random r1_007)
        ((2, 37948 * 2048), (2 * 2, 1)),  # a short, strided inner group (r3_115)
    ],
)
def test_short_stride1_r_group_walks_flat(sizes, strides):
    """A stride-1 reduced group too short to fill a quarter of a loop step (13 of 16
    lanes, one warp's worth of a 4096-element step) walks R flat: a 16-element nested tile
    ran at 30% of torch.compile."""
    p = _problem(sizes[:2], strides[:2], "RR", DataType.Float)
    params = rd.heuristics(p, H200)
    assert params.template == "inner" and not params.r_nest, params
    assert params.block_r * params.unroll >= 1024, params


def test_short_stride1_r_group_numbers():
    """The sliced max over every dim of a [13, 31, 9] tensor (dim 1 stepped by 2): values
    against torch on a flat walk."""
    base = torch.randn(9, 63, 13, device=torch.get_default_device()).permute(2, 1, 0)
    x = base[:, 1::2][:, :31]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.max(t, dims=[0, 1, 2], keepdim=False))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.amax())
    (params,) = schedules(fd)
    assert not params.r_nest


@pytest.mark.parametrize(
    "sizes, strides, kinds, dtype",
    [
        # sum over dims 0, 1, 3 of [763, 128, 2, 31] (the random r2_084): 2 results
        ((31, 2, 763 * 128), (1, 31, 62), "RXR", DataType.Float),
        # max over dims 0, 1, 3 of fp16 [18126, 96, 7, 7] (r2_035): 7 results
        ((7, 7, 18126 * 96), (1, 7, 49), "RXR", DataType.Half),
    ],
)
def test_short_stride1_r_group_under_few_results_walks_flat(sizes, strides, kinds, dtype):
    """A short stride-1 R group under a short kept one: the nested tile was [2, 32] or
    [8, 8] at 2 warps (64 elements a step, 10-19% of the read ceiling); R walks flat in
    whole loop steps, and the split fills the GPU."""
    p = _problem(sizes, strides, kinds, dtype)
    params = rd.heuristics(p, H200)
    assert params.template == "inner" and not params.r_nest, params
    assert params.block_x * params.block_r * params.unroll >= 4096, params
    programs, split = rd.grid(params, p.sizes)
    assert programs * split >= 2 * H200.sm_count


def test_short_stride1_r_group_under_few_results_numbers():
    """Sum over dims 0, 1, 3 of [40, 6, 2, 31]: values against torch on the flat walk."""
    x = torch.randn(40, 6, 2, 31, device=torch.get_default_device())
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum(fd.from_pytorch(x), dims=[0, 1, 3], keepdim=False))
    configured(fd, target=SMALL)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.double().sum((0, 1, 3)).float(), rtol=1e-5, atol=1e-4)
    (params,) = schedules(fd)
    assert params.template == "inner" and not params.r_nest
