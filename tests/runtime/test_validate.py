"""validate_inputs: every error path (with what its message must name), and the Bindings."""

from __future__ import annotations

import re

import pytest
import torch

from layoutfuse.dtypes import DataType
from layoutfuse.errors import (
    InputCountError,
    InputDeviceError,
    InputDtypeError,
    InputLayoutError,
    InputRankError,
    InputShapeError,
)
from layoutfuse.ir import Fusion, FusionGuard, IterDomain, Scalar, TensorView, Vector, ops
from layoutfuse.ir.ops.shape import stride_order_to_allocation
from layoutfuse.runtime.validate import validate_inputs


def define_tensor(
    f: Fusion, shape, stride_order=None, contiguity=True, dtype=DataType.Float, expanded=()
) -> TensorView:
    """nvFuser's define_tensor: -1 symbolic, 1 broadcast, n static; ``expanded`` dims are
    expanded broadcasts of extent -1/n; stride_order 0 = innermost; contiguity in allocation
    order."""
    ids = []
    for i, s in enumerate(shape):
        ext = None if s == -1 else s
        ids.append(
            IterDomain.broadcast(ext) if i in expanded or s == 1 else IterDomain.iteration(ext)
        )
    tv = TensorView(f, ids, dtype)
    if stride_order is not None or contiguity is not True:
        alloc = ids if stride_order is None else stride_order_to_allocation(ids, stride_order, "")
        tv.set_allocation_domain(alloc, contiguity)
    f.add_input(tv)
    return tv


def fusion_of(*declarations) -> Fusion:
    """A fusion whose inputs are ``declarations`` (kwargs dicts for define_tensor, or a
    DataType for a scalar input)."""
    f = Fusion()
    with FusionGuard(f):
        for d in declarations:
            if isinstance(d, DataType):
                f.add_input(Scalar(f, d))
            else:
                define_tensor(f, **d)
    return f


def raises(exc, fusion, inputs, *fragments):
    with pytest.raises(exc) as info:
        validate_inputs(fusion, inputs)
    for frag in fragments:
        assert frag in str(info.value), f"{frag!r} not in {info.value}"
    return info.value


# --- count, type, rank, dtype, device --------------------------------------------------------
def test_count():
    f = fusion_of({"shape": [-1]}, DataType.Double)
    raises(InputCountError, f, [torch.zeros(3)], "2 inputs", "got 1")


def test_not_a_tensor():
    f = fusion_of({"shape": [-1]})
    raises(InputDtypeError, f, [3.0], "input 0 (T0)", "torch.Tensor", "float")


def test_rank():
    f = fusion_of({"shape": [-1]}, {"shape": [-1, 4]})
    raises(
        InputRankError,
        f,
        [torch.zeros(2), torch.zeros(2, 4, 1)],
        "input 1 (T1)",
        "expected rank 2",
        "[?, 4]",
        "got rank 3",
        "(2, 4, 1)",
    )


def test_dtype():
    f = fusion_of({"shape": [-1], "dtype": DataType.Float})
    raises(
        InputDtypeError,
        f,
        [torch.zeros(3, dtype=torch.float16)],
        "input 0 (T0)",
        "Float",
        "torch.float32",
        "got torch.float16",
    )


def test_device_mismatch():
    f = fusion_of({"shape": [-1]}, {"shape": [-1]})
    x = torch.zeros(3)  # on the default device
    raises(
        InputDeviceError,
        f,
        [x, torch.zeros(3, device="meta")],
        "input 1 (T1) is on meta",
        f"input 0 (T0) is on {x.device}",
    )


def test_device_argument_mismatch():
    f = fusion_of({"shape": [-1]})
    x = torch.zeros(3)  # on the default device
    with pytest.raises(
        InputDeviceError, match=rf"input 0 \(T0\) is on {re.escape(str(x.device))}.*meta"
    ):
        validate_inputs(f, [x], device="meta")


@pytest.mark.parametrize("other", ["meta", "default"])
def test_cpu_scalar_tensors_may_sit_beside_any_device(other):
    f = fusion_of({"shape": []}, {"shape": [-1]})
    y = torch.zeros(3, device=None if other == "default" else other)
    b = validate_inputs(f, [torch.tensor(2.0, device="cpu"), y])
    assert b.device == y.device


# --- sizes and broadcast dims ---------------------------------------------------------------------
def test_static_size():
    f = fusion_of({"shape": [-1, 4]})
    raises(
        InputShapeError, f, [torch.zeros(2, 5)], "input 0 (T0) dim 1", "expected size 4", "got 5"
    )


def test_broadcast_dim_must_have_size_one():
    f = fusion_of({"shape": [1, -1]})
    raises(
        InputShapeError,
        f,
        [torch.zeros(3, 4)],
        "input 0 (T0) dim 0",
        "broadcast",
        "expected size 1",
        "got 3",
    )


