"""repr(fd) is an executable definition: exec it, rebuild, and get the same records,
the same cache entry, and the same results. Structurally equal definitions share an id."""

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition
from support.seed import nvfuser_fusion_id33, seed_inputs


def pointwise_constants(fd):
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, False], dtype=DataType.Float)
    s0 = fd.define_scalar(None, dtype=DataType.Double)
    t1 = fd.ops.mul(t0, fd.define_scalar(1 / 3))
    t2 = fd.ops.where(fd.ops.gt(t1, s0), t1, fd.define_scalar(float("-inf")))
    t3 = fd.ops.add(fd.ops.cast(t2, DataType.Double), fd.define_scalar(0.1, dtype=DataType.Float))
    c = fd.define_scalar(complex(2.0, -0.5))
    b = fd.define_scalar(True)
    fd.add_output(fd.ops.cast(t3, DataType.Half))
    fd.add_output(fd.ops.mul(c, fd.define_scalar(2)))
    fd.add_output(fd.ops.logical_and(b, b))


def reductions(fd):
    t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=True, stride_order=[0, 2, 1])
    t1 = fd.ops.sum(t0, [0, -1], True, DataType.Double)
    v, m = fd.ops.var_mean(t0, [1], 0, False)
    avg, var_sum, n = fd.ops.welford(t0, [2])
    fd.add_output(t1)
    fd.add_output(v, stride_order=[0, 1])
    fd.add_output(m)
    fd.add_output(fd.ops.max(var_sum, 0))
    fd.add_output(n)


def shapes_and_vectors(fd):
    t0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True])
    v = fd.define_vector(2)
    t1 = fd.ops.reshape(t0, [t0.size(0), t0.size(2)])
    t2 = fd.ops.broadcast_in_dim(t1, [2, 3, t0.size(2)], [0, 2])
    t3 = fd.ops.full(v, fd.define_scalar(0.5), DataType.Float)
    t4 = fd.ops.iota(fd.ops.at(fd.ops.shape(t0), 2), None, None, DataType.Int)
    sizes = fd.ops.tensor_sizes(t3)
    t5 = fd.ops.expand(fd.ops.broadcast(t4, [True, False]), [sizes[0], -1])
    fd.add_output(fd.ops.squeeze(t2, [1], squeeze_expanded=True))
    fd.add_output(fd.ops.permute(t3, [1, 0]))
    fd.add_output(t5)


def aliasing(fd):
    t0 = fd.define_tensor(shape=[4, 5], contiguity=[True, True], stride_order=[1, 0])
    t1 = fd.define_tensor(shape=[5], contiguity=[None])  # expanded broadcast
    t2 = fd.ops.add(t0, t1)
    fd.add_output(fd.ops.set(t2), alias_input=t0)
    fd.add_output(fd.ops.stride_order(fd.ops.neg(t2), [0, 1]))


def seed(fd):
    nvfuser_fusion_id33(fd)


def pointwise_inputs():
    return [torch.randn(3, 4)[:, ::2], 0.25]


def reductions_inputs():
    # stride_order [0, 2, 1]: memory order (dim 1, dim 2, dim 0), dim 0 innermost
    return [torch.randn(3, 4, 2).permute(2, 0, 1)]


def shapes_inputs():
    return [torch.randn(2, 1, 4), (3, 4)]


def aliasing_inputs():
    return [torch.randn(4, 5), torch.randn(1).expand(5)]


CASES = [
    (pointwise_constants, pointwise_inputs),
    (reductions, reductions_inputs),
    (shapes_and_vectors, shapes_inputs),
    (aliasing, aliasing_inputs),
    (seed, seed_inputs),
]


def define(func) -> FusionDefinition:
    with FusionDefinition() as fd:
        func(fd)
    return fd


def rebuild(fd) -> FusionDefinition:
    """exec the printed definition with only FusionDefinition and DataType in scope."""
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(repr(fd), namespace)
    with FusionDefinition() as fd2:
        namespace[f"nvfuser_fusion_id{fd.id()}"](fd2)
    return fd2


def _clone_inputs(inputs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


@pytest.mark.parametrize("func, make_inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_repr_round_trip(func, make_inputs, reference_executor):
    fd = define(func)
    again = rebuild(fd)
    assert repr(again) == repr(fd)
    assert again.id() == fd.id() and FusionCache.get().num_fusions() == 1
    FusionCache.reset()  # rebuild a fresh fusion: same text, separate IR
    fresh = rebuild(fd)
    assert repr(fresh) == repr(fd) and fresh._entry is not fd._entry
    inputs = make_inputs()
    outs1 = fd.execute(_clone_inputs(inputs))
    outs2 = fresh.execute(_clone_inputs(inputs))
    assert len(outs1) == len(outs2)
    for a, b in zip(outs1, outs2):
        torch.testing.assert_close(a, b, equal_nan=True)


def test_structurally_equal_definitions_share_an_id():
    fd1 = define(reductions)
    fd2 = define(reductions)
    fd3 = define(aliasing)
    assert fd1.id() == fd2.id() == 0 and fd3.id() == 1
    assert FusionCache.get().num_fusions() == 2
    assert fd1._entry is fd2._entry
    FusionCache.reset()
    assert FusionCache.get().num_fusions() == 0
    assert define(aliasing).id() == 0


def test_constants_that_differ_past_six_digits_are_different_fusions():
    def body(value):
        def f(fd):
            t = fd.define_tensor(shape=[-1], contiguity=True)
            fd.add_output(fd.ops.mul(t, fd.define_scalar(value)))

        return f

    assert define(body(0.1234567)).id() != define(body(0.1234568)).id()


def test_handle_to_a_cached_definition(reference_executor):
    fd = define(aliasing)
    same = FusionDefinition(fd.id())
    assert same.id() == fd.id() and repr(same) == repr(fd)
    x = torch.zeros(4, 5)
    assert len(same.execute([x, torch.ones(1).expand(5)])) == 1
    assert torch.equal(x, torch.ones(4, 5))


def test_incomplete_definition_prints_as_such():
    with FusionDefinition() as fd:
        fd.define_tensor(shape=[-1], contiguity=True)
        assert repr(fd).startswith("\ndef nvfuser_incomplete_fusion(fd : FusionDefinition)")
        assert fd.id() is None
    assert repr(fd).startswith("\ndef nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n")
    assert repr(fd).endswith("is_cpu=False)\n\n")
