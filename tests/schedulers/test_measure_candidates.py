"""The measured choice's decision half (``schedulers/measure.py``): the candidates are the
heuristics under the tuning and its alternatives, without repeats, the rule's plan first;
a problem the alternatives do not change has one; which problems are timed at all."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from test_pointwise_tiles import copy_problem

from layoutfuse.analysis.device import H200
from layoutfuse.dtypes import DataType
from layoutfuse.schedulers import measure
from layoutfuse.schedulers import normalization as nm
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers.problem import Problem

BIG = (4096, 8192)  # 64 MiB of fp32 in, 64 MiB out: past the H200's 60 MiB L2


def pointwise_candidates(p: Problem, tuning=pw.DEFAULT_TUNING):
    return measure.candidates(pw.heuristics, p, H200, tuning, tuning.alternatives, 3)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_transpose_has_three_distinct_tiles_the_rules_first(dtype):
    p = copy_problem(BIG, (0, 1), (1, 0), getattr(torch, dtype))
    cands = pointwise_candidates(p)
    assert cands[0] == pw.heuristics(p, H200)
    assert len(cands) == 3 and len(set(cands)) == 3
    tiles = [(c.block_x, c.block_y, c.num_warps) for c in cands]
    assert all(c.transpose for c in cands)
    # half the edge, and either half the edge at twice the warps (bf16) or twice it (fp32)
    if dtype == "bfloat16":
        assert tiles == [(128, 128, 16), (64, 64, 4), (64, 64, 8)], tiles
    else:
        assert tiles == [(64, 64, 8), (32, 32, 4), (128, 128, 16)], tiles


def test_a_copy_in_one_order_has_one_candidate():
    p = copy_problem(BIG, (0, 1), (0, 1), torch.float32)
    assert len(pointwise_candidates(p)) == 1


def test_the_limit_and_no_alternatives():
    p = copy_problem(BIG, (0, 1), (1, 0), torch.bfloat16)
    t = pw.DEFAULT_TUNING
    assert len(measure.candidates(pw.heuristics, p, H200, t, t.alternatives, 2)) == 2
    assert measure.candidates(pw.heuristics, p, H200, t, (), 3) == (pw.heuristics(p, H200),)
    # an alternative that changes nothing adds nothing
    same = ((("transpose_edge_bytes", t.transpose_edge_bytes),),)
    assert len(measure.candidates(pw.heuristics, p, H200, t, same, 3)) == 1


def test_every_alternative_names_fields_of_its_tuning():
    from layoutfuse.schedulers import reduction_tiles

    for tuning in (pw.DEFAULT_TUNING, nm.DEFAULT_TUNING, reduction_tiles.DEFAULT_TUNING):
        names = {f.name for f in dataclasses.fields(tuning)}
        assert tuning.alternatives
        for overrides in tuning.alternatives:
            assert {k for k, _ in overrides} <= names, overrides
            dataclasses.replace(tuning, **dict(overrides))  # values of the fields' kinds


def test_moved_bytes_counts_each_access_reach():
    p = copy_problem(BIG, (0, 1), (1, 0), torch.bfloat16)
    assert measure.moved_bytes(p) == 2 * BIG[0] * BIG[1] * 2
    assert p.dtypes == (DataType.BFloat16, DataType.BFloat16)


def test_which_problems_are_timed():
    t = measure.DEFAULT_TUNING
    big = copy_problem(BIG, (0, 1), (1, 0), torch.float32)
    small = copy_problem((256, 1024), (0, 1), (1, 0), torch.float32)  # 2 MB of 60
    assert measure.why_not_measured(big, "cuda", H200, t) is None
    assert "under" in measure.why_not_measured(small, "cuda", H200, t)
    assert "cpu" in measure.why_not_measured(big, "cpu", H200, t)
    off = dataclasses.replace(t, enabled=False)
    assert measure.why_not_measured(big, "cuda", H200, off) == "measured choice is off"
    anywhere = dataclasses.replace(t, devices=("cpu",), min_l2=0.0)
    assert measure.why_not_measured(small, "cpu", H200, anywhere) is None


def _planned(build, shapes, dtype, tuning=None):
    """The (problem, params) of each scheduled segment of ``build`` over meta inputs of
    ``shapes``, planned for an H200 (under ``tuning``, else the default)."""
    from layoutfuse.nvfuser import FusionDefinition
    from support.execution import configured

    inputs = [
        s if isinstance(s, torch.Tensor) else torch.empty(s, dtype=dtype, device="meta")
        for s in shapes
    ]
    with FusionDefinition() as fd:
        fd.add_output(build(fd, *(fd.from_pytorch(x) for x in inputs)))
    fd = configured(fd, target=H200, tuning=tuning)
    return [(r.problem, r.params) for r in fd.executor().plan(inputs).segments]


def test_an_inner_reduction_times_a_step_of_half_the_bytes():
    """A bf16 sum over rows of 3715 (r2_111's rows): the rule's [2, 2048] x 2 step at 8
    warps, then the half step, [2, 1024] x 2 at the same warps (half the bytes a
    thread); a fp32 one: [2, 2048] then [2, 1024]."""
    from layoutfuse.schedulers import reduction as rd
    from layoutfuse.schedulers.reduction_tiles import DEFAULT_TUNING as T

    for dtype, tiles in (
        (torch.bfloat16, [(2, 2048, 2, 8), (2, 1024, 2, 8)]),
        (torch.float32, [(2, 2048, 1, 8), (2, 1024, 1, 8)]),
    ):
        ((p, params),) = _planned(lambda fd, x: fd.ops.sum(x, [1]), [(4096, 3715)], dtype)
        cands = measure.candidates(rd.heuristics, p, H200, T, T.alternatives, 3)
        assert cands[0] == params
        assert [(c.block_x, c.block_r, c.unroll, c.num_warps) for c in cands] == tiles


def test_an_inner_reduction_of_scalar_rows_times_a_quarter_tile_at_4_warps():
    """A fp32 max over rows of 255 elements, 1020 bytes apart (r3_093: [128, 1, 255, 363]
    laid out [1, 3, 0, 2], reduced over dims 1 and 2): no 16-byte load, so the tile sized
    as for 16-byte elements, [4, 256] at 4 warps, is a candidate after the rule's [16,
    256] at 8 and the half step; rows 16-byte aligned (256 fp32) have no such candidate."""
    from layoutfuse.schedulers import reduction as rd
    from layoutfuse.schedulers.reduction_tiles import DEFAULT_TUNING as T

    x = torch.empty(1, 363, 128, 255, device="meta").permute(2, 0, 3, 1)
    assert x.shape == (128, 1, 255, 363) and x.stride()[2] == 1
    ((p, params),) = _planned(lambda fd, x: fd.ops.max(x, [1, 2]), [x], torch.float32)
    cands = measure.candidates(rd.heuristics, p, H200, T, T.alternatives, 4)
    tiles = [(c.block_x, c.block_r, c.num_warps) for c in cands]
    assert cands[0] == params and tiles[0] == (16, 256, 8), tiles
    assert (4, 256, 4) in tiles[1:], tiles
    ((p, _),) = _planned(lambda fd, x: fd.ops.max(x, [1]), [(46464, 256)], torch.float32)
    cands = measure.candidates(rd.heuristics, p, H200, T, T.alternatives, 4)
    assert (4, 256, 4) not in [(c.block_x, c.block_r, c.num_warps) for c in cands], cands


def test_a_looped_softmax_times_a_loop_tile_of_4096_at_16_warps():
    """A bf16 softmax over rows of 50257 (r2_050's): the rule's [1, 16384] at 32 warps,
    twice the tile, and the half direction's [1, 4096] at 16 warps."""
    t = nm.DEFAULT_TUNING

    def softmax(fd, x):
        from layoutfuse.nvfuser import DataType as D

        x = fd.ops.cast(x, D.Float)
        e = fd.ops.exp(fd.ops.sub(x, fd.ops.broadcast_in_dim(fd.ops.max(x, [1]), x.shape(), [0])))
        s = fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), x.shape(), [0])
        return fd.ops.cast(fd.ops.div(e, s), D.BFloat16)

    ((p, params),) = _planned(softmax, [(2417, 50257)], torch.bfloat16)
    cands = measure.candidates(nm.heuristics, p, H200, t, t.alternatives, 3)
    assert cands[0] == params and all(c.mode == "looped" for c in cands)
    assert [(c.block_r, c.num_warps) for c in cands] == [(16384, 32), (32768, 32), (4096, 16)]


