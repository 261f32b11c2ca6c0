"""fd.ops: every pointwise row, the reductions' three forms, Welford, shape and creation ops,
and operators on handles, executed with the reference executor and compared with torch."""

import pytest
import torch
import torch.nn.functional as F

from layoutfuse.ir.ops.elementwise import ROW_BY_NAME
from layoutfuse.nvfuser import DataType, FusionDefinition, Tensor
from support.execution import assert_ran_kernels

INTEGRAL_OPS = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "gcd"}
SHIFTS = {"bitwise_left_shift", "bitwise_right_shift", "logical_right_shift"}
UNIT_DOMAIN = {"acos", "asin", "atanh", "erfinv"}  # (-1, 1); acosh: above 1
COMPLEX_OPS = {"imag"}  # defined for complex operands only


def _logical_right_shift(x, s):
    """Zeros shifted in from the left (counts 0..63 here): the unsigned view's shift."""
    out = [((a % 2**64) >> b) for a, b in zip(x.flatten().tolist(), s.flatten().tolist())]
    return torch.tensor([v - 2**64 if v >= 2**63 else v for v in out]).reshape(x.shape)


TORCH_FN = {
    "truediv": torch.true_divide,
    "silu": F.silu,
    "relu": torch.relu,
    "addcmul": lambda a, b, c, v: torch.addcmul(a, b, c, value=v),
    "clamp": lambda x, lo, hi: torch.clamp(x, lo, hi),
    "erfcinv": lambda x: -torch.special.ndtri(x / 2) / 2**0.5,
    "threshold": lambda x, t, v: F.threshold(x, t, v),
    "add_alpha": lambda a, b, v: torch.add(a, b, alpha=v),
    "sub_alpha": lambda a, b, v: torch.sub(a, b, alpha=v),
    "logical_right_shift": _logical_right_shift,
}


def _operands(name, arity):
    g = torch.Generator().manual_seed(0)
    if name in INTEGRAL_OPS:
        return [torch.randint(-8, 8, (3, 4), generator=g) for _ in range(arity)]
    if name in SHIFTS:
        return [
            torch.randint(-(2**40), 2**40, (3, 4), generator=g),
            torch.randint(0, 64, (3, 4), generator=g),
        ]
    if name in COMPLEX_OPS:
        return [torch.randn(3, 4, generator=g, dtype=torch.complex64) for _ in range(arity)]
    xs = [torch.rand(3, 4, generator=g) + 0.5 for _ in range(arity)]
    if name in UNIT_DOMAIN:
        xs = [x - 0.5 for x in xs]
    if name == "acosh":
        xs = [x + 0.5 for x in xs]
    if name == "threshold":
        xs[1:] = [1.0, -2.0]
    if name in ("add_alpha", "sub_alpha"):
        xs[2] = 0.75
    if name == "where":
        xs[0] = xs[0] > 1.0
    if name in ("clamp", "addcmul"):
        xs[-1] = 0.75 if name == "addcmul" else 1.25
    if name == "clamp":
        xs[1] = 0.75
    return xs


def _run(fd_body, inputs):
    with FusionDefinition() as fd:
        outs = fd_body(fd)
        for o in outs if isinstance(outs, tuple | list) else [outs]:
            fd.add_output(o)
    return fd, fd.execute(inputs)


def _define(fd, x):
    if isinstance(x, torch.Tensor):
        return fd.from_pytorch(x)
    return fd.define_scalar(None, dtype=DataType.Double)


@pytest.mark.parametrize("name", sorted(ROW_BY_NAME))
def test_pointwise_row(name, reference_executor):
    row = ROW_BY_NAME[name]
    xs = _operands(name, row.arity)
    fd, (out,) = _run(lambda fd: getattr(fd.ops, name)(*[_define(fd, x) for x in xs]), xs)
    expected = TORCH_FN.get(name, getattr(torch, name, None))(*xs)
    torch.testing.assert_close(out, expected, check_dtype=False)
    assert f"fd.ops.{name}(" in repr(fd)


def test_scalar_only_arithmetic(reference_executor):
    def body(fd):
        a = fd.define_scalar(None, dtype=DataType.Int)
        b = fd.define_scalar(7)
        return fd.ops.sub(fd.ops.mul(a, b), a)

    fd, (out,) = _run(body, [3])
    assert int(out) == 18


def test_operators_on_handles(reference_executor):
    x, y = torch.rand(2, 3) + 0.5, torch.rand(2, 3) + 0.5
    i, j = torch.randint(0, 8, (2, 3)), torch.randint(1, 8, (2, 3))

    def body(fd):
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        p, q = fd.from_pytorch(i), fd.from_pytorch(j)
        s = fd.define_scalar(2.0)
        return (
            a + b,
            a - s,
            s * a,
            a / b,
            a**s,
            a % b,
            a < b,
            a <= b,
            a > b,
            a >= b,
            p & q,
            p | q,
            p ^ q,
            -a,
            abs(a),
            p / q,
            a == s,
            a != s,
        )

    fd, outs = _run(body, [x, y, i, j])
    expected = (
        x + y,
        x - 2,
        2 * x,
        x / y,
        x**2,
        torch.fmod(x, y),
        x < y,
        x <= y,
        x > y,
        x >= y,
        i & j,
        i | j,
        i ^ j,
        -x,
        x.abs(),
        torch.div(i, j, rounding_mode="trunc"),
        x == 2,
        x != 2,
    )
    for o, e in zip(outs, expected):
        torch.testing.assert_close(o, e, check_dtype=False)
    assert "fd.ops.div(T0, T1)" in repr(fd) and "fd.ops.mod(T0, T1)" in repr(fd)


