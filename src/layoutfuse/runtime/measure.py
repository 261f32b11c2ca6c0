"""Measured choice, the timing half (the decision half: ``schedulers/measure.py``).

On a problem's first execute, each candidate plan runs once untimed (which compiles it),
then ``reps`` timed runs; the median decides, and the winner runs the call. The choice is
kept per process and written to the kernel cache directory as a data record
(``choice_<key>.json``), so another process, or a later session, takes it without timing:

- the key is a digest of the device's name, the scheduler, the segment's expressions, the
  problem (extents, strides, dtypes) and the candidates' params: a record is only ever read
  back for the same candidates of the same problem;
- a record that cannot be read, or that holds anything but a winner among the key's
  candidates (empty, truncated, garbled, another key's), is measured again and rewritten,
  with a ``KernelCacheWarning``; it is data, never code, and any winner is a correct plan;
- two threads of one process that meet the same problem first measure it once (one
  lock per key); two processes may both measure it, and each record write is atomic.

On a CUDA device each run is timed on the device (``DeviceClock``: CUDA events, the L2
emptied before, the host's launch time not counted), as the benchmark times it; on the
CPU interpreter by the host's clock. The first call's cost is that of compiling each
candidate and ``1 + reps`` runs of each (one more only, past ``long_ms``), and on CUDA a
buffer of ``flush_l2`` L2s while it measures; it is reported on the choice (``cost_s``)
and in the segment's reason. ``LAYOUTFUSE_MEASURE=0`` turns the measured choice off (the rule's plan
runs), as does ``Tuning.measure.enabled``.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..codegen import kernel_cache
from ..errors import KernelCacheWarning
from ..schedulers.measure import MeasureTuning

RECORD_FORMAT = "layoutfuse-choice-2"  # 2: device time (DeviceClock)


@dataclass(frozen=True)
class Choice:
    """A measured choice: each candidate's median time (ms; None where it failed to run),
    the winner's index, whether it was read from a record, and the seconds the first call
    spent measuring (compiling and timing; 0 when read)."""

    times_ms: tuple[float | None, ...]
    winner: int
    recorded: bool
    cost_s: float

    def describe(self) -> str:
        times = ", ".join("failed" if t is None else f"{t:.3f}" for t in self.times_ms)
        where = "recorded" if self.recorded else f"first call +{self.cost_s:.2f} s"
        return (
            f"measured: candidate {self.winner + 1} of {len(self.times_ms)} (ms: {times}; {where})"
        )


def enabled(tuning: MeasureTuning) -> bool:
    return tuning.enabled and os.environ.get("LAYOUTFUSE_MEASURE", "1") != "0"


def choice_key(
    device_name: str, scheduler: str, exprs: str, problem: Any, cands: Sequence[Any]
) -> str:
    text = "\n".join(
        [RECORD_FORMAT, device_name, scheduler, exprs, repr(problem), *map(repr, cands)]
    )
    return hashlib.sha256(text.encode()).hexdigest()


_CHOSEN: dict[str, Choice] = {}
_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()


def choose(
    key: str,
    n_candidates: int,
    time_candidate: Callable[[int], float],
    tuning: MeasureTuning,
    may_time: bool = True,
) -> Choice | None:
    """The choice among ``n_candidates`` plans of ``key``: this process's, else the
    record's, else measured with ``time_candidate(i)`` (ms; it raises where candidate ``i``
    cannot run: then it is not chosen; candidate 0, the rule's plan, must run); None where
    nothing is known and ``may_time`` is False (a CUDA graph being captured)."""
    with _GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        found = _CHOSEN.get(key)
        if found is None:
            found = _recorded(key, n_candidates)
        if found is None:
            if not may_time:
                return None
            found = _measure(n_candidates, time_candidate, tuning.min_gain, tuning.rounds)
            _write(key, found)
        _CHOSEN[key] = found
        return found


def capturing(device: torch.device) -> bool:
    """Whether the current stream of ``device`` is capturing a CUDA graph: no timing then
    (the clock synchronizes, and the timed runs would join the graph)."""
    return device.type == "cuda" and bool(torch.cuda.is_current_stream_capturing())


def chosen() -> dict[str, Choice]:
    """This process's measured choices, by key."""
    with _GUARD:
        return dict(_CHOSEN)


def forget() -> None:
    """Forget this process's choices (records on disk stay): the tests."""
    with _GUARD:
        _CHOSEN.clear()


