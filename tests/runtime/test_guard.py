"""The guard of the plan replayed last (``runtime/guard.py``): a call of that plan's
signature replays without keying its signature; every call that differs in what the plan
depends on (shape, strides, dtype, pointer alignment, a scalar's type or keyed value, the
device argument, the count of inputs) misses it, and is keyed, replayed or planned right."""

from __future__ import annotations

import pytest
import torch

from layoutfuse.errors import InputCountError, InputError
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition
from layoutfuse.runtime import executor as executor_module
from layoutfuse.runtime import guard as guard_module

F = DataType.Float


@pytest.fixture
def keyed(monkeypatch):
    """Counts the calls that keyed their signature (the guard missed, or there was none)."""
    calls = []
    real = executor_module.signature
    monkeypatch.setattr(
        executor_module, "signature", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    return calls


def _scaled_add(int_scalar: bool = False):
    """out = x * s + y, x and y of any strides, s a Double (or Int) input."""
    FusionCache.reset()
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=F)
        y = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=F)
        s = fd.define_scalar(DataType.Int if int_scalar else DataType.Double)
        fd.add_output(fd.ops.add(fd.ops.mul(x, s), y))
    return fd


def test_a_call_of_the_last_plans_signature_replays_without_keying(keyed):
    fd = _scaled_add()
    for k in range(4):
        x, y = torch.randn(8, 16), torch.randn(8, 16)
        (out,) = fd.execute([x, y, 0.5 + k])
        torch.testing.assert_close(out, x * (0.5 + k) + y)
    assert fd.executor().planned_runs == 1
    assert len(keyed) == 2, "the planned call keyed (its replay lookup and its plan); no other"


def _misaligned(shape):
    n = shape[0] * shape[1]
    return torch.randn(n + 1)[1:].view(shape)  # 4-byte aligned only


@pytest.mark.parametrize(
    "change, planned",
    [
        (lambda x, y, s: [torch.randn(4, 16), torch.randn(4, 16), s], 2),  # shape
        (lambda x, y, s: [torch.randn(8, 20)[:, :16], y, s], 2),  # strides
        (lambda x, y, s: [_misaligned((8, 16)), y, s], 2),  # alignment, shape and strides kept
        (lambda x, y, s: [x, _misaligned((8, 16)), s], 2),
        (lambda x, y, s: [x, y, 2], 2),  # an int where the plan had a float
        (lambda x, y, s: [x, y, torch.tensor(s)], 2),  # a 0-dim tensor for the scalar
        (lambda x, y, s: [x.detach().requires_grad_(), y, s], 1),  # same signature: keyed
        (lambda x, y, s: [torch.nn.Parameter(x), y, s], 1),
    ],
    ids=[
        "shape",
        "strides",
        "misaligned_x",
        "misaligned_y",
        "int_for_float",
        "0_dim_scalar",
        "requires_grad",
        "parameter",
    ],
)
def test_a_call_that_differs_misses_the_guard_and_runs_right(keyed, change, planned):
    fd = _scaled_add()
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    fd.execute([x, y, 1.5])
    fd.execute([x, y, 1.5])
    before = len(keyed)
    inputs = change(x, y, 1.5)
    for _ in range(2):
        (out,) = fd.execute(inputs)
        s = inputs[2].item() if isinstance(inputs[2], torch.Tensor) else inputs[2]
        torch.testing.assert_close(out, inputs[0].detach() * s + inputs[1])
    assert len(keyed) > before, "the changed call missed the guard"
    assert fd.executor().planned_runs == planned
    # the first signature's calls still replay its plan, behind the guard again
    for _ in range(2):
        (out,) = fd.execute([x, y, 1.5])
        torch.testing.assert_close(out, x * 1.5 + y)
    assert fd.executor().planned_runs == planned


def test_a_refused_call_of_the_same_signature_rebinds_the_guard(keyed):
    """requires_grad is not in the signature: the dictionary replays the plan, then the
    guard checks tensors like the call's, and the next such call passes it."""
    fd = _scaled_add()
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    fd.execute([x, y, 1.5])
    w = torch.randn(8, 16, requires_grad=True)
    fd.execute([w, y, 1.5])  # refused by the guard, keyed: the dictionary's hit
    fd.execute([w, y, 1.5])  # refused again by the guard of its own plan: rebinds it
    n = len(keyed)
    (out,) = fd.execute([w, y, 1.5])
    torch.testing.assert_close(out, w.detach() * 1.5 + y)
    assert len(keyed) == n and fd.executor().planned_runs == 1


