"""complex64 and complex128 through generated kernels (``ir/ops/complex.py``), against torch.

A complex value runs as its two real parts (``passes/complex_lowering.py``); inputs are
read and outputs written through ``torch.view_as_real`` views of their storage. Swept:
every memory order of 2-D and 3-D inputs, permuted, sliced, expanded and size-1 inputs,
both complex dtypes, mixing with real tensors and scalars of every precision; the output
layout must follow the dominant input (or the pinned order), as for real tensors. The
kernels of a sample of cases are compiled for sm_90.
"""

from __future__ import annotations

import itertools
import math
import warnings

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.errors import DefinitionError, LayoutfuseError, UnsupportedError
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

C64, C128 = torch.complex64, torch.complex128
CDTYPES = (C64, C128)
TOL = {C64: {"rtol": 1e-5, "atol": 1e-5}, C128: {"rtol": 1e-12, "atol": 1e-12}}


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def sample(shape, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        parts = torch.randn([*shape, 2], generator=g, dtype=torch.float64) * 2
        return torch.view_as_complex(parts).to(dtype)
    return (torch.randn(list(shape), generator=g, dtype=torch.float64) * 2).to(dtype)


def with_order(shape, order, dtype, seed=0) -> torch.Tensor:
    """A dense tensor of logical ``shape`` whose memory order is ``order`` (outermost first)."""
    phys = sample([shape[d] for d in order], dtype, seed)
    return phys.permute([list(order).index(d) for d in range(len(shape))])


def dense_strides(shape, order) -> tuple[int, ...]:
    """The strides of a tensor of ``shape`` dense in memory order ``order``."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def assert_strides_like(out: torch.Tensor, order) -> None:
    want = dense_strides(out.shape, order)
    got = [s for s, n in zip(out.stride(), out.shape) if n > 1]
    assert got == [s for s, n in zip(want, out.shape) if n > 1], (out.stride(), want)


def close(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    tol = TOL.get(ref.dtype) or TOL[C64 if ref.dtype == torch.float32 else C128]
    torch.testing.assert_close(out, ref, **tol)


# --- the arithmetic of one fusion, over every layout -------------------------------------------
def arithmetic(a: torch.Tensor, b: torch.Tensor):
    """(fd, outputs, torch's values): add, sub, mul, neg, abs, real, imag and a sum."""
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        prod = fd.ops.mul(ta, tb)
        mixed = fd.ops.sub(fd.ops.add(prod, ta), fd.ops.neg(tb))
        fd.add_output(mixed)
        fd.add_output(fd.ops.abs(mixed))
        fd.add_output(fd.ops.real(prod))
        fd.add_output(fd.ops.imag(prod))
    outs = fd.execute([a, b])
    m = a * b + a - (-b)
    return fd, outs, [m, m.abs(), (a * b).real, (a * b).imag]


ORDERS = [
    (shape, order)
    for shape in ((5, 7), (3, 4, 6))
    for order in itertools.permutations(range(len(shape)))
]


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape,order", ORDERS, ids=str)
def test_arithmetic_in_every_memory_order(shape, order, dtype):
    a = with_order(shape, order, dtype, seed=1)
    b = with_order(shape, order, dtype, seed=2)
    fd, outs, refs = arithmetic(a, b)
    for out, ref in zip(outs, refs):
        close(out, ref)
        assert_strides_like(out, order)  # the output follows the inputs' memory order
    assert len(fd.last_schedule()) == 1  # both parts of every output in one kernel


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["add", "sub", "neg"])
def test_parts_that_do_not_mix_share_one_kernel(op, dtype):
    """re = a.re + b.re and im = a.im + b.im read different halves of the same cache lines:
    one kernel computes both (``Fusion.kernel_partners``), not one kernel per part."""
    a, b = with_order((6, 7), (1, 0), dtype, 28), with_order((6, 7), (1, 0), dtype, 29)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.neg(ta) if op == "neg" else getattr(fd.ops, op)(ta, tb))
    (out,) = fd.execute([a, b])
    close(out, -a if op == "neg" else getattr(torch, op)(a, b))
    assert len(fd.last_schedule()) == 1
    assert fd.last_triton_code().count("tl.store(") == 2


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape,order", ORDERS, ids=str)
@pytest.mark.parametrize("which", ["all", "inner", "outer"])
def test_sum_in_every_memory_order(shape, order, dtype, which):
    x = with_order(shape, order, dtype, seed=3)
    dims = {"all": list(range(len(shape))), "inner": [order[-1]], "outer": [order[0]]}[which]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t, dims=dims))
        fd.add_output(fd.ops.sum(fd.ops.abs(t), dims=dims, keepdim=True))
    s, sa = fd.execute([x])
    close(s, x.sum(dims))
    close(sa, x.abs().sum(dims, keepdim=True))
    if s.dim() > 1:
        kept = [d for d in order if d not in dims]
        assert_strides_like(s, [sorted(kept).index(d) for d in kept])


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape,order", ORDERS, ids=str)
def test_var_mean_in_every_memory_order(shape, order, dtype):
    """torch.var of a complex value is real (var(re) + var(im)), its mean complex; the
    parts' statistics are sibling reductions: one kernel reads the input once."""
    x = with_order(shape, order, dtype, seed=30)
    dims = [order[-1]]
    with FusionDefinition() as fd:
        v, m = fd.ops.var_mean(fd.from_pytorch(x), dims=dims, correction=1)
        fd.add_output(v)
        fd.add_output(m)
    v, m = fd.execute([x])
    rv, rm = torch.var_mean(x, dim=dims, correction=1)
    close(v, rv)
    close(m, rm)
    assert len(fd.last_schedule()) == 1


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
def test_sum_of_a_complex_input_reads_it_once(dtype):
    x = with_order((6, 10), (1, 0), dtype, seed=31)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum(fd.from_pytorch(x), dims=[1]))
    (s,) = fd.execute([x])
    close(s, x.sum(1))
    assert len(fd.last_schedule()) == 1  # sum(re) and sum(im): siblings, one kernel


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize("fallback", [False, True], ids=["one-kernel", "fallback"])
def test_centered_rows_normalization(dtype, fallback):
    """z - mean(z) over rows: one normalization kernel stores both parts (the group's
    partners); with a tile too small for the rows, its finer plan gives the same values."""
    from layoutfuse.schedulers.tuning import DEFAULT

    z = with_order((8, 40), (1, 0), dtype, seed=32)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(z)
        s = fd.ops.sum(t, dims=[1], keepdim=True)
        fd.add_output(fd.ops.sub(t, fd.ops.div(s, fd.define_scalar(40.0))))
    if fallback:
        fd.executor().configure(tuning=DEFAULT.with_fields(normalization=dict(max_tile=16)))
    (out,) = fd.execute([z])
    close(out, z - z.mean(1, keepdim=True))
    assert_strides_like(out, (1, 0))
    kinds = [type(p).__name__ for p in fd.last_schedule()]
    if not fallback:
        assert kinds == ["NormalizationParams"]
    else:
        assert kinds.count("PointwiseParams") == 1  # both parts of the output in one kernel


