"""The fast path: replay a run's launches for inputs of a signature seen before.

A fusion's first run with a given input signature (shapes, strides, dtypes,
device, 16-byte alignment, integer scalar values) validates, lays out, plans and
launches. It records every launch with its arguments, and this module turns that
record into a ``LaunchPlan``: input and output tensors become slots, scratch
buffers (intermediates, split-reduction workspaces) are kept and reused, scalar
inputs are read from the call (and host arithmetic on them redone), outputs that
are views of inputs are made again as views, and the copies made after the kernels
(into aliased inputs: ``add_output(t, alias_input=x)``; an output listed twice)
are made again. A later call with the same signature then costs the key, one
dictionary lookup, the output allocations, the launches and those copies.

The plan is compiled into one small Python function (``plan.source`` shows it):
input slots read by position, outputs allocated with ``torch.empty_strided``,
each launch one call with its grid, pointers and constants written in place.
Compiled CUDA kernels are launched through the C entry of Triton's launcher,
skipping its Python wrapper; a launcher that does not take the expected arguments
(another Triton) switches the plan to Triton's JIT call for good. On the CPU the
launches go through the JIT (the interpreter).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..ir import Fusion, Scalar
from ..reference import evaluate_expr
from .launch import LaunchRecord

_Tensor = torch.Tensor


def signature(inputs: Sequence[Any], device: Any = None) -> tuple[Any, ...] | None:
    """Everything the checks and the plan depend on; None when it cannot be keyed.

    Per tensor its shape, strides, dtype, device and pointer alignment (part of the
    compiled kernels' specialization); per int or bool its type and value; per float
    its type. ``device``: execute's device argument, when one was given.
    """
    key: list[Any] = []
    for x in inputs:
        if isinstance(x, _Tensor):
            key.append((x.shape, x.stride(), x.dtype, x.device, x.data_ptr() & 15))
        elif isinstance(x, int):
            key.append((type(x), x))
        elif isinstance(x, float):
            key.append(float)
        else:
            return None
    if device is not None:
        key.append(str(device))
    return tuple(key)


@dataclass(frozen=True)
class PlannedLaunch:
    """One launch of a plan: the function it goes through (the JIT or the interpreter), the
    grid, what each argument is (``("in", i)`` input i, ``("out", j)`` output j,
    ``("val", v)`` a kept value (split tickets, which every launch leaves zeroed),
    ``("scratch", (k, shape, strides, dtype, device))`` scratch buffer ``k``, allocated
    anew by each replay (intermediates, split partials: concurrent replays of one plan
    must not share them), ``("scalar", (i, kind))`` input i as a Python ``kind``,
    ``("host", (k, fn))`` a value computed on the host by ``fn(inputs)`` (arithmetic on
    scalar inputs)), the keyword arguments, the compiled CUDA kernel (or None) and its constexpr values."""

    fn: Any
    grid: tuple[int, ...]
    argspec: tuple[tuple[str, Any], ...]
    meta: dict[str, int] = field(hash=False)
    compiled: Any = None
    consts: tuple[Any, ...] = ()


Ref = tuple[str, Any]
"""A tensor of a plan: ``("in", i)``, ``("out", j)`` or ``("scratch", (k, shape, ...))``."""


@dataclass
class LaunchPlan:
    # per returned output: (shape, strides, dtype, device) of a new buffer, or None for a
    # view of an input (``views``)
    outputs: list[tuple[Any, ...] | None]
    launches: list[PlannedLaunch]
    tensor_inputs: list[bool]  # per input, whether it is a tensor (a scalar as 0-dim: .item())
    direct: bool = True  # launch compiled CUDA kernels through their launcher
    # returned output j -> (input i, shape, strides, storage offset from the input's)
    views: dict[int, tuple[int, tuple[int, ...], tuple[int, ...], int]] = field(
        default_factory=dict
    )
    copies: list[tuple[Ref, Ref]] = field(default_factory=list)  # (dst, src) after the launches
    # replay(inputs) -> new outputs, every launch replayed: compiled from ``source``
    replay: Callable[[Any], list[torch.Tensor]] = field(init=False, repr=False)
    source: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._compile()

    def _compile(self) -> None:
        self.source, env = _replay_source(self)
        env["fall_back"] = self._fall_back
        exec(compile(self.source, "<layoutfuse replay>", "exec"), env)
        self.replay = env["replay"]

    def _fall_back(self, inputs: Sequence[Any]) -> list[torch.Tensor]:
        """This Triton's launcher takes other arguments: launch through the JIT from now on.

        The whole call is replayed again: outputs are fresh, and every kernel rewrites
        what it writes (split counters are back at zero after each launch)."""
        self.direct = False
        self._compile()
        return self.replay(inputs)


def _replay_source(plan: LaunchPlan) -> tuple[str, dict[str, Any]]:
    """The text of ``replay(inputs)`` for ``plan``, and the names it refers to."""
    env: dict[str, Any] = {"empty_strided": torch.empty_strided}
    body: list[str] = []
    bound: dict[int, str] = {}  # id of a bound value -> its name
    counts: dict[str, int] = {}

    def name(prefix: str, value: Any) -> str:
        """A literal for an int, bool or None; otherwise a name bound to ``value``."""
        if type(value) in (int, bool) or value is None:
            return repr(value)
        if id(value) not in bound:
            counts[prefix] = counts.get(prefix, -1) + 1
            bound[id(value)] = f"{prefix}{counts[prefix]}"
            env[bound[id(value)]] = value
        return bound[id(value)]

    used = [v for launch in plan.launches for v in launch.argspec]
    used += [r for copy in plan.copies for r in copy]
    tensors = sorted({v for kind, v in used if kind == "in"})
    scalars = dict(
        sorted({v for launch in plan.launches for kind, v in launch.argspec if kind == "scalar"})
    )
    body += [f"in{i} = inputs[{i}]" for i in tensors]
    for i, kind in scalars.items():  # as validation converts it (a 0-dim tensor: its item)
        value = f"inputs[{i}].item()" if plan.tensor_inputs[i] else f"inputs[{i}]"
        body.append(f"in{i} = {kind.__name__}({value})")
    hosts = {v[0]: v[1] for launch in plan.launches for kind, v in launch.argspec if kind == "host"}
    for k, fn in sorted(hosts.items()):
        body.append(f"host{k} = {name('host_fn', fn)}(inputs)")
    for j, out in enumerate(plan.outputs):
        if out is None:
            i, shape, stride, delta = plan.views[j]
            body.append(
                f"out{j} = inputs[{i}].as_strided({shape!r}, {stride!r}, "
                f"inputs[{i}].storage_offset() + {delta})"
            )
            continue
        shape, stride, dtype, device = out
        body.append(
            f"out{j} = empty_strided({tuple(shape)!r}, {tuple(stride)!r}, "
            f"dtype={name('dtype', dtype)}, device={name('device', device)})"
        )
    scratch = dict(sorted({v[0]: v[1:] for kind, v in used if kind == "scratch"}.items()))
    for k, (shape, stride, dtype, device) in scratch.items():
        body.append(
            f"scratch{k} = empty_strided({shape!r}, {stride!r}, "
            f"dtype={name('dtype', dtype)}, device={name('device', device)})"
        )
    calls, direct_calls = [], 0
    for k, launch in enumerate(plan.launches):
        args = [
            f"in{v}"
            if kind == "in"
            else f"in{v[0]}"
            if kind == "scalar"
            else f"out{v}"
            if kind == "out"
            else f"scratch{v[0]}"
            if kind == "scratch"
            else f"host{v[0]}"
            if kind == "host"
            else name("v", v)
            for kind, v in launch.argspec
        ]
        direct = _direct_call(k, launch.grid, launch.compiled, env) if plan.direct else None
        if direct is not None:
            calls.append(direct + ", ".join(args + [name("c", c) for c in launch.consts]) + ")")
            direct_calls += 1
        else:  # the JIT (on the CPU: the interpreter)
            env[f"kernel{k}"], env[f"meta{k}"] = launch.fn[launch.grid], launch.meta
            calls.append(f"kernel{k}({', '.join(args)}, **meta{k})")
    if direct_calls:
        body.append(f"stream = {_stream_source(env)}")
        body.append("try:")
        body += [f"    {c}" for c in calls]
        body.append("except (TypeError, AttributeError):")
        body.append("    return fall_back(inputs)")
    else:
        body += calls
    for dst, src in plan.copies:
        body.append(f"{_ref_source(dst)}.copy_({_ref_source(src)})")
    body.append(f"return [{', '.join(f'out{j}' for j in range(len(plan.outputs)))}]")
    return "def replay(inputs):\n" + "".join(f"    {line}\n" for line in body), env


def _ref_source(ref: Ref) -> str:
    kind, v = ref
    return {"in": f"in{v}", "out": f"out{v}"}.get(kind) or f"scratch{v[0]}"


def _direct_call(k: int, grid: tuple[int, ...], compiled: Any, env: dict[str, Any]) -> str | None:
    """The head of launch ``k``'s call through its compiled kernel's launcher (up to the
    kernel arguments), or None when it has none or the grid is not plain integers."""
    if compiled is None or not all(type(g) is int for g in grid) or not 1 <= len(grid) <= 3:
        return None
    gx, gy, gz = (*grid, 1, 1)[:3]
    try:
        runner = compiled.run  # Triton's CudaLauncher (loads the kernel once)
        env[f"function{k}"], env[f"metadata{k}"] = compiled.function, compiled.packed_metadata
    except AttributeError:
        return None
    launch = getattr(runner, "launch", None)
    if (
        callable(launch)
        and getattr(runner, "global_scratch_size", 1) == 0
        and getattr(runner, "profile_scratch_size", 1) == 0
        and hasattr(runner, "launch_cooperative_grid")
        and hasattr(runner, "launch_pdl")
    ):
        # what CudaLauncher.__call__ passes when the kernel needs no scratch memory
        env[f"launch{k}"] = launch
        return (
            f"launch{k}({gx}, {gy}, {gz}, stream, function{k}, "
            f"{bool(runner.launch_cooperative_grid)}, {bool(runner.launch_pdl)}, None, None, "
            f"metadata{k}, None, None, None, "
        )
    env[f"launch{k}"] = runner
    return f"launch{k}({gx}, {gy}, {gz}, stream, function{k}, metadata{k}, None, None, None, "


def _stream_source(env: dict[str, Any]) -> str:
    """An expression for the current device's current CUDA stream as an integer, by the
    cheapest calls there are (Triton's JIT reads it the same way)."""
    raw, device = (
        getattr(torch._C, "_cuda_getCurrentRawStream", None),
        getattr(torch._C, "_cuda_getDevice", None),
    )
    if raw is not None and device is not None:
        env["raw_stream"], env["current_device"] = raw, device
        return "raw_stream(current_device())"
    env["current_stream"] = torch.cuda.current_stream
    return "current_stream().cuda_stream"


def build_plan(
    fusion: Fusion,
    inputs: list[Any],
    returned: list[Any],
    log: list[LaunchRecord],
    kept: frozenset[int] = frozenset(),
    copies: Sequence[tuple[torch.Tensor, torch.Tensor]] = (),
) -> LaunchPlan | None:
    """A plan that reproduces the launches ``log`` and then the ``copies`` (destination,
    source), or None when the run cannot be replayed that way. ``kept``: ids of the tensors
    the plan keeps (split tickets); the other tensors that are neither inputs nor outputs
    are scratch, allocated by each replay. A returned tensor that shares an input's memory
    and that no launch or copy writes is a view of that input, made again by the replay."""
    scratch: dict[int, int] = {}
    in_ids = {id(x): i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)}
    written = {id(a) for r in log for a in r.args if isinstance(a, torch.Tensor)}
    written |= {id(dst) for dst, _ in copies}
    out_ids: dict[int, int] = {}
    views: dict[int, tuple[int, tuple[int, ...], tuple[int, ...], int]] = {}
    for j, t in enumerate(returned):
        if not isinstance(t, torch.Tensor):
            return None
        base = _input_sharing_memory(t, inputs)
        if base is not None:
            if id(t) in written or t.device != inputs[base].device:
                return None
            x = inputs[base]
            views[j] = (base, tuple(t.shape), t.stride(), t.storage_offset() - x.storage_offset())
            continue
        out_ids[id(t)] = j

    def ref(t: torch.Tensor) -> Ref:
        if id(t) in in_ids:
            return ("in", in_ids[id(t)])
        if id(t) in out_ids:
            return ("out", out_ids[id(t)])
        return _scratch_or_kept(t, kept, scratch)

    scalar_pos = {id(v): i for i, v in enumerate(fusion.inputs) if isinstance(v, Scalar)}
    launches = []
    for record in log:
        args = record.args
        spec: list[tuple[str, Any]] = [
            ref(a) if isinstance(a, torch.Tensor) else ("val", a) for a in args
        ]
        for k, s in record.scalar_slots:
            if id(s) in scalar_pos:  # args[k]: the value as validated
                spec[k] = ("scalar", (scalar_pos[id(s)], type(args[k])))
            elif s.definition is not None and s.definition.op.name != "size":
                try:
                    fn = host_scalar(s, scalar_pos, type(args[k]))
                except ValueError:
                    return None  # arithmetic on scalar inputs and extents together
                if fn is not None:  # None: no scalar input upstream (a constant of the key)
                    spec[k] = ("host", (id(s), fn))
        launches.append(
            PlannedLaunch(
                record.fn,
                record.grid,
                tuple(spec),
                record.meta,
                record.compiled,
                tuple(record.constexpr_values()),
            )
        )
    planned_copies = []
    for dst, src in copies:
        if 0 in dst.stride() and dst.numel() > 1:
            return None  # an expanded destination: the executor copies its first elements
        planned_copies.append((ref(dst), ref(src)))
    outputs = [
        None if j in views else (tuple(t.shape), t.stride(), t.dtype, t.device)
        for j, t in enumerate(returned)
    ]
    return LaunchPlan(
        outputs,
        launches,
        [isinstance(x, torch.Tensor) for x in inputs],
        views=views,
        copies=planned_copies,
    )


def _input_sharing_memory(t: torch.Tensor, inputs: list[Any]) -> int | None:
    """The position of the input whose memory ``t`` shares, or None."""
    ptr = t.untyped_storage().data_ptr()
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.untyped_storage().data_ptr() == ptr:
            return i
    return None


def host_scalar(
    s: Scalar, scalar_pos: dict[int, int], kind: type
) -> Callable[[Sequence[Any]], Any] | None:
    """``fn(inputs)``: the value of ``s``, computed on the host from the call's scalar
    inputs by its definition (the arithmetic ``runtime/extents.py`` does), as ``kind``;
    None when ``s`` depends on no scalar input (then its value is fixed by the key).
    Raises ValueError when it depends on scalar inputs and on an extent (``size``) too."""
    order: list[Scalar] = []
    seen: set[int] = set()
    depends = False

    def visit(v: Scalar) -> None:
        nonlocal depends
        if id(v) in seen:
            return
        seen.add(id(v))
        if id(v) in scalar_pos:
            depends = True
        elif v.definition is not None:
            for u in v.definition.inputs:
                if isinstance(u, Scalar):
                    visit(u)
        order.append(v)

    visit(s)
    if not depends:
        return None
    if any(v.definition is not None and v.definition.op.name == "size" for v in order):
        raise ValueError(f"{s!r}: host arithmetic on extents and scalar inputs")
    fixed = {id(v): v.value for v in order if v.is_constant}

    def fn(inputs: Sequence[Any]) -> Any:
        values = dict(fixed)
        for v in order:
            if id(v) in values:
                continue
            if id(v) in scalar_pos:
                x = inputs[scalar_pos[id(v)]]
                values[id(v)] = x.item() if isinstance(x, torch.Tensor) else x
                continue
            expr = v.definition
            assert expr is not None  # a scalar neither input nor constant is defined
            args = [values[id(u)] for u in expr.inputs]
            for o, r in zip(expr.outputs, evaluate_expr(expr, args, torch.device("cpu"))):
                values[id(o)] = r
        return kind(values[id(s)])

    return fn


def _scratch_or_kept(
    t: torch.Tensor, kept: frozenset[int], scratch: dict[int, int]
) -> tuple[str, Any]:
    """A launch's tensor argument that is neither an input nor an output."""
    if id(t) in kept:
        return ("val", t)
    k = scratch.setdefault(id(t), len(scratch))
    return ("scratch", (k, tuple(t.shape), tuple(t.stride()), t.dtype, t.device))
