"""Dims made at run time with extent 1 are broadcast dims (``runtime.extents``).

nvFuser concretizes a symbolic dim that a slice or pad resizes, a reshape, a factory or
topk's k makes, and that comes out of extent 1, as a broadcast dim: it meets any extent
in a pointwise op and ``broadcast_in_dim`` expands it. The loads then read it at index 0,
through strides (affine kernels) and through the index walk (a gather or a pad beside it:
``params.made_ones``). A declared input dim of symbolic extent stays an iteration dim."""

import itertools

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.errors import DefinitionError, InputShapeError
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.programs import is_dense


def _matrix(fd: FusionDefinition, order=(1, 0)):
    return fd.define_tensor(
        shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=list(order)
    )


def _compiled(fd: FusionDefinition) -> None:
    """Every kernel of the last run compiles for sm_90."""
    for a in compile_last_run(fd.executor()):
        assert ".target sm_90" in a.ptx


@pytest.mark.parametrize("order", [(1, 0), (0, 1)], ids=["row_major", "column_major"])
@pytest.mark.parametrize("start", [2, -3])
def test_a_slice_of_one_row_expands_and_meets_three(start, order):
    x = torch.randn(5, 4) if order == (1, 0) else torch.randn(4, 5).t()
    y = torch.randn(3, 4) if order == (1, 0) else torch.randn(4, 3).t()
    with FusionDefinition() as fd:
        t0, t1 = _matrix(fd, order), _matrix(fd, order)
        row = fd.ops.slice(t0, start_indices=[start, 0], end_indices=[start + 1 or 5, 4])
        wide = fd.ops.broadcast_in_dim(row, shape=[3, 4], broadcast_dims=[0, 1])
        fd.add_output(fd.ops.add(wide, t1))
        fd.add_output(fd.ops.mul(row, t1))  # the slice meets [3, 4] directly
    a, b = fd.execute([x, y])
    expect = x[start : start + 1 or None]
    torch.testing.assert_close(a, expect + y, rtol=0, atol=0)
    torch.testing.assert_close(b, expect * y, rtol=0, atol=0)
    assert a.shape == b.shape == (3, 4)
    _compiled(fd)


def test_a_made_broadcast_read_through_the_index_walk():
    """A gather makes the kernel walk each access's chain: the slice's row is read at 0."""
    x, y = torch.randn(5, 6), torch.randn(3, 6)
    idx = torch.randint(0, 6, (3, 6))
    with FusionDefinition() as fd:
        t0, t1 = _matrix(fd), _matrix(fd)
        i = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        row = fd.ops.slice(t0, start_indices=[1, 0], end_indices=[2, 6])
        s = fd.ops.add(row, fd.ops.take_along_axis(t1, i, 1))
        fd.add_output(fd.ops.pad(s, [1, 2, 0, 0]))
        fd.add_output(fd.ops.sum(s, [0]))
    padded, total = fd.execute([x, y, idx])
    ref = x[1:2] + torch.take_along_dim(y, idx, 1)
    torch.testing.assert_close(padded, torch.nn.functional.pad(ref, [1, 2]))
    torch.testing.assert_close(total, ref.sum(0))
    assert any(getattr(r.params, "made_ones", ()) for r in fd.executor().last_run.segments)
    _compiled(fd)


def test_factories_reshapes_and_topk_make_broadcasts():
    x, y = torch.randn(3, 4), torch.randn(3, 5)
    with FusionDefinition() as fd:
        t0, t1 = _matrix(fd), _matrix(fd)
        n = fd.define_scalar(dtype=DataType.Int)
        ones = fd.ops.full(shape=[n, 4], fill_value=fd.define_scalar(2.0), dtype=DataType.Float)
        fd.add_output(fd.ops.mul(ones, t0))  # [1, 4] made by the factory meets [3, 4]
        flat = fd.ops.reshape(fd.ops.sum(t0, [0]), [n, 4])  # a reshape's dim of 1
        fd.add_output(fd.ops.sub(t0, flat))
        top, _ = fd.ops.topk(t1, n, dim=1)
        fd.add_output(fd.ops.sub(t1, top))  # a run-time k of 1: [3, 1] meets [3, 5]
    a, b, c = fd.execute([x, y, 1])
    torch.testing.assert_close(a, 2 * x)
    torch.testing.assert_close(b, x - x.sum(0, keepdim=True))
    torch.testing.assert_close(c, y - y.max(1, keepdim=True).values)