def strided_inputs(dtype):
    """(name, a, b): inputs that are not dense: permuted, sliced, expanded, size-1 dims."""
    base = sample((6, 10), dtype, seed=4)
    other = sample((6, 10), dtype, seed=5)
    yield "transposed", base.t(), other.t()
    yield "sliced", base[1:5, ::3], other[:4, 2:6]
    yield "row-expanded", sample((1, 10), dtype, 6).expand(6, 10), other
    yield "col-expanded", sample((6, 1), dtype, 7).expand(6, 10), other.t().contiguous().t()
    yield "size-1", sample((1, 10), dtype, 8), sample((1, 10), dtype, 9)
    big = sample((4, 6, 8), dtype, seed=10)
    other3 = sample((4, 12, 8), dtype, 11)[:, ::2].permute(2, 0, 1)[1:7:2]
    yield "3d-permuted-sliced", big.permute(2, 0, 1)[1:7:2], other3


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", range(6))
def test_strided_and_expanded_inputs(dtype, case):
    name, a, b = list(strided_inputs(dtype))[case]
    _, outs, refs = arithmetic(a, b)
    for out, ref in zip(outs, refs):
        close(out, ref)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum(fd.from_pytorch(a), dims=[0]))
    (s,) = fd.execute([a])
    close(s, a.sum(0))


# --- mixing with real tensors and scalars: torch's promotion -------------------------------------
REALS = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool)