def test_int_scalars_are_guarded_by_value(keyed):
    fd = _scaled_add(int_scalar=True)
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    for s in (2, 2, 3, 3, True, 2):
        (out,) = fd.execute([x, y, s])
        torch.testing.assert_close(out, x * int(s) + y)
    assert fd.executor().planned_runs == 3  # 2, 3 and True: each its own signature


def test_alternating_signatures_each_replay_their_own_plan():
    fd = _scaled_add()
    a = [torch.randn(8, 16), torch.randn(8, 16), 1.0]
    b = [torch.randn(3, 5), torch.randn(3, 5), 2.0]
    for inputs in (a, b) * 3:
        (out,) = fd.execute(inputs)
        torch.testing.assert_close(out, inputs[0] * inputs[2] + inputs[1])
    assert fd.executor().planned_runs == 2


def test_the_device_argument_and_the_input_count_are_guarded(keyed):
    fd = _scaled_add()
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    device = x.device.type
    fd.execute([x, y, 1.5], device=device)
    fd.execute([x, y, 1.5], device=device)
    n = len(keyed)
    (out,) = fd.execute([x, y, 1.5], device=device)
    assert len(keyed) == n, "the guard passed a call with the same device argument"
    fd.execute([x, y, 1.5])  # no device argument: another signature
    assert len(keyed) > n and fd.executor().planned_runs == 2
    with pytest.raises(InputCountError):
        fd.execute([x, y])  # one input short: misses, then validation refuses it
    torch.testing.assert_close(out, x * 1.5 + y)


def test_a_seed_input_passes_the_guard_for_any_value_of_its_class(keyed):
    """rng_seed/rng_offset are keyed by Triton's int classes (``replay.seed_class``): a new
    seed of the same class replays behind the guard; 1 (its own class) misses it."""
    FusionCache.reset()
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=F)
        seed, offset = fd.define_scalar(DataType.Int), fd.define_scalar(DataType.Int)
        r = fd.ops.rand_like(x, rng_seed=seed, rng_offset=offset)
        fd.add_output(fd.ops.add(x, r))
    x = torch.zeros(64)
    first = fd.execute([x, 1234, 0])[0]
    fd.execute([x, 1234, 0])
    n = len(keyed)
    other = fd.execute([x, 999, 0])[0]
    again = fd.execute([x, 1234, 0])[0]
    assert len(keyed) == n, "new seeds of one class passed the guard"
    assert torch.equal(first, again) and not torch.equal(first, other)
    fd.execute([x, 1, 0])
    assert len(keyed) > n
    assert fd.executor().planned_runs == 2


def test_without_torchs_tensor_check_calls_key_and_replay(monkeypatch, keyed):
    monkeypatch.setattr(guard_module, "_TensorGuards", None)
    fd = _scaled_add()
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    for _ in range(3):
        (out,) = fd.execute([x, y, 1.5])
    torch.testing.assert_close(out, x * 1.5 + y)
    assert fd.executor().planned_runs == 1 and len(keyed) == 4  # 2 planned, 1 per replay


def test_index_checks_run_on_guarded_replays():
    """A CPU index input is bounds-checked on every replay, the guarded ones too."""
    FusionCache.reset()
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=F)
        i = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        fd.add_output(fd.ops.index_select(x, i, dim=0))
    x = torch.randn(5, 4, device="cpu")
    good = torch.tensor([0, 4, 2], device="cpu")
    for _ in range(3):
        (out,) = fd.execute([x, good])
        torch.testing.assert_close(out, x[good])
    with pytest.raises(IndexError):
        fd.execute([x, torch.tensor([0, 5, 2], device="cpu")])
    assert fd.executor().planned_runs == 1


def test_a_non_tensor_where_a_tensor_was_misses_the_guard():
    fd = _scaled_add()
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    fd.execute([x, y, 1.5])
    fd.execute([x, y, 1.5])
    with pytest.raises(InputError):
        fd.execute([2.0, y, 1.5])
    assert fd.executor().planned_runs == 2, "the call missed the guard and was validated"
