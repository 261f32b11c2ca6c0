"""Reductions over expanded dims read each value once (``Problem.repeat``).

A sum over an expanded dim (stride 0, extent M) of a plain reduction segment read the
same values M times: fp16 ``[4, 1457, 8192]`` with dim 2 expanded, summed over dims 0
and 2, walked 8192 copies of each of 5828 values and ran at 0.72x of torch.compile
(r2_004, H100). Such reduced coordinates are left out of the problem: the kernel walks
the others and scales its sums by M (``NREP``); a max and a min are the same over
copies, a Welford's M2 and count scale by M.

Checked against torch: sum (fp32, bf16, fp16, int32), max, min and a Welford (mean, M2,
count) over every position of the expanded dim in rank-3 inputs of each memory order,
two expanded dims, siblings, split and unsplit; the schedule (``repeat``, the groups
walked); and what keeps the walk: an expanded dim that is the only reduced one, a
prod, a normalization (var_mean), a random op's coordinates.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")
COPIES = dict(copies_min_bytes=0)  # the copies left out at any size


def _expanded(shape, expand: tuple[int, ...], order, dtype, seed=0) -> torch.Tensor:
    """A tensor of ``shape`` whose dims ``expand`` are expanded (stride 0), the others
    laid out in ``order`` (outermost first)."""
    base = [1 if d in expand else n for d, n in enumerate(shape)]
    g = torch.Generator().manual_seed(seed + sum(shape))
    physical = [base[d] for d in order]
    data = torch.randint(-8, 9, physical, generator=g).to(dtype)
    x = data.permute(*[list(order).index(d) for d in range(len(shape))])
    return x.expand(*shape)


def _reference(x, op, dims):
    d = x.double() if x.dtype.is_floating_point else x.long()
    return {"sum": lambda: d.sum(dims), "max": lambda: d.amax(dims), "min": lambda: d.amin(dims)}[
        op
    ]()


def _run(x, op, dims, sms=4):
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x), dims=list(dims)))
    configured(fd, target=small_gpu(sms))
    (out,) = fd.execute([x])
    want = _reference(x, op, dims)
    tol = 0.0 if op != "sum" or not x.dtype.is_floating_point else 4e-3 * float(want.abs().max())
    torch.testing.assert_close(out.double(), want.to(out.dtype).double(), atol=tol, rtol=0)
    return schedules(fd)


# every op over each dtype it takes, the sum over all four
OP_DTYPES = [
    ("sum", torch.float32),
    ("sum", torch.bfloat16),
    ("sum", torch.float16),
    ("sum", torch.int32),
    ("max", torch.float16),
    ("max", torch.bfloat16),
    ("min", torch.float32),
]
CASES = [
    (order, e, dims)
    for order in itertools.permutations(range(3))
    for e in range(3)
    for dims in [(0, 1, 2), tuple(sorted({e, (e + 1) % 3}))]
]


@pytest.mark.parametrize("op,dtype", OP_DTYPES, ids=str)
@pytest.mark.parametrize("order,expand,dims", CASES, ids=str)
def test_expanded_reduced_dims_are_not_walked(order, expand, dims, op, dtype):
    """[5, 6, 7] with one dim expanded, in every memory order, reduced over all dims or
    the expanded one and its neighbour: the expanded dim is left out and the values
    match torch's."""
    x = _expanded((5, 6, 7), (expand,), order, dtype)
    (params,) = _run(x, op, dims)
    assert params.scheduler == "reduction", params
    assert params.repeat, params


def test_two_expanded_dims_and_a_split():
    """dims 0 and 2 of [3, 2000, 4, 9] expanded, all dims summed on 64 multiprocessors:
    R (2000 x 9) is split; the partials are scaled (12 copies each) before they combine."""
    x = _expanded((3, 2000, 4, 9), (0, 2), (0, 1, 2, 3), torch.float32)
    (params,) = _run(x, "sum", (0, 1, 2, 3), sms=64)
    assert params.repeat and params.split > 1, params


def test_siblings_scale_each_result_by_its_op():
    """sum and max of one input over an expanded dim and another (a kernel each, as the
    segmenter cuts an expanded input's siblings): the sum scaled, the max not."""
    x = _expanded((6, 40, 5), (1,), (0, 1, 2), torch.float32)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t, dims=[1, 2]))
        fd.add_output(fd.ops.max(t, dims=[1, 2]))
    s, m = fd.execute([x])
    torch.testing.assert_close(s, x.sum((1, 2)))
    torch.testing.assert_close(m, x.amax((1, 2)))
    assert all(p.repeat for p in schedules(fd)), schedules(fd)


