"""Outer reductions over contiguous rows no multiple of 16 bytes long (``ReductionParams.fold``).

The column sums of a contiguous ``[n1, n0]`` input with n0 = 127 bf16 (rows of 254
bytes) start a row on a 16-byte boundary only every 8th row: every load moved one
element. The fold reads G rows as one row of ``G * n0`` elements (a multiple of 16
bytes: 16-byte loads), and the finishing kernel combines the G partials of each column
with the split's; the rows past the last whole fold are one masked tail step.

Checked against torch (float64 references): sum, max, min, prod and sibling reductions,
a fused prologue over two inputs, in fp32, bf16 and fp16, for
folds of 2, 4 and 8 rows, with and without tail rows, split and unsplit, 2-D and 3-D
inputs whose dims merge into the two groups, pinned output orders; where it does not
apply (a Welford, rows already aligned, sliced rows, a broadcast load, small inputs);
and the sm_90 PTX: 16-byte loads with the fold, none without.
"""

from __future__ import annotations

import math

import pytest
import torch

from layoutfuse.analysis.canonical import Group
from layoutfuse.analysis.device import H200
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers import measure
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.problem import Problem
from layoutfuse.schedulers.reduction_tiles import DEFAULT_TUNING
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

NV = {
    torch.float32: DataType.Float,
    torch.bfloat16: DataType.BFloat16,
    torch.float16: DataType.Half,
}
# the interpreter's inputs are small: fold whatever the size; fp32 Welfords too (the rule
# folds a Welford's 2-byte loads only, ``fold_welford_max_item``: the mechanism is the same)
ANY_SIZE = dict(fold_min_bytes=0, fold_min_rows=4, fold_welford_max_item=4)
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def _tuning(fold: int = 1, **fields):
    return DEFAULT.with_fields(reduction=dict(ANY_SIZE, fold_rows=fold, **fields))


