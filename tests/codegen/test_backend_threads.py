"""Loaded kernels launched from many threads at once (codegen/backend.py, ``TRITON_STATE``).

Triton's interpreter patches ``triton.language`` for the process while it runs and keeps the
program id in one global builder; these tests launch the same kernels from 8 threads (a sum
through ``tl.sum``, a pointwise kernel through a prelude helper and libdevice), compile for
sm_90 meanwhile, and check every result against torch and the language left unpatched.
"""

import threading
import uuid

import pytest
import torch
import triton.language as tl
from triton.runtime.jit import JITFunction

from layoutfuse.codegen.backend import PRELUDE, SharedExclusiveLock, compile_for_hopper, load_kernel

HEADER = (
    "import triton\nimport triton.language as tl\n"
    "from triton.language.extra import libdevice as lib\n" + PRELUDE
)
ROW_SUM = (
    HEADER
    + """

@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_r, stride_c,
                   BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_r + cols[None, :] * stride_c, mask=mask, other=0.0)
    tl.store(out_ptr + rows, tl.sum(x, 1), mask=rows < n_rows)
"""
)
POINTWISE = (
    HEADER
    + """

@triton.jit
def pointwise_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_r, stride_c,
                     BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    cols = tl.arange(0, BLOCK_C)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = tl.load(x_ptr + rows * stride_r + cols * stride_c, mask=mask)
    tl.store(out_ptr + rows * n_cols + cols, _exp(x) * lib.tanh(x), mask=mask)
"""
)
SHAPES = [(8, 16), (12, 20), (5, 33)]
BLOCK_R, BLOCK_C = 4, 64


def _input(k: int) -> torch.Tensor:
    """Call ``k``'s input: one of 3 shapes, row-major or column-major."""
    x = torch.randn(SHAPES[k % 3], generator=torch.Generator().manual_seed(k))
    return x if k % 2 else x.t().contiguous().t()


def _launch(kernel, x: torch.Tensor, out: torch.Tensor) -> None:
    grid = (-(-x.shape[0] // BLOCK_R),)
    kernel.for_device("cpu")[grid](x, out, *x.shape, *x.stride(), BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C)


def _call(kind: str, k: int) -> bool:
    x = _input(k)
    if kind == "sum":
        out = torch.empty(x.shape[0])
        _launch(load_kernel(ROW_SUM, "row_sum_kernel"), x, out)
        return torch.allclose(out, x.sum(1), rtol=1e-5, atol=1e-5)
    out = torch.empty(x.shape)
    _launch(load_kernel(POINTWISE, "pointwise_kernel"), x, out)
    return torch.allclose(out, torch.exp(x) * torch.tanh(x), rtol=1e-5, atol=1e-6)


def _in_threads(work, n_threads: int = 8) -> list:
    """Run ``work(t)`` in ``n_threads`` threads at once; what each raised or returned."""
    results: list = [None] * n_threads
    start = threading.Barrier(n_threads)

    def run(t: int) -> None:
        start.wait()
        try:
            results[t] = work(t)
        except Exception as error:  # noqa: BLE001 -- reported by the test
            results[t] = error

    threads = [threading.Thread(target=run, args=(t,)) for t in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _language_state() -> dict:
    """What an interpreted launch patches, as it is outside one."""
    return {
        "call": JITFunction.__call__,
        "program_id": tl.program_id,
        "core_program_id": tl.core.program_id,
        "reduce": tl.core.reduce,
        "load": tl.load,
        "add": tl.tensor.__add__,
        "to": tl.tensor.to,
    }


def test_eight_threads_share_two_kernels_and_get_torch_results(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path))
    before = _language_state()

    def work(t: int) -> list[int]:  # calls that came out wrong
        ks = range(t * 50, t * 50 + 50)
        return [k for k in ks if not _call("sum" if k % 4 < 2 else "pointwise", k)]

    assert _in_threads(work) == [[]] * 8
    assert _language_state() == before
    assert _call("sum", 1) and _call("pointwise", 2)  # single-threaded, after


def _fresh_row_sum() -> str:
    return ROW_SUM.replace("    rows = ", f"    # {uuid.uuid4().hex}\n    rows = ", 1)


def test_sm90_compiles_while_other_threads_interpret(tmp_path, monkeypatch):
    """The compiler calls the builtins the interpreter patches: it must never see them."""
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path))
    signature = {
        "x_ptr": "*fp32",
        "out_ptr": "*fp32",
        "n_rows": "i32",
        "n_cols": "i32",
        "stride_r": "i32",
        "stride_c": "i32",
        "BLOCK_R": "constexpr",
        "BLOCK_C": "constexpr",
    }
    done = threading.Event()

    def work(t: int):
        if t == 0:
            try:  # a new function body each time: neither layoutfuse nor Triton's
                return [
                    compile_for_hopper(
                        _fresh_row_sum(),
                        signature,  # disk cache has it
                        {"BLOCK_R": 4, "BLOCK_C": 64},
                    ).ptx
                    != ""
                    for _ in range(3)
                ]
            finally:
                done.set()
        k, wrong = t, []
        while not done.is_set():
            k += 8
            if not _call("sum", k):
                wrong.append(k)
        return wrong

    results = _in_threads(work, n_threads=4)
    assert results == [[True] * 3, [], [], []]


