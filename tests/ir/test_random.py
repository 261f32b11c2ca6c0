"""Random ops (uniform, normal, rand_like, randn_like): Philox at each element's linear index.

The rows' torch reference computes the same Philox words with int64 arithmetic, so a
kernel's uniform numbers must equal it bit for bit, and any schedule (layouts of the
inputs and outputs, tile sizes, a reduction or normalization kernel recomputing them)
must give the same numbers. Distributions are checked by mean, variance, a
Kolmogorov-Smirnov statistic and the correlation of neighbours (1 to 8 apart: one call
serves up to 4 of them); seeds drawn per call (no rng_seed) by their differences and
``torch.manual_seed``. One call per run of elements (the grouped form) and its
numbering: ``test_random_grouped.py``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import torch

from layoutfuse.codegen.backend import ptx_vector_widths
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.errors import DefinitionError, UnsupportedError
from layoutfuse.ir.ops.random import UNIFORM_BITS
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.runtime.executor import FusionExecutor
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu
from support.random_ops import (
    DTYPES,
    NORMAL_TOL,
    OFFSET,
    SEED,
    dropout,
    random_fd,
    reference,
)

# masked lanes of a partial tile compute 0/0 in the interpreter (never stored)
pytestmark = [
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


# --- the numbers: Philox at the linear index ---------------------------------------------------
@pytest.mark.parametrize("op", ["uniform", "normal"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
def test_the_kernel_computes_the_reference_numbers(op, dtype):
    shape = (5, 7, 3)
    (out,) = random_fd(op, shape, dtype).execute([SEED, OFFSET])
    assert out.dtype == DTYPES[dtype] and out.shape == shape
    ref = reference(op, shape, dtype)
    if op == "uniform":
        assert torch.equal(out, ref)  # exact: top bits of a word times a power of two
    else:
        torch.testing.assert_close(out, ref, **NORMAL_TOL[dtype])


@pytest.mark.parametrize("op", ["uniform", "normal"])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double], ids=str)
@pytest.mark.parametrize("shape", [(0, 3), (), (1, 1, 5), (1, 0)], ids=str)
def test_empty_scalar_and_unit_shapes(op, dtype, shape):
    (out,) = random_fd(op, shape, dtype).execute([SEED, OFFSET])
    assert out.shape == shape and out.dtype == DTYPES[dtype]
    tol = dict(rtol=0, atol=0) if op == "uniform" else NORMAL_TOL[dtype]
    torch.testing.assert_close(out, reference(op, shape, dtype), **tol)


def test_rand_like_of_a_broadcast_input():
    """A [1, n] input declared broadcast along dim 0: rand_like has its shape, and dropout
    of it keeps the input's broadcast (one row)."""
    x = torch.randn(1, 9, generator=torch.Generator().manual_seed(6))
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float)
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        fd.add_output(fd.ops.rand_like(t, rng_seed=s, rng_offset=o))
        fd.add_output(dropout(fd, t, s, o, 0.5))
    r, y = fd.execute([x, SEED, OFFSET])
    ref = reference("uniform", (1, 9), DataType.Float)
    assert torch.equal(r, ref)
    torch.testing.assert_close(y, torch.where(ref < 0.5, x / 0.5, 0.0))


def test_bounds_scale_the_numbers():
    shape, dtype = (9, 11), DataType.Float
    (out,) = random_fd("uniform", shape, dtype, a=-2.0, b=3.0).execute([SEED, OFFSET])
    # mul and add may fuse on the GPU: one rounding off the reference's two
    torch.testing.assert_close(out, reference("uniform", shape, dtype, a=-2.0, b=3.0))
    assert out.min() >= -2.0 and out.max() < 3.0
    (out,) = random_fd("normal", shape, dtype, a=1.5, b=0.25).execute([SEED, OFFSET])
    torch.testing.assert_close(out, reference("normal", shape, dtype, a=1.5, b=0.25))


def test_symbolic_shapes_from_scalar_inputs():
    """Thunder's form: the shape from scalar inputs, rng_seed and rng_offset inputs too."""
    with FusionDefinition() as fd:
        n0, n1 = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        seed, offset = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        lo = fd.define_scalar(0.0, dtype=DataType.Double)
        hi = fd.define_scalar(1.0, dtype=DataType.Double)
        fd.add_output(
            fd.ops.uniform(lo, hi, [n0, n1], rng_seed=seed, rng_offset=offset, dtype=DataType.Half)
        )
    for shape in [(3, 17), (40, 5)]:
        (out,) = fd.execute([*shape, SEED, OFFSET])
        assert torch.equal(out, reference("uniform", shape, DataType.Half))