def _measure(
    n: int, time_candidate: Callable[[int], float], min_gain: float = 0.0, rounds: int = 1
) -> Choice:
    """Times every candidate in ``rounds`` rounds of alternating order (each candidate's
    best median counts: no candidate pays for being timed first); the fastest wins where
    it beats the rule's plan (candidate 0) by ``min_gain``, else the rule's plan runs. A
    candidate that raises is not timed again nor chosen; the rule's plan must run."""
    t0 = time.perf_counter()
    times: list[float | None] = [None] * n
    failed: set[int] = set()
    for r in range(max(1, rounds)):
        for i in range(n) if r % 2 == 0 else reversed(range(n)):
            if i in failed:
                continue
            try:
                t = time_candidate(i)
            except Exception:  # a plan that cannot run here (resources, compilation)
                if i == 0:
                    raise
                failed.add(i)
                times[i] = None
                continue
            prev = times[i]
            times[i] = t if prev is None else min(prev, t)
    ran = [(t, i) for i, t in enumerate(times) if t is not None]
    best, winner = min(ran)
    rule = times[0]
    if rule is not None and best > rule * (1.0 - min_gain):
        winner = 0
    return Choice(tuple(times), winner, False, time.perf_counter() - t0)


class WallClock:
    """Host milliseconds of a run to its end (the CPU interpreter: no device to time)."""

    def __init__(self, sync: Callable[[], None]):
        self.sync = sync

    def time(self, run: Callable[[], None]) -> float:
        t0 = time.perf_counter()
        run()
        self.sync()
        return (time.perf_counter() - t0) * 1e3


class DeviceClock:
    """Device milliseconds of a run on a CUDA device, as the benchmark times it: CUDA
    events around the run, after a read of ``flush_l2`` times the L2's bytes. The read
    empties the L2 of the run before (a problem of one or two L2s would otherwise read
    from it) and, with ``spin_cycles`` of waiting after it, keeps the device busy while the
    host launches the run, so the host's launch time is not counted: it is the same for
    every candidate and overlaps the device in a stream of calls. Host wall time had
    counted it: 0.32-0.35 ms for a sum whose kernel ran 0.22 (an H100, session 19), which
    both blurred the candidates' difference and weighed a plan of two launches against
    one of one. Where the device has no room for the read's buffer, the runs are timed
    without it (``flush_buffer``): the measurement must not fail the call."""

    def __init__(self, device: Any, l2_bytes: int, tuning: MeasureTuning):
        self.device = torch.device(device)
        self.flush = flush_buffer(self.device, int(l2_bytes * tuning.flush_l2))
        self.spin = tuning.spin_cycles

    def sync(self) -> None:
        torch.cuda.synchronize(self.device)

    def time(self, run: Callable[[], None]) -> float:
        cuda = torch.cuda
        with cuda.device(self.device):  # the events and the spin on the run's device
            start = cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            if self.flush is not None:
                self.flush.sum()
            if self.spin and hasattr(cuda, "_sleep"):  # the device waits while the host launches
                cuda._sleep(self.spin)  # type: ignore[no-untyped-call]
            start.record()
            run()
            end.record()
            end.synchronize()
        return float(start.elapsed_time(end))


def flush_buffer(device: torch.device, nbytes: int) -> torch.Tensor | None:
    """A buffer of ``nbytes`` (fp32 zeros) to read the L2 empty with, or None where the
    device has no room for it (or ``nbytes`` is 0)."""
    if nbytes < 4:
        return None
    try:
        return torch.zeros(nbytes // 4, dtype=torch.float32, device=device)
    except torch.OutOfMemoryError:
        return None


def time_runs(run: Callable[[], None], clock: Any, tuning: MeasureTuning) -> float:
    """The median milliseconds of ``run`` on ``clock`` (``DeviceClock``, ``WallClock``)
    after one untimed run (which compiles it): ``reps`` runs, or one where the untimed
    one took over ``long_ms``."""
    t0 = time.perf_counter()
    run()
    clock.sync()
    reps = 1 if (time.perf_counter() - t0) * 1e3 > tuning.long_ms else max(1, tuning.reps)
    return float(statistics.median(clock.time(run) for _ in range(reps)))


def _record_name(key: str) -> str:
    return f"choice_{key[:32]}.json"


def _recorded(key: str, n: int) -> Choice | None:
    data = kernel_cache.read_record(_record_name(key))
    if data is None:
        return None
    try:
        doc = json.loads(data)
        times = doc["times_ms"]
        winner = doc["winner"]
        ok = (
            doc["format"] == RECORD_FORMAT
            and doc["key"] == key
            and isinstance(winner, int)
            and isinstance(times, list)
            and len(times) == n
            and 0 <= winner < n
            and isinstance(times[winner], (int, float))
        )
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        warnings.warn(
            f"kernel cache: the measured choice {_record_name(key)} is damaged or another "
            f"problem's; measured again",
            KernelCacheWarning,
            stacklevel=4,
        )
        return None
    return Choice(tuple(times), winner, True, 0.0)


def _write(key: str, c: Choice) -> None:
    doc = {"format": RECORD_FORMAT, "key": key, "times_ms": list(c.times_ms), "winner": c.winner}
    try:
        kernel_cache.write_record(_record_name(key), json.dumps(doc).encode())
    except OSError as error:  # no cache to write: the choice holds for this process
        warnings.warn(
            f"kernel cache: the measured choice could not be written ({error})",
            KernelCacheWarning,
            stacklevel=4,
        )
