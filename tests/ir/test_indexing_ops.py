"""Indexed reads (index_select, gather, take_along_axis, embedding_fwd) against torch.

Every memory order of the data and of the index, size-1, expanded and sliced inputs,
dtypes, negative dims, negative indices where torch takes them (take_along_axis), int32
and int64 indices; the output's strides; the
reads are indirect loads in the kernel that consumes them (kernel counts of fused
chains); the kernels compile for sm_90; out-of-range indices on the CPU raise before any
launch, naming the op and the index.
"""

from __future__ import annotations

import itertools
import random
import re

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS, schedules
from support.tensors import with_order

pytestmark = [pytest.mark.usefixtures("kernel_cache_in_tmp"), *INTERPRETER_WARNINGS]

ORDERS3 = list(itertools.permutations(range(3)))


def _index(values, dtype=torch.int64, layout="contiguous"):
    """A 1-D index tensor holding ``values``: dense, sliced (every other element of a
    longer tensor) or, for one repeated value, expanded (stride 0)."""
    v = torch.tensor(values, dtype=dtype)
    if layout == "sliced":
        wide = torch.zeros(2 * len(values), dtype=dtype)
        wide[::2] = v
        return wide.to(torch.get_default_device())[::2]
    if layout == "expanded":
        assert len(set(values)) == 1
        return torch.tensor([values[0]], dtype=dtype).expand(len(values))
    return v.to(torch.get_default_device())


def _ordered_index(shape, order, high, dtype, seed=0):
    """An index tensor of ``shape`` laid out in memory ``order``, values in [-high, high)."""
    g = torch.Generator().manual_seed(seed)
    phys = torch.randint(-high, high, [shape[d] for d in order], generator=g, dtype=dtype)
    return phys.permute([list(order).index(d) for d in range(len(shape))])


def _run(build, *inputs):
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(x) for x in inputs]
        for out in build(fd, *handles):
            fd.add_output(out)
    return fd, fd.execute(list(inputs))


def _row_major(shape):
    return torch.empty(shape).stride()


# --- index_select ---------------------------------------------------------------------------
@pytest.mark.parametrize("order", ORDERS3, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=str)
def test_index_select_every_order(order, dim, index_dtype):
    x = with_order([4, 5, 6], order, torch.float32)
    n = x.shape[dim]
    idx = _index([n - 1, 1, 0, 2, 2, 3], index_dtype)
    fd, (out,) = _run(lambda fd, a, i: [fd.ops.index_select(a, i, dim)], x, idx)
    ref = torch.index_select(x, dim, idx.long())
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    assert len(schedules(fd)) == 1


@pytest.mark.parametrize("layout", ["sliced", "expanded"])
def test_index_select_index_layouts(layout):
    x = with_order([5, 7], (1, 0), torch.float32)
    values = [3, 3, 3, 3] if layout == "expanded" else [4, 0, 6, 1]
    idx = _index(values, torch.int64, layout)
    _, (out,) = _run(lambda fd, a, i: [fd.ops.index_select(a, i, 1)], x, idx)
    torch.testing.assert_close(out, torch.index_select(x, 1, idx % 7), rtol=0, atol=0)


def test_index_select_sliced_and_expanded_data():
    big = torch.randn(6, 10)
    sliced = big[1:, ::3]  # [5, 4], strides (10, 3)
    bcast = torch.randn(5, 1).expand(5, 4)  # an expanded dim (stride 0)
    idx = _index([3, 0, 0, 1])
    for x in (sliced, bcast):
        _, (out,) = _run(lambda fd, a, i: [fd.ops.index_select(a, i, 0)], x, idx)
        torch.testing.assert_close(out, torch.index_select(x, 0, idx % 5), rtol=0, atol=0)
        _, (out,) = _run(lambda fd, a, i: [fd.ops.index_select(a, i, 1)], x, idx)
        torch.testing.assert_close(out, torch.index_select(x, 1, idx % 4), rtol=0, atol=0)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.bool], ids=str
)
def test_index_select_dtypes(dtype):
    x = (torch.randn(6, 8) * 4).to(dtype)
    idx = _index([5, 1, 3])
    _, (out,) = _run(lambda fd, a, i: [fd.ops.index_select(a, i, 0)], x, idx)
    assert out.dtype == dtype
    torch.testing.assert_close(out, torch.index_select(x, 0, idx % 6), rtol=0, atol=0)


