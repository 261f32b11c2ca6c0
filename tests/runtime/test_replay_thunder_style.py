"""The replay path for definitions written the way Thunder writes them: static and
symbolic sizes, broadcast shapes from ``fd.ops.size``, runtime scalars from
``define_scalar(dtype)`` (also in host arithmetic), ``None`` contiguity on broadcast and
expanded dims, 0-dim CPU scalar tensors, ``alias_input`` outputs, outputs that are views
of inputs or stride-0 broadcasts, and ``execute(args, device=..., save_repro_inputs=...,
_enable_options=..., _disable_options=...)`` on every call (Thunder 0.2.6's
``FusionDefinitionWrapper.__call__``). Every repeated call with inputs of the same
signature replays: one planned run, no validation, right values with fresh data."""

from __future__ import annotations

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition
from layoutfuse.runtime import executor as executor_module

F = DataType.Float


def _tensor(fd, shape, contiguity=None, dtype=F, is_cpu=False):
    contiguity = [True] * len(shape) if contiguity is None else contiguity
    order = list(range(len(shape)))[::-1]
    return fd.define_tensor(
        shape=shape, contiguity=contiguity, dtype=dtype, is_cpu=is_cpu, stride_order=order
    )


def bias_gelu(fd):
    """Thunder's default (static sizes): bias + GELU, the sum kept for the backward."""
    t0, t1 = _tensor(fd, [4, 8, 16]), _tensor(fd, [16])
    t2 = fd.ops.broadcast_in_dim(t1, shape=[4, 8, 16], broadcast_dims=[2])
    t3 = fd.ops.add(t0, t2)
    t4 = fd.ops.erf(fd.ops.mul(t3, fd.define_scalar(0.7071067811865476, dtype=DataType.Double)))
    t5 = fd.ops.mul(t3, fd.ops.add(fd.define_scalar(1.0, dtype=DataType.Double), t4))
    fd.add_output(t3)
    fd.add_output(fd.ops.mul(fd.define_scalar(0.5, dtype=DataType.Double), t5))


def bias_gelu_ref(x, b):
    y = x + b
    return [y, torch.nn.functional.gelu(y)]


def symbolic(fd):
    """Symbolic sizes, a [1, N] input (None contiguity), shapes from fd.ops.size, a
    runtime scalar."""
    t0, t1 = _tensor(fd, [-1, -1]), _tensor(fd, [1, -1], [None, True])
    s = fd.define_scalar(DataType.Double)
    shape = [fd.ops.size(t0, dim=0), fd.ops.size(t0, dim=1)]
    t2 = fd.ops.broadcast_in_dim(t1, shape=shape, broadcast_dims=[0, 1])
    fd.add_output(fd.ops.add(fd.ops.mul(t0, s), t2))


def scalar_math(fd):
    """Host arithmetic on a runtime scalar (dropout's 1 / (1 - p))."""
    t0, p = _tensor(fd, [-1, -1]), fd.define_scalar(DataType.Double)
    keep = fd.ops.sub(fd.define_scalar(1.0, dtype=DataType.Double), p)
    fd.add_output(fd.ops.mul(t0, fd.ops.reciprocal(keep)))


def expanded_input(fd):
    """An expanded input: None contiguity on a stride-0 dim of extent > 1."""
    fd.add_output(fd.ops.exp(_tensor(fd, [-1, -1], [None, True])))


def in_place(fd):
    """param.add_(grad, alpha=-lr): the result written into the input, also returned."""
    t0, t1 = _tensor(fd, [-1, -1]), _tensor(fd, [-1, -1])
    lr = fd.define_scalar(DataType.Double)
    t2 = fd.ops.sub(t0, fd.ops.mul(t1, lr))
    fd.add_output(t2, alias_input=t0)
    fd.add_output(t2)


def broadcast_output(fd):
    """A row sum broadcast back, returned (stride 0) beside x - it."""
    t0 = _tensor(fd, [-1, -1])
    t1 = fd.ops.sum(t0, dims=[1], keepdim=False, dtype=DataType.Null)
    t2 = fd.ops.broadcast_in_dim(t1, shape=fd.ops.shape(t0), broadcast_dims=[0])
    fd.add_output(t2)
    fd.add_output(fd.ops.sub(t0, t2))


def cpu_scalar(fd):
    """A 0-dim CPU tensor input (is_cpu=True)."""
    t0, t1 = _tensor(fd, [-1]), _tensor(fd, [], is_cpu=True)
    fd.add_output(fd.ops.mul(t0, t1))


def view_output(fd):
    """An output that is a view of an input (a reshape), beside a computed one."""
    t0 = _tensor(fd, [-1, -1])
    fd.add_output(fd.ops.reshape(t0, new_shape=[60]))
    fd.add_output(fd.ops.neg(t0))


def _x(*shape):
    return torch.randn(*shape)


CASES = {
    "bias_gelu": (bias_gelu, lambda k: [_x(4, 8, 16), _x(16)], lambda x, b: bias_gelu_ref(x, b)),
    "symbolic": (
        symbolic,
        lambda k: [_x(6, 10), _x(1, 10), 0.25 + k],
        lambda x, b, s: [x * s + b],
    ),
    "scalar_math": (scalar_math, lambda k: [_x(6, 10), 0.1 * (k + 1)], lambda x, p: [x / (1 - p)]),
    "expanded_input": (
        expanded_input,
        lambda k: [_x(1, 10).expand(6, 10)],
        lambda x: [x.exp()],
    ),
    "broadcast_output": (
        broadcast_output,
        lambda k: [_x(6, 10)],
        lambda x: [x.sum(1, keepdim=True).expand(6, 10), x - x.sum(1, keepdim=True)],
    ),
    "cpu_scalar": (
        cpu_scalar,
        lambda k: [_x(10), torch.tensor(2.0 + k, device="cpu")],
        lambda x, s: [x * s.to(x.device)],
    ),
    "view_output": (view_output, lambda k: [_x(6, 10)], lambda x: [x.reshape(60), -x]),
}


