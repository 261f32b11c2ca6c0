"""Every definition error: a DefinitionError (a LayoutfuseError and a ValueError) that
names the op or argument at fault; wrong argument types are ArgumentTypeErrors (a
DefinitionError and a TypeError)."""

import pytest
import torch

from layoutfuse.errors import ArgumentTypeError, DefinitionError, InputListError, LayoutfuseError
from layoutfuse.nvfuser import DataType, FusionDefinition


def _tensors(fd):
    """T0: [-1, -1] float, T1: [2, 3] float, T2: [-1, 1] float, T3: [-1] expanded."""
    return (
        fd.define_tensor(shape=[-1, -1], contiguity=True),
        fd.define_tensor(shape=[2, 3], contiguity=True),
        fd.define_tensor(shape=[-1, 1], contiguity=True),
        fd.define_tensor(shape=[-1], contiguity=[None]),
    )


DEFINITION_ERRORS = [
    # define_tensor
    (
        "shape below -1",
        lambda fd, t: fd.define_tensor(shape=[-2], contiguity=[True]),
        r"define_tensor.*-2.*symbolic",
    ),
    (
        "shape not int",
        lambda fd, t: fd.define_tensor(shape=[2.0], contiguity=[True]),
        r"define_tensor: shape\[0\]",
    ),
    (
        "contiguity length",
        lambda fd, t: fd.define_tensor(shape=[-1, -1], contiguity=[True]),
        r"define_tensor: length of contiguity",
    ),
    (
        "contiguity on size-1 dim",
        lambda fd, t: fd.define_tensor(shape=[-1, 1], contiguity=[True, True]),
        r"define_tensor: dim 1 has size 1",
    ),
    (
        "contiguity on size-1 dim, allocation order",
        lambda fd, t: fd.define_tensor(shape=[1, -1], contiguity=[None, True], stride_order=[0, 1]),
        r"define_tensor: dim 0 has size 1.*contiguity\[1\]",
    ),
    (
        "contiguity entry type",
        lambda fd, t: fd.define_tensor(shape=[-1], contiguity=[1]),
        r"define_tensor: contiguity\[0\]",
    ),
    (
        "stride_order length",
        lambda fd, t: fd.define_tensor(shape=[-1, -1], contiguity=True, stride_order=[0]),
        r"define_tensor: stride_order",
    ),
    (
        "stride_order range",
        lambda fd, t: fd.define_tensor(shape=[-1, -1], contiguity=True, stride_order=[0, 2]),
        r"define_tensor: stride_order entry 2",
    ),
    (
        "stride_order duplicates",
        lambda fd, t: fd.define_tensor(shape=[-1, -1], contiguity=True, stride_order=[1, -1]),
        r"define_tensor: stride_order .* duplicated",
    ),
    (
        "CPU non-scalar",
        lambda fd, t: fd.define_tensor(shape=[-1], contiguity=True, is_cpu=True),
        r"define_tensor: CPU non-scalar",
    ),
    (
        "Null dtype",
        lambda fd, t: fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Null),
        r"define_tensor: dtype DataType.Null",
    ),
    (
        "sizes vs strides",
        lambda fd, t: fd.define_tensor(sizes=[2, 3], strides=[1]),
        r"define_tensor: 2 sizes but 1 strides",
    ),
    (
        "negative stride",
        lambda fd, t: fd.define_tensor(sizes=[2, 3], strides=[-3, 1]),
        r"negative stride",
    ),
    (
        "negative size",
        lambda fd, t: fd.define_tensor(sizes=[-2, 3], strides=[3, 1]),
        r"define_tensor: sizes\[0\]",
    ),
    # define_scalar / define_vector
    (
        "scalar input of Null dtype",
        lambda fd, t: fd.define_scalar(None, dtype=DataType.Null),
        r"define_scalar: dtype DataType.Null",
    ),
    (
        "complex as Int",
        lambda fd, t: fd.define_scalar(1j, dtype=DataType.Int),
        r"define_scalar: complex",
    ),
    (
        "vector value below -1",
        lambda fd, t: fd.define_vector([2, -3]),
        r"define_vector: the value -3 at index 1",
    ),
    ("vector size", lambda fd, t: fd.define_vector(-1), r"define_vector: size"),
    (
        "vector dtype",
        lambda fd, t: fd.define_vector([1], dtype=DataType.Float),
        r"define_vector: only DataType.Int",
    ),
    # add_output
    (
        "alias of a non-input",
        lambda fd, t: fd.add_output(t[0], alias_input=fd.ops.neg(t[1])),
        r"add_output: alias_input T\d+ is not a fusion input",
    ),
    (
        "alias with stride_order",
        lambda fd, t: fd.add_output(fd.ops.neg(t[0]), alias_input=t[0], stride_order=[1, 0]),
        r"add_output: stride_order can't be dictated for aliased",
    ),
    (
        "output stride_order not a permutation",
        lambda fd, t: fd.add_output(fd.ops.neg(t[0]), stride_order=[1, 1]),
        r"add_output: stride_order \[1, 1\]",
    ),
    (
        "output stride_order length",
        lambda fd, t: fd.add_output(t[0], stride_order=[0]),
        r"add_output: stride_order \[0\]",
    ),
    (
        "output stride_order negative",
        lambda fd, t: fd.add_output(t[0], stride_order=[-1, 0]),
        r"add_output: stride_order",
    ),
    (
        "scalar output with stride_order",
        lambda fd, t: fd.add_output(fd.define_scalar(1), stride_order=[0]),
        r"add_output: a Scalar output",
    ),
    # ops
    (
        "reduction dim range",
        lambda fd, t: fd.ops.sum(t[0], [2]),
        r"sum: dims \[2\]: dim 2 is out of range for an input of rank 2",
    ),
    (
        "reduction dims repeat",
        lambda fd, t: fd.ops.max(t[0], [0, -2]),
        r"max: dims \[0, -2\] repeat a dim",
    ),
    (
        "var dims range",
        lambda fd, t: fd.ops.var(t[0], [5], 1),
        r"var: dims \[5\]: dim 5 is out of range",
    ),
    (
        "permute not a permutation",
        lambda fd, t: fd.ops.permute(t[0], [0, 0]),
        r"permute: dims \[0, 0\]",
    ),
    ("permute length", lambda fd, t: fd.ops.permute(t[0], [0]), r"permute: dims \[0\]"),
    ("stride_order op", lambda fd, t: fd.ops.stride_order(t[0], [0, 0]), r"stride_order"),
    (
        "stride_order op length",
        lambda fd, t: fd.ops.stride_order(t[0], [0]),
        r"stride_order: stride_order \[0\]",
    ),
    (
        "reshape element count",
        lambda fd, t: fd.ops.reshape(t[1], [4, 2]),
        r"reshape: cannot reshape \[2, 3\]",
    ),
    ("reshape two -1", lambda fd, t: fd.ops.reshape(t[1], [-1, -1]), r"reshape: at most one -1"),
    (
        "broadcast_in_dim order",
        lambda fd, t: fd.ops.broadcast_in_dim(t[0], [2, 3, 4], [1, 0]),
        r"broadcast_in_dim: broadcast_dims \[1, 0\]",
    ),
    (
        "broadcast_in_dim count",
        lambda fd, t: fd.ops.broadcast_in_dim(t[0], [2, 3, 4], [0]),
        r"broadcast_in_dim: broadcast_dims has 1 entries",
    ),
    (
        "broadcast_in_dim extent",
        lambda fd, t: fd.ops.broadcast_in_dim(t[1], [5, 3], [0, 1]),
        r"broadcast_in_dim: input dim 0 has extent 2",
    ),
    ("broadcast flags", lambda fd, t: fd.ops.broadcast(t[0], [True, False]), r"broadcast: "),
    (
        "expand a non-broadcast",
        lambda fd, t: fd.ops.expand(t[1], [4, 3]),
        r"expand: dim 0 has extent 2",
    ),
    ("squeeze a non-1 dim", lambda fd, t: fd.ops.squeeze(t[0], [0]), r"squeeze: dim 0"),
    (
        "squeeze an expanded dim",
        lambda fd, t: fd.ops.squeeze(t[3], [0]),
        r"squeeze: dim 0 is an expanded broadcast",
    ),
    ("size dim range", lambda fd, t: fd.ops.size(t[0], 2), r"size: dim 2 is out of range"),
    ("at index range", lambda fd, t: fd.ops.at(t[0].shape(), 2), r"at: index 2 is out of range"),
    ("cast to Null", lambda fd, t: fd.ops.cast(t[0], DataType.Null), r"cast: dtype DataType.Null"),
    (
        "incompatible extents",
        lambda fd, t: fd.ops.add(t[1], fd.ops.permute(t[1], [1, 0])),
        r"add: operands have incompatible extents",
    ),
    (
        "bitwise op on floats",
        lambda fd, t: fd.ops.bitwise_and(t[0], t[0]),
        r"bitwise_and: operands must be integers",
    ),
    (
        "full negative extent",
        lambda fd, t: fd.ops.full([-1], fd.define_scalar(1.0), DataType.Float),
        r"full: shape \[-1\] has the extent -1 at index 0",
    ),
]


