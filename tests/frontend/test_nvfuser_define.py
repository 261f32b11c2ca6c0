"""define_scalar, define_vector, add_output, and the records they print."""

import pytest
import torch

from layoutfuse.ir import TensorView
from layoutfuse.nvfuser import DataType, FusionDefinition, Scalar, Vector


def body(fd) -> list[str]:
    """The printed records, one per line, without the def line."""
    return [line.strip() for line in repr(fd).splitlines()[2:] if line.strip()]


@pytest.mark.parametrize(
    "value, dtype, printed",
    [
        (1, None, "fd.define_scalar(1, dtype=DataType.Int)"),
        (1.0, None, "fd.define_scalar(1.00000, dtype=DataType.Double)"),
        (True, None, "fd.define_scalar(True, dtype=DataType.Bool)"),
        (
            complex(3.0, 0.5),
            None,
            "fd.define_scalar(3.00000+0.500000j, dtype=DataType.ComplexDouble)",
        ),
        (1, DataType.Double, "fd.define_scalar(1.00000, dtype=DataType.Double)"),
        (2.7, DataType.Int, "fd.define_scalar(2, dtype=DataType.Int)"),
        (0.1, DataType.Float, "fd.define_scalar(0.100000, dtype=DataType.Float)"),
        (1 / 3, None, "fd.define_scalar(0.3333333333333333, dtype=DataType.Double)"),
        (float("nan"), None, 'fd.define_scalar(float("nan"), dtype=DataType.Double)'),
        (float("-inf"), None, 'fd.define_scalar(float("-inf"), dtype=DataType.Double)'),
    ],
)
def test_define_scalar_constant(value, dtype, printed):
    with FusionDefinition() as fd:
        s = fd.define_scalar(value, dtype=dtype) if dtype else fd.define_scalar(value)
        fd.add_output(s)
    assert body(fd)[0] == f"S0 = {printed}"
    assert fd.inputs() == []
    assert s._val.is_constant


@pytest.mark.parametrize(
    "call",
    [
        lambda fd: fd.define_scalar(),
        lambda fd: fd.define_scalar(DataType.Double),
        lambda fd: fd.define_scalar(dtype=DataType.Double),
        lambda fd: fd.define_scalar(None, dtype=DataType.Double),
    ],
)
def test_define_scalar_input_forms(call):
    with FusionDefinition() as fd:
        s = call(fd)
        fd.add_output(s)
    assert body(fd) == ["S0 = fd.define_scalar(None, dtype=DataType.Double)", "fd.add_output(S0)"]
    assert fd.inputs() == [0]
    assert isinstance(s, Scalar) and not s._val.is_constant


def test_define_constant_is_a_deprecated_alias():
    with FusionDefinition() as fd:
        with pytest.warns(DeprecationWarning):
            s = fd.define_constant(2.0)
        fd.add_output(s)
    assert body(fd)[0] == "S0 = fd.define_scalar(2.00000, dtype=DataType.Double)"


def test_define_vector_input_and_constant():
    with FusionDefinition() as fd:
        v = fd.define_vector(2)
        s = fd.define_scalar(None, dtype=DataType.Int)
        w = fd.define_vector([3, s], dtype=DataType.Int)
        t = fd.ops.full(v, fd.define_scalar(1.0), DataType.Float)
        fd.add_output(t)
    assert body(fd)[:5] == [
        "S0 = fd.define_scalar(None, dtype=DataType.Int)",
        "S1 = fd.define_scalar(None, dtype=DataType.Int)",
        "V2 = fd.define_vector([S0, S1], dtype=DataType.Int)",
        "S3 = fd.define_scalar(None, dtype=DataType.Int)",
        "V5 = fd.define_vector([3, S3], dtype=DataType.Int)",  # S4 is the inline 3
    ]
    assert isinstance(v, Vector) and v.size == 2 and w.size == 2 and v.index == 2
    assert fd.inputs() == [0, 1, 3]


def test_execute_flattens_vector_inputs(reference_executor):
    with FusionDefinition() as fd:
        v = fd.define_vector(2)
        t = fd.ops.full(v, fd.define_scalar(1.5), DataType.Float)
        fd.add_output(t)
    (out,) = fd.execute([(2, 3)])
    assert torch.equal(out, torch.full((2, 3), 1.5, device=out.device))


def test_inline_shape_list_prints_in_place():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        t1 = fd.ops.reshape(t0, [2, 1, t0.size(1)])
        fd.add_output(t1)
    # S1 = size; the inline 2, 1 and the vector take S2, S3, V4; the output is T5
    assert body(fd)[1:3] == [
        "S1 = fd.ops.size(T0, dim=1)",
        "T5 = fd.ops.reshape(T0, new_shape=[2, 1, S1])",
    ]


def test_add_output_scalar_and_outputs_list(reference_executor):
    with FusionDefinition() as fd:
        a = fd.define_scalar(None, dtype=DataType.Int)
        b = fd.define_scalar(3)
        c = fd.ops.mul(a, b)
        fd.add_output(c)
    assert body(fd)[-1] == "fd.add_output(S2)"
    assert fd.outputs() == [2]
    (out,) = fd.execute([4])
    assert int(out) == 12


def test_add_output_alias_input(reference_executor):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True])
        t1 = fd.ops.set(fd.ops.neg(t0))
        fd.add_output(t1, alias_input=t0)
    assert body(fd)[-1] == "fd.add_output(T2, T0)"
    assert fd.outputs() == []
    x = torch.arange(4.0)
    assert fd.execute([x]) == []
    assert torch.equal(x, -torch.arange(4.0))


def test_add_output_stride_order_sets_allocation_not_a_copy():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        t1 = fd.ops.exp(t0)
        fd.add_output(t1, stride_order=[0, 2, 1])
    tv = t1._val
    assert fd._entry.fusion.output_vals == [tv]  # the same TensorView, no copy
    assert tv.allocation_order == (1, 2, 0)  # alloc[2 - so[i]] = logical[i]
    assert body(fd)[-1] == "fd.add_output(T1, stride_order=[0, 2, 1])"


def test_add_output_stride_order_on_reduction_keeps_reduction_axes():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1, stride_order=[0, 1])
    tv = t1._val
    assert tv.allocation_order == (1, 0)
    reduced = [d for d in tv.allocation.order if d.is_reduction]
    assert len(reduced) == 1 and tv.contiguity == (True, True)


def test_add_output_stride_order_of_an_input_copies_it():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(t0, stride_order=[0, 1])
    fusion = fd._entry.fusion
    out = fusion.output_vals[0]
    assert isinstance(out, TensorView) and out is not t0._val
    assert t0._val.allocation_order == (0, 1) and out.allocation_order == (1, 0)


def test_stride_order_positional_list():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=True)
        t1 = fd.ops.abs(t0)
        fd.add_output(t1, [0, 1])
    assert body(fd)[-1] == "fd.add_output(T1, stride_order=[0, 1])"


def test_ops_stride_order():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=True)
        t1 = fd.ops.stride_order(t0, [-1, 0, 1])
        fd.add_output(t1)
    assert body(fd)[1] == "T1 = fd.ops.stride_order(T0, stride_order=[2, 0, 1])"
    assert t1._val.allocation_order == (0, 2, 1)