def _thunder_execute(fd, inputs):
    """What Thunder's FusionDefinitionWrapper calls on every call."""
    return fd.execute(
        tuple(inputs),
        device=fd._selected_device,
        save_repro_inputs=False,
        _enable_options=[],
        _disable_options=[],
    )


@pytest.fixture
def validations(monkeypatch):
    """Counts validate_inputs calls (the planned path's first step)."""
    calls = []
    real = executor_module.validate_inputs
    monkeypatch.setattr(
        executor_module, "validate_inputs", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    return calls


@pytest.mark.parametrize("name", CASES)
def test_thunder_style_definition_replays(name, validations):
    FusionCache.reset()
    define, make_inputs, reference = CASES[name]
    fd = FusionDefinition()
    fd._selected_device = None
    with fd:
        define(fd)
    for k in range(3):
        inputs = make_inputs(k)
        outs = _thunder_execute(fd, inputs)
        want = reference(*inputs)
        assert len(outs) == len(want)
        for got, ref in zip(outs, want):
            torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
        if name == "view_output":
            assert outs[0].data_ptr() == inputs[0].data_ptr(), "still a view of the input"
    assert fd.executor().planned_runs == 1, "every later call replayed"
    assert len(validations) == 1, "no validation on the replayed calls"


def test_in_place_update_replays_and_writes_the_input(validations):
    FusionCache.reset()
    fd = FusionDefinition()
    fd._selected_device = None  # Thunder sets it before defining
    with fd:
        in_place(fd)
    for k in range(3):
        param, grad, lr = _x(6, 10), _x(6, 10), 0.1 * (k + 1)
        want = param - grad * lr
        (out,) = _thunder_execute(fd, [param, grad, lr])
        torch.testing.assert_close(param, want)
        torch.testing.assert_close(out, want)
        assert out.data_ptr() != param.data_ptr()
    assert fd.executor().planned_runs == 1 and len(validations) == 1


def test_host_arithmetic_on_extents_and_scalar_inputs_plans_every_call():
    """A scalar computed from an extent and a scalar input is not replayed (the plan has
    no extents): every call plans, and computes right."""
    FusionCache.reset()
    with FusionDefinition() as fd:
        t0, s = _tensor(fd, [-1, -1]), fd.define_scalar(DataType.Double)
        n = fd.ops.cast(fd.ops.size(t0, dim=1), DataType.Double)
        fd.add_output(fd.ops.mul(t0, fd.ops.mul(n, s)))
    for k in range(2):
        x = _x(3, 5)
        (out,) = fd.execute([x, 1.0 + k])
        torch.testing.assert_close(out, x * 5 * (1.0 + k))
    assert fd.executor().planned_runs == 2


def test_scalar_outputs_replay_with_each_call_s_values(validations):
    """Scalar outputs (a scalar input, host arithmetic on it, one fixed by the key, a
    non-finite one) are made by the replay from the call's inputs, not left unwritten."""
    FusionCache.reset()
    with FusionDefinition() as fd:
        t0, s = _tensor(fd, [-1, -1]), fd.define_scalar(DataType.Double)
        fd.add_output(fd.ops.mul(t0, s))
        fd.add_output(s)
        fd.add_output(fd.ops.mul(s, s))
        fd.add_output(fd.ops.size(t0, dim=1))
        fd.add_output(fd.define_scalar(float("inf"), DataType.Double))
    x = _x(3, 5)
    for k in range(3):
        out, s0, s1, n, inf = fd.execute([x, 2.0 + k])
        torch.testing.assert_close(out, x * (2.0 + k))
        assert (s0.item(), s1.item(), n.item(), inf.item()) == (
            2.0 + k,
            (2.0 + k) ** 2,
            5,
            float("inf"),
        )
        assert s0.dtype == s1.dtype == torch.float64 and n.dtype == torch.int64
    assert fd.executor().planned_runs == 1 and len(validations) == 1


def test_cpu_scalars_move_to_the_gpu_inputs_device():
    """A 0-dim CPU tensor beside GPU inputs is read on their device (a kernel there cannot
    read host memory); without GPU inputs the inputs are left as they are. ``meta`` stands
    in for a GPU here; the GPU run of ``cpu_scalar`` above checks the real thing."""
    from layoutfuse.runtime.executor import cpu_scalars_to_device

    cpu = torch.device("cpu")  # also under ``--device cuda``
    gpu, scalar = torch.empty(3, device="meta"), torch.tensor(2.0, device=cpu)
    vector = torch.ones(2, device=cpu)
    moved = cpu_scalars_to_device([gpu, scalar, vector, 1.5])
    assert moved[1].device.type == "meta" and moved[1].dim() == 0
    assert moved[0] is gpu and moved[2] is vector and moved[3] == 1.5
    plain = [torch.ones(3, device=cpu), scalar]
    assert cpu_scalars_to_device(plain) is plain