@pytest.mark.parametrize(
    "name, call, match", DEFINITION_ERRORS, ids=[e[0] for e in DEFINITION_ERRORS]
)
def test_definition_error(name, call, match):
    fd = FusionDefinition()
    with pytest.raises(DefinitionError, match=match) as info:
        with fd:
            call(fd, _tensors(fd))
    assert isinstance(info.value, LayoutfuseError) and isinstance(info.value, ValueError)
    assert fd.id() is None  # a failed definition is not cached


TYPE_ERRORS = [
    ("python number operand", lambda fd, t: fd.ops.sub(t[0], 2)),
    ("reduction dims type", lambda fd, t: fd.ops.sum(t[0], "0")),
    ("reduction keyword", lambda fd, t: fd.ops.sum(t[0], axis=[0])),
    ("reduction dtype type", lambda fd, t: fd.ops.sum(t[0], [0], False, "float")),
    ("permute dims type", lambda fd, t: fd.ops.permute(t[0], 1)),
    ("shape arg type", lambda fd, t: fd.ops.reshape(t[0], 6)),
    ("shape entry type", lambda fd, t: fd.ops.reshape(t[0], [2.0, 3])),
    ("iota length", lambda fd, t: fd.ops.iota(5)),
    ("full fill value", lambda fd, t: fd.ops.full([2], 1.0, DataType.Float)),
    ("tensor arg", lambda fd, t: fd.ops.permute(fd.define_scalar(1.0), [0])),
    ("arity", lambda fd, t: fd.ops.add(t[0])),
    ("define_tensor dtype", lambda fd, t: fd.define_tensor([-1], [True], "float")),
    ("define_tensor keyword", lambda fd, t: fd.define_tensor(shape=[-1], contig=[True])),
    ("define_scalar value", lambda fd, t: fd.define_scalar("1")),
    ("add_output of a number", lambda fd, t: fd.add_output(1.0)),
]