def test_index_select_size_one_and_output_strides():
    x = torch.randn(1, 6)
    idx = _index([0, 0, 0])
    _, (out,) = _run(lambda fd, a, i: [fd.ops.index_select(a, i, 0)], x, idx)
    torch.testing.assert_close(out, x[[0, 0, 0]], rtol=0, atol=0)
    assert out.stride() == _row_major([3, 6])


def test_index_select_mul_sum_is_one_kernel():
    """index_select -> mul -> sum: the select is an indirect load in the reduction."""
    x = with_order([7, 9], (1, 0), torch.float32)
    y = torch.randn(5, 9)
    idx = _index([6, 0, 3, 6, 2], torch.int32)
    fd, (out,) = _run(
        lambda fd, a, i, b: [fd.ops.sum(fd.ops.mul(fd.ops.index_select(a, i, 0), b), dims=[1])],
        x,
        idx,
        y,
    )
    ref = (torch.index_select(x, 0, idx.long() % 7) * y).sum(1)
    torch.testing.assert_close(out, ref)
    sched = schedules(fd)
    assert [p.scheduler for p in sched] == ["reduction"]
    code = fd.last_triton_code()
    assert re.search(r"off\d+ = gv0 \* ms\d_0", code)  # the loaded index addresses the read


# --- gather ------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ORDERS3, ids=str)
@pytest.mark.parametrize("dim", [0, 2, -2])
def test_gather_data_and_index_orders(order, dim):
    x = with_order([4, 5, 6], order, torch.float32)
    n = x.shape[dim]
    shape = [3, 4, 5]
    shape[dim] = 7
    index_order = random.Random(hash((order, dim)) & 0xFFFF).choice(ORDERS3)
    idx = _ordered_index(shape, index_order, n, torch.int64) % n
    _, (out,) = _run(lambda fd, a, i: [fd.ops.gather(a, i, dim)], x, idx)
    torch.testing.assert_close(out, torch.gather(x, dim, idx % n), rtol=0, atol=0)


def test_gather_index_larger_than_arg_is_an_error():
    x = torch.randn(3, 4)
    idx = torch.zeros(4, 2, dtype=torch.int64)
    with pytest.raises(Exception, match="gather"):
        _run(lambda fd, a, i: [fd.ops.gather(a, i, 1)], x, idx)


# --- take_along_axis -----------------------------------------------------------------------------
@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=str)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=str)
def test_take_along_axis(order, index_dtype):
    x = with_order([6, 9], order, torch.float32)
    idx = _ordered_index([6, 3], (1, 0), 9, index_dtype)
    _, (out,) = _run(lambda fd, a, i: [fd.ops.take_along_axis(a, i, 1)], x, idx)
    torch.testing.assert_close(out, torch.take_along_dim(x, idx.long() % 9, 1), rtol=0, atol=0)


def test_take_along_axis_broadcast_index():
    x = torch.randn(5, 8)
    with FusionDefinition() as fd:
        a = fd.from_pytorch(x)
        i = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Int)
        fd.add_output(fd.ops.take_along_axis(a, i, 1))
    idx = torch.tensor([[7, 0, -1]])
    (out,) = fd.execute([x, idx])
    torch.testing.assert_close(out, torch.take_along_dim(x, idx % 8, 1), rtol=0, atol=0)


def test_cross_entropy_reads_log_softmax_through_the_index():
    """Thunder's cross entropy: take_along_axis on log_softmax's output, negated, averaged.
    The take is an indirect load in the final reduction; log_softmax is never stored."""
    logits = with_order([6, 11], (0, 1), torch.float32)
    target = torch.tensor([3, 0, 10, 5, 5, 1])
    with FusionDefinition() as fd:
        x = fd.from_pytorch(logits)
        t = fd.from_pytorch(target)
        mx = fd.ops.max(x, dims=[1], keepdim=True)
        sh = fd.ops.sub(x, mx)
        lse = fd.ops.log(fd.ops.sum(fd.ops.exp(sh), dims=[1], keepdim=True))
        logp = fd.ops.sub(sh, lse)
        ti = fd.ops.broadcast_in_dim(t, shape=[6, 1], broadcast_dims=[0])
        picked = fd.ops.take_along_axis(logp, ti, 1)
        n = fd.define_scalar(6.0, dtype=DataType.Double)
        loss = fd.ops.div(fd.ops.sum(fd.ops.neg(picked), dims=[0, 1]), n)
        fd.add_output(loss)
    (out,) = fd.execute([logits, target])
    ref = torch.nn.functional.cross_entropy(logits, target)
    torch.testing.assert_close(out, ref)
    # the max and the sum of exp in one kernel (a log-sum-exp: ``segments._chained_groups``),
    # then one kernel for the loss: its sum reads logits, max and lse at the target (its
    # prologue recomputes log_softmax there) and divides, as an epilogue
    kinds = [p.scheduler for p in schedules(fd)]
    assert kinds == ["normalization", "normalization"], kinds
    loss_kernel = fd.last_triton_code().split("# layoutfuse generated kernel")[2]
    assert "gather_dim" in loss_kernel and "gv0" in loss_kernel