def test_outer_looped_columns_time_the_tile_before_few_blocks_doubled_it():
    """A bf16 RMS norm over the strided dim of a column-major [15307, 4096] (r3_017),
    looped as it was before ``loop_min_blocks`` and ``loop_outer_l2`` (which plan it
    segmented): 240 column blocks of 64, under 4 a multiprocessor, so the rule doubles the
    tile and the warps (64 x 128 at 16); the half direction times 64 x 64 at 8."""
    from layoutfuse.nvfuser import DataType as D
    from layoutfuse.schedulers.tuning import DEFAULT

    def rms_norm(fd, x):
        xf = fd.ops.cast(x, D.Float)
        ms = fd.ops.div(fd.ops.sum(fd.ops.mul(xf, xf), [1]), fd.define_scalar(4096.0))
        r = fd.ops.rsqrt(fd.ops.add(ms, fd.define_scalar(1e-5)))
        return fd.ops.cast(fd.ops.mul(xf, fd.ops.broadcast_in_dim(r, x.shape(), [0])), D.BFloat16)

    x = torch.empty(4096, 15307, dtype=torch.bfloat16, device="meta").t()
    looped = DEFAULT.with_fields(normalization=dict(loop_min_blocks=1, loop_outer_l2=0))
    ((p, params),) = _planned(rms_norm, [x], torch.bfloat16, looped)
    t = looped.normalization
    assert len(_planned(rms_norm, [x], torch.bfloat16)) == 2  # by default: segmented
    cands = measure.candidates(nm.heuristics, p, H200, t, t.alternatives, 3)
    assert cands[0] == params and all(c.mode == "looped" for c in cands)
    tiles = [(c.block_x, c.block_r, c.num_warps) for c in cands]
    assert tiles == [(64, 128, 16), (64, 64, 8)], tiles


