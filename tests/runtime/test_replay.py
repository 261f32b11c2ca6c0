"""The fast path: a repeated execute with the same signature replays the recorded launches."""

import pytest
import torch

from layoutfuse.errors import InputDtypeError, InputLayoutError, InputRankError
from layoutfuse.frontend.nvfuser import fusion_definition
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition
from layoutfuse.runtime.replay import LaunchPlan, PlannedLaunch, signature
from support.execution import schedules

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _definition():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1]
        )
        s = fd.define_scalar(DataType.Double)
        fd.add_output(fd.ops.sum(fd.ops.mul(t0, s), dims=[1]))
        fd.add_output(fd.ops.exp(t0))
    return fd


@pytest.mark.parametrize("device", DEVICES)
def test_replay_matches_eager_for_fresh_data_and_scalars(device):
    fd = _definition()
    for k in range(4):
        x = torch.randn(48, 40, device=device).t()  # column-major [40, 48]
        alpha = 0.5 + k
        red, ex = fd.execute([x, alpha])
        torch.testing.assert_close(red, (x * alpha).sum(1), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(ex, x.exp())
        assert ex.stride() == x.stride()  # the inferred layout holds on the replay path too
    # one plan for this device (the cpu case of this test, run before in the same process,
    # shares the cached definition and keeps its own)
    keys = [k for k in fd.executor()._plans if k[0][3].type == torch.device(device).type]
    assert len(keys) == 1


def test_a_new_signature_is_validated_again():
    fd = _definition()
    x = torch.randn(48, 40).t()
    fd.execute([x, 1.0])
    with pytest.raises(InputLayoutError):
        fd.execute([torch.randn(40, 48), 1.0])  # row-major contradicts stride_order [0, 1]


@pytest.mark.parametrize("device", DEVICES)
def test_replayed_split_reduction_reuses_its_workspace_correctly(device):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t0, dims=[0]))
    for _ in range(4):
        x = torch.randn(4096, 3, device=device)
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, x.sum(0), rtol=1e-5, atol=1e-3)
    (params,) = schedules(fd)
    assert params.split > 1


def test_an_explicit_device_argument_keeps_the_fast_path():
    FusionCache.reset()  # a fresh executor: no plan from another test
    fd = _definition()
    x = torch.randn(48, 40).t()
    device = x.device.type  # "cpu", or "cuda" under --device cuda
    for _ in range(3):
        red, _ = fd.execute([x, 1.0], device=device)
    torch.testing.assert_close(red, x.sum(1), rtol=1e-5, atol=1e-4)
    assert [k[-1] for k in fd.executor()._plans] == [device]


def _add_one():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(t0, fd.define_scalar(1.0, dtype=DataType.Double)))
    return fd


def test_repeated_calls_replay_without_planning_or_frontend_work(monkeypatch):
    FusionCache.reset()
    fd = _add_one()
    flattened = []
    real_flatten = fusion_definition.flatten_inputs
    monkeypatch.setattr(
        fusion_definition,
        "flatten_inputs",
        lambda inputs: flattened.append(1) or real_flatten(inputs),
    )
    x = torch.randn(8, 16)
    for _ in range(5):
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, x + 1)
    assert fd.executor().planned_runs == 1
    assert len(flattened) == 1, "the later calls dispatched to the plan before flattening"


@pytest.mark.parametrize(
    "changed, error",
    [
        (lambda x: x.t(), InputLayoutError),  # strides contradict the declaration
        (lambda x: x.double(), InputDtypeError),
        (lambda x: x[0], InputRankError),
    ],
)
def test_a_changed_signature_is_validated_again(changed, error):
    FusionCache.reset()
    fd = _add_one()
    x = torch.randn(8, 16)
    fd.execute([x])
    fd.execute([x])
    with pytest.raises(error):
        fd.execute([changed(x)])
    assert fd.executor().planned_runs == 2
    (out,) = fd.execute([x])  # the first plan still replays
    torch.testing.assert_close(out, x + 1)
    assert fd.executor().planned_runs == 2


def test_the_signature_holds_everything_the_checks_read():
    x = torch.randn(8, 16)
    key = signature([x, 2, 1.5])
    assert signature([torch.randn(8, 16), 2, 2.5]) == key  # other data, another float
    for other in (
        [x.t(), 2, 1.5],
        [x.double(), 2, 1.5],
        [x[:4], 2, 1.5],
        [x[:, :8], 2, 1.5],
        [torch.randn(129)[1:].reshape(8, 16), 2, 1.5],  # 4-byte aligned only
        [x.to("meta"), 2, 1.5],
        [x, 3, 1.5],
        [x, True, 1.5],
        [x, 2.0, 1.5],
        [x, 2],
    ):
        assert signature(other) != key
    assert signature([x, 2, 1.5], device=x.device) != key
    assert signature([x, [2, 3]]) is None  # vectors are not keyed


