"""Every pointwise op row, run through generated kernels (``fd.execute``), against torch.

One table: each row of ``layoutfuse.ir.ops.elementwise.ROWS`` crossed with float32,
float16, bfloat16, float64, int64, int32 and bool, on tensors of the default device
(CPU: Triton's interpreter). Every kernel a case ran is also compiled for sm_90: the
interpreter does not type-check as the compiler does (a loop-carried value that changes
type runs there and fails to compile). The expected value is computed directly in
torch, with Half/BFloat16 operands upcast to Float (Half and BFloat16 compute in Float)
and the result cast back; ints and bools must match exactly. The expected dtype is
torch's, except where nvFuser differs on purpose: ``div`` of integers truncates, and the
rows that compute in Float give Float for integer operands (torch has no integer
``silu``).

A dtype combination the IR rejects (``DefinitionError``) is skipped, once torch is
seen to reject it too; one that torch rejects must be rejected by the IR. The
tensor-scalar forms take a symbolic scalar input and a constant, on either side.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import from_torch
from layoutfuse.errors import DefinitionError
from layoutfuse.ir.ops.elementwise import ROWS
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import assert_ran_kernels

# Masked-out lanes read 0, so integer division there warns; the store is masked.
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
]

F32, F16, BF16, F64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
I64, I32, BOOL = torch.int64, torch.int32, torch.bool
DTYPES = (F32, F16, BF16, F64, I64, I32, BOOL)
REDUCED = (F16, BF16)
SHAPE = (5, 67)  # 67: not a multiple of any block, so the tail is masked


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# --- inputs -------------------------------------------------------------------------------------
def sample(dtype: torch.dtype, domain: str = "any", shape=SHAPE, seed: int = 0) -> torch.Tensor:
    """Random values of ``dtype`` in ``domain``: ``any``; ``positive`` (log, sqrt, pow bases);
    ``nonzero`` (divisors); ``small`` (exponents and lerp weights: [0, 2) or 0..3)."""
    g = torch.Generator().manual_seed(seed)
    if dtype is BOOL:
        return (torch.rand(shape, generator=g) > 0.5) | (domain in ("positive", "nonzero"))
    if not dtype.is_floating_point:
        lo, hi = {"any": (-9, 10), "positive": (1, 9), "nonzero": (1, 9), "small": (0, 4)}[domain]
        x = torch.randint(lo, hi, shape, generator=g)
        if domain == "nonzero":
            x = x * (torch.randint(0, 2, shape, generator=g) * 2 - 1)
        return x.to(dtype)
    u = torch.rand(shape, generator=g, dtype=F64)
    x = {
        "any": lambda: torch.randn(shape, generator=g, dtype=F64) * 2,
        "positive": lambda: u * 3 + 0.25,
        "nonzero": lambda: (u + 0.5) * (torch.randint(0, 2, shape, generator=g) * 2 - 1),
        "small": lambda: u * 2,
    }[domain]()
    return x.to(dtype)


# --- the reference ------------------------------------------------------------------------------
def _div(a, b):
    if a.is_floating_point() or b.is_floating_point():
        return torch.true_divide(a, b)
    return torch.div(a, b, rounding_mode="trunc")  # nvFuser's div of integers truncates


def _erfcinv(x):
    return (-torch.special.ndtri(x.double() / 2) / 2**0.5).to(x.dtype)


def _logical_right_shift(x, s):
    """nvFuser's definition, element by element (torch has none): counts 0..w shift zeros
    in; past w or below 0, -1 for a negative x and 0 otherwise."""
    dtype = torch.result_type(x, s)
    w = torch.iinfo(dtype).bits
    xs, ss = torch.broadcast_tensors(x.to(dtype), s.to(dtype))
    out = []
    for a, b in zip(xs.flatten().tolist(), ss.flatten().tolist()):
        v = ((a % 2**w) >> b) if 0 <= b <= w else (-1 if a < 0 else 0)
        out.append(v - 2**w if v >= 2 ** (w - 1) else v)
    return torch.tensor(out, dtype=dtype, device=xs.device).reshape(xs.shape)


TORCH = {  # direct torch, for the rows that are not a torch function of the same name
    "div": _div,
    "truediv": torch.true_divide,
    "silu": F.silu,
    "addcmul": lambda a, b, c, v: torch.addcmul(a, b, c, value=v),
    "erfcinv": _erfcinv,
    "logical_right_shift": _logical_right_shift,
    "threshold": lambda x, t, v: F.threshold(x, t.item(), v.item()),
    "add_alpha": lambda a, b, v: torch.add(a, b, alpha=v.item()),
    "sub_alpha": lambda a, b, v: torch.sub(a, b, alpha=v.item()),
}
# nvFuser's nextafter takes Float and Double only (torch's takes Half and BFloat16 too)
FULL_PRECISION_ONLY = {"nextafter"}
# Operand positions where nvFuser takes a Scalar only (the rows' ``scalar_operands``)
SCALAR_ONLY = {"threshold": (1, 2), "add_alpha": (2,), "sub_alpha": (2,)}

# Rows that compute in Float: integer and bool operands become Float first.
FLOAT_COMPUTE = {
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
    "silu",
    "erf",
    "erfc",
    "truediv",
    "atan2",
    *("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"),
    *("erfinv", "erfcinv", "lgamma"),
}

DOMAINS = {  # operand domains where "any" would hit a domain error or an integer fault
    "log": ("positive",),
    "log1p": ("positive",),
    "log2": ("positive",),
    "log10": ("positive",),
    "sqrt": ("positive",),
    "rsqrt": ("positive",),
    "reciprocal": ("nonzero",),
    "div": ("any", "nonzero"),
    "truediv": ("any", "nonzero"),
    "fmod": ("any", "nonzero"),
    "remainder": ("any", "nonzero"),
    "pow": ("positive", "small"),
    "lerp": ("any", "any", "small"),
}


def domains(name: str, arity: int) -> tuple[str, ...]:
    return DOMAINS.get(name, ("any",) * arity)


def direct(name: str):
    return TORCH.get(name) or getattr(torch, name)


def compute_form(x, name: str):
    """``x`` as the reference computes with it: Half/BF16 in Float; integer and bool operands
    of the Float-computing rows in Float."""
    if not torch.is_tensor(x):
        return x
    if x.dtype in REDUCED or (name in FLOAT_COMPUTE and not x.is_floating_point()):
        return x.float()
    return x


def torch_result_dtype(name: str, operands) -> torch.dtype | None:
    """The dtype torch gives ``name`` on ``operands``, or None if torch rejects them."""
    if name in FLOAT_COMPUTE and not any(
        torch.is_tensor(x) and x.is_floating_point() for x in operands
    ):
        return F32
    try:
        dtype = direct(name)(*operands).dtype
    except (RuntimeError, TypeError):
        return None
    return None if name in FULL_PRECISION_ONLY and dtype not in (F32, F64) else dtype


def check_kernels(fd: FusionDefinition, launches: bool = True) -> None:
    """The last run used generated kernels (launched some, unless ``launches`` is False: a
    cast to the same dtype is a view of its input), and each compiles for sm_90."""
    if launches:
        assert_ran_kernels(fd)
    artifacts = compile_last_run(fd.executor())
    assert bool(artifacts) == launches, f"{len(artifacts)} kernels launched"
    for art in artifacts:
        assert f".entry {art.name}" in art.ptx, f"{art.name}: no kernel entry in its PTX"


def check(out: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    assert out.dtype == dtype, f"output dtype {out.dtype}, expected {dtype}"
    assert out.shape == expected.shape
    if dtype.is_floating_point:
        torch.testing.assert_close(out, expected, equal_nan=True)
    else:
        assert torch.equal(out, expected), f"{(out != expected).sum()} elements differ"


def check_op(name: str, operands, form: str = "symbolic") -> None:
    """``fd.ops.<name>(*operands)`` through kernels, against torch: the IR and torch agree on
    accepting the dtypes, then on the result's dtype and values. Python numbers in
    ``operands`` are ``form`` scalars: ``symbolic`` (``define_scalar(dtype)``, the value
    passed to execute) or ``constant`` (``define_scalar(value)``)."""
    tensor = next(x for x in operands if torch.is_tensor(x))
    as_torch = [x if torch.is_tensor(x) else python_scalar(x, tensor.dtype) for x in operands]
    torch_dtype = torch_result_dtype(name, as_torch)

    def define(fd, x):
        if torch.is_tensor(x):
            return fd.from_pytorch(x)
        if form == "constant":
            return fd.define_scalar(x)
        return fd.define_scalar(DataType.Double if isinstance(x, float) else DataType.Int)

    try:
        with FusionDefinition() as fd:
            fd.add_output(getattr(fd.ops, name)(*[define(fd, x) for x in operands]))
    except DefinitionError as e:
        assert torch_dtype is None, f"the IR rejects a combination torch accepts: {e}"
        pytest.skip(f"rejected by the IR and by torch: {e}")
    assert torch_dtype is not None, "the IR accepts a combination torch rejects"
    (res,) = fd.execute([x for x in operands if torch.is_tensor(x) or form == "symbolic"])
    check_kernels(fd)
    expected = direct(name)(*[compute_form(x, name) for x in as_torch]).to(torch_dtype)
    check(res, expected, torch_dtype)


def python_scalar(value, tensor_dtype: torch.dtype) -> torch.Tensor:
    """``value`` as a 0-dim tensor that promotes like the Python number against a tensor of
    ``tensor_dtype``: a float over an integer tensor gives the default Float, not Double."""
    if isinstance(value, float):
        return torch.tensor(value, dtype=F64 if tensor_dtype.is_floating_point else F32)
    return torch.tensor(value, dtype=I64)


# --- known bugs: none open (the former ones are fixed and their cases run plainly) ---------
KNOWN: dict[str, tuple[str, type]] = {}  # test id -> (reason, exception) of a known bug


def param(*values, id: str, known=KNOWN):
    marks = []
    if id in known:
        reason, raises = known[id]
        marks = [pytest.mark.xfail(strict=True, raises=raises, reason=reason)]
    return pytest.param(*values, id=id, marks=marks)


# --- every row, tensors only ---------------------------------------------------------------------
def tensor_operands(name: str, arity: int, dtype: torch.dtype) -> list:
    """Tensors of ``dtype`` (where's predicate is Bool); addcmul's ``value`` is a scalar of the
    tensors' category."""
    doms = domains(name, arity)
    xs: list = [sample(dtype, doms[k], seed=k) for k in range(min(arity, 3))]
    if name == "where":
        xs[0] = sample(BOOL, seed=7)
    if name == "addcmul":
        xs.append(0.5 if dtype.is_floating_point else 3)
    for k in SCALAR_ONLY.get(name, ()):
        xs[k] = (0.5, -2.0)[k - 1] if dtype.is_floating_point else (3, -2)[k - 1]
    return xs


POINTWISE_CASES = [
    param(row.name, row.arity, d, id=f"{row.name}-{dtype_id(d)}") for row in ROWS for d in DTYPES
]


@pytest.mark.parametrize("name,arity,dtype", POINTWISE_CASES)
def test_pointwise_row(name, arity, dtype):
    check_op(name, tensor_operands(name, arity, dtype))


def test_every_row_is_in_the_table():
    assert {p.values[0] for p in POINTWISE_CASES} == {r.name for r in ROWS}
    assert {r.arity for r in ROWS} == {1, 2, 3, 4}


# --- tensor-scalar forms ---------------------------------------------------------------------------
SCALAR_VALUES = {  # (domain, python type) -> value, exact in every float dtype
    ("any", float): 1.5,
    ("any", int): -3,
    ("positive", float): 1.75,
    ("positive", int): 2,
    ("nonzero", float): -2.5,
    ("nonzero", int): 3,
    ("small", float): 0.75,
    ("small", int): 2,
}
BINARY = [r.name for r in ROWS if r.arity == 2]
# (tensor dtype, scalar type): the same category, and integer tensors with a float scalar
SCALAR_DTYPES = [
    (F32, float),
    (BF16, float),
    (F64, float),
    (I64, int),
    (I32, int),
    (I32, float),
    (BOOL, int),
]
SIDES = ("tensor_scalar", "scalar_tensor")
FORMS = ("symbolic", "constant")


SCALAR_CASES = [
    param(
        name, dtype, kind, side, form, id=f"{name}-{dtype_id(dtype)}-{kind.__name__}-{side}-{form}"
    )
    for name in BINARY
    for dtype, kind in SCALAR_DTYPES
    for side in SIDES
    for form in FORMS
]


@pytest.mark.parametrize("name,dtype,kind,side,form", SCALAR_CASES)
def test_binary_with_scalar(name, dtype, kind, side, form):
    doms = domains(name, 2)
    k = 1 if side == "tensor_scalar" else 0  # the scalar's operand position
    scalar = SCALAR_VALUES[doms[k], kind]
    tensor = sample(dtype, doms[1 - k], seed=11)
    check_op(name, [tensor, scalar] if k == 1 else [scalar, tensor], form)


def _kind(dtype: torch.dtype):
    return float if dtype.is_floating_point else int


TERNARY_WITH_SCALARS = {  # name -> dtype -> operands, scalars where nvFuser programs put them
    "clamp": lambda d: [
        sample(d, seed=1),
        SCALAR_VALUES["any", _kind(d)],
        SCALAR_VALUES["positive", _kind(d)],
    ],
    "where": lambda d: [sample(BOOL, seed=2), sample(d, seed=3), SCALAR_VALUES["any", _kind(d)]],
    "lerp": lambda d: [sample(d, seed=4), sample(d, seed=5), 0.25],
    "addcmul": lambda d: [
        sample(d, seed=6),
        sample(d, seed=7),
        sample(d, seed=8),
        SCALAR_VALUES["any", _kind(d)],
    ],
}
TERNARY_WITH_SCALARS.update(
    {
        "threshold": lambda d: [
            sample(d, seed=9),
            SCALAR_VALUES["any", _kind(d)],
            SCALAR_VALUES["nonzero", _kind(d)],
        ],
        "add_alpha": lambda d: [
            sample(d, seed=10),
            sample(d, seed=11),
            SCALAR_VALUES["any", _kind(d)],
        ],
        "sub_alpha": lambda d: [
            sample(d, seed=12),
            sample(d, seed=13),
            SCALAR_VALUES["any", _kind(d)],
        ],
    }
)
TERNARY_CASES = [
    param(name, d, form, id=f"{name}-{dtype_id(d)}-{form}")
    for name in TERNARY_WITH_SCALARS
    for d in (F32, BF16, F64, I64)
    for form in FORMS
    if not (name == "lerp" and d is I64)
]


@pytest.mark.parametrize("name,dtype,form", TERNARY_CASES)
def test_ternary_with_scalars(name, dtype, form):
    check_op(name, TERNARY_WITH_SCALARS[name](dtype), form)


# --- casts --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dst", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("src", DTYPES, ids=dtype_id)
def test_cast(src, dst):
    x = sample(src, seed=9)
    if src.is_floating_point:
        x = x * 3  # values past the integer range of the small samples
    assert x.dtype == src
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cast(fd.from_pytorch(x), dtype=from_torch(dst)))
    (res,) = fd.execute([x])
    check_kernels(fd, launches=src != dst)
    check(res, x.to(dst), dst)


# --- Half and BFloat16 results are rounded to nearest even --------------------------------------------
@pytest.mark.parametrize(
    "dtype", [pytest.param(F16, id="float16"), pytest.param(BF16, id="bfloat16")]
)
def test_reduced_precision_results_round_to_nearest_even(dtype):
    """The sum of two Half/BF16 values is exact in Float, so the stored result, rounded to
    nearest even as torch rounds it, must be bit-exact."""
    x, y = sample(dtype, seed=12, shape=(64, 64)), sample(dtype, seed=13, shape=(64, 64))
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.from_pytorch(x), fd.from_pytorch(y)))
    (res,) = fd.execute([x, y])
    check_kernels(fd)
    expected = (x.float() + y.float()).to(dtype)
    assert torch.equal(res, expected), f"{(res != expected).sum()} of {res.numel()} differ"


def test_double_scalar_keeps_double_precision():
    """A Double scalar input added to a float64 tensor is used at full precision."""
    x = torch.zeros(4, 8, dtype=F64)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.from_pytorch(x), fd.define_scalar(DataType.Double)))
    (res,) = fd.execute([x, 0.1])
    check_kernels(fd)
    assert torch.equal(res, torch.full_like(x, 0.1))