def test_problems_of_a_few_megabytes_are_timed():
    """The device clock flushes the L2 before each run, so problems down to ``min_l2`` of
    it (a twentieth: 3 MB of the H200's 60) are timed: an 8 MB transposing copy is."""
    t = measure.DEFAULT_TUNING
    assert t.min_l2 * H200.l2_bytes < 8 << 20
    p = copy_problem((1024, 1024), (0, 1), (1, 0), torch.float32)
    assert measure.moved_bytes(p) == 8 << 20
    assert measure.why_not_measured(p, "cuda", H200, t) is None
    assert len(pointwise_candidates(p)) > 1


def test_a_2_byte_outer_reduction_times_half_the_warps():
    """A fp16 sum over the 112 rows of [30, 64, 112, 112] (r2_106's, unsliced): the rule's
    [32, 128] x 2 step at 4 warps, and [16, 128] x 2 at 2 (the same bytes a thread) among
    the candidates; a fp32 one keeps its tiles (the alternative is for 2-byte loads)."""
    from layoutfuse.schedulers import reduction as rd
    from layoutfuse.schedulers.reduction_tiles import DEFAULT_TUNING as T

    def tiles(dtype):
        ((p, params),) = _planned(lambda fd, x: fd.ops.sum(x, [2]), [(30, 64, 112, 112)], dtype)
        cands = measure.candidates(rd.heuristics, p, H200, T, T.alternatives, 4)
        assert cands[0] == params and all(c.template == "outer" for c in cands)
        return [(c.block_x, c.block_r, c.unroll, c.num_warps) for c in cands]

    half = tiles(torch.float16)
    assert half[0] == (128, 32, 2, 4) and (128, 16, 2, 2) in half[1:], half
    assert all(w >= 4 for *_, w in tiles(torch.float32)[1:])


def test_an_outer_persistent_normalization_times_half_the_warps():
    """An fp32 var_mean over the 32 outermost rows of [32, 32, 2, 2888] whose dim 1 is
    innermost (r2_008): the rule's 128 x 32 tile at 8 warps, and the same tile at 4."""
    x = torch.empty(32, 2, 2888, 32, device="meta").permute(0, 3, 1, 2)
    assert x.stride() == (184832, 1, 92416, 32)

    def var_mean(fd, x):
        var, mean = fd.ops.var_mean(x, [0], correction=1)
        fd.add_output(mean)
        return var

    ((p, params),) = _planned(var_mean, [x], torch.float32)
    t = nm.DEFAULT_TUNING
    cands = measure.candidates(nm.heuristics, p, H200, t, t.alternatives, 4)
    assert cands[0] == params and params.template == "outer" and params.mode == "persistent"
    tiles = [(c.block_x, c.block_r, c.num_warps) for c in cands]
    assert tiles[0] == (128, 32, 8) and (128, 32, 4) in tiles[1:], tiles
