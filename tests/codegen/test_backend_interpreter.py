"""The CPU interpreter's numerics and hygiene (codegen/backend.py): bf16 conversions round to
nearest even as torch's do, NumPy's warnings stay inside, and Triton's ``interpret`` knob has
no say in what a loaded module holds."""

import uuid
import warnings

import numpy as np
import pytest
import torch
import triton
from triton.runtime.jit import JITFunction

from layoutfuse.codegen.backend import bf16_bits_to_fp32, fp32_to_bf16_bits, load_kernel
from layoutfuse.nvfuser import FusionDefinition

pytestmark = pytest.mark.usefixtures("on_cpu")  # the interpreter's own behaviour

CAST = """import triton
import triton.language as tl

@triton.jit
def cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask).to(out_ptr.dtype.element_ty),
             mask=mask)
"""


@pytest.fixture(autouse=True)
def _kernel_cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path))


def _bits(x: torch.Tensor) -> np.ndarray:
    return x.view(torch.int16).numpy().view(np.uint16)


def _random_fp32(n: int, seed: int) -> torch.Tensor:
    """Every kind of fp32 bit pattern: normals, subnormals, ties, inf, NaN."""
    bits = torch.randint(
        -(2**31), 2**31, (n,), generator=torch.Generator().manual_seed(seed), dtype=torch.int64
    ).to(torch.int32)
    bits[:8] = torch.tensor(
        [
            0x3F808000,
            0x3F818000,
            0x7F7FFFFF,
            0x7F7F8000,
            0x00008000,
            0x80018000,
            0x7F800000,
            0x7FC00000,
        ],
        dtype=torch.int64,
    ).to(torch.int32)
    return bits.view(torch.float32)


# --- bf16 -----------------------------------------------------------------------------------


def test_fp32_to_bf16_bits_is_torchs_conversion():
    x = _random_fp32(1 << 16, seed=1)
    assert np.array_equal(fp32_to_bf16_bits(x.numpy()), _bits(x.to(torch.bfloat16)))


def test_bf16_bits_to_fp32_is_exact():
    bits = np.arange(1 << 16, dtype=np.uint16)
    expected = torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16).float()
    assert np.array_equal(bf16_bits_to_fp32(bits).view(np.uint32), expected.numpy().view(np.uint32))


@pytest.mark.parametrize(
    "src", [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16], ids=str
)
def test_interpreted_casts_to_bf16_match_torch(src):
    """fp64 and integers reach the interpreter's cast directly (Triton routes only casts from
    bf16 through fp32), fp32 through its truncating conversion: all must be torch's."""
    x = _random_fp32(4096, seed=2)
    x = (
        x[torch.isfinite(x)][:2048]
        if src.is_floating_point
        else torch.randint(-(2**40), 2**40, (2048,), generator=torch.Generator().manual_seed(3))
    )
    x = x.to(src) if src != torch.float16 else x.clamp(-6e4, 6e4).to(src)
    out = torch.empty(x.shape, dtype=torch.bfloat16)
    kernel = load_kernel(CAST + f"# {uuid.uuid4().hex}\n", "cast_kernel")
    kernel.for_device("cpu")[(2,)](x, out, x.numel(), BLOCK=1024)
    assert np.array_equal(_bits(out), _bits(x.to(torch.bfloat16)))