# --- embedding -------------------------------------------------------------------------------------
@pytest.mark.parametrize("weight_order", [(0, 1), (1, 0)], ids=str)
@pytest.mark.parametrize("input_order", [(0, 1), (1, 0)], ids=str)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=str)
def test_embedding_fwd(weight_order, input_order, index_dtype):
    w = with_order([10, 4], weight_order, torch.float32)
    ids = _ordered_index([3, 5], input_order, 10, index_dtype) % 10
    _, (out,) = _run(lambda fd, i, wt: [fd.ops.embedding_fwd(i, wt)], ids, w)
    torch.testing.assert_close(out, torch.nn.functional.embedding(ids, w), rtol=0, atol=0)
    assert out.shape == (3, 5, 4)


def test_embedding_fwd_then_sum_is_one_kernel():
    w = torch.randn(12, 8)
    ids = torch.tensor([[1, 11, 0], [4, 4, 2]])
    fd, (out,) = _run(lambda fd, i, wt: [fd.ops.sum(fd.ops.embedding_fwd(i, wt), dims=[2])], ids, w)
    torch.testing.assert_close(out, torch.nn.functional.embedding(ids, w).sum(2))
    assert len(schedules(fd)) == 1


def test_embedding_fwd_max_norm_is_refused():
    with FusionDefinition() as fd:
        i = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        w = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_scalar(1.0, dtype=DataType.Double)
        with pytest.raises(Exception, match="max_norm"):
            fd.ops.embedding_fwd(i, w, None, s)


# --- errors, printing, stores beside reads, sm_90 --------------------------------------------------
@pytest.mark.parametrize(
    "op,bad",
    [
        ("index_select", 9),
        ("index_select", -1),
        ("gather", 5),
        ("gather", -1),
        ("embedding_fwd", -1),
        ("take_along_axis", -6),
        ("take_along_axis", 5),
    ],
)
def test_out_of_range_index_raises_before_launch(op, bad, on_cpu):
    x = torch.randn(5, 9) if op == "index_select" else torch.randn(3, 5)
    if op == "index_select":
        idx = torch.tensor([0, bad, 1])
        build = lambda fd, a, i: [fd.ops.index_select(a, i, 1)]  # noqa: E731
    elif op == "embedding_fwd":
        idx = torch.tensor([0, bad, 1])
        build = lambda fd, a, i: [fd.ops.embedding_fwd(i, a)]  # noqa: E731
    else:
        idx = torch.tensor([[0], [bad], [1]])
        build = lambda fd, a, i: [getattr(fd.ops, op)(a, i, 1)]  # noqa: E731
    with pytest.raises(IndexError, match=rf"{op}: index {bad} .*out of range"):
        _run(build, x, idx)


def test_out_of_range_on_replay_raises(on_cpu):
    x = torch.randn(4, 3)
    fd, _ = _run(lambda fd, a, i: [fd.ops.index_select(a, i, 0)], x, torch.tensor([1, 2]))
    with pytest.raises(IndexError, match="index_select: index 4"):
        fd.execute([x, torch.tensor([0, 4])])
    with pytest.raises(IndexError, match="index_select: index -1"):
        fd.execute([x, torch.tensor([0, -1])])
    (out,) = fd.execute([x, torch.tensor([3, 0])])
    torch.testing.assert_close(out, x[[3, 0]])


