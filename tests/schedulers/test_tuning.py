"""The schedulers' tuning (``schedulers/tuning.py``): the defaults choose the params the
scheduler tests assert; a variant changes them as its field says, given to one executor
with ``configure(tuning=...)`` (no module constant patched); tuning values are frozen and
hashable; the one warps rule keeps each scheduler's thresholds."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from test_normalization import define, inputs_for
from test_pointwise_broadcast import ROW_MAJOR
from test_pointwise_broadcast import problem as pointwise_problem
from test_reduction_split import LAYOUTS, make_input
from test_reduction_split import define as define_reduction
from test_reduction_tiles import FAMILIES
from test_reduction_tiles import problem as reduction_problem

from layoutfuse.analysis.device import H200
from layoutfuse.dtypes import DataType
from layoutfuse.runtime.pipeline import default_heuristics
from layoutfuse.schedulers import normalization as nm
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers import reduction_tiles as tiles
from layoutfuse.schedulers.tuning import DEFAULT, Tuning
from layoutfuse.schedulers.warps import warps_for
from support.execution import configured, small_gpu

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def softmax_rows(rows: int, n: int):
    """A softmax over the contiguous rows of a [rows, n] fp32 tensor, and its inputs."""
    x, extra = inputs_for("softmax", (rows, n), (0, 1), 1, torch.float32)
    return define("softmax", x, 1), [x, *extra]


def planned(fd, inputs, **settings):
    """The params of each segment ``fd`` would run under ``settings`` (nothing launched)."""
    return configured(fd, **settings).executor().plan(inputs).params


# --- the defaults ----------------------------------------------------------------------------
def test_the_bundle_holds_each_schedulers_defaults():
    assert Tuning() == DEFAULT
    assert (DEFAULT.of("pointwise"), DEFAULT.of("reduction"), DEFAULT.of("normalization")) == (
        pw.DEFAULT_TUNING,
        tiles.DEFAULT_TUNING,
        nm.DEFAULT_TUNING,
    )
    assert all(DEFAULT.of(m.NAME) is not None for m in (pw, rd, nm))


def test_default_pointwise_params_are_the_measured_tiles():
    bias = pointwise_problem((512, 2048), [ROW_MAJOR, (0, 1)], ROW_MAJOR)
    params = pw.heuristics(bias, H200)
    assert params == pw.heuristics(bias, H200, pw.DEFAULT_TUNING)
    assert (params.block_y, params.block_x, params.num_warps) == (16, 256, 8)
    small = pointwise_problem((512,), [(1,)], (1,))
    assert (pw.heuristics(small, H200).block_x, pw.heuristics(small, H200).num_warps) == (512, 4)
    assert pw.transpose_tile(4096, 4096, 4, pw.DEFAULT_TUNING) == (64, 64, 8)
    assert pw.transpose_tile(4096, 4096, 2, pw.DEFAULT_TUNING) == (128, 128, 16)


@pytest.mark.parametrize(
    "family, dtype, want",
    [
        ("outer", DataType.Float, (256, 8, 1, 8, 1)),  # [8, 256]: 32 bytes per thread
        ("outer", DataType.BFloat16, (512, 8, 2, 4, 1)),  # 4 warps, two [8, 512] tiles
        ("inner", DataType.Float, (4, 1024, 1, 8, 1)),  # 16 accumulators, 64 bytes
    ],
)
def test_default_reduction_params_are_the_measured_tiles(family, dtype, want):
    prob = reduction_problem(*FAMILIES[family], dtype)
    p = rd.heuristics(prob, H200)
    assert p == rd.heuristics(prob, H200, tiles.DEFAULT_TUNING)
    assert (p.block_x, p.block_r, p.unroll, p.num_warps, p.split) == want, p
    assert p.combine_elements == tiles.DEFAULT_TUNING.combine_elements == 8


def test_default_reduction_finish_follows_the_partials():
    few = rd.heuristics(reduction_problem("XR", (16384, 1536), DataType.Float), H200)
    many = rd.heuristics(reduction_problem("XR", (256, 524288), DataType.Float), H200)
    assert (few.split > 1, few.finish) == (True, "ticket")
    assert (many.split > 1, many.finish) == (True, "kernel")


def test_default_normalization_params_are_the_persistent_tile():
    fd, inputs = softmax_rows(200, 128)
    (params,) = planned(fd, inputs)
    assert (params.mode, params.template, params.block_x, params.block_r) == (
        "persistent",
        "inner",
        16,  # rows of 128 fp32 (512 bytes) in a tile of inner_tile_bytes (8192)
        128,
    ), params


# --- variants --------------------------------------------------------------------------------
def test_a_smaller_max_tile_makes_a_128_wide_row_loop():
    fd, inputs = softmax_rows(8, 128)
    variant = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_tile=32))
    (params,) = planned(fd, inputs, tuning=variant, target=small_gpu(4))
    assert (params.mode, params.template, params.passes) == ("looped", "inner", 1), params
    assert (params.block_x, params.block_r) == (1, 32)
    assert "exceed a 64-element tile" in fd.executor().last_run.segments[0].reason


def test_no_ticket_steps_make_a_split_use_the_finishing_kernel():
    prob = reduction_problem("XR", (16384, 1536), DataType.Float)
    variant = dataclasses.replace(tiles.DEFAULT_TUNING, ticket_steps=0)
    ticket, kernel = rd.heuristics(prob, H200), rd.heuristics(prob, H200, variant)
    assert (ticket.finish, kernel.finish) == ("ticket", "kernel")
    assert kernel.split == ticket.split > 1


def test_a_tuning_variant_reaches_the_reduction_kernel_through_the_executor():
    """A split outer sum that fits in L2: no ticket steps and no L2 to keep it in take the
    finishing kernel; the combine width of the ticket reaches the params (the codegen's
    BLOCK_S), so a variant of it is a kernel of its own."""
    lay = LAYOUTS["outer"]
    x = make_input(lay, "sum", torch.float32, 0)
    rule = DEFAULT.with_fields(reduction=dict(few_rounds=0))  # the split rule alone
    (default,) = planned(define_reduction(lay, "sum", torch.float32), [x], tuning=rule)
    assert default.split > 1 and default.finish == "ticket", default
    variant = rule.with_fields(reduction=dict(ticket_steps=0))
    (kernel,) = planned(
        define_reduction(lay, "sum", torch.float32),
        [x],
        tuning=variant,
        target=small_gpu(H200.sm_count, l2_bytes=0),
    )
    assert (kernel.split, kernel.finish) == (default.split, "kernel")
    wide = rule.with_fields(reduction=dict(combine_elements=16))
    (combined,) = planned(define_reduction(lay, "sum", torch.float32), [x], tuning=wide)
    assert combined.combine_elements == 16 and combined != default
    assert rd.combine_block(combined, combined.block_x) >= rd.combine_block(
        default, default.block_x
    )


def test_pointwise_variants_change_the_tile_and_its_warps():
    bias = pointwise_problem((512, 2048), [ROW_MAJOR, (0, 1)], ROW_MAJOR)
    small = dataclasses.replace(pw.DEFAULT_TUNING, broadcast_tile_elements=1024, broadcast_rows=4)
    params = pw.heuristics(bias, H200, small)
    assert (params.block_y, params.block_x, params.num_warps) == (4, 256, 4)
    two = dataclasses.replace(pw.DEFAULT_TUNING, warps=((0, 2),))
    assert pw.heuristics(bias, H200, two).num_warps == 2
    narrow = dataclasses.replace(pw.DEFAULT_TUNING, transpose_edge_bytes=128)
    assert pw.transpose_tile(4096, 4096, 4, narrow) == (32, 32, 4)


def test_the_pipeline_hands_each_scheduler_its_part_of_the_tuning():
    seen = []

    def spy(scheduler, problem, device, tuning):
        seen.append((scheduler.name, tuning))
        return default_heuristics(scheduler, problem, device, tuning)

    variant = DEFAULT.with_fields(normalization=dict(max_tile=64))
    fd, inputs = softmax_rows(2, 40000)
    params = planned(fd, inputs, tuning=variant, heuristics=spy, target=small_gpu(4))
    assert [p.scheduler for p in params] == ["reduction", "pointwise"]  # segmented
    assert seen == [("reduction", variant.reduction), ("pointwise", variant.pointwise)]


# --- values ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value", [DEFAULT, pw.DEFAULT_TUNING, tiles.DEFAULT_TUNING, nm.DEFAULT_TUNING]
)
def test_tunings_are_frozen_and_hashable(value):
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, None)
    assert hash(value) == hash(dataclasses.replace(value))
    assert {value: 1}[dataclasses.replace(value)] == 1


def test_with_fields_replaces_only_the_named_fields():
    variant = DEFAULT.with_fields(normalization=dict(max_tile=64), reduction=dict(waves=3))
    assert variant.normalization == dataclasses.replace(nm.DEFAULT_TUNING, max_tile=64)
    assert variant.reduction == dataclasses.replace(tiles.DEFAULT_TUNING, waves=3)
    assert variant.pointwise is DEFAULT.pointwise and variant != DEFAULT
    with pytest.raises(TypeError):
        DEFAULT.with_fields(normalization=dict(no_such_knob=1))


def test_one_warps_rule_with_each_schedulers_thresholds():
    pointwise, reduction = pw.DEFAULT_TUNING.warps, tiles.DEFAULT_TUNING.warps
    assert [warps_for(n, pointwise) for n in (4096, 1024, 512, 100)] == [8, 4, 4, 2]
    assert [warps_for(n, reduction) for n in (4096, 1024, 512, 100)] == [8, 4, 2, 2]


# --- configure -------------------------------------------------------------------------------
def test_configure_tuning_takes_effect_on_the_next_execute_and_forgets_the_plan():
    fd, inputs = softmax_rows(8, 128)
    configured(fd, target=small_gpu(4))
    executor = fd.executor()
    fd.execute(inputs)
    (params,) = fd.last_schedule()
    assert params.mode == "persistent" and len(executor._plans) == 1
    runs = executor.planned_runs
    variant = DEFAULT.with_fields(normalization=dict(max_tile=64))
    executor.configure(tuning=variant, target=small_gpu(4))
    assert executor.tuning is variant and executor.replay(inputs) is None
    (y,) = fd.execute(inputs)
    (params,) = fd.last_schedule()
    assert params.mode == "looped" and executor.planned_runs == runs + 1
    torch.testing.assert_close(y, torch.softmax(inputs[0], 1), atol=2e-5, rtol=2e-5)
    executor.configure()
    assert executor.tuning is DEFAULT
