"""The pipeline, top to bottom.

``FusionExecutor.run`` (``runtime/executor.py``) validates the inputs, chooses the output
layouts (``passes/output_layout.py``) and allocates the destinations; then
``CompiledFusion.run`` takes over:

1. **segment** the fusion into kernels, once per fusion (``segmenter/segments.py``);
2. per segment, build its **problem** from the run's real extents and strides
   (``runtime/problems.py``);
3. **schedule** it: the first scheduler of ``schedule.SCHEDULERS`` that accepts it (every
   rejection recorded); one that none accepts runs its finer plan, each part scheduled
   the same way;
4. run the scheduler's **heuristics** (a frozen params value) with its part of the
   fusion's ``Tuning`` (``schedulers/tuning.py``: the knobs of every rule);
5. **emit** its kernels (``Kernel`` values) and **load** them, once per (segment, params);
6. **bind** each kernel's arguments by name and **launch** (``runtime/launch.py``).

A **library segment** (kind ``"library"``: matmul, linear, attention; ``ir/ops/library.py``)
is a segment kind of its own, not a scheduler: it has no problem, params or kernels, so it
skips steps 2-6 and calls its row's torch execution with the segment's operands
(``runtime/library.py``); its ``SegmentRun`` names the scheduler ``"library"`` and its
call is recorded (``RunRecord.library_calls``) for the replay plan. A **view segment**
(kind ``"view"``) makes a library op's operand as a torch view of an input or a library
result (``library.ViewFn``), recorded the same way.

What a call did comes back as a ``RunRecord`` (the segments, their schedulers, params and
reasons, and the launches), which the executor keeps as its last run and turns into a
replay plan. The compiled fusion holds only what every call shares: the segments and the
loaded kernels (built under a lock) and, on the GPU, the split tickets.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..analysis.accesses import made_dims, shape_of
from ..analysis.device import DeviceInfo, device_info
from ..codegen import backend
from ..codegen.kernel import Kernel
from ..dtypes import DataType, to_torch
from ..errors import UnsupportedError
from ..ir import Fusion, TensorView
from ..ir.ops.reductions import empty_fill_values
from ..schedulers import measure as measure_rules
from ..schedulers.launch import Workspace
from ..schedulers.problem import Problem
from ..schedulers.tuning import DEFAULT, Tuning
from ..segmenter.segments import KernelSpec, segment
from . import measure
from .allocate import allocate_dense, expanded_dims, writable
from .launch import LaunchRecord, argument_values, bind
from .library import LibraryCall, ViewFn, call_library
from .measure import Choice
from .problems import build_problem
from .replay import stream_key, zero_kept
from .schedule import SCHEDULERS, Scheduler, choose

Heuristics = Callable[[Scheduler, Problem, DeviceInfo, Any], Any]
"""How params are chosen, from the scheduler, the problem, the device and the scheduler's
part of the tuning: the scheduler's heuristics by default; the benchmarks' tuner passes
another function (a variant of the params) through ``CompiledFusion``."""


def default_heuristics(
    scheduler: Scheduler, problem: Problem, device: DeviceInfo, tuning: Any
) -> Any:
    return scheduler.heuristics(problem, device, tuning)


@dataclass(frozen=True)
class SegmentRun:
    """How one segment ran: its scheduler (``"empty"``: nothing to launch, reduction
    outputs filled), params, problem, kernels, why it was cut and scheduled so, and which
    schedulers rejected it first, with their reasons."""

    segment: KernelSpec
    scheduler: str
    params: Any
    problem: Problem | None
    kernels: tuple[Kernel, ...]
    reason: str
    rejected: tuple[tuple[str, str], ...] = ()
    measured: Choice | None = None  # the params were timed against others (measure.py)


@dataclass
class RunRecord:
    """What one call did, in launch order."""

    segments: list[SegmentRun] = field(default_factory=list)
    launches: list[LaunchRecord] = field(default_factory=list)
    library_calls: list[LibraryCall] = field(default_factory=list)  # in run order
    # outputs a library call's results replaced (by the output's TensorView id): the
    # executor returns these tensors for them (``library.call_library``)
    bound: dict[int, torch.Tensor] = field(default_factory=dict)
    # a reduction over an empty extent filled tensors on the host (``_fill_empty``): the
    # replay plan holds launches and library calls only, so the executor makes none
    filled: bool = False

    @property
    def params(self) -> list[Any]:
        return [s.params for s in self.segments if s.params is not None]

    @property
    def code(self) -> list[str]:
        """Each kernel's source, the kernel first (``Kernel.readable``)."""
        return [k.readable() for s in self.segments for k in s.kernels]

    def detached(self) -> RunRecord:
        """The record without the call's tensors (see ``LaunchRecord.detached``)."""
        return RunRecord(
            list(self.segments),
            [r.detached() for r in self.launches],
            [c.detached() for c in self.library_calls],
        )


