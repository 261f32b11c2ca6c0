"""Timing, ceilings, environment, and the loop that measures one case on every system.

Kernel time on CUDA is the median of CUDA-event-timed calls with L2 emptied before
each (``time_kernel``: by a read of 4x the L2 by default, by ``do_bench``'s zeroing with
``LAYOUTFUSE_BENCH_FLUSH=write``, the method of runs before session 4); end-to-end cases
(``Case.timing == "host"``) and every case off CUDA use a ``time.perf_counter`` loop
with a synchronize around it. Inputs smaller than ~4x the L2 cache are rotated
among several copies so that a timed call does not find its input in L2.

GB/s counts the inputs read once and the output written once; percentages are of
the read ceiling measured in the same process (``x.sum()`` over a 4 GiB fp32 vector).
"""

from __future__ import annotations

import datetime
import itertools
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from benchmarks.cases import Case
from benchmarks.reference import as_outputs, check_result, make_inputs, reference

CEILING_ELEMS_CUDA = 1 << 30  # 4 GiB of fp32
CEILING_ELEMS_CPU = 1 << 22
DEFAULT_L2_BYTES = 60 * 2**20  # H200
MAX_ROTATION = 16
ERROR_CHARS = 1500
COMMIT_ENV = "LAYOUTFUSE_BENCH_COMMIT"  # the commit, where the tree has no .git (device copies)
CHECKOUT = Path(__file__).resolve().parents[1]  # git runs here: the commit of the code that ran


class SystemUnavailable(Exception):
    """A system cannot run at all (not importable, no compiler): later cases skip it."""


class System(Protocol):
    """A thing we measure. ``prepare`` returns the callable to time on the inputs; an
    optional ``schedule()`` describes what the last prepared callable chose."""

    name: str

    def prepare(self, case: Case, inputs: list[torch.Tensor]) -> Callable[..., torch.Tensor]: ...


Timer = Callable[[Callable[[], object], Case], float]


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_loop(
    fn: Callable[[], object],
    device: str,
    samples: int = 15,
    sample_s: float = 0.01,
    budget_s: float = 0.5,
) -> float:
    """Median milliseconds per call of ``fn``, from synchronized loops of about
    ``sample_s`` seconds each: ``samples`` of them, fewer (3 at least) where that
    would take over ``budget_s`` (slow calls, as in Triton's CPU interpreter)."""
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    one = max(time.perf_counter() - start, 1e-7)
    calls = max(1, min(10_000, int(sample_s / one)))
    samples = max(3, min(samples, int(budget_s / (one * calls))))
    per_call = []
    for _ in range(samples):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        synchronize(device)
        per_call.append((time.perf_counter() - start) / calls)
    return statistics.median(per_call) * 1e3


FLUSH_ENV = "LAYOUTFUSE_BENCH_FLUSH"  # "read" (default) or "write": how L2 is emptied
FLUSH_MODES = ("read", "write")
_flush_buffers: dict[str, torch.Tensor] = {}


def flush_mode() -> str:
    mode = os.environ.get(FLUSH_ENV, "read")
    if mode not in FLUSH_MODES:
        raise ValueError(f"{FLUSH_ENV}={mode!r}: expected one of {FLUSH_MODES}")
    return mode


