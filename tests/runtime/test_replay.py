"""The fast path: a repeated execute with the same signature replays the recorded launches."""

import pytest
import torch

from layoutfuse.errors import InputLayoutError
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _definition():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float,
                              stride_order=[0, 1])
        s = fd.define_scalar(DataType.Double)
        fd.add_output(fd.ops.sum(fd.ops.mul(t0, s), dims=[1]))
        fd.add_output(fd.ops.exp(t0))
    return fd


@pytest.mark.parametrize("device", DEVICES)
def test_replay_matches_eager_for_fresh_data_and_scalars(device):
    fd = _definition()
    for k in range(4):
        x = torch.randn(48, 40, device=device).t()           # column-major [40, 48]
        alpha = 0.5 + k
        red, ex = fd.execute([x, alpha])
        torch.testing.assert_close(red, (x * alpha).sum(1), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(ex, x.exp())
        assert ex.stride() == x.stride()      # the inferred layout holds on the replay path too
    assert len(fd.executor()._plans) == 1


def test_a_new_signature_is_validated_again():
    fd = _definition()
    x = torch.randn(48, 40).t()
    fd.execute([x, 1.0])
    with pytest.raises(InputLayoutError):
        fd.execute([torch.randn(40, 48), 1.0])    # row-major contradicts stride_order [0, 1]


@pytest.mark.parametrize("device", DEVICES)
def test_replayed_split_reduction_reuses_its_workspace_correctly(device):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t0, dims=[0]))
    for _ in range(4):
        x = torch.randn(4096, 3, device=device)
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, x.sum(0), rtol=1e-5, atol=1e-3)
    params = fd.last_schedule()
    assert params.split > 1


def test_an_explicit_device_argument_keeps_the_fast_path():
    FusionCache.reset()                      # a fresh executor: no plan from another test
    fd = _definition()
    x = torch.randn(48, 40).t()
    device = x.device.type                   # "cpu", or "cuda" under --device cuda
    for _ in range(3):
        red, _ = fd.execute([x, 1.0], device=device)
    torch.testing.assert_close(red, x.sum(1), rtol=1e-5, atol=1e-4)
    assert [k[-1] for k in fd.executor()._plans] == [device]
