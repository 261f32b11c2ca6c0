"""The reduction rows of ``layoutfuse.ir.ops.reductions``: each row's torch reference
against torch computed another way (the reduced dims moved last and flattened), its
identity per dtype class (torch's reduction of an empty tensor where torch defines one,
the dtype's bounds for max and min), the reductions the two frontends expose, and the
fill of a reduction over an empty extent run through ``FusionDefinition.execute``."""

from __future__ import annotations

import ast
import re

import pytest
import torch

from layoutfuse import testing_api
from layoutfuse.dtypes import from_torch
from layoutfuse.ir.opdef import REGISTRY, OpKind
from layoutfuse.ir.ops.reductions import ROW_BY_NAME, ROWS
from layoutfuse.nvfuser import FusionDefinition

F32, BF16, I32, I64, U64, BOOL = (
    torch.float32,
    torch.bfloat16,
    torch.int32,
    torch.int64,
    torch.uint64,
    torch.bool,
)
SHAPE = (3, 4, 5)
DIMS = [(0,), (1,), (2,), (0, 2), (0, 1, 2)]
SINGLE = [r.name for r in ROWS if r.n_results == 1]


def _sample(dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    if dtype is I64:
        return torch.randint(-2, 3, SHAPE, generator=g)  # small: the products stay exact
    return torch.randn(SHAPE, generator=g).to(dtype)


def _flat(x: torch.Tensor, dims) -> torch.Tensor:
    """``x`` with ``dims`` moved last and flattened into one."""
    kept = [d for d in range(x.ndim) if d not in dims]
    return x.permute(*kept, *dims).reshape(*[x.shape[d] for d in kept], -1)


EXPECTED = {
    "sum": lambda f: f.sum(-1),
    "prod": lambda f: f.prod(-1),
    "max": lambda f: f.max(-1).values,
    "min": lambda f: f.min(-1).values,
}


def test_the_rows():
    assert [r.name for r in ROWS] == ["sum", "prod", "max", "min", "welford"]
    assert {r.name: r.parts for r in ROWS if r.n_results > 1} == {"welford": ("mean", "m2", "n")}
    for r in ROWS:
        assert REGISTRY[r.name].kind is r.kind
        (fn,) = ast.parse(r.combine_source).body  # the helper the prelude pastes
        assert fn.name == r.combine and ast.unparse(fn.decorator_list[0]) == "triton.jit"
        assert len(fn.args.args) == 2 * r.n_results  # two accumulators of every part
    assert {
        op.name for op in REGISTRY.values() if op.kind in (OpKind.REDUCTION, OpKind.WELFORD)
    } == set(ROW_BY_NAME)


@pytest.mark.parametrize("dims", DIMS, ids=str)
@pytest.mark.parametrize("dtype", [F32, BF16, I64], ids=str)
@pytest.mark.parametrize("name", SINGLE)
def test_reference_matches_torch(name, dtype, dims):
    x = _sample(dtype)
    got = ROW_BY_NAME[name].torch_fn(x, list(dims))
    expected = EXPECTED[name](_flat(x, dims))
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, check_dtype=name in ("max", "min"))


@pytest.mark.parametrize("name", SINGLE)
def test_reference_over_no_dims_is_a_copy(name):
    x = _sample(F32)
    got = ROW_BY_NAME[name].torch_fn(x, [])
    assert torch.equal(got, x) and got.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("dims", DIMS, ids=str)
@pytest.mark.parametrize("dtype", [F32, BF16, I64], ids=str)
def test_welford_reference_matches_torch(dtype, dims):
    x = _sample(dtype)
    mean, m2, n = ROW_BY_NAME["welford"].torch_fn(x, list(dims))
    f = _flat(x.float(), dims)
    torch.testing.assert_close(mean, f.mean(-1))
    torch.testing.assert_close(m2, f.var(-1, correction=0) * f.shape[-1])
    assert n.dtype is I64 and torch.equal(n, torch.full_like(n, f.shape[-1]))


# --- identities ---------------------------------------------------------------------------------
CLASSES = [F32, BF16, I32, I64, U64, BOOL]


def _bounds(dtype):
    if dtype is BOOL:
        return False, True
    if dtype.is_floating_point:
        return float("-inf"), float("inf")
    info = torch.iinfo(dtype)
    return info.min, info.max


@pytest.mark.parametrize("dtype", CLASSES, ids=str)
@pytest.mark.parametrize("name", ["sum", "prod"])
def test_identity_is_torch_reduction_of_nothing(name, dtype):
    value = ROW_BY_NAME[name].identity.value(from_torch(dtype))
    assert value == getattr(torch, name)(torch.empty(0, dtype=dtype)).item()


@pytest.mark.parametrize("dtype", CLASSES, ids=str)
def test_max_min_identities_are_the_dtype_bounds(dtype):
    lowest, highest = _bounds(dtype)
    assert ROW_BY_NAME["max"].identity.value(from_torch(dtype)) == lowest
    assert ROW_BY_NAME["min"].identity.value(from_torch(dtype)) == highest


