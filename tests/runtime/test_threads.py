"""``FusionDefinition.execute`` from several threads and several processes at once.

The backend part (interpreted launches, kernel loading, the kernel cache) and the runtime
(each call's own ``RunRecord``; replay plans that allocate their scratch per call) must be
right under any interleaving.
"""

import multiprocessing
import threading
import time
from collections.abc import Callable

import pytest
import torch

from layoutfuse.codegen import backend
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition

SHAPES = [(8, 16), (12, 20), (5, 33)]


def _definitions(scale: float = 1.0) -> tuple[FusionDefinition, FusionDefinition]:
    """A sum and a pointwise fusion, each of a row-major and a column-major input;
    ``scale`` makes the definitions distinct (the FusionCache merges equal ones)."""
    fds = []
    for kind in ("sum", "pointwise"):
        with FusionDefinition() as fd:
            x = fd.define_tensor(
                shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[1, 0]
            )
            y = fd.define_tensor(
                shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1]
            )
            y = fd.ops.mul(y, fd.define_scalar(scale, dtype=DataType.Double))
            out = (
                fd.ops.sum(fd.ops.add(x, y), dims=[1])
                if kind == "sum"
                else fd.ops.mul(fd.ops.exp(x), y)
            )
            fd.add_output(out)
        fds.append(fd)
    return fds[0], fds[1]


def _inputs(k: int) -> list[torch.Tensor]:
    """Call ``k``'s inputs: one of 3 shapes, a row-major and a column-major tensor."""
    g = torch.Generator().manual_seed(k)
    shape = SHAPES[k % 3]
    return [torch.randn(shape, generator=g), torch.randn(shape, generator=g).t().contiguous().t()]


def _right(kind: str, fd: FusionDefinition, k: int, scale: float = 1.0) -> bool:
    x, y = _inputs(k)
    (out,) = fd.execute([x, y])
    expected = (x + y * scale).sum(1) if kind == "sum" else torch.exp(x) * (y * scale)
    return torch.allclose(out, expected, rtol=1e-5, atol=1e-5)


def _in_threads(work, n_threads: int = 8) -> list:
    """Run ``work(t)`` in ``n_threads`` threads started together; what each returned or raised."""
    results: list = [None] * n_threads
    start = threading.Barrier(n_threads)

    def run(t: int) -> None:
        start.wait()
        try:
            results[t] = work(t)
        except Exception as error:  # noqa: BLE001 -- reported by the test
            results[t] = error

    threads = [
        threading.Thread(target=run, args=(t,), name=f"worker-{t}") for t in range(n_threads)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path / "kernels"))
    FusionCache.reset()


# --- threads ----------------------------------------------------------------------------------


def test_eight_threads_call_two_warm_definitions_400_times():
    """The user's report: after warming every shape, 8 threads x 50 calls still failed, and
    single-threaded calls failed afterwards."""
    fd_sum, fd_pw = _definitions()
    for k in range(3):
        assert _right("sum", fd_sum, k) and _right("pointwise", fd_pw, k)

    def work(t: int) -> list[int]:  # calls that came out wrong
        ks = range(100 + 50 * t, 150 + 50 * t)
        return [
            k for k in ks if not _right(*(("sum", fd_sum) if k % 2 else ("pointwise", fd_pw)), k)
        ]

    assert _in_threads(work) == [[]] * 8
    assert _right("sum", fd_sum, 7) and _right("pointwise", fd_pw, 8)


def test_eight_threads_plan_and_run_definitions_of_their_own():
    """Cold: each thread defines, plans and runs its own pair (no runtime state is shared;
    the FusionCache, the kernel loader and the interpreter are)."""

    def work(t: int) -> list[int]:
        scale = 1.0 + t
        fd_sum, fd_pw = _definitions(scale)
        return [
            k
            for k in range(6)
            if not _right(*(("sum", fd_sum) if k % 2 else ("pointwise", fd_pw)), 10 * t + k, scale)
        ]

    assert _in_threads(work) == [[]] * 8
    assert FusionCache.get().num_fusions() == 16


