"""slice, pad, cat and select: numerics against torch over layouts, output strides, the
kernels they fuse into (no copy: one kernel for slice -> mul -> cat -> sum) and sm_90
compilation of those kernels."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.errors import DefinitionError, InputShapeError
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.normalization import NormalizationParams
from layoutfuse.schedulers.reduction import ReductionParams
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, small_gpu
from support.tensors import with_order

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

SHAPES = {2: (5, 6), 3: (4, 5, 6), 4: (3, 4, 5, 3)}


def _orders(ndim: int, k: int) -> list[tuple[int, ...]]:
    """Every memory order of rank ``ndim`` (rank 4: a seeded sample of ``k``)."""
    perms = list(itertools.permutations(range(ndim)))
    return perms if ndim < 4 else random.Random(ndim).sample(perms, k)


LAYOUTS = [(n, o) for n in (2, 3, 4) for o in _orders(n, 4)]
# the rest of the rank-4 orders: with --full
FULL_LAYOUTS = [
    pytest.param(4, o, marks=pytest.mark.full)
    for o in itertools.permutations(range(4))
    if (4, o) not in LAYOUTS
]


def _dense_in_order(shape, order) -> tuple[int, ...]:
    st, cur = [0] * len(shape), 1
    for d in reversed(order):
        st[d] = cur
        cur *= max(shape[d], 1)
    return tuple(st)


def _run(build, inputs):
    with FusionDefinition() as fd:
        build(fd)
    return fd, fd.execute(inputs)


def _check_layout(out: torch.Tensor, order) -> None:
    """The output is dense in the dominant input's memory order (size-1 dims aside)."""
    want = _dense_in_order(out.shape, order)
    got = out.stride()
    assert all(g == w for g, w, n in zip(got, want, out.shape) if n > 1), (got, want)


@pytest.mark.parametrize(("ndim", "order"), LAYOUTS + FULL_LAYOUTS, ids=str)
def test_slice_every_layout(ndim, order):
    shape = SHAPES[ndim]
    x = with_order(shape, order, torch.float32)
    starts = [1, -3, 0, 2][:ndim]
    stops = [shape[0], -1, 100, 3][:ndim]
    steps = [2, 1, 3, 1][:ndim]

    def build(fd):
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.mul(fd.ops.slice(t, starts, stops, steps), fd.define_scalar(3.0)))

    _, (out,) = _run(build, [x])
    ref = x[tuple(slice(s, e, k) for s, e, k in zip(starts, stops, steps))] * 3.0
    torch.testing.assert_close(out, ref)
    _check_layout(out, order)


@pytest.mark.parametrize(
    ("start", "stop", "step"),
    [(0, 7, 1), (-5, -1, 2), (-100, 100, 3), (6, 2, 1), (2, 7, 4), (7, 9, 1), (0, -7, 1)],
)
def test_slice_bounds_normalized_as_torch(start, stop, step):
    x = torch.arange(7 * 3, dtype=torch.float32).reshape(7, 3)

    def build(fd):
        t = fd.from_pytorch(x)
        fd.add_output(
            fd.ops.add(fd.ops.slice(t, [start, 0], [stop, 3], [step, 1]), fd.define_scalar(1.0))
        )

    _, (out,) = _run(build, [x])
    torch.testing.assert_close(out, x[start:stop:step] + 1.0)