def test_a_vector_shape():
    """The shape as a Vector: a symbolic input's ``shape()`` and a defined vector."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        seed, offset = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        mean = fd.define_scalar(0.0, dtype=DataType.Double)
        std = fd.define_scalar(1.0, dtype=DataType.Double)
        r = fd.ops.normal(mean, std, t.shape(), rng_seed=seed, rng_offset=offset)
        fd.add_output(fd.ops.add(t, r))
        v = fd.define_vector([4, 3])
        fd.add_output(fd.ops.normal(mean, std, v, rng_seed=seed, rng_offset=offset))
    x = torch.zeros(7, 2)
    out, fixed = fd.execute([x, SEED, OFFSET])
    torch.testing.assert_close(
        out, reference("normal", (7, 2), DataType.Float), **NORMAL_TOL[DataType.Float]
    )
    torch.testing.assert_close(
        fixed, reference("normal", (4, 3), DataType.Float), **NORMAL_TOL[DataType.Float]
    )


# --- whatever the schedule ---------------------------------------------------------------------
def _forced(**fields):
    """Heuristics that take the scheduler's params with ``fields`` replaced."""

    def heuristics(scheduler, problem, info, tuning):
        return dataclasses.replace(scheduler.heuristics(problem, info, tuning), **fields)

    return heuristics


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=str)
def test_the_numbers_do_not_depend_on_the_schedule(dtype):
    """rand_like and dropout of one 3-D tensor in every memory order, its random tensor
    stored in every order, under two forced tile widths: the random numbers are always the
    reference's at the logical index, and the schedules really differ."""
    shape = (4, 6, 5)
    ref = reference("uniform", shape, dtype)
    g = torch.Generator().manual_seed(0)
    base = torch.randn(shape, generator=g).to(DTYPES[dtype])
    seen = set()
    orders = list(itertools.permutations(range(3)))
    for order, out_order in zip(orders, reversed(orders)):
        x = base.permute(order).contiguous().permute([order.index(d) for d in range(3)])
        for block in (8, 64):
            with FusionDefinition() as fd:
                t = fd.from_pytorch(x)
                s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
                r = fd.ops.rand_like(t, rng_seed=s, rng_offset=o)
                fd.add_output(r, stride_order=list(out_order))
                fd.add_output(dropout(fd, t, s, o, 0.25))
            configured(fd, heuristics=_forced(block_x=block))
            r_out, y = fd.execute([x, SEED, OFFSET])
            assert torch.equal(r_out, ref), (order, out_order, block)
            expected = torch.where(ref < 0.75, (x.float() / 0.75).to(x.dtype), 0.0)
            torch.testing.assert_close(y, expected.to(x.dtype))
            seen.update(str(p) for p in schedules(fd))
    assert len(seen) >= 6, "the layouts and tiles should give several schedules"


def test_sliced_and_expanded_inputs_give_the_same_numbers():
    shape = (6, 8)
    ref = reference("uniform", shape, DataType.Float)
    g = torch.Generator().manual_seed(1)
    wide = torch.randn(6, 16, generator=g)
    for x in [wide[:, ::2], wide[:, 3:11], torch.randn(6, 1, generator=g).expand(6, 8)]:
        with FusionDefinition() as fd:
            t = fd.from_pytorch(x)
            s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
            fd.add_output(fd.ops.rand_like(t, rng_seed=s, rng_offset=o))
        (r,) = fd.execute([x, SEED, OFFSET])
        assert torch.equal(r, ref)


def test_shape_ops_move_the_numbers_with_their_elements():
    """A permuted, broadcast or (not as a view) reshaped random tensor holds the reference's
    numbers moved as the shape op moves elements."""
    a, b, m = 5, 6, 3
    dt = DataType.Float
    ref = reference("uniform", (a, b), dt)
    with FusionDefinition() as fd:
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        zero = fd.define_scalar(0.0, dtype=DataType.Double)
        one = fd.define_scalar(1.0, dtype=DataType.Double)
        r = fd.ops.uniform(zero, one, [a, b], rng_seed=s, rng_offset=o, dtype=dt)
        fd.add_output(fd.ops.permute(r, [1, 0]), stride_order=[1, 0])
        fd.add_output(fd.ops.broadcast_in_dim(r, shape=[m, a, b], broadcast_dims=[1, 2]))
        fd.add_output(fd.ops.reshape(fd.ops.permute(r, [1, 0]), [a * b]))
    transposed, broadcast, flat = fd.execute([SEED, OFFSET])
    assert torch.equal(transposed, ref.t())
    assert torch.equal(broadcast, ref.expand(m, a, b))
    assert torch.equal(flat, ref.t().reshape(-1))


