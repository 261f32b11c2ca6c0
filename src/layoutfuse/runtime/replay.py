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
from ..ir.ops.random import PHILOX_SEED, draw_seed
from ..reference import evaluate_expr
from .complex_parts import complex_part
from .launch import LaunchRecord
from .library import LibraryCall

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
            key.append((int, x == 1, x % 16 == 0, -(2**31) <= x < 2**31))
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
"""A tensor of a plan, as ``PlannedLaunch.argspec`` says it: ``("in", i)``, ``("out", j)``,
``("made", k)``, ``("part", (where, i, k))``, ``("scratch", (k, shape, ...))`` or ``("val", t)``."""


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
    # view of an input (``views``) or a scalar output (``scalar_outputs``)
    outputs: list[tuple[Any, ...] | None]
    launches: list[PlannedLaunch | PlannedCall]  # in run order
    tensor_inputs: list[bool]  # per input, whether it is a tensor (a scalar as 0-dim: .item())
    direct: bool = True  # launch compiled CUDA kernels through their launcher
    seeds: int = 0  # seeds each replay draws (random ops without rng_seed)
    # returned output j -> (input i, shape, strides, storage offset from the input's)
    views: dict[int, tuple[int, tuple[int, ...], tuple[int, ...], int]] = field(
        default_factory=dict
    )
    copies: list[tuple[Ref, Ref]] = field(default_factory=list)  # (dst, src) after the launches
    # returned scalar output j -> (fn(inputs) computing it on the host, or its value when
    # the key fixes it; its dtype): a new 0-dim CPU tensor per call
    scalar_outputs: dict[int, tuple[Any, torch.dtype]] = field(default_factory=dict)
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
        if j in plan.scalar_outputs:
            value, dtype = plan.scalar_outputs[j]
            env["scalar_tensor"] = torch.tensor
            text = f"{name('host_fn', value)}(inputs)" if callable(value) else name("value", value)
            body.append(f"out{j} = scalar_tensor({text}, dtype={name('dtype', dtype)})")
            continue
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
    parts = sorted({v for kind, v in used if kind == "part"})
    if parts:  # the real parts of complex inputs and outputs (``runtime/complex_parts.py``)
        env["complex_part"] = complex_part
    for where, i, k in parts:
        src = f"inputs[{i}]" if where == "in" else f"out{i}"
        body.append(f"{where}{i}_part{k} = complex_part({src}, {k})")
    scratch = dict(sorted({v[0]: v[1:] for kind, v in used if kind == "scratch"}.items()))
    for k, (shape, stride, dtype, device) in scratch.items():
        body.append(
            f"scratch{k} = empty_strided({shape!r}, {stride!r}, "
            f"dtype={name('dtype', dtype)}, device={name('device', device)})"
        )
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
    for (to_kind, to), (from_kind, frm) in plan.copies:
        body.append(f"{_arg_source(to_kind, to, name)}.copy_({_arg_source(from_kind, frm, name)})")
    body.append(f"return [{', '.join(f'out{j}' for j in range(len(plan.outputs)))}]")
    return "def replay(inputs):\n" + "".join(f"    {line}\n" for line in body), env


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
    library_calls: Sequence[LibraryCall] = (),
    copies: Sequence[tuple[torch.Tensor, torch.Tensor]] = (),
    parts: dict[int, tuple[str, int, int]] | None = None,
    scalar_inputs: dict[int, int] | None = None,
) -> LaunchPlan | None:
    """A plan that reproduces the launches ``log`` and the library calls (in their places),
    then the ``copies`` (destination, source), or None when the run cannot be replayed that
    way. ``kept``: ids of the tensors the plan keeps (split tickets); the results of library
    calls are made by each replay's calls; the other tensors that are neither inputs nor
    outputs are scratch, allocated by each replay. A returned tensor that shares an input's
    memory and that no launch, call or copy writes is a view of that input, made again by
    the replay.

    A fusion with complex values launches its real lowering: ``parts`` maps the id of each
    part view it launched with to ``("in" | "out", position, 0 for re or 1 for im)``, and
    ``scalar_inputs`` the id of each of the lowering's scalar inputs to its position among
    ``inputs`` (``fusion``'s own scalar inputs otherwise)."""
    parts = parts or {}
    scratch: dict[int, int] = {}
    in_ids = {id(x): i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)}
    written = {id(a) for r in log for a in r.args if isinstance(a, torch.Tensor)}
    written |= {id(dst) for dst, _ in copies}
    written |= {id(d) for c in library_calls for d in c.dests if d is not None}
    # a complex output whose parts a launch writes (``parts``: by returned position)
    written |= {id(returned[parts[a][1]]) for a in written if a in parts and parts[a][0] == "out"}
    out_ids: dict[int, int] = {}
    views: dict[int, tuple[int, tuple[int, ...], tuple[int, ...], int]] = {}
    values = [s.value for s in fusion.outputs if s.alias_input is None]
    scalar_outputs: dict[int, tuple[Any, torch.dtype]] = {}
    for j, t in enumerate(returned):
        # an output with expanded (stride-0) dims is replayed as ``empty_strided`` of its
        # strides: the same storage as the planned run's expanded buffer
        if not isinstance(t, torch.Tensor):
            return None
        if isinstance(values[j], Scalar):  # computed on the host, not by a launch
            continue
        base = _input_sharing_memory(t, inputs)
        if base is not None:
            if id(t) in written or t.device != inputs[base].device:
                return None
            x = inputs[base]
            views[j] = (base, tuple(t.shape), t.stride(), t.storage_offset() - x.storage_offset())
            continue
        out_ids[id(t)] = j
    made: dict[int, int] = {}  # id of a library call's result -> its made number

    def ref(t: torch.Tensor) -> Ref:
        if id(t) in in_ids:
            return ("in", in_ids[id(t)])
        if id(t) in out_ids:
            return ("out", out_ids[id(t)])
        if id(t) in made:
            return ("made", made[id(t)])
        if id(t) in parts:
            return ("part", parts[id(t)])
        return _scratch_or_kept(t, kept, scratch)

    scalar_pos = (
        scalar_inputs
        if scalar_inputs is not None
        else {id(v): i for i, v in enumerate(fusion.inputs) if isinstance(v, Scalar)}
    )
    # a random op's drawn seed (by id) -> its number: fusion order, the order of the draws
    seeds = {
        id(e.outputs[0]): k for k, e in enumerate(e for e in fusion.exprs if e.op is PHILOX_SEED)
    }
    launches: list[PlannedLaunch | PlannedCall] = []
    pending = sorted(library_calls, key=lambda c: c.at)

    def argspec(args: tuple[Any, ...], slots: Any) -> list[tuple[str, Any]] | None:
        spec: list[tuple[str, Any]] = [
            ref(a) if isinstance(a, torch.Tensor) else ("val", a) for a in args
        ]
        for k, s in slots:
            if id(s) in scalar_pos:  # args[k]: the value as validated
                spec[k] = ("scalar", (scalar_pos[id(s)], type(args[k])))
            elif s.definition is not None and s.definition.op is PHILOX_SEED:
                spec[k] = ("seed", seeds[id(s)])  # drawn anew by each replay
            elif s.definition is not None and s.definition.op.name != "size":
                try:
                    fn = host_scalar(s, scalar_pos, type(args[k]))
                except ValueError:
                    return None  # arithmetic the plan cannot redo (extents, seeds, parts)
                if fn is not None:  # None: no scalar input upstream (a constant of the key)
                    spec[k] = ("host", (id(s), fn))
            elif s.definition is None and not s.is_constant:
                return None  # an input the plan cannot read (a part of a complex scalar)
        return spec

    def add_calls(upto: int) -> bool:
        while pending and pending[0].at <= upto:
            c = pending.pop(0)
            spec = argspec(c.args, c.scalar_slots)
            if spec is None:
                return False
            results: list[tuple[str, Any]] = []
            for dst, r in zip(c.dests, c.results):
                if dst is not None:
                    if id(dst) not in out_ids:
                        return False  # a destination the plan does not return
                    results.append(("out", out_ids[id(dst)]))
                else:
                    made[id(r)] = len(made)
                    results.append(("made", made[id(r)]))
            launches.append(PlannedCall(c.fn, tuple(spec), tuple(results)))
        return True

    for n, record in enumerate(log):
        if not add_calls(n):
            return None
        args = record.args
        spec = argspec(args, record.scalar_slots)
        if spec is None:
            return None
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
    if not add_calls(len(log)):
        return None
    for j, v in enumerate(values):
        if isinstance(v, Scalar):
            value = returned[j].item()
            try:
                fn = host_scalar(v, scalar_pos, type(value))
            except ValueError:
                return None
            scalar_outputs[j] = (value if fn is None else fn, returned[j].dtype)
    planned_copies = []
    for dst, src in copies:
        if 0 in dst.stride() and dst.numel() > 1:
            return None  # an expanded destination: the executor copies its first elements
        planned_copies.append((ref(dst), ref(src)))
    outputs = [
        None
        if j in views or j in scalar_outputs
        else (tuple(t.shape), t.stride(), t.dtype, t.device)
        for j, t in enumerate(returned)
    ]
    return LaunchPlan(
        outputs,
        launches,
        [isinstance(x, torch.Tensor) for x in inputs],
        seeds=len(seeds),
        views=views,
        copies=planned_copies,
        scalar_outputs=scalar_outputs,
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
    Raises ValueError when it depends on scalar inputs and on an extent (``size``) too, or on
    a value the plan cannot compute (a drawn seed, a part of a complex scalar input)."""
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
        elif v.definition is not None and v.definition.op is PHILOX_SEED:
            raise ValueError(f"{s!r}: host arithmetic on a drawn seed")
        elif v.definition is None and not v.is_constant:
            raise ValueError(f"{s!r}: host arithmetic on an input the plan cannot read")
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
