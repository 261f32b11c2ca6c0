"""A float tensor to a constant power of 2 or 3 is a product (``codegen.values``).

libdevice's ``pow`` costs some 40 instructions an element, and Thunder's GELU backward
squares its input with ``pow(x, 2.0)``. torch computes a tensor to a scalar power of 2
or 3 as ``x * x`` (``x * x * x``); so does the kernel, in Float for 16-bit floats and
rounded once, as nvFuser computes them. The tests check values
(bit for bit where one rounding decides them: signed zeros, infinities, NaN, overflow,
underflow) against torch for every float dtype, that other exponents and runtime
exponents keep ``pow``, and the sm_90 PTX: no call into libdevice's pow.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

EDGES = [0.0, -0.0, 1.5, -2.25, float("inf"), -float("inf"), float("nan"), 3e20, 1e-30, -7.0]


def _pow(x: torch.Tensor, exponent, runtime: bool = False):
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        e = fd.define_scalar(exponent) if not runtime else fd.define_scalar(dtype=None)
        fd.add_output(fd.ops.pow(t, e))
    (out,) = fd.execute([x] if not runtime else [x, exponent])
    return fd, out


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (
        a.dtype == b.dtype
        and torch.equal(a.isnan(), b.isnan())
        and torch.equal(
            torch.nan_to_num(a).view(torch.uint8), torch.nan_to_num(b).view(torch.uint8)
        )
    )


@pytest.mark.parametrize("exponent", [2, 3, 2.0, 3.0])
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str
)
def test_squares_and_cubes_match_torch(dtype, exponent):
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.tensor(EDGES), 4 * torch.randn(64, generator=g)]).to(dtype)
    fd, out = _pow(x, exponent)
    # 16-bit floats: the power in Float, rounded once (nvFuser's computation; torch's CPU
    # bf16 cube rounds the square too)
    want = torch.pow(x.float(), exponent).to(dtype) if x.element_size() == 2 else x**exponent
    assert _same(out, want), (out, want)
    src = fd.last_triton_code()
    assert "lib.pow" not in src and " * (" in src


@pytest.mark.parametrize("exponent", [2.5, 4.0, -1.0, 0.5])
def test_other_exponents_keep_pow(exponent):
    x = torch.rand(32) + 0.5
    fd, out = _pow(x, exponent)
    torch.testing.assert_close(out, torch.pow(x, exponent))
    assert "lib.pow" in fd.last_triton_code()


def test_a_runtime_exponent_keeps_pow():
    x = torch.rand(32) + 0.5
    fd, out = _pow(x, 2.0, runtime=True)
    torch.testing.assert_close(out, torch.pow(x, 2.0))
    assert "lib.pow" in fd.last_triton_code()


def test_sm90_squares_without_libdevice_pow():
    fd, _ = _pow(torch.randn(1024), 2.0)
    (art,) = compile_last_run(fd.executor())
    assert "__nv_powf" not in art.ptx and "lg2.approx" not in art.ptx
    assert "mul.f32" in art.ptx or "mul.rn.f32" in art.ptx