@pytest.mark.parametrize("cdtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize("rdtype", REALS, ids=dtype_id)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_complex_with_real_tensor(op, rdtype, cdtype):
    z = with_order((4, 9), (1, 0), cdtype, seed=12)
    r = with_order((4, 9), (1, 0), torch.float64, seed=13)
    r = (r > 0) if rdtype is torch.bool else (r.abs() + 0.5).to(rdtype)
    if op == "sub" and rdtype is torch.bool:  # torch refuses to subtract Bools
        with FusionDefinition() as fd, pytest.raises(DefinitionError, match="sub: not defined"):
            fd.ops.sub(fd.from_pytorch(z), fd.from_pytorch(r))
        return
    with FusionDefinition() as fd:
        tz, tr = fd.from_pytorch(z), fd.from_pytorch(r)
        fd.add_output(getattr(fd.ops, op)(tz, tr))
        fd.add_output(getattr(fd.ops, op)(tr, tz))
    zr, rz = fd.execute([z, r])
    f = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op]
    close(zr, f(z, r))
    close(rz, f(r, z))
    assert_strides_like(zr, (1, 0))  # the complex input dominates (it has the same rank)


@pytest.mark.parametrize("cdtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize("scalar", [2.5, -3, 1.5 - 2j, True])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_complex_with_constant_scalar(op, scalar, cdtype):
    z = sample((3, 5), cdtype, seed=14)
    if op == "sub" and scalar is True:  # torch refuses to subtract Bools
        with FusionDefinition() as fd, pytest.raises(DefinitionError, match="sub: not defined"):
            fd.ops.sub(fd.from_pytorch(z), fd.define_scalar(True))
        return
    with FusionDefinition() as fd:
        tz = fd.from_pytorch(z)
        s = fd.define_scalar(scalar)
        fd.add_output(getattr(fd.ops, op)(tz, s))
        fd.add_output(getattr(fd.ops, op)(s, tz))
    zs, sz = fd.execute([z])
    f = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op]
    close(zs, f(z, scalar))
    close(sz, f(torch.tensor(scalar, dtype=torch.result_type(z, scalar)), z))


@pytest.mark.parametrize("rdtype", (torch.float32, torch.float64), ids=dtype_id)
def test_real_tensor_with_complex_scalar_input(rdtype):
    """A complex scalar input (two real kernel arguments); float64 with a complex scalar
    is complex128 in torch, float32 complex64."""
    x = sample((4, 6), rdtype, seed=15)
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        s = fd.define_scalar(dtype=DataType.ComplexDouble)
        fd.add_output(fd.ops.mul(tx, s))
    (out,) = fd.execute([x, 0.5 + 2j])
    close(out, x * (0.5 + 2j))


def test_real_and_complex_tensor_promote_to_the_wider_precision():
    z = sample((3, 4), C64, seed=16)
    d = sample((3, 4), torch.float64, seed=17)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.from_pytorch(z), fd.from_pytorch(d)))
    (out,) = fd.execute([z, d])
    close(out, z + d)  # complex128, as torch.promote_types(complex64, float64)


# --- division: torch's algorithm, large and zero divisors ----------------------------------------
@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
def test_division_matches_torch_on_hard_divisors(dtype):
    a = sample((16,), dtype, seed=18)
    big = 1e30 if dtype is C64 else 1e300
    b = torch.tensor(
        [1 + 1j, 1e-3 + 4j, 4 + 1e-3j, big + big * 1j, big * 1j, big, 0j, 1j, 1, -2 - 1j]
        + [3.5 - 0.5j, 1e-30, -1e-30j, 2, 1 - 1j, 0.25],
        dtype=dtype,
    )
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.div(fd.from_pytorch(a), fd.from_pytorch(b)))
    (out,) = fd.execute([a, b])
    ref = a / b
    torch.testing.assert_close(out, ref, equal_nan=True, **TOL[dtype])


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
def test_abs_does_not_overflow(dtype):
    big = 1e30 if dtype is C64 else 1e300
    z = torch.tensor([big + big * 1j, 3 + 4j, -(big * 1j), 0j], dtype=dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.abs(fd.from_pytorch(z)))
    (out,) = fd.execute([z])
    close(out, z.abs())
    assert math.isfinite(out[0].item())


# --- casts -------------------------------------------------------------------------------------
CAST_CASES = [
    (C64, DataType.ComplexDouble),
    (C128, DataType.ComplexFloat),
    (torch.float32, DataType.ComplexFloat),
    (torch.float64, DataType.ComplexFloat),
    (torch.int64, DataType.ComplexDouble),
    (torch.bfloat16, DataType.ComplexFloat),
    (C64, DataType.Float),
    (C128, DataType.Half),
    (C64, DataType.Int),
    (C128, DataType.Bool),
]


