"""Generated kernels for a fusion: segment once, then per input signature plan and launch.

``CompiledFusion.run`` receives the input tensors, the bound extents and the
output tensors already allocated by the executor; it allocates intermediate
buffers, builds each segment's problem (canonical groups, from real strides),
asks its scheduler for params, generates and loads the Triton source once per
(segment, params), and launches. A repeated call with the same signature only
looks the launch plan up and binds pointers.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import torch

from ..analysis.accesses import shape_of
from ..analysis.device import device_info
from ..codegen import backend
from ..codegen.generic_index import generic_index
from ..codegen.normalization import normalization_source
from ..codegen.pointwise import pointwise_source
from ..codegen.reduction import finish_source, reduction_source
from ..codegen.reduction_common import accumulator_dtype
from ..codegen.reduction_finish import n_results
from ..dtypes import to_torch
from ..ir import Fusion, TensorView
from ..ir.ops.reductions import empty_fill_values
from ..schedulers import normalization as nm
from ..schedulers import pointwise as pw
from ..schedulers import reduction as rd
from ..schedulers.problem import Problem, is_affine
from ..segmenter.segments import KernelSpec, segment
from .problems import build_problem


@dataclass
class _Launch:
    kernel: Any
    grid: tuple
    args_builder: Any
    meta: dict


class CompiledFusion:
    def __init__(self, fusion: Fusion, computed_outputs: list[TensorView]):
        self.fusion = fusion
        self.specs, self.intermediates = segment(fusion, computed_outputs)
        self._kernels: dict[tuple, tuple] = {}
        self._tickets: dict[tuple, torch.Tensor] = {}   # split counters, zero between launches
        self.last_params: list = []
        self.last_segments: list[tuple[KernelSpec, str]] = []
        self.last_code: list[str] = []
        self.last_launches: list[tuple] = []   # (LoadedKernel, args, meta) of the last run
        self.replay_log: list[tuple] = []      # (fn, grid, args, meta, scalar slots)

    # --- per call --------------------------------------------------------------------
    def run(self, tensors: dict[int, torch.Tensor], extents: dict[int, int],
            scalars: dict[int, Any], device: torch.device) -> None:
        info = device_info(device)
        env = dict(tensors)
        for tv in self.intermediates:
            shape = shape_of(tv, extents)
            env[id(tv)] = torch.empty(shape, dtype=to_torch(tv.dtype), device=device)
        self.last_params, self.last_code, self.last_launches = [], [], []
        self.last_segments: list[tuple[KernelSpec, str]] = []   # what ran, and why
        self.replay_log = []
        for spec in self.specs:
            self._run_spec(spec, env, extents, scalars, device, info)

    def _run_spec(self, spec: KernelSpec, env, extents, scalars, device, info) -> None:
        if spec.kind == "normalization":
            self._run_normalization(spec, env, extents, scalars, device, info)
            return
        self.last_segments.append((spec, spec.reason))
        root_shape = shape_of(spec.root, extents)
        if any(n == 0 for n in root_shape):
            if spec.kind == "reduction":
                self._fill_empty_reduction(spec, env)
            return
        prob = build_problem(spec, env, extents)
        scalar_vals = [scalars[id(s)] for s in spec.scalars]
        if spec.kind == "pointwise":
            self._launch_pointwise(spec, prob, env, extents, scalar_vals, device, info)
        else:
            self._launch_reduction(spec, prob, env, extents, scalar_vals, device, info)

    def _launch(self, kernel, grid, args, meta, device, scalar_slots=()) -> None:
        """Launch, and record it for replay: ``scalar_slots`` are (arg index, Scalar) pairs."""
        fn = kernel.for_device(device.type)
        self.last_launches.append((kernel, list(args), dict(meta)))
        compiled = fn[grid](*args, **meta)
        consts = [meta[n] for n in kernel.jit.arg_names[len(args):]]
        self.replay_log.append((fn, grid, list(args), dict(meta), tuple(scalar_slots),
                                compiled if device.type == "cuda" else None, consts))

    def _kernel(self, spec, params, make_source, name):
        key = (id(spec), name, params)
        if key not in self._kernels:
            src, args = make_source(spec, params, name)
            self._kernels[key] = (backend.load_kernel(src, name), args, src)
            _dump(params, src)
        return self._kernels[key]

    def _stride_values(self, prob: Problem, params, accesses) -> list[int]:
        vals = []
        for a in accesses:
            if not is_affine(params, a):
                continue
            for k, g in enumerate(prob.groups):
                if not params.zero_strides[a][k] and not params.unit_strides[a][k]:
                    vals.append(g.strides[a])
        return vals

    @staticmethod
    def _walk_values(spec, params, env, extents) -> list[int]:
        """Generic mode: the extents and real strides the index walk takes as arguments."""
        return generic_index(spec, params).arg_values(spec, env, extents) if params.generic \
            else []

    def _generated(self, spec, params, make_source, name):
        """The loaded kernel for ``params``, recorded as the last run's schedule and code."""
        kernel, _, src = self._kernel(spec, params, make_source, name)
        self.last_params.append(params)
        self.last_code.append(src)
        return kernel

    def _head_args(self, spec, prob, params, env, extents, workspaces) -> list:
        """Pointers, workspaces, group sizes, strides and index-walk values, in the order
        both kernel templates declare them."""
        return [env[id(tv)] for tv in spec.memory] + workspaces + \
            [g.size for g in prob.groups] + \
            self._stride_values(prob, params, range(len(spec.accesses))) + \
            self._walk_values(spec, params, env, extents)

    def _launch_pointwise(self, spec, prob, env, extents, scalar_vals, device, info):
        params = pw.heuristics(prob, info)
        kernel = self._generated(spec, params, pointwise_source, "pointwise_kernel")
        sizes = [g.size for g in prob.groups]
        px, py = pw.tile_counts(params, sizes)
        head = self._head_args(spec, prob, params, env, extents, [])
        args = head + scalar_vals + [px, py]
        slots = [(len(head) + i, s) for i, s in enumerate(spec.scalars)]
        self._launch(kernel, (pw.grid(params),), args,
                     {"BLOCK_X": params.block_x, "BLOCK_Y": params.block_y,
                      "num_warps": params.num_warps}, device, slots)   # interpreter: ignored

    def _launch_reduction(self, spec, prob, env, extents, scalar_vals, device, info):
        params = rd.heuristics(prob, info,
                               accumulators=sum(n_results(e) for e in spec.reductions))
        kernel = self._generated(spec, params, reduction_source, "reduction_kernel")
        sizes = [g.size for g in prob.groups]
        nx, nr, npx = _row_extents(prob, params)
        ws = []
        if params.split > 1:
            for e in spec.reductions:          # one [SPLIT, NX] workspace per partial result
                acc = to_torch(accumulator_dtype(e))
                ws += [torch.empty((params.split, nx), dtype=acc, device=device)
                       for _ in range(n_results(e))]
            if params.finish == "ticket":
                ws.append(self._ticket_counters(spec, params, device))
        head = self._head_args(spec, prob, params, env, extents, ws)
        nr_arg = nr // sizes[params.r_groups[0]] if params.r_nest else nr
        args = head + scalar_vals + [nx, nr_arg, params.chunk, npx, params.split]
        slots = [(len(head) + i, s) for i, s in enumerate(spec.scalars)]
        warps = {"num_warps": params.num_warps}     # the interpreter ignores it; hopper_check
        self._launch(kernel, rd.grid(params), args,
                     {"BLOCK_X": params.block_x, "BLOCK_R": params.block_r,
                      "BLOCK_S": rd.combine_block(params, params.block_x),
                      "BLOCK_Y": params.block_y, **warps}, device, slots)
        if params.split > 1 and params.finish == "kernel":
            fin, _, fsrc = self._kernel(spec, params, finish_source, "finish_kernel")
            self.last_code.append(fsrc)
            outs = [env[id(o)] for e in spec.reductions for o in e.outputs]
            stores = range(spec.n_loads, spec.n_loads + len(outs))
            xs = [sizes[k] for k in params.x_groups]
            svals = [prob.groups[k].strides[a] for a in stores for k in params.x_groups
                     if not params.zero_strides[a][k] and not params.unit_strides[a][k]]
            block_s = 1
            while block_s < params.split:
                block_s *= 2
            block_x = max(1, min(1024, 4096 // block_s))
            self._launch(fin, (-(-nx // block_x),), [*ws, *outs, *xs, *svals, nx, params.split],
                         {"BLOCK_X": block_x, "BLOCK_S": block_s, **warps}, device)

    def _run_normalization(self, spec, env, extents, scalars, device, info) -> None:
        """One normalization kernel, or its fallback plan (see schedulers.normalization)."""
        root_shape = shape_of(spec.root, extents)
        same = all(shape_of(e.inputs[0], extents) == root_shape for e in spec.group.reductions)
        params = None
        if same and all(n > 0 for n in root_shape):
            prob = build_problem(spec, env, extents)
            passes = 1 + max(spec.group.levels.values())
            params = nm.heuristics(prob, info, passes,
                                   loop=spec.group.rows or len(spec.group.reductions) > 1,
                                   rows=spec.group.rows)
        if params is None or params.mode == "segmented":
            for tv in spec.fallback_buffers:
                if id(tv) not in env:
                    env[id(tv)] = torch.empty(shape_of(tv, extents), dtype=to_torch(tv.dtype),
                                              device=device)
            start = len(self.last_segments)
            for sub in spec.fallback:
                self._run_spec(sub, env, extents, scalars, device, info)
            why = params.reason if params is not None else "empty or mismatched extents"
            self.last_segments[start:] = [(s, f"{r}; instead of one normalization kernel: {why}")
                                          for s, r in self.last_segments[start:]]
            return
        self.last_segments.append((spec, f"{spec.reason} ({params.mode}: {params.reason})"))
        kernel = self._generated(spec, params, normalization_source, "normalization_kernel")
        nx, nr, npx = _row_extents(prob, params)
        head = self._head_args(spec, prob, params, env, extents, [])
        scalar_vals = [scalars[id(s)] for s in spec.scalars]
        args = head + scalar_vals + [nx, nr, npx]
        slots = [(len(head) + i, s) for i, s in enumerate(spec.scalars)]
        self._launch(kernel, (nm.grid(params),), args,
                     {"BLOCK_X": params.block_x, "BLOCK_R": params.block_r,
                      "num_warps": params.num_warps}, device, slots)

    def _ticket_counters(self, spec, params, device) -> torch.Tensor:
        """An int32 counter per X block, zeroed once: the last program of each block resets
        its counter, so every later launch (the replay path too) finds zeros."""
        key = (id(spec), str(device))
        n = rd.grid(params)[0]
        if key not in self._tickets or self._tickets[key].numel() < n:
            self._tickets[key] = torch.zeros(n, dtype=torch.int32, device=device)
        return self._tickets[key]

    def _fill_empty_reduction(self, spec, env):
        for e in spec.reductions:
            for out, value in zip(e.outputs, empty_fill_values(e)):
                env[id(out)].fill_(value)


def _row_extents(prob: Problem, params) -> tuple[int, int, int]:
    """A reduction-like kernel's NX, NR and (outer template) tiles along the stride-1 kept
    group, from the problem and the params' template."""
    _, _, nx, nr = prob.kept_and_reduced()
    npx = -(-prob.groups[params.x_groups[0]].size // params.block_x) \
        if params.template == "outer" else 1
    return nx, nr, npx


def _dump(params, src: str) -> None:
    """``LAYOUTFUSE_DUMP=code,schedule`` prints each new kernel's source and params."""
    what = {w.strip() for w in os.environ.get("LAYOUTFUSE_DUMP", "").split(",")}
    if "schedule" in what:
        print(f"[layoutfuse] schedule: {params}", file=sys.stderr)
    if "code" in what:
        print(f"[layoutfuse] code:\n{src}", file=sys.stderr)
