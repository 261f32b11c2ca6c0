"""The scheduler contract and the one priority list.

A scheduler is a decision half in ``schedulers/<name>.py`` (pure functions of the segment,
its problem and the device: no code generation) and an emission half in
``codegen/<name>.py``; ``Scheduler`` joins them. The decision half provides:

* ``can_schedule(segment, problem, device, tuning) -> str | None``: None to accept, else
  why not;
* ``heuristics(problem, device, tuning) -> Params``: a frozen params dataclass, every field
  of which shapes the kernel (so params are the kernel-cache key);
* ``launches(segment, problem, params) -> tuple[LaunchSpec, ...]``: per kernel, its grid
  and the integer arguments that depend on the run's extents;
* optionally ``workspaces(segment, problem, params)`` (scratch buffers) and
  ``reason(problem, device, tuning)`` (why the heuristics chose what they chose).

``tuning`` is the scheduler's part of a ``schedulers.tuning.Tuning`` (its knobs: a frozen
dataclass of the scheduler's module; ``Tuning.of(NAME)``); each takes its module's
``DEFAULT_TUNING`` when not given.

The emission half provides ``emit(segment, params) -> tuple[Kernel, ...]``.

``choose`` walks ``SCHEDULERS`` in order and takes the first that accepts (each asked with
its part of the tuning), recording every rejection's reason; a segment no scheduler accepts runs its finer plan (its segments'
``fallback``, each scheduled the same way) or is an error that lists the reasons.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..analysis.device import DeviceInfo
from ..codegen import normalization as normalization_code
from ..codegen import pointwise as pointwise_code
from ..codegen import reduction as reduction_code
from ..codegen import scan as scan_code
from ..codegen.kernel import Kernel
from ..schedulers import normalization, pointwise, reduction, scan
from ..schedulers.launch import LaunchSpec, Workspace
from ..schedulers.problem import Problem
from ..schedulers.tuning import DEFAULT, Tuning
from ..segmenter.segments import KernelSpec


def _no_workspaces(segment: KernelSpec, problem: Problem, params: Any) -> tuple[Workspace, ...]:
    return ()


@dataclass(frozen=True)
class Scheduler:
    """One scheduler: its decision half and its emission half."""

    name: str
    can_schedule: Callable[[KernelSpec, Problem | None, DeviceInfo, Any], str | None]
    heuristics: Callable[[Problem, DeviceInfo, Any], Any]  # (problem, device, tuning)
    launches: Callable[[KernelSpec, Problem, Any], tuple[LaunchSpec, ...]]
    emit: Callable[[KernelSpec, Any], tuple[Kernel, ...]]
    workspaces: Callable[[KernelSpec, Problem, Any], tuple[Workspace, ...]] = _no_workspaces
    reason: Callable[[Problem, DeviceInfo, Any], str] | None = None

    @classmethod
    def of(cls, decisions: ModuleType, emission: ModuleType) -> Scheduler:
        return cls(
            decisions.NAME,
            decisions.can_schedule,
            decisions.heuristics,
            decisions.launches,
            emission.emit,
            getattr(decisions, "workspaces", _no_workspaces),
            getattr(decisions, "reason", None),
        )


SCHEDULERS: tuple[Scheduler, ...] = (
    Scheduler.of(normalization, normalization_code),
    Scheduler.of(reduction, reduction_code),
    Scheduler.of(pointwise, pointwise_code),
    Scheduler.of(scan, scan_code),
)
"""The priority list: the first scheduler that accepts a segment schedules it."""


def choose(
    segment: KernelSpec,
    problem: Problem | None,
    device: DeviceInfo,
    schedulers: tuple[Scheduler, ...] = SCHEDULERS,
    tuning: Tuning = DEFAULT,
) -> tuple[Scheduler | None, tuple[tuple[str, str], ...]]:
    """The first scheduler that accepts ``segment`` under its part of ``tuning``, and
    (name, reason) of each that rejected it before (all of them when none accepts)."""
    rejected: list[tuple[str, str]] = []
    for s in schedulers:
        why = s.can_schedule(segment, problem, device, tuning.of(s.name))
        if why is None:
            return s, tuple(rejected)
        rejected.append((s.name, why))
    return None, tuple(rejected)