def test_a_welford_scales_its_m2_and_count():
    """fd.ops.welford over an expanded dim and another: the mean of the copies is the
    mean, M2 and the count are 40 times those of the values walked."""
    x = _expanded((6, 40, 5), (1,), (2, 0, 1), torch.float32)
    with FusionDefinition() as fd:
        avg, m2, n = fd.ops.welford(fd.from_pytorch(x), dims=[1, 2])
        for out in (avg, m2, n):
            fd.add_output(out)
    avg, m2, n = fd.execute([x])
    d = x.double()
    mean = d.mean((1, 2))
    torch.testing.assert_close(avg.double(), mean, rtol=1e-5, atol=1e-5)
    want_m2 = ((d - mean[:, None, None]) ** 2).sum((1, 2))
    torch.testing.assert_close(m2.double(), want_m2, rtol=1e-5, atol=1e-4)
    assert n.flatten().tolist() == [200] * 6
    (params,) = schedules(fd)
    assert params.repeat, params


@pytest.mark.parametrize("op,dtype", [*OP_DTYPES, ("welford", torch.float32)], ids=str)
def test_only_expanded_dims_reduced_run_in_place(op, dtype):
    """Every reduced dim expanded (r1_057: a sum over an expanded dim of extent 14 ran at
    0.65x of torch.compile, walking the copies): nothing is left to walk, the pointwise
    scheduler computes each reduction in place, the sum times the copies (a Welford's M2
    and count too)."""
    x = _expanded((5, 6, 7), (1,), (2, 0, 1), dtype)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        outs = (
            fd.ops.welford(t, dims=[1]) if op == "welford" else [getattr(fd.ops, op)(t, dims=[1])]
        )
        for out in outs:
            fd.add_output(out)
    got = fd.execute([x])
    if op == "welford":
        avg, m2, n = got
        torch.testing.assert_close(avg, x.mean(1))
        assert m2.abs().max().item() == 0.0 and n.unique().tolist() == [6]
    else:
        want = _reference(x, op, [1]).to(got[0].dtype)
        torch.testing.assert_close(got[0], want, rtol=1e-3, atol=0)
    (params,) = schedules(fd)
    assert params.scheduler == "pointwise" and params.repeat, params


@pytest.mark.parametrize("case", ["prod", "centered", "random"])
def test_what_keeps_the_walk(case):
    """A prod (M copies: a power), rows centred by their mean (a normalization that stores
    every copy) and a sum of random numbers (their coordinates move along the dim): the
    expanded dim is walked, and the values match torch's."""
    x = _expanded((5, 6, 7), (1,), (0, 1, 2), torch.float32)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if case == "prod":
            t = fd.ops.div(t, fd.define_scalar(8.0))
            fd.add_output(fd.ops.prod(t, dims=[1, 2]))
            want = [(x / 8).prod(2).prod(1)]
        elif case == "centered":
            total = fd.ops.sum(t, dims=[1, 2], keepdim=True)
            fd.add_output(fd.ops.sub(t, fd.ops.div(total, fd.define_scalar(42.0))))
            want = [x - x.mean((1, 2), keepdim=True)]
        else:
            u = fd.ops.uniform(
                fd.define_scalar(0.0),
                fd.define_scalar(1.0),
                shape=[5, 6, 7],
                dtype=DataType.Float,
                rng_seed=fd.define_scalar(1, DataType.Int),
                rng_offset=fd.define_scalar(0, DataType.Int),
            )
            fd.add_output(fd.ops.sum(fd.ops.mul(t, u), dims=[1, 2]))
            want = None
    outs = fd.execute([x])
    if want is not None:
        for got, w in zip(outs, want):
            torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-4)
    for params in schedules(fd):
        assert not getattr(params, "repeat", False), params


@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_a_var_mean_over_an_expanded_dim_reads_each_value_once(order, correction):
    """A var_mean (a Welford whose var feeds no row) over an expanded dim and a read one:
    not the normalization kernel, which walked every copy (r3_059, 0.58x of
    torch.compile), but the reduction kernel that leaves the copies out; torch's var and
    mean, also where the expanded dim is the only one reduced besides a size-1 dim."""
    x = _expanded((5, 6, 7), (0,), order, torch.float32)
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.from_pytorch(x), dims=[0, 2], correction=correction)
        fd.add_output(var)
        fd.add_output(mean)
    configured(fd, target=small_gpu(4), tuning=DEFAULT.with_fields(normalization=COPIES))
    var, mean = fd.execute([x])
    want_var, want_mean = torch.var_mean(x.double(), (0, 2), correction=correction)
    torch.testing.assert_close(var.double(), want_var, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mean.double(), want_mean, rtol=1e-5, atol=1e-6)
    (params,) = schedules(fd)
    assert params.scheduler == "reduction" and params.repeat, params


def test_a_var_mean_walks_copies_cheaper_than_a_launch():
    """Copies that cost less reading than ``copies_min_bytes`` (here 6 KB) stay in the
    normalization kernel, one launch."""
    x = _expanded((5, 6, 7), (0,), (0, 1, 2), torch.float32)
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.from_pytorch(x), dims=[0, 2], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    configured(fd, target=small_gpu(4))
    var, mean = fd.execute([x])
    torch.testing.assert_close(var, torch.var(x, (0, 2)), rtol=1e-5, atol=1e-5)
    (params,) = schedules(fd)
    assert params.scheduler == "normalization", params