@pytest.mark.parametrize("op", ["take_along_axis", "gather", "index_select"])
@pytest.mark.parametrize("bad", [10, 17])
def test_an_index_the_fusion_computes_out_of_range_raises_on_the_cpu(op, bad, on_cpu):
    """The index is computed in the fusion (an input plus a scalar), so no host check sees
    it; the kernel's device assert does in Triton's CPU interpreter: an IndexError naming
    the op, as torch raises (on a GPU the assert compiles only with TRITON_DEBUG=1). An
    index in range runs."""
    x = torch.randn(6, 10)
    i = (
        torch.tensor([[1], [2], [3], [4], [5], [0]])
        if op != "index_select"
        else torch.tensor([1, 2])
    )
    for shift, ok in ((bad, False), (0, True)):
        with FusionDefinition() as fd:
            a, b = fd.from_pytorch(x), fd.from_pytorch(i)
            s = fd.define_scalar(shift, dtype=DataType.Int)
            j = fd.ops.add(b, s)
            fd.add_output(getattr(fd.ops, op)(a, j, 1))
        if ok:
            (out,) = fd.execute([x, i])
            want = torch.index_select(x, 1, i) if op == "index_select" else torch.gather(x, 1, i)
            torch.testing.assert_close(out, want)
        else:
            with pytest.raises(IndexError, match=f"{op}: index out of range"):
                fd.execute([x, i])


@pytest.mark.parametrize("consumer", ["none", "sum", "softmax"])
@pytest.mark.parametrize("op", ["take_along_axis", "gather", "index_select"])
def test_an_index_minus_one_in_range_runs_in_masked_tiles(op, consumer):
    """Indices in [1, n] minus 1 are in range, but a masked lane of a tile past the
    tensor's end loads 0 and computes -1: the kernel's assert covers the tile's lanes
    only, so it passes in the CPU interpreter (which evaluates it) and with CUDA tensors.
    Odd extents leave masked lanes in the pointwise, reduction and normalization kernels."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(7, 13, generator=g)
    i = torch.randint(1, 14, [5] if op == "index_select" else [7, 5], generator=g)

    def build(fd, a, b):
        j = fd.ops.sub(b, fd.define_scalar(1, dtype=DataType.Int))
        y = getattr(fd.ops, op)(a, j, 1)
        if consumer == "sum":
            y = fd.ops.sum(y, [1])
        elif consumer == "softmax":
            m = fd.ops.broadcast_in_dim(fd.ops.max(y, [1]), list(y.shape()), [0])
            e = fd.ops.exp(fd.ops.sub(y, m))
            y = fd.ops.div(e, fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), list(y.shape()), [0]))
        return [y]

    dev = torch.get_default_device()
    xs, js = x.to(dev), i.to(dev)
    _, (out,) = _run(build, xs, js)
    want = (
        torch.index_select(xs, 1, js - 1) if op == "index_select" else torch.gather(xs, 1, js - 1)
    )
    if consumer == "sum":
        want = want.sum(1)
    elif consumer == "softmax":
        want = torch.softmax(want, 1)
    torch.testing.assert_close(out, want)


def test_printed_like_nvfuser():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        j = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        fd.add_output(fd.ops.index_select(a, i, dim=-1))
        fd.add_output(fd.ops.gather(a, j, 0))
        fd.add_output(fd.ops.take_along_axis(a, j, 1))
        fd.add_output(fd.ops.embedding_fwd(i, a))
    text = str(fd)
    assert "T3 = fd.ops.index_select(T0, T1, dim=-1)" in text
    assert "T4 = fd.ops.gather(T0, T2, dim=0)" in text
    assert "T5 = fd.ops.take_along_axis(T0, T2, dim=1)" in text
    assert "T6 = fd.ops.embedding_fwd(T1, T0, None, None, None, None, None)" in text


def test_an_output_upstream_of_a_read_is_stored_whole():
    """exp(x) is an output and is read through index_select: it is stored by its own
    kernel in full, never along the select's (partial, repeated) positions."""
    x = torch.randn(5, 6)
    idx = torch.tensor([4, 4, 0])
    fd, (e, out) = _run(
        lambda fd, a, i: [(t := fd.ops.exp(a)), fd.ops.index_select(t, i, 0)], x, idx
    )
    torch.testing.assert_close(e, x.exp())
    torch.testing.assert_close(out, x.exp()[[4, 4, 0]])


