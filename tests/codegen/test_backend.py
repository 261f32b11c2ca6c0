"""Tests of the Triton backend: loading generated source, interpreter runs, sm_90 compilation.

Every table runs on CPU through Triton's interpreter, and also compiled on CUDA when a GPU is
present, so the same rows check that both modes agree with the torch reference. The inputs
and the reference live on torch's default device (``--device cuda`` makes it CUDA); each
result is compared on the device it was computed on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import triton
import triton.language as tl

from layoutfuse.codegen.backend import (
    PRELUDE,
    LoadedKernel,
    compile_for_hopper,
    launch,
    load_kernel,
    ptx_vector_widths,
    signature_from_args,
)
from layoutfuse.codegen.kernel_cache import cache_key

HEADER = (
    "import triton\nimport triton.language as tl\n"
    "from triton.language.extra import libdevice as lib\n" + PRELUDE
)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
N = 1000  # not a multiple of BLOCK, so masking is exercised
BLOCK = 256


# each module's kernels are cached in a fresh directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


def elementwise_source(expr: str, n_inputs: int) -> str:
    """A generated-style kernel computing ``result = expr`` over inputs ``x0, x1, ...``."""
    params = "".join(f"in{i}_ptr, " for i in range(n_inputs))
    loads = "".join(
        f"    x{i} = tl.load(in{i}_ptr + offsets, mask=mask)\n" for i in range(n_inputs)
    )
    return HEADER + (
        "\n\n@triton.jit\n"
        f"def elementwise_kernel({params}out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offsets < n\n"
        f"{loads}"
        f"    result = {expr}\n"
        "    tl.store(out_ptr + offsets, result, mask=mask)\n"
    )


def run_elementwise(expr: str, inputs: list[torch.Tensor], out_dtype, device: str):
    kernel = load_kernel(elementwise_source(expr, len(inputs)), "elementwise_kernel")
    inputs = [x.to(device) for x in inputs]
    out = torch.empty(inputs[0].shape, dtype=out_dtype, device=device)
    grid = (math.ceil(out.numel() / BLOCK),)
    launch(kernel, grid, *inputs, out, out.numel(), device_type=device, BLOCK=BLOCK)
    return out


def expected_on(out: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """``reference`` (computed on the inputs' device) moved to the result's device."""
    return reference.to(out.device)


# --- input domains -------------------------------------------------------------------------


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def any_real(dtype, seed=0):
    return torch.randn(N, generator=_gen(seed), dtype=torch.float64).mul(3).to(dtype)


def positive(dtype, seed=0):
    return torch.rand(N, generator=_gen(seed), dtype=torch.float64).mul(5).add(0.05).to(dtype)


def above_minus_one(dtype, seed=0):
    return torch.rand(N, generator=_gen(seed), dtype=torch.float64).mul(4).sub(0.95).to(dtype)


def inside_half_pi(dtype, seed=0):
    return torch.rand(N, generator=_gen(seed), dtype=torch.float64).mul(2.8).sub(1.4).to(dtype)


def with_halves(dtype, seed=0):
    halves = torch.arange(-8, 8, 0.5, dtype=torch.float64)
    return torch.cat([halves, any_real(torch.float64, seed)[: N - halves.numel()]]).to(dtype)


def with_nans(dtype, seed=0):
    x = any_real(dtype, seed)
    x[seed::7] = float("nan")
    return x


def nonzero_ints(dtype, seed=0):
    x = torch.randint(1, 8, (N,), generator=_gen(seed), dtype=dtype)
    sign = torch.randint(0, 2, (N,), generator=_gen(seed + 1), dtype=dtype) * 2 - 1
    return x * sign


def any_ints(dtype, seed=0):
    return torch.randint(-50, 50, (N,), generator=_gen(seed), dtype=dtype)


@dataclass(frozen=True)
class Row:
    """One emission template: Triton expression, torch reference, input domains."""

    expr: str
    reference: Callable[..., torch.Tensor]
    domains: tuple[Callable[..., torch.Tensor], ...]

    @property
    def id(self) -> str:
        readable = self.expr.replace("//", " floordiv ").replace("%", " mod ")
        return re.sub(r"\W+", "_", readable.split("(")[0]).strip("_")


NAN_ALL = "propagate_nan=tl.PropagateNan.ALL"
FLOAT_ROWS = [
    Row("lib.exp(x0)", torch.exp, (any_real,)),
    Row("tl.exp(x0)", torch.exp, (any_real,)),
    Row("lib.exp2(x0)", torch.exp2, (any_real,)),
    Row("lib.expm1(x0)", torch.expm1, (any_real,)),
    Row("lib.log(x0)", torch.log, (positive,)),
    Row("lib.log1p(x0)", torch.log1p, (above_minus_one,)),
    Row("lib.log2(x0)", torch.log2, (positive,)),
    Row("lib.log10(x0)", torch.log10, (positive,)),
    Row("lib.sqrt(x0)", torch.sqrt, (positive,)),
    Row("lib.rsqrt(x0)", torch.rsqrt, (positive,)),
    Row("lib.sin(x0)", torch.sin, (any_real,)),
    Row("lib.cos(x0)", torch.cos, (any_real,)),
    Row("lib.tan(x0)", torch.tan, (inside_half_pi,)),
    Row("lib.tanh(x0)", torch.tanh, (any_real,)),
    Row("lib.erf(x0)", torch.erf, (any_real,)),
    Row("lib.erfc(x0)", torch.erfc, (any_real,)),
    Row("lib.floor(x0)", torch.floor, (with_halves,)),
    Row("lib.ceil(x0)", torch.ceil, (with_halves,)),
    Row("lib.nearbyint(x0)", torch.round, (with_halves,)),  # ties to even, like torch.round
    Row("lib.trunc(x0)", torch.trunc, (with_halves,)),
    Row("lib.fmod(x0, x1)", torch.fmod, (any_real, positive)),
    Row("lib.pow(x0, x1)", torch.pow, (positive, any_real)),
    Row("lib.atan2(x0, x1)", torch.atan2, (any_real, any_real)),
    Row("tl.abs(x0)", torch.abs, (any_real,)),
    Row("tl.where(x0 > 0, x0, x1)", lambda a, b: torch.where(a > 0, a, b), (any_real, any_real)),
    Row(f"tl.minimum(x0, x1, {NAN_ALL})", torch.minimum, (with_nans, with_nans)),
    Row(f"tl.maximum(x0, x1, {NAN_ALL})", torch.maximum, (with_nans, with_nans)),
    Row("x0 % x1", torch.fmod, (any_real, positive)),  # float % is C fmod
    Row("_remainder(x0, x1)", torch.remainder, (any_real, any_real)),
]
INT_ROWS = [
    Row("x0 // x1", lambda a, b: torch.div(a, b, rounding_mode="trunc"), (any_ints, nonzero_ints)),
    Row("x0 % x1", torch.fmod, (any_ints, nonzero_ints)),
    Row(
        "_floordiv(x0, x1)",
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        (any_ints, nonzero_ints),
    ),
    Row("_remainder(x0, x1)", torch.remainder, (any_ints, nonzero_ints)),
]
TOLERANCE = {torch.float32: dict(rtol=2e-6, atol=1e-6), torch.float64: dict(rtol=1e-12, atol=1e-12)}


def _inputs(row: Row, dtype) -> list[torch.Tensor]:
    return [domain(dtype, seed) for seed, domain in enumerate(row.domains)]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # fmod of masked lanes' 0
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("row", FLOAT_ROWS, ids=lambda row: row.id)
def test_float_templates_match_torch(row: Row, dtype, device):
    inputs = _inputs(row, dtype)
    out = run_elementwise(row.expr, inputs, dtype, device)
    torch.testing.assert_close(
        out, expected_on(out, row.reference(*inputs)), equal_nan=True, **TOLERANCE[dtype]
    )


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # masked lanes read 0
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
@pytest.mark.parametrize("row", INT_ROWS, ids=lambda row: row.id)
def test_integer_division_truncates_and_prelude_floors(row: Row, dtype, device):
    inputs = _inputs(row, dtype)
    out = run_elementwise(row.expr, inputs, dtype, device)
    torch.testing.assert_close(out, expected_on(out, row.reference(*inputs)), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("source_dtype", [torch.bfloat16, torch.float16], ids=str)
def test_cast_to_float32_is_exact(source_dtype, device):
    x = any_real(source_dtype)
    out = run_elementwise("x0.to(tl.float32)", [x], torch.float32, device)
    torch.testing.assert_close(out, expected_on(out, x.float()), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_default_minimum_nan_handling_differs_between_modes(device):
    """Default tl.minimum (PropagateNan.NONE): the interpreter propagates NaN (np.minimum);
    compiled code lowers to minnum (min.f32), which returns the other operand."""
    a, b = with_nans(torch.float32), any_real(torch.float32, seed=1)
    out = run_elementwise("tl.minimum(x0, x1)", [a, b], torch.float32, device)
    expected = torch.minimum(a, b) if device == "cpu" else torch.fmin(a, b)
    torch.testing.assert_close(out, expected_on(out, expected), equal_nan=True, rtol=0, atol=0)


# --- reductions ------------------------------------------------------------------------------

REDUCE_HELPERS = """
@triton.jit
def _add_combine(a, b):
    return a + b


@triton.jit
def _max_nan_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
"""
ROWS, COLS, BLOCK_C = 6, 100, 128
REDUCTIONS = {  # name: (reduce expression, masked-load fill, reference over the last dim)
    "sum": ("tl.sum(x, axis=0)", "0.0", lambda x: x.sum(-1)),
    "max": ("tl.max(x, axis=0)", 'float("-inf")', lambda x: x.amax(-1)),
    "min": ("tl.min(x, axis=0)", 'float("inf")', lambda x: x.amin(-1)),
    "reduce_add": ("tl.reduce(x, 0, _add_combine)", "0.0", lambda x: x.sum(-1)),
    "reduce_max_nan": ("tl.reduce(x, 0, _max_nan_combine)", 'float("-inf")', lambda x: x.amax(-1)),
    # tl.max ignores NaN (maxnum), in both modes; torch.amax propagates it.
    "max_ignores_nan": (
        "tl.max(x, axis=0)",
        'float("-inf")',
        lambda x: x.nan_to_num(-math.inf).amax(-1),
    ),
}


def reduction_source(expr: str, fill: str) -> str:
    return (
        HEADER
        + REDUCE_HELPERS
        + (
            "\n\n@triton.jit\n"
            "def row_reduce_kernel(in_ptr, out_ptr, n_cols, BLOCK_C: tl.constexpr):\n"
            "    row = tl.program_id(0)\n"
            "    cols = tl.arange(0, BLOCK_C)\n"
            f"    x = tl.load(in_ptr + row * n_cols + cols, mask=cols < n_cols, other={fill})\n"
            f"    tl.store(out_ptr + row, {expr})\n"
        )
    )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_match_torch(name, dtype, device):
    expr, fill, reference = REDUCTIONS[name]
    x = torch.randn(ROWS, COLS, generator=_gen(3), dtype=dtype)
    if "nan" in name:
        x[1, 7] = x[4, 0] = float("nan")
    kernel = load_kernel(reduction_source(expr, fill), "row_reduce_kernel")
    out = torch.empty(ROWS, dtype=dtype, device=device)
    launch(kernel, (ROWS,), x.to(device), out, COLS, device_type=device, BLOCK_C=BLOCK_C)
    torch.testing.assert_close(
        out, expected_on(out, reference(x)), equal_nan=True, **TOLERANCE[dtype]
    )


# --- loading and launching -------------------------------------------------------------------

ADD_SOURCE = (
    HEADER
    + """

@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, _add(x, y), mask=mask)
"""
)


@pytest.mark.parametrize("device", DEVICES)
def test_add_kernel_matches_torch(device):
    kernel = load_kernel(ADD_SOURCE, "add_kernel")
    x, y = (torch.randn(3000, generator=_gen(seed)).to(device) for seed in (0, 1))
    out = torch.empty_like(x)
    launch(kernel, (3,), x, y, out, 3000, device_type=device, BLOCK=1024)
    torch.testing.assert_close(out, x + y)


def test_load_kernel_writes_hashed_file_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path))
    source = ADD_SOURCE + f"\n# {tmp_path.name}\n"
    kernel = load_kernel(source, "add_kernel")
    assert isinstance(kernel, LoadedKernel)
    header, body = kernel.path.read_text().split("\n", 1)
    assert kernel.path.parent == tmp_path and body == source
    assert header.startswith("# layoutfuse kernel cache entry") and cache_key(source) in header
    assert load_kernel(source, "add_kernel") is kernel  # cached in-process
    assert type(kernel.interpreted.fn).__name__ == "InterpretedFunction"
    with pytest.raises(ValueError, match="no @triton.jit function"):
        load_kernel(source, "missing_kernel")
    with pytest.raises(ValueError, match="device type"):
        launch(kernel, (1,), device_type="mps")


# --- specialization and sm_90 compilation --------------------------------------------------


def test_signature_from_args_follows_the_jit_launcher():
    x = torch.empty(64)
    args = {
        "x": x,
        "x_off": x[1:],
        "h": torch.empty(8, dtype=torch.bfloat16),
        "n16": 4096,
        "n17": 17,
        "big": 2**33,
        "one": 1,
        "scale": 0.5,
        "BLOCK": 128,
    }
    spec = signature_from_args(args, ["BLOCK"])
    assert spec.signature == {
        "x": "*fp32",
        "x_off": "*fp32",
        "h": "*bf16",
        "n16": "i32",
        "n17": "i32",
        "big": "i64",
        "one": "constexpr",
        "scale": "fp32",
        "BLOCK": "constexpr",
    }
    assert spec.constexprs == {"one": 1, "BLOCK": 128}
    divisible = [["tt.divisibility", 16]]
    assert spec.attrs == {(0,): divisible, (2,): divisible, (3,): divisible, (5,): divisible}


def _compile_add(x, y, out, n):
    kernel = load_kernel(ADD_SOURCE, "add_kernel")
    spec = signature_from_args(dict(zip(kernel.jit.arg_names, (x, y, out, n, 1024))), ["BLOCK"])
    return compile_for_hopper(kernel, spec.signature, spec.constexprs, attrs=spec.attrs)


def test_aligned_contiguous_fp32_compiles_to_v4_accesses():
    x, y, out = torch.empty(4096), torch.empty(4096), torch.empty(4096)
    artifacts = _compile_add(x, y, out, 4096)
    assert re.search(r"ld\.global(\.\S+)?\.v4\.(f32|b32)", artifacts.ptx)
    assert re.search(r"st\.global(\.\S+)?\.v4\.(f32|b32)", artifacts.ptx)
    widths = artifacts.vector_widths
    assert widths.get("ld.global.v1", 0) == 0 and widths.get("st.global.v1", 0) == 0
    assert "ttg.num-warps" in artifacts.ttgir
    assert artifacts.resources["REG"] > 0 and artifacts.local_bytes == 0  # ptxas's count
    assert _compile_add(x, y, out, 4096) is artifacts  # cached in-process


def test_misaligned_pointer_loses_v4_loads():
    x, y, out = torch.empty(4097), torch.empty(4096), torch.empty(4096)
    widths = _compile_add(x[1:], y, out, 4096).vector_widths
    assert widths["ld.global.v4"] < _compile_add(x[:-1], y, out, 4096).vector_widths["ld.global.v4"]
    assert widths.get("ld.global.v1", 0) > 0


def test_ptx_vector_widths_counts_qualified_and_predicated_accesses():
    ptx = """
    @%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
    ld.global.L1::evict_last.v2.f32 { %f1, %f2 }, [ %rd2 ];
    ld.global.b32 %r5, [ %rd3 ];
    @%p2 st.global.v4.b32 [ %rd4 + 0 ], { %r1, %r2, %r3, %r4 };
    """
    assert ptx_vector_widths(ptx) == {
        "ld.global.v4": 1,
        "ld.global.v2": 1,
        "ld.global.v1": 1,
        "st.global.v4": 1,
    }


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("row", FLOAT_ROWS, ids=lambda row: row.id)
def test_float_templates_compile_for_sm90(row: Row, dtype):
    source = elementwise_source(row.expr, len(row.domains))
    args = [torch.empty(N, dtype=dtype) for _ in row.domains] + [torch.empty(N, dtype=dtype)]
    kernel = load_kernel(source, "elementwise_kernel")
    spec = signature_from_args(dict(zip(kernel.jit.arg_names, (*args, N, BLOCK))), ["BLOCK"])
    artifacts = compile_for_hopper(source, spec.signature, spec.constexprs, attrs=spec.attrs)
    assert ".entry elementwise_kernel" in artifacts.ptx


def test_compiled_integer_division_and_remainder_truncate():
    source = elementwise_source("x0 // x1 + x0 % x1", 2)
    signature = {
        "in0_ptr": "*i32",
        "in1_ptr": "*i32",
        "out_ptr": "*i32",
        "n": "i32",
        "BLOCK": "constexpr",
    }
    artifacts = compile_for_hopper(source, signature, {"BLOCK": BLOCK})
    assert "arith.divsi" in artifacts.ttir and "arith.remsi" in artifacts.ttir


@triton.jit
def _scale_by_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x / tl.sum(x, 0))


def test_spills_show_as_local_bytes():
    """A tile of 256 fp32 per thread (one warp holding 8192 values across a reduction)
    cannot live in 255 registers: ptxas spills and ``local_bytes`` says so; at 2 values
    per thread nothing spills."""
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr"}
    big = compile_for_hopper(_scale_by_sum, sig, {"BLOCK": 8192}, num_warps=1)
    small = compile_for_hopper(_scale_by_sum, sig, {"BLOCK": 256}, num_warps=4)
    assert big.local_bytes > 0 and big.local_bytes == (
        big.resources.get("LOCAL", 0) + big.resources.get("STACK", 0)
    )
    assert small.local_bytes == 0
