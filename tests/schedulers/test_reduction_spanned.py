"""Outer tiles whose columns span two kept groups (issue 16, ``reduction._spanned``).

A max over H of contiguous NCHW images of 14 x 14 fp32 read [8, 16, 16] Y-stacked tiles:
14 of each 16 columns and rows used, 0.86x of torch.compile, whose tile spans (N C, W).
Where the stride-1 kept group holds fewer than ``span_row_bytes``, the tile's columns are
now a flat index over it and the next kept group (``%`` and ``//`` its extent), R whole
up to ``span_rows``. Checked: the choice (and none for wide rows, a single kept group, a
store expanded along them, a grid under a program per multiprocessor); values and strides
against torch for sum, max and var_mean, dense, pinned, sliced and expanded, planned and
replayed; the kernel compiles for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.analysis.device import H200, DeviceInfo
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import DataType
from layoutfuse.nvfuser import DataType as NvType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers import reduction_tiles as tiles
from support.execution import INTERPRETER_WARNINGS, configured, schedules
from support.reductions import dense_problem

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]
SMALL = DeviceInfo("cpu", 2, 256, 1 << 20, 65536)
ONE_SM = DeviceInfo("cpu", 1, 256, 1 << 20, 65536)  # any grid fills it: the sweep spans
TUNING = tiles.DEFAULT_TUNING


@pytest.mark.parametrize(
    "sizes, dtype",
    [
        ((14, 14, 256000), DataType.Float),  # max over H of [1000, 256, 14, 14]
        ((14, 14, 99840), DataType.Float),  # r3_005: sum over H of [104, 96, 14, 14]
        ((22, 8, 6144), DataType.BFloat16),  # r2_014: rows of 22 bf16
        ((7, 7, 50000), DataType.Float),
    ],
)
def test_short_rows_span_the_next_kept_group(sizes, dtype):
    p = dense_problem(sizes, "XRX", dtype)
    params = rd.heuristics(p, H200)
    assert params.template == "outer" and params.x_span == 2 and params.y_group is None
    assert sizes[0] * 4 < TUNING.span_row_bytes * 2  # the group is short
    assert params.block_r == min(1 << (sizes[1] - 1).bit_length(), TUNING.span_rows)
    assert params.split == 1
    programs, _ = rd.grid(params, p.sizes)
    assert programs * params.block_x >= sizes[0] * sizes[2]  # every column in some program
    assert programs >= H200.sm_count


@pytest.mark.parametrize(
    "sizes, kinds, dtype",
    [
        ((256, 512, 1024), "XRX", DataType.Float),  # wide rows
        ((14, 14), "XR", DataType.Float),  # no second kept group
        ((14, 14, 4), "XRX", DataType.Float),  # 56 columns: under a program per SM
    ],
)
def test_wide_rows_one_kept_group_and_small_grids_do_not_span(sizes, kinds, dtype):
    params = rd.heuristics(dense_problem(sizes, kinds, dtype), H200)
    assert params.x_span == 1


@pytest.mark.parametrize("layout", ["dense", "pinned", "sliced", "expanded"])
@pytest.mark.parametrize("op", ["sum", "max", "welford"])
def test_spanned_numbers(layout, op):
    """[40, 6, 5, 7] reduced over dim 2 (5 rows of 7 columns an image) on a device of 2
    SMs: values against torch, the output's strides, on the planned call and on a replay
    of other data; the dense kernel compiles for sm_90."""
    shape = (40, 6, 5, 7)
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1] * 4,
            contiguity=[None if layout == "expanded" else True, True, True, layout != "sliced"],
            dtype=NvType.Float,
            stride_order=[3, 2, 1, 0],
        )
        if op == "welford":
            avg, m2, _ = fd.ops.welford(t, dims=[2])
            fd.add_output(avg)
            fd.add_output(m2)
        else:
            out = getattr(fd.ops, op)(t, dims=[2], keepdim=False)
            fd.add_output(out, stride_order=[0, 1, 2] if layout == "pinned" else None)
    configured(fd, target=SMALL)
    for seed in range(2):
        g = torch.Generator().manual_seed(seed)
        if layout == "expanded":
            x = torch.randn((1, *shape[1:]), generator=g).expand(*shape)
        elif layout == "sliced":
            x = torch.randn((*shape[:3], 2 * shape[3]), generator=g)[..., ::2]
        else:
            x = torch.randn(shape, generator=g)
        x = x.to(torch.get_default_device())
        results = fd.execute([x])
        if op == "welford":
            mean = x.mean(2)
            expect = [mean, ((x - mean.unsqueeze(2)) ** 2).sum(2)]
        else:
            expect = [x.sum(2) if op == "sum" else x.amax(2)]
        for res, want in zip(results, expect):
            torch.testing.assert_close(res, want, rtol=1e-5, atol=1e-5)
        if layout == "pinned" and op != "welford":
            assert results[0].stride() == (1, 40, 240)
    (params,) = schedules(fd)
    # expanded: the kernel leaves the stride-0 N out (its outputs are expanded along it
    # too, and so is the Welford's count, a buffer between segments laid out as an
    # output), so 42 columns make one program, under the 2 SMs: not spanned
    spans = 1 if layout == "expanded" else 2
    assert params.template == "outer" and params.x_span == spans, params
    if layout == "dense":
        (art,) = compile_last_run(fd.executor())
        assert ".target sm_90" in art.ptx


def _draw(k: int):
    """Draw ``k``: a rank-3/4 input whose innermost dim is short (1-15), its other dims
    2-9, in any memory order that keeps the short dim
    innermost; reduced over the dim next to it in memory (else the two merge into one
    longer kept group) or, one draw in four, another; sometimes sliced along the
    outermost dim or with the output pinned to the reverse order."""
    import random

    rng = random.Random(k)
    rank = rng.choice([3, 4])
    inner = rng.randint(1, 15)
    shape = [rng.randint(2, 9) for _ in range(rank - 1)] + [inner]
    rng.shuffle(shape)
    inner_dim = shape.index(inner)
    others = [d for d in range(rank) if d != inner_dim]
    rng.shuffle(others)
    alloc = others + [inner_dim]  # outermost first, the short dim innermost
    dims = [others[-1] if rng.random() < 0.75 else rng.choice(others)]
    op = rng.choice(["sum", "max", "var_mean"])
    dtype = rng.choice([torch.float32, torch.bfloat16])
    return shape, alloc, dims, op, dtype, rng.random() < 0.3, rng.random() < 0.3


@pytest.mark.parametrize("k", range(24))
def test_spanned_sweep(k):
    """A seeded sample of short-innermost layouts reduced over one other dim, on a device of
    one SM: values against torch (``assert_values``) wherever the plan spans or not, and
    the pinned output's order."""
    from support.reductions import assert_values, strided

    shape, alloc, dims, op, dtype, sliced, pinned = _draw(k)
    gen = torch.Generator().manual_seed(k)
    if sliced:
        outer = alloc[0]
        wide = list(shape)
        wide[outer] *= 2
        x = strided(wide, alloc, dtype, gen).narrow(outer, 1, shape[outer])
    else:
        x = strided(shape, alloc, dtype, gen)
    rank = len(shape)
    kept = [d for d in range(rank) if d not in dims]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if op == "var_mean":
            outs = fd.ops.var_mean(t, dims=dims, correction=1)
        else:
            outs = [getattr(fd.ops, op)(t, dims=dims)]
        for out in outs:
            fd.add_output(out, stride_order=list(range(len(kept))) if pinned else None)
    configured(fd, target=ONE_SM)
    results = fd.execute([x])
    assert_values(op, results, dtype, x.cpu().double(), dims)
    if pinned:
        assert all(r.stride() == tuple(sorted(r.stride())) for r in results), results[0].stride()


def test_the_sweep_spans_most_reduction_draws():
    """The sweep above exercises the spanned tile: most of its sum and max draws plan it."""
    from support.reductions import strided

    spanned = total = 0
    for k in range(24):
        shape, alloc, dims, op, dtype, _, _ = _draw(k)
        if op == "var_mean":  # the normalization scheduler's
            continue
        x = strided(shape, alloc, dtype, torch.Generator().manual_seed(k))
        with FusionDefinition() as fd:
            fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x), dims=dims))
        configured(fd, target=ONE_SM)
        plan = fd.executor().plan([x])
        (params,) = plan.params
        total += 1
        spanned += params.x_span == 2
    assert spanned >= total // 2, (spanned, total)