def test_threads_finishing_one_definition_share_its_entry_and_executor(monkeypatch):
    """Creating an entry and an executor is made slow, so that every thread is inside the
    lookup-or-create at once."""
    from layoutfuse.frontend.nvfuser import cache

    def slow(cls):
        init = cls.__init__

        def slow_init(self, *args, **kwargs):
            time.sleep(0.02)
            init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", slow_init)

    slow(cache.CacheEntry)
    slow(cache.FusionExecutor)

    def work(t: int):
        fd_sum, _ = _definitions()
        return fd_sum.id(), fd_sum._entry.executor()

    results = _in_threads(work)
    assert len({fid for fid, _ in results}) == 1
    assert all(executor is results[0][1] for _, executor in results)
    assert FusionCache.get().num_fusions() == 2


def _sum_of_row_sums() -> FusionDefinition:
    """Two kernels: a row sum of exp(x) into an intermediate buffer, then its sum."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.sum(fd.ops.exp(x), dims=[1]), dims=[0]))
    return fd


def _pause_a(monkeypatch, pause: Callable[[int], bool]):
    """Thread "A"'s interpreted launches wait where ``pause(A's launch count, whether
    the launch already ran)`` says so, until ``b_done`` is set (``paused`` is set then).
    Returns (paused, b_done, A's launch grids). Install it before the launches are bound
    (a replay plan binds them when it is built)."""
    paused, b_done = threading.Event(), threading.Event()
    original = backend.InterpretedKernel.__getitem__
    a_launches: list = []

    def getitem(self, grid):
        run = original(self, grid)

        def launch(*args, **kwargs):
            a = threading.current_thread().name == "A"
            if a:
                a_launches.append(grid)
            if a and pause(len(a_launches), False):
                paused.set()
                b_done.wait(timeout=5)  # a runtime that serializes runs: go on
            out = run(*args, **kwargs)
            if a and pause(len(a_launches), True):
                paused.set()
                b_done.wait(timeout=5)
            return out

        return launch

    monkeypatch.setattr(backend.InterpretedKernel, "__getitem__", getitem)
    return paused, b_done, a_launches


def _a_then_b(fd: FusionDefinition, a, b, paused, b_done) -> dict:
    """Thread A executes ``fd`` on ``a``; thread B, once A pauses, on ``b`` whole."""
    results = {}

    def run_a():
        results["a"] = fd.execute([a])[0]

    def run_b():
        paused.wait(timeout=5)
        results["b"] = fd.execute([b])[0]
        b_done.set()

    threads = [threading.Thread(target=run_a, name="A"), threading.Thread(target=run_b, name="B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _seeded(*seeds: int) -> list[torch.Tensor]:
    return [torch.randn(8, 16, generator=torch.Generator().manual_seed(s)) for s in seeds]


@pytest.mark.usefixtures("on_cpu")  # the interleaving is forced in the interpreter
def test_a_run_planned_while_another_runs_replays_its_own_launches(monkeypatch):
    """Forced interleaving: thread A pauses before its second kernel's launch while thread B
    runs the same definition, with the same input signature, from start to end. A's later
    replay must compute A's inputs (the race leaves out A's first kernel: wrong values)."""
    fd = _sum_of_row_sums()
    paused, b_done, _ = _pause_a(monkeypatch, lambda n, ran: n == 2 and not ran)
    a, b, a2 = _seeded(0, 1, 2)
    results = _a_then_b(fd, a, b, paused, b_done)
    (later,) = fd.execute([a2])
    for name, x, out in (("A", a, results["a"]), ("B", b, results["b"]), ("A's replay", a2, later)):
        torch.testing.assert_close(
            out, torch.exp(x).sum(), rtol=1e-5, atol=1e-4, msg=lambda m, name=name: f"{name}: {m}"
        )


@pytest.mark.usefixtures("on_cpu")  # the interleaving is forced in the interpreter
def test_replays_of_one_plan_do_not_share_scratch(monkeypatch):
    """Forced interleaving of two replays of one two-kernel plan: thread B replays whole
    between thread A's two launches. Each replay allocates its own intermediate buffer,
    so A still reads its own."""
    fd = _sum_of_row_sums()
    paused, b_done, a_launches = _pause_a(monkeypatch, lambda n, ran: n == 1 and ran)
    fd.execute([torch.randn(8, 16)])  # planned (through the hook): later calls replay
    assert len(fd.executor()._plans) == 1
    a, b = _seeded(7, 8)
    results = _a_then_b(fd, a, b, paused, b_done)
    assert len(a_launches) == 2 and fd.executor().planned_runs == 1, "both replayed"
    for name, inp in (("a", a), ("b", b)):
        torch.testing.assert_close(results[name], torch.exp(inp).sum(), rtol=1e-5, atol=1e-4)


def _split_sum() -> FusionDefinition:
    """The sum of a whole fp32 tensor: a split reduction whose last program (its ticket,
    a kept tensor) combines the partials."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[0, 1]))
    return fd


