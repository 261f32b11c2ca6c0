"""A flat R walk over several reduced groups carries its group indices (``carry_index``).

A reduction whose reduced dims do not meet in memory (dims 0, 1 and 3 of a contiguous
``[N, C, 7, 7]`` keeping dim 2) walks R as one flat index over two or more groups. Each
element's group indices were ``r % n0`` and ``r // n0`` of runtime extents, a 32-bit
division per element and loop step; carried, the loop adds the step's own
decomposition to each group's index and wraps it once at its extent.

The tests run sums and maxima over layouts
where R has two and three groups, with steps of a few elements so that every group
wraps many times and in the middle of a step, split and unsplit, and a var_mean (a
Welford, which counts per tile), against torch, with
the carry and without (``reduction.carry_index=0``); and compile for sm_90: the loop of
the carried kernel has no ``div``/``rem``, the other has one per element.
"""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest
import torch

from layoutfuse.analysis.canonical import Group
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.problem import Problem
from layoutfuse.schedulers.reduction_tiles import DEFAULT_TUNING as T
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu
from support.reductions import DTYPES, assert_values, define_reduction, make_input

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

# steps of 32 bytes of a row: 8 fp32 or 16 bf16 elements, so R wraps its groups in mid-step
SHORT = dict(inner_row_bytes=32, outer_row_bytes=32)


# the rule's step and warp limits are the GPU's cost; here every walk carries
ANY_WALK = dict(carry_min_steps=1, carry_max_warps=32)


def _tuning(carry: int, **normalization):
    return DEFAULT.with_fields(
        reduction=dict(carry_index=carry, **SHORT, **ANY_WALK), normalization=normalization
    )


def _run(sizes, alloc, op, dims, dtype, special, carry=1, sms=4, **normalization):
    gen = torch.Generator().manual_seed(len(sizes) * 100 + sum(dims))
    inp = make_input(sizes, alloc, dtype, special, gen)
    with FusionDefinition() as fd:
        t = inp.define(fd)
        for out in define_reduction(fd, t, op, dims, False):
            fd.add_output(out)
    configured(fd, tuning=_tuning(carry, **normalization), target=small_gpu(sms))
    outs = fd.execute([inp.tensor])
    assert_values(op, outs, dtype, inp.tensor.cpu().double(), dims)
    return fd, inp


# 3-D: two reduced dims apart in memory (the kept dim between them) in every memory order
# where they are apart; 5-D: three reduced groups
LAYOUTS_3D = [(alloc, (alloc[0], alloc[2])) for alloc in itertools.permutations(range(3))]
CASES = [((6, 5, 7), alloc, tuple(sorted(dims))) for alloc, dims in LAYOUTS_3D] + [
    ((3, 2, 5, 3, 7), (0, 1, 2, 3, 4), (0, 2, 4)),
    ((3, 2, 5, 3, 7), (4, 3, 2, 1, 0), (0, 2, 4)),
]


@pytest.mark.parametrize("carry", [1, 0])
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("op", ["sum", "max"])
@pytest.mark.parametrize("sizes,alloc,dims", CASES, ids=str)
def test_carried_walk_matches_torch(sizes, alloc, dims, op, dtype, carry):
    """Every reduced group wraps in mid-step (steps of 8 or 16 elements over groups of 5,
    6, 7): the carried indices reach the same elements as the divided ones."""
    dt = DTYPES[dtype]
    fd, _ = _run(sizes, alloc, op, dims, dt, {}, carry)
    (params,) = schedules(fd)
    assert params.scheduler == "reduction", params
    assert len(params.r_groups) == len(dims) and not params.r_nest, params
    # an outer tile's R index is per row, shared by its columns: not carried
    assert params.carry_index == (bool(carry) and params.template == "inner"), params
    step = params.block_r * params.unroll
    assert any(step % sizes[d] for d in dims), "no group wraps in mid-step"


@pytest.mark.parametrize("carry", [1, 0])
def test_carried_welford_counts_match_torch(carry):
    """var_mean over dims 0 and 2 of [40, 3, 60] (rows of 2400, past a persistent tile of
    1024 elements, as rows of 60000 are past the normalization scheduler's own): a
    Welford, whose per-lane counts come from the step (``r0 // BLOCK_R``), not from the
    indices the carry replaces."""
    dt = torch.float32
    fd, _ = _run((40, 3, 60), (0, 1, 2), "var_mean", (0, 2), dt, {}, carry, max_tile=1024)
    (params,) = schedules(fd)
    assert params.scheduler == "reduction" and params.carry_index == bool(carry), params


