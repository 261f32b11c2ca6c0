"""Outer reductions of inputs that fit in L2: the plan of fewest DRAM round trips
(``ReductionTuning.few_rounds``, ``reduction._few_rounds``).

Such an input is never timed by the measured choice, and its time is latency: a
program's loop steps, the ticket and each combine step of a split follow one another.
Checked here: the heuristics' plan under the rule against the plan without it (pure, at
the random suite's r1_070 shape: fewer round trips, one wave, rows of a cache line at
least), an input larger than L2 keeping the rule's plan, and through generated kernels
on the CPU: values of sums, maxima and var_mean against torch under the rule, the
plan changed, and the kernels compiled for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.analysis.device import H200
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import DataType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers import reduction_tiles as tiles
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

ON = DEFAULT.with_fields(reduction=dict(few_rounds=1))
OFF = DEFAULT.with_fields(reduction=dict(few_rounds=0))
INNER_ON = DEFAULT.with_fields(reduction=dict(few_rounds_inner=1))
INNER_OFF = DEFAULT.with_fields(reduction=dict(few_rounds_inner=0))
NV = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}


def define(shape, dims, op: str, dtype=torch.float32) -> FusionDefinition:
    fd = FusionDefinition()
    with fd:
        t = fd.define_tensor(
            shape=[-1] * len(shape), contiguity=[True] * len(shape), dtype=NV[dtype]
        )
        if op == "var_mean":
            var, mean = fd.ops.var_mean(t, list(dims), correction=1)
            fd.add_output(var)
            fd.add_output(mean)
        else:
            fd.add_output(getattr(fd.ops, op)(t, list(dims)))
    return fd


def plan(shape, dims, op, tuning, dtype=torch.float32) -> rd.ReductionParams:
    fd = configured(define(shape, dims, op, dtype), tuning=tuning)
    x = torch.empty(shape, dtype=dtype, device="meta")
    (params,) = fd.executor().plan([x]).params
    assert isinstance(params, rd.ReductionParams)
    return params


def rounds(params: rd.ReductionParams, shape, dims) -> tuple[float, int]:
    """(the round trips the rule counts, the programs) of a plan of ``shape`` reduced
    over ``dims`` (contiguous, the reduced dims outer)."""
    kept = [n for d, n in enumerate(shape) if d not in dims]
    reduced = [n for d, n in enumerate(shape) if d in dims]
    sizes = (kept[-1], *reduced) if len(kept) == 1 else None
    assert sizes is not None
    programs, split = rd.grid(params, sizes)
    units, _ = rd._split_units(params, sizes)
    steps = -(-units // split)
    if split > 1:
        steps += 1 + -(-split // rd.combine_block(params, params.block_x))
    return steps, programs * split


def test_a_small_welford_takes_fewer_rounds_in_one_wave():
    shape, dims = (113, 8, 512), (0, 1)  # random suite r1_070: 0.53x of torch.compile
    before, after = plan(shape, dims, "var_mean", OFF), plan(shape, dims, "var_mean", ON)
    assert after != before
    steps_before, _ = rounds(before, (904, 512), (0,))
    steps_after, programs = rounds(after, (904, 512), (0,))
    assert steps_after <= tiles.DEFAULT_TUNING.few_rounds_gain * steps_before
    assert programs <= 2048 // (32 * after.num_warps) * H200.sm_count  # one wave
    assert after.block_x * 4 >= tiles.DEFAULT_TUNING.few_rounds_row_bytes
    assert after.finish == "ticket"


def test_a_small_inner_sum_takes_a_loop_step_a_program():
    # random suite r3_062: 48 programs of 3 steps at 0.74x of the faster peer
    shape, dims = (143, 2039), (0, 1)
    before, after = plan(shape, dims, "sum", INNER_OFF), plan(shape, dims, "sum", INNER_ON)
    assert before.template == after.template == "inner"
    sizes = (143 * 2039,)
    units, _ = rd._split_units(after, sizes)
    assert before.split < units and after.split == units and after.finish == "ticket", after
    assert (after.block_r, after.num_warps) == (before.block_r, before.num_warps)


def test_a_large_inner_sum_keeps_the_split_rule():
    shape, dims = (8192, 4096), (0, 1)  # 128 MB
    assert plan(shape, dims, "sum", INNER_ON) == plan(shape, dims, "sum", INNER_OFF)


@pytest.mark.parametrize(
    "shape, dims, op, dtype",
    [
        ((143, 2039), (0, 1), "sum", torch.float32),
        ((2849, 76), (0, 1), "max", torch.bfloat16),
        ((4, 20000), (1,), "sum", torch.bfloat16),
    ],
)
def test_inner_values_under_the_rule(shape, dims, op, dtype):
    assert plan(shape, dims, op, INNER_ON, dtype) != plan(shape, dims, op, INNER_OFF, dtype)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    fd = configured(define(shape, dims, op, dtype), tuning=INNER_ON)
    (out,) = fd.execute([x])
    (params,) = schedules(fd)
    assert params == plan(shape, dims, op, INNER_ON, dtype)
    if op == "sum":
        tol = 1e-5 if dtype == torch.float32 else 8e-3  # a bf16 result: its rounding
        torch.testing.assert_close(out.double(), x.double().sum(dims), rtol=tol, atol=1e-3)
    else:
        assert torch.equal(out, x.amax(dims))
    compile_last_run(fd.executor())


@pytest.mark.parametrize("rows", [8192, 3957])
def test_an_input_over_the_l2_share_keeps_the_rule(rows):
    # 128 MB of fp32; and 44 MB (random suite r3_051, which lost 7% in 256-byte rows):
    # under H200's 60 MB L2, over half of it
    shape, dims = (rows, 2782), (0,)
    assert plan(shape, dims, "sum", ON) == plan(shape, dims, "sum", OFF)


def test_the_rule_is_the_default():
    assert tiles.DEFAULT_TUNING.few_rounds == 1
    shape, dims = (113, 8, 512), (0, 1)
    assert plan(shape, dims, "var_mean", DEFAULT) == plan(shape, dims, "var_mean", ON)


@pytest.mark.parametrize(
    "shape, dims, op, dtype",
    [
        ((57, 8, 256), (0, 1), "var_mean", torch.float32),
        ((300, 512), (0,), "sum", torch.float32),
        ((600, 256), (0,), "max", torch.bfloat16),
    ],
)
def test_values_under_the_rule(shape, dims, op, dtype):
    assert plan(shape, dims, op, ON, dtype) != plan(shape, dims, op, OFF, dtype)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen).to(dtype)
    fd = configured(define(shape, dims, op, dtype), tuning=ON)
    outs = fd.execute([x])
    (params,) = schedules(fd)
    assert params == plan(shape, dims, op, ON, dtype)
    if op == "var_mean":
        var, mean = torch.var_mean(x.double(), dims, correction=1)
        torch.testing.assert_close(outs[0].double(), var, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(outs[1].double(), mean, rtol=1e-5, atol=1e-5)
    elif op == "sum":
        torch.testing.assert_close(outs[0].double(), x.double().sum(dims), rtol=1e-5, atol=1e-4)
    else:
        assert torch.equal(outs[0], x.amax(dims))
    compile_last_run(fd.executor())
