"""The math and predicate rows of nvFuser's frontend, through ``fd.execute``, against torch.

One table: each row (acos ... sub_alpha) with the dtypes nvFuser accepts for it and the
ones it refuses, run on edge values (0.0 and -0.0, +-1, NaN of both signs, +-inf, the
smallest subnormal and normal, the largest finite; integer min and max; shift counts -2..w+1
and -w-1) in four layouts: contiguous, column-major (permuted), every other column of a
wider buffer (sliced) and stride-0 broadcasts (expanded; a binary row's operands are the
two axes of an outer product, so every pair of edge values meets). The expected values are
torch's, computed directly on the contiguous values (erfcinv and logical_right_shift, which
torch lacks, are written out here: erfcinv from ``ndtri`` in float64; logical_right_shift as
nvFuser defines it, with Python integers). Integer, Bool and exact float results must match
bit for bit (the sign of a zero too; NaN as NaN); the library functions within a few ulps
of their dtype. Every kernel of a contiguous case is also compiled for sm_90.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import from_torch
from layoutfuse.errors import ArgumentTypeError, DefinitionError
from layoutfuse.ir.ops.elementwise import ROWS
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import assert_ran_kernels

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
]

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I32, I64, BOOL = torch.int32, torch.int64, torch.bool
FLOATS, INTS = (F32, F64, F16, BF16), (I32, I64)
ALL = (*FLOATS, *INTS, BOOL)
LAYOUTS = ("contiguous", "permuted", "sliced", "expanded")


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# --- edge values ------------------------------------------------------------------------------
def edge_values(dtype: torch.dtype) -> torch.Tensor:
    """A 1-D CPU tensor of ``dtype``'s edge values (and a few ordinary ones)."""
    if dtype is BOOL:
        return torch.tensor([False, True])
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        ints = [0, 1, -1, 2, -2, 7, -7, 12, -18, 36, info.min, info.max, info.min + 1]
        return torch.tensor(ints + [2 ** (info.bits - 2)], dtype=dtype)
    fi = torch.finfo(dtype)
    floats = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.999, -0.999, 2.5, -2.5, 3.75, -7.25, 1.5e-3]
    floats += [100.0, -100.0, math.inf, -math.inf, math.nan, -math.nan, fi.tiny, -fi.tiny]
    floats += [fi.smallest_normal * 0.5, fi.max, fi.min, 1.999, 0.01]
    return torch.tensor(floats, dtype=F64).to(dtype)


def shift_counts(dtype: torch.dtype) -> torch.Tensor:
    w = torch.iinfo(dtype).bits
    return torch.tensor([*range(-2, w + 2), -w - 1], dtype=dtype)


# --- torch's meaning of the rows torch lacks ---------------------------------------------------
def erfcinv(x: torch.Tensor) -> torch.Tensor:
    out = F32 if not x.is_floating_point() else x.dtype
    return (-torch.special.ndtri(x.double() / 2) / math.sqrt(2)).to(out)


def logical_right_shift(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """nvFuser's logical_right_shift, element by element: counts 0..w shift zeros in from the
    left (w gives 0); past w or below 0, -1 for a negative x and 0 otherwise (csrc/ops/arith.cpp:
    ``(x >> s) ^ (mask << (w - s))`` with ``mask = -1`` for ``s >= w``, ``2**s - 1`` else)."""
    dtype = torch.result_type(x, s)
    w = torch.iinfo(dtype).bits
    xs, ss = torch.broadcast_tensors(x.to(dtype), s.to(dtype))
    out = []
    for xi, si in zip(xs.flatten().tolist(), ss.flatten().tolist()):
        if 0 <= si <= w:
            v = (xi % 2**w) >> si
            out.append(v - 2**w if v >= 2 ** (w - 1) else v)
        else:
            out.append(-1 if xi < 0 else 0)
    return torch.tensor(out, dtype=dtype).reshape(xs.shape)


# --- the table -------------------------------------------------------------------------------
@dataclass(frozen=True)
class MathCase:
    """A row: torch's meaning, the dtypes layoutfuse accepts (as nvFuser) and refuses, and
    whether results are exact (bitwise) or a library function's (a few ulps)."""

    name: str
    torch_fn: Callable
    accepts: tuple[torch.dtype, ...]
    refuses: tuple[torch.dtype, ...] = ()
    exact: bool = True
    second: str = "values"  # a binary row's second operand: "values" or "shift counts"


LIBRARY = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "erfinv", "lgamma"]
CASES = [
    *[MathCase(n, getattr(torch, n), ALL, exact=False) for n in LIBRARY],
    MathCase("erfcinv", erfcinv, ALL, exact=False),
    MathCase("frac", torch.frac, FLOATS, (*INTS, BOOL)),
    *[MathCase(n, getattr(torch, n), ALL) for n in ("signbit", "isneginf", "isposinf", "isreal")],
    # nvFuser's nextafter takes Float and Double only (torch has Half and BFloat16 too)
    MathCase("nextafter", torch.nextafter, (F32, F64), (F16, BF16, *INTS, BOOL)),
    MathCase("gcd", torch.gcd, INTS, (*FLOATS, BOOL)),
    *[
        MathCase(n, getattr(torch, n), INTS, (*FLOATS, BOOL), second="shift counts")
        for n in ("bitwise_left_shift", "bitwise_right_shift")
    ],
    MathCase(
        "logical_right_shift", logical_right_shift, INTS, (*FLOATS, BOOL), second="shift counts"
    ),
]
BY_NAME = {c.name: c for c in CASES}
ARITY = {r.name: r.arity for r in ROWS}
SCALAR_ROWS = ("threshold", "add_alpha", "sub_alpha")  # tested with their scalars below


