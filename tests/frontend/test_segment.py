"""fd.segment(inputs): the kernels a fusion runs as, with their schedulers and cut reasons."""

import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.seed import check_seed_outputs, define_seed, seed_inputs


def test_seed_thunder_fusion_segments():
    fd = define_seed()
    inputs = seed_inputs()
    segments = fd.segment(inputs)
    kinds = [s["scheduler"] for s in segments]
    # eight sums of different shapes, each with its own prologue, and every output is
    # a sum's result: eight kernels and nothing else; reduction kernels, but for the sums
    # of inputs over their size-1 dims only (T2 [2, 1, 2] over dim 1, T1 [1, 1, 5] over
    # dim 0), each its input copied by a pointwise kernel
    one_element = [
        any("every reduced extent is 1" in why for why in s["rejected"]) for s in segments
    ]
    assert kinds == ["pointwise" if one else "reduction" for one in one_element]
    assert kinds.count("pointwise") == 2 and segments[0]["ops"] == ["sum"]
    assert all(s["reason"] for s in segments)
    check_seed_outputs(fd.execute(inputs), inputs)


def test_softmax_segments_and_values():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        m = fd.ops.max(t0, dims=[1])
        e = fd.ops.exp(
            fd.ops.sub(t0, fd.ops.broadcast_in_dim(m, shape=t0.shape(), broadcast_dims=[0]))
        )
        s = fd.ops.sum(e, dims=[1])
        fd.add_output(
            fd.ops.div(e, fd.ops.broadcast_in_dim(s, shape=t0.shape(), broadcast_dims=[0]))
        )
    x = torch.randn(33, 70)
    segments = fd.segment([x])
    # max and sum are used again on their own rows: one normalization kernel
    assert [s["scheduler"] for s in segments] == ["normalization"]
    assert segments[0]["ops"].count("max") == 1 and segments[0]["ops"].count("sum") == 1
    assert "used again" in segments[0]["reason"]
    torch.testing.assert_close(fd.execute([x])[0], torch.softmax(x, 1))
