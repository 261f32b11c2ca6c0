"""Every op row's torch reference, run by ``layoutfuse.reference``, against direct torch.

One table per op set. For each row and each dtype it accepts (float32, float16,
bfloat16, int64, bool) the expected value is computed directly in torch, with
Half/BFloat16 operands upcast to Float and the result cast back, and the
expected dtype is torch's own result dtype (taken on meta tensors) except where
nvFuser differs on purpose (``div`` of integers truncates; ``var`` of integers
is Float). Each test also checks that the IR inferred that dtype and that the
reference computed it. (Generated kernels of the same rows: ``test_ops_kernels.py``.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from layoutfuse.dtypes import from_torch, to_torch
from layoutfuse.errors import DefinitionError
from layoutfuse.ir import Fusion, FusionGuard, IterDomain, TensorView, ops
from layoutfuse.reference import run_reference

F32, F16, BF16, I64, BOOL = torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool
FLOATS = (F32, F16, BF16)
ALL = (*FLOATS, I64, BOOL)
NUMERIC = (*FLOATS, I64)
INTEGRAL = (I64, BOOL)
SHAPE = (3, 5)


def sample(dtype: torch.dtype, domain: str = "any", shape=SHAPE, seed: int = 0) -> torch.Tensor:
    """Test values: ``any``, ``positive`` (log, sqrt, pow bases), ``nonzero`` (divisors),
    ``small`` (exponents)."""
    g = torch.Generator().manual_seed(seed)
    if dtype is BOOL:
        return torch.rand(shape, generator=g) > 0.5
    if dtype is I64:
        lo, hi = {"any": (-6, 7), "positive": (1, 7), "nonzero": (1, 7), "small": (0, 4)}[domain]
        x = torch.randint(lo, hi, shape, generator=g)
        if domain == "nonzero":
            x = x * (torch.randint(0, 2, shape, generator=g) * 2 - 1)
        return x
    x = {
        "any": torch.randn(shape, generator=g) * 2,
        "positive": torch.rand(shape, generator=g) * 3 + 0.25,
        "nonzero": (torch.rand(shape, generator=g) + 0.5)
        * (torch.randint(0, 2, shape, generator=g) * 2 - 1),
        "small": torch.rand(shape, generator=g) * 2,
    }[domain]
    return x.to(dtype)


def upcast(x):
    return x.float() if torch.is_tensor(x) and x.dtype in (F16, BF16) else x


def declare(f: Fusion, t: torch.Tensor) -> TensorView:
    tv = TensorView(f, [IterDomain.iteration(None) for _ in t.shape], from_torch(t.dtype))
    f.add_input(tv)
    return tv


def run(build: Callable, tensors: list[torch.Tensor]):
    """(the output TensorView, the reference's result) for ``build(*input_tvs)``."""
    f = Fusion()
    with FusionGuard(f):
        out = build(*[declare(f, t) for t in tensors])
        f.add_output(out)
    (res,) = run_reference(f, tensors, torch.get_default_device())
    return out, res


def check(out_tv, result, expected, expected_dtype):
    assert out_tv.dtype is from_torch(expected_dtype), "IR dtype"
    assert result.dtype == to_torch(out_tv.dtype) == expected_dtype, "reference dtype"
    torch.testing.assert_close(result, expected.to(expected_dtype), equal_nan=True)


def meta_dtype(fn, tensors) -> torch.dtype:
    return fn(*[t.to("meta") for t in tensors]).dtype


# --- pointwise -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PW:
    name: str
    direct: Callable
    dtypes: tuple[torch.dtype, ...]
    domains: tuple[str, ...]


def _div(a, b):
    if a.is_floating_point() or b.is_floating_point():
        return a / b
    return torch.div(a, b, rounding_mode="trunc")


def _erfcinv(x):
    out = x.dtype if x.is_floating_point() else F32
    return (-torch.special.ndtri(x.double() / 2) / 2**0.5).to(out)


_UNARY_FLOAT = [
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "erf",
    "erfc",
]
_POSITIVE = {"log", "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal"}

POINTWISE = [
    *[
        PW(n, getattr(torch, n), ALL, ("positive" if n in _POSITIVE else "any",))
        for n in _UNARY_FLOAT
    ],
    PW(
        "silu",
        lambda x: torch.nn.functional.silu(x if x.is_floating_point() else x.float()),
        ALL,
        ("any",),
    ),
    *[
        PW(n, getattr(torch, n), NUMERIC, ("any",))
        for n in ["abs", "neg", "relu", "floor", "ceil", "round", "trunc"]
    ],
    PW("sign", torch.sign, ALL, ("any",)),
    *[
        PW(n, getattr(torch, n), ALL, ("any",))
        for n in ["isnan", "isinf", "isfinite", "logical_not"]
    ],
    PW("bitwise_not", torch.bitwise_not, INTEGRAL, ("any",)),
    PW("add", torch.add, ALL, ("any", "any")),
    PW("sub", torch.sub, NUMERIC, ("any", "any")),
    PW("mul", torch.mul, ALL, ("any", "any")),
    PW("div", _div, NUMERIC, ("any", "nonzero")),
    PW("truediv", torch.true_divide, ALL, ("any", "nonzero")),
    PW("fmod", torch.fmod, NUMERIC, ("any", "nonzero")),
    PW("remainder", torch.remainder, NUMERIC, ("any", "nonzero")),
    PW("pow", torch.pow, NUMERIC, ("positive", "small")),
    PW("minimum", torch.minimum, ALL, ("any", "any")),
    PW("maximum", torch.maximum, ALL, ("any", "any")),
    PW("atan2", torch.atan2, ALL, ("any", "any")),
    *[
        PW(n, getattr(torch, n), ALL, ("any", "any"))
        for n in ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"]
    ],
    *[
        PW(n, getattr(torch, n), INTEGRAL, ("any", "any"))
        for n in ["bitwise_and", "bitwise_or", "bitwise_xor"]
    ],
    PW("clamp", torch.clamp, NUMERIC, ("any", "any", "any")),
    PW("lerp", torch.lerp, FLOATS, ("any", "any", "small")),
    # nvFuser's math and predicate rows (edge values and kernels: test_math_rows.py)
    *[
        PW(n, getattr(torch, n), ALL, ("any",))
        for n in ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"]
    ],
    *[PW(n, getattr(torch, n), ALL, ("any",)) for n in ["erfinv", "lgamma"]],
    PW("erfcinv", lambda x: _erfcinv(x), ALL, ("positive",)),
    PW("frac", torch.frac, FLOATS, ("any",)),
    *[
        PW(n, getattr(torch, n), ALL, ("any",))
        for n in ["signbit", "isneginf", "isposinf", "isreal"]
    ],
    PW("nextafter", torch.nextafter, (F32,), ("any", "any")),
    *[
        PW(n, getattr(torch, n), (I64,), ("any", "small"))
        for n in ["gcd", "bitwise_left_shift", "bitwise_right_shift"]
    ],
    PW("real", torch.real, ALL, ("any",)),  # of complex values: tests/ir/test_complex.py
]
POINTWISE_CASES = [
    pytest.param(c, d, id=f"{c.name}-{str(d)[6:]}") for c in POINTWISE for d in c.dtypes
]


def test_every_pointwise_row_has_a_case():
    # imag is defined for complex values only: tests/ir/test_complex.py
    covered = {c.name for c in POINTWISE} | {"where", "addcmul", "logical_right_shift", "imag"}
    covered |= {"threshold", "add_alpha", "sub_alpha"}
    assert covered == set(ops.POINTWISE_ROWS)


@pytest.mark.parametrize("case,dtype", POINTWISE_CASES)
def test_pointwise(case: PW, dtype):
    xs = [sample(dtype, dom, seed=k) for k, dom in enumerate(case.domains)]
    out, res = run(lambda *tvs: ops.pointwise(case.name, *tvs), xs)
    expected = case.direct(*[upcast(x) for x in xs])
    check(out, res, expected, meta_dtype(case.direct, xs))


@pytest.mark.parametrize("dtype", ALL)
def test_where(dtype):
    xs = [sample(BOOL, seed=0), sample(dtype, seed=1), sample(dtype, seed=2)]
    out, res = run(lambda c, a, b: ops.pointwise("where", c, a, b), xs)
    check(out, res, torch.where(xs[0], xs[1], xs[2]), dtype)


@pytest.mark.parametrize("dtype", NUMERIC)
def test_addcmul(dtype):
    xs = [sample(dtype, seed=k) for k in range(3)]
    value = 2 if dtype is I64 else 0.5
    out, res = run(lambda a, b, c: ops.pointwise("addcmul", a, b, c, value), xs)
    expected = torch.addcmul(*[upcast(x) for x in xs], value=value)
    check(out, res, expected, meta_dtype(lambda a, b, c: torch.addcmul(a, b, c, value=value), xs))


@pytest.mark.parametrize("dtype", NUMERIC)
def test_scalar_operand_rows(dtype):
    """threshold, add_alpha and sub_alpha: the result has the tensors' dtype (their scalars
    take no part in promotion)."""
    xs = [sample(dtype, seed=k) for k in range(2)]
    t, v, alpha = (0.5, -2.0, 0.5) if dtype in FLOATS else (1, -2, 3)
    cases = [
        ("threshold", [xs[0]], (t, v), lambda a: torch.nn.functional.threshold(a, t, v)),
        ("add_alpha", xs, (alpha,), lambda a, b: torch.add(a, b, alpha=alpha)),
        ("sub_alpha", xs, (alpha,), lambda a, b: torch.sub(a, b, alpha=alpha)),
    ]
    for name, tensors, scalars, direct in cases:
        out, res = run(lambda *tvs, n=name, s=scalars: ops.pointwise(n, *tvs, *s), tensors)
        check(out, res, direct(*[upcast(x) for x in tensors]), dtype)


@pytest.mark.parametrize("dtype", (I64,))
def test_logical_right_shift(dtype):
    """Counts 0..63: zeros shift in from the left (the unsigned view's shift)."""
    x = sample(dtype, seed=1) * 1000003
    s = torch.arange(15).reshape(SHAPE) * 4 % 64
    out, res = run(lambda a, b: ops.pointwise("logical_right_shift", a, b), [x, s])
    expected = [((a % 2**64) >> b) for a, b in zip(x.flatten().tolist(), s.flatten().tolist())]
    expected = [e - 2**64 if e >= 2**63 else e for e in expected]
    check(out, res, torch.tensor(expected).reshape(SHAPE), dtype)


SCALAR_PROMOTION = [  # (tensor dtype, python scalar, op): the result dtype is torch's
    (I64, 2.5, "add"),
    (F16, 2.5, "mul"),
    (BF16, 3, "sub"),
    (BOOL, 1, "add"),
    (I64, 2, "mul"),
    (BOOL, 1.5, "mul"),
    (F32, True, "add"),
    (I64, 2, "truediv"),
]


@pytest.mark.parametrize("dtype,scalar,name", SCALAR_PROMOTION)
def test_tensor_scalar_promotion(dtype, scalar, name):
    x = sample(dtype, seed=3)
    out, res = run(lambda t: ops.pointwise(name, t, scalar), [x])
    fn = getattr(torch, {"truediv": "true_divide"}.get(name, name))
    check(out, res, fn(upcast(x), scalar), meta_dtype(lambda t: fn(t, scalar), [x]))


@pytest.mark.parametrize("src", ALL, ids=str)
@pytest.mark.parametrize("dst", ALL, ids=str)
def test_cast(src, dst):
    x = sample(src, seed=4)
    out, res = run(lambda t: ops.cast(t, from_torch(dst)), [x])
    check(out, res, x.to(dst), dst)


# --- reductions ----------------------------------------------------------------------------------
def _prod(x, dims):
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, d)
    return x