@pytest.mark.parametrize("special", [{0: "sliced"}, {2: "expanded"}, {1: "size1"}], ids=str)
def test_carried_walk_over_sliced_and_expanded_dims(special):
    """A sliced reduced dim (stride doubled), an expanded one (stride 0) and a size-1
    kept dim between the reduced ones, in a column-major [9, 3, 11]."""
    dt = torch.bfloat16
    fd, _ = _run((9, 3, 11), (2, 1, 0), "sum", (0, 2), dt, special)
    (params,) = schedules(fd)
    inner_walk = len(params.r_groups) >= 2 and params.template == "inner"
    assert params.carry_index == inner_walk, params


def test_split_chunks_start_their_own_carry():
    """Split over 64 multiprocessors, each chunk starts mid-group (its first indices are
    divided once); its whole steps run unmasked (``full_steps``), then the rest: two
    loops, each starting its own carry."""
    dt = torch.float32
    fd, _ = _run((37, 3, 41), (0, 1, 2), "sum", (0, 2), dt, {}, sms=64)
    (params,) = schedules(fd)
    assert params.carry_index and params.split > 1 and params.full_steps, params
    assert fd.last_triton_code().count("cr0_0 = rg") == 2


def _loop_divisions(ptx: str) -> list[int]:
    """``div``/``rem`` instructions in each loop of the PTX (a label to a branch back)."""
    lines = [line.strip() for line in ptx.splitlines()]
    labels: dict[str, int] = {}
    counts = []
    for i, line in enumerate(lines):
        m = re.match(r"^(\$L__\w+):", line)
        if m:
            labels[m.group(1)] = i
        m = re.search(r"bra(?:\.uni)?\s+(\$L__\w+);", line)
        if m and m.group(1) in labels:
            body = lines[labels[m.group(1)] : i]
            ops = [re.sub(r"^@!?%p\d+\s+", "", x) for x in body]
            counts.append(sum(x.startswith(("div.", "rem.")) for x in ops))
    return counts


def test_carried_loop_has_no_division_on_sm90():
    """fp16 max over dims 0, 1 and 3 of a contiguous [64, 96, 7, 7] (dim 2 kept, a
    [2, 2048] tile, two tiles a step): the plain loop divides each of a thread's 16
    R positions by ``n0`` (``div`` and ``rem`` each), the carried loop not once."""
    x = torch.randn(64, 96, 7, 7).to(torch.float16)
    found = {}
    for carry in (0, 1):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.max(fd.from_pytorch(x), dims=[0, 1, 3]))
        configured(fd, tuning=DEFAULT.with_fields(reduction=dict(carry_index=carry, **ANY_WALK)))
        (out,) = fd.execute([x])
        torch.testing.assert_close(out.cpu(), x.amax((0, 1, 3)).cpu(), rtol=0, atol=0)
        (params,) = schedules(fd)
        assert params.carry_index == bool(carry) and len(params.r_groups) == 2, params
        (art,) = compile_last_run(fd.executor())
        found[carry] = max(_loop_divisions(art.ptx))
    assert found[0] >= 16 and found[1] == 0, found


@pytest.mark.parametrize(
    "steps_over, warps, carried",
    [(1, 4, True), (0, 4, False), (1, 8, False)],
    ids=["steps-and-4-warps", "too-few-steps", "8-warps"],
)
def test_the_rule_weighs_steps_and_warps(steps_over, warps, carried):
    """The carry needs ``carry_min_steps`` loop steps a program (the indices are divided
    once before the loop: 2 steps ran 0.67x on the H100) and at most ``carry_max_warps``
    warps (at 8 its registers halved the resident programs: 0.90x)."""

    def problem(n2: int) -> Problem:  # [n2, 7, 7] keeping the middle dim: groups R X R
        groups = (
            Group(7, True, (1, 0), (2,)),
            Group(7, False, (7, 1), (1,)),
            Group(n2, True, (49, 0), (0,)),
        )
        return Problem(groups, 1, 1, (DataType.Half, DataType.Half), (49 * n2, 7))

    base = rd.heuristics(problem(1000), small_gpu(1))
    step = base.block_r * base.unroll
    rows = T.carry_min_steps * step if steps_over else step
    p = problem(-(-rows // 7))
    params = dataclasses.replace(rd.heuristics(p, small_gpu(1)), num_warps=warps, split=1)
    assert len(params.r_groups) == 2 and not params.r_nest, params
    assert rd.carried_index(p, params, T) is carried, params