def test_slice_symbolic_extent_negative_start():
    """A negative start over a symbolic extent is normalized on the host at run time."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(fd.ops.slice(t, [-3, 1], [9, 4], [1, 2])))
    for n in (2, 5, 9):
        x = torch.randn(n, 5)
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, -x[-3:9, 1:4:2])


def test_slice_of_expanded_size1_and_sliced_inputs():
    base = torch.randn(6, 1, 9)
    viewed = base[1::2, :, ::3]  # an input that is itself a strided view
    expanded = torch.randn(6, 1, 1).expand(6, 4, 3)  # stride-0 dims

    def build(fd):
        a = fd.from_pytorch(viewed)
        b = fd.from_pytorch(expanded)
        sa = fd.ops.slice(a, [1, 0, 0], [3, 1, 3], [1, 1, 2])
        sb = fd.ops.slice(b, [0, 1, 0], [6, 4, 3], [2, 2, 2])
        fd.add_output(fd.ops.mul(sa, fd.ops.slice(sb, [1, 0, 0], [3, 1, 2], [1, 1, 1])))

    _, (out,) = _run(build, [viewed, expanded])
    ref = viewed[1:3, 0:1, 0:3:2] * expanded[0:6:2, 1:4:2, 0:3:2][1:3, 0:1, 0:2]
    torch.testing.assert_close(out, ref)


@pytest.mark.parametrize(("ndim", "order"), LAYOUTS + FULL_LAYOUTS, ids=str)
@pytest.mark.parametrize("widths", [[1, 2], [2, -1, 0, 3], [-1, -2, 1, 0]], ids=str)
def test_pad_every_layout(ndim, order, widths):
    x = with_order(SHAPES[ndim], order, torch.float32)

    def build(fd):
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.exp(fd.ops.pad(t, widths, fd.define_scalar(-2.5))))

    _, (out,) = _run(build, [x])
    ref = torch.nn.functional.pad(x, widths, value=-2.5).exp()
    torch.testing.assert_close(out, ref)
    _check_layout(out, order)


@pytest.mark.parametrize("dtype", [torch.int32, torch.bfloat16, torch.bool], ids=str)
def test_pad_default_value_and_dtypes(dtype):
    x = (torch.randn(4, 5) * 4).to(dtype)

    def build(fd):
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.pad(t, [0, 2, 1, 1]))

    _, (out,) = _run(build, [x])
    assert out.dtype == dtype
    assert torch.equal(out, torch.nn.functional.pad(x, [0, 2, 1, 1]))


def test_pad_only_cropping_is_an_affine_slice():
    x = torch.randn(6, 7)

    def build(fd):
        fd.add_output(fd.ops.pad(fd.from_pytorch(x), [-1, -2, 0, -3]))

    fd, (out,) = _run(build, [x])
    torch.testing.assert_close(out, x[0:3, 1:5])
    (params,) = fd.last_schedule()
    assert not params.generic and params.based  # a strided view at a base offset
    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_each_dim_inputs_of_different_layouts(dim):
    shapes = [[3, 4, 5], [3, 4, 5], [3, 4, 5]]
    for k, s in enumerate(shapes):
        s[dim] = 2 + k
    orders = [(0, 1, 2), (2, 1, 0), (1, 0, 2)]
    xs = [with_order(s, o, torch.float32, seed=k) for k, (s, o) in enumerate(zip(shapes, orders))]

    def build(fd):
        ts = [fd.from_pytorch(x) for x in xs]
        fd.add_output(fd.ops.mul(fd.ops.cat(ts, dim), fd.define_scalar(2.0)))

    _, (out,) = _run(build, xs)
    torch.testing.assert_close(out, torch.cat(xs, dim) * 2.0)
    _check_layout(out, orders[0])  # the first input dominates (ties: the first)


def test_cat_symbolic_extents():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.cat([a, b], 1))
    for n, m in ((1, 3), (4, 2)):
        x, y = torch.randn(3, n), torch.randn(3, m)
        (out,) = fd.execute([x, y])
        torch.testing.assert_close(out, torch.cat([x, y], 1))


def test_cat_manual_padding():
    x, y = torch.randn(3, 2), torch.randn(3, 4)

    def build(fd):
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        pa = fd.ops.pad(a, [0, 4])
        pb = fd.ops.pad(b, [2, 0])
        fd.add_output(fd.ops.cat([pa, pb], 1, manual_padding=True))

    _, (out,) = _run(build, [x, y])
    torch.testing.assert_close(out, torch.cat([x, y], 1))


def test_cat_rejects_mixed_dtypes_as_nvfuser():
    with pytest.raises(DefinitionError, match="different data types"):
        with FusionDefinition() as fd:
            a = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
            b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half)
            fd.ops.cat([a, b], 0)


@pytest.mark.parametrize("index", [0, 2, -1, -4])
def test_select_static_and_runtime_index(index):
    x = with_order((3, 4, 5), (2, 0, 1), torch.float32)

    def build(fd):
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.add(fd.ops.select(t, index, 1), fd.define_scalar(1.0)))

    _, (out,) = _run(build, [x])
    torch.testing.assert_close(out, x.select(1, index) + 1.0)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        i = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.add(fd.ops.select(t, i, 1), fd.define_scalar(1.0)))
    (out,) = fd.execute([x, index])
    torch.testing.assert_close(out, x.select(1, index) + 1.0)


def test_select_out_of_range_is_a_clear_error():
    x = torch.randn(3, 4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        i = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.select(t, i, 1))
    for bad in (4, -5):
        with pytest.raises(InputShapeError, match=f"select index {bad} is out of range"):
            fd.execute([x, bad])
    with pytest.raises(DefinitionError, match="index 4 is out of range for dim 1 of extent 4"):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[3, 4], contiguity=[True, True], dtype=DataType.Float)
            fd.ops.select(t, 4, 1)


def test_slice_mul_cat_sum_is_one_kernel():
    x = with_order((6, 5), (1, 0), torch.float32)
    y = torch.randn(3, 5)

    def build(fd):
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        s = fd.ops.slice(a, [1, 0], [6, 5], [2, 1])
        c = fd.ops.cat([fd.ops.mul(s, s), b], 0)
        fd.add_output(fd.ops.sum(c, [0]))

    fd, (out,) = _run(build, [x, y])
    torch.testing.assert_close(out, torch.cat([x[1:6:2] ** 2, y], 0).sum(0))
    (params,) = fd.last_schedule()
    assert isinstance(params, ReductionParams)
    (segment,) = fd.segment([x, y])
    assert segment["scheduler"] == "reduction"
    assert {"slice", "mul", "pad", "sum"} <= set(segment["ops"])
    for art in compile_last_run(fd.executor()):
        assert ".target sm_90" in art.ptx


def test_sum_of_pad_counts_the_fill():
    x = torch.randn(4, 6)

    def build(fd):
        p = fd.ops.pad(fd.from_pytorch(x), [1, 1, 2, 0], fd.define_scalar(2.0))
        fd.add_output(fd.ops.sum(p, [1]))

    fd, (out,) = _run(build, [x])
    torch.testing.assert_close(out, torch.nn.functional.pad(x, [1, 1, 2, 0], value=2.0).sum(1))
    assert len(fd.last_schedule()) == 1


def _softmax(fd, t):
    mx = fd.ops.max(t, [1], keepdim=True)
    e = fd.ops.exp(fd.ops.sub(t, mx))
    return fd.ops.div(e, fd.ops.sum(e, [1], keepdim=True))


@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=str)
def test_softmax_through_slice_is_one_normalization_kernel(order):
    x = with_order((6, 11), order, torch.float32)

    def build(fd):
        s = fd.ops.slice(fd.from_pytorch(x), [1, 2], [6, 10], [1, 1])
        fd.add_output(_softmax(fd, s))

    fd, (out,) = _run(build, [x])
    torch.testing.assert_close(out, torch.softmax(x[1:6, 2:10], 1))
    (params,) = fd.last_schedule()
    assert isinstance(params, NormalizationParams) and params.based
    for art in compile_last_run(fd.executor()):
        assert ".target sm_90" in art.ptx


def test_layer_norm_of_selected_rows():
    x = torch.randn(3, 5, 8)

    def build(fd):
        t = fd.ops.select(fd.from_pytorch(x), -2, 0)
        var, mean = fd.ops.var_mean(t, [1], correction=0, keepdim=True)
        fd.add_output(
            fd.ops.mul(fd.ops.sub(t, mean), fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5))))
        )

    fd, (out,) = _run(build, [x])
    ref = torch.nn.functional.layer_norm(x[-2], (8,), eps=1e-5)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    (params,) = fd.last_schedule()
    assert isinstance(params, NormalizationParams)


LOOPED = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_tile=32))


@pytest.mark.parametrize(
    ("mode", "order"), [("persistent", (0, 1)), ("persistent", (1, 0)), ("looped", (0, 1))]
)
def test_softmax_and_layer_norm_through_pad_are_one_normalization_kernel(mode, order):
    """Masked reads in the normalization kernel: the pad's condition masks the load and
    selects the fill, per R tile (generic mode: the padded load walks its chain). (Strided
    columns that need two passes go segmented, padded or not: the scheduler's rule.)"""
    x = with_order((6, 70) if mode == "looped" else (4, 6), order, torch.float32)
    widths = [3, -1, 0, 1]

    def build(fd):
        p = fd.ops.pad(fd.from_pytorch(x), widths, fd.define_scalar(-1.0))
        fd.add_output(_softmax(fd, p))
        var, mean = fd.ops.var_mean(p, [1], correction=0, keepdim=True)
        rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5)))
        fd.add_output(fd.ops.mul(fd.ops.sub(p, mean), rstd))

    with FusionDefinition() as fd:
        build(fd)
    if mode == "looped":
        configured(fd, tuning=LOOPED, target=small_gpu(4))
    sm, ln = fd.execute([x])
    p = torch.nn.functional.pad(x, widths, value=-1.0)
    torch.testing.assert_close(sm, torch.softmax(p, 1))
    ref = torch.nn.functional.layer_norm(p, (p.shape[1],), eps=1e-5)
    torch.testing.assert_close(ln, ref, atol=1e-5, rtol=1e-5)
    params = fd.last_schedule()
    assert all(isinstance(q, NormalizationParams) and q.generic for q in params), params
    assert {q.mode for q in params} == {mode}
    for art in compile_last_run(fd.executor()):
        assert ".target sm_90" in art.ptx


