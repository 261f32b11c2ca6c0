"""Canonical groups (``analysis.canonical``): which access decides the order, and which
coordinates a kernel walks at all."""

from __future__ import annotations

from layoutfuse.analysis.canonical import canonicalize, dim_order, store_led

# a [R=1547, X=1000] softmax of an expanded input: the load moves along dim 0 only (stride
# 0 along dim 1), the row-major store along both
EXTENTS = (1547, 1000)
EXPANDED_LOAD = (1, 0)
ROW_MAJOR_STORE = (1000, 1)


def test_loads_decide_while_they_move_the_data():
    # a full-size column-major load and a row-major store: the load's order
    strides = [(1, 1547), ROW_MAJOR_STORE]
    assert not store_led(EXTENTS, strides, 1, 1)
    assert dim_order(EXTENTS, strides, 1, n_stores=1) == [0, 1]


def test_stores_decide_where_the_loads_read_little():
    strides = [EXPANDED_LOAD, ROW_MAJOR_STORE]
    assert store_led(EXTENTS, strides, 1, 1)
    # the store's stride-1 dim 1 innermost (without the store: the load's dim 0)
    assert dim_order(EXTENTS, strides, 1, n_stores=1) == [1, 0]
    assert dim_order(EXTENTS, strides, 1) == [0, 1]
    groups = canonicalize(EXTENTS, [True, False], strides, 1, n_stores=1)
    assert [(g.dims, g.kind) for g in groups] == [((1,), "X"), ((0,), "R")]


def test_a_load_of_a_quarter_is_still_read_led():
    # the load reads 1/4 of the stored elements (a bias-like [4, 1, N] read of a [4, 4, N]
    # store): the load still decides
    extents = (4, 4, 4096)
    strides = [(4096, 0, 1), (4 * 4096, 4096, 1)]
    assert not store_led(extents, strides, 1, 1)


def test_a_kept_coordinate_no_access_moves_along_is_dropped():
    # expanded input, expanded output: dim 1 repeats the same values into the same places
    groups = canonicalize(EXTENTS, [True, False], [EXPANDED_LOAD, (1, 0)], 1, n_stores=1)
    assert [(g.dims, g.kind) for g in groups] == [((0,), "R")]


def test_a_reduced_coordinate_of_stride_0_is_kept():
    # a sum over an expanded dim still counts its extent
    groups = canonicalize((8, 5), [False, True], [(1, 0), (1, 0)], 1, n_stores=1)
    assert [(g.dims, g.kind) for g in groups] == [((0,), "X"), ((1,), "R")]


def test_generic_mode_keeps_every_coordinate():
    groups = canonicalize(EXTENTS, [True, False], [EXPANDED_LOAD, (1, 0)], 1, merge=False)
    assert sorted(g.dims for g in groups) == [(0,), (1,)]