def test_expanded_dim_must_have_stride_zero():
    f = fusion_of({"shape": [-1, -1], "expanded": (1,)})
    validate_inputs(f, [torch.zeros(2, 1).expand(2, 3)])
    raises(
        InputLayoutError,
        f,
        [torch.zeros(2, 3)],
        "input 0 (T0)",
        "dim 1",
        "expanded broadcast",
        "stride 0",
        "got stride 1",
    )


def test_expanded_dim_static_extent():
    f = fusion_of({"shape": [-1, 3], "expanded": (1,)})
    raises(
        InputShapeError,
        f,
        [torch.zeros(2, 1).expand(2, 4)],
        "input 0 (T0) dim 1",
        "expected size 3",
        "got 4",
    )


# --- strides against the declared layout ------------------------------------------------------
def test_column_major_declared_row_major_given():
    f = fusion_of({"shape": [-1, -1], "stride_order": [0, 1]})
    validate_inputs(f, [torch.zeros(4, 3).t()])
    raises(
        InputLayoutError,
        f,
        [torch.zeros(3, 4)],
        "input 0 (T0)",
        "strides (4, 1)",
        "stride_order [0, 1]",
        "contiguity (True, True)",
        "dim 0",
        "stride 1",
        "got 4",
    )


def test_contiguous_declared_sliced_given():
    f = fusion_of({"shape": [-1, -1]})
    raises(
        InputLayoutError,
        f,
        [torch.zeros(4, 8)[:, :4]],
        "input 0 (T0)",
        "strides (8, 1)",
        "dim 0",
        "stride 4",
        "got 8",
    )


def test_channels_last():
    f = fusion_of({"shape": [-1, -1, -1, -1], "stride_order": [3, 0, 2, 1]})
    nhwc = torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last)
    validate_inputs(f, [nhwc])
    raises(
        InputLayoutError,
        f,
        [torch.zeros(2, 3, 4, 5)],
        "input 0 (T0)",
        "strides (60, 20, 5, 1)",
        "stride_order [3, 0, 2, 1]",
        "dim 1",
        "stride 1",
        "got 20",
    )


def test_nchw_declared_channels_last_given():
    f = fusion_of({"shape": [-1, -1, -1, -1]})
    nhwc = torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last)
    raises(InputLayoutError, f, [nhwc], "input 0 (T0)", "dim 3", "stride 1", "got 3")


def test_non_contiguous_dims_accept_gaps_but_not_another_order():
    f = fusion_of({"shape": [-1, -1], "contiguity": False})
    validate_inputs(f, [torch.zeros(4, 8)[::2, ::2]])
    raises(
        InputLayoutError,
        f,
        [torch.zeros(4, 3).t()],
        "input 0 (T0)",
        "dim 0 is declared outer to dim 1",
        "smaller stride",
        "1 < 3",
    )


def test_mixed_contiguity_checks_against_the_next_inner_dim():
    # allocation order (0, 1, 2), contiguity (True, False, True)
    f = fusion_of(
        {"shape": [-1, -1, -1], "stride_order": [2, 1, 0], "contiguity": [True, False, True]}
    )
    base = torch.zeros(2, 3, 8)
    validate_inputs(f, [base[:, :, :4].contiguous()[:, :, :]])
    validate_inputs(f, [torch.zeros(2, 6, 4)[:, ::2, :]])  # dim 1 strided: fine
    raises(
        InputLayoutError,
        f,
        [torch.zeros(4, 3, 4)[::2]],  # dim 0 not dense over dim 1
        "dim 0",
        "stride 12",
        "got 24",
    )


@pytest.mark.parametrize(
    "tensor",
    [
        torch.zeros(3, 4)[1:2],  # size-1 dim, stride 4
        torch.zeros(1, 4).as_strided((1, 4), (100, 1)),
        torch.zeros(0, 4).as_strided((0, 4), (1, 7)),  # no elements: any strides
    ],
    ids=["sliced-size-1", "odd-size-1-stride", "empty"],
)
def test_size_one_and_empty_tensors_ignore_strides(tensor):
    f = fusion_of({"shape": [-1, -1]})
    validate_inputs(f, [tensor])


def test_broadcast_dims_do_not_take_part_in_the_order():
    f = fusion_of({"shape": [-1, 1, -1], "stride_order": [0, 1, 2]})  # column-major with a 1
    validate_inputs(f, [torch.zeros(4, 1, 3).permute(2, 1, 0).contiguous().permute(2, 1, 0)])


# --- scalars --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dtype,value,bound",
    [
        (DataType.Double, 2.5, 2.5),
        (DataType.Double, 2, 2.0),
        (DataType.Int, True, 1),
        (DataType.Int, torch.tensor(7), 7),
        (DataType.Bool, False, False),
        (DataType.ComplexDouble, 1.5, 1.5 + 0j),
    ],
)
def test_scalar_values(dtype, value, bound):
    f = fusion_of(dtype)
    b = validate_inputs(f, [value])
    got = b.scalars[f.inputs[0].index]
    assert got == bound and type(got) is type(bound)


