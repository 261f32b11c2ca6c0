"""execute() and the FusionDefinition API around it: the executor contract, the
subclass form, debugging helpers, and the module-level names Thunder imports."""

import pytest
import torch

import layoutfuse.nvfuser as nvfuser
from layoutfuse.errors import UnsupportedError
from layoutfuse.frontend.nvfuser.version import GATES
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition, version
from layoutfuse.runtime.executor import FusionExecutor
from support.execution import assert_ran_kernels, schedules


def add_mul(fd):
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
    v = fd.define_vector(2)
    s = fd.define_scalar(None, dtype=DataType.Double)
    t1 = fd.ops.mul(fd.ops.add(t0, s), fd.ops.full(v, s, DataType.Float))
    fd.add_output(t1)


class Spy:
    def __init__(self):
        self.calls = []

    def run(self, executor, inputs, device=None):
        self.calls.append((executor, list(inputs), device))
        return ["result"]


@pytest.fixture
def spy(monkeypatch):
    s = Spy()
    monkeypatch.setattr(
        FusionExecutor,
        "run",
        lambda self, inputs, device=None, profile=False: s.run(self, inputs, device),
    )
    monkeypatch.setattr(FusionExecutor, "last_schedule", lambda self: ("schedule", id(self)))
    monkeypatch.setattr(FusionExecutor, "last_triton_code", lambda self: "triton code")
    return s


def test_execute_calls_the_executor_with_flat_inputs(spy):
    with FusionDefinition() as fd:
        add_mul(fd)
    x = torch.ones(2, 3)
    assert schedules(fd) == [] and fd.last_triton_code() is None
    assert fd.execute([x, (2, 3), 1.5], device="cpu") == ["result"]
    executor, inputs, device = spy.calls[0]
    assert isinstance(executor, FusionExecutor) and executor.fusion is fd._entry.fusion
    assert inputs[0] is x and inputs[1:] == [2, 3, 1.5] and device == torch.device("cpu")
    fd.execute([x, [2, 3], 1.5], device=0)
    assert spy.calls[1][2] == torch.device("cuda", 0) and spy.calls[1][1][1:3] == [2, 3]
    assert fd.last_schedule() == ("schedule", id(executor))
    assert fd.last_triton_code() == fd.last_cuda_code() == "triton code"


def test_one_executor_per_definition_reused_and_shared(spy):
    with FusionDefinition() as fd1:
        add_mul(fd1)
    with FusionDefinition() as fd2:
        add_mul(fd2)
    args = [torch.ones(2, 3), (2, 3), 1.0]
    fd1.execute(args)
    fd1.execute(args)
    fd2.execute(args, device=None)
    executors = {id(call[0]) for call in spy.calls}
    assert len(executors) == 1 and spy.calls[2][2] is None


def test_execute_accepts_nvfuser_options(spy, capsys):
    with FusionDefinition() as fd:
        add_mul(fd)
    fd._selected_device = None  # Thunder sets arbitrary attributes
    fd.execute(
        [torch.ones(2, 3), (2, 3), 1.0],
        device=fd._selected_device,
        override_user_schedule=True,
        capture_debug_output=True,
        print_repro=True,
        profile=True,
        save_repro_inputs=True,
        _enable_options=["x"],
        _disable_options=[],
    )
    assert "from layoutfuse.nvfuser import FusionDefinition, DataType" in capsys.readouterr().out
    assert fd.debug_output() == ""
    prof = fd.profile()
    assert prof.fusion_id == fd.id() and prof.host_time_ms >= 0
    assert "torch.full((2, 3), 1.0, dtype=torch.float32" in fd.last_repro_script()  # all ones