def flush_read(device: str) -> None:
    """Empty L2 of the timed call's data by reading a buffer of 4x its size: the lines it
    leaves are clean, so the timed call pays no write-back of someone else's data."""
    if device not in _flush_buffers:
        _flush_buffers[device] = torch.ones(4 * l2_bytes(device) // 4, device=device)
    _flush_buffers[device].sum()


def time_kernel(fn: Callable[[], object], device: str, flush: str | None = None) -> float:
    """Median milliseconds of ``fn`` as the device sees it, L2 emptied before each call.

    ``flush="write"`` is ``triton.testing.do_bench``: it zeroes a 256 MiB buffer before
    each call, which leaves L2 full of dirty lines; the timed call then pays for writing
    them back (up to the L2's size in extra DRAM traffic: about 20% of a 256 MiB read on
    the H200). ``flush="read"`` (the default since session 4) reads a buffer of 4x the L2
    instead, so L2 holds only clean lines; both are recorded with CUDA events around each
    call, median of the calls."""
    if not device.startswith("cuda"):
        return time_loop(fn, device)
    import triton.testing

    flush = flush or flush_mode()
    if flush == "write":
        return float(triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median"))
    fn()
    torch.cuda.synchronize()
    probe = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    probe[0].record()
    for _ in range(3):
        fn()
    probe[1].record()
    torch.cuda.synchronize()
    est = max(probe[0].elapsed_time(probe[1]) / 3, 1e-4)
    for _ in range(max(1, int(10 / est))):
        fn()
    reps = max(5, min(1000, int(50 / est)))
    events = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(reps)
    ]
    for start, end in events:
        flush_read(device)
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return float(statistics.median(s.elapsed_time(e) for s, e in events))


def kernel_times(fn: Callable[[], object], device: str, reps: int = 20) -> dict[str, float]:
    """Device milliseconds per call of each kernel ``fn`` launches, by kernel name (CUDA
    only), from the profiler's kernel records over ``reps`` calls, L2 emptied before each
    (``flush_read``; the flush's own kernels are measured alone and taken out)."""
    from torch.profiler import ProfilerActivity, profile

    def per_name(body: Callable[[], None]) -> dict[str, float]:
        body()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                body()
            torch.cuda.synchronize()
        out: dict[str, float] = {}
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                us = ev.time_range.elapsed_us()
                out[ev.name] = out.get(ev.name, 0.0) + us / 1e3 / reps
        return out

    flush = per_name(lambda: flush_read(device))

    def timed() -> None:
        flush_read(device)
        fn()

    every = per_name(timed)
    times = {k: v - flush.get(k, 0.0) for k, v in every.items()}
    return {k: v for k, v in times.items() if v > 1e-4}


def default_timer(device: str) -> Timer:
    def timer(fn: Callable[[], object], case: Case) -> float:
        if case.timing == "host":
            return time_loop(fn, device)
        return time_kernel(fn, device)

    return timer


def l2_bytes(device: str) -> int:
    if device.startswith("cuda"):
        return int(
            getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
            or DEFAULT_L2_BYTES
        )
    return DEFAULT_L2_BYTES


def rotation_count(input_bytes: int, device: str) -> int:
    """How many input copies to cycle through so that they span ~4x the L2 cache."""
    if not device.startswith("cuda") or input_bytes <= 0:
        return 1
    return max(1, min(MAX_ROTATION, math.ceil(4 * l2_bytes(device) / input_bytes)))


def measure_ceilings(device: str, elems: int | None = None) -> dict:
    """Read ceiling (``x.sum()`` of a large fp32 vector) and device copy bandwidth
    (``b.copy_(a)``, bytes read + written)."""
    if elems is None:
        elems = CEILING_ELEMS_CUDA if device.startswith("cuda") else CEILING_ELEMS_CPU
    a = torch.randn(elems, device=device)
    read_ms = time_kernel(lambda: a.sum(), device)
    b = torch.empty_like(a)
    copy_ms = time_kernel(lambda: b.copy_(a), device)
    read_bytes, copy_bytes = elems * 4, 2 * elems * 4
    return {
        "read_gbps": gbps(read_bytes, read_ms),
        "read_ms": read_ms,
        "read_bytes": read_bytes,
        "copy_gbps": gbps(copy_bytes, copy_ms),
        "copy_ms": copy_ms,
        "copy_bytes": copy_bytes,
    }


def gbps(nbytes: int, ms: float) -> float:
    return nbytes / ms / 1e6


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(CHECKOUT), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def repo_root() -> str | None:
    return _git("rev-parse", "--show-toplevel")


def environment(device: str, command: str | None = None) -> dict:
    """What a result file records of its run: ``command`` (the suite's command line) and
    ``argv`` (the process's), the date, the commit, the versions and the device."""
    import triton

    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    env = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": getattr(triton, "__version__", None),
        "cuda": torch.version.cuda,
        "device": device,
        "device_name": platform.processor() or platform.machine(),
        # a device copy's .git can be stale: the commit named by the caller wins
        "git_commit": os.environ.get(COMMIT_ENV) or commit,
        "git_dirty": None if status is None else bool(status),
        "command": command,
        "argv": list(sys.argv),
        "flush": flush_mode(),
    }
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(device)
        env.update(
            device_name=props.name,
            sm_count=props.multi_processor_count,
            l2_bytes=l2_bytes(device),
            memory_bytes=props.total_memory,
        )
    return env


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def format_error(e: BaseException) -> str:
    """``Type: message`` and the innermost frame, cut to ERROR_CHARS."""
    text = f"{type(e).__name__}: {e}"
    frames = traceback.extract_tb(e.__traceback__)
    if frames:
        last = frames[-1]
        text += f" [at {last.filename}:{last.lineno} in {last.name}]"
    return text[:ERROR_CHARS]


def result(
    ms=None, nbytes=0, read_gbps=None, error=None, schedule=None, first_s=None, measured=None
) -> dict:
    """One system's figures on one case; ``first_s``: its first call's seconds (compiling,
    and layoutfuse's measured choices, ``measured``: what each one timed)."""
    rate = gbps(nbytes, ms) if ms else None
    pct = 100 * rate / read_gbps if rate is not None and read_gbps else None
    row = {"ms": ms, "gbps": rate, "pct": pct, "error": error, "schedule": schedule}
    row["first_s"] = first_s
    if measured:
        row["measured"] = measured
    return row


