"""Reductions of one input to different shapes, combined (Thunder emits such fusions:
``a.amax(1) + a.amin(0).sum() + a.prod(1)``): one normalization group can read another
group's results, which the other group then stores. Every memory order, a slice and an
expanded dim; fp32 and bf16."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition
from support.tensors import with_order

LAYOUTS = {
    "row": lambda: torch.randn(6, 5),
    "col": lambda: torch.randn(5, 6).t(),
    "sliced": lambda: torch.randn(6, 11)[:, 1:11:2],
    "expanded": lambda: torch.randn(6, 1).expand(6, 5),
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def define(x: torch.Tensor) -> FusionDefinition:
    """The fusion, its input declared from ``x`` as Thunder declares it (``from_pytorch``:
    sizes, contiguity and stride order of the tensor)."""
    with FusionDefinition() as fd:
        a = fd.ops.cast(fd.from_pytorch(x), DataType.Float)
        row_max = fd.ops.max(a, dims=[1])
        total_of_col_min = fd.ops.sum(fd.ops.min(a, dims=[0]), dims=[0])
        row_prod = fd.ops.prod(a, dims=[1])
        fd.add_output(fd.ops.add(fd.ops.add(row_max, total_of_col_min), row_prod))
        fd.add_output(fd.ops.sum(fd.ops.mul(a, a), dims=[0]))
    return fd


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_to_different_shapes_combined(layout, dtype):
    FusionCache.reset()
    x = LAYOUTS[layout]().to(DTYPES[dtype])
    fd = define(x)
    for _ in range(2):  # planned, then replayed
        combined, col_squares = fd.execute([x])
        xf = x.float()
        torch.testing.assert_close(
            combined, xf.amax(1) + xf.amin(0).sum() + xf.prod(1), rtol=1e-5, atol=1e-5
        )
        torch.testing.assert_close(col_squares, (xf * xf).sum(0), rtol=1e-5, atol=1e-5)
    assert len(fd.segment([x])) >= 2


# The sweep: a 3-D input in every memory order, reduced over two or three different dim
# sets (each result broadcast back with ``broadcast_in_dim``, as Thunder writes it), the
# results combined pointwise with each other and, in half the cases, with the input; a
# reduction of a reduction (``sum(max(x, A), B)``) in the chained cases.
ORDERS = list(itertools.permutations(range(3)))
DIM_SETS = [s for k in (1, 2, 3) for s in itertools.combinations(range(3), k)]
REDUCERS = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}
SWEEP = [
    (order, sets, with_input)
    for order in ORDERS
    for sets in itertools.combinations(DIM_SETS, 2)
    for with_input in (False, True)
] + [
    (order, sets, False)
    for order in ORDERS
    for sets in [((0,), (1,), (2,)), ((2,), (0, 1), (1, 2)), ((0, 2), (1,), (0, 1, 2))]
]
SAMPLE = set(random.Random(15).sample(range(len(SWEEP)), 10))


def _sweep_id(case) -> str:
    order, sets, with_input = case
    sets_id = "_".join("".join(map(str, s)) for s in sets)
    return f"order{''.join(map(str, order))}-r{sets_id}{'-x' if with_input else ''}"


def _sweep_params():
    for k, case in enumerate(SWEEP):
        marks = () if k in SAMPLE else (pytest.mark.full,)
        yield pytest.param(case, id=_sweep_id(case), marks=marks)


def _combined_reductions(fd, x, sets, with_input, ndim=3):
    """``fd.ops`` (or torch, with ``fd=None``) version of the swept program."""
    names = list(REDUCERS)
    acc = x if with_input else None
    for k, dims in enumerate(sets):
        name = names[k % len(names)]
        if fd is None:
            r = REDUCERS[name](x, dim=dims, keepdim=True).expand(x.shape)
        else:
            r = getattr(fd.ops, name)(x, dims=list(dims))
            kept = [d for d in range(ndim) if d not in dims]
            r = fd.ops.broadcast_in_dim(r, shape=fd.ops.shape(x), broadcast_dims=kept)
        acc = r if acc is None else (acc + r if fd is None else fd.ops.add(acc, r))
    return acc


@pytest.mark.parametrize("case", list(_sweep_params()))
def test_reductions_over_different_dim_sets_combined(case):
    order, sets, with_input = case
    x = with_order((4, 5, 6), order, torch.float32, seed=len(sets))
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        out = _combined_reductions(fd, t, sets, with_input)
        fd.add_output(out)
        # a chained reduction beside them: the total of a partial reduction
        fd.add_output(fd.ops.sum(fd.ops.max(t, dims=list(sets[0]))))
    want = _combined_reductions(None, x, sets, with_input)
    want_total = x.amax(dim=sets[0]).sum()
    for _ in range(2):  # planned, then replayed
        got, total = fd.execute([x])
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(total, want_total, rtol=1e-5, atol=1e-5)
    # the output follows the input's memory order; a dim every reduction reduced (and the
    # input does not enter) is a broadcast of the output and stays expanded (stride 0)
    constant = set() if with_input else set.intersection(*(set(s) for s in sets))
    assert [d for d in range(3) if got.stride(d) == 0] == sorted(constant)
    wide = [d for d in order if d not in constant]
    assert sorted(wide, key=lambda d: -got.stride(d)) == wide, (got.stride(), order)
