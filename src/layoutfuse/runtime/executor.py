"""FusionExecutor: validate inputs, lay out outputs, and run a fusion's kernels.

INTERFACE (stable; frontends call only this):

    ex = FusionExecutor(fusion)
    outs = ex.run(inputs, device=None)   # list in add_output order, aliased outputs omitted
    outs = ex.replay(inputs, device=None)  # the same through a recorded plan, or None
    ex.last_schedule()                   # scheduler params of the last run (list if several)
    ex.last_triton_code()                # generated Triton source of the last run
    ex.used_reference_path               # True if the last run computed with the torch reference

A run: ``validate_inputs`` (checks, extents) -> output layouts (``OutputLayoutPass``,
computed once per executor) -> destinations (views of inputs, aliased inputs,
buffers dense in the chosen order) -> ``_run_kernels`` -> results, and a
``LaunchPlan`` recorded for the inputs' signature (``runtime/replay.py``). A later
run with the same signature replays the plan: no checks (the signature implies
them), no planning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..dtypes import to_torch
from ..errors import InputShapeError
from ..ir import Fusion, Scalar, TensorView
from ..passes.output_layout import OutputLayout, OutputLayoutPass
from ..reference import evaluate
from .allocate import allocate_output, make_view, view_chain, writable, writable_source
from .replay import LaunchPlan, build_plan, signature
from .validate import Bindings, validate_inputs


class FusionExecutor:
    def __init__(self, fusion: Fusion):
        self.fusion = fusion
        self._last_schedule: Any = None
        self._last_code: str | None = None
        self._layouts: dict[int, OutputLayout] | None = None
        self.used_reference_path = False
        self._compiled = None
        self._compiled_outputs: list[int] = []
        self._plans: dict[tuple, LaunchPlan] = {}
        self._replayable = False
        self.planned_runs = 0       # runs that validated and planned (the others replayed)

    # --- public ------------------------------------------------------------------------------
    def run(self, inputs: Sequence[Any], device=None) -> list[Any]:
        """The fusion's outputs for ``inputs``, in ``add_output`` order, aliased ones omitted.

        Tensor outputs come back in the layout ``OutputLayoutPass`` chose; scalar
        outputs come back as 0-dim CPU tensors of their dtype.
        """
        key = signature(inputs, device)
        plan = self._plans.get(key)         # inputs that cannot be keyed (None) have none
        if plan is not None:
            return plan.replay(inputs)
        return self._plan_and_run(list(inputs), device, key)

    def replay(self, inputs: Sequence[Any], device=None) -> list[Any] | None:
        """The outputs through the plan recorded for ``inputs``' signature, or None when
        there is none yet (then ``run`` validates, plans and records one)."""
        plan = self._plans.get(signature(inputs, device))
        return None if plan is None else plan.replay(inputs)

    def output_layouts(self) -> dict[int, OutputLayout]:
        """The layout of every tensor output (cached: it depends only on the fusion)."""
        if self._layouts is None:
            self._layouts = OutputLayoutPass().apply(self.fusion)
        return self._layouts

    def last_schedule(self):
        return self._last_schedule

    def last_triton_code(self) -> str | None:
        return self._last_code

    # --- the first run of a signature --------------------------------------------------------
    def _plan_and_run(self, inputs: list[Any], device, key: tuple | None) -> list[Any]:
        """Validate, lay out, run the kernels, and record a plan for ``key``'s later calls."""
        self.planned_runs += 1
        bindings = validate_inputs(self.fusion, inputs, device)
        outputs, computed = self._destinations(bindings, inputs)
        self.used_reference_path = not self._run_kernels(bindings, inputs, outputs)
        if self.used_reference_path:
            self._run_reference(bindings, inputs, outputs, computed)
        result = []
        for pos, spec in enumerate(self.fusion.outputs):
            if spec.alias_input is None:
                result.append(outputs[pos])
        if key is not None and self._replayable and len(self._plans) < 64:
            plan = build_plan(self.fusion, inputs, result, self._compiled.replay_log)
            if plan is not None:
                self._plans[key] = plan
        return result

    # --- the hook for generated kernels ----------------------------------------------------------
    def _run_kernels(self, bindings: Bindings, inputs: list[Any], outputs: list[Any]) -> bool:
        """HOOK: compute the outputs with generated kernels; return False if not done.

        ``bindings``: extents by IterDomain uid, scalar values, device.
        ``inputs``: the validated arguments, in ``fusion.inputs`` order.
        ``outputs[pos]`` is the destination of ``fusion.outputs[pos]``: a buffer
        already laid out as ``output_layouts()[pos]`` says (write into it), the
        aliased input tensor (write into it), a view of an input (nothing to
        compute), or None for a scalar output (store the 0-dim tensor there).
        Kernels must write through the destinations' strides. Expanded broadcast
        dims of a buffer have stride 0: write their first element only.

        Generated kernels compute every tensor output; an aliased output is computed
        into a temporary and copied into its input after every kernel ran (the kernels
        may still read that input). Never falls back to the reference: an unsupported
        fusion raises.
        """
        from .kernels import CompiledFusion

        layouts = self.output_layouts()
        computed_tvs, tensors = [], {}
        late_copies = []
        for pos, spec in enumerate(self.fusion.outputs):
            tv = spec.value
            if not isinstance(tv, TensorView):
                outputs[pos] = torch.tensor(bindings.scalar(tv), dtype=to_torch(tv.dtype))
                continue
            layout = layouts.get(pos)
            if layout is not None and layout.kind == "view" and outputs[pos] is not None and \
                    self._is_view_result(outputs[pos], inputs):
                continue
            if id(tv) in tensors:
                late_copies.append((outputs[pos], tensors[id(tv)]))
                continue
            if id(tv) in {id(v) for v in self.fusion.inputs}:
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
        if self._compiled is None or self._compiled_outputs != [id(t) for t in computed_tvs]:
            self._compiled = CompiledFusion(self.fusion, computed_tvs)
            self._compiled_outputs = [id(t) for t in computed_tvs]
        scalars = {id(v): bindings.scalars[v.index] for v in self.fusion.vals
                   if isinstance(v, Scalar) and v.index in bindings.scalars}
        self._compiled.run(tensors, bindings.extents, scalars, bindings.device)
        for dst, src in late_copies:
            writable(dst).copy_(writable_source(dst, src))
        self._replayable = not late_copies and len(computed_tvs) == sum(
            isinstance(s.value, TensorView) and s.alias_input is None for s in self.fusion.outputs)
        params = self._compiled.last_params
        self._last_schedule = params[0] if len(params) == 1 else list(params)
        self._last_code = "\n\n".join(self._compiled.last_code)
        return True

    @staticmethod
    def _is_view_result(out, inputs) -> bool:
        return any(isinstance(x, torch.Tensor) and out.untyped_storage().data_ptr() ==
                   x.untyped_storage().data_ptr() for x in inputs)

    # --- destinations ----------------------------------------------------------------------------
    def _destinations(self, bindings: Bindings, inputs: list[Any]
                      ) -> tuple[list[Any], list[bool]]:
        """One destination per output, and whether it still has to be computed."""
        layouts = self.output_layouts()
        outputs: list[Any] = []
        computed: list[bool] = []
        for pos, spec in enumerate(self.fusion.outputs):
            tv = spec.value
            layout = layouts.get(pos)
            if not isinstance(tv, TensorView) or layout is None:
                outputs.append(None)
                computed.append(True)
            elif layout.kind == "alias":
                dst = inputs[layout.alias_input]
                shape = bindings.shape(tv)
                if tuple(dst.shape) != shape:
                    raise InputShapeError(
                        f"output {pos} (T{tv.index}) is written into input {layout.alias_input}"
                        f" of shape {tuple(dst.shape)}, but has shape {shape}")
                outputs.append(dst)
                computed.append(True)
            elif layout.kind == "view":
                src = self.fusion.inputs[layout.view_of]
                view = make_view(view_chain(self.fusion, tv, src), inputs[layout.view_of],
                                 bindings)
                outputs.append(view if view is not None else
                               allocate_output(tv, layout.order, bindings))
                computed.append(view is None)
            else:
                outputs.append(allocate_output(tv, layout.order, bindings))
                computed.append(True)
        return outputs, computed

    # --- the reference path (to be replaced by kernels) -------------------------------------------
    def _run_reference(self, bindings: Bindings, inputs: list[Any], outputs: list[Any],
                       computed: list[bool]) -> None:
        """TEMPORARY: compute with ``layoutfuse.reference`` and copy into the destinations.

        This is the path taken while ``_run_kernels`` returns False; it will be
        replaced by generated kernels. Copying (rather than returning the
        reference's tensors) keeps the output layouts exactly what a kernel gives.
        """
        args = [bindings.scalars.get(v.index, x) if isinstance(v, Scalar) else x
                for v, x in zip(self.fusion.inputs, inputs)]
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
        for dst, value in aliased:          # after every output has read the inputs
            if value.untyped_storage().data_ptr() == dst.untyped_storage().data_ptr():
                value = value.clone()       # e.g. a permute of the input written into it
            dst.copy_(value)


__all__ = ["FusionExecutor"]