def test_pad_and_cat_kernels_compile_for_sm90():
    x, y = torch.randn(4, 6), torch.randn(4, 3).t().contiguous().t()

    def build(fd):
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        p = fd.ops.pad(a, [1, -2, 0, 1], fd.define_scalar(0.5))
        fd.add_output(fd.ops.cat([p, fd.ops.pad(b, [0, 0, 0, 1])], 1))

    fd, (out,) = _run(build, [x, y])
    p = torch.nn.functional.pad(x, [1, -2, 0, 1], value=0.5)
    torch.testing.assert_close(out, torch.cat([p, torch.nn.functional.pad(y, [0, 0, 0, 1])], 1))
    arts = compile_last_run(fd.executor())
    assert len(arts) == 1 and ".target sm_90" in arts[0].ptx


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)], ids=str)
@pytest.mark.parametrize("dims", [[2], [0], [0, 2]], ids=str)
def test_sum_of_slice_and_select_is_one_affine_reduction(order, dims):
    x = with_order((7, 5, 9), order, torch.float32)

    def build(fd):
        t = fd.from_pytorch(x)
        s = fd.ops.slice(t, [1, 0, 2], [7, 5, 9], [2, 1, 3])
        fd.add_output(fd.ops.sum(s, dims))
        fd.add_output(fd.ops.sum(fd.ops.select(t, 3, 1), [0]))

    fd, (a, b) = _run(build, [x])
    torch.testing.assert_close(a, x[1:7:2, :, 2:9:3].sum(dims))
    torch.testing.assert_close(b, x[:, 3].sum(0))
    params = fd.last_schedule()
    assert len(params) == 2 and all(isinstance(p, ReductionParams) for p in params)
    assert all(p.based and not p.generic for p in params)