@pytest.mark.parametrize(
    "dtype,value,exc,fragments",
    [
        (DataType.Int, 2.5, InputDtypeError, ["input 0 (S0)", "Int", "float 2.5"]),
        (DataType.Bool, 1, InputDtypeError, ["input 0 (S0)", "Bool", "int 1"]),
        (DataType.Double, "x", InputDtypeError, ["input 0 (S0)", "str"]),
        (DataType.Double, torch.zeros(2), InputRankError, ["input 0 (S0)", "0-dim", "(2,)"]),
        (DataType.Int, torch.tensor(1.5), InputDtypeError, ["input 0 (S0)", "float 1.5"]),
    ],
)
def test_scalar_errors(dtype, value, exc, fragments):
    raises(exc, fusion_of(dtype), [value], *fragments)


# --- bindings -------------------------------------------------------------------------------------
def test_bindings_of_symbolic_dims_through_ops():
    f = Fusion()
    with FusionGuard(f):
        x = define_tensor(f, [-1, -1])
        b = define_tensor(f, [-1])
        y = ops.pointwise("add", x, b)  # b broadcast on the left
        s = ops.reduction("sum", y, [0])
        p = ops.permute(y, [1, 0])
        n = ops.size(x, 0)
    inputs = [torch.zeros(2, 3), torch.zeros(3)]
    bind = validate_inputs(f, inputs)
    assert bind.shape(y) == (2, 3) and bind.shape(p) == (3, 2) and bind.shape(s) == (3,)
    assert bind.extent(s.axis(0)) == 2  # the reduced axis keeps its extent
    assert bind.scalar(n) == 2
    assert bind.device == inputs[0].device


def test_bindings_of_shape_arguments_from_scalar_inputs():
    f = Fusion()
    with FusionGuard(f):
        x = define_tensor(f, [-1])
        rows, cols = Scalar(f, DataType.Int), Scalar(f, DataType.Int)
        f.add_input(rows)
        f.add_input(cols)
        r = ops.reshape(x, [rows, cols])
        e = ops.broadcast_in_dim(x, [ops.pointwise("mul", rows, 2), ops.size(x, 0)], [1])
        full = ops.full([cols], 0.0, DataType.Float)
        io = ops.iota(rows)
    bind = validate_inputs(f, [torch.zeros(6), 2, 3])
    assert bind.shape(r) == (2, 3) and bind.shape(e) == (4, 6)
    assert bind.shape(full) == (3,) and bind.shape(io) == (2,)
    raises(
        InputShapeError, f, [torch.zeros(6), 4, 2], "reshape", "(6 elements)", "[4, 2] (8 elements)"
    )


def test_reshape_infers_minus_one_at_run_time():
    f = Fusion()
    with FusionGuard(f):
        x = define_tensor(f, [-1])
        rows = Scalar(f, DataType.Int)
        f.add_input(rows)
        r = ops.reshape(x, [rows, 2])
    assert validate_inputs(f, [torch.zeros(6), -1]).shape(r) == (3, 2)
    raises(InputShapeError, f, [torch.zeros(5), -1], "reshape", "cannot infer -1")


def test_vector_input():
    f = Fusion()
    with FusionGuard(f):
        x = define_tensor(f, [-1])
        v = Vector(f, [Scalar(f, DataType.Int), Scalar(f, DataType.Int)])
        f.add_input(v)
        r = ops.reshape(x, v)
    assert validate_inputs(f, [torch.zeros(6), [3, 2]]).shape(r) == (3, 2)
    raises(InputRankError, f, [torch.zeros(6), [3]], "input 1 (V", "2 ints")


def test_symbolic_dims_that_meet_must_agree():
    f = Fusion()
    with FusionGuard(f):
        ops.pointwise("add", define_tensor(f, [-1]), define_tensor(f, [-1]))
    raises(
        InputShapeError,
        f,
        [torch.zeros(3), torch.zeros(4)],
        "add",
        "dim 0",
        "input 0 (T0) dim 0 is 3",
        "input 1 (T1) dim 0 is 4",
    )
    err = raises(InputShapeError, f, [torch.zeros(4), torch.zeros(1)], "is 1")
    assert "not a broadcast dim" in str(err)


def test_static_extent_in_the_fusion_contradicted_by_the_inputs():
    f = Fusion()
    with FusionGuard(f):
        x = define_tensor(f, [-1])
        ops.pointwise("add", x, define_tensor(f, [4]))
    raises(InputShapeError, f, [torch.zeros(5), torch.zeros(4)], "is 5", "is 4")


def test_expand_of_a_non_broadcast_dim_at_run_time():
    f = Fusion()
    with FusionGuard(f):
        x = define_tensor(f, [-1])
        n = Scalar(f, DataType.Int)
        f.add_input(n)
        ops.broadcast_in_dim(x, [n], [0])
    assert validate_inputs(f, [torch.zeros(3), 3])
    raises(InputShapeError, f, [torch.zeros(3), 5], "input dim 0", "extent 3", "cannot become 5")


def test_meta_tensors_bind_without_data():
    f = fusion_of({"shape": [-1, -1], "stride_order": [0, 1]})
    t = torch.empty(5, 7, device="meta").t()
    assert validate_inputs(f, [t]).shape(f.inputs[0]) == (7, 5)