@pytest.mark.parametrize("dst", [torch.float32, torch.float64, torch.int32], ids=str)
def test_interpreted_casts_from_bf16_are_exact(dst):
    x = torch.from_numpy(np.arange(1 << 16, dtype=np.uint16).view(np.int16).copy())
    x = x.view(torch.bfloat16)
    x = x[torch.isfinite(x)] if dst.is_floating_point else x[x.float().abs() < 2**31]
    out = torch.empty(x.shape, dtype=dst)
    kernel = load_kernel(CAST + f"# {uuid.uuid4().hex}\n", "cast_kernel")
    kernel.for_device("cpu")[(-(-x.numel() // 4096),)](x, out, x.numel(), BLOCK=4096)
    assert torch.equal(out, x.to(dst))


@pytest.mark.parametrize("op", ["add", "sum"])
def test_bf16_results_of_execute_equal_torchs(op):
    """The user's report: 1056 of 4096 adds and 35 of 64 row sums were 1 ulp below torch's
    (an add of two bf16 values is exact in fp32; the row sums' fp32 values agree here)."""
    g = torch.Generator().manual_seed(5)
    x, y = (torch.randn(64, 64, generator=g, device="cpu").to(torch.bfloat16) for _ in range(2))
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        fd.add_output(
            fd.ops.add(tx, fd.from_pytorch(y)) if op == "add" else fd.ops.sum(tx, dims=[1])
        )
    (res,) = fd.execute([x, y] if op == "add" else [x])
    expected = x + y if op == "add" else x.sum(1)
    assert torch.equal(res, expected), f"{(res != expected).sum()} of {res.numel()} differ"


# --- NumPy's warnings stay inside -------------------------------------------------------------

SPECIAL = torch.tensor([[float("nan"), float("inf"), -float("inf"), 0.0, 1.0, -1.0, 0.0, 3.0]])
DIVISORS = torch.tensor([[0.0, 0.0, float("inf"), 0.0, 0.0, float("nan"), -0.0, float("inf")]])
CASES = {
    "div": (lambda fd, a, b: fd.ops.div(a, b), torch.div),
    "fmod": (lambda fd, a, b: fd.ops.fmod(a, b), torch.fmod),
    "exp": (
        lambda fd, a, b: fd.ops.exp(fd.ops.mul(a, fd.define_scalar(100.0))),
        lambda a, b: torch.exp(a * 100.0),
    ),
    "log": (lambda fd, a, b: fd.ops.log(fd.ops.sub(a, b)), lambda a, b: torch.log(a - b)),
    "sum of div": (
        lambda fd, a, b: fd.ops.sum(fd.ops.div(a, b), dims=[1]),
        lambda a, b: torch.div(a, b).sum(1),
    ),
}


@pytest.mark.parametrize("shape", ["special", "empty"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_no_numpy_warning_reaches_the_user(case, shape):
    build, reference = CASES[case]
    a, b = (SPECIAL, DIVISORS) if shape == "special" else (torch.empty(0, 8), torch.empty(0, 8))
    with FusionDefinition() as fd:
        fd.add_output(build(fd, fd.from_pytorch(a), fd.from_pytorch(b)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (res,) = fd.execute([a, b])
    assert [str(w.message) for w in caught] == []
    torch.testing.assert_close(res, reference(a, b), equal_nan=True)


# --- the interpret knob -----------------------------------------------------------------------


def test_a_module_loaded_under_triton_interpret_still_compiles_and_interprets(monkeypatch):
    """With ``TRITON_INTERPRET=1`` in effect, ``@triton.jit`` makes interpreted functions;
    the loaded module must still hold ``JITFunction`` objects (and leave the knob alone)."""
    monkeypatch.setattr(triton.knobs.runtime, "interpret", True)
    kernel = load_kernel(CAST + f"# {uuid.uuid4().hex}\n", "cast_kernel")
    assert triton.knobs.runtime.interpret is True
    assert isinstance(kernel.jit, JITFunction)
    x, out = torch.randn(100, dtype=torch.float64), torch.empty(100)
    kernel.for_device("cpu")[(1,)](x, out, 100, BLOCK=128)
    assert torch.equal(out, x.float())


def test_loading_never_flips_the_interpret_knob(monkeypatch):
    seen = []
    original = type(triton.knobs.runtime).__setattr__

    def record(self, name, value):
        seen.append(name)
        original(self, name, value)

    monkeypatch.setattr(type(triton.knobs.runtime), "__setattr__", record)
    kernel = load_kernel(CAST + f"# {uuid.uuid4().hex}\n", "cast_kernel")
    x, out = torch.randn(10), torch.empty(10, dtype=torch.float64)
    kernel.for_device("cpu")[(1,)](x, out, 10, BLOCK=16)
    assert "interpret" not in seen and torch.equal(out, x.double())