def test_same_kind_equality_is_identity():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=True)
        b = fd.define_tensor(shape=[-1], contiguity=True)
        assert (a == a) is True and (a == b) is False and (a != b) is True
        assert len({a, b, a}) == 2
        fd.add_output(a)


@pytest.mark.parametrize(
    "call",
    [
        lambda fd, t: fd.ops.add(t, 1.0),
        lambda fd, t: fd.ops.mul(2, t),
        lambda fd, t: fd.ops.where(t > t, t, 0.0),
        lambda fd, t: t + 1,
        lambda fd, t: 1.0 + t,
        lambda fd, t: t * 2.5,
    ],
)
def test_python_numbers_are_rejected(call):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        with pytest.raises(TypeError):
            call(fd, t)
        fd.add_output(t)


def test_type_error_names_the_op():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        with pytest.raises(TypeError, match="add"):
            fd.ops.add(t, 1.0)
        with pytest.raises(TypeError, match=r"fd\.ops\.mul"):
            t * 2
        fd.add_output(t)


def test_unknown_op_is_attribute_error():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        with pytest.raises(AttributeError, match="no_such_op"):
            fd.ops.no_such_op(t)
        fd.add_output(t)


@pytest.mark.parametrize("name", ["sum", "max", "min", "prod"])
def test_reduction_forms(name, reference_executor):
    x = torch.rand(2, 3, 4) + 0.5

    def body(fd):
        t = fd.from_pytorch(x)
        op = getattr(fd.ops, name)
        return (
            op(t, DataType.Float),
            op(t),
            op(t, 1, True, DataType.Float),
            op(t, -1),
            op(t, [0, 2], False, DataType.Double),
            op(t, dims=[1], keepdim=True),
            op(t, dim=2, dtype=DataType.Double),
        )

    fd, outs = _run(body, [x])
    ref = {
        "sum": torch.sum,
        "max": torch.amax,
        "min": torch.amin,
        "prod": lambda t, d, keepdim=False: _prod(t, d, keepdim),
    }[name]
    expected = (
        ref(x, (0, 1, 2)),
        ref(x, (0, 1, 2)),
        ref(x, (1,), keepdim=True),
        ref(x, (2,)),
        ref(x, (0, 2)).double(),
        ref(x, (1,), keepdim=True),
        ref(x, (2,)).double(),
    )
    for o, e in zip(outs, expected):
        torch.testing.assert_close(o, e, check_dtype=False, rtol=1e-5, atol=1e-5)
    assert outs[4].dtype == torch.float64
    lines = repr(fd).splitlines()
    assert (
        f"T1 = fd.ops.{name}(T0, dims=[0, 1, 2], keepdim=False, dtype=DataType.Float)" in lines[3]
    )
    assert f"fd.ops.{name}(T0, dims=[1], keepdim=True, dtype=DataType.Float)" in lines[5]
    assert f"fd.ops.{name}(T0, dims=[-1], keepdim=False, dtype=DataType.Null)" in lines[6]


def _prod(t, dims, keepdim=False):
    for d in sorted(dims, reverse=True):
        t = torch.prod(t, d, keepdim=keepdim)
    return t


def test_sum_of_int_is_int_and_of_broadcast_dims(reference_executor):
    x = torch.randint(0, 5, (3, 1))

    def body(fd):
        t = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Int32)
        return fd.ops.sum(t, [1]), fd.ops.sum(t, [0, 1])

    _, (a, b) = _run(body, [x.int()])
    assert a.dtype == torch.int64 and torch.equal(a, x.sum(1))
    assert torch.equal(b, x.sum())


def test_var_var_mean_welford(reference_executor):
    x = torch.randn(4, 6, dtype=torch.float64)

    def body(fd):
        t = fd.from_pytorch(x)
        v = fd.ops.var(t, [1], 0)
        v1, m1 = fd.ops.var_mean(t, [-1], 1, True)
        avg, var_sum, n = fd.ops.welford(t, [0])
        return v, v1, m1, avg, var_sum, n

    fd, (v, v1, m1, avg, var_sum, n) = _run(body, [x])
    torch.testing.assert_close(v, x.var(1, correction=0))
    torch.testing.assert_close(v1, x.var(-1, keepdim=True))
    torch.testing.assert_close(m1, x.mean(-1, keepdim=True))
    torch.testing.assert_close(avg, x.mean(0))
    torch.testing.assert_close(var_sum, x.var(0, correction=0) * 4)
    assert torch.equal(n, torch.full((6,), 4))
    text = repr(fd)
    assert "T1 = fd.ops.var(T0, dims=[1], correction=0, keepdim=False)" in text
    assert "T2, T3 = fd.ops.var_mean(T0, dims=[-1], correction=1, keepdim=True)" in text
    assert "T4, T5, T6 = fd.ops.welford(T0, dims=[0])" in text