@pytest.mark.parametrize("kernel", ["pointwise", "sum", "cumsum"])
def test_movement_ops_move_the_numbers_with_their_elements(kernel):
    """A slice (with steps) and a select of a random tensor hold the reference's numbers at
    the positions they read, in a pointwise, a reduction or a scan kernel: the random
    op's coordinate takes the slice's start as a load does (it had none, runtime.problems'
    ``based``: the numbers of the first positions)."""
    a, b = 5, 6
    ref = reference("uniform", (a, b), DataType.Float)
    with FusionDefinition() as fd:
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        zero = fd.define_scalar(0.0, dtype=DataType.Double)
        one = fd.define_scalar(1.0, dtype=DataType.Double)
        r = fd.ops.uniform(zero, one, [a, b], rng_seed=s, rng_offset=o, dtype=DataType.Float)
        parts = [fd.ops.slice(r, [1, 2], [5, 6], [2, 3]), fd.ops.select(r, 3, dim=0)]
        for p in parts:
            if kernel == "sum":
                p = fd.ops.sum(p, dims=[-1])
            elif kernel == "cumsum":
                p = fd.ops.cumsum(p, dim=-1)
            fd.add_output(p)
    got = fd.execute([SEED, OFFSET])
    for out, want in zip(got, [ref[1:5:2, 2:6:3], ref[3]], strict=True):
        if kernel == "sum":
            want = want.sum(-1)
        elif kernel == "cumsum":
            want = want.cumsum(-1)
        torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)


def _dropout_then(kind: str, x: torch.Tensor) -> FusionDefinition:
    """dropout of ``x`` (a [rows, cols] input in its own layout), then sum over dim 1, or a
    softmax over dim 1: the random op inside a reduction or a normalization kernel; or a
    layer norm over dim 1, then dropout: in the normalization kernel's epilogue."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        if kind == "layer_norm":
            var, mean = fd.ops.var_mean(t, dims=[1], correction=0)
            rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))
            centred = fd.ops.sub(t, fd.ops.broadcast_in_dim(mean, t.shape(), [0]))
            normed = fd.ops.mul(centred, fd.ops.broadcast_in_dim(rstd, t.shape(), [0]))
            fd.add_output(dropout(fd, normed, s, o, 0.1))
            return fd
        y = dropout(fd, fd.ops.cast(t, DataType.Float), s, o, 0.1)
        if kind == "sum":
            y = fd.ops.sum(y, dims=[1])
        elif kind == "softmax":
            e = fd.ops.exp(fd.ops.sub(y, fd.ops.max(y, dims=[1], keepdim=True)))
            y = fd.ops.div(e, fd.ops.sum(e, dims=[1], keepdim=True))
        fd.add_output(y)
    return fd


@pytest.mark.parametrize("kind", ["pointwise", "sum", "softmax", "layer_norm"])
@pytest.mark.parametrize("layout", ["row", "column"])
def test_dropout_is_one_kernel_with_its_neighbours(kind, layout):
    """One kernel, the reference's values, compiled for sm_90; one Philox call per run of 4
    (``tl.join``) in the pointwise kernel of the row-major input only: the column-major
    one's tile runs across the random op's rows, and the reduction and normalization
    kernels call Philox per element."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(48, 40, generator=g) if layout == "row" else torch.randn(40, 48).t()
    fd = _dropout_then(kind, x)
    (y,) = fd.execute([x, SEED, OFFSET])
    run = fd.executor().last_run
    assert len(run.launches) == 1, [s.reason for s in run.segments]
    scheduler = {"pointwise": "pointwise", "sum": "reduction"}.get(kind, "normalization")
    assert run.segments[0].scheduler == scheduler
    ref = FusionExecutor(fd.executor().fusion, compute="reference").run([x, SEED, OFFSET])[0]
    torch.testing.assert_close(y, ref)
    assert ("tl.join(" in fd.last_triton_code()) is (kind == "pointwise" and layout == "row")
    arts = compile_last_run(fd.executor())
    assert all(".target sm_90" in a.ptx for a in arts)