@pytest.mark.parametrize("kind", ["sum", "pointwise"])
def test_a_kernel_loaded_by_many_threads_at_once_is_loaded_once(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path))
    source, name = (ROW_SUM, "row_sum_kernel") if kind == "sum" else (POINTWISE, "pointwise_kernel")
    source += f"# {uuid.uuid4().hex}\n"
    kernels = _in_threads(lambda t: load_kernel(source, name))
    assert all(k is kernels[0] for k in kernels)
    assert [p.name for p in tmp_path.iterdir()] == [kernels[0].path.name]


# --- the lock ---------------------------------------------------------------------------------


def _holding(lock, mode: str, order: list, release: threading.Event) -> threading.Thread:
    """A thread that takes ``lock`` in ``mode``, notes it in ``order``, holds until ``release``."""

    def hold():
        with getattr(lock, mode)():
            order.append(mode)
            release.wait(timeout=5)

    thread = threading.Thread(target=hold)
    thread.start()
    return thread


def _wait_for(condition) -> None:
    for _ in range(500):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("timed out")


def test_the_lock_shares_excludes_and_serves_in_order():
    lock, order = SharedExclusiveLock(), []
    first, second, third = threading.Event(), threading.Event(), threading.Event()
    threads = [_holding(lock, "shared", order, first), _holding(lock, "shared", order, first)]
    _wait_for(lambda: order == ["shared", "shared"])  # two shared holders at once
    threads.append(_holding(lock, "exclusive", order, second))
    _wait_for(lambda: lock._next_ticket == 3)
    threads.append(_holding(lock, "shared", order, third))  # after the exclusive request
    _wait_for(lambda: lock._next_ticket == 4)
    first.set()
    _wait_for(lambda: len(order) == 3)
    assert order[2] == "exclusive" and lock._shared == 0  # the late shared one waits
    second.set()
    _wait_for(lambda: len(order) == 4)
    third.set()
    for thread in threads:
        thread.join()
    assert order == ["shared", "shared", "exclusive", "shared"]


def test_the_lock_never_lets_exclusive_requests_overtake_a_shared_one():
    """A CUDA launch (shared) waiting behind an interpreted launch is served before the
    interpreted launches requested after it."""
    lock, order = SharedExclusiveLock(), []
    releases = [threading.Event() for _ in range(3)]
    threads = [_holding(lock, "exclusive", order, releases[0])]
    _wait_for(lambda: order == ["exclusive"])
    threads.append(_holding(lock, "shared", order, releases[1]))
    _wait_for(lambda: lock._next_ticket == 2)
    threads.append(_holding(lock, "exclusive", order, releases[2]))
    _wait_for(lambda: lock._next_ticket == 3)
    for release in releases:
        release.set()
    for thread in threads:
        thread.join()
    assert order == ["exclusive", "shared", "exclusive"]