def test_runtime_select_inside_a_masked_walk():
    """A select's runtime index on a chain that walks per element (through a pad) is the
    kernel's scalar argument; each index gets its own plan (integers are in the signature)."""
    x = torch.randn(4, 5, 3)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        i = fd.define_scalar(dtype=DataType.Int)
        p = fd.ops.pad(fd.ops.select(t, i, 1), [1, 1], fd.define_scalar(7.0))
        fd.add_output(fd.ops.sum(p, [1]))
    for idx in (1, -1, 1, 3):
        (out,) = fd.execute([x, idx])
        ref = torch.nn.functional.pad(x.select(1, idx), [1, 1], value=7.0).sum(1)
        torch.testing.assert_close(out, ref)
    assert len(fd.last_schedule()) == 1


@pytest.mark.parametrize("stride_order", [[0, 1, 2], [2, 1, 0], [1, 2, 0]], ids=str)
def test_pinned_layout_of_cat_and_pad_outputs(stride_order):
    x, y = with_order((3, 4, 5), (2, 0, 1), torch.float32), torch.randn(3, 2, 5)

    def build(fd):
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.cat([a, b], 1), stride_order=stride_order)
        fd.add_output(fd.ops.pad(a, [1, 1]), stride_order=stride_order)

    _, (c, p) = _run(build, [x, y])
    torch.testing.assert_close(c, torch.cat([x, y], 1))
    torch.testing.assert_close(p, torch.nn.functional.pad(x, [1, 1]))
    order = sorted(range(3), key=lambda d: -stride_order[d])  # outermost first
    _check_layout(c, order)
    _check_layout(p, order)