@pytest.mark.parametrize("dtype", [F32, BF16, I32, I64], ids=str)
@pytest.mark.parametrize("name", SINGLE)
def test_identity_is_neutral(name, dtype):
    """Combined with any value by the row's reference, the identity leaves it as it is."""
    x = _sample(I64 if dtype is I32 else dtype).to(dtype).flatten()
    ident = torch.full_like(x, ROW_BY_NAME[name].identity.value(from_torch(dtype)))
    pairs = torch.stack([x, ident], dim=1)
    assert torch.equal(ROW_BY_NAME[name].torch_fn(pairs, [1]).to(dtype), x)


# --- the frontends --------------------------------------------------------------------------------
def _ops_of(fd: FusionDefinition) -> list[str]:
    return re.findall(r"= (\w+)\(", fd.fusion_ir())


def test_fd_ops_reductions_are_the_rows():
    x = torch.randn(3, 4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        for name in SINGLE:
            fd.add_output(getattr(fd.ops, name)(t, dims=[1]))
        fd.add_output(fd.ops.welford(t, dims=[1])[0])
        fd.add_output(fd.ops.var(t, dims=[1], correction=1))
        fd.add_output(fd.ops.var_mean(t, dims=[1])[0])
    assert [
        op
        for op in _ops_of(fd)
        if op in REGISTRY and REGISTRY[op].kind in (OpKind.REDUCTION, OpKind.WELFORD)
    ] == [*SINGLE, "welford", "welford", "welford"]
    assert not hasattr(fd.ops, "argmax")


def test_testing_api_reductions_are_the_rows():
    from layoutfuse.testing_api import ops as api_ops

    assert sorted(api_ops.REDUCTIONS) == sorted(SINGLE)
    for name in [*SINGLE, "welford", "variance", "var_mean"]:
        assert name in testing_api.__all__ and callable(getattr(testing_api, name))


# --- empty extents ----------------------------------------------------------------------------
def _run(body, x):
    """Three calls (the plan, then what a repeated call runs: a reduction over an empty
    extent fills on the host, which a replay plan did not redo, so the second call
    returned uninitialized memory), each the same as the first."""
    with FusionDefinition() as fd:
        outs = body(fd, fd.from_pytorch(x))
        for o in outs:
            fd.add_output(o)
    calls = [fd.execute([x]) for _ in range(3)]
    for later in calls[1:]:
        torch.testing.assert_close(later, calls[0], equal_nan=True, rtol=0, atol=0)
    return calls[-1]


@pytest.mark.parametrize("shape, dims", [((3, 0), [1]), ((0, 4), [0, 1])], ids=str)
@pytest.mark.parametrize("dtype", [F32, BF16, I32, I64], ids=str)
@pytest.mark.parametrize("name", SINGLE)
def test_reduction_over_empty_extent_fills(name, dtype, shape, dims):
    """sum and prod: torch's reduction of nothing; max and min (which torch does not define
    over nothing): -inf and inf for floats, as nvFuser fills them, the bounds for integers."""
    x = torch.zeros(shape, dtype=dtype)
    (out,) = _run(lambda fd, t: [getattr(fd.ops, name)(t, dims=dims)], x)
    if name in ("sum", "prod"):
        nothing = getattr(torch, name)(torch.empty(0, dtype=dtype))
        expected = torch.full(out.shape, nothing.item(), dtype=nothing.dtype)
    else:
        expected = torch.full(out.shape, _bounds(dtype)[0 if name == "max" else 1], dtype=dtype)
    assert out.shape == tuple(s for d, s in enumerate(shape) if d not in dims)
    assert out.dtype == expected.dtype and torch.equal(out, expected)


def test_welford_over_empty_extent_fills():
    x = torch.zeros(3, 0)
    mean, m2, n = _run(lambda fd, t: list(fd.ops.welford(t, dims=[1])), x)
    assert mean.isnan().all() and torch.equal(m2, torch.zeros(3))
    assert torch.equal(n, torch.zeros(3, dtype=I64))
    var, mean = _run(lambda fd, t: list(fd.ops.var_mean(t, dims=[1])), x)
    torch.testing.assert_close((var, mean), torch.var_mean(x, dim=1), equal_nan=True)


@pytest.mark.parametrize("name", ["max", "min"])
def test_unsigned_max_min_start_from_the_dtype_bounds(name):
    """A UInt64 max starts from 0 and a min from 2**64 - 1: values past 2**63 are kept."""
    rows = [[1, 5, 3], [2**63 + 5, 7, 2], [2**64 - 2, 2**63, 2**64 - 3]]
    x = torch.tensor(rows, dtype=U64)
    (out,) = _run(lambda fd, t: [getattr(fd.ops, name)(t, dims=[1])], x)
    pick = max if name == "max" else min
    assert out.dtype is U64 and out.tolist() == [pick(r) for r in rows]