@pytest.mark.parametrize("name, call", TYPE_ERRORS, ids=[e[0] for e in TYPE_ERRORS])
def test_type_error(name, call):
    with pytest.raises(ArgumentTypeError):
        with FusionDefinition() as fd:
            call(fd, _tensors(fd))


def test_handle_of_another_definition():
    with FusionDefinition() as fd1:
        t = fd1.define_tensor(shape=[-1], contiguity=True)
        fd1.add_output(t)
    with pytest.raises(DefinitionError, match="belongs to another FusionDefinition"):
        with FusionDefinition() as fd2:
            fd2.ops.neg(t)


def test_ops_after_completion_and_outside_definition():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(t)
    with pytest.raises(DefinitionError, match="completed definition"):
        fd.ops.neg(t)
    with pytest.raises(DefinitionError, match="completed definition"):
        t + t
    with pytest.raises(DefinitionError, match="overwrite a completed definition"):
        with fd:
            pass
    with pytest.raises(DefinitionError, match="no definition in progress"):
        FusionDefinition().define_tensor(shape=[-1], contiguity=True)


def test_unknown_fusion_id():
    with pytest.raises(DefinitionError, match="no fusion with this id"):
        FusionDefinition(7)


# --- the messages of the reliability issue ---------------------------------------------------
EVERY_REDUCTION = {
    "sum": lambda fd, t, dims: fd.ops.sum(t, dims=dims),
    "prod": lambda fd, t, dims: fd.ops.prod(t, dims),
    "max": lambda fd, t, dims: fd.ops.max(t, dims, True),
    "min": lambda fd, t, dims: fd.ops.min(t, dims=dims, dtype=DataType.Null),
    "var": lambda fd, t, dims: fd.ops.var(t, dims, 1),
    "var_mean": lambda fd, t, dims: fd.ops.var_mean(t, dims),
    "welford": lambda fd, t, dims: fd.ops.welford(t, dims),
}


