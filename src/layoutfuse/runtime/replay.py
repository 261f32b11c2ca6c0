"""The fast path: replay a run's launches for inputs of a signature seen before.

A fusion's first run with a given input signature (shapes, strides, dtypes,
device, 16-byte alignment, integer scalar values) validates, lays out, plans and
launches. It records every launch with its arguments, and ``runtime/plan_build.py``
turns that record into a ``LaunchPlan``: input and output tensors become slots, scratch
buffers (intermediates, split-reduction workspaces) are allocated by each replay,
scalar inputs are read from the call (and host arithmetic on them redone), outputs that
are views of inputs are made again as views, and the copies made after the kernels
(into aliased inputs: ``add_output(t, alias_input=x)``; an output listed twice)
are made again. A later call with the same signature then costs finding the plan (the
guard of the plan replayed last, ``runtime/guard.py``, else the key and one dictionary
lookup), the output allocations, the launches and those copies.

The plan is compiled into one small Python function (``plan.source`` shows it):
input slots read by position, outputs allocated with ``torch.empty_strided``,
each launch one call with its grid, pointers and constants written in place.
Compiled CUDA kernels are launched through the C entry of Triton's launcher,
skipping its Python wrapper, with every tensor passed as its address (read once per
tensor) and the scratch that only such launches touch carved from one buffer per call; a
launcher that does not take the expected arguments (another Triton) switches the plan to
Triton's JIT call for good. On the CPU the launches go through the JIT (the interpreter).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..ir.ops.random import draw_seed
from .complex_parts import complex_part
from .index_bounds import IndexCheck, check_indices

_Tensor = torch.Tensor


def signature(
    inputs: Sequence[Any], device: Any = None, seeds: frozenset[int] = frozenset()
) -> tuple[Any, ...] | None:
    """Everything the checks and the plan depend on; None when it cannot be keyed.

    Per tensor its shape, strides, dtype, device and pointer alignment (part of the
    compiled kernels' specialization); per int or bool its type and value; per float
    its type. ``device``: execute's device argument, when one was given. ``seeds``:
    positions of ints used only as random ops' seeds or offsets
    (``ir.ops.random.seed_inputs``), keyed by what Triton specializes an int launch
    argument on (1, a multiple of 16, 32 bits), not by value: a new seed replays.
    """
    key: list[Any] = []
    for i, x in enumerate(inputs):
        if isinstance(x, _Tensor):
            key.append((x.shape, x.stride(), x.dtype, x.device, x.data_ptr() & 15))
        elif isinstance(x, int) and i in seeds and type(x) is int:
            key.append((int, *seed_class(x)))
        elif isinstance(x, int):
            key.append((type(x), x))
        elif isinstance(x, float):
            key.append(float)
        else:
            return None
    if device is not None:
        key.append(str(device))
    return tuple(key)


def seed_class(x: int) -> tuple[bool, bool, bool]:
    """What Triton specializes an int launch argument on: 1, a multiple of 16, 32 bits."""
    return (x == 1, x % 16 == 0, -(2**31) <= x < 2**31)


@dataclass(frozen=True)
class PlannedLaunch:
    """One launch of a plan: the function it goes through (the JIT or the interpreter), the
    grid, what each argument is (``("in", i)`` input i, ``("out", j)`` output j,
    ``("val", v)`` a value, ``("kept", k)`` a kept tensor (``LaunchPlan.kept[k]``: split
    tickets, which every launch leaves zeroed; one set per CUDA stream),
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
"""A tensor of a plan, as ``PlannedLaunch.argspec`` says it: ``("in", i)``, ``("out", j)``,
``("made", k)``, ``("part", (where, i, k))``, ``("scratch", (k, shape, ...))``, ``("kept", k)``
or ``("val", t)``."""


@dataclass(frozen=True)
class PlannedCall:
    """A library segment's call in a plan (``runtime/library.py``): its function, its
    arguments as ``PlannedLaunch.argspec`` says them (and ``("made", k)``: the result of an
    earlier call), and per result what becomes of it: ``("out", j)`` copied into output j,
    ``("made", k)`` bound as made tensor k (later steps read it), ``("drop", None)``."""

    fn: Any
    argspec: tuple[tuple[str, Any], ...]
    results: tuple[tuple[str, Any], ...]


@dataclass
class LaunchPlan:
    # per returned output: (shape, strides, dtype, device) of a new buffer, or None for a
    # view of an input (``views``) or of another output (``output_views``), a scalar
    # output (``scalar_outputs``) or a library call's result (``bound``)
    outputs: list[tuple[Any, ...] | None]
    launches: list[PlannedLaunch | PlannedCall]  # in run order
    tensor_inputs: list[bool]  # per input, whether it is a tensor (a scalar as 0-dim: .item())
    direct: bool = True  # launch compiled CUDA kernels through their launcher
    seeds: int = 0  # seeds each replay draws (random ops without rng_seed)
    # returned output j -> (input i, shape, strides, storage offset from the input's)
    views: dict[int, tuple[int, tuple[int, ...], tuple[int, ...], int]] = field(
        default_factory=dict
    )
    # returned output j -> (returned output k, shape, strides, storage offset from k's)
    output_views: dict[int, tuple[int, tuple[int, ...], tuple[int, ...], int]] = field(
        default_factory=dict
    )
    copies: list[tuple[Ref, Ref]] = field(default_factory=list)  # (dst, src) after the launches
    # returned scalar output j -> (fn(inputs) computing it on the host, or its value when
    # the key fixes it; its dtype): a new 0-dim CPU tensor per call
    scalar_outputs: dict[int, tuple[Any, torch.dtype]] = field(default_factory=dict)
    # host-side bounds checks of indexed reads of CPU index inputs, made before the launches
    index_checks: tuple[IndexCheck, ...] = ()
    # returned output j -> the library call's result k it is (``("made", k)``): returned
    # as the call made it, no buffer of its own
    bound: dict[int, int] = field(default_factory=dict)
    # the kept tensors (split tickets, ``("kept", k)``) as the planning call's stream used
    # them; a replay on another stream uses that stream's own (``StreamTickets``)
    kept: tuple[torch.Tensor, ...] = ()
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


def zero_kept(kept: Sequence[torch.Tensor]) -> None:
    """After a launch that raised (on the CPU, the interpreter stops between programs: an
    error, a KeyboardInterrupt): the kept workspaces zeroed again, as a finished launch
    leaves them (a split's tickets counted part way would misplace the next launch's
    finish; a chained scan's counter would start the next launch mid-way and wait for
    chunks no program draws). A CUDA launch raises before it runs or not at all."""
    for t in kept:
        t.zero_()


def _replay_source(plan: LaunchPlan) -> tuple[str, dict[str, Any]]:
    """The text of ``replay(inputs)`` for ``plan``, and the names it refers to."""
    env: dict[str, Any] = {"empty_strided": torch.empty_strided}
    body: list[str] = []
    if plan.index_checks:
        env["check_indices"], env["index_checks"] = check_indices, plan.index_checks
        body.append("check_indices(index_checks, inputs)")
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
    if plan.seeds:  # random ops without rng_seed: fresh seeds per call, in fusion order
        env["draw_seed"] = draw_seed  # (as a planned call draws them: the same numbers)
        body += [f"seed{k} = draw_seed()" for k in range(plan.seeds)]
    for i, kind in scalars.items():  # as validation converts it (a 0-dim tensor: its item)
        value = f"inputs[{i}].item()" if plan.tensor_inputs[i] else f"inputs[{i}]"
        body.append(f"in{i} = {kind.__name__}({value})")
    hosts = {v[0]: v[1] for launch in plan.launches for kind, v in launch.argspec if kind == "host"}
    for k, fn in sorted(hosts.items()):
        body.append(f"host{k} = {name('host_fn', fn)}(inputs)")
    for j, out in enumerate(plan.outputs):
        if j in plan.bound:
            continue  # made by its library call, returned as it is
        if j in plan.scalar_outputs:
            value, dtype = plan.scalar_outputs[j]
            env["scalar_tensor"] = torch.tensor
            text = f"{name('host_fn', value)}(inputs)" if callable(value) else name("value", value)
            body.append(f"out{j} = scalar_tensor({text}, dtype={name('dtype', dtype)})")
            continue
        if j in plan.output_views:
            continue  # after every new buffer
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
    for j, (k, shape, stride, delta) in sorted(plan.output_views.items()):
        if k in plan.bound:
            continue  # a view of a library call's result: after the calls
        body.append(
            f"out{j} = out{k}.as_strided({shape!r}, {stride!r}, out{k}.storage_offset() + {delta})"
        )
    parts = sorted({v for kind, v in used if kind == "part"})
    if parts:  # the real parts of complex inputs and outputs (``runtime/complex_parts.py``)
        env["complex_part"] = complex_part
    for where, i, k in parts:
        src = f"inputs[{i}]" if where == "in" else f"out{i}"
        body.append(f"{where}{i}_part{k} = complex_part({src}, {k})")
    heads = {
        k: _direct_call(k, launch.grid, launch.compiled, env) if plan.direct else None
        for k, launch in enumerate(plan.launches)
        if isinstance(launch, PlannedLaunch)
    }
    scratch = dict(sorted({v[0]: v[1:] for kind, v in used if kind == "scratch"}.items()))
    # scratch that only direct launches read or write: parts of one buffer per device
    tensor_uses = [
        v[0]
        for k, launch in enumerate(plan.launches)
        if heads.get(k) is None
        for kind, v in launch.argspec
        if kind == "scratch"
    ]
    tensor_uses += [r[1][0] for copy in plan.copies for r in copy if r[0] == "scratch"]
    lines, arena = _arena_source(
        {k: spec for k, spec in scratch.items() if k not in tensor_uses}, name
    )
    body += lines
    hoisted: dict[str, str] = {}  # a tensor's data_ptr() call -> the name of its value
    for k, (shape, stride, dtype, device) in scratch.items():
        if k in arena:
            continue
        body.append(
            f"scratch{k} = empty_strided({shape!r}, {stride!r}, "
            f"dtype={name('dtype', dtype)}, device={name('device', device)})"
        )
    stream_known = False  # ``stream`` read once, for the tickets and the direct launches
    if plan.kept:  # this stream's tickets
        env["tickets"] = StreamTickets(plan.kept)
        if plan.kept[0].device.type == "cuda":
            body.append(f"stream = {_stream_source(env)}")
            stream_known = True
        body.append(f"kept = tickets({'stream' if stream_known else 0})")
    calls, direct_calls = [], 0
    for k, launch in enumerate(plan.launches):
        args = [_arg_source(kind, v, name) for kind, v in launch.argspec]
        if isinstance(launch, PlannedCall):
            env[f"library{k}"] = launch.fn
            calls.append(f"r{k} = library{k}({', '.join(args)})")
            for i, (kind, v) in enumerate(launch.results):
                if kind == "out":
                    calls.append(f"out{v}.copy_(r{k}[{i}])")
                elif kind == "made":
                    calls.append(f"made{v} = r{k}[{i}]")
            continue
        direct = heads[k]
        if direct is not None:
            # tensors as their addresses: the launcher takes an int as it is, where it would
            # call a tensor's data_ptr() and ask the driver about the pointer
            # (cuPointerGetAttribute); the key fixed every tensor's device
            args = [
                _address(a, kind, v, arena, hoisted) for a, (kind, v) in zip(args, launch.argspec)
            ]
            calls.append(direct + ", ".join(args + [name("c", c) for c in launch.consts]) + ")")
            direct_calls += 1
        else:  # the JIT (on the CPU: the interpreter)
            env[f"kernel{k}"], env[f"meta{k}"] = launch.fn[launch.grid], launch.meta
            calls.append(f"kernel{k}({', '.join(args)}, **meta{k})")
    if direct_calls:
        body += [f"{a} = {t}" for t, a in hoisted.items()]
        if not stream_known:
            body.append(f"stream = {_stream_source(env)}")
        body.append("try:")
        body += [f"    {c}" for c in calls]
        body.append("except (TypeError, AttributeError):")
        body.append("    return fall_back(inputs)")
    elif plan.kept:  # interpreted launches stop between programs: kept tensors zeroed again
        env["zero_kept"] = zero_kept
        body.append("try:")
        body += [f"    {c}" for c in calls]
        body.append("except BaseException:")
        body.append("    zero_kept(kept)")
        body.append("    raise")
    else:
        body += calls
    for j, (k, shape, stride, delta) in sorted(plan.output_views.items()):
        if k in plan.bound:  # of the result as the call made it
            base = f"made{plan.bound[k]}"
            body.append(
                f"out{j} = {base}.as_strided({shape!r}, {stride!r}, "
                f"{base}.storage_offset() + {delta})"
            )
    for (to_kind, to), (from_kind, frm) in plan.copies:
        body.append(f"{_arg_source(to_kind, to, name)}.copy_({_arg_source(from_kind, frm, name)})")
    returned = [
        f"made{plan.bound[j]}" if j in plan.bound else f"out{j}" for j in range(len(plan.outputs))
    ]
    body.append(f"return [{', '.join(returned)}]")
    return "def replay(inputs):\n" + "".join(f"    {line}\n" for line in body), env


ARENA_ALIGN = 256  # bytes between the parts of a plan's scratch buffer (Triton needs 16)


def _arena_source(
    scratch: dict[int, tuple[Any, ...]], name: Callable[[str, Any], str]
) -> tuple[list[str], dict[int, str]]:
    """Lines that allocate one byte buffer per device for ``scratch`` (number ->
    (shape, strides, dtype, device)), each part at a multiple of ``ARENA_ALIGN`` bytes, and
    per scratch number the expression of its address: one allocation for all the
    intermediates of a plan, where each would be one ``empty_strided``."""
    lines: list[str] = []
    addresses: dict[int, str] = {}
    ends: dict[Any, int] = {}
    arenas: dict[Any, str] = {}
    for k, (shape, stride, dtype, device) in scratch.items():
        if device not in arenas:
            arenas[device], ends[device] = f"arena{len(arenas)}", 0
        start = ends[device]
        span = 0 if 0 in shape else 1 + sum((n - 1) * st for n, st in zip(shape, stride))
        ends[device] = start + -(-span * dtype.itemsize // ARENA_ALIGN) * ARENA_ALIGN
        addresses[k] = f"{arenas[device]}_ptr + {start}" if start else f"{arenas[device]}_ptr"
    for device, arena in arenas.items():
        lines.append(
            f"{arena} = empty_strided(({max(ends[device], 1)},), (1,), "
            f"dtype={name('dtype', torch.uint8)}, device={name('device', device)})"
        )
        lines.append(f"{arena}_ptr = {arena}.data_ptr()")
    return lines, addresses


def _address(text: str, kind: str, v: Any, arena: dict[int, str], hoisted: dict[str, str]) -> str:
    """The text of a direct launch's argument: a tensor's address (a scratch's part of its
    buffer, from ``arena``; the address of a tensor made before the launches, read once
    into a name that ``hoisted`` maps its ``data_ptr()`` call to), or the argument's text."""
    if kind == "scratch" and v[0] in arena:
        return arena[v[0]]
    if kind == "made":  # a library call's result, made between the launches
        return f"{text}.data_ptr()"
    if kind == "kept":
        return hoisted.setdefault(f"{text}.data_ptr()", f"kept{v}_ptr")
    if kind in ("in", "out", "part", "scratch") or isinstance(v, torch.Tensor):
        return hoisted.setdefault(f"{text}.data_ptr()", f"{text}_ptr")
    return text


def _arg_source(kind: str, v: Any, name: Callable[[str, Any], str]) -> str:
    """The text of one argument of a step or one tensor of a copy (see
    ``PlannedLaunch.argspec``)."""
    if kind in ("in", "out"):
        return f"{kind}{v}"
    if kind in ("scalar", "scratch", "host"):
        return f"{'in' if kind == 'scalar' else kind}{v[0]}"
    if kind == "made":
        return f"made{v}"
    if kind == "seed":
        return f"seed{v}"
    if kind == "part":
        return f"{v[0]}{v[1]}_part{v[2]}"
    if kind == "kept":
        return f"kept[{v}]"
    return name("v", v)


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


class StreamTickets:
    """A plan's kept tensors per CUDA stream (``LaunchPlan.kept``). Every launch leaves
    its split tickets zeroed, and launches on one stream run one after another, so a
    stream's replays share one set; replays on two streams at once would count each
    other's programs into one ticket (a finish too early, or never). The planning call's
    stream keeps the tensors it planned with; another stream gets zeroed copies on first
    use (the zeroing is queued on that stream, before its launches)."""

    def __init__(self, planned: tuple[torch.Tensor, ...]):
        self._by_stream = {stream_key(planned[0].device): planned}

    def __call__(self, stream: int) -> tuple[torch.Tensor, ...]:
        got = self._by_stream.get(stream)
        if got is None:
            first = next(iter(self._by_stream.values()))
            got = self._by_stream.setdefault(stream, tuple(torch.zeros_like(t) for t in first))
        return got


def stream_key(device: torch.device) -> int:
    """The current stream of ``device`` as an integer (0 off CUDA): what kept tensors are
    held per."""
    if device.type != "cuda":
        return 0
    return int(torch.cuda.current_stream(device).cuda_stream)


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
