"""Property test of the reduction rules that fire only at GPU sizes, made to fire here.

Folded outer rows (``fold``: inputs of 8 MB or more), carried R indices (``carry_index``:
8 steps a program, 4 warps at most) and unmasked whole steps rarely meet the
interpreter's small inputs. Each example draws a rank 2-4 input (extents up to a few
hundred, every memory order, an expanded or sliced dim or none), reduced dims, an op
(sum, max, min, var_mean, welford) and a multiprocessor count, and runs it with the
rules' size limits taken away and steps of 32 bytes (so R wraps its groups in
mid-step and tails are common). Values are checked against float64 torch; which rules
fired is counted, and every one must fire in the run.
"""

from __future__ import annotations

import collections

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules, small_gpu
from support.reductions import DTYPES, assert_values, define_reduction, make_input

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

ANYWHERE = DEFAULT.with_fields(
    reduction=dict(
        fold_min_bytes=0,
        fold_min_rows=4,
        fold_welford_max_item=4,
        carry_min_steps=1,
        carry_max_warps=32,
        inner_row_bytes=32,
        outer_row_bytes=32,
    )
)
FIRED: collections.Counter = collections.Counter()
EXAMPLES = 40


@st.composite
def problems(draw):
    mode = draw(st.integers(0, 3))
    if mode == 0:  # the columns of a contiguous input (the fold's)
        return draw(columns())
    if mode == 1:  # a kept dim between two reduced ones (the carry's flat walk)
        return draw(walks())
    rank = draw(st.integers(2, 4))
    extent = st.one_of(st.integers(1, 9), st.integers(10, 300))
    shape = list(draw(st.lists(extent, min_size=rank, max_size=rank)))
    while torch.Size(shape).numel() > 20000:  # the interpreter's time
        shape[shape.index(max(shape))] //= 2
    alloc = tuple(draw(st.permutations(range(rank))))
    reduced = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    op = draw(st.sampled_from(["sum", "max", "min", "var_mean", "welford"]))
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    special_dim = draw(st.integers(0, rank - 1))
    kind = draw(st.sampled_from([None, None, "expanded", "sliced"]))
    special = {} if kind is None else {special_dim: kind}
    sms = draw(st.sampled_from([1, 4, 64]))
    seed = draw(st.integers(0, 2**16))
    return tuple(shape), alloc, reduced, op, dtype, special, sms, seed


@st.composite
def columns(draw):
    """The outer reduction of a contiguous [rows, n0] (or [a, b, n0] over dims 0 and 1)
    with rows of an odd length: the fold's problem."""
    n0 = draw(st.integers(1, 150)) * 2 + 1
    rows = draw(st.integers(40, 20000 // n0 + 41))
    three = draw(st.booleans()) and rows % 2 == 0
    shape = (2, rows // 2, n0) if three else (rows, n0)
    reduced = (0, 1) if three else (0,)
    alloc = tuple(range(len(shape)))
    op = draw(st.sampled_from(["sum", "max", "min", "welford"]))
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    sms = draw(st.sampled_from([1, 4, 64]))
    return shape, alloc, reduced, op, dtype, {}, sms, draw(st.integers(0, 2**16))


@st.composite
def walks(draw):
    """Dims 0 and 2 of a contiguous [a, b, c] reduced, dim 1 kept: R is two groups, the
    inner one stride 1."""
    shape = (draw(st.integers(2, 60)), draw(st.integers(1, 4)), draw(st.integers(2, 90)))
    op = draw(st.sampled_from(["sum", "max", "min", "var_mean", "welford"]))
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    sms = draw(st.sampled_from([1, 4, 64]))
    return shape, (0, 1, 2), (0, 2), op, dtype, {}, sms, draw(st.integers(0, 2**16))


def _welford_check(outs, data, dims):
    avg, m2, n = (o.cpu().double() for o in outs)
    mean = data.mean(dims)
    count = 1
    for d in dims:
        count *= data.shape[d]
    torch.testing.assert_close(avg, mean, rtol=1e-5, atol=1e-5)
    want_m2 = ((data - data.mean(dims, keepdim=True)) ** 2).sum(dims)
    torch.testing.assert_close(m2, want_m2, rtol=1e-5, atol=1e-4 * max(1.0, count))
    assert bool((n == count).all()), n


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems())
def _example(problem):
    shape, alloc, reduced, op, dtype_name, special, sms, seed = problem
    dtype = DTYPES[dtype_name]
    inp = make_input(shape, alloc, dtype, special, torch.Generator().manual_seed(seed))
    with FusionDefinition() as fd:
        t = inp.define(fd)
        if op == "welford":
            for out in fd.ops.welford(t, dims=list(reduced)):
                fd.add_output(out)
        else:
            for out in define_reduction(fd, t, op, reduced, False):
                fd.add_output(out)
    configured(fd, tuning=ANYWHERE, target=small_gpu(sms))
    outs = fd.execute([inp.tensor])
    data = inp.tensor.cpu().double()
    if op == "welford":
        _welford_check(outs, data, list(reduced))
    else:
        assert_values(op, outs, dtype, data, reduced)
    for p in schedules(fd):
        FIRED["fold"] += getattr(p, "fold", 0) > 1
        FIRED["carry"] += bool(getattr(p, "carry_index", False))
        FIRED["full_steps"] += bool(getattr(p, "full_steps", False))
        FIRED["repeat"] += bool(getattr(p, "repeat", False))


def test_rules_at_any_size_match_torch():
    """The examples (one hypothesis run), then: each rule fired in at least one of them,
    so the property is not vacuous."""
    FIRED.clear()
    _example()
    assert all(FIRED[rule] for rule in ("fold", "carry", "full_steps", "repeat")), FIRED