def test_gather_of_a_gathered_index():
    """An index operand that is itself an indexed read (embedding of selected ids)."""
    w = torch.randn(9, 3)
    ids = torch.tensor([8, 1, 5, 0])
    pick = torch.tensor([3, 1, 0])
    fd, (out,) = _run(
        lambda fd, wt, i, p: [fd.ops.embedding_fwd(fd.ops.index_select(i, p, 0), wt)],
        w,
        ids,
        pick,
    )
    torch.testing.assert_close(out, w[ids[pick % 4]], rtol=0, atol=0)
    assert len(schedules(fd)) == 1


@pytest.mark.parametrize("case", ["select_mul_sum", "take_along_axis", "embedding"])
def test_compiles_for_sm90(case, on_cpu):
    x = torch.randn(64, 128)
    if case == "select_mul_sum":
        idx = torch.randint(0, 64, (32,), dtype=torch.int32)
        fd, _ = _run(
            lambda fd, a, i: [
                fd.ops.sum(fd.ops.mul((s := fd.ops.index_select(a, i, 0)), s), dims=[1])
            ],
            x,
            idx,
        )
    elif case == "take_along_axis":
        idx = torch.randint(0, 128, (64, 1))
        fd, _ = _run(lambda fd, a, i: [fd.ops.take_along_axis(a, i, 1)], x, idx)
    else:
        idx = torch.randint(0, 64, (4, 16))
        fd, _ = _run(lambda fd, i, wt: [fd.ops.embedding_fwd(i, wt)], idx, x)
    arts = compile_last_run(fd.executor())
    assert arts and all(".target sm_90" in a.ptx for a in arts)
    assert any("ld.global" in a.ptx for a in arts)


@pytest.mark.parametrize("order", ORDERS3, ids=str)
@pytest.mark.parametrize("dims", [[0], [1], [2], [0, 2]], ids=str)
def test_index_select_then_reduce_every_order(order, dims):
    """The reduction kernel reads through the select along kept and reduced dims alike."""
    x = with_order([5, 6, 7], order, torch.float32)
    idx = _index([3, 0, 5, 5, 1], torch.int64)
    fd, (out,) = _run(
        lambda fd, a, i: [fd.ops.sum(fd.ops.index_select(a, i, 1), dims=dims)], x, idx
    )
    torch.testing.assert_close(out, torch.index_select(x, 1, idx).sum(dims))
    assert len(schedules(fd)) == 1


def test_softmax_of_a_selection_is_one_normalization_kernel():
    """A normalization over gathered rows: one kernel reads the rows through the select."""
    x = torch.randn(6, 10)
    idx = _index([5, 0, 2, 2])
    with FusionDefinition() as fd:
        a, i = fd.from_pytorch(x), fd.from_pytorch(idx)
        s = fd.ops.index_select(a, i, 0)
        mx = fd.ops.max(s, dims=[1], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(s, mx))
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, dims=[1], keepdim=True)))
    (out,) = fd.execute([x, idx])
    torch.testing.assert_close(out, torch.softmax(x[idx], 1))
    assert [p.scheduler for p in schedules(fd)] == ["normalization"]
    assert schedules(fd)[0].generic


@pytest.mark.parametrize(
    "order,dim,expected",
    [
        ((0, 1), 0, "row_major"),  # the select's dim is outermost: the data's order
        ((0, 1), 1, "row_major"),  # the select's dim is innermost: nothing maps
        ((1, 0), 0, "row_major"),  # the same, column-major
        ((1, 0), 1, "column_major"),  # dim 0, inside the selected one, keeps its order
    ],
)
def test_output_layout_follows_the_data_inside_the_indexed_dim(order, dim, expected):
    """The output's order: the data's allocation order walked innermost first through the
    read's kept dims, stopping at the indexed one (the inferred-layout rule); torch returns
    row-major in all four cases, layoutfuse keeps a column-major input's column order."""
    x = with_order([4, 6], order, torch.float32)
    idx = _index([1, 3, 0])
    _, (out,) = _run(lambda fd, a, i: [fd.ops.index_select(a, i, dim)], x, idx)
    torch.testing.assert_close(out, torch.index_select(x, dim, idx), rtol=0, atol=0)
    shape = list(out.shape)
    want = _row_major(shape) if expected == "row_major" else (1, shape[0])
    assert out.stride() == want