@dataclass
class _Call:
    """The state of one call: its tensors by id, extents, scalars, device and record."""

    env: dict[int, torch.Tensor]
    extents: dict[int, int]
    scalars: dict[int, Any]
    device: torch.device
    info: DeviceInfo
    launch: bool
    profile: bool = False
    record: RunRecord = field(default_factory=RunRecord)
    # outputs a library result may replace, by id: whether a result may (its layout, the
    # outputs that view it)
    bindable: Mapping[int, Callable[[torch.Tensor, torch.Tensor], bool]] = field(
        default_factory=dict
    )


class CompiledFusion:
    """A fusion's segments and loaded kernels, shared by every call."""

    def __init__(
        self,
        fusion: Fusion,
        computed_outputs: list[TensorView],
        heuristics: Heuristics | None = None,
        target: DeviceInfo | None = None,
        schedulers: tuple[Scheduler, ...] = SCHEDULERS,
        tuning: Tuning = DEFAULT,
    ):
        self.fusion = fusion
        self.specs, self.intermediates = segment(fusion, computed_outputs)
        self.heuristics = heuristics  # None: ``default_heuristics``
        self.target = target  # None: the device the tensors are on
        self.tuning = tuning  # every scheduler's knobs
        self.schedulers = schedulers
        self._lock = threading.Lock()
        self._kernels: dict[tuple[int, str, Any], tuple[tuple[Kernel, Any], ...]] = {}
        # split counters, zero between launches
        self._tickets: dict[tuple[int, str, str, int], torch.Tensor] = {}

    def run(
        self,
        tensors: dict[int, torch.Tensor],
        extents: dict[int, int],
        scalars: dict[int, Any],
        device: torch.device,
        launch: bool = True,
        profile: bool = False,
        bindable: Mapping[int, Callable[[torch.Tensor, torch.Tensor], bool]] | None = None,
    ) -> RunRecord:
        """Run every segment on ``tensors`` (inputs and destinations by TensorView id);
        ``launch=False`` plans, emits and binds without launching (meta tensors too);
        ``profile``: each launch's time is measured (CUDA events on the GPU, the host's
        clock around the interpreter on the CPU); ``bindable``: the outputs whose destination
        a library result may replace (``record.bound``), by id: whether a result may
        (``FusionExecutor._bind_checks``)."""
        info = self.target or device_info(device)
        call = _Call(dict(tensors), extents, scalars, device, info, launch, profile)
        call.bindable = bindable or {}
        for tv in self.intermediates:
            call.env[id(tv)] = _intermediate(tv, extents, device)
        for spec in self.specs:
            self._run_segment(spec, call)
        if profile and launch:
            _finish_timings(call.record, device)
        return call.record

    # --- one segment -------------------------------------------------------------------------
    def _run_segment(self, spec: KernelSpec, call: _Call, why_split: str = "") -> None:
        if spec.kind == "library":
            self._run_library(spec, call)
            return
        if spec.kind == "view":
            self._run_view(spec, call)
            return
        if spec.group is None and any(n == 0 for n in shape_of(spec.root, call.extents)):
            self._fill_empty(spec, call)
            return
        problem = build_problem(spec, call.env, call.extents)
        scheduler, rejected = choose(spec, problem, call.info, self.schedulers, self.tuning)
        if scheduler is None:
            self._run_parts(spec, call, rejected)
            return
        assert problem is not None  # every scheduler rejects a segment without a problem
        tuning = self.tuning.of(scheduler.name)
        params = (self.heuristics or default_heuristics)(scheduler, problem, call.info, tuning)
        if getattr(params, "generic", False):
            made = made_dims(spec.accesses, call.extents)
            params = dataclasses.replace(params, made_ones=made) if made else params
        measured = None
        if self.heuristics is None and call.launch:
            params, measured = self._measured(spec, scheduler, problem, params, tuning, call)
        kernels = self._loaded(spec, scheduler, params)
        reason = spec.reason + why_split
        if scheduler.reason is not None:
            reason = f"{reason} ({scheduler.reason(problem, call.info, tuning)})"
        if measured is not None:
            reason = f"{reason}; {measured.describe()}"
        call.record.segments.append(
            SegmentRun(
                spec,
                scheduler.name,
                params,
                problem,
                tuple(k for k, _ in kernels),
                reason,
                rejected,
                measured,
            )
        )
        self._launch_all(spec, scheduler, problem, params, kernels, call)

    def _measured(
        self,
        spec: KernelSpec,
        scheduler: Scheduler,
        problem: Problem,
        params: Any,
        tuning: Any,
        call: _Call,
    ) -> tuple[Any, Choice | None]:
        """``params``, or the fastest of the problem's candidates (``schedulers/measure.py``)
        where they are timed: the choice, from this process, a record or timed now."""
        mt = self.tuning.measure
        alternatives = getattr(tuning, "alternatives", ())
        if not alternatives or not measure.enabled(mt):
            return params, None
        if measure_rules.why_not_measured(problem, call.device.type, call.info, mt) is not None:
            return params, None
        cands = measure_rules.candidates(
            scheduler.heuristics, problem, call.info, tuning, alternatives, mt.max_candidates
        )
        if len(cands) < 2 or cands[0] != params or not _repeatable(spec, call.env):
            return params, None
        exprs = "\n".join(repr(e) for e in spec.exprs)
        key = measure.choice_key(_device_name(call.device), scheduler.name, exprs, problem, cands)

        clocks: list[Any] = []

        def time_candidate(i: int) -> float:
            if not clocks:  # only where nothing is recorded: the flush buffer is made then
                clocks.append(_clock(call.device, call.info, mt))
            kernels = self._loaded(spec, scheduler, cands[i])
            trial = dataclasses.replace(call, record=RunRecord(), profile=False)
            return measure.time_runs(
                lambda: self._launch_all(spec, scheduler, problem, cands[i], kernels, trial),
                clocks[0],
                mt,
            )

        may_time = not measure.capturing(call.device)
        choice = measure.choose(key, len(cands), time_candidate, mt, may_time)
        clocks.clear()
        if choice is None:  # a graph is being captured and nothing is known: the rule's plan
            return params, None
        return cands[choice.winner], choice

    def _run_parts(
        self, spec: KernelSpec, call: _Call, rejected: tuple[tuple[str, str], ...]
    ) -> None:
        """No scheduler takes the segment whole: its finer plan, part by part."""
        if not spec.fallback:
            reasons = "; ".join(f"{name}: {why}" for name, why in rejected)
            raise UnsupportedError(f"no scheduler accepts the segment ({spec.reason}): {reasons}")
        for tv in spec.fallback_buffers:
            if id(tv) not in call.env:
                call.env[id(tv)] = _intermediate(tv, call.extents, call.device)
        # the rejection by the scheduler of the segment's own kind (normalization, scan,
        # a reduction with loop stores)
        kind = "scan" if spec.scan is not None else spec.kind
        why = dict(rejected).get(kind, "; ".join(w for _, w in rejected))
        for part in spec.fallback:
            self._run_segment(part, call, f"; instead of one {kind} kernel: {why}")

    def _run_library(self, spec: KernelSpec, call: _Call) -> None:
        """A library segment: its op's torch call, no kernels (``runtime/library.py``)."""
        (expr,) = spec.exprs
        shapes = [shape_of(o, call.extents) for o in spec.outputs]
        timer = _Timer(call.device) if call.profile and call.launch else None
        fn, args, slots, dests, results = call_library(
            expr,
            call.env,
            call.scalars,
            shapes,
            call.launch,
            lambda shape, dtype: self._empty(shape, dtype, call.device),
            call.bindable,
            call.record.bound,
        )
        elapsed = timer.stop() if timer is not None else None
        call.record.segments.append(SegmentRun(spec, "library", None, None, (), spec.reason))
        call.record.library_calls.append(
            LibraryCall(fn, args, slots, dests, results, len(call.record.launches), elapsed)
        )

    def _run_view(self, spec: KernelSpec, call: _Call) -> None:
        """A view segment: a library operand as a torch view of a tensor in memory, no
        kernel (``library.ViewFn``); recorded as a call, so that replays make it again."""
        base = call.env[id(spec.memory[0])]
        outs = [e.outputs[0] for e in spec.exprs]
        fn = ViewFn(
            spec.exprs, [shape_of(o, call.extents) for o in outs if isinstance(o, TensorView)]
        )
        (view,) = fn(base)
        call.env[id(spec.root)] = view
        call.record.segments.append(SegmentRun(spec, "view", None, None, (), spec.reason))
        call.record.library_calls.append(
            LibraryCall(fn, (base,), (), (None,), (view,), len(call.record.launches))
        )

    def _fill_empty(self, spec: KernelSpec, call: _Call) -> None:
        """A segment over an empty extent launches nothing; a reduction's outputs get each
        result's empty value (sum 0, max -inf, a Welford's mean NaN: see the rows)."""
        for e in spec.reductions:
            for out, value in zip(e.outputs, empty_fill_values(e)):
                if id(out) not in call.env:  # a result the kernel would not store
                    assert isinstance(out, TensorView)
                    call.env[id(out)] = _intermediate(out, call.extents, call.device)
                writable(call.env[id(out)]).fill_(value)
                call.record.filled |= call.env[id(out)].numel() > 0
        call.record.segments.append(
            SegmentRun(spec, "empty", None, None, (), f"{spec.reason} (an empty extent: no launch)")
        )
        for part in spec.epilogue_kernels:  # the epilogue, from the fills
            self._run_segment(part, call, "; the epilogue of a reduction over an empty extent")

    # --- kernels -------------------------------------------------------------------------------
    def _loaded(
        self, spec: KernelSpec, scheduler: Scheduler, params: Any
    ) -> tuple[tuple[Kernel, Any], ...]:
        """The segment's kernels for ``params`` and their loaded modules (emitted once)."""
        key = (id(spec), scheduler.name, params)
        found = self._kernels.get(key)
        if found is None:
            with self._lock:
                found = self._kernels.get(key)
                if found is None:
                    kernels = scheduler.emit(spec, params)
                    found = tuple((k, backend.load_kernel(k.source, k.name)) for k in kernels)
                    self._kernels[key] = found
                    for k in kernels:
                        _dump(k)
        return found

    def _launch_all(
        self,
        spec: KernelSpec,
        scheduler: Scheduler,
        problem: Problem,
        params: Any,
        kernels: tuple[tuple[Kernel, Any], ...],
        call: _Call,
    ) -> None:
        needed = scheduler.workspaces(spec, problem, params)
        workspaces = {w.name: self._workspace(spec, w, call) for w in needed}
        kept = [workspaces[w.name] for w in needed if w.zeroed]
        scalar_values = [call.scalars[id(s)] for s in spec.scalars]
        values = argument_values(
            spec, problem, params, call.env, call.extents, scalar_values, workspaces
        )
        for launch_spec in scheduler.launches(spec, problem, params):
            kernel, loaded = kernels[launch_spec.kernel]
            args, slots = bind(kernel, launch_spec, values, spec)
            meta = kernel.meta()
            # None: no launch (then fn is not called)
            fn: Any = loaded.for_device(call.device.type) if call.launch else None
            timer = _Timer(call.device) if call.profile and call.launch else None
            try:
                compiled = fn[launch_spec.grid](*args, **meta) if call.launch else None
            except BaseException:
                zero_kept(kept)
                raise
            call.record.launches.append(
                LaunchRecord(
                    kernel,
                    loaded,
                    fn,
                    launch_spec.grid,
                    args,
                    meta,
                    slots,
                    compiled if call.device.type == "cuda" else None,
                    timer.stop() if timer is not None else None,
                )
            )

    def _workspace(self, spec: KernelSpec, w: Workspace, call: _Call) -> torch.Tensor:
        """A scratch buffer of this call; a zeroed one (split tickets) is kept per segment,
        device and CUDA stream: every launch leaves it zeroed, and launches that share it
        do not overlap (one stream's launches run in order; one interpreted launch at a
        time on the CPU, ``backend.TRITON_STATE``). A replay keeps its own per stream
        (``replay.StreamTickets``)."""
        if not w.zeroed:
            return self._empty(w.shape, w.dtype, call.device)
        key = (id(spec), w.name, str(call.device), stream_key(call.device))
        with self._lock:
            t = self._tickets.get(key)
            if t is None or t.numel() < w.shape[0]:
                t = self._tickets[key] = torch.zeros(
                    w.shape, dtype=to_torch(w.dtype), device=call.device
                )
        return t

    def kept_tensors(self) -> frozenset[int]:
        """Ids of the tensors kept across calls (split tickets, left zeroed by every
        launch); every other scratch tensor belongs to one call."""
        with self._lock:
            return frozenset(id(t) for t in self._tickets.values())

    @staticmethod
    def _empty(shape: Sequence[int], dtype: DataType, device: torch.device) -> torch.Tensor:
        return torch.empty(tuple(shape), dtype=to_torch(dtype), device=device)


