"""Indexed writes (scatter, index_put_accumulate) against torch.

Two kernels each: the copy of arg, then src stored (or added with atomic adds) at the
index's positions, src computed in place with its pointwise producers. Every memory
order of the data and of the index; int32 and int64 indices; dtypes; consumers of the
result; out-of-range indices raise before a launch; the kernels compile for sm_90
(``atom.global.add`` for accumulation). Accumulation order varies on the GPU: the data
is integer-valued, so every order gives the same sums.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.analysis.device import H200
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.errors import UnsupportedError
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS, configured, schedules
from support.tensors import with_order

pytestmark = [pytest.mark.usefixtures("kernel_cache_in_tmp"), *INTERPRETER_WARNINGS]

ORDERS3 = list(itertools.permutations(range(3)))


def _run(build, *inputs):
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(x) for x in inputs]
        for out in build(fd, *handles):
            fd.add_output(out)
    return fd, fd.execute(list(inputs))


def _unique_index(shape, dim, n, order, dtype, seed=0):
    """An index of ``shape`` whose values along ``dim`` are distinct (scatter's result is
    then defined), in [0, n), laid out in memory ``order`` (outermost first)."""
    g = torch.Generator().manual_seed(seed)
    full = list(shape)
    full[dim] = n
    idx = torch.rand(full, generator=g).argsort(dim=dim)  # a permutation along dim
    idx = idx.narrow(dim, 0, shape[dim]).to(dtype)
    inverse = [list(order).index(d) for d in range(len(shape))]
    return idx.permute(list(order)).contiguous().permute(inverse)


def _integers(shape, order, dtype, seed=0):
    return (with_order(shape, order, torch.float32, seed) * 3).round().to(dtype)


@pytest.mark.parametrize("order", ORDERS3, ids=str)
@pytest.mark.parametrize("dim", [0, 2, -2])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=str)
def test_scatter_every_order(order, dim, index_dtype):
    x = with_order([4, 5, 6], order, torch.float32)
    n = x.shape[dim]
    shape = [3, 4, 5]
    shape[dim] = n - 1
    idx = _unique_index(shape, dim, n, order[::-1], index_dtype)
    src = with_order([4, 5, 6], tuple(reversed(order)), torch.float32, seed=1)
    fd, (out,) = _run(lambda fd, a, i, s: [fd.ops.scatter(a, i, s, dim)], x, idx, src)
    torch.testing.assert_close(out, x.scatter(dim, idx.long(), src), rtol=0, atol=0)
    assert [p.scheduler for p in schedules(fd)] == ["pointwise", "pointwise"]


def test_scatter_scalar_src_and_consumer():
    """A Scalar src; the result read by a reduction (after both write kernels)."""
    x = torch.randn(4, 6)
    idx = torch.tensor([[5], [0], [2], [2]])
    with FusionDefinition() as fd:
        a = fd.from_pytorch(x)
        i = fd.from_pytorch(idx)
        v = fd.define_scalar(7.0, dtype=DataType.Double)
        sc = fd.ops.scatter(a, i, v, 1)
        fd.add_output(fd.ops.sum(sc, dims=[1]))
    (out,) = fd.execute([x, idx])
    torch.testing.assert_close(out, x.scatter(1, idx, 7.0).sum(1))
    assert [p.scheduler for p in schedules(fd)] == ["pointwise", "pointwise", "reduction"]
    idx2 = torch.tensor([[1], [1], [3], [0]])  # a replay: the same launches, new values
    (out,) = fd.execute([x, idx2])
    torch.testing.assert_close(out, x.scatter(1, idx2, 7.0).sum(1))


@pytest.mark.parametrize("acc_order", [(0, 1), (1, 0)], ids=str)
@pytest.mark.parametrize("value_order", [(0, 1), (1, 0)], ids=str)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=str)
def test_index_put_accumulate(acc_order, value_order, index_dtype):
    acc = _integers([6, 5], acc_order, torch.float32)
    idx = torch.tensor([1, 1, 5, -1, 0, 1, 3], dtype=index_dtype)  # duplicates add up
    value = _integers([7, 5], value_order, torch.float32, seed=2)
    fd, (out,) = _run(lambda fd, a, i, v: [fd.ops.index_put_accumulate(a, i, v)], acc, idx, value)
    ref = acc.index_put([idx.long()], value, accumulate=True)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    code = fd.last_triton_code()
    assert "tl.atomic_add(" in code


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.int64, torch.float16], ids=str)
def test_index_put_accumulate_dtypes_with_a_fused_producer(dtype):
    acc = _integers([5, 3], (0, 1), dtype)
    idx = torch.tensor([4, 0, 4, 4])
    value = _integers([4, 3], (1, 0), dtype, seed=3)
    fd, (out,) = _run(
        lambda fd, a, i, v: [fd.ops.index_put_accumulate(a, i, fd.ops.add(v, v))],
        acc,
        idx,
        value,
    )
    torch.testing.assert_close(
        out, acc.index_put([idx], value + value, accumulate=True), rtol=0, atol=0
    )
    assert len(schedules(fd)) == 2  # the add is computed in the accumulating kernel


def test_index_put_accumulate_into_a_broadcast_row():
    """value broadcast along its rows ([1, H] against a 3-entry index)."""
    acc = torch.zeros(4, 3)
    idx = torch.tensor([2, 2, 0])
    with FusionDefinition() as fd:
        a = fd.from_pytorch(acc)
        i = fd.from_pytorch(idx)
        v = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float)
        fd.add_output(fd.ops.index_put_accumulate(a, i, v))
    value = torch.tensor([[1.0, 2.0, 3.0]])
    (out,) = fd.execute([acc, idx, value])
    ref = acc.index_put([idx], value.expand(3, 3), accumulate=True)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


@pytest.mark.parametrize("op,bad", [("scatter", 4), ("scatter", -1), ("index_put", -5)])
def test_out_of_range_raises(op, bad, on_cpu):
    x = torch.zeros(4, 3)
    if op == "scatter":
        idx = torch.tensor([[0, bad, 1]])
        src = torch.ones(1, 3)
        build = lambda fd, a, i, s: [fd.ops.scatter(a, i, s, 0)]  # noqa: E731
        name = "scatter"
    else:
        idx = torch.tensor([0, bad])
        src = torch.ones(2, 3)
        build = lambda fd, a, i, s: [fd.ops.index_put_accumulate(a, i, s)]  # noqa: E731
        name = "index_put_accumulate"
    with pytest.raises(IndexError, match=rf"{name}: index {bad} .*out of range"):
        _run(build, x, idx, src)


def test_printed_like_nvfuser():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        j = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        fd.add_output(fd.ops.scatter(a, i, a, dim=1))
        fd.add_output(fd.ops.index_put_accumulate(a, j, a))
    text = str(fd)
    assert "T3 = fd.ops.scatter(T0, T1, T0, dim=1)" in text
    assert "T4 = fd.ops.index_put_accumulate(T0, T2, T0)" in text


def test_bf16_accumulation_is_refused_by_the_interpreter(on_cpu):
    acc, value = torch.zeros(4, 2, dtype=torch.bfloat16), torch.ones(3, 2, dtype=torch.bfloat16)
    with pytest.raises(UnsupportedError, match="bf16 atomic adds"):
        _run(
            lambda fd, a, i, v: [fd.ops.index_put_accumulate(a, i, v)],
            acc,
            torch.tensor([0, 3, 3]),
            value,
        )


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64], ids=str
)
def test_compiles_for_sm90(dtype, on_cpu):
    """Planned for an H200 (bf16 atomics do not run in the interpreter), compiled for sm_90."""
    acc = torch.zeros(64, 128, dtype=dtype)
    idx = torch.randint(0, 64, (32,), dtype=torch.int32)
    value = torch.ones(32, 128, dtype=dtype)
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(t) for t in (acc, idx, value)]
        fd.add_output(fd.ops.index_put_accumulate(*handles))
    configured(fd, target=H200).executor().plan([acc, idx, value])
    arts = compile_last_run(fd.executor())
    assert len(arts) == 2 and all(".target sm_90" in a.ptx for a in arts)
    assert any("atom.global" in a.ptx or "red.global" in a.ptx for a in arts)
    x = torch.randn(64, 128)
    sidx = torch.randint(0, 128, (64, 1))
    fd, _ = _run(lambda fd, a, i: [fd.ops.scatter(a, i, a, 1)], x, sidx)
    arts = compile_last_run(fd.executor())
    assert len(arts) == 2 and all(".target sm_90" in a.ptx for a in arts)