def test_shape_ops(reference_executor):
    x = torch.randn(2, 3)
    y = torch.randn(3)

    def body(fd):
        t = fd.from_pytorch(x)
        u = fd.from_pytorch(y)
        p = fd.ops.permute(t, [-1, 0])
        r = fd.ops.reshape(t, [3, 2])
        b = fd.ops.broadcast_in_dim(u, t.shape(), [1])
        c = fd.ops.broadcast(u, [True, False])
        e = fd.ops.expand(c, [2, -1])
        s = fd.ops.squeeze(c, [0])
        q = fd.ops.segment_set(fd.ops.set(t))
        cast = fd.ops.cast(t, DataType.Half)
        return p, r, b, c, e, s, q, cast

    fd, (p, r, b, c, e, s, q, cast) = _run(body, [x, y])
    assert torch.equal(p, x.t()) and torch.equal(r, x.reshape(3, 2))
    assert torch.equal(b, y.expand(2, 3)) and torch.equal(c, y[None])
    assert torch.equal(e, y.expand(2, 3)) and torch.equal(s, y) and torch.equal(q, x)
    assert cast.dtype == torch.float16
    text = repr(fd)
    assert "T2 = fd.ops.permute(T0, dims=[1, 0])" in text
    assert "fd.ops.broadcast_in_dim(T1, shape=V7, broadcast_dims=[1])" in text
    assert "fd.ops.broadcast(T1, is_broadcast_dim=[True, False])" in text
    assert "T13 = fd.ops.expand(T9, shape=[2, -1])" in text
    assert "fd.ops.squeeze(T9, dims=[0], squeeze_expanded=False)" in text
    assert "fd.ops.cast(T0, dtype=DataType.Half)" in text


def test_broadcast_in_dim_minus_one_keeps_the_input_extent():
    """nvFuser's broadcast_in_dim is broadcast then expand, whose -1 keeps the extent: the
    input's on a mapped dim (symbolic here), 1 on a new dim. Run through the kernels."""
    x = torch.randn(2, 3)

    def body(fd):
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        return (
            fd.ops.neg(fd.ops.broadcast_in_dim(t, shape=[-1, 4, 3], broadcast_dims=[0, 2])),
            fd.ops.neg(fd.ops.broadcast_in_dim(t, shape=[2, -1, -1], broadcast_dims=[0, 2])),
        )

    fd, (a, b) = _run(body, [x])
    assert torch.equal(a, -x[:, None, :].expand(2, 4, 3))
    assert torch.equal(b, -x[:, None, :]) and b.shape == (2, 1, 3)
    assert "fd.ops.broadcast_in_dim(T0, shape=[-1, 4, 3], broadcast_dims=[0, 2])" in repr(fd)
    assert_ran_kernels(fd)


def test_creation_and_size_queries(reference_executor):
    x = torch.randn(2, 5)

    def body(fd):
        t = fd.from_pytorch(x)
        n = t.size(1)
        v = fd.ops.shape(t)
        rows = v[0]
        sizes = fd.ops.tensor_sizes(t)
        f = fd.ops.full([rows, sizes[1]], fd.define_scalar(2.5), DataType.Float)
        i = fd.ops.iota(n, fd.define_scalar(3), fd.define_scalar(2), DataType.Int)
        j = fd.ops.iota(fd.ops.at(v, 1))
        return f, i, j, fd.ops.add(t, f)

    fd, (f, i, j, s) = _run(body, [x])
    assert torch.equal(f, torch.full((2, 5), 2.5))
    assert torch.equal(i, torch.arange(5) * 2 + 3) and torch.equal(j, torch.arange(5))
    torch.testing.assert_close(s, x + 2.5)
    text = repr(fd)
    assert "S1 = fd.ops.size(T0, dim=1)" in text and "V2 = fd.ops.shape(T0)" in text
    assert "S3 = fd.ops.at(V2, index=0)" in text
    assert "S4, S5, = fd.ops.tensor_sizes(T0)" in text
    assert "fd.ops.full(shape=[S3, S5], fill_value=S6, dtype=DataType.Float)" in text
    assert "T11 = fd.ops.iota(S1, S9, S10, dtype=DataType.Int)" in text
    assert "T13 = fd.ops.iota(S12, None, None, dtype=DataType.Int)" in text


def test_handle_attributes():
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.BFloat16
        )
        v = t.shape()
        assert (
            isinstance(t, Tensor) and t.ndim == 3 and t.index == 0 and t.dtype is DataType.BFloat16
        )
        assert repr(t) == "Tensor(index=0, ndim=3)" and repr(v) == "Vector(index=1, size=3)"
        assert repr(v[2]) == "Scalar(index=2)" and t._get_fusion_definition() is fd
        with pytest.raises(IndexError):
            v[3]
        fd.add_output(t)
