"""FusionDefinition: nvFuser's legacy Python frontend over the layoutfuse IR.

Lifecycle: ``with FusionDefinition() as fd:`` records a definition (``define_*``,
``fd.ops.*``, ``add_output``); leaving the block looks the printed records up in
the FusionCache, so structurally equal definitions share ``fd.id()``, IR and
executor. ``execute`` runs the fusion through ``layoutfuse.runtime``. A subclass
may instead implement ``definition()``, which ``execute`` records on first use.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import torch

from ...errors import DefinitionError, InputListError, UnsupportedError, describe
from .cache import CacheEntry, FusionCache
from .define import DefineMixin
from .ops_namespace import Operators
from .printer import function_text
from .recording import Recorder
from .repro import InputReproducer, repro_script


@dataclass(frozen=True)
class KernelProfile:
    """One launch of a profiled execution: the kernel, its scheduler and its time in
    milliseconds (``clock``: ``"cuda"`` events on the GPU; on the CPU ``"host"``, the
    interpreter's run inside the call)."""

    name: str
    scheduler: str
    time_ms: float
    clock: str


@dataclass(frozen=True)
class FusionProfile:
    """What ``fd.profile()`` reports after ``execute(..., profile=True)``: the segments
    that ran, each launch's kernel and time, and the call's host wall time."""

    fusion_id: int
    segments: int
    host_time_ms: float
    kernel_profiles: tuple[KernelProfile, ...] = field(default_factory=tuple)

    @property
    def kernel_time_ms(self) -> float:
        return sum(k.time_ms for k in self.kernel_profiles)


def flatten_inputs(inputs) -> list:
    """Execute arguments with lists/tuples (vector inputs) spliced in, as nvFuser does."""
    flat = []
    for x in inputs:
        if isinstance(x, list | tuple):
            flat.extend(x)
        else:
            flat.append(x)
    return flat


def normalize_device(device):
    """``device`` as a torch.device (an int is a CUDA index), or None."""
    if device is None or isinstance(device, torch.device):
        return device
    if isinstance(device, int) and not isinstance(device, bool):
        return _cuda_device(device)  # Thunder's _selected_device, on every call
    return torch.device(device)


@functools.cache
def _cuda_device(index: int) -> torch.device:
    return torch.device("cuda", index)


class FusionDefinition(DefineMixin):
    def __init__(
        self,
        id: int | None = None,
        max_length: int = 9999,
        use_multidevice_executor: bool = False,
        backend_type=None,
    ):
        self.ops = Operators(self)
        self.max_length = max_length
        self.profiled = False
        self.last_input_reproducers: list[InputReproducer] | None = None
        self._entry: CacheEntry | None = None
        self._recorder: Recorder | None = None
        self._profile: FusionProfile | None = None
        self._debug_output: str | None = None
        self._replay = None  # the executor's replay, once this definition has run
        if use_multidevice_executor:
            raise UnsupportedError("FusionDefinition: multidevice execution is not supported")
        if id is not None:
            self._entry = FusionCache.get().entry(id)

    # --- definition -------------------------------------------------------------------------
    def __enter__(self) -> FusionDefinition:
        return self._setup_definition()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._abandon_definition()
            return
        self._finalize_definition()

    def _setup_definition(self) -> FusionDefinition:
        if self._entry is not None:
            raise DefinitionError("Attempting to overwrite a completed definition!")
        if self._recorder is not None:
            raise DefinitionError("a definition is already in progress for this FusionDefinition")
        self._recorder = Recorder(self)
        self._recorder.guard.__enter__()
        return self

    def _finalize_definition(self) -> None:
        rec = self._recorder
        if rec is None:
            raise DefinitionError("no definition in progress to finalize")
        rec.guard.__exit__(None, None, None)
        self._recorder = None
        if len(rec.lines) > self.max_length:
            raise DefinitionError(
                f"the definition has {len(rec.lines)} records, more than "
                f"max_length={self.max_length}"
            )
        self._entry = FusionCache.get().finalize(rec)

    def _abandon_definition(self) -> None:
        if self._recorder is not None:
            self._recorder.guard.__exit__(None, None, None)
            self._recorder = None

    def _recorder_for(self, op: str) -> Recorder:
        if self._recorder is not None:
            return self._recorder
        if self._entry is not None:
            raise DefinitionError(f"{op}: Attempting to add to a completed definition!")
        raise DefinitionError(
            f"{op}: no definition in progress; define inside "
            f"`with FusionDefinition() as fd:` or in definition()"
        )

    def definition(self) -> None:
        raise NotImplementedError("definition() should be implemented by child class!")

    # --- queries ------------------------------------------------------------------------------
    def id(self) -> int | None:
        return None if self._entry is None else self._entry.id

    def __repr__(self) -> str:
        if self._entry is not None:
            return function_text(self._entry.id, self._entry.lines)
        return function_text(None, self._recorder.lines if self._recorder else ())

    def inputs(self) -> list[int]:
        """State indices of the inputs, in the order ``execute`` takes them."""
        src = self._entry or self._recorder
        return list(src.input_states) if src else []

    def outputs(self) -> list[int]:
        """State indices of the returned outputs (aliased outputs are not returned)."""
        src = self._entry or self._recorder
        return list(src.output_states) if src else []

    def fusion_ir(self) -> str:
        """The layoutfuse IR of the definition, as text."""
        src = self._entry or self._recorder
        if src is None:
            raise DefinitionError("fusion_ir: the FusionDefinition has no definition")
        return repr(src.fusion)

    def last_schedule(self) -> list:
        """Scheduler parameters of the last execution, one per scheduled segment (empty
        before any execution)."""
        return self._entry.executor().last_schedule() if self._has_executor() else []

    def executor(self):
        """The FusionExecutor behind this definition (created on first use)."""
        return self._entry.executor()

    def last_triton_code(self) -> str | None:
        """The generated Triton source of the last execution (from the executor)."""
        return self._entry.executor().last_triton_code() if self._has_executor() else None

    def last_cuda_code(self, intrinsic_code: bool = False, **kwargs) -> str | None:
        """nvFuser's name for the generated kernel source; here, the Triton code."""
        return self.last_triton_code()

    def _has_executor(self) -> bool:
        return self._entry is not None and self._entry.has_executor

    def debug_output(self) -> str | None:
        return self._debug_output

    def profile(self) -> FusionProfile:
        if not self.profiled or self._profile is None:
            raise ValueError(
                "The execute() method was not previously called with profiling enabled!"
            )
        return self._profile

    def segment(self, inputs) -> list[dict]:
        """The kernels ``execute(inputs)`` runs: for each, its scheduler, the ops it
        covers, the tensors it writes and why the fusion was cut there. Runs the
        fusion once (the cut depends on nothing but the definition; the params shown
        by ``last_schedule()`` depend on the inputs)."""
        self.execute(inputs)
        record = self._entry.executor().last_run
        if record is None:
            return []
        return [
            dict(
                scheduler=run.scheduler,
                ops=[e.op.name for e in run.segment.exprs],
                writes=[f"T{t.index}" for t in run.segment.outputs],
                reason=run.reason,
                rejected=[f"{name}: {why}" for name, why in run.rejected],
            )
            for run in record.segments
        ]

    def repro_script_for(self, inputs=None) -> str:
        return repro_script(self, inputs)

    def last_repro_script(self) -> str:
        if self.last_input_reproducers is None:
            raise AssertionError(
                "fd.last_repro_script() needs a previous fd.execute(inputs, save_repro_inputs=True)"
            )
        return repro_script(self, self.last_input_reproducers)

    # --- execution ------------------------------------------------------------------------------
    def execute(
        self,
        inputs,
        *,
        device=None,
        override_user_schedule: bool = False,
        capture_debug_output: bool = False,
        print_repro: bool = False,
        profile: bool = False,
        save_repro_inputs: bool = False,
        _enable_options=(),
        _disable_options=(),
    ) -> list[torch.Tensor]:
        """Run the fusion on ``inputs`` (tensors and Python scalars in definition order;
        a list or tuple is a vector input). Returns the outputs in ``add_output`` order,
        aliased outputs omitted. ``device`` (int, str or torch.device) is passed to the
        executor. The nvFuser debugging options are accepted and ignored.

        A call whose inputs have the signature of an earlier call replays that call's
        launches (``FusionExecutor.replay``) before any other work here."""
        if (
            self._replay is not None
            and type(inputs) in (list, tuple)
            and not (profile or save_repro_inputs or print_repro or capture_debug_output)
        ):
            outputs = self._replay(inputs, None if device is None else normalize_device(device))
            if outputs is not None:
                self.profiled = False
                self._debug_output = None
                return outputs
        _check_input_list(inputs)
        self.profiled = profile
        if self._entry is None:
            self._define_from_subclass()
        if save_repro_inputs:
            self.last_input_reproducers = [
                InputReproducer(x) if isinstance(x, torch.Tensor) else x for x in inputs
            ]
        if print_repro:
            print(self.repro_script_for(inputs))
        flat = flatten_inputs(inputs)
        start = time.perf_counter()
        executor = self._entry.executor()
        self._replay = executor.replay  # inputs with vector (list) entries never match
        outputs = executor.run(flat, device=normalize_device(device), profile=profile)
        if profile:
            self._profile = _profile_of(
                self._entry.id, executor.last_run, (time.perf_counter() - start) * 1e3
            )
        self._debug_output = "" if capture_debug_output else None
        return list(outputs)

    def _define_from_subclass(self) -> None:
        if self._recorder is not None:
            raise DefinitionError("execute: the definition is still in progress")
        if callable(getattr(self, "schedule", None)):
            raise UnsupportedError(
                "FusionDefinition.schedule(): user schedules are not supported by layoutfuse"
            )
        self._setup_definition()
        try:
            self.definition()
        except BaseException:
            self._abandon_definition()
            raise
        self._finalize_definition()


def _check_input_list(inputs) -> None:
    """``execute`` takes its inputs as one list or tuple (a tensor is not a list of its rows)."""
    if isinstance(inputs, list | tuple):
        return
    hint = "; for one input pass [x]" if isinstance(inputs, torch.Tensor) else ""
    raise InputListError(
        f"execute: inputs must be a list or tuple of the fusion's inputs "
        f"(tensors and Python scalars, in definition order), got "
        f"{describe(inputs)}{hint}"
    )


def _profile_of(fusion_id: int, record, host_ms: float) -> FusionProfile:
    """The profile of a run from its record (a run without kernels has none)."""
    if record is None:
        return FusionProfile(fusion_id, 0, host_ms)
    scheduler = {id(k): run.scheduler for run in record.segments for k in run.kernels}
    kernels = tuple(
        KernelProfile(
            r.kernel.name,
            scheduler.get(id(r.kernel), ""),
            r.time_ms,
            "cuda" if r.compiled is not None else "host",
        )
        for r in record.launches
        if r.time_ms is not None
    )
    return FusionProfile(fusion_id, len(record.segments), host_ms, kernels)