@pytest.mark.parametrize("op", sorted(EVERY_REDUCTION))
def test_every_reduction_refuses_empty_dims_as_nvfuser_does(op):
    """nvFuser: "No reduction axis specified" (torch would reduce every dim)."""
    with pytest.raises(DefinitionError) as info:
        with FusionDefinition() as fd:
            EVERY_REDUCTION[op](fd, fd.define_tensor(shape=[-1, -1], contiguity=True), [])
    assert str(info.value).startswith(f"{op}: dims is empty: no reduction axis specified")
    assert "No reduction axis specified" in getattr(fd.ops, op).__doc__


def test_reducing_every_dim_of_a_0_dim_tensor_is_refused():
    with pytest.raises(DefinitionError, match=r"sum: the input has rank 0.*no reduction axis"):
        with FusionDefinition() as fd:
            fd.ops.sum(fd.define_tensor(shape=[], contiguity=[]))


def test_dims_takes_a_list_as_in_nvfuser():
    """nvFuser's bindings take ``dim: int`` or ``dims: list``; ``dims=1`` matches neither."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        with pytest.raises(ArgumentTypeError) as info:
            fd.ops.sum(t, dims=1)
        assert str(info.value) == (
            "sum: dims must be a list of ints, got int 1; for one dim pass dims=[1] or dim=1"
        )
        with pytest.raises(ArgumentTypeError, match=r"sum\(\) got both dim and dims"):
            fd.ops.sum(t, dim=0, dims=[1])
        with pytest.raises(
            ArgumentTypeError,
            match=r"max\(\) got an unexpected keyword "
            r"argument 'axis'; it takes dims",
        ):
            fd.ops.max(t, axis=[0])
        assert fd.ops.sum(t, dim=1).ndim == fd.ops.sum(t, dims=[1]).ndim == 1
        fd.add_output(t)


def test_a_shape_extent_below_minus_one_names_the_op_and_argument():
    """Before: ``extent must be >= 0, got -1`` from ir/domain.py, naming nothing (-1 now
    keeps the input's extent, as in nvFuser: test_nvfuser_ops)."""
    with pytest.raises(DefinitionError) as info:
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1, -1], contiguity=True)
            fd.ops.broadcast_in_dim(t, shape=[-5, 6, 3], broadcast_dims=[0, 2])
    assert str(info.value) == (
        "broadcast_in_dim: the value -5 at index 0 of shape was neither "
        "symbolic(-1), zero_element(0), broadcast(1), or static(>1)"
    )


def test_execute_takes_a_list_not_a_tensor():
    """Before: a tensor was read as a list of its rows (one input per row)."""
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor(shape=[-1, -1], contiguity=True)))
    x = torch.arange(6.0).reshape(2, 3)
    with pytest.raises(InputListError) as info:
        fd.execute(x)
    assert str(info.value) == (
        "execute: inputs must be a list or tuple of the fusion's inputs (tensors and Python "
        "scalars, in definition order), got torch.Tensor(shape=[2, 3], dtype=torch.float32, "
        f"strides=[3, 1], device={x.device}); for one input pass [x]"
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda fd, t, x: fd.ops.add(t, x),
        lambda fd, t, x: fd.ops.permute(t, x),
        lambda fd, t, x: fd.ops.reshape(t, [x]),
        lambda fd, t, x: fd.ops.sum(t, [0], False, x),
    ],
)
def test_messages_describe_a_tensor_never_its_values(call):
    x = torch.full((1000,), 12345.0)
    with pytest.raises(ArgumentTypeError) as info:
        with FusionDefinition() as fd:
            call(fd, fd.define_tensor(shape=[-1, -1], contiguity=True), x)
    message = str(info.value)
    assert "torch.Tensor(shape=[1000], dtype=torch.float32, strides=[1]" in message
    assert "12345" not in message and "tensor(" not in message