def test_every_new_row_is_in_the_table():
    new = set(BY_NAME) | set(SCALAR_ROWS)
    assert new <= set(ARITY), sorted(new - set(ARITY))
    assert len(new) == 24


# --- layouts ---------------------------------------------------------------------------------
def laid_out(x: torch.Tensor, layout: str) -> torch.Tensor:
    """``x`` (2-D, on the default device, possibly a stride-0 view) in ``layout``."""
    dense = x.contiguous()
    if layout == "contiguous":
        return dense
    if layout == "permuted":
        return dense.t().contiguous().t()
    if layout == "sliced":
        rows, cols = dense.shape
        fill = True if dense.dtype is BOOL else 3
        buf = torch.full((rows, 2 * cols), fill, dtype=dense.dtype)
        buf[:, 1::2] = dense
        return buf[:, 1::2]
    assert layout == "expanded"
    return x


def operands(case: MathCase, dtype: torch.dtype) -> list[torch.Tensor]:
    """The logical operands on the default device: a unary row's values broadcast along a
    second dim of 3 (a stride-0 view); a binary row's the two axes of an outer product."""
    dev = torch.get_default_device()
    v = edge_values(dtype).to(dev)
    if ARITY[case.name] == 1:
        return [v[:, None].expand(len(v), 3)]
    w = shift_counts(dtype).to(dev) if case.second == "shift counts" else v
    return [v[:, None].expand(len(v), len(w)), w[None, :].expand(len(v), len(w))]


# --- comparing -------------------------------------------------------------------------------
TOLERANCES = {F32: (2e-6, 1e-6), F64: (1e-13, 1e-13)}  # (rtol, atol); Half/BF16: torch's


def assert_matches(out: torch.Tensor, expected: torch.Tensor, exact: bool) -> None:
    assert out.dtype == expected.dtype, f"dtype {out.dtype}, expected {expected.dtype}"
    assert out.shape == expected.shape
    out, expected = out.cpu(), expected.cpu()
    if not expected.is_floating_point():
        bad = out != expected
        assert not bad.any(), (
            f"{int(bad.sum())} differ: got {out[bad][:6]}, want {expected[bad][:6]}"
        )
        return
    if exact:
        same = ((out == expected) & (out.signbit() == expected.signbit())) | (
            out.isnan() & expected.isnan()
        )
        assert same.all(), f"got {out[~same][:6].tolist()}, want {expected[~same][:6].tolist()}"
        return
    rtol, atol = TOLERANCES.get(expected.dtype, (None, None))
    torch.testing.assert_close(out, expected, rtol=rtol, atol=atol, equal_nan=True)


def run(build: Callable, tensors: list[torch.Tensor], scalars: list = ()) -> torch.Tensor:
    """``build(fd, *tensor handles, *scalar handles)`` as the fusion's output, executed;
    scalars are ``(value, "constant" | DataType of a symbolic input)``."""
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(t) for t in tensors]
        inputs: list = list(tensors)
        for value, form in scalars:
            if form == "constant":
                handles.append(fd.define_scalar(value))
            else:
                handles.append(fd.define_scalar(form))
                inputs.append(value)
        fd.add_output(build(fd, *handles))
    (out,) = fd.execute(inputs)
    assert_ran_kernels(fd)
    if all(t.is_contiguous() for t in tensors):
        for art in compile_last_run(fd.executor()):
            assert f".entry {art.name}" in art.ptx
    return out