# --- indexed reads with the movement ops (slice, pad, cat, select) ------------------------
@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=str)
def test_index_select_of_a_slice_and_a_pad_of_a_selection(order):
    """An indexed read through a stepped slice (its walk goes on past the loaded index),
    and a pad whose input is an indexed read (the index's load masked with the pad's
    input): one pointwise kernel each, against torch."""
    x = with_order([9, 8], order, torch.float32)
    idx = _index([3, 0, 2, 2, 1], torch.int32)
    fd, (out,) = _run(
        lambda fd, a, i: [fd.ops.index_select(fd.ops.slice(a, [1, 1], [9, 8], [2, 3]), i, 0)],
        x,
        idx,
    )
    torch.testing.assert_close(out, x[1::2, 1::3][idx.long()], rtol=0, atol=0)
    assert len(schedules(fd)) == 1
    fd, (out,) = _run(
        lambda fd, a, i: [
            fd.ops.pad(fd.ops.index_select(a, i, 1), [2, -1, 1, 1], fd.define_scalar(-3.0))
        ],
        x,
        idx,
    )
    ref = torch.nn.functional.pad(x[:, idx.long()], [2, -1, 1, 1], value=-3.0)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    assert len(schedules(fd)) == 1


def test_index_select_of_a_pad_and_through_a_sliced_index():
    """The loaded index addresses a padded input (the pad's condition is on the loaded
    index, positions in the padding read the fill), and the index operand itself is a
    stepped slice of a tensor (an affine load with a base offset, read inside the walk)."""
    x = torch.randn(5, 4)
    raw = torch.tensor([9, 6, 0, 7, 3, 8, 1, 5, 2], dtype=torch.int64)
    fd, (out,) = _run(
        lambda fd, a, r: [
            fd.ops.index_select(
                fd.ops.pad(a, [0, 0, 2, 3], fd.define_scalar(7.5)),
                fd.ops.slice(r, [1], [9], [2]),
                0,
            )
        ],
        x,
        raw,
    )
    ref = torch.nn.functional.pad(x, [0, 0, 2, 3], value=7.5)[raw[1::2]]
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    assert len(schedules(fd)) == 1


@pytest.mark.parametrize("dim", [0, 1])
def test_cat_of_a_selection_and_a_tensor(dim):
    """cat of an index_select with a tensor (and a select of that): the cat's pads read the
    selection through its walk and the tensor as their fill."""
    x = with_order([6, 5], (1, 0), torch.float32)
    idx = _index([5, 1, 1, 4], torch.int64)
    y = torch.randn(4, 5) if dim == 0 else torch.randn(4, 3)
    sel_x = x[idx] if dim == 0 else x[idx][:, :3]
    with FusionDefinition() as fd:
        a, i, b = fd.from_pytorch(x), fd.from_pytorch(idx), fd.from_pytorch(y)
        s = fd.ops.index_select(a, i, 0)
        if dim == 1:
            s = fd.ops.slice(s, [0, 0], [4, 3], [1, 1])
        c = fd.ops.cat([s, b], dim)
        fd.add_output(fd.ops.mul(c, fd.define_scalar(2.0)))
        fd.add_output(fd.ops.select(c, fd.define_scalar(1), 0))
    out, row = fd.execute([x, idx, y])
    ref = torch.cat([sel_x, y], dim)
    torch.testing.assert_close(out, ref * 2, rtol=0, atol=0)
    torch.testing.assert_close(row, ref[1], rtol=0, atol=0)
    # one kernel per output (the select's row is its own iteration space), each reading
    # the selection through the cat's walk
    assert [p.scheduler for p in schedules(fd)] == ["pointwise", "pointwise"]
    assert all(p.generic for p in schedules(fd))


def test_softmax_of_a_pad_of_a_selection_is_one_normalization_kernel():
    """Generic normalization through a pad and an indexed read on one chain (the rule
    takes both kinds of walked load)."""
    x = torch.randn(6, 10)
    idx = _index([5, 0, 2, 2])
    with FusionDefinition() as fd:
        a, i = fd.from_pytorch(x), fd.from_pytorch(idx)
        s = fd.ops.pad(fd.ops.index_select(a, i, 0), [1, 2], fd.define_scalar(0.5))
        mx = fd.ops.max(s, dims=[1], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(s, mx))
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, dims=[1], keepdim=True)))
    (out,) = fd.execute([x, idx])
    ref = torch.softmax(torch.nn.functional.pad(x[idx], [1, 2], value=0.5), 1)
    torch.testing.assert_close(out, ref)
    assert [p.scheduler for p in schedules(fd)] == ["normalization"]
    assert schedules(fd)[0].generic


