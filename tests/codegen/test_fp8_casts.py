"""fp8 (``DataType.Float8_e4m3fn``, ``DataType.Float8_e5m2``) as cast targets and sources and
as tensor dtypes of inputs and outputs, against torch's ``.to()``, bit for bit.

Results are rounded as torch 2.13 rounds them (to nearest even; e4m3fn saturates to +-448,
e5m2 overflows to inf; NaN keeps its sign), by the kernels' own conversion
(``codegen/helpers.py``), on the CPU interpreter and compiled for sm_90 alike; reading fp8
is exact (every one of the 256 bit patterns). A cast to fp8 inside a kernel rounds there: a
round trip through fp8 in one fusion equals torch's. Inputs come in several layouts
(permuted, sliced, expanded), and every kernel is compiled for sm_90.
"""

from __future__ import annotations

import math

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import from_torch
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import assert_ran_kernels

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
]

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
FP8 = (E4M3, E5M2)
F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I32, I64, BOOL = torch.int32, torch.int64, torch.bool
SOURCES = (F32, F64, F16, BF16, I32, I64, BOOL)


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def bits(x: torch.Tensor) -> torch.Tensor:
    return x.cpu().contiguous().view(torch.uint8)


def assert_same_bits(out: torch.Tensor, expected: torch.Tensor) -> None:
    assert out.dtype == expected.dtype
    bad = bits(out) != bits(expected)
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.numel()} differ: got {bits(out)[bad][:8].tolist()}, "
        f"want {bits(expected)[bad][:8].tolist()}"
    )


