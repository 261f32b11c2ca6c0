"""Nothing of a call outlives it: after the outputs are dropped, no tensor of the call
(inputs, outputs) is referenced by the definition, its executor or the fusion cache.
With ``--device cuda`` the allocated GPU memory also returns to where it was."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition


def _sum(fd, t):
    return fd.ops.sum(t, dims=[1])


def _softmax(fd, t):
    m = fd.ops.broadcast_in_dim(fd.ops.max(t, dims=[1]), shape=[64, 96], broadcast_dims=[0])
    e = fd.ops.exp(fd.ops.sub(t, m))
    s = fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[1]), shape=[64, 96], broadcast_dims=[0])
    return fd.ops.div(e, s)


def _add(fd, t):
    return fd.ops.add(t, t)


@pytest.mark.parametrize("body", [_sum, _softmax, _add], ids=["sum", "softmax", "add"])
@pytest.mark.parametrize("profile", [False, True])
def test_no_tensor_of_a_call_outlives_it(body, profile):
    cuda = torch.get_default_device().type == "cuda"
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[64, 96], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(body(fd, t))
    for _ in range(2):  # compiled, planned (tickets kept), replayed
        fd.execute([torch.randn(64, 96)])
    gc.collect()
    before = torch.cuda.memory_allocated() if cuda else 0
    for _ in range(2):
        x = torch.randn(64, 96)
        outs = fd.execute([x], profile=profile)
        refs = [weakref.ref(x)] + [weakref.ref(o) for o in outs]
        del x, outs
        gc.collect()
        assert all(r() is None for r in refs), "a tensor of the call is still referenced"
    if cuda:
        assert torch.cuda.memory_allocated() == before
    assert fd.last_schedule(), "the run's schedule is still reported"