def unwritten_bytes(out) -> int:
    """Bytes of the outputs that are not stored: an output expanded along a dim (stride 0,
    as nvFuser returns an expanded broadcast) holds one element where its shape counts
    the dim's extent. A system's GB/s counts only what it wrote (``case.bytes_moved``
    less these), and the cases behind a peer compare times: a softmax over the kept dim
    of an expanded input wrote 3 KB of a nominal 524 MB (r1_064), which made 90682 GB/s."""
    total = 0
    for o in as_outputs(out):
        if not isinstance(o, torch.Tensor) or o.numel() == 0:
            continue
        stored = math.prod(n for n, st in zip(o.shape, o.stride()) if st != 0)
        total += (o.numel() - stored) * o.element_size()
    return total


def case_header(case: Case, suite: str) -> dict:
    return {
        "case": case.name,
        "suite": suite,
        "group": case.group,
        "op": case.op,
        "shape": list(case.shape),
        "dtype": case.dtype,
        "order": list(case.order),
        "dims": list(case.dims),
        "pinned": list(case.out_order) if case.out_order is not None else None,
        "view": [list(p) for p in case.view] if case.view else None,
        "timing": case.timing,
        "bytes": case.bytes_moved,
    }


@dataclass(frozen=True)
class CaseKind:
    """What the harness needs of a kind of case: the row's header, the inputs of the
    ``seed``-th rotation set, and a checker that, given the first set, returns the check of a
    system's result (raises AssertionError). ``SUITE_CASES`` is :class:`Case`'s; the ops
    suite (:mod:`benchmarks.op_cases`) has its own."""

    header: Callable[[Any, str], dict]
    inputs: Callable[[Any, str, int], list]
    checker: Callable[[Any, list], Callable[[Any], None]]


def reference_checker(case: Case, inputs: list[torch.Tensor]) -> Callable[[Any], None]:
    ref = reference(case, inputs)
    return lambda out: check_result(case, out, ref)


SUITE_CASES = CaseKind(case_header, make_inputs, reference_checker)


@dataclass
class Harness:
    """Measures cases on ``systems``. Correctness (the case kind's check, against the fp32
    reference for a :class:`Case`) comes before timing; a failing system gets an error
    entry and the run goes on."""

    systems: list[System]
    device: str
    read_gbps: float | None
    timer: Timer | None = None
    disabled: dict[str, str] = field(default_factory=dict)
    kind: CaseKind = SUITE_CASES

    def __post_init__(self) -> None:
        if self.timer is None:
            self.timer = default_timer(self.device)

    def run_case(self, case: Case, suite: str) -> dict:
        row = self.kind.header(case, suite)
        n_sets = rotation_count(case.input_bytes, self.device)
        input_sets = [self.kind.inputs(case, self.device, i) for i in range(n_sets)]
        check = self.kind.checker(case, input_sets[0])
        for system in self.systems:
            row[system.name] = self._measure(system, case, input_sets, check)
        del input_sets, check
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
            row["cuda_allocated_after"] = torch.cuda.memory_allocated(self.device)
        return row

    def _measure(self, system: System, case: Case, input_sets, check) -> dict:
        if system.name in self.disabled:
            return result(error=f"skipped: {self.disabled[system.name]}")
        schedule = measured = first_s = None
        try:
            t0 = time.perf_counter()
            fn = system.prepare(case, input_sets[0])
            out = fn(*input_sets[0])
            synchronize(self.device)
            first_s = time.perf_counter() - t0
            describe = getattr(system, "schedule", None)
            schedule = describe() if describe else None
            choices = getattr(system, "measured", None)
            measured = choices() if choices else None
            check(out)
            unwritten = unwritten_bytes(out)
            tensors = [x for x in input_sets[0] if isinstance(x, torch.Tensor)]
            if any(shares_memory(o, x) for o in as_outputs(out) for x in tensors):
                raise AssertionError("the output aliases an input: no copy was made")
            del out
            rotation = itertools.cycle(input_sets)
            ms = self.timer(lambda: fn(*next(rotation)), case)
        except SystemUnavailable as e:
            self.disabled[system.name] = str(e)
            return result(error=f"unavailable: {e}", schedule=schedule)
        except Exception as e:
            return result(error=format_error(e), schedule=schedule)
        row = result(
            ms,
            case.bytes_moved - unwritten,
            self.read_gbps,
            None,
            schedule,
            first_s=first_s,
            measured=measured,
        )
        if unwritten:
            row["unwritten_bytes"] = unwritten
        return row
