"""FusionExecutor: validate inputs, lay out outputs, and run a fusion's kernels.

INTERFACE (stable; frontends call only this):

    ex = FusionExecutor(fusion)          # compute="reference": torch's eager ops instead
    outs = ex.run(inputs, device=None)   # list in add_output order, aliased outputs omitted
    outs = ex.replay(inputs, device=None)  # the same through a recorded plan, or None
    record = ex.plan(inputs, device=None)  # what run would launch, launching nothing
    ex.configure(heuristics=, target=, tuning=)  # how later runs choose params (see there)
    ex.last_run                          # the RunRecord of the last planned run
    ex.last_schedule()                   # scheduler params of the last run, one per kernel
    ex.last_triton_code()                # generated Triton source of the last run

A run: ``validate_inputs`` (checks, extents) -> output layouts (``OutputLayoutPass``,
computed once per executor) -> destinations (views of inputs, aliased inputs,
buffers dense in the chosen order) -> the pipeline (``runtime/pipeline.py``) -> results,
and a ``LaunchPlan`` recorded for the inputs' signature (``runtime/replay.py``). A later
run with the same signature replays the plan: no checks (the signature implies
them), no planning; a run of the signature replayed last does not even key it (its
plan's guard, ``runtime/guard.py``, checks the inputs in one C++ call). ``compute="reference"`` computes the outputs with
``layoutfuse.reference`` (torch) into the same destinations: the layouts and the
bookkeeping without generated kernels, for tests of those.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch

from ..analysis.device import DeviceInfo
from ..dtypes import to_torch
from ..errors import InputShapeError
from ..ir import Fusion, Scalar, TensorView
from ..ir.ops.random import seed_inputs
from ..passes.complex_lowering import lower_complex
from ..passes.output_layout import OutputLayout, OutputLayoutPass
from ..reference import evaluate
from ..schedulers.tuning import DEFAULT, Tuning
from . import complex_parts
from .allocate import (
    allocate_output,
    make_view,
    same_storage,
    view_chain,
    writable,
    writable_source,
)
from .guard import Guard, build_guard, no_plan
from .index_bounds import check_indices, index_checks
from .pipeline import CompiledFusion, Heuristics, RunRecord
from .plan_build import build_plan
from .replay import LaunchPlan, signature
from .validate import Bindings, validate_inputs

COMPUTE = ("kernels", "reference")


class FusionExecutor:
    def __init__(self, fusion: Fusion, compute: str = "kernels"):
        if compute not in COMPUTE:
            raise ValueError(f"FusionExecutor: compute must be one of {COMPUTE}, got {compute!r}")
        self.fusion = fusion
        self.compute = compute
        self.heuristics: Heuristics | None = None  # see ``configure``
        self.target: DeviceInfo | None = None
        self.tuning: Tuning = DEFAULT
        self.last_run: RunRecord | None = None
        self._layouts: dict[int, OutputLayout] | None = None
        self._compiled: CompiledFusion | None = None
        self._compiled_outputs: list[int] = []
        self._lock = threading.Lock()
        # looked up with None too (unkeyable inputs): never stored under it
        self._plans: dict[tuple[Any, ...] | None, LaunchPlan] = {}
        # per plan's key, the guard of its replays; the one tried first (``replay``)
        self._guards: dict[tuple[Any, ...], Guard] = {}
        self._guarded: Callable[..., list[Any] | None] = no_plan
        self.planned_runs = 0  # runs that validated and planned (the others replayed)
        self._seeds: frozenset[int] | None = None  # see ``_seed_inputs``
        self._bindable: dict[int, Any] | None = None  # see ``_bindable_outputs``
        # 0-dim tensor inputs (Thunder's is_cpu scalars): only then does a call look for CPU
        # scalars to move beside GPU inputs (``cpu_scalars_to_device``), off the cached path
        self._scalar_tensors = any(
            isinstance(v, TensorView) and not v.shape_domain for v in fusion.inputs
        )
        # complex values: kernels run the fusion's real lowering (``_run_lowered``)
        self._lowering = lower_complex(fusion) if compute == "kernels" else None
        self._lowered = None if self._lowering is None else FusionExecutor(self._lowering.fusion)

    # --- public ------------------------------------------------------------------------------
    def run(
        self,
        inputs: Sequence[Any],
        device: torch.device | str | int | None = None,
        profile: bool = False,
    ) -> list[Any]:
        """The fusion's outputs for ``inputs``, in ``add_output`` order, aliased ones omitted.

        Tensor outputs come back in the layout ``OutputLayoutPass`` chose; scalar
        outputs come back as 0-dim CPU tensors of their dtype. ``profile``: plan anew
        (no replay) and time every launch (``last_run.launches[i].time_ms``).
        """
        if not profile:
            outputs = self.replay(inputs, device)
            if outputs is not None:
                return outputs
        raw = inputs
        if self._scalar_tensors:
            inputs = cpu_scalars_to_device(inputs)
        key = signature(inputs, device, self._seed_inputs())
        return self._plan_and_run(list(inputs), device, key, profile, raw)

    def replay(
        self, inputs: Sequence[Any], device: torch.device | str | int | None = None
    ) -> list[Any] | None:
        """The outputs through the plan recorded for ``inputs``' signature, or None when
        there is none yet (then ``run`` validates, plans and records one).

        The plan replayed last is tried first, behind its guard (``runtime/guard.py``:
        one C++ check of the tensors instead of the signature); other calls key their
        signature and look their plan up."""
        outputs = self._guarded(inputs, device)
        if outputs is not None:
            return outputs
        raw = inputs
        if self._scalar_tensors:
            inputs = cpu_scalars_to_device(inputs)
        key = signature(inputs, device, self._seed_inputs())
        plan = self._plans.get(key)
        if plan is None or key is None:  # (no plan is stored under None)
            return None
        self._guard(key, plan, raw, device)
        return plan.replay(inputs)

    def _guard(
        self, key: tuple[Any, ...], plan: LaunchPlan, inputs: Sequence[Any], device: Any
    ) -> None:
        """Put ``plan`` (replayed for ``inputs`` as the call gave them) behind the guard
        that later calls try first. A guard that refused a call of its own signature (its
        tensors differ in what the signature does not hold) checks this call's tensors."""
        guard = self._guards.get(key)
        if guard is None:
            move = cpu_scalars_to_device if self._scalar_tensors else None
            guard = build_guard(plan, inputs, device, self._seed_inputs(), move)
            if guard is None:
                return
            self._guards[key] = guard
        elif guard.fn is self._guarded and not guard.rebind(inputs):
            return
        self._guarded = guard.fn

    def _seed_inputs(self) -> frozenset[int]:
        """Positions of the scalar inputs that are only random ops' seeds or offsets: a
        replay plan serves all their values (``replay.signature``)."""
        if self._seeds is None:
            self._seeds = seed_inputs(self.fusion)
        return self._seeds

    def plan(
        self, inputs: Sequence[Any], device: torch.device | str | int | None = None
    ) -> RunRecord:
        """What ``run`` would launch for ``inputs`` (meta tensors too), launching nothing."""
        inputs = list(inputs)
        bindings = validate_inputs(self.fusion, inputs, device)
        outputs, _ = self._destinations(bindings, inputs)
        record, _ = self._run_kernels(bindings, inputs, outputs, launch=False)
        self.last_run = record.detached()
        return record

    def configure(
        self,
        *,
        heuristics: Heuristics | None = None,
        target: DeviceInfo | None = None,
        tuning: Tuning | None = None,
    ) -> None:
        """Plan later runs with ``heuristics`` (scheduler, problem, device, the scheduler's
        tuning -> params; None: each scheduler's own) and the schedulers' knobs ``tuning``
        (None: ``schedulers.tuning.DEFAULT``) for the device ``target`` describes (None: the
        inputs' device). Forgets the compiled kernels and the replay plans."""
        with self._lock:
            self.heuristics, self.target = heuristics, target
            self.tuning = DEFAULT if tuning is None else tuning
            self._compiled, self._compiled_outputs = None, []
            self._plans.clear()
            self._guards.clear()
            self._guarded = no_plan
        if self._lowered is not None:
            self._lowered.configure(heuristics=heuristics, target=target, tuning=tuning)

    def output_layouts(self) -> dict[int, OutputLayout]:
        """The layout of every tensor output (cached: it depends only on the fusion)."""
        if self._layouts is None:
            self._layouts = OutputLayoutPass().apply(self.fusion)
        return self._layouts

    def last_schedule(self) -> list[Any]:
        """The params of every segment the last planned run scheduled, in run order."""
        return [] if self.last_run is None else self.last_run.params

    def last_triton_code(self) -> str | None:
        """The source of every kernel the last planned run used, in run order."""
        if self.last_run is None or not self.last_run.code:
            return None
        return "\n\n".join(self.last_run.code)

    # --- the first run of a signature --------------------------------------------------------
    def _plan_and_run(
        self,
        inputs: list[Any],
        device: torch.device | str | int | None,
        key: tuple[Any, ...] | None,
        profile: bool = False,
        raw: Sequence[Any] = (),
    ) -> list[Any]:
        """Validate, lay out, run the kernels, and record a plan for ``key``'s later calls
        (``raw``: the inputs as the call gave them, before the move of CPU scalars)."""
        self.planned_runs += 1
        bindings = validate_inputs(self.fusion, inputs, device)
        checks = index_checks(self.fusion, bindings.extents)
        check_indices(checks, inputs)
        outputs, computed = self._destinations(bindings, inputs)
        copies: list[tuple[Any, Any]] | None = None
        if self.compute == "reference":
            self._run_reference(bindings, inputs, outputs, computed)
            record = None
        else:
            plan_args: dict[str, Any] = {}
            record, copies = self._run_kernels(
                bindings, inputs, outputs, profile=profile, plan_args=plan_args
            )
        result = [
            outputs[pos] for pos, spec in enumerate(self.fusion.outputs) if spec.alias_input is None
        ]
        replayable = record is not None and not record.filled  # (fills: ``RunRecord``)
        if key is not None and copies is not None and replayable and len(self._plans) < 64:
            assert record is not None  # copies: the kernels ran
            compiled = self._compiled if self._lowered is None else self._lowered._compiled
            kept = compiled.kept_tensors() if compiled is not None else frozenset()
            plan = build_plan(
                self.fusion,
                inputs,
                result,
                record.launches,
                kept,
                record.library_calls,
                copies,
                **plan_args,
                index_checks=checks,
            )
            if plan is not None:
                self._plans[key] = plan
                self._guards.pop(key, None)  # a guard of the plan this one replaces
                self._guard(key, plan, raw, device)
        if record is not None:
            self.last_run = record.detached()  # keeps no tensor of the call
        return result

    # --- generated kernels ---------------------------------------------------------------------
    def _run_kernels(
        self,
        bindings: Bindings,
        inputs: list[Any],
        outputs: list[Any],
        launch: bool = True,
        profile: bool = False,
        plan_args: dict[str, Any] | None = None,
    ) -> tuple[RunRecord, list[tuple[Any, Any]] | None]:
        """Compute the outputs with generated kernels; the run's record and the copies made
        after the kernels (destination, source), which a replay plan makes too (None: a
        replay plan cannot reproduce the run). ``plan_args``: filled with what
        ``build_plan`` needs besides, for a fusion with complex values.

        ``outputs[pos]`` is the destination of ``fusion.outputs[pos]``: a buffer
        already laid out as ``output_layouts()[pos]`` says (write into it), the
        aliased input tensor (write into it), a view of an input (nothing to
        compute), or None for a scalar output (store the 0-dim tensor there).
        Kernels write through the destinations' strides; an expanded broadcast dim of a
        buffer has stride 0 and gets its first element written. An aliased output is
        computed into a temporary and copied into its input after every kernel ran (the
        kernels may still read that input).
        """
        if self._lowered is not None:
            return self._run_lowered(bindings, inputs, outputs, launch, profile, plan_args)
        computed_tvs, tensors, late_copies = self._kernel_destinations(bindings, inputs, outputs)
        compiled = self._compiled_for(computed_tvs)
        scalars = {
            id(v): bindings.scalars[v.index]
            for v in self.fusion.vals
            if isinstance(v, Scalar) and v.index in bindings.scalars
        }
        # cast: the extents are the dict validate_inputs built (Bindings shows it read-only)
        extents = cast(dict[int, int], bindings.extents)
        # only a planned call binds (the complex lowering's parts are views: never)
        bindable = self._bind_checks(bindings) if plan_args is not None else {}
        record = compiled.run(tensors, extents, scalars, bindings.device, launch, profile, bindable)
        rules = self._bindable_outputs() if record.bound else {}
        for pos, spec in enumerate(self.fusion.outputs):  # library results returned as made
            if id(spec.value) in record.bound:
                result = outputs[pos] = record.bound[id(spec.value)]
                for q, chain in rules[id(spec.value)][1]:  # the outputs that view it
                    outputs[q] = make_view(chain, result, bindings)
        if launch:
            for dst, src in late_copies:
                writable(dst).copy_(writable_source(dst, src))
        return record, late_copies

    def _bindable_outputs(self) -> dict[int, tuple[bool, tuple[tuple[int, list[Any]], ...]]]:
        """The outputs whose destination a library result may replace, by id: computed
        outputs that appear once and write no input (no alias). The value: whether the
        result's strides are free (an output whose layout the user did not pin takes the
        layout torch made: attention's output as its kernel lays it out, as
        ``F.scaled_dot_product_attention`` returns it; a pinned one only a result laid out
        as pinned), and the outputs that are views of it with their view chains (made
        again of the result: it is bound only where every one of them is a view of it)."""
        if self._bindable is None:
            layouts = self.output_layouts()
            values = [spec.value for spec in self.fusion.outputs]
            inputs = {id(v) for v in self.fusion.inputs}
            found = {}
            for pos, (tv, spec) in enumerate(zip(values, self.fusion.outputs)):
                layout = layouts.get(pos)
                if (
                    not isinstance(tv, TensorView)
                    or spec.alias_input is not None
                    or sum(v is tv for v in values) != 1
                    or id(tv) in inputs
                    or getattr(layout, "kind", None) == "view"
                ):
                    continue
                if any(lay.fallback_output == pos for lay in layouts.values()):
                    continue  # an output may view its destination: kept (rare)
                views = tuple(
                    (q, view_chain(self.fusion, cast(TensorView, values[q]), tv))
                    for q, lay in layouts.items()
                    if lay.kind == "view" and lay.view_of_output == pos
                )
                found[id(tv)] = (getattr(layout, "kind", None) in ("inferred", "row_major"), views)
            self._bindable = found
        return self._bindable

    def _bind_checks(
        self, bindings: Bindings
    ) -> dict[int, Callable[[torch.Tensor, torch.Tensor], bool]]:
        """Per bindable output (``_bindable_outputs``), whether a result laid out as torch
        made it may replace its destination: any strides where they are free, and every
        output that views it a view of it."""

        def check(
            free: bool, views: tuple[tuple[int, list[Any]], ...]
        ) -> Callable[[torch.Tensor, torch.Tensor], bool]:
            def accepts(r: torch.Tensor, dst: torch.Tensor) -> bool:
                if not free and r.stride() != dst.stride():
                    return False
                return all(make_view(chain, r, bindings) is not None for _, chain in views)

            return accepts

        return {i: check(free, views) for i, (free, views) in self._bindable_outputs().items()}

    def _run_lowered(
        self,
        bindings: Bindings,
        inputs: list[Any],
        outputs: list[Any],
        launch: bool,
        profile: bool,
        plan_args: dict[str, Any] | None,
    ) -> tuple[RunRecord, list[tuple[Any, Any]] | None]:
        """``_run_kernels`` for a fusion with complex values: its real lowering runs on the
        parts of the complex inputs and destinations (``runtime/complex_parts.py``). A replay
        plan binds those parts as views of the call's complex tensors (``plan_args``)."""
        low, lowered = self._lowering, self._lowered
        assert low is not None and lowered is not None
        real_inputs = complex_parts.split_inputs(low, inputs)
        real_outputs = complex_parts.split_outputs(low, outputs)
        real_bindings = validate_inputs(low.fusion, real_inputs, bindings.device)
        record, copies = lowered._run_kernels(
            real_bindings, real_inputs, real_outputs, launch, profile
        )
        complex_parts.join_scalar_outputs(low, outputs, real_outputs)
        if copies:
            # copies between parts (aliased or repeated complex outputs): not planned
            return record, None
        if plan_args is not None:
            returned = [
                pos for pos, spec in enumerate(self.fusion.outputs) if spec.alias_input is None
            ]
            out_parts = complex_parts.part_ids(low.outputs, outputs, real_outputs, "out")
            # parts of outputs by their position among the returned outputs (the plan's)
            plan_args["parts"] = {
                **complex_parts.part_ids(low.inputs, inputs, real_inputs, "in"),
                **{
                    k: (w, returned.index(j), p)
                    for k, (w, j, p) in out_parts.items()
                    if j in returned
                },
            }
            plan_args["scalar_inputs"] = {
                id(low.fusion.inputs[pos[0]]): i
                for i, pos in enumerate(low.inputs)
                if len(pos) == 1 and isinstance(low.fusion.inputs[pos[0]], Scalar)
            }
        return record, []

    def _kernel_destinations(
        self, bindings: Bindings, inputs: list[Any], outputs: list[Any]
    ) -> tuple[list[TensorView], dict[int, Any], list[tuple[Any, Any]]]:
        """The outputs the kernels compute, every tensor by TensorView id (inputs and
        destinations), and the copies to make after the kernels (aliases, repeats)."""
        layouts = self.output_layouts()
        computed_tvs: list[TensorView] = []
        tensors: dict[int, Any] = {}
        late_copies: list[tuple[Any, Any]] = []
        input_ids = {id(v) for v in self.fusion.inputs}
        for pos, spec in enumerate(self.fusion.outputs):
            tv = spec.value
            if not isinstance(tv, TensorView):
                # cast: a non-tensor output is a Scalar
                outputs[pos] = torch.tensor(
                    bindings.scalar(cast(Scalar, tv)), dtype=to_torch(tv.dtype)
                )
                continue
            layout = layouts.get(pos)
            if (
                layout is not None
                and layout.kind == "view"
                and outputs[pos] is not None
                and self._is_view_result(outputs[pos], self._view_bases(layout, inputs, outputs))
            ):
                continue
            if id(tv) in tensors:
                late_copies.append((outputs[pos], tensors[id(tv)]))
                continue
            if id(tv) in input_ids:
                late_copies.append((outputs[pos], inputs[self.fusion.inputs.index(tv)]))
                continue
            dst = outputs[pos]
            if spec.alias_input is not None:
                tmp = torch.empty_like(dst)
                late_copies.append((dst, tmp))
                dst = tmp
            computed_tvs.append(tv)
            tensors[id(tv)] = dst
        for v, x in zip(self.fusion.inputs, inputs):
            if isinstance(v, TensorView):
                tensors[id(v)] = x
        return computed_tvs, tensors, late_copies

    def _compiled_for(self, computed_tvs: list[TensorView]) -> CompiledFusion:
        """The compiled fusion for these computed outputs (segmented once, under a lock)."""
        ids = [id(t) for t in computed_tvs]
        with self._lock:
            if self._compiled is None or self._compiled_outputs != ids:
                self._compiled = CompiledFusion(
                    self.fusion, computed_tvs, self.heuristics, self.target, tuning=self.tuning
                )
                self._compiled_outputs = ids
            return self._compiled

    @staticmethod
    def _is_view_result(out: torch.Tensor, bases: list[Any]) -> bool:
        return any(same_storage(out, x) for x in bases)

    @staticmethod
    def _view_bases(layout: OutputLayout, inputs: list[Any], outputs: list[Any]) -> list[Any]:
        """What a ``view`` output may be a view of: the inputs, or the other output."""
        if layout.view_of_output is None:
            if layout.fallback_output is not None:
                return [*inputs, outputs[layout.fallback_output]]
            return inputs
        return [outputs[layout.view_of_output]]

    # --- destinations ----------------------------------------------------------------------------
    def _destinations(self, bindings: Bindings, inputs: list[Any]) -> tuple[list[Any], list[bool]]:
        """One destination per output, and whether it still has to be computed."""
        layouts = self.output_layouts()
        outputs: list[Any] = []
        computed: list[bool] = []
        of_outputs: list[int] = []  # views of other outputs: made once those exist
        for pos, spec in enumerate(self.fusion.outputs):
            tv = spec.value
            layout = layouts.get(pos)
            if not isinstance(tv, TensorView) or layout is None:
                outputs.append(None)
                computed.append(True)
            elif layout.kind == "alias":
                assert layout.alias_input is not None  # set for every alias layout
                dst = inputs[layout.alias_input]
                shape = bindings.shape(tv)
                if tuple(dst.shape) != shape:
                    raise InputShapeError(
                        f"output {pos} (T{tv.index}) is written into input {layout.alias_input}"
                        f" of shape {tuple(dst.shape)}, but has shape {shape}"
                    )
                outputs.append(dst)
                computed.append(True)
            elif layout.kind == "view" and layout.view_of_output is not None:
                of_outputs.append(pos)
                outputs.append(None)
                computed.append(True)
            elif layout.kind == "view":
                assert layout.view_of is not None  # set for every view of an input
                src = self.fusion.inputs[layout.view_of]
                assert isinstance(src, TensorView)  # a view is of a tensor input
                view = make_view(view_chain(self.fusion, tv, src), inputs[layout.view_of], bindings)
                if view is None and layout.fallback_output is not None:
                    of_outputs.append(pos)  # a view of that output, once it exists
                    outputs.append(None)
                    computed.append(True)
                    continue
                outputs.append(
                    view if view is not None else allocate_output(tv, layout.order, bindings)
                )
                computed.append(view is None)
            else:
                outputs.append(allocate_output(tv, layout.order, bindings))
                computed.append(True)
        for pos in of_outputs:
            tv, layout = self.fusion.outputs[pos].value, layouts[pos]
            assert isinstance(tv, TensorView)
            of = layout.view_of_output
            of = layout.fallback_output if of is None else of
            assert of is not None
            src = self.fusion.outputs[of].value
            assert isinstance(src, TensorView)
            base = outputs[of]
            view = make_view(view_chain(self.fusion, tv, src), base, bindings)
            outputs[pos] = view if view is not None else allocate_output(tv, layout.order, bindings)
            computed[pos] = view is None
        return outputs, computed

    # --- compute="reference" ---------------------------------------------------------------------
    def _run_reference(
        self, bindings: Bindings, inputs: list[Any], outputs: list[Any], computed: list[bool]
    ) -> None:
        """Compute with ``layoutfuse.reference`` and copy into the destinations: copying
        (rather than returning the reference's tensors) keeps the output layouts exactly
        what a kernel gives."""
        args = [
            bindings.scalars.get(v.index, x) if isinstance(v, Scalar) else x
            for v, x in zip(self.fusion.inputs, inputs)
        ]
        env = evaluate(self.fusion, args, bindings.device)
        aliased = []
        for pos, spec in enumerate(self.fusion.outputs):
            value = env[id(spec.value)]
            if not isinstance(spec.value, TensorView):
                outputs[pos] = torch.tensor(value, dtype=to_torch(spec.value.dtype))
            elif spec.alias_input is not None:
                aliased.append((outputs[pos], value))
            elif computed[pos]:
                writable(outputs[pos]).copy_(writable_source(outputs[pos], value))
        for dst, value in aliased:  # after every output has read the inputs
            if same_storage(value, dst):
                value = value.clone()  # e.g. a permute of the input written into it
            dst.copy_(value)


__all__ = ["FusionExecutor"]


def cpu_scalars_to_device(inputs: Sequence[Any]) -> Sequence[Any]:
    """``inputs`` with each 0-dim CPU tensor (Thunder's ``is_cpu`` scalars) moved to the
    device of the other tensor inputs, when those are on a GPU: a kernel there cannot read
    host memory (nvFuser passes such a tensor by value). Unchanged otherwise."""
    device = None
    has_cpu_scalar = False
    for x in inputs:
        if isinstance(x, torch.Tensor):
            if x.device.type != "cpu":
                device = x.device
            elif x.dim() == 0:
                has_cpu_scalar = True
    if device is None or not has_cpu_scalar:
        return inputs
    return [
        x.to(device) if isinstance(x, torch.Tensor) and x.dim() == 0 and x.is_cpu else x
        for x in inputs
    ]