# --- every row x accepted dtype x layout ---------------------------------------------------------
ACCEPTED = [
    pytest.param(c, d, layout, id=f"{c.name}-{dtype_id(d)}-{layout}")
    for c in CASES
    for d in c.accepts
    for layout in LAYOUTS
]


@pytest.mark.parametrize("case,dtype,layout", ACCEPTED)
def test_row(case: MathCase, dtype, layout):
    logical = operands(case, dtype)
    xs = [laid_out(x, layout) for x in logical]
    out = run(lambda fd, *ts: getattr(fd.ops, case.name)(*ts), xs)
    expected = case.torch_fn(*[x.contiguous() for x in logical])
    assert_matches(out, expected, case.exact)


REFUSED = [pytest.param(c, d, id=f"{c.name}-{dtype_id(d)}") for c in CASES for d in c.refuses]


@pytest.mark.parametrize("case,dtype", REFUSED)
def test_refused_dtype(case: MathCase, dtype):
    xs = [torch.zeros(2, 3, dtype=dtype)] * ARITY[case.name]
    with pytest.raises(DefinitionError, match=case.name), FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, case.name)(*[fd.from_pytorch(x) for x in xs]))


# --- tensor and scalar operands of the binary rows ---------------------------------------------
@pytest.mark.parametrize("form", ["constant", "symbolic"])
@pytest.mark.parametrize("dtype", INTS, ids=dtype_id)
@pytest.mark.parametrize(
    "name", ["bitwise_left_shift", "bitwise_right_shift", "logical_right_shift"]
)
def test_shift_by_a_scalar(name, dtype, form):
    """A tensor shifted by a scalar count (an Int scalar: the tensor's dtype wins), and a
    scalar shifted by a tensor of counts; counts past the width and below 0 included."""
    x = edge_values(dtype).to(torch.get_default_device())
    counts = shift_counts(dtype).tolist()
    ref = BY_NAME[name].torch_fn
    for s in [0, 1, counts[-3], counts[-2], counts[-1], -1]:  # ..., w, w + 1, -w - 1
        scalar = (s, "constant" if form == "constant" else DataType.Int)
        out = run(lambda fd, t, c: getattr(fd.ops, name)(t, c), [x], [scalar])
        assert_matches(out, ref(x, torch.tensor(s, dtype=dtype)), exact=True)
    cs = shift_counts(dtype).to(x.device)
    scalar = (-5, "constant" if form == "constant" else DataType.Int)
    out = run(lambda fd, t, c: getattr(fd.ops, name)(c, t), [cs], [scalar])
    assert_matches(out, ref(torch.tensor(-5, dtype=dtype), cs), exact=True)


@pytest.mark.parametrize("total", [0, 13, 31, 32, 40, -3])
@pytest.mark.parametrize(
    "name", ["bitwise_left_shift", "bitwise_right_shift", "logical_right_shift"]
)
def test_int32_shift_by_a_0_dim_int_sum(name, total):
    """An Int32 tensor shifted by a 0-dim Int tensor (its own sum, which promotes to Int):
    the 0-dim tensor does not promote the dimensioned one, so the shift is at 32 bits
    (zeros come in at bit 31 for a logical shift; generated program 818646)."""
    dev = torch.get_default_device()
    x = torch.tensor([-7, 9, 6, 0, -1, 2**31 - 1, -(2**31)], dtype=torch.int32, device=dev)
    x[3] = total - int(x.sum())  # the sum of the whole tensor is ``total``
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(getattr(fd.ops, name)(t, fd.ops.sum(t, dims=[0])))
    (out,) = fd.execute([x])
    want = BY_NAME[name].torch_fn(x, torch.tensor(total, device=dev))
    assert out.dtype == torch.int32 and want.dtype == torch.int32
    assert torch.equal(out.cpu(), want.cpu())


@pytest.mark.parametrize("dtype", INTS, ids=dtype_id)
def test_gcd_with_a_scalar(dtype):
    x = edge_values(dtype).to(torch.get_default_device())
    for value in (0, -12, 7):
        out = run(lambda fd, t, c: fd.ops.gcd(c, t), [x], [(value, DataType.Int)])
        assert_matches(out, torch.gcd(torch.tensor(value, dtype=dtype), x), exact=True)


@pytest.mark.parametrize("dtype", [F32, F64], ids=dtype_id)
def test_nextafter_toward_a_scalar(dtype):
    """A Double scalar target promotes below a Float tensor (the result is Float)."""
    x = edge_values(dtype).to(torch.get_default_device())
    for target in (0.0, -0.0, math.inf, -math.inf, 1.0, math.nan):
        out = run(lambda fd, t, c: fd.ops.nextafter(t, c), [x], [(target, DataType.Double)])
        assert_matches(out, torch.nextafter(x, torch.tensor(target, dtype=dtype)), exact=True)