@pytest.mark.parametrize(
    "changed",
    [
        lambda x: torch.randn(4, 16, device=x.device),  # another shape
        lambda x: x[:, 1:],  # strides, and the pointer's alignment
        lambda x: x.reshape(-1)[1:].reshape(-1)[:112].reshape(8, 14),  # 4-byte aligned only
    ],
)
def test_a_changed_signature_plans_again_and_computes_right(changed):
    FusionCache.reset()
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)
        fd.add_output(fd.ops.add(t0, fd.define_scalar(1.0, dtype=DataType.Double)))
    x = torch.randn(8, 16)
    fd.execute([x])
    y = changed(x)
    for _ in range(2):
        (out,) = fd.execute([y])
        torch.testing.assert_close(out, y + 1)
    assert fd.executor().planned_runs == 2
    assert len(fd.executor()._plans) == 2


def test_a_scalar_input_given_as_a_0_dim_tensor_is_read_on_every_replay():
    FusionCache.reset()
    fd = _definition()
    x = torch.randn(48, 40).t()
    for alpha in (2.0, 3.0, 0.5):
        red, _ = fd.execute([x, torch.tensor(alpha)])
        torch.testing.assert_close(red, (x * alpha).sum(1), rtol=1e-5, atol=1e-4)
    assert fd.executor().planned_runs == 1


def test_vector_inputs_still_replay():
    FusionCache.reset()
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        shape = fd.define_vector(2)
        fd.add_output(fd.ops.exp(fd.ops.reshape(t0, shape)))
    x = torch.randn(12)
    for _ in range(3):
        (out,) = fd.execute([x, [3, 4]])
        torch.testing.assert_close(out, x.reshape(3, 4).exp())
    assert fd.executor().planned_runs == 1


# --- the launch through Triton's CUDA launcher, with stand-ins (no GPU here) -------------------
class _Launcher:
    """The attributes of Triton 3.6's CudaLauncher that a plan reads."""

    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid = launch_pdl = False

    def __init__(self, accepts: bool = True):
        self.accepts, self.calls = accepts, []

    def launch(self, *args):
        if not self.accepts:
            raise TypeError("function takes other arguments")
        self.calls.append(args)


class _Compiled:
    function, packed_metadata = 77, (4, 1, 0)

    def __init__(self, runner):
        self.run = runner


class _Jit:
    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        return lambda *args, **meta: self.calls.append((grid, args, meta))


def _plan(compiled, fn):
    spec = [("in", 0), ("scalar", (1, float)), ("out", 0), ("val", 6), ("val", "scratch")]
    return LaunchPlan(
        [((2, 3), (3, 1), torch.float32, torch.device("cpu"))],
        [PlannedLaunch(fn, (5, 2), tuple(spec), {"BLOCK_X": 64, "num_warps": 4}, compiled, (64,))],
        [True, False],
    )


def test_a_compiled_kernel_is_launched_through_the_launchers_c_entry(monkeypatch):
    monkeypatch.setattr(
        torch._C, "_cuda_getCurrentRawStream", lambda device: 1000 + device, raising=False
    )
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 3, raising=False)
    launcher, jit = _Launcher(), _Jit()
    plan = _plan(_Compiled(launcher), jit)
    x = torch.randn(2, 3)
    (out,) = plan.replay([x, 2])
    assert out.shape == (2, 3) and out.stride() == (3, 1)
    ((*head, a0, a1, a2, a3, a4, const),) = launcher.calls
    assert head == [5, 2, 1, 1003, 77, False, False, None, None, (4, 1, 0), None, None, None]
    # tensors go as their addresses (the launcher asks the driver nothing about an int)
    assert type(a0) is int and a0 == x.data_ptr() and a2 == out.data_ptr()
    assert a1 == 2.0 and type(a1) is float
    assert (a3, a4, const) == (6, "scratch", 64)
    assert jit.calls == []


def test_direct_launches_take_scratch_as_parts_of_one_buffer(monkeypatch):
    """Intermediates that only direct launches touch are parts of one byte buffer (one
    allocation per call), each at a multiple of 256 bytes; one that a copy reads stays a
    tensor of its own. An input read by two launches is read for its address once."""
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    cpu, f32 = torch.device("cpu"), torch.float32
    s0 = ("scratch", (0, (3, 5), (5, 1), f32, cpu))  # 60 bytes
    s1 = ("scratch", (1, (7,), (1,), torch.float16, cpu))
    s2 = ("scratch", (2, (4,), (1,), f32, cpu))  # copied into the output afterwards
    meta = {"BLOCK_X": 64}
    launcher = _Launcher()
    plan = LaunchPlan(
        [((4,), (1,), f32, cpu)],
        [
            PlannedLaunch(_Jit(), (1,), (("in", 0), s0, s2), meta, _Compiled(launcher)),
            PlannedLaunch(_Jit(), (2,), (s0, s1, ("in", 0)), meta, _Compiled(launcher)),
        ],
        [True],
        copies=[(("out", 0), s2)],
    )
    x = torch.randn(4)
    (out,) = plan.replay([x])
    (*_, x_a, p0, p2), (*_, q0, p1, x_b) = (c[13:] for c in launcher.calls)
    assert x_a == x_b == x.data_ptr() and plan.source.count("in0.data_ptr()") == 1
    assert q0 == p0 and p1 - p0 == 256 and p2 != p0
    assert "scratch2 = empty_strided" in plan.source and "scratch0 =" not in plan.source
    assert plan.source.count("empty_strided") == 3  # the output, the buffer, scratch 2


