"""Property test of single reductions (issue 4): random shape, layout, reduced dims and op.

Each example defines its input(s) with ``fd.from_pytorch`` from a tensor of a random
rank (1-4), extents (1-9) and allocation permutation, optionally runs a pointwise
prologue (``mul`` by a second input of the same layout, ``exp`` or ``abs``), reduces
random dims with sum/max/min/var_mean (``keepdim`` random), and optionally pins the
output to a random order. It checks values against float64 torch, the output strides,
and that the schedule's family follows the input's memory order (the oracles are in
``test_reduction_sweep``).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutfuse.nvfuser import FusionDefinition
from support.execution import INTERPRETER_WARNINGS
from support.reductions import (
    DTYPES,
    OPS,
    assert_family,
    assert_layout,
    assert_values,
    define_reduction,
    strided,
)

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]
PROLOGUES = (None, "mul", "exp", "abs")


@st.composite
def problems(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    alloc = tuple(draw(st.permutations(range(rank))))
    reduced = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    op = draw(st.sampled_from(OPS))
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    prologue = draw(st.sampled_from(PROLOGUES))
    keepdim = draw(st.booleans())
    out_rank = rank if keepdim else rank - len(reduced)
    pin = draw(st.none() | st.permutations(range(out_rank))) if out_rank else None
    seed = draw(st.integers(0, 2**16))
    return shape, alloc, reduced, op, dtype, prologue, keepdim, pin, seed


@settings(
    max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(problems())
def test_reduction_properties(problem):
    shape, alloc, reduced, op, dtype_name, prologue, keepdim, pin, seed = problem
    dtype = DTYPES[dtype_name]
    gen = torch.Generator().manual_seed(seed)
    x = strided(shape, alloc, dtype, gen)
    inputs = [x]
    with FusionDefinition() as fd:
        t = t0 = fd.from_pytorch(x)
        if prologue == "mul":
            inputs.append(strided(shape, alloc, dtype, gen))
            t = fd.ops.mul(t0, fd.from_pytorch(inputs[1]))
        elif prologue is not None:
            t = getattr(fd.ops, prologue)(t0)
        for out in define_reduction(fd, t, op, reduced, keepdim):
            fd.add_output(out, stride_order=None if pin is None else list(pin))
    outs = fd.execute(inputs)

    data = x.cpu().double()
    element_rtol = None  # abs and no prologue: exact values
    if prologue == "mul":
        data = data * inputs[1].cpu().double()
        element_rtol = torch.finfo(dtype).eps  # the product may be rounded to dtype
    elif prologue == "exp":
        data = data.exp()
        element_rtol = torch.finfo(dtype).eps + 4 * torch.finfo(torch.float32).eps
    elif prologue == "abs":
        data = data.abs()
    assert_values(op, outs, dtype, data, reduced, keepdim, element_rtol)
    for out in outs:
        assert_layout(out, x, reduced, keepdim, pin)
    assert_family(fd.last_schedule(), x, reduced)