def torch_fp8(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x.to(dtype)`` as torch 2.13 converts (the rule layoutfuse follows on every device):
    float8_e4m3fn saturates past 448 and at inf (torch 2.11's CUDA conversion gives NaN
    there). A NaN's sign is not compared (:func:`canonical_nan`): the GPU's float
    arithmetic does not keep it."""
    out = x.to(dtype)
    if x.dtype is torch.bool:
        return out
    if dtype is E4M3:
        big = (x.double().abs() > 464) & ~x.isnan()  # rounds past 448 (inf included)
        out = torch.where(big, torch.where(x > 0, 448.0, -448.0).to(x.device).to(dtype), out)
    return out


def canonical_nan(x: torch.Tensor) -> torch.Tensor:
    """``x`` with every NaN made +NaN (fp8: bits 0x7F)."""
    u8 = x.view(torch.uint8)
    return torch.where(x.float().isnan(), torch.full_like(u8, 0x7F), u8).view(x.dtype)


def f32_values() -> torch.Tensor:
    """float32 values around every fp8 boundary: ties, the largest finite and past it, the
    subnormals and below them, inf, NaN of both signs, and random values of many scales."""
    g = torch.Generator().manual_seed(0)
    scales = [2.0**k for k in range(-22, 18, 3)]
    rand = torch.cat([torch.randn(300, generator=g) * s for s in scales])
    special = [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 448.0, 464.0, 464.001]
    special += [480.0, 1e30, 57344.0, 61439.0, 61440.0, 65536.0, 2.0**-6, 2.0**-9, 2.0**-10]
    special += [1.5 * 2.0**-9, 2.5 * 2.0**-9, 2.0**-14, 2.0**-16, 2.0**-17, 3 * 2.0**-17]
    special += [1.0625, 1.1875, 1.125 + 2.0**-5, 3.0 * 2.0**-16]  # e4m3 / e5m2 ties
    special = torch.tensor(special, dtype=F64).to(F32)
    return torch.cat([rand, special, -special]).to(torch.get_default_device())


def source_values(src: torch.dtype) -> torch.Tensor:
    x = f32_values()
    if src is BOOL:
        return x > 0
    if not src.is_floating_point:
        return torch.nan_to_num(x, nan=0.0).clamp(-1e6, 1e6).round().to(src)
    return x.to(src)


def run(build, tensors):
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(t) for t in tensors]
        outs = build(fd, *handles)
        for o in outs if isinstance(outs, tuple) else (outs,):
            fd.add_output(o)
    res = fd.execute(list(tensors))
    assert_ran_kernels(fd)
    for art in compile_last_run(fd.executor()):
        assert f".entry {art.name}" in art.ptx
    return res


@pytest.mark.parametrize("dst", FP8, ids=dtype_id)
@pytest.mark.parametrize("src", SOURCES, ids=dtype_id)
def test_cast_to_fp8(src, dst):
    x = source_values(src)
    (out,) = run(lambda fd, t: fd.ops.cast(t, from_torch(dst)), [x])
    assert_same_bits(canonical_nan(out), canonical_nan(torch_fp8(x, dst)))


def all_fp8(dtype: torch.dtype) -> torch.Tensor:
    return torch.arange(256, dtype=torch.uint8).view(dtype).to(torch.get_default_device())


@pytest.mark.parametrize("dst", [F32, F64, F16, BF16, I32, I64, BOOL], ids=dtype_id)
@pytest.mark.parametrize("src", FP8, ids=dtype_id)
def test_cast_from_fp8(src, dst):
    """Every bit pattern (NaN left out for integer targets: undefined there; NaN's sign is
    the target's own conversion's, as for any NaN)."""
    x = all_fp8(src)
    if not dst.is_floating_point and dst is not BOOL:
        x = x[~x.float().isnan()]
    (out,) = run(lambda fd, t: fd.ops.cast(t, from_torch(dst)), [x])
    expected = x.to(dst)
    assert out.dtype == dst
    if dst.is_floating_point:
        same = (out.cpu() == expected.cpu()) | (out.cpu().isnan() & expected.cpu().isnan())
        same &= (out.cpu().signbit() == expected.cpu().signbit()) | expected.cpu().isnan()
        assert same.all(), f"got {out[~same][:6].tolist()}, want {expected[~same][:6].tolist()}"
    else:
        assert torch.equal(out.cpu(), expected.cpu())


@pytest.mark.parametrize("dtype", FP8, ids=dtype_id)
def test_round_trip_in_one_kernel(dtype):
    """cast(cast(x, fp8), Float): rounded at the inner cast, as torch's ``x.to(fp8).float()``."""
    x = f32_values()
    (out,) = run(lambda fd, t: fd.ops.cast(fd.ops.cast(t, from_torch(dtype)), DataType.Float), [x])
    expected = torch_fp8(x, dtype).float()
    same = (out.cpu() == expected.cpu()) | (out.cpu().isnan() & expected.cpu().isnan())
    assert same.all(), f"got {out[~same][:6].tolist()}, want {expected[~same][:6].tolist()}"


LAYOUTS = ("contiguous", "permuted", "sliced", "expanded")


def laid_out(x: torch.Tensor, layout: str) -> torch.Tensor:
    """A [16, 16] fp8 tensor of ``x``'s values (``x`` 1-D, 256 elements) in ``layout``."""
    if layout == "contiguous":
        return x.reshape(16, 16)
    if layout == "permuted":
        return x.reshape(16, 16).t().contiguous().t()
    if layout == "sliced":
        buf = torch.zeros(16, 32, dtype=torch.uint8, device=x.device).view(x.dtype)
        buf[:, 1::2] = x.reshape(16, 16)
        return buf[:, 1::2]
    return x[:16].reshape(1, 16).expand(16, 16)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FP8, ids=dtype_id)
def test_fp8_inputs_and_outputs(dtype, layout):
    """An fp8 tensor in, arithmetic in Float, an fp8 result and a Float one out."""
    x = laid_out(all_fp8(dtype), layout)
    y = laid_out(all_fp8(dtype).view(torch.uint8).flip(0).view(dtype), layout)
    mul, add = run(
        lambda fd, a, b: (fd.ops.mul(a, b), fd.ops.cast(fd.ops.add(a, b), DataType.Float)), [x, y]
    )
    assert_same_bits(mul, (x.float() * y.float()).to(dtype))
    expected = x.float() + y.float()
    same = (add.cpu() == expected.cpu()) | (add.cpu().isnan() & expected.cpu().isnan())
    assert same.all()


@pytest.mark.parametrize("dtype", FP8, ids=dtype_id)
def test_sum_of_fp8(dtype):
    """A reduction reads fp8 (masked lanes read 0.0) and accumulates in Float."""
    x = all_fp8(dtype)
    x = x[x.float().isfinite()][:240].reshape(8, 30)
    (out,) = run(lambda fd, t: fd.ops.sum(t, dims=[1], dtype=DataType.Float), [x])
    torch.testing.assert_close(out, x.float().sum(1))
