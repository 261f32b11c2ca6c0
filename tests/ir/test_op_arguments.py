"""The IR builders' argument checks, which both frontends reach: a wrong type is an
ArgumentTypeError, a value that does not fit the tensor a DefinitionError, each naming the
op and the argument; a -1 extent is accepted only where the op gives it a meaning."""

import pytest

from layoutfuse.dtypes import DataType
from layoutfuse.errors import ArgumentTypeError, DefinitionError
from layoutfuse.ir import Fusion, FusionGuard, IterDomain, TensorView, ops
from layoutfuse.ir.values import Scalar


def _tensor(f, *extents):
    return TensorView(
        f, [IterDomain.broadcast(1) if e == 1 else IterDomain(e) for e in extents], DataType.Float
    )


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda f, t: ops.permute("T0", [1, 0]),
            ArgumentTypeError,
            "permute: arg must be a TensorView, got str 'T0'",
        ),
        (
            lambda f, t: ops.permute(t, (1, 0.0)),
            ArgumentTypeError,
            "permute: dims[1] must be an int, got float 0.0",
        ),
        (
            lambda f, t: ops.reduction("sum", t, [0, 2]),
            DefinitionError,
            "sum: dims [0, 2]: dim 2 is out of range for an input of rank 2",
        ),
        (
            lambda f, t: ops.reduction("max", t, [1, -1]),
            DefinitionError,
            "max: dims [1, -1] repeat a dim",
        ),
        (
            lambda f, t: ops.reduction("prod", t, ()),
            DefinitionError,
            "prod: dims is empty: no reduction axis specified",
        ),
        (
            lambda f, t: ops.var(t, [], 1),
            DefinitionError,
            "var: dims is empty: no reduction axis specified",
        ),
        (
            lambda f, t: ops.reshape(t, [-1, -1]),
            DefinitionError,
            "reshape: at most one -1 is allowed in new_shape [-1, -1]",
        ),
        (
            lambda f, t: ops.reshape(t, [-2, 3]),
            DefinitionError,
            "reshape: new_shape [-2, 3] has the extent -2 at index 0; extents are >= 0 or -1 "
            "(inferred, at most one)",
        ),
        (
            lambda f, t: ops.full([2, -1], 1.0, DataType.Float),
            DefinitionError,
            "full: shape [2, -1] has the extent -1 at index 1; extents are >= 0 (-1 has no meaning "
            "here)",
        ),
        (
            lambda f, t: ops.full([2, Scalar(f, DataType.Double, 3.0)], 1.0, DataType.Float),
            ArgumentTypeError,
            "full: shape[1] must be an int or an integer Scalar, got Scalar S",
        ),
        (
            lambda f, t: ops.broadcast_in_dim(t, [-3, 4, 3], [0, 2]),
            DefinitionError,
            "broadcast_in_dim: shape [-3, 4, 3] has the extent -3 at index 0",
        ),
        (lambda f, t: ops.iota(-2), DefinitionError, "iota: length -2 must be >= 0"),
        (
            lambda f, t: ops.iota(2.0),
            ArgumentTypeError,
            "iota: length must be an integer Scalar, got Scalar S",
        ),
        (
            lambda f, t: ops.stride_order(t, [2, 0]),
            DefinitionError,
            "stride_order: stride_order [2, 0] is not a permutation of range(2)",
        ),
    ],
)
def test_bad_arguments(call, error, message):
    f = Fusion()
    with FusionGuard(f):
        t = _tensor(f, 2, 3)
        with pytest.raises(error) as info:
            call(f, t)
    assert str(info.value).startswith(message)


def test_minus_one_in_broadcast_in_dim_keeps_the_input_extent():
    """nvFuser's broadcast_in_dim is broadcast then expand; expand's -1 keeps the extent."""
    f = Fusion()
    with FusionGuard(f):
        t = _tensor(f, 2, None)
        out = ops.broadcast_in_dim(t, [-1, -1, -1], [0, 2])
        assert out.static_shape == (2, 1, None)
        assert out.shape_domain[1].is_broadcast and not out.shape_domain[1].expanded
        assert not out.shape_domain[2].is_broadcast