def _values(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return (torch.randint(-64, 65, shape, generator=g) / 64).to(dtype)


def _reference(x: torch.Tensor, op: str, dims) -> torch.Tensor:
    d = x.double()
    return {
        "sum": lambda: d.sum(dims),
        "max": lambda: d.amax(dims),
        "min": lambda: d.amin(dims),
        "prod": lambda: d.prod(dims[0]),  # one dim in these tests
    }[op]()


def _run(x, ops, dims, tuning, sms=4, order=None):
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        for op in ops:
            out = getattr(fd.ops, op)(t, dims=dims)
            if order is None:
                fd.add_output(out)
            else:
                fd.add_output(out, stride_order=order)
    configured(fd, tuning=tuning, target=small_gpu(sms))
    outs = fd.execute([x])
    for op, out in zip(ops, outs):
        want = _reference(x, op, dims)
        tol = TOL[x.dtype] * max(1.0, float(want.abs().max()))
        torch.testing.assert_close(out.double(), want.to(x.dtype).double(), atol=tol, rtol=0)
    (params,) = [p for p in schedules(fd) if p.scheduler == "reduction"]
    return fd, params, outs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("n1", [200, 203])
@pytest.mark.parametrize("n0", [127, 6, 39, 4])
def test_folded_columns_match_torch(n0, n1, op, dtype):
    """Rows of 127 (a fold of 8 in 2 bytes, 4 in fp32), 6 (4 in 2 bytes: 12 bytes; none in
    fp32: 24 bytes, 8-byte aligned), 39 and 4 (2 in 2 bytes: 8 bytes); 200 rows (whole
    folds) and 203 (a tail)."""
    x = _values((n1, n0), dtype)
    _, params, _ = _run(x, [op], [0], _tuning())
    row_bytes = n0 * x.element_size()
    want = 16 // math.gcd(row_bytes, 16)
    if want == 1 or (want < 4 and x.element_size() > 2):
        # rows 16 bytes aligned, or 8 bytes aligned in fp32 (rows of 6): their 8-byte
        # loads stay; 2-byte rows 8 bytes aligned fold by 2 (16-byte loads of 8 elements)
        assert params.fold == 0, params
        return
    assert params.fold == want and params.finish == "kernel", params
    assert params.template == "outer" and params.x_groups == (0,), params


def test_a_split_fold_combines_every_partial():
    """Rows of 39 fp32 over 2411 rows on 64 multiprocessors: R is split, the finish
    combines split x 4 partials per column, the tail rows in the last split program."""
    x = _values((2411, 39), torch.float32)
    _, params, _ = _run(x, ["sum"], [0], _tuning(), sms=64)
    assert params.fold == 4 and params.split > 1, params


def test_an_unsplit_fold_finishes_its_own_partials():
    """200 bf16 rows of 127 on 4 multiprocessors: one program per column block, whose
    G partials per column the finishing kernel still folds."""
    x = _values((200, 127), torch.bfloat16)
    _, params, _ = _run(x, ["sum"], [0], _tuning(), sms=4)
    assert params.fold == 8 and params.split == 1 and params.partials, params


def test_siblings_and_a_prologue_fold_together():
    """sum and max of the same bf16 rows (siblings, one kernel), then the sum of a product
    of two inputs laid out alike (a prologue over both loads); 2403 rows (fewer take the
    normalization scheduler's persistent rows)."""
    x = _values((2403, 127), torch.bfloat16)
    _, params, _ = _run(x, ["sum", "max"], [0], _tuning())
    assert params.fold == 8, params
    y = _values((2403, 127), torch.bfloat16, seed=1)
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        prod = fd.ops.mul(fd.ops.cast(a, DataType.Float), fd.ops.cast(b, DataType.Float))
        fd.add_output(fd.ops.sum(prod, dims=[0]))
    configured(fd, tuning=_tuning(), target=small_gpu(4))
    (out,) = fd.execute([x, y])
    torch.testing.assert_close(out.double(), (x.double() * y.double()).sum(0), atol=1e-4, rtol=0)
    (params,) = schedules(fd)
    assert params.fold == 8, params


# (a tail of one row: the whole sweep only, 25 s interpreted)
@pytest.mark.parametrize(
    "n1,sms", [(2411, 64), (203, 4), pytest.param(3001, 64, marks=pytest.mark.full)]
)
def test_a_welford_folds(n1, sms):
    """fd.ops.welford over the columns of [n1, 39] bf16: the loop's steps are counted,
    the tail rows (3, 3 and 1) count per lane after it, and the finish combines the
    split x 8 (mean, M2, count) partials of each column."""
    x = (3 * _values((n1, 39), torch.float32, seed=3) + 1).to(torch.bfloat16)
    with FusionDefinition() as fd:
        for out in fd.ops.welford(fd.from_pytorch(x), dims=[0]):
            fd.add_output(out)
    # one 512-column block (the padding rule would make it 5 of 64, which few_rounds then
    # leaves unsplit): the split's partials are what this test combines
    configured(fd, tuning=_tuning(pad_waste=2.0), target=small_gpu(sms))
    avg, m2, n = fd.execute([x])
    d = x.double().cpu()
    mean = d.mean(0)
    torch.testing.assert_close(avg.cpu().double(), mean, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(m2.cpu().double(), ((d - mean) ** 2).sum(0), rtol=1e-5, atol=1e-4)
    assert n.cpu().unique().tolist() == [n1]
    (params,) = schedules(fd)
    assert params.fold == 8 and (params.split > 1) == (sms > 4), params


def test_a_prod_folds():
    """A product over 212 rows of 13 fp16 values near 1: the fold's identity is 1."""
    x = (1 + _values((212, 13), torch.float32) / 64).to(torch.float16)
    _, params, _ = _run(x, ["prod"], [0], _tuning())
    assert params.fold == 8, params


@pytest.mark.parametrize("order", [None, [0, 1]], ids=["inferred", "pinned"])
def test_three_dims_merged_into_rows(order):
    """Dims 0 and 1 of a contiguous [7, 29, 2, 63] bf16 are the rows; dims 2 and 3 (126
    elements, 252 bytes: 4-byte aligned, which the size factors tell the kernel) merge
    into the kept group: a fold of 4. Pinned column-major, the output splits the kept
    dims into two groups (a transposed store): no fold, the same values."""
    x = _values((7, 29, 2, 63), torch.bfloat16)
    fd, params, (out,) = _run(x, ["sum"], [0, 1], _tuning(), order=order)
    if order is None:
        assert params.fold == 4 and ("n0", 2) in params.factors, params
    else:
        assert params.fold == 0 and len(params.x_groups) == 2, params
        assert out.stride() == (1, 2), out.stride()


def test_a_column_major_input_folds_its_columns():
    """A column-major [127, 250] fp16 reduced over dim 1: its columns are the contiguous
    rows of 127."""
    x = _values((250, 127), torch.float16).t()
    _, params, _ = _run(x, ["sum"], [1], _tuning())
    assert params.fold == 8, params


@pytest.mark.parametrize(
    "case",
    ["aligned", "sliced", "broadcast", "small", "off"],
)
def test_where_the_fold_does_not_apply(case):
    """Rows of 128 bf16 (aligned), every other row of a larger tensor (rows not
    contiguous), a column bias broadcast over the rows (a load of another layout), an
    input under ``fold_min_bytes`` (8 MB), ``fold_rows=0``."""
    x = _values((400, 127), torch.bfloat16)
    tuning = _tuning()
    if case == "broadcast":
        bias = _values((127,), torch.bfloat16, seed=2)
        with FusionDefinition() as fd:
            a, b = fd.from_pytorch(x), fd.from_pytorch(bias)
            fd.add_output(
                fd.ops.sum(fd.ops.add(a, fd.ops.broadcast_in_dim(b, [400, 127], [1])), [0])
            )
        configured(fd, tuning=tuning, target=small_gpu(4))
        (out,) = fd.execute([x, bias])
        want = (x.float() + bias.float()).double().sum(0)
        torch.testing.assert_close(out.double(), want.to(out.dtype).double(), atol=0.1, rtol=0)
        (params,) = schedules(fd)
        assert params.fold == 0, params
        return
    if case == "aligned":
        x = _values((400, 128), torch.bfloat16)
    elif case == "sliced":
        x = _values((800, 127), torch.bfloat16)[::2]
    elif case == "small":
        tuning = DEFAULT
    elif case == "off":
        tuning = _tuning(fold=0)
    _, params, _ = _run(x, ["sum"], [0], tuning)
    assert params.fold == 0, params


def test_folded_loads_are_16_bytes_on_sm90():
    """The bf16 column sums of [400, 127] compile to 16-byte loads folded, and to none
    unfolded (every row but one in 8 starts off a boundary)."""
    x = _values((400, 127), torch.bfloat16)
    widths = {}
    for fold in (1, 0):
        fd, params, _ = _run(x, ["sum"], [0], _tuning(fold))
        arts = compile_last_run(fd.executor())
        widths[fold] = arts[0].vector_widths.get("ld.global.v4", 0)
        assert params.fold == (8 if fold else 0), params
    assert widths[1] > 0 and widths[0] == 0, widths


def _draws(count: int, seed: int = 7):
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n0 = rng.choice([rng.randint(2, 40), rng.randint(41, 400)])
        n1 = rng.randint(8, 1500)
        dtype = rng.choice([torch.float32, torch.bfloat16, torch.float16])
        op = rng.choice(["sum", "max", "min"])
        out.append((n0, n1, dtype, op))
    return out


@pytest.mark.parametrize("n0,n1,dtype,op", _draws(24), ids=str)
def test_seeded_draws_match_torch(n0, n1, dtype, op):
    """Seeded draws of row lengths (aligned ones too: no fold), row counts (under a fold,
    whole folds, tails) and dtypes on 64 multiprocessors (split or not)."""
    x = _values((n1, n0), dtype)
    _, params, _ = _run(x, [op], [0], _tuning(), sms=64)
    g = 16 // math.gcd(n0 * x.element_size(), 16)
    assert params.fold in (0, g), params
    least = 2 if x.element_size() <= 2 else 4
    if params.fold == 0 and g >= least and n1 // g >= ANY_SIZE["fold_min_rows"]:
        # a fold the plan of the folded problem turned down (not the plain outer template)
        assert params.template != "outer" or params.y_group is not None, params


def column_problem(n0: int, n1: int, dtype) -> Problem:
    """The column reduction of a contiguous [n1, n0]: groups X (n0) and R (n1)."""
    groups = (Group(n0, False, (1, 1), (1,)), Group(n1, True, (n0, 0), (0,)))
    return Problem(groups, 1, 1, (dtype, dtype), (n0 * n1, n0))


def test_the_measured_choice_times_the_unfolded_plan():
    """A folded problem's candidates (``schedulers/measure``): the fold, then the plan
    without it; a problem the fold does not touch gets no extra candidate."""
    folded = column_problem(127, 1 << 20, DataType.BFloat16)
    plans = measure.candidates(
        rd.heuristics, folded, H200, DEFAULT_TUNING, DEFAULT_TUNING.alternatives, 3
    )
    assert [p.fold for p in plans[:2]] == [8, 0], plans
    aligned = column_problem(128, 1 << 20, DataType.BFloat16)
    plans = measure.candidates(
        rd.heuristics, aligned, H200, DEFAULT_TUNING, DEFAULT_TUNING.alternatives, 3
    )
    assert all(p.fold == 0 for p in plans), plans


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_a_welford_folds_2_byte_loads_only(dtype):
    """Columns of [200, 39] under the default ``fold_welford_max_item``: a fp32 Welford
    keeps its element loads (its fold ran 0.81x on an H100), a bf16 one folds, and a
    fp32 sum folds (1.09x)."""
    x = _values((200, 39), dtype)
    tuning = DEFAULT.with_fields(reduction=dict(fold_min_bytes=0, fold_min_rows=4))
    with FusionDefinition() as fd:
        for out in fd.ops.welford(fd.from_pytorch(x), dims=[0]):
            fd.add_output(out)
    configured(fd, tuning=tuning, target=small_gpu(4))
    mean = fd.execute([x])[0]
    torch.testing.assert_close(mean.double(), x.double().mean(0), atol=TOL[dtype], rtol=0)
    (params,) = [p for p in schedules(fd) if p.scheduler == "reduction"]
    assert params.fold == (8 if dtype == torch.bfloat16 else 0), params
    _, summed, _ = _run(x, ["sum"], [0], tuning)
    assert summed.fold == (8 if dtype == torch.bfloat16 else 4), summed