def test_made_dims_of_static_extent_one_broadcast_too():
    """A dim an op makes with a static extent of 1 (topk's constant k = 1, a slice of one
    row of a static extent) meets a wider dim in a pointwise op as torch's size-1 dim
    does, and as nvFuser's concretized symbolic dim does (it was refused: "T5 dim 1 has
    the static extent 1 in the fusion, but the inputs give 3"), and broadcast_in_dim and
    expand widen it; the made tensor keeps its dim, returned as it is."""
    x, y, z = torch.randn(3, 5), torch.randn(5, 3).t(), torch.randn(5, 4)
    with FusionDefinition() as fd:
        t0, t1 = _matrix(fd), _matrix(fd, (0, 1))
        t2 = fd.define_tensor(shape=[5, 4], contiguity=[True, True], dtype=DataType.Float)
        top, _ = fd.ops.topk(t0, 1, dim=1)
        fd.add_output(top)
        fd.add_output(fd.ops.sub(t0, top))  # [3, 1] meets [3, 5]
        fd.add_output(fd.ops.mul(t1, top))  # ... and a column-major [3, 5]
        row = fd.ops.slice(t2, start_indices=[2, 0], end_indices=[3, 4])  # static [1, 4]
        fd.add_output(fd.ops.add(row, t2))
        fd.add_output(fd.ops.broadcast_in_dim(top, shape=[3, 5], broadcast_dims=[0, 1]))
        fd.add_output(fd.ops.expand(row, [5, 4]))
    top, a, b, c, wide, rows = fd.execute([x, y, z])
    want = x.max(1, keepdim=True).values
    torch.testing.assert_close(top, want, rtol=0, atol=0)
    assert top.shape == (3, 1)
    torch.testing.assert_close(a, x - want, rtol=0, atol=0)
    torch.testing.assert_close(b, y * want, rtol=0, atol=0)
    torch.testing.assert_close(c, z[2:3] + z, rtol=0, atol=0)
    torch.testing.assert_close(wide, want.expand(3, 5), rtol=0, atol=0)
    torch.testing.assert_close(rows, z[2:3].expand(5, 4), rtol=0, atol=0)
    assert (a.shape, b.shape, c.shape) == ((3, 5), (3, 5), (5, 4))
    assert a.stride() == (5, 1)
    _compiled(fd)


def test_a_made_dim_of_two_is_no_broadcast():
    x, y = torch.randn(5, 4), torch.randn(3, 4)
    with FusionDefinition() as fd:
        t0, t1 = _matrix(fd), _matrix(fd)
        rows = fd.ops.slice(t0, start_indices=[1, 0], end_indices=[3, 4])
        fd.add_output(fd.ops.add(rows, t1))
    with pytest.raises(InputShapeError, match="disagree on the extent of dim 0"):
        fd.execute([x, y])


def test_declared_and_whole_dims_of_one_stay_iteration_dims():
    """A symbolic input dim of 1 is no broadcast, nor is a slice that keeps it whole."""
    with FusionDefinition() as fd:
        t0, t1 = _matrix(fd), _matrix(fd)
        whole = fd.ops.slice(t0, start_indices=[0, 0], end_indices=[1, 4])
        fd.add_output(fd.ops.add(whole, t1))
    with pytest.raises(InputShapeError, match="not a broadcast dim"):
        fd.execute([torch.randn(1, 4), torch.randn(3, 4)])


# --- squeezing a symbolic dim: nvFuser's squeeze of an ``IterType::Symbolic`` axis -----------
def _squeezed(make, dim: int):
    """A fusion squeezing dim ``dim`` of what ``make(fd, t0, n)`` makes from a [-1, -1]
    input and an integer scalar, returned beside a pointwise use of it."""
    with FusionDefinition() as fd:
        t0 = _matrix(fd)
        n = fd.define_scalar(dtype=DataType.Int)
        made = make(fd, t0, n)
        fd.add_output(fd.ops.mul(fd.ops.squeeze(made, [dim]), fd.define_scalar(2.0)))
    return fd


MAKERS = {
    # name: (make, the squeezed dim, torch's value for x and n = 1)
    "topk_k": (lambda fd, t, n: fd.ops.topk(t, n, dim=0)[0], 0, lambda x: x.max(0).values),
    "slice": (
        lambda fd, t, n: fd.ops.slice(t, start_indices=[0, 2], end_indices=[fd.ops.size(t, 0), 3]),
        1,
        lambda x: x[:, 2],
    ),
    "reshape": (
        lambda fd, t, n: fd.ops.reshape(t, [n, fd.ops.size(t, 0), fd.ops.size(t, 1)]),
        0,
        lambda x: x,
    ),
    "factory": (
        lambda fd, t, n: fd.ops.add(
            fd.ops.full(shape=[n, 4], fill_value=fd.define_scalar(1.5), dtype=DataType.Float),
            fd.ops.slice(t, start_indices=[0, 0], end_indices=[1, 4]),
        ),
        0,
        lambda x: x[0] + 1.5,
    ),
}


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_a_symbolic_dim_may_be_squeezed_and_is_checked_at_run_time(maker):
    """topk's run-time k, a slice, a reshape and a factory make a symbolic dim: squeezing it
    is accepted when the fusion is defined (program 467426 of the generated programs was
    refused); a run where it is 1 returns torch's values (twice: the replay too), one where
    it is 2 raises naming the squeeze."""
    make, dim, ref = MAKERS[maker]
    x = torch.randn(3, 4)
    fd = _squeezed(make, dim)
    for _ in range(2):
        (out,) = fd.execute([x, 1])
        torch.testing.assert_close(out, 2 * ref(x))
    if maker in ("topk_k", "factory"):  # (the slice's is one wide whatever the scalar; the
        #   reshape's element count would not match first)
        with pytest.raises(InputShapeError, match="squeezed dim .* expected 1"):
            _squeezed(make, dim).execute([x, 2])
    _compiled(fd)