def test_slice_and_pad_with_a_selection_compile_for_sm90(on_cpu):
    x = torch.randn(64, 128)
    idx = torch.randint(0, 32, (48,), dtype=torch.int32)
    fd, _ = _run(
        lambda fd, a, i: [
            fd.ops.pad(
                fd.ops.index_select(fd.ops.slice(a, [0, 0], [64, 128], [2, 1]), i, 0),
                [1, 1, 0, 2],
            )
        ],
        x,
        idx,
    )
    arts = compile_last_run(fd.executor())
    assert arts and all(".target sm_90" in a.ptx for a in arts)


# --- found by the generated programs ---------------------------------------------------------
def test_gather_along_an_expanded_index_dim_has_the_index_extent():
    """An expanded (stride 0) index dim of extent 4 against arg's static extent 6: the
    output has the index's extent (it took arg's and the run refused the shapes)."""
    x = torch.arange(30.0).reshape(5, 6)
    idx = torch.tensor([[1], [0], [4]]).expand(3, 4)
    with FusionDefinition() as fd:
        a, i = fd.from_pytorch(x, static_sizes=True), fd.from_pytorch(idx)
        fd.add_output(fd.ops.gather(a, i, 0))
    (out,) = fd.execute([x, idx])
    assert torch.equal(out, torch.gather(x, 0, idx))


def test_take_along_axis_broadcasts_a_size_one_index_dim_to_an_expanded_arg_dim():
    """arg's dim 1 expanded (stride 0, extent 5), the index's of extent 1: broadcast, as
    torch does (the run refused the extents)."""
    x = torch.arange(4.0)[:, None].expand(4, 5)
    idx = torch.tensor([[3], [1]])
    with FusionDefinition() as fd:
        a, i = fd.from_pytorch(x), fd.from_pytorch(idx)
        fd.add_output(fd.ops.take_along_axis(a, i, 0))
    (out,) = fd.execute([x, idx])
    assert torch.equal(out, torch.take_along_dim(x, idx, 0))


