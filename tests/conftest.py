"""Shared pytest options.

``--full`` runs the tests marked ``full`` (large sizes, whole sweeps). Without it, CI
runs a fixed, seeded sample; with it, the full sets (meant for the GPU).

``--device cuda`` makes CUDA the default torch device, so every test that builds its
tensors without naming a device runs the same checks with CUDA tensors (compiled
kernels) instead of CPU tensors (Triton's interpreter).

Fixtures shared by several directories live here; helpers shared by test modules live in
``tests/support`` (no test module imports another).
"""

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors


class _SeededOnCpu(TorchFunctionMode):
    """With a non-CPU default device, a factory given a CPU ``torch.Generator`` draws on
    the CPU (the tests' seeded values stay the same) and moves the result there."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        gen = kwargs.get("generator")
        if (
            gen is not None
            and gen.device.type == "cpu"
            and kwargs.get("device") is None
            and func in _device_constructors()
        ):
            kwargs["device"] = "cpu"
            return func(*args, **kwargs).to(torch.get_default_device())
        return func(*args, **kwargs)


@pytest.fixture(scope="module")
def kernel_cache_in_tmp(tmp_path_factory):
    """Kernels of one test module cached in a fresh directory (``LAYOUTFUSE_CACHE_DIR``):
    a module opts in with ``pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path_factory.mktemp("kernels")))
        yield


def pytest_addoption(parser):
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="run the tests marked full (seed sizes, whole sweeps)",
    )
    parser.addoption(
        "--device",
        default="cpu",
        choices=("cpu", "cuda"),
        help="default device of the tensors tests build (cuda: compiled kernels)",
    )
    parser.addoption(
        "--shard",
        default="",
        help="I/N: run only every N-th collected test, starting at I (parallel runs)",
    )


def pytest_configure(config):
    if config.getoption("--device") == "cuda":
        if not torch.cuda.is_available():
            raise pytest.UsageError("--device cuda: no CUDA device here")
        torch.set_default_device("cuda")
        _SeededOnCpu().__enter__()


def pytest_collection_modifyitems(config, items):
    shard = config.getoption("--shard")
    if shard:
        i, n = (int(v) for v in shard.split("/"))
        keep = [t for k, t in enumerate(items) if k % n == i]
        config.hook.pytest_deselected(items=[t for k, t in enumerate(items) if k % n != i])
        items[:] = keep
    if config.getoption("--full"):
        return
    skip = pytest.mark.skip(reason="marked full: run with --full")
    for item in items:
        # the marker, not ``item.keywords``: a parametrize id "full" is a keyword too
        # (fd.ops.full's bad-argument cases and a factory case were skipped unmarked)
        if item.get_closest_marker("full") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _rules_plans(request, monkeypatch):
    """The heuristics' own plans: the measured choice (on by default on CUDA, for problems
    of a few MB and up) is off in every test not marked ``measured``. Tests assert the
    rules' plans; on a GPU a problem they run would otherwise get whichever candidate
    timed fastest (a transpose's tile edge, under ``--device cuda`` at 5ef0533)."""
    if request.node.get_closest_marker("measured") is None:
        monkeypatch.setenv("LAYOUTFUSE_MEASURE", "0")


@pytest.fixture
def on_cpu():
    """CPU tensors by default, also under ``--device cuda``: for tests of Triton's CPU
    interpreter itself (its casts, its launches from several threads)."""
    with torch.device("cpu"):
        yield