REDUCTIONS = {
    "sum": lambda x, d: torch.sum(x, d),
    "max": torch.amax,
    "min": torch.amin,
    "prod": _prod,
}


@pytest.mark.parametrize("dims", [(1,), (0,), (0, 1)], ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction(name, dtype, dims):
    x = sample(dtype, "positive" if name == "prod" else "any", seed=5)
    if name in ("max", "min") and dtype is BOOL:
        with pytest.raises(DefinitionError, match="Bool"):
            run(lambda t: ops.reduction(name, t, list(dims)), [x])
        return
    out, res = run(lambda t: ops.reduction(name, t, list(dims)), [x])
    direct = REDUCTIONS[name]
    check(out, res, direct(upcast(x), list(dims)), meta_dtype(lambda t: direct(t, list(dims)), [x]))


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_var_mean(dtype):
    x = sample(dtype, seed=6)
    f = Fusion()
    with FusionGuard(f):
        var, mean = ops.var_mean(declare(f, x), [1], correction=1)
        f.add_output(var)
        f.add_output(mean)
    v, m = run_reference(f, [x])
    want = dtype if dtype in FLOATS else F32
    ev, em = torch.var_mean(x.double(), 1, correction=1)
    for tv, r, e in ((var, v, ev), (mean, m, em)):
        assert tv.dtype is from_torch(want) and r.dtype == want
        torch.testing.assert_close(r, e.to(want))


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_welford(dtype):
    x = sample(dtype, seed=7)
    f = Fusion()
    with FusionGuard(f):
        outs = ops.welford(declare(f, x), [0])
        for o in outs:
            f.add_output(o)
    avg, m2, n = run_reference(f, [x])
    xd = x.double()
    torch.testing.assert_close(avg, xd.mean(0).float())
    torch.testing.assert_close(m2, ((xd - xd.mean(0)) ** 2).sum(0).float())
    assert n.dtype == I64 and n.tolist() == [3] * 5


# --- shape ops ----------------------------------------------------------------------------------
SHAPE_OPS = {
    "set": (ops.set_, lambda x: x),
    "permute": (lambda t: ops.permute(t, [1, 0]), lambda x: x.permute(1, 0)),
    "reshape": (lambda t: ops.reshape(t, [5, 3]), lambda x: x.reshape(5, 3)),
    "reshape_split": (lambda t: ops.reshape(t, [3, 5, 1]), lambda x: x.reshape(3, 5, 1)),
    "broadcast_in_dim": (
        lambda t: ops.broadcast_in_dim(t, [2, 3, 5], [1, 2]),
        lambda x: x.expand(2, 3, 5),
    ),
    "broadcast": (lambda t: ops.broadcast(t, [False, True, False]), lambda x: x.unsqueeze(1)),
    "squeeze": (lambda t: ops.squeeze(ops.broadcast(t, [True, False, False]), [0]), lambda x: x),
    "expand": (
        lambda t: ops.expand(ops.broadcast(t, [True, False, False]), [4, -1, -1]),
        lambda x: x.expand(4, 3, 5),
    ),
    "stride_order": (lambda t: ops.stride_order(t, [0, 1]), lambda x: x),
}


@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_op(name, dtype):
    x = sample(dtype, seed=8)
    build, direct = SHAPE_OPS[name]
    out, res = run(build, [x])
    check(out, res, direct(x), dtype)


# --- creation -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_full(dtype):
    fill = {BOOL: True, I64: 7}.get(dtype, 1.5)
    f = Fusion()
    with FusionGuard(f):
        out = ops.full([2, 3], fill, from_torch(dtype))
        f.add_output(out)
    (res,) = run_reference(f, [], torch.get_default_device())
    check(out, res, torch.full((2, 3), fill, dtype=dtype), dtype)


@pytest.mark.parametrize("dtype,start,step", [(I64, 3, 2), (F32, 0.5, 0.25), (I64, None, None)])
def test_iota(dtype, start, step):
    f = Fusion()
    with FusionGuard(f):
        out = ops.iota(4, start, step, from_torch(dtype))
        f.add_output(out)
    (res,) = run_reference(f, [], torch.get_default_device())
    s0, s1 = start or 0, step or 1
    check(out, res, s0 + torch.arange(4, dtype=torch.float64) * s1, dtype)