@pytest.mark.parametrize("op", ["take_along_axis", "gather", "index_select"])
@pytest.mark.parametrize("index_dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_a_floating_index_is_truncated_as_nvfuser_takes_it(op, index_dtype):
    """Thunder's cross-entropy takes along the class axis with ``where(target != ignore,
    target, 0.0)``, which nvFuser's promotion makes Float: its values index as integers
    (truncated toward zero, as nvFuser's generated code converts them)."""
    dev = torch.get_default_device()
    x = torch.randn(6, 9, device=dev)
    values = torch.tensor([[3.0], [0.0], [8.0], [2.9], [7.5], [1.0]], device=dev)
    index = values.to(index_dtype)
    if op == "index_select":
        index = index.reshape(-1)
    with FusionDefinition() as fd:
        t, i = fd.from_pytorch(x), fd.from_pytorch(index)
        fd.add_output(
            fd.ops.index_select(t, i, 1) if op == "index_select" else getattr(fd.ops, op)(t, i, 1)
        )
    (out,) = fd.execute([x, index])
    want_index = index.long()
    want = x.index_select(1, want_index) if op == "index_select" else x.gather(1, want_index)
    assert torch.equal(out, want)


def test_a_gather_by_a_broadcast_index_broadcasts_its_size_one_dims():
    """A gather by a [1, 1, 1, 1] broadcast index keeps the index's broadcast dims (extent
    1): the result broadcasts against [4, 1, 3] in a clamp, as torch's does (generated
    program 114524)."""
    from layoutfuse.nvfuser import DataType, FusionDefinition

    x = torch.arange(3 * 2 * 7 * 3, dtype=torch.int32).reshape(3, 2, 7, 3)
    idx = torch.full((1, 1, 1, 1), 2, dtype=torch.int64)
    hi = torch.randint(0, 60, (4, 1, 3), generator=torch.Generator().manual_seed(0))
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        i = fd.define_tensor(shape=[1, 1, 1, 1], contiguity=[None] * 4, dtype=DataType.Int)
        h = fd.from_pytorch(hi)
        g = fd.ops.gather(t, i, dim=0)
        fd.add_output(fd.ops.clamp(fd.define_scalar(5), g, h))
    (out,) = fd.execute([x, idx, hi])
    want = torch.clamp(torch.tensor(5), torch.gather(x, 0, idx), hi)
    assert out.shape == want.shape == (1, 4, 1, 3) and torch.equal(out, want)


# take_along_axis of a dim an op made with extent 1 (topk's k = 1, a one-element slice)
# beside a size-1 index dim: the output's dim is arg's (nvFuser's takeAlongAxis takes the
# input's axis off the indexed dim), so the output layout walks the data's order on past
# it (generated program 536175: the output came back row-major).
MADE_ONE_INDEXES = [
    ([1, 1, 5, 6], (2, 1, 0, 3)),  # program 536175's index
    ([1, 1, 5, 6], (0, 1, 2, 3)),
    ([1, 1, 5, 6], (3, 2, 1, 0)),
    ([1, 3, 5, 6], (2, 0, 1, 3)),
    ([1, 3, 5, 6], (1, 3, 2, 0)),
]


@pytest.mark.parametrize("maker", ["topk", "slice"])
@pytest.mark.parametrize("order", [(2, 1, 3, 0), (2, 3, 1, 0), (2, 0, 3, 1)], ids=str)
@pytest.mark.parametrize("index_shape,index_order", MADE_ONE_INDEXES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_take_along_axis_of_a_made_size_one_dim_keeps_the_data_order(
    maker, order, index_shape, index_order, dtype
):
    """The data [4, 3, 4, 6] laid out with the indexed dim 2 outermost, its dim 0 made 1;
    the index's dim 0 (and dim 1) of size 1: the output [1, 3, 5, 6] takes the data's
    memory order (its dim 2, the index's, outermost), which the inferred-layout rule
    walks from the data, the dominant input; torch returns it row-major."""
    x = with_order([4, 3, 4, 6], order, dtype)
    idx = _ordered_index(index_shape, index_order, 4, torch.int32)
    with FusionDefinition() as fd:
        # a slice of one element makes a static extent of 1 where the data's are static
        a, i = fd.from_pytorch(x, static_sizes=maker == "slice"), fd.from_pytorch(idx)
        if maker == "topk":
            made, _ = fd.ops.topk(a, 1, dim=0, largest=False, sorted=True)
        else:
            made = fd.ops.slice(a, start_indices=[2, 0, 0, 0], end_indices=[3, 3, 4, 6])
        fd.add_output(fd.ops.take_along_axis(made, i, 2))
    (out,) = fd.execute([x, idx])
    data = torch.topk(x, 1, dim=0, largest=False).values if maker == "topk" else x[2:3]
    expect = torch.take_along_dim(data, idx.long(), 2)
    assert out.dtype == dtype and out.shape == expect.shape == (1, 3, 5, 6)
    assert torch.equal(out, expect)
    want = torch.empty([expect.shape[d] for d in order]).permute([order.index(d) for d in range(4)])
    sized = [d for d in range(4) if out.shape[d] > 1]
    assert [out.stride(d) for d in sized] == [want.stride(d) for d in sized]


@pytest.mark.parametrize("k_dim", [0, 1])
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_take_along_axis_broadcasts_an_index_dim_an_op_made_of_one(k_dim, order, dtype):
    """The index is topk's indices with k = 1 along ``k_dim`` (an iteration dim of static
    extent 1 that an op made), facing a wider data dim: it broadcasts there, as
    torch.take_along_dim broadcasts a size-1 index dim (it was refused: "the index's
    extent 1 at dim 0 must be equal to the extent 4")."""
    x = with_order([4, 5, 6], order, dtype)
    y = with_order([3 if d == k_dim else n for d, n in enumerate([4, 5, 6])], (2, 0, 1), dtype)
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        _, idx = fd.ops.topk(b, 1, dim=k_dim, largest=True, sorted=True)
        fd.add_output(fd.ops.take_along_axis(a, idx, 2))
    (out,) = fd.execute([x, y])
    idx = torch.topk(y, 1, dim=k_dim).indices
    expect = torch.take_along_dim(x, idx, 2)
    assert out.dtype == dtype and out.shape == expect.shape == (4, 5, 6)
    assert torch.equal(out, expect)