def test_a_replay_takes_its_streams_own_tickets():
    """A replayed split keeps its tickets per stream (``replay.StreamTickets``): the
    planning stream's are the planned tensors, another stream's are zeroed tensors of
    its own."""
    fd = _split_sum()
    x = torch.randn(64, 4000)
    for _ in range(2):
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, x.sum(), rtol=1e-5, atol=1e-3)
    (plan,) = fd.executor()._plans.values()
    assert plan.kept and "kept = tickets(" in plan.source
    tickets = plan.replay.__globals__["tickets"]
    mine, other = tickets(0), tickets(12345)
    assert all(a is b for a, b in zip(mine, plan.kept, strict=True))
    assert all(a is not b and a.shape == b.shape for a, b in zip(other, mine, strict=True))
    assert all(int(t.count_nonzero()) == 0 for t in (*mine, *other))
    assert tickets(12345) is other


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA streams")
def test_split_reductions_on_two_streams_at_once():
    """Two threads, each on a stream of its own, replay one split sum 200 times with
    64 MB inputs (their kernels overlap): each stream's tickets count its own programs."""
    fd = _split_sum()
    streams = [torch.cuda.Stream() for _ in range(2)]
    xs = [torch.randn(4096, 4096, device="cuda") + t for t in range(2)]
    fd.execute([xs[0]])  # planned: later calls replay
    want = [x.double().sum() for x in xs]

    def work(t: int) -> int:
        wrong = 0
        with torch.cuda.stream(streams[t]):
            outs = [fd.execute([xs[t]])[0] for _ in range(200)]
            torch.cuda.current_stream().synchronize()
        for out in outs:
            wrong += not torch.allclose(out.double(), want[t], rtol=1e-4)
        return wrong

    assert _in_threads(work, 2) == [0, 0]


# --- processes --------------------------------------------------------------------------------


def _cold_process(cache_dir: str, seed: int) -> tuple[bool, list[str]]:
    """In a fresh interpreter: both definitions on every shape; (all right, warnings)."""
    import os
    import warnings

    os.environ["LAYOUTFUSE_CACHE_DIR"] = cache_dir
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fd_sum, fd_pw = _definitions()
        right = all(
            _right("sum", fd_sum, seed + k) and _right("pointwise", fd_pw, seed + k)
            for k in range(3)
        )
    return right, [str(w.message) for w in caught]


def test_four_processes_cold_start_on_one_empty_cache_dir(tmp_path):
    cache_dir = tmp_path / "shared-kernels"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.starmap(_cold_process, [(str(cache_dir), 10 * p) for p in range(4)])
    assert results == [(True, [])] * 4
    entries = sorted(p.name for p in cache_dir.iterdir())
    assert entries and all(name.startswith("kernel_") and name.endswith(".py") for name in entries)


def test_threads_replay_library_calls_with_views_and_returned_results():
    """A matmul of a sliced, transposed input (a view segment), its result returned as
    torch made it and read by the kernel after it: 8 threads replay it 25 times each on
    inputs of their own; every call gets its own views and results."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        xt = fd.ops.permute(fd.ops.slice(x, [0, 2], [6, 10], [1, 2]), [1, 0])  # [4, 6]
        m = fd.ops.matmul(xt, w)
        fd.add_output(m)
        fd.add_output(fd.ops.tanh(m))

    device = torch.empty(0).device  # the suite's device: threads do not inherit it

    def inputs(k: int) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(k)
        return [
            torch.randn(r, c, generator=g, device="cpu").to(device) for r, c in ((6, 12), (6, 5))
        ]

    def right(k: int) -> bool:
        a, b = inputs(k)
        m, t = fd.execute([a, b])
        want = a[:, 2:10:2].t() @ b
        return torch.allclose(m, want, atol=1e-5) and torch.allclose(t, torch.tanh(want), atol=1e-5)

    assert right(0)

    def work(t: int) -> list[int]:
        return [k for k in range(100 + 25 * t, 125 + 25 * t) if not right(k)]

    assert _in_threads(work) == [[]] * 8
    assert fd.executor().planned_runs == 1
    (plan,) = fd.executor()._plans.values()
    assert plan.bound == {0: 1}  # the matmul's result (made after the view's)