def _intermediate(tv: TensorView, extents: dict[int, int], device: torch.device) -> torch.Tensor:
    """A buffer between segments, laid out as an output is (``allocate_output``): dense,
    its expanded broadcast dims stride 0. A kernel stores such a dim once (it may not
    iterate over it: a select of an expanded input stored beside its squeeze), and a
    dense buffer would keep the rest of it unwritten for the segment that reads it."""
    shape = shape_of(tv, extents)
    return allocate_dense(shape, range(len(shape)), to_torch(tv.dtype), device, expanded_dims(tv))


def _repeatable(spec: KernelSpec, env: dict[int, torch.Tensor]) -> bool:
    """Whether running the segment again gives the same results: no store accumulates
    (an indexed write's atomic adds) and none writes memory a load of it reads."""
    n, m = spec.n_loads, spec.n_loads + spec.n_stores
    stores = spec.accesses[n:m]
    if any(a.chain and a.chain[-1].attrs.get("accumulate", False) for a in stores):
        return False
    read = {
        env[id(a.tv)].untyped_storage().data_ptr() for a in spec.accesses[:n] if id(a.tv) in env
    }
    return not any(
        id(a.tv) in env and env[id(a.tv)].untyped_storage().data_ptr() in read for a in stores
    )


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return device.type


