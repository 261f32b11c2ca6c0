"""The runs of a random op's linear index that one Philox call may serve
(``pointwise.coordinate_runs``): pure, on problems of one load, one store and one
random op's coordinate (its row-major index over the iteration space).

A run is taken along X when the coordinate walks X with stride 1, X is not flattened,
and every other group's stride (a row's start) is a multiple of the run: each run of
the tile then starts at a multiple of it. The longest power of two up to
``PointwiseTuning.philox_run`` (0 turns the rule off) that also divides BLOCK_X.
"""

from __future__ import annotations

import dataclasses

import pytest

from layoutfuse.analysis.canonical import canonicalize
from layoutfuse.analysis.device import H200
from layoutfuse.dtypes import DataType
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers.problem import Problem, max_offset


def row_major(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def dropout_problem(shape, load_strides=None, based=()) -> Problem:
    """A dropout's problem: ``x`` of ``load_strides`` (None: dense) read, the result
    stored dense, the random op's coordinate row-major over ``shape``."""
    dense = row_major(shape)
    strides = [load_strides or dense, dense, dense]
    groups = canonicalize(shape, [False] * len(shape), strides, n_loads=1, n_stores=1)
    dtypes = (DataType.BFloat16, DataType.BFloat16, DataType.Int)
    offsets = tuple(max_offset(shape, s) for s in strides)
    return Problem(groups, 1, 1, dtypes, offsets, based=based, random=(2,))


# (shape, the load's strides (None: dense), the coordinate's run)
RUNS = [
    ((8192, 8192), None, 4),  # the benchmark's dropout: one group, unit stride
    ((37,), None, 4),  # odd: the last run partly masked, still aligned
    ((6, 12), (16, 1), 4),  # a 2-D tile: the random rows 12 apart
    ((6, 10), (16, 1), 2),  # rows 10 apart: runs of 2
    ((6, 9), (16, 1), 1),  # rows 9 apart: none
    ((2, 3, 20), (72, 24, 1), 4),
    ((12, 8), (1, 12), 1),  # X is dim 0 (the input's column-major order): stride 8 there
]


@pytest.mark.parametrize("shape, load_strides, run", RUNS, ids=str)
def test_the_coordinates_run(shape, load_strides, run):
    p = dropout_problem(shape, load_strides)
    params = pw.heuristics(p, H200)
    assert params.gx2 is None
    assert params.coordinate_runs == ((1, 1, run) if run > 1 else ())


@pytest.mark.parametrize("most, run", [(0, 1), (1, 1), (2, 2), (3, 2), (8, 8)])
def test_philox_run_caps_the_run(most, run):
    """``philox_run``: the longest run recorded (the emission takes the runs that hold
    whole calls: 4 elements of a uniform Float, 2 of a normal one)."""
    tuning = dataclasses.replace(pw.DEFAULT_TUNING, philox_run=most)
    params = pw.heuristics(dropout_problem((64, 64)), H200, tuning)
    assert params.coordinate_runs == ((1, 1, run) if run > 1 else ())


def test_no_run_where_blocks_or_bases_break_the_alignment():
    """A run no longer than BLOCK_X; none for a coordinate read with a base offset (a slice
    of the random tensor: its start is bound at launch), along a flattened X, or of an
    op that is not random (an iota's)."""
    p = dropout_problem((64, 64))
    assert pw.heuristics(dataclasses.replace(p, random=()), H200).coordinate_runs == ()
    assert pw.coordinate_runs(p, 0, None, 2, pw.DEFAULT_TUNING) == (1, 1, 2)
    assert pw.coordinate_runs(p, 0, None, 1, pw.DEFAULT_TUNING) == ()
    assert (
        pw.coordinate_runs(dropout_problem((64, 64), based=(2,)), 0, None, 64, pw.DEFAULT_TUNING)
        == ()
    )
    assert pw.coordinate_runs(p, 0, 1, 64, pw.DEFAULT_TUNING) == ()