@pytest.mark.parametrize("src,dst", CAST_CASES, ids=str)
def test_cast(src, dst):
    from layoutfuse.dtypes import to_torch

    x = with_order((5, 6), (1, 0), src, seed=19)
    if src.is_complex and dst is DataType.Bool:
        x[0, :3] = torch.tensor([0j, 1j, 1])
    if src is torch.int64:
        x = (with_order((5, 6), (1, 0), torch.float64, seed=19) * 4).to(src)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cast(fd.from_pytorch(x), dst))
    (out,) = fd.execute([x])
    with warnings.catch_warnings():  # torch warns that complex to real drops imag
        warnings.simplefilter("ignore")
        ref = x.to(to_torch(dst))
    assert out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, rtol=1e-2 if dst is DataType.Half else 1e-5, atol=1e-5)
    assert_strides_like(out, (1, 0))


# --- where, eq/ne, pinned output layouts, shape ops ----------------------------------------------
@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
def test_where_eq_ne_and_shape_ops(dtype):
    a = with_order((3, 4, 5), (2, 0, 1), dtype, seed=20)
    b = a.clone()
    b[1] = sample((4, 5), dtype, seed=21)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        eq = fd.ops.eq(ta, tb)
        fd.add_output(eq)
        fd.add_output(fd.ops.ne(ta, tb))
        fd.add_output(fd.ops.where(eq, ta, fd.ops.neg(tb)))
        p = fd.ops.permute(fd.ops.mul(ta, tb), [2, 0, 1])
        fd.add_output(fd.ops.reshape(p, [5, 12]), stride_order=[0, 1])  # pinned column-major
        bc = fd.ops.broadcast_in_dim(fd.ops.sum(ta, dims=[1]), [3, 4, 5], [0, 2])
        fd.add_output(fd.ops.add(bc, tb))
    eq, ne, w, r, bc = fd.execute([a, b])
    assert torch.equal(eq, a == b) and torch.equal(ne, a != b)
    close(w, torch.where(a == b, a, -b))
    close(r, (a * b).permute(2, 0, 1).reshape(5, 12))
    assert r.stride() == (1, 5)
    close(bc, a.sum(1, keepdim=True) + b)


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
def test_input_returned_as_views_and_scalar_outputs(dtype):
    z = sample((4, 6), dtype, seed=22).t()
    with FusionDefinition() as fd:
        t = fd.from_pytorch(z)
        fd.add_output(fd.ops.permute(t, [1, 0]))
        fd.add_output(fd.ops.sum(fd.ops.real(t)))
        fd.add_output(fd.ops.sum(t))
    v, sr, s = fd.execute([z])
    close(v, z.t())
    close(sr, z.real.sum())
    close(s, z.sum())


# --- other unary ops: torch's values, special values included ----------------------------------
UNARY = ["reciprocal", "exp", "log", "sqrt", "isnan", "isinf", "isfinite"]


@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
def test_unary_ops_with_special_values(dtype):
    z = sample((9, 4), dtype, seed=26).t()
    inf, nan = float("inf"), float("nan")
    specials = [0j, complex(-4, 0.0), complex(-4, -0.0), 2j, complex(inf, 1), complex(nan, 0)]
    z[0, : len(specials)] = torch.tensor(specials, dtype=dtype)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(z)
        for op in UNARY:
            fd.add_output(getattr(fd.ops, op)(t))
    for op, out in zip(UNARY, fd.execute([z])):
        ref = getattr(torch, op)(z)
        assert out.dtype == ref.dtype
        torch.testing.assert_close(out, ref, equal_nan=True, **TOL[dtype])
        assert_strides_like(out, (1, 0))
    sqrt = fd.execute([z])[UNARY.index("sqrt")]
    assert torch.equal(torch.signbit(sqrt.imag[0, :3]), torch.signbit(torch.sqrt(z).imag[0, :3]))


