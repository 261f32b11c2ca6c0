"""Measured choice, the decision half: which plans of a problem are timed on its first run.

A scheduler's heuristics are a cost model; where it cannot tell two or three plans apart
(a transpose tile's edge and warps, an outer normalization's columns per tile), the plans
are timed once on the problem's first execute on the GPU and the fastest is kept
(``runtime/measure.py``: the timing and the on-disk record).

The candidates are the scheduler's own heuristics under its tuning and under each of the
tuning's ``alternatives`` (field overrides of the scheduler's tuning dataclass), in that
order, without repeats: a problem the alternatives do not change has one candidate and is
not timed. Every candidate is a plan the heuristics could have chosen, so every one is
correct; the measurement only orders them.

Only problems that move at least ``min_l2`` times the device's L2 (a twentieth) are timed:
below that a launch's time is mostly launch latency, which the candidates share, and the
first call's cost (compiling each candidate) would weigh more than the time saved.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..analysis.device import DeviceInfo
from ..dtypes import itemsize
from .problem import Problem

Overrides = tuple[tuple[str, Any], ...]
"""Field overrides of a scheduler's tuning dataclass: ``(("transpose_edge_bytes", 128),)``."""


@dataclass(frozen=True)
class MeasureTuning:
    """The measured choice's knobs."""

    # time the candidates at all (``LAYOUTFUSE_MEASURE=0`` in the environment turns it off too)
    enabled: bool = True
    # device kinds measured on ("cpu" times the interpreter: the tests of the mechanism)
    devices: tuple[str, ...] = ("cuda",)
    # problems moving at least this many times the device's L2 (bytes loaded and stored).
    # Since the device clock (an L2 flush and a spin before each run) a timing no longer
    # sees a warm L2, so problems of a few MB are timed too: seed 2 on the H100 at bf5b350
    # with 0.05 against 1.0 (random_seed2-min_l2_0.05-20261207-bf5b350-h100.json beside
    # random_seed2-20261207-1ce8abf-h100.json): 17 cases behind a peer instead of 21, an
    # fp16 RMS norm over 8 rows of [8, 55, 8192] 15.0 -> 10.0 us, an fp32 max over 184 rows
    # 20.3 -> 18.4, a bf16 var_mean 25.1 -> 21.1, an fp32 layer norm 71.7 -> 66.6
    min_l2: float = 0.05
    # candidates timed at most (the heuristics' plan first)
    max_candidates: int = 4
    # timed runs of each candidate, after one untimed (which compiles it); the median counts
    reps: int = 5
    # a candidate whose untimed run took longer than this (ms) is timed once more only
    long_ms: float = 50.0
    # rounds over the candidates, in alternating order (the first round forward, the next
    # backward, ...); each candidate's best median counts. At 408ee5e (one forward round) the
    # rule's plan, timed first, came out 10-25% slower than it runs once the clocks are up
    # (a fp32 4-D transpose: 0.460 ms timed, 32 x 32 chosen at 0.412, which then ran 13%
    # slower than the rule's tile in the suite)
    rounds: int = 2
    # another plan replaces the rule's only when at least this fraction faster: within it
    # the medians are run-to-run noise, and the rule's plan is the reproducible one
    min_gain: float = 0.03
    # on CUDA, each timed run follows a read of this many times the L2's bytes (a buffer
    # held while the candidates are timed): the L2 holds none of the run before, and the
    # device is busy while the host launches the run (``runtime.measure.DeviceClock``)
    flush_l2: float = 2.0
    # ... and this many clock cycles of waiting on the device (``torch.cuda._sleep``; about
    # 1 ms), which the host's launch of the run must not outlast. At 200000 (some 100 us)
    # the first-call launch of a reduction (its workspaces, fills and finishing kernel)
    # outlasted it: a bf16 sum of 9 us timed 67 us, a var_mean of 21 us 92-185 us by
    # candidate (the plan of more launches paid more; seed 2, H100 at bf5b350)
    spin_cycles: int = 2_000_000


DEFAULT_TUNING = MeasureTuning()


def candidates(
    heuristics: Callable[[Problem, DeviceInfo, Any], Any],
    problem: Problem,
    device: DeviceInfo,
    tuning: Any,
    alternatives: tuple[Overrides, ...],
    limit: int,
) -> tuple[Any, ...]:
    """The plans to time: ``heuristics`` under ``tuning``, then under each alternative,
    without repeats, at most ``limit``."""
    found = [heuristics(problem, device, tuning)]
    for overrides in alternatives:
        if len(found) >= limit:
            break
        params = heuristics(problem, device, dataclasses.replace(tuning, **dict(overrides)))
        if params not in found:
            found.append(params)
    return tuple(found)


def moved_bytes(problem: Problem) -> int:
    """Bytes the problem's loads and stores span (each access's reach, in its dtype)."""
    n = problem.n_loads + problem.n_stores
    return sum((problem.max_offsets[a] + 1) * itemsize(problem.dtypes[a]) for a in range(n))


def why_not_measured(
    problem: Problem, device_kind: str, device: DeviceInfo, tuning: MeasureTuning
) -> str | None:
    """None when the problem's candidates are timed on a ``device_kind`` device ("cuda",
    "cpu") that ``device`` describes, else why not."""
    if not tuning.enabled:
        return "measured choice is off"
    if device_kind not in tuning.devices:
        return f"not measured on {device_kind}"
    moved, floor = moved_bytes(problem), tuning.min_l2 * device.l2_bytes
    if moved < floor:
        return f"moves {moved} bytes, under {floor:.0f}"
    return None