def test_a_launcher_that_takes_other_arguments_falls_back_to_the_jit(monkeypatch):
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    jit = _Jit()
    plan = _plan(_Compiled(_Launcher(accepts=False)), jit)
    x = torch.randn(2, 3)
    for _ in range(2):
        (out,) = plan.replay([x, 2.5])
        grid, args, meta = jit.calls[-1]
        assert grid == (5, 2) and args[0] is x and args[1] == 2.5 and args[2] is out
        assert meta == {"BLOCK_X": 64, "num_warps": 4}
    assert not plan.direct and "launch0" not in plan.source


def _expanded_input(fd, rank: int, expanded: int):
    """An input declared as ``compute_tensor_descriptor`` describes a tensor whose dim
    ``expanded`` is broadcast with stride 0 (what Thunder and the benchmarks declare)."""
    contiguity = [True] * rank
    contiguity[expanded] = None
    return fd.define_tensor(
        shape=[-1] * rank,
        contiguity=contiguity,
        dtype=DataType.Float,
        stride_order=list(range(rank))[::-1],
    )


def _expanded(shape, dim, seed):
    base = list(shape)
    base[dim] = 1
    g = torch.Generator().manual_seed(seed)
    return torch.randn(base, generator=g).expand(*shape)


@pytest.mark.parametrize(
    "build, shape, dim",
    [
        # a pointwise chain: the output keeps the input's stride-0 dim
        (lambda fd, t: fd.ops.add(fd.ops.mul(fd.ops.tanh(t), t), t), (5, 7, 3), 1),
        # a reduction whose output keeps the expanded dim (stride 0 there)
        (lambda fd, t: fd.ops.sum(t, dims=[1, 2], keepdim=False), (3, 6, 5), 0),
        # a softmax of rows, the rows broadcast along an expanded dim
        (
            lambda fd, t: fd.ops.div(
                fd.ops.exp(t),
                fd.ops.broadcast_in_dim(
                    fd.ops.sum(fd.ops.exp(t), dims=[0], keepdim=False),
                    shape=[9, 4],
                    broadcast_dims=[1],
                ),
            ),
            (9, 4),
            1,
        ),
    ],
)
def test_outputs_with_expanded_dims_replay(build, shape, dim):
    """An expanded input gives an expanded output (stride 0 where the input has it): such
    a fusion is planned once, and later calls with other copies of the input replay, with
    the planned call's strides and torch's numbers (issue 16: these re-planned each call)."""
    with FusionDefinition() as fd:
        t = _expanded_input(fd, len(shape), dim)
        fd.add_output(build(fd, t))
    copies = [_expanded(shape, dim, seed) for seed in range(3)]
    strides = None
    for x in copies * 2:
        (out,) = fd.execute([x])
        expect = build(_TorchOps(), x)
        torch.testing.assert_close(out, expect, rtol=1e-5, atol=1e-5)
        assert 0 in out.stride()
        assert strides is None or out.stride() == strides
        strides = out.stride()
    assert fd.executor().planned_runs == 1


class _TorchOps:
    """``fd.ops`` spelled in torch, for the reference of the builders above."""

    class ops:
        add, mul, div, tanh, exp = torch.add, torch.mul, torch.div, torch.tanh, torch.exp

        @staticmethod
        def sum(t, dims, keepdim):
            return t.sum(dims, keepdim=keepdim)

        @staticmethod
        def broadcast_in_dim(t, shape, broadcast_dims):
            view = [1] * len(shape)
            for i, d in enumerate(broadcast_dims):
                view[d] = t.shape[i]
            return t.reshape(view).expand(shape)


def test_a_view_of_one_of_two_inputs_that_share_memory_replays_right():
    """Inputs that are views of one buffer: memory cannot tell which of them an output is a
    view of, so that call records no plan; a later call with inputs of their own (the same
    signature) plans and replays the view of the right input, aliasing inputs included."""
    FusionCache.reset()
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(a))
        fd.add_output(fd.ops.reshape(b, new_shape=[60]))
    buf = torch.randn(120)
    shared = [buf[:60].view(6, 10), buf[60:].view(6, 10)]
    own = [torch.randn(6, 10), torch.randn(6, 10)]
    for inputs in (shared, own, own, shared):
        neg, view = fd.execute(inputs)
        torch.testing.assert_close(neg, -inputs[0])
        assert torch.equal(view, inputs[1].reshape(60))
        assert view.data_ptr() == inputs[1].data_ptr()
    assert fd.executor().planned_runs == 2
