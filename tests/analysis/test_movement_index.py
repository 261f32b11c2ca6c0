"""The index algebra of slice, select and pad: strides moved across them, base offsets,
local strides (base-free), and the masked walk's conditions, evaluated with ints."""

import pytest

from layoutfuse.analysis.accesses import Access, has_base, load_strides, upstream_accesses
from layoutfuse.analysis.index_walk import IntIndex, base_offset, local_strides, walk
from layoutfuse.dtypes import DataType
from layoutfuse.ir import Fusion, FusionGuard, IterDomain, Scalar, TensorView, ops


def _input(f, shape):
    tv = TensorView(f, [IterDomain(n) for n in shape], DataType.Float)
    f.add_input(tv)
    return tv


def _extents(*tvs):
    return {d.uid: d.extent for t in tvs for d in t.shape_domain}


def _access(out) -> Access:
    (a,) = upstream_accesses(out, set())
    return a


def test_slice_is_a_strided_view_at_a_base_offset():
    f = Fusion()
    with FusionGuard(f):
        x = _input(f, [8, 9])
        s = ops.slice_(x, [1, -7], [7, 9], [2, 3])
        out = ops.pointwise("neg", s)
    a = _access(out)
    ext = _extents(x, s, out)
    real = (9, 1)
    assert has_base(a)
    assert load_strides(a, real, ext) == (18, 3)
    assert base_offset(a, real, ext, {}, 2) == 1 * 9 + 2
    assert local_strides(a, real, ext, 2) == (18, 3)  # the base does not order dims


def test_select_drops_the_dim_and_its_index_is_the_base():
    f = Fusion()
    with FusionGuard(f):
        x = _input(f, [4, 5, 6])
        i = Scalar(f, DataType.Int)
        f.add_input(i)
        s = ops.select(x, i, 1)
        out = ops.pointwise("neg", s)
    a = _access(out)
    ext = _extents(x, s, out)
    assert load_strides(a, (30, 6, 1), ext) == (30, 1)
    norm = s.definition.inputs[1]
    assert base_offset(a, (30, 6, 1), ext, {id(norm): 3}, 2) == 18


@pytest.mark.parametrize(("lo", "hi"), [(2, 1), (-1, 2), (1, -2)])
def test_pad_walk_is_masked_where_the_input_does_not_reach(lo, hi):
    f = Fusion()
    with FusionGuard(f):
        x = _input(f, [5])
        p = ops.pad(x, [lo, hi], 0.0)
        out = ops.pointwise("neg", p)
    a = _access(out)
    ext = _extents(x, p, out)
    assert load_strides(a, (1,), ext) is None  # not affine: it walks its chain
    ix = IntIndex(ext)
    inside = []
    for j in range(5 + lo + hi):
        wk = walk(a, [j], ix)
        assert wk.indices == [j - lo]
        assert list(wk.predicates.values()) == [wk.valid]
        inside.append(all(wk.valid))
    assert inside == [0 <= j - lo < 5 for j in range(5 + lo + hi)]