def test_a_normalization_that_rereads_its_rows_recomputes_the_same_numbers():
    """Rows longer than the tile: the normalization kernel walks each row twice and computes
    the random numbers anew each time."""
    x = torch.randn(6, 300, generator=torch.Generator().manual_seed(3))
    fd = _dropout_then("softmax", x)
    configured(fd, tuning=DEFAULT.with_fields(normalization=dict(max_tile=64)), target=small_gpu(4))
    (y,) = fd.execute([x, SEED, OFFSET])
    (params,) = schedules(fd)
    assert params.mode == "looped", params  # each row is read, and its numbers made, twice
    ref = FusionExecutor(fd.executor().fusion, compute="reference").run([x, SEED, OFFSET])[0]
    torch.testing.assert_close(y, ref)
    torch.testing.assert_close(y.sum(1), torch.ones(6))


# --- seeds and offsets -------------------------------------------------------------------------
def test_other_seeds_and_offsets_give_other_numbers():
    fd = random_fd("uniform", (64, 64), DataType.Float)
    (base,) = fd.execute([SEED, OFFSET])
    (again,) = fd.execute([SEED, OFFSET])
    assert torch.equal(base, again)
    (seed2,) = fd.execute([SEED + 1, OFFSET])
    (offset2,) = fd.execute([SEED, OFFSET + 1])
    flat, flat2 = base.reshape(-1), offset2.reshape(-1)
    for other in (seed2, offset2):
        assert (other == base).float().mean() < 0.01
    # another offset is another stream, not the same one shifted by an element
    assert (flat2[:-1] == flat[1:]).float().mean() < 0.01
    assert (flat2[1:] == flat[:-1]).float().mean() < 0.01


@pytest.mark.parametrize(
    "seed, offset", [(-1, 0), (2**63 - 1, 2**40 + 3), (0, -5), (1, 1), (16, 2**32)]
)
def test_any_int64_seed_and_offset_gives_the_reference_numbers(seed, offset):
    """Negative values, both 32-bit halves of the seed (Philox's key) and of the offset
    (the counter's high words), 1 and multiples of 16 (which Triton specializes)."""
    fd = random_fd("uniform", (16, 9), DataType.Float)
    (out,) = fd.execute([seed, offset])
    assert torch.equal(out, reference("uniform", (16, 9), DataType.Float, seed, offset))
    if offset >= 2**32:  # the high word alone changes every number
        (low,) = fd.execute([seed, offset - 2**32])
        assert (low == out).float().mean() < 0.02


def test_new_seeds_and_offsets_replay_the_plan():
    """Thunder passes a new (seed, offset) every step: one plan serves them all (a new plan
    only where Triton would specialize the value otherwise: 1, multiples of 16), and each
    call's numbers are its own seed's and offset's."""
    x = torch.randn(10, 12, generator=torch.Generator().manual_seed(7))
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        fd.add_output(fd.ops.rand_like(t, rng_seed=s, rng_offset=o))
        fd.add_output(dropout(fd, t, s, o, 0.5))
    planned = fd.executor().planned_runs
    ordinary = [(SEED + 2 * k, 3 + 2 * k) for k in range(4)]  # odd: one specialization
    special = [(16, 32), (1, 1), (SEED, 2**40 + 1), (SEED, 2**40 + 1)]
    for k, (seed, offset) in enumerate(ordinary + special):
        r, y = fd.execute([x, seed, offset])
        ref = reference("uniform", x.shape, DataType.Float, seed, offset)
        assert torch.equal(r, ref)
        torch.testing.assert_close(y, torch.where(ref < 0.5, x / 0.5, 0.0))
        if k == len(ordinary) - 1:
            assert fd.executor().planned_runs == planned + 1


def test_an_input_that_is_also_a_shape_is_keyed_by_its_value():
    """A scalar input that is an offset and also an extent: its value changes the plan."""
    with FusionDefinition() as fd:
        n = fd.define_scalar(dtype=DataType.Int)
        zero = fd.define_scalar(0.0, dtype=DataType.Double)
        one = fd.define_scalar(1.0, dtype=DataType.Double)
        fd.add_output(fd.ops.uniform(zero, one, [n, 3], rng_seed=n, rng_offset=n))
    for k in (5, 7):
        (out,) = fd.execute([k])
        assert torch.equal(out, reference("uniform", (k, 3), DataType.Float, k, k))