@pytest.mark.parametrize("dtype", [DataType.ComplexFloat, DataType.ComplexDouble], ids=str)
def test_full_with_a_complex_fill(dtype):
    x = sample((3, 5), C128, seed=27)
    with FusionDefinition() as fd:
        fill = fd.define_scalar(dtype=DataType.ComplexDouble)
        f = fd.ops.full([3, 5], fill, dtype)
        fd.add_output(f)
        fd.add_output(fd.ops.mul(f, fd.from_pytorch(x)))
    f, m = fd.execute([1.5 - 0.25j, x])
    from layoutfuse.dtypes import to_torch

    close(f, torch.full((3, 5), 1.5 - 0.25j, dtype=to_torch(dtype)))
    close(m, f * x)


# --- unsupported ops are refused where they are defined -------------------------------------------
@pytest.mark.parametrize("op", ["sin", "tanh", "lt", "maximum", "atan2", "pow"])
def test_unsupported_pointwise_op_names_op_and_dtype(op):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.ComplexFloat)
        args = (t,) if op in ("sin", "tanh") else (t, t)
        with pytest.raises(UnsupportedError, match=rf"{op}: .*ComplexFloat"):
            getattr(fd.ops, op)(*args)


@pytest.mark.parametrize("op", ["max", "min", "prod"])
def test_unsupported_reduction_names_op_and_dtype(op):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.ComplexDouble)
        with pytest.raises(LayoutfuseError, match=rf"{op}: .*ComplexDouble"):
            getattr(fd.ops, op)(t, dims=[0])


def test_conjugate_view_input_is_refused():
    from layoutfuse.errors import InputLayoutError

    z = sample((3, 4), C64, seed=23)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(z)
        fd.add_output(fd.ops.neg(t))
    with pytest.raises(InputLayoutError, match="conjugate"):
        fd.execute([z.conj()])


# --- compiled for sm_90 ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
@pytest.mark.parametrize(
    "case", ["pointwise", "sum-inner", "sum-outer", "div", "var", "unary", "centered", "cast"]
)
def test_kernels_compile_for_sm90(case, dtype):
    a = with_order((8, 12), (1, 0), dtype, seed=24)
    b = with_order((8, 12), (1, 0), dtype, seed=25)
    if case == "pointwise":
        fd, _, _ = arithmetic(a, b)
    else:
        with FusionDefinition() as fd:
            ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
            if case == "div":
                fd.add_output(fd.ops.div(ta, tb))
            elif case == "var":
                fd.add_output(fd.ops.var(ta, dims=[1], correction=1))
            elif case == "unary":
                for op in UNARY:
                    fd.add_output(getattr(fd.ops, op)(tb))
            elif case == "centered":
                s = fd.ops.sum(ta, dims=[1], keepdim=True)
                fd.add_output(fd.ops.sub(ta, fd.ops.mul(s, fd.define_scalar(1 / 12))))
            elif case == "cast":
                fd.add_output(fd.ops.cast(ta, DataType.BFloat16))
                fd.add_output(fd.ops.cast(fd.ops.real(tb), DataType.ComplexDouble))
            else:
                fd.add_output(
                    fd.ops.sum(fd.ops.mul(ta, tb), dims=[0 if case == "sum-inner" else 1])
                )
        fd.execute([a, b])
    arts = compile_last_run(fd.executor())
    assert arts and all(".target sm_90" in art.ptx for art in arts)
    if case == "pointwise":
        assert "hypot" in fd.last_triton_code()


# --- movement ops (slice, pad, cat, select): each part through the op -------------------------
@pytest.mark.parametrize("dtype", CDTYPES, ids=dtype_id)
def test_slice_pad_cat_select(dtype):
    x = with_order((10, 6), (1, 0), dtype, seed=33)
    y = sample((10, 6), dtype, seed=34)
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.slice(a, [1, 0], [9, 6], [2, 1]))
        fill = fd.define_scalar(1 + 1j, dtype=DataType.ComplexDouble)
        fd.add_output(fd.ops.pad(a, [1, 2], fill))  # a complex fill: each part its own
        fd.add_output(fd.ops.pad(a, [1, 2]))
        fd.add_output(fd.ops.cat([a, b], dim=1))
        fd.add_output(fd.ops.select(fd.ops.mul(a, b), fd.define_scalar(3), dim=0))
    sliced, filled, zero_padded, joined, row = fd.execute([x, y])
    padded = torch.full((10, 9), 1 + 1j, dtype=dtype)
    padded[:, 1:7] = x
    close(sliced, x[1:9:2, 0:6])
    close(filled, padded)
    close(zero_padded, torch.nn.functional.pad(x, [1, 2]))
    close(joined, torch.cat([x, y], 1))
    close(row, (x * y)[3])