def _clock(device: torch.device, info: DeviceInfo, mt: Any) -> Any:
    """The measured choice's clock: device time on CUDA, the host's elsewhere."""
    if device.type == "cuda":
        return measure.DeviceClock(device, info.l2_bytes, mt)
    return measure.WallClock(lambda: _synchronize(device))


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _dump(kernel: Kernel) -> None:
    """``LAYOUTFUSE_DUMP=code,schedule`` prints each new kernel's source and params."""
    what = {w.strip() for w in os.environ.get("LAYOUTFUSE_DUMP", "").split(",")}
    if "schedule" in what:
        print(f"[layoutfuse] schedule: {kernel.params}", file=sys.stderr)
    if "code" in what:
        print(f"[layoutfuse] code:\n{kernel.source}", file=sys.stderr)


class _Timer:
    """One launch's time: CUDA events on the GPU (read after the run), the host's clock
    on the CPU (the interpreter runs the kernel in the call)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            self.end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            self.start.record()
        else:
            self.t0 = time.perf_counter()

    def stop(self) -> Any:
        if self.cuda:
            self.end.record()
            return (self.start, self.end)
        return (time.perf_counter() - self.t0) * 1e3


def _finish_timings(record: RunRecord, device: torch.device) -> None:
    """Replace each launch's pending CUDA events by the milliseconds between them."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    for i, r in enumerate(record.launches):
        if isinstance(r.time_ms, tuple):
            start, end = r.time_ms
            record.launches[i] = dataclasses.replace(r, time_ms=start.elapsed_time(end))
    for i, c in enumerate(record.library_calls):
        if isinstance(c.time_ms, tuple):
            start, end = c.time_ms
            record.library_calls[i] = dataclasses.replace(c, time_ms=start.elapsed_time(end))