def test_profile_reports_what_ran():
    """Two kernels (sums over different dims): the profile counts both segments and times
    each launch, also when the same inputs could replay."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t, dims=[1]))
        fd.add_output(fd.ops.sum(t, dims=[0]))
    x = torch.randn(8, 16)
    fd.execute([x])  # plans; the next call could replay
    rows, cols = fd.execute([x], profile=True)
    torch.testing.assert_close(rows, x.sum(1))
    torch.testing.assert_close(cols, x.sum(0))
    prof = fd.profile()
    segments = fd.segment([x])
    assert prof.segments == len(segments) == 2, segments
    assert [k.name for k in prof.kernel_profiles] == ["reduction_kernel"] * 2
    assert [k.scheduler for k in prof.kernel_profiles] == ["reduction"] * 2
    clock = "cuda" if x.is_cuda else "host"
    assert all(k.time_ms > 0 and k.clock == clock for k in prof.kernel_profiles)
    assert 0 < prof.kernel_time_ms <= prof.host_time_ms


def test_profile_requires_a_profiled_execution():
    with FusionDefinition() as fd:
        add_mul(fd)
    with pytest.raises(ValueError, match="profiling"):
        fd.profile()


def test_subclass_definition(reference_executor):
    class MyFusion(FusionDefinition):
        def definition(self):
            t0 = self.from_pytorch(torch.ones(2, 3))
            self.add_output(self.ops.relu(self.ops.neg(t0)))

    fd = MyFusion()
    assert fd.id() is None
    (out,) = fd.execute([-torch.arange(6.0).reshape(2, 3)])
    assert torch.equal(out, torch.arange(6.0).reshape(2, 3))
    assert fd.id() == 0
    fd.execute([torch.ones(2, 3)])
    assert FusionCache.get().num_fusions() == 1


def test_execute_without_definition_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="definition"):
        FusionDefinition().execute([])


def test_user_schedules_are_unsupported():
    class Scheduled(FusionDefinition):
        def definition(self):
            self.add_output(self.define_tensor(shape=[-1], contiguity=True))

        def schedule(self):
            pass

    with pytest.raises(UnsupportedError, match="schedule"):
        Scheduled().execute([torch.ones(3)])


def test_failed_definition_leaves_no_cache_entry():
    fd = FusionDefinition()
    with pytest.raises(RuntimeError, match="boom"):
        with fd:
            fd.define_tensor(shape=[-1], contiguity=True)
            raise RuntimeError("boom")
    assert fd.id() is None and FusionCache.get().num_fusions() == 0


def test_queries():
    with FusionDefinition() as fd:
        add_mul(fd)
    assert fd.inputs() == [0, 1, 2, 4] and fd.outputs() == [7]
    ir = fd.fusion_ir()
    assert isinstance(ir, str) and "add" in ir and "mul" in ir and "full" in ir


def test_repro_script_runs(reference_executor):
    with FusionDefinition() as fd:
        add_mul(fd)
    x = torch.randn(4, 6)[:, ::2]
    script = fd.repro_script_for([x, (4, 3), 0.5])
    assert (
        f"torch.randn((23,), dtype=torch.float32, device='{x.device}').as_strided((4, 3), (6, 2))"
    ) in script
    namespace = {}
    exec(script, namespace)
    assert namespace["fd"].id() == fd.id()


def test_clone(reference_executor):
    with FusionDefinition() as fd:
        add_mul(fd)
    with FusionDefinition() as copy:
        nvfuser.clone(fd, copy)
    assert repr(copy) == repr(fd) and copy.id() == fd.id()


def test_version_compares_like_a_version():
    v = version()
    assert isinstance(v, str) and str(v) in {g.version for g in GATES}  # see test_thunder_dropin
    assert v >= "0.2.8" and v >= "0.2.23" and v < "0.2.28" and v < "0.10" and v > "0.2.9"
    assert v == f"{v}+gitabc" and nvfuser.__version__ == v
    with pytest.raises(ImportError):
        import nvfuser_direct  # noqa: F401  (a legacy-only drop-in must not have it)


def test_module_names():
    from layoutfuse.nvfuser import _C
    from layoutfuse.nvfuser.pytorch_utils import torch_dtype_to_nvfuser_dtype

    assert _C.Tensor is nvfuser.Tensor and _C.Scalar is nvfuser.Scalar
    assert _C.Vector is nvfuser.Vector and _C.FusionDefinition is FusionDefinition
    assert torch_dtype_to_nvfuser_dtype(torch.bfloat16) is DataType.BFloat16
    assert torch_dtype_to_nvfuser_dtype(float) is DataType.Double
    nvfuser.enable_automatic_serialization()
    nvfuser.disable_automatic_serialization()


def test_layoutfuse_executor_runs_a_definition():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=True)
        t1 = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.add(fd.ops.sum(t0, [0]), t1))
    x, y = torch.randn(16, 8), torch.randn(8)
    (out,) = fd.execute([x, y])
    torch.testing.assert_close(out, x.sum(0) + y)
    assert_ran_kernels(fd)


def test_repro_inputs_of_one_value_and_of_integers_recreate():
    """The script's inputs are valid torch calls: a tensor of one value (make_tensor
    refuses low == high) and integers (make_tensor's integer bound is exclusive), within
    the values the call had (program 398846's script raised on its int64 input of -6)."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half)
        c = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        fd.add_output(fd.ops.add(fd.ops.cast(a, DataType.Half), b))
        fd.add_output(c)
    ints = torch.tensor([-6, -6, -6])
    spread = torch.tensor([3, 5, 4, 3])
    script = fd.repro_script_for([ints, torch.full((3,), 4.0, dtype=torch.float16), spread])
    made = script[script.index("inputs = [") :].split("\nfd.execute")[0]
    scope: dict = {"torch": torch}
    exec(made, scope)
    x, y, z = scope["inputs"]
    assert torch.equal(x.cpu(), ints.cpu())
    assert torch.equal(y.cpu(), torch.full((3,), 4.0).half().cpu())
    assert z.dtype == torch.int64 and 3 <= z.min() and z.max() <= 5
