"""ComplexLowering: the real fusion of a fusion with complex values (``passes/complex_lowering.py``).

Checked without kernels: the lowered fusion has no complex value, its inputs and outputs
are the parts of the original ones (two for a complex one, declared strided in the same
memory order), and torch's evaluation of it on the parts of the inputs gives the parts of
torch's evaluation of the original fusion, for every rule of ``ir/ops/complex.py``.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.dtypes import COMPLEX, DataType
from layoutfuse.ir.ops.complex import PAIR_RULES
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.passes.complex_lowering import lower_complex
from layoutfuse.reference import run_reference
from layoutfuse.runtime.complex_parts import split_inputs


def sample(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.view_as_complex(torch.randn([*shape, 2], generator=g, dtype=torch.float64)).to(
            dtype
        )
    return (torch.randn(shape, generator=g, dtype=torch.float64) + 3).to(dtype)


def check_lowering(fd: FusionDefinition, inputs: list) -> None:
    fusion = fd.executor().fusion
    low = lower_complex(fusion)
    assert low is not None
    assert not any(v.dtype in COMPLEX for v in low.fusion.vals)
    for v, pos in zip(fusion.inputs, low.inputs):
        assert len(pos) == (2 if v.dtype in COMPLEX else 1)
    want = run_reference(fusion, inputs)
    got = run_reference(low.fusion, split_inputs(low, inputs))
    for w, pos in zip(want, low.outputs):
        parts = [got[p] for p in pos]
        value = torch.complex(*parts) if len(parts) == 2 else parts[0]
        torch.testing.assert_close(value, w, rtol=1e-6, atol=1e-6)


def test_real_fusion_is_not_lowered():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(t))
    assert lower_complex(fd.executor().fusion) is None


def test_complex_input_becomes_two_strided_parts_in_its_memory_order():
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1, -1, -1],
            contiguity=[True] * 3,
            dtype=DataType.ComplexDouble,
            stride_order=[0, 2, 1],
        )
        fd.add_output(fd.ops.real(t))
    low = lower_complex(fd.executor().fusion)
    assert low is not None
    re, im = low.fusion.inputs
    src = fd.executor().fusion.inputs[0]
    for part in (re, im):
        assert part.dtype is DataType.Double
        assert part.allocation_order == src.allocation_order
        assert part.contiguity == (False, False, False)
    assert low.inputs == ((0, 1),) and low.outputs == ((0,),)


BINARY = ["add", "sub", "mul", "div", "truediv", "eq", "ne"]


@pytest.mark.parametrize("other", [torch.complex64, torch.float64, torch.int64, "scalar"], ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_rules_against_torch(op, other):
    z = sample((3, 4), torch.complex64, 0)
    with FusionDefinition() as fd:
        tz = fd.from_pytorch(z)
        if other == "scalar":
            args, inputs = [tz, fd.define_scalar(0.5 - 1.5j)], [z]
        else:
            x = sample((3, 4), other, 1)
            args, inputs = [fd.from_pytorch(x), tz], [z, x]
            args.reverse()
        fd.add_output(getattr(fd.ops, op)(*args))
    check_lowering(fd, inputs)


UNARY = ["neg", "abs", "real", "imag", "reciprocal", "exp", "log", "sqrt", "isnan", "isinf"]
UNARY += ["isfinite"]


@pytest.mark.parametrize("op", UNARY)
def test_unary_rules_against_torch(op):
    z = sample((2, 5), torch.complex128, 2)
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(z)))
    check_lowering(fd, [z])


def test_where_cast_sum_shape_and_full():
    z = sample((3, 4), torch.complex64, 3)
    r = sample((3, 4), torch.float32, 4)
    with FusionDefinition() as fd:
        tz, tr = fd.from_pytorch(z), fd.from_pytorch(r)
        c = fd.ops.cast(tr, DataType.ComplexDouble)
        fd.add_output(fd.ops.where(fd.ops.gt(tr, fd.define_scalar(3.0)), tz, c))
        fd.add_output(fd.ops.sum(fd.ops.permute(tz, [1, 0]), dims=[1]))
        fd.add_output(
            fd.ops.add(fd.ops.full([3, 4], fd.define_scalar(1 + 2j), DataType.ComplexFloat), tz)
        )
        fd.add_output(fd.ops.cast(tz, DataType.Bool))
        v, m = fd.ops.var_mean(tz, dims=[0], correction=1)
        fd.add_output(v)
        fd.add_output(m)
    check_lowering(fd, [z, r])


def test_every_pair_rule_is_exercised_here():
    covered = set(BINARY) | set(UNARY) | {"where", "cast"}
    assert covered == set(PAIR_RULES)
