"""Binding a kernel's arguments by name, and the record of each launch.

Every generated kernel names its runtime arguments after what they hold: ``p<i>`` the
segment's memory tensors, ``ws<k>`` / ``tickets`` workspaces, ``o<k>`` a finishing
kernel's outputs, ``n<k>`` group extents, ``s<a>_<k>`` the stride of access ``a`` over
group ``k``, ``ext<j>`` / ``ms<a>_<i>`` an index walk's extents and strides, ``c<i>``
the segment's scalars, and capitals for launch-time integers (``NUM_PX``, ``CHUNK``).
``argument_values`` computes each of them; a kernel takes the ones its ``arg_names``
list, in that order.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch

from ..analysis.index_walk import base_offset
from ..codegen.generic_index import generic_index
from ..codegen.kernel import Kernel
from ..ir import Scalar
from ..schedulers.launch import LaunchSpec
from ..schedulers.problem import Problem
from ..segmenter.segments import KernelSpec
from .problems import real_strides


@dataclass(frozen=True)
class TensorArg:
    """What a launch's tensor argument was, without the tensor: enough for Triton's
    specialization (dtype, the pointer's alignment) and for a reader."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    device: torch.device
    pointer: int

    @classmethod
    def of(cls, t: torch.Tensor) -> TensorArg:
        return cls(t.dtype, tuple(t.shape), tuple(t.stride()), t.device, t.data_ptr())

    def data_ptr(self) -> int:
        return self.pointer


@dataclass(frozen=True)
class LaunchRecord:
    """One launch as it ran: the loaded kernel, the function it was launched through (the
    interpreter or the JIT), the grid, the bound arguments and the keyword arguments; the
    (argument position, Scalar) pairs of the scalar inputs among the arguments; the
    compiled CUDA kernel the JIT returned (None on the CPU or when not launched)."""

    kernel: Kernel
    loaded: Any
    fn: Any
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    meta: dict[str, int] = field(hash=False)
    scalar_slots: tuple[tuple[int, Scalar], ...] = ()
    compiled: Any = None
    time_ms: Any = None  # a profiled run: the launch's time (CUDA events, then ms)

    def detached(self) -> LaunchRecord:
        """The record without references to the call's tensors (each becomes a
        ``TensorArg``): what is kept after the call, so no tensor outlives it."""
        args = tuple(TensorArg.of(a) if isinstance(a, torch.Tensor) else a for a in self.args)
        return dataclasses.replace(self, args=args)

    def constexpr_values(self) -> list[Any]:
        """The values of the JIT function's parameters after the runtime arguments."""
        return [self.meta[n] for n in self.loaded.jit.arg_names[len(self.args) :]]


def argument_values(
    segment: KernelSpec,
    problem: Problem,
    params: Any,
    env: dict[int, torch.Tensor],
    extents: dict[int, int],
    scalars: list[Any],
    workspaces: dict[str, Any],
) -> dict[str, Any]:
    """Every value a kernel of ``segment`` may name, by name (launch-time integers apart)."""
    values: dict[str, Any] = {f"p{i}": env[id(tv)] for i, tv in enumerate(segment.memory)}
    values.update(workspaces)
    values.update({f"o{k}": env[id(o)] for k, o in enumerate(segment.results)})
    values["NREP"] = problem.repeat
    for k, g in enumerate(problem.groups):
        values[f"n{k}"] = g.size
        for a, s in enumerate(g.strides):
            values[f"s{a}_{k}"] = s
    if getattr(params, "generic", False):
        walk = generic_index(segment, params)
        values.update(zip(walk.arg_names(), walk.arg_values(segment, env, extents)))
    values.update({f"c{i}": v for i, v in enumerate(scalars)})
    by_id = {id(s): v for s, v in zip(segment.scalars, scalars)}
    rank = len(segment.root.shape_domain)
    for a in getattr(params, "based", ()):
        real = real_strides(segment, a, env, extents)
        values[f"b{a}"] = base_offset(segment.accesses[a], real, extents, by_id, rank)
    return values


def bind(
    kernel: Kernel, spec: LaunchSpec, values: dict[str, Any], segment: KernelSpec
) -> tuple[tuple[Any, ...], tuple[tuple[int, Scalar], ...]]:
    """The kernel's runtime arguments in declaration order, and where its scalars sit."""
    named = {**values, **dict(spec.values)}
    for name, f in getattr(kernel.params, "factors", ()):  # the kernel multiplies them back
        if f"{name}_q" in kernel.arg_names:  # (a finishing kernel takes them as they are)
            named[f"{name}_q"] = named[name] // f
    args = tuple(named[n] for n in kernel.arg_names)
    position = {n: i for i, n in enumerate(kernel.arg_names)}
    slots = tuple(
        (position[f"c{i}"], s) for i, s in enumerate(segment.scalars) if f"c{i}" in position
    )
    return args, slots