# --- threshold, add_alpha, sub_alpha: scalars where nvFuser's binding takes them -------------------
THRESHOLDS = {  # dtype kind -> (threshold, value) pairs
    "float": [(0.5, -3.0), (-0.0, 2.5), (math.inf, 7.0), (-math.inf, 1.0), (1.0, math.nan)],
    "int": [(-0.5, 2.7), (-1.5, 9), (0, -4), (7, 0.9)],  # floats truncate (torch)
}


@pytest.mark.parametrize("form", ["constant", "symbolic"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", (*FLOATS, *INTS), ids=dtype_id)
def test_threshold(dtype, layout, form):
    logical = operands(BY_NAME["acos"], dtype)[0]
    x = laid_out(logical, layout)
    for t, v in THRESHOLDS["float" if dtype.is_floating_point else "int"]:
        scalars = [
            (
                s,
                "constant"
                if form == "constant"
                else DataType.Double
                if isinstance(s, float)
                else DataType.Int,
            )
            for s in (t, v)
        ]
        out = run(lambda fd, a, th, val: fd.ops.threshold(a, th, val), [x], scalars)
        assert_matches(out, F.threshold(logical.contiguous(), t, v), exact=True)


def test_threshold_compares_half_in_float():
    """torch compares Half and BFloat16 with the threshold in Float (not rounded to Half)."""
    x = torch.tensor([0.10003662109375, 0.0999755859375], dtype=F16)
    out = run(
        lambda fd, a, th, val: fd.ops.threshold(a, th, val),
        [x],
        [(0.10001, "constant"), (5.0, "constant")],
    )
    # torch's CPU kernel (the semantics layoutfuse follows); its CUDA kernel compares in Half
    want = F.threshold(x.cpu(), 0.10001, 5.0).tolist()
    assert out.tolist() == [x[0].item(), 5.0] == want


ALPHAS = {"float": (0.3, -2.5, 2), "int": (3, -2, 0), "bool": (True, False, 2, 0)}


def _kind(dtype: torch.dtype) -> str:
    return "bool" if dtype is BOOL else "float" if dtype.is_floating_point else "int"


ALPHA_CASES = [
    pytest.param(n, d, layout, id=f"{n}-{dtype_id(d)}-{layout}")
    for n in ("add_alpha", "sub_alpha")
    for d in ALL
    for layout in LAYOUTS
    if not (n == "sub_alpha" and d is BOOL)
]


@pytest.mark.parametrize("name,dtype,layout", ALPHA_CASES)
def test_alpha(name, dtype, layout):
    """``torch.add/sub(a, b, alpha=...)`` over every pair of edge values (integers wrap as in
    torch; Bools add as ``a or (alpha and b)``, an int alpha too)."""
    a, b = operands(BY_NAME["gcd"], dtype)
    xs = [laid_out(a, layout), laid_out(b, layout)]
    fn = torch.add if name == "add_alpha" else torch.sub
    for alpha in ALPHAS[_kind(dtype)]:
        form = (
            "constant"
            if isinstance(alpha, bool)
            else (DataType.Double if isinstance(alpha, float) else DataType.Int)
        )
        out = run(lambda fd, x, y, s: getattr(fd.ops, name)(x, y, s), xs, [(alpha, form)])
        if dtype in (F16, BF16):
            # torch's vectorized kernel: alpha rounded to the dtype, then one fused multiply-add
            # in Float (its scalar tail computes in the dtype: 2 * max(Half) overflows there)
            rounded = torch.tensor(alpha, dtype=dtype).item()
            expected = fn(a.contiguous().float(), b.contiguous().float(), alpha=rounded).to(dtype)
        else:
            expected = fn(a.contiguous(), b.contiguous(), alpha=alpha)
        assert_matches(out, expected, exact=not dtype.is_floating_point)


@pytest.mark.parametrize(
    "name,dtype,alpha",
    [
        ("add_alpha", I64, 0.5),
        ("sub_alpha", I32, 1.5),
        ("add_alpha", BOOL, 0.5),
        ("sub_alpha", BOOL, True),
    ],
)
def test_alpha_torch_refuses(name, dtype, alpha):
    """A float alpha for integer tensors and sub of Bools: torch refuses them."""
    x = torch.zeros(2, 3, dtype=dtype)
    with pytest.raises(Exception) as torch_error:
        (torch.add if name == "add_alpha" else torch.sub)(x, x, alpha=alpha)
    with pytest.raises(DefinitionError, match=name), FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(getattr(fd.ops, name)(t, t, fd.define_scalar(alpha)))
    assert torch_error.value is not None


@pytest.mark.parametrize(
    "name,position", [("threshold", 1), ("threshold", 2), ("add_alpha", 2), ("sub_alpha", 2)]
)
def test_scalar_only_operands(name, position):
    """nvFuser's bindings take a Scalar for an alpha and for threshold's two scalars."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True])
        args = (
            [t, t, fd.define_scalar(1.0)]
            if name != "threshold"
            else [t, fd.define_scalar(0.0), fd.define_scalar(1.0)]
        )
        args[position] = t
        with pytest.raises(ArgumentTypeError, match=f"{name}.*arg{position + 1}.*Scalar"):
            getattr(fd.ops, name)(*args)
        fd.add_output(t)


def test_scalar_only_operand_in_the_ir():
    from layoutfuse.ir import Fusion, FusionGuard, IterDomain, TensorView, ops

    f = Fusion()
    with FusionGuard(f):
        tv = TensorView(f, [IterDomain.iteration(None)], from_torch(F32))
        f.add_input(tv)
        with pytest.raises(ArgumentTypeError, match="operand 3 must be a Scalar"):
            ops.pointwise("add_alpha", tv, tv, tv)


def test_shift_operators_of_handles():
    """``t << s`` and ``t >> s`` are nvFuser's bitwise_left_shift and bitwise_right_shift."""
    x = edge_values(I64).to(torch.get_default_device())
    out = run(lambda fd, t, c: (t << c) >> fd.define_scalar(1), [x], [(3, "constant")])
    assert_matches(out, (x << 3) >> 1, exact=True)


def test_rows_in_reductions_and_on_scalars():
    """New rows in a reduction's prologue (their helpers pasted into reduction kernels, which
    compile for sm_90), and on scalars alone (evaluated on the host, as torch would)."""
    x = torch.arange(-12, 12, device=torch.get_default_device()).reshape(4, 6)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        a = fd.define_scalar(DataType.Int)
        g = fd.ops.gcd(a, fd.define_scalar(18))
        th = fd.ops.threshold(fd.define_scalar(2.5), fd.define_scalar(3.0), fd.define_scalar(-1.0))
        alpha = fd.ops.sub_alpha(a, fd.define_scalar(4), fd.define_scalar(2))
        f = fd.ops.cast(t, DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.gcd(t, g), dims=[1]))
        fd.add_output(fd.ops.max(fd.ops.lgamma(f), dims=[0]))
        fd.add_output(fd.ops.sum(fd.ops.cast(fd.ops.signbit(f), DataType.Int), dims=[0, 1]))
        fd.add_output(fd.ops.mul(f, th))
        fd.add_output(fd.ops.add(t, alpha))
    gcds, lgammas, negatives, scaled, shifted = fd.execute([x, 12])
    assert torch.equal(gcds, torch.gcd(x, torch.tensor(6)).sum(1))
    assert torch.equal(lgammas, torch.lgamma(x.float()).amax(0))
    assert int(negatives) == 12
    assert_matches(scaled, x.float() * -1.0, exact=True)
    assert torch.equal(shifted, x + 4)
    code = fd.last_triton_code()
    assert "def _gcd(" in code and "def _lgamma(" in code and "tl.sum(" in code
    for art in compile_last_run(fd.executor()):
        assert f".entry {art.name}" in art.ptx


@pytest.mark.parametrize(
    "dt", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str
)
def test_neg_flips_the_sign_of_zero(dt):
    """torch.neg(+0.0) is -0.0: Triton's ``-x`` is ``0 - x``, which gives +0.0, so neg
    flips the sign bit (signbit of the result tells them apart; generated program 117115).
    A NaN stays a NaN; its sign is not compared (torch's CPU neg flips it, its CUDA neg
    does not)."""
    values = [0.0, -0.0, 1.5, -2.0, float("inf"), float("-inf")]
    if dt in (torch.float32, torch.float64):
        values.append(float("nan"))
    x = torch.tensor(values, dtype=dt)
    out = run(lambda fd, t: fd.ops.neg(t), [x])
    bits = run(lambda fd, t: fd.ops.signbit(fd.ops.neg(t)), [x])
    want = torch.neg(x)
    real = ~want.isnan()
    assert torch.equal(out.signbit()[real], want.signbit()[real])
    assert torch.equal(bits[real], want.signbit()[real])
    torch.testing.assert_close(out, want, equal_nan=True, rtol=0, atol=0)