def _unseeded() -> FusionDefinition:
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.rand_like(t))
        fd.add_output(fd.ops.randn_like(t))
        fd.add_output(fd.ops.rand_like(t))
    return fd


def test_without_a_seed_each_call_draws_one_from_torch():
    fd = _unseeded()
    x = torch.zeros(16, 16)
    planned = fd.executor().planned_runs
    torch.manual_seed(11)
    first = fd.execute([x])
    second = fd.execute([x])  # replayed: draws fresh seeds too
    torch.manual_seed(11)
    third = fd.execute([x])
    assert fd.executor().planned_runs <= planned + 1
    for a, b, c in zip(first, second, third):
        assert torch.equal(a, c)
        assert (a == b).float().mean() < 0.01
    u1, _, u2 = first
    assert (u1 == u2).float().mean() < 0.01  # each op its own seed
    assert 0.0 <= u1.min() and u1.max() < 1.0


def test_without_a_seed_every_kernel_of_a_call_sees_the_same_numbers():
    """The random tensor is an output and feeds a reduction: two kernels compute it, with
    the one seed the call drew."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        r = fd.ops.rand_like(t)
        fd.add_output(r)
        fd.add_output(fd.ops.sum(r, dims=[1]))
    x = torch.zeros(12, 20)
    for _ in range(2):  # planned, then replayed
        r_out, total = fd.execute([x])
        torch.testing.assert_close(total, r_out.sum(1))
    assert [s.scheduler for s in fd.executor().last_run.segments] == ["pointwise", "reduction"]


def test_without_a_seed_a_replay_matches_a_planned_call():
    """A planned call and a replayed call draw their seeds in the same order: after the
    same ``torch.manual_seed`` they give the same numbers."""
    fd = _unseeded()
    x = torch.zeros(8, 9)  # a shape no other test runs: the first call plans
    planned = fd.executor().planned_runs
    torch.manual_seed(5)
    first = fd.execute([x])
    torch.manual_seed(5)
    replayed = fd.execute([x])
    assert fd.executor().planned_runs == planned + 1
    for a, b in zip(first, replayed):
        assert torch.equal(a, b)


# --- distributions -----------------------------------------------------------------------------
def ks_statistic(samples: torch.Tensor, cdf) -> float:
    """sup |ECDF - cdf| (scipy's ``kstest`` when scipy is installed)."""
    x = samples.double().reshape(-1).cpu()
    try:
        from scipy.stats import kstest
    except ImportError:
        n = x.numel()
        f = cdf(torch.sort(x).values)
        i = torch.arange(1, n + 1, dtype=torch.float64)
        return max((i / n - f).max().item(), (f - (i - 1) / n).max().item())
    return float(kstest(x.numpy(), lambda v: cdf(torch.from_numpy(v)).numpy()).statistic)


def _uniform_cdf(lo, hi):
    return lambda v: ((v - lo) / (hi - lo)).clamp(0.0, 1.0)


def _normal_cdf(mean, std):
    return lambda v: 0.5 * (1.0 + torch.erf((v - mean) / (std * math.sqrt(2.0))))


@pytest.mark.parametrize("op", ["uniform", "normal"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
def test_distribution(op, dtype):
    """Mean and variance within 5 standard errors, the KS statistic under its 0.1% critical
    value (plus the dtype's spacing), neighbours uncorrelated."""
    shape = (128, 128)
    n = math.prod(shape)
    a, b = (-1.0, 3.0) if op == "uniform" else (1.5, 2.0)
    (out,) = random_fd(op, shape, dtype, a=a, b=b).execute([SEED, OFFSET])
    x = out.double().reshape(-1).cpu()
    if op == "uniform":
        mean, var, cdf = (a + b) / 2, (b - a) ** 2 / 12, _uniform_cdf(a, b)
        assert x.min() >= a and x.max() < b
        var_se = var * math.sqrt(0.8 / n)  # var of (x - m)^2: (b-a)^4/180, i.e. 0.8 var^2
    else:
        mean, var, cdf = a, b * b, _normal_cdf(a, b)
        var_se = var * math.sqrt(2.0 / n)
    assert abs(x.mean().item() - mean) < 5 * math.sqrt(var / n)
    assert abs(x.var().item() - var) < 5 * var_se + var * 2.0 ** -UNIFORM_BITS[dtype]
    assert ks_statistic(x, cdf) < 1.95 / math.sqrt(n) + 2.0 ** -UNIFORM_BITS[dtype]
    assert_uncorrelated(x)


def assert_uncorrelated(x: torch.Tensor, lags=range(1, 9)) -> None:
    """Neighbours ``lag`` apart uncorrelated (5 standard errors): a Philox call's words
    are 1-3 elements apart, consecutive calls' 4."""
    centred = x - x.mean()
    for lag in lags:
        corr = (centred[lag:] * centred[:-lag]).mean() / centred.var()
        assert abs(corr.item()) < 5 / math.sqrt(x.numel()), lag


@pytest.mark.parametrize("op", ["rand_like", "randn_like"])
def test_like_ops_are_standard_in_the_input_dtype(op):
    x = torch.zeros(96, 96, dtype=torch.bfloat16)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        fd.add_output(getattr(fd.ops, op)(t, rng_seed=s, rng_offset=o))
    (out,) = fd.execute([x, SEED, OFFSET])
    assert out.dtype == torch.bfloat16
    kind = "uniform" if op == "rand_like" else "normal"
    ref = reference(kind, x.shape, DataType.BFloat16)
    if kind == "uniform":
        assert torch.equal(out, ref)
    else:
        torch.testing.assert_close(out, ref, **NORMAL_TOL[DataType.BFloat16])
    cdf = _uniform_cdf(0.0, 1.0) if kind == "uniform" else _normal_cdf(0.0, 1.0)
    assert ks_statistic(out, cdf) < 1.95 / 96 + 2.0**-8
    assert_uncorrelated(out.double().reshape(-1))


# --- compiled for Hopper -----------------------------------------------------------------------
@pytest.mark.parametrize("op", ["uniform", "normal"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
def test_random_kernels_compile_for_sm_90(op, dtype):
    fd = random_fd(op, (8, 32), dtype)
    fd.execute([SEED, OFFSET])
    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx
    assert "mul.hi.u32" in art.ptx  # Philox's rounds


def test_64_bit_indexing_and_a_generic_walk_compile_for_sm_90():
    """The index in int64 (as for tensors past 2**31 elements), and a reshape walked per
    element: the same numbers, and kernels that compile for sm_90."""
    a, b = 5, 6
    ref = reference("uniform", (a, b), DataType.Float)
    for index64 in (False, True):
        with FusionDefinition() as fd:
            s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
            zero = fd.define_scalar(0.0, dtype=DataType.Double)
            one = fd.define_scalar(1.0, dtype=DataType.Double)
            r = fd.ops.uniform(zero, one, [a, b], rng_seed=s, rng_offset=o)
            fd.add_output(fd.ops.reshape(fd.ops.permute(r, [1, 0]), [a * b]))
        configured(fd, heuristics=_forced(index64=index64))
        (flat,) = fd.execute([SEED, OFFSET])
        assert torch.equal(flat, ref.t().reshape(-1))
        (params,) = schedules(fd)
        assert params.generic and params.index64 is index64
        (art,) = compile_last_run(fd.executor())
        assert ".target sm_90" in art.ptx


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=str)
def test_dropout_keeps_16_byte_vectors(dtype):
    """The random numbers are computed, not loaded: the dropout kernel reads its input and
    writes its output in 16-byte vectors only, as a plain pointwise kernel does."""
    x = torch.randn(128, 256, generator=torch.Generator().manual_seed(5)).to(DTYPES[dtype])
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        fd.add_output(fd.ops.cast(dropout(fd, t, s, o, 0.1), dtype))
    fd.execute([x, SEED, OFFSET])
    (art,) = compile_last_run(fd.executor())
    widths = ptx_vector_widths(art.ptx)
    assert widths.get("ld.global.v4", 0) > 0 and widths.get("st.global.v4", 0) > 0, widths
    assert set(widths) == {"ld.global.v4", "st.global.v4"}, widths


# --- arguments ---------------------------------------------------------------------------------
def test_argument_errors():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        s = fd.define_scalar(dtype=DataType.Int)
        f = fd.define_scalar(1.0, dtype=DataType.Double)
        with pytest.raises(DefinitionError, match="provided together"):
            fd.ops.uniform(f, f, [4], rng_seed=s)
        with pytest.raises(DefinitionError, match="provided together"):
            fd.ops.rand_like(t, rng_offset=s)
        with pytest.raises(DefinitionError, match="floating point"):
            fd.ops.normal(f, f, [4], dtype=DataType.Int)
        with pytest.raises(UnsupportedError, match="Float8"):
            fd.ops.uniform(f, f, [4], dtype=DataType.Float8_e4m3fn)
        with pytest.raises(DefinitionError, match="floating point"):
            fd.ops.randn_like(i)
        with pytest.raises(DefinitionError, match="integer Scalar"):
            fd.ops.rand_like(t, rng_seed=f, rng_offset=s)
        with pytest.raises(TypeError):
            fd.ops.uniform(f, f, [4], s, s)  # rng_seed and rng_offset are keyword-only
        fd.add_output(fd.ops.uniform(f, f, [4], rng_seed=s, rng_offset=s, dtype=DataType.Half))
    assert "fd.ops.uniform(S3, S3, shape=[4], rng_seed=S2, rng_offset=S2, dtype=DataType.Half)" in (
        str(fd)
    )


def test_the_cpp_test_api_forms():
    """nvFuser's C++ signatures (shape first; a constant philox seed and offset), and
    ``testing.validate`` against the reference, which computes the same numbers."""
    from layoutfuse import testing_api as api

    fusion = api.Fusion()
    with api.FusionGuard(fusion):
        tv0 = api.make_contig_tensor(2)
        fusion.add_input(tv0)
        keep = api.lt(api.rand_like(tv0, 123, 4), 0.5)
        fusion.add_output(api.where(keep, api.mul(tv0, 2.0), 0.0))
        fusion.add_output(api.uniform([3, 5], -1.0, 1.0, DataType.Float, 9, 0))
        fusion.add_output(api.randn([4], DataType.Double, 9, 1))
    x = torch.randn(6, 10, generator=torch.Generator().manual_seed(4))
    fec = api.FusionExecutorCache(fusion)
    dropped, u, n = fec.run_fusion_with_inputs([x])
    api.testing.validate(fec.fusion(), [dropped, u, n], [x])
    mask = reference("uniform", (6, 10), DataType.Float, 123, 4) < 0.5
    torch.testing.assert_close(dropped, torch.where(mask, x * 2.0, 0.0))
    torch.testing.assert_close(u, reference("uniform", (3, 5), DataType.Float, 9, 0, -1.0, 1.0))
    torch.testing.assert_close(n, reference("normal", (4,), DataType.Double, 9, 1))


def test_a_constant_extent_of_one_is_a_broadcast_dim():
    """As nvFuser's factories make them, a random tensor's (and ``full``'s) dim of the
    constant extent 1 is a broadcast dim: ``uniform(shape=[6, 4, 1, 1])`` broadcasts in a
    ``where`` against a [4, 5, 3] mask to [6, 4, 5, 3] (generated program 111514)."""
    mask = torch.rand(4, 5, 3, generator=torch.Generator().manual_seed(1)) > 0.5
    x = torch.randn(6, 4, 1, 1)
    with FusionDefinition() as fd:
        m, t = fd.from_pytorch(mask), fd.from_pytorch(x)
        lo, hi = fd.define_scalar(0.25), fd.define_scalar(0.5)
        seed, offset = fd.define_scalar(7), fd.define_scalar(0)
        u = fd.ops.uniform(lo, hi, [6, 4, 1, 1], rng_seed=seed, rng_offset=offset)
        fd.add_output(fd.ops.where(m, t, u))
        fd.add_output(fd.ops.where(m, fd.ops.full([6, 4, 1, 1], lo, DataType.Float), t))
    a, b = fd.execute([mask, x])
    assert a.shape == b.shape == (6, 4, 5, 3)
    m4 = mask.expand(6, 4, 5, 3)
    assert torch.equal(a[m4], x.expand(6, 4, 5, 3)[m4])
    u = a[~m4]  # the uniform's values: in range, one per (i, j) along the broadcast dims
    assert bool(((u >= 0.25) & (u < 0.5)).all())
    for i, j in itertools.product(range(6), range(4)):  # a broadcast: one value a row
        assert a[i, j][~mask[j]].unique().numel() == 1
    assert torch.equal(b, torch.where(mask, torch.tensor(0.25), x))