def test_a_declared_symbolic_dim_may_not_be_squeezed():
    """An input's dim of unknown extent is an iteration dim (nvFuser refuses too), and so is
    a pointwise result where it meets one."""
    with FusionDefinition() as fd:
        t0 = _matrix(fd)
        n = fd.define_scalar(dtype=DataType.Int)
        with pytest.raises(DefinitionError, match="squeeze: dim 0 has extent symbolic"):
            fd.ops.squeeze(t0, [0])
        top, _ = fd.ops.topk(t0, n, dim=0)
        mixed = fd.ops.add(top, fd.ops.slice(t0, start_indices=[0, 0], end_indices=[1, 4]))
        fd.ops.squeeze(mixed, [0])  # two made dims meeting: still symbolic
        with pytest.raises(DefinitionError, match="squeeze: dim 0 has extent symbolic"):
            fd.ops.squeeze(fd.ops.add(top, t0), [0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("order", [(1, 0), (0, 1)], ids=["row_major", "column_major"])
def test_an_expanded_made_broadcast_comes_back_expanded(order, dtype):
    """broadcast_in_dim of a slice that is one row at run time, as an output: an expanded
    dim (stride 0), as nvFuser returns it (program 654317), on the planned call and the
    replay; a slice of three rows, its extent kept, is a dense output."""
    dt = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}[dtype]
    x = torch.randn(5, 4).to(dtype) if order == (1, 0) else torch.randn(4, 5).to(dtype).t()
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1, -1], contiguity=[True, True], dtype=dt, stride_order=list(order)
        )
        n = fd.define_scalar(dtype=DataType.Int)
        row = fd.ops.slice(t0, start_indices=[1, 0], end_indices=[n, 4])
        wide = fd.ops.broadcast_in_dim(row, shape=[3, 4], broadcast_dims=[0, 1])
        fd.add_output(wide)
        fd.add_output(fd.ops.neg(wide))  # computed from it: dense
    for call in range(2):
        a, b = fd.execute([x, 2])
        torch.testing.assert_close(a, x[1:2].expand(3, 4), rtol=0, atol=0)
        torch.testing.assert_close(b, -x[1:2].expand(3, 4), rtol=0, atol=0)
        assert a.stride() == (0, 1), (call, a.stride())
        assert b.stride() in ((4, 1), (1, 3)), (call, b.stride())
    _compiled(fd)
    y = torch.randn(6, 4).to(dtype)
    with FusionDefinition() as fd2:
        t0 = fd2.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        n = fd2.define_scalar(dtype=DataType.Int)
        rows = fd2.ops.slice(t0, start_indices=[1, 0], end_indices=[n, 4])
        fd2.add_output(fd2.ops.broadcast_in_dim(rows, shape=[-1, 4], broadcast_dims=[0, 1]))
    (c,) = fd2.execute([y, 4])
    torch.testing.assert_close(c, y[1:4], rtol=0, atol=0)
    assert c.stride() == (4, 1)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_two_expanded_made_broadcasts_of_a_3d_input(order):
    """Two dims of a 3-D input that slices make one wide at run time, widened by
    broadcast_in_dim, in every memory order: both come back expanded (stride 0), the kept
    dim dense, on the planned call and the replay; a result computed from it is dense."""
    base = torch.randn([(5, 4, 6)[d] for d in order])
    x = base.permute([order.index(d) for d in range(3)])  # [5, 4, 6], dims outermost first
    assert x.shape == (5, 4, 6)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1, -1, -1],
            contiguity=[True, True, True],
            dtype=DataType.Float,
            stride_order=[2 - order.index(d) for d in range(3)],
        )
        n = fd.define_scalar(dtype=DataType.Int)
        m = fd.define_scalar(dtype=DataType.Int)
        one = fd.ops.slice(t0, start_indices=[1, 0, 3], end_indices=[n, 4, m])
        wide = fd.ops.broadcast_in_dim(one, shape=[3, 4, 2], broadcast_dims=[0, 1, 2])
        fd.add_output(wide)
        fd.add_output(fd.ops.mul(wide, wide))
    want = x[1:2, :, 3:4].expand(3, 4, 2)
    for call in range(2):
        a, b = fd.execute([x, 2, 4])
        torch.testing.assert_close(a, want, rtol=0, atol=0)
        torch.testing.assert_close(b, want * want, rtol=0, atol=0)
        assert a.stride() == (0, 1, 0), (call, a.stride())
        assert is_dense(b, [False] * 3), (call, b.stride())
    _compiled(fd)
