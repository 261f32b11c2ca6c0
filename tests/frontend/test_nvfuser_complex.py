"""Complex tensors through the nvFuser frontend: DataType.ComplexFloat / ComplexDouble,
fd.ops.real / imag (nvFuser's names, printed as nvFuser prints them), the execute-time
checks, the C++ test API's functions, and what ``fd.segment`` and the schedule show."""

from __future__ import annotations

import pytest
import torch

from layoutfuse import testing_api as api
from layoutfuse.dtypes import from_torch, to_torch
from layoutfuse.errors import InputDtypeError, InputLayoutError
from layoutfuse.ir import Fusion, FusionGuard
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]


@pytest.mark.parametrize(
    "dtype,torch_dtype",
    [(DataType.ComplexFloat, torch.complex64), (DataType.ComplexDouble, torch.complex128)],
)
def test_dtype_names_map_to_torch(dtype, torch_dtype):
    assert to_torch(dtype) is torch_dtype and from_torch(torch_dtype) is dtype
    assert repr(dtype) == f"DataType.{dtype.value}"


def column_major_definition():
    with FusionDefinition() as fd:
        a = fd.define_tensor(
            shape=[-1, -1],
            contiguity=[True, True],
            dtype=DataType.ComplexDouble,
            stride_order=[0, 1],
        )
        fd.add_output(fd.ops.sum(fd.ops.mul(a, a), dims=[0]))
        fd.add_output(fd.ops.real(a))
        fd.add_output(fd.ops.imag(fd.ops.neg(a)))
    return fd


def test_real_and_imag_are_printed_as_nvfuser_does():
    text = repr(column_major_definition())
    assert "dtype=DataType.ComplexDouble" in text
    assert "fd.ops.real(T0)" in text and "fd.ops.imag(T" in text


def test_declared_layout_is_checked_and_kept():
    fd = column_major_definition()
    x = torch.randn(16, 8, dtype=torch.complex128).t()  # column-major [8, 16]
    s, re, im = fd.execute([x])
    torch.testing.assert_close(s, (x * x).sum(0))
    assert re.dtype == im.dtype == torch.float64
    assert re.stride() == im.stride() == (1, 8)  # the column-major input's order
    assert torch.equal(re, x.real) and torch.equal(im, (-x).imag)
    with pytest.raises(InputLayoutError, match="input 0"):
        fd.execute([torch.randn(8, 16, dtype=torch.complex128)])  # row-major: contradicts
    with pytest.raises(InputDtypeError, match=r"ComplexDouble \(torch.complex128\)"):
        fd.execute([x.to(torch.complex64)])


def test_segment_and_schedule_of_a_complex_sum():
    fd = column_major_definition()
    x = torch.randn(16, 8, dtype=torch.complex128).t()
    segments = fd.segment([x])
    # the sum of the parts: two reductions of the same rows, read once in one kernel
    assert any(seg["ops"].count("sum") == 2 for seg in segments)
    fd.execute([x])
    assert fd.last_schedule() and "lib.hypot" not in (fd.last_triton_code() or "")


def test_testing_api_has_real_and_imag():
    with FusionGuard(Fusion()) as fusion:
        t = api.make_contig_tensor(2, DataType.ComplexFloat)
        fusion.add_input(t)
        fusion.add_output(api.add(api.real(t), api.imag(t)))
    fec = api.FusionExecutorCache(fusion)
    x = torch.randn(3, 5, dtype=torch.complex64)
    (out,) = fec.run_fusion_with_inputs([x])
    torch.testing.assert_close(out, x.real + x.imag)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize(
    "real_shape,complex_shape",
    [((3, 4), ()), ((), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((4,), (3, 1))],
    ids=str,
)
def test_a_real_and_a_complex_operand_of_other_shapes(op, real_shape, complex_shape):
    """A real operand's parts are (x, 0): where the complex operand broadcasts (a 0-dim
    complex tensor beside a real [3, 4]), the result's imaginary part still covers every
    element (it was stored once along the dims it lacked, the rest left unwritten)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(real_shape, generator=gen)
    z = torch.complex(
        torch.randn(complex_shape, generator=gen), torch.randn(complex_shape, generator=gen)
    )
    with FusionDefinition() as fd:
        tx, tz = fd.from_pytorch(x), fd.from_pytorch(z)
        fd.add_output(getattr(fd.ops, op)(tx, tz))
        fd.add_output(getattr(fd.ops, op)(tz, tx))
    a, b = fd.execute([x, z])
    torch.testing.assert_close(a, getattr(torch, op)(x, z))
    torch.testing.assert_close(b, getattr(torch, op)(z, x))
