"""Steps of generated programs, the program that collects them, and running one.

A ``Step`` is an ``fd.ops`` call: its operands (value indices, ``Const``, ``ScalarInput``)
and keyword arguments. ``SEMANTICS`` gives each op its torch meaning (values, error
bounds and layout facts, ``tests/support/programs.py``); ``define`` calls the op on a
``FusionDefinition``. ``check_program`` defines and executes a program on its inputs'
layouts and compares every output with the reference: values within their bound, dtype,
shape and strides (pinned, a torch view of an input, or inferred from the dominant
input); any failure carries the program and ``fd.repro_script_for``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.errors import DefinitionError
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition
from support.program_reductions import reduction_compute, reduction_layout, var_mean_compute
from support.program_table import RANDOM_OPS, TABLE_SEMANTICS
from support.programs import (
    ARITY,
    BF16,
    BOOL,
    F16,
    Layout,
    Operand,
    ScalarInput,
    TorchRejects,
    Unusable,
    Value,
    bid_view,
    dense_strides,
    extend_out_view,
    inferred_order,
    input_value,
    is_dense,
    make_value,
    mismatch,
    order_from_stride_order,
    pointwise_compute,
    pointwise_layout,
    realize,
    rounding,
    same_values,
    shaped,
    squeeze_view,
)


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple
    attrs: tuple = ()  # keyword arguments as (name, value) pairs

    def __repr__(self) -> str:
        args = [f"v{a}" if isinstance(a, int) else repr(a) for a in self.args]
        args += [f"{k}={v!r}" for k, v in self.attrs]
        return f"{self.op}({', '.join(args)})"


# --- torch's meaning of each op ----------------------------------------------------------------
def _pointwise(name: str, *args: Operand) -> list[Value]:
    ref, err, abs_err = pointwise_compute(name, args)
    facts = pointwise_layout(args, ref.dim())
    bcast, origins = facts.pop("bcast"), facts.pop("origins")
    return [make_value(ref, err, abs_err, bcast, origins, **facts)]


def _cast(x: Value, dtype: DataType) -> list[Value]:
    target = _TORCH_DTYPES[dtype]
    if target == x.dtype:  # nvFuser: a set, a view
        return [shaped(x, x.ref.clone(), range(x.ref.dim()), lambda t: t)]
    ref = x.ref.to(target)
    if x.dtype.is_floating_point and not target.is_floating_point:
        if not x.exact:
            raise Unusable("cast to an integer of an approximate value")
        if target is not BOOL and bool((x.ref.double().abs() >= 2.0**31).any()):
            raise Unusable("cast out of the integer's range")
    err = x.err
    if target.is_floating_point:
        if not bool(ref.isfinite().all()):
            raise Unusable("overflows its dtype")
        if not (x.exact and same_values(ref, x.ref)):
            err += rounding(target)
    facts = dict(consumed=x.consumed, deps=x.deps, reshaped=x.reshaped)
    abs_err = x.abs_err
    if x.dtype in (F16, BF16) and not x.exact:  # their subnormals' slack (``mismatch``) stays
        abs_err += 4 * torch.finfo(x.dtype).tiny
    return [make_value(ref, err, abs_err, x.bcast, x.origins, **facts)]


def _reduction(name: str, x: Value, dims, keepdim=False) -> list[Value]:
    dims = [d % x.ref.dim() for d in dims]
    ref, err, abs_err = reduction_compute(name, x, dims, keepdim)
    if _over_one_element(x, dims) and ref.dtype == x.dtype:
        # the element itself: layoutfuse records a squeeze (and a broadcast back for
        # keepdim), view ops of a computed tensor (``ir.ops.reductions._over_one_element``)
        kept = [i for i in range(x.ref.dim()) if i not in dims]

        def view(t):
            t = squeeze_view(t, dims)
            return bid_view(t, [1 if i in dims else n for i, n in enumerate(t_shape)], kept)

        t_shape = x.shape
        if keepdim:
            return [shaped(x, ref, [None if i in dims else i for i in range(len(x.shape))], view)]
        return [shaped(x, ref, kept, lambda t: squeeze_view(t, dims))]
    facts = reduction_layout(x, dims, keepdim)
    bcast, origins = facts.pop("bcast"), facts.pop("origins")
    return [make_value(ref, err, abs_err, bcast, origins, **facts)]


def _over_one_element(x: Value, dims: Sequence[int]) -> bool:
    """Every reduced dim a broadcast of extent 1 (not expanded) of a computed tensor (not
    an input or view ops of one: ``x.view`` is None)."""
    return (
        bool(dims)
        and x.view is None
        and all(x.bcast[d] and not x.expanded[d] and x.shape[d] == 1 for d in dims)
    )


def _var_mean(x: Value, dims, correction=1, keepdim=False) -> list[Value]:
    dims = [d % x.ref.dim() for d in dims]
    facts = reduction_layout(x, dims, keepdim)
    bcast, origins = facts.pop("bcast"), facts.pop("origins")
    return [
        make_value(ref, err, abs_err, bcast, origins, **facts)
        for ref, err, abs_err in var_mean_compute(x, dims, correction, keepdim)
    ]


def _var(x: Value, dims, correction=1, keepdim=False) -> list[Value]:
    return _var_mean(x, dims, correction, keepdim)[:1]


def _permute(x: Value, dims) -> list[Value]:
    return [shaped(x, x.ref.permute(*dims), dims, lambda t: t.permute(*dims))]


def _reshape(x: Value, new_shape) -> list[Value]:
    ref = x.ref.reshape(new_shape)
    as_view = lambda t: t.view(new_shape)  # noqa: E731
    view = None if x.view is None else (x.view[0], x.view[1] + (as_view,))
    return [
        make_value(
            ref,
            x.err,
            x.abs_err,
            [s == 1 for s in new_shape],
            [{} for _ in new_shape],
            consumed=x.consumed,
            deps=x.deps,
            reshaped=True,
            view=view,
            out_view=extend_out_view(x, as_view, ref),
        )
    ]


def _broadcast_in_dim(x: Value, shape, broadcast_dims) -> list[Value]:
    src = [broadcast_dims.index(j) if j in broadcast_dims else None for j in range(len(shape))]
    return [
        shaped(
            x,
            bid_view(x.ref, shape, broadcast_dims),
            src,
            lambda t: bid_view(t, shape, broadcast_dims),
        )
    ]


def _broadcast(x: Value, is_broadcast_dim) -> list[Value]:
    kept = iter(x.shape)
    shape = [1 if b else next(kept) for b in is_broadcast_dim]
    return _broadcast_in_dim(x, shape, [j for j, b in enumerate(is_broadcast_dim) if not b])


def _expand(x: Value, shape) -> list[Value]:
    full = [x.shape[i] if s == -1 else s for i, s in enumerate(shape)]
    return _broadcast_in_dim(x, full, list(range(len(shape))))


def _squeeze(x: Value, dims, squeeze_expanded=False) -> list[Value]:
    src = [i for i in range(len(x.shape)) if i not in dims]
    return [shaped(x, squeeze_view(x.ref, dims), src, lambda t: squeeze_view(t, dims))]


def _set(x: Value) -> list[Value]:
    return [shaped(x, x.ref.clone(), range(x.ref.dim()), lambda t: t)]


def _stride_order(x: Value, stride_order) -> list[Value]:
    return [
        shaped(
            x,
            x.ref.clone(),
            range(x.ref.dim()),
            lambda t: t,
            pinned=order_from_stride_order(stride_order),
        )
    ]


SEMANTICS = {
    **{name: functools.partial(_pointwise, name) for name in ARITY},
    **{name: functools.partial(_reduction, name) for name in ("sum", "prod", "max", "min")},
    "cast": _cast,
    "var_mean": _var_mean,
    "var": _var,
    "permute": _permute,
    "reshape": _reshape,
    "broadcast_in_dim": _broadcast_in_dim,
    "broadcast": _broadcast,
    "expand": _expand,
    "squeeze": _squeeze,
    "set": _set,
    "segment_set": _set,
    "stride_order": _stride_order,
    **TABLE_SEMANTICS,
}
_TORCH_DTYPES = {
    DataType.Float: torch.float32,
    DataType.BFloat16: torch.bfloat16,
    DataType.Half: torch.float16,
    DataType.Int32: torch.int32,
    DataType.Int: torch.int64,
    DataType.Bool: torch.bool,
}


# --- the program ----------------------------------------------------------------------------------
MAX_ELEMENTS = 7**4  # a value's elements: rank 4 of extent 7 (broadcasts and cats stay below)


@dataclass(frozen=True)
class TensorInput:
    values: torch.Tensor  # logical values, CPU
    layout: Layout

    def __repr__(self) -> str:
        lay = self.layout
        extra = "".join(
            f", {k}={sorted(v)}"
            for k, v in (("expanded", lay.expanded), ("sliced", lay.sliced))
            if v
        )
        return (
            f"tensor({list(self.values.shape)}, {str(self.values.dtype)[6:]}, "
            f"alloc={list(lay.alloc)}{extra})"
        )


@dataclass
class Program:
    """Inputs (``TensorInput`` or ``ScalarInput``), steps, the values they make (inputs'
    first: value ``k`` is input ``k`` while ``k < len(inputs)`` has a tensor), outputs
    (value index, ``stride_order`` or None) and, for a program torch refuses, the step
    torch refuses and its message."""

    inputs: list = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    values: dict[int, Value] = field(default_factory=dict)
    outputs: list[tuple[int, list | None]] = field(default_factory=list)
    refused: tuple[int, str] | None = None
    step_outputs: list[list[int]] = field(default_factory=list)
    tags: set[str] = field(default_factory=set)  # what a drawing made beyond its ops' names
    _next: int = 0

    def add_input(self, values: torch.Tensor, layout: Layout) -> int:
        k = self._new()
        self.inputs.append((k, TensorInput(values, layout)))
        self.values[k] = input_value(k, values, layout)
        return k

    def add_scalar(self, value: int | float) -> ScalarInput:
        s = ScalarInput(self._new(), value)
        self.inputs.append((s.index, s))
        return s

    def _new(self) -> int:
        self._next += 1
        return self._next - 1

    def operands(self, step: Step) -> list[Operand]:
        return [self.values[a] if isinstance(a, int) else a for a in step.args]

    def apply(self, step: Step, keep_refusal: bool = False) -> list[int]:
        """Add ``step`` and its values. ``Unusable`` adds nothing, nor does a step torch
        rejects, unless ``keep_refusal``: then it is the program's last (``refused``)."""
        try:
            made = SEMANTICS[step.op](*self.operands(step), **dict(step.attrs))
        except TorchRejects as e:
            if not keep_refusal:
                raise Unusable(f"torch rejects it: {e}") from None
            self.steps.append(step)
            self.refused = (len(self.steps) - 1, str(e))
            return []
        if any(v.ref.numel() > MAX_ELEMENTS for v in made):
            raise Unusable(f"more than {MAX_ELEMENTS} elements (the interpreter is slow)")
        self.steps.append(step)
        ids = [self._new() for _ in made]
        self.values.update(zip(ids, made))
        self.step_outputs.append(ids)
        return ids

    def __repr__(self) -> str:
        lines = [f"v{k} = {inp!r}" for k, inp in self.inputs]
        for step, ids in zip(self.steps, self.step_outputs + [["refused"]]):
            lines.append(
                f"{', '.join(f'v{i}' if isinstance(i, int) else i for i in ids)} = {step!r}"
            )
        lines += [
            f"output v{k}" + (f" stride_order={so}" if so is not None else "")
            for k, so in self.outputs
        ]
        if self.refused:
            lines.append(f"torch refuses step {self.refused[0]}: {self.refused[1]}")
        return "Program:\n  " + "\n  ".join(lines)


# --- defining and running ---------------------------------------------------------------------------
# ``fd.ops`` calls whose arguments are not the step's operands in order, then its attrs
FORMS = {
    "pad": lambda ops, x, value=None, *, pad_widths: ops.pad(x, pad_widths, value),
    "cat": lambda ops, *tensors, dim: ops.cat(list(tensors), dim=dim),
    "uniform": lambda ops, a, b, s, o, *, shape, dtype: ops.uniform(
        a, b, shape, rng_seed=s, rng_offset=o, dtype=dtype
    ),
    "normal": lambda ops, a, b, s, o, *, shape, dtype: ops.normal(
        a, b, shape, rng_seed=s, rng_offset=o, dtype=dtype
    ),
    "rand_like": lambda ops, x, s, o: ops.rand_like(x, rng_seed=s, rng_offset=o),
    "randn_like": lambda ops, x, s, o: ops.randn_like(x, rng_seed=s, rng_offset=o),
}


def define(
    program: Program, tensors: dict[int, torch.Tensor]
) -> tuple[FusionDefinition, int, str | None]:
    """The program as a FusionDefinition; the steps defined before a DefinitionError
    (``len(steps)`` when all were) and its message."""
    done = 0
    cache = FusionCache.get()
    if cache.num_fusions() >= cache.max_fusions:  # nvFuser's limit (8192): a --full run
        FusionCache.reset()  # draws more distinct programs; the earlier ones have run
    fd = FusionDefinition()
    try:
        with fd:
            handles = {}
            for k, inp in program.inputs:
                handles[k] = (
                    fd.from_pytorch(tensors[k])
                    if isinstance(inp, TensorInput)
                    else fd.define_scalar(
                        DataType.Double if isinstance(inp.value, float) else DataType.Int
                    )
                )
            for step, ids in zip(program.steps, program.step_outputs + [[]]):
                args = [
                    handles[a]
                    if isinstance(a, int)
                    else handles[a.index]
                    if isinstance(a, ScalarInput)
                    else fd.define_scalar(a.value)
                    for a in step.args
                ]
                form = FORMS.get(step.op)
                attrs = dict(step.attrs)
                made = (
                    form(fd.ops, *args, **attrs)
                    if form
                    else getattr(fd.ops, step.op)(*args, **attrs)
                )
                handles.update(zip(ids, made if isinstance(made, tuple) else (made,)))
                done += 1
            for k, so in program.outputs:
                fd.add_output(handles[k], stride_order=so)
    except DefinitionError as e:
        return fd, done, str(e)
    return fd, len(program.steps), None


def check_program(program: Program, compile_sm90: bool = False) -> str:
    """Define and run ``program``; "ran", or "refused" where torch and layoutfuse both
    refuse its last step. Raises AssertionError on any difference. Every program runs
    twice (the planned call, then the replay a repeated call takes), each checked against
    torch; one with random ops must give the same bits both times; ``compile_sm90``: the
    kernels of its run are compiled for sm_90 too (``codegen.hopper_check``)."""
    tensors = {
        k: realize(inp.values, inp.layout)
        for k, inp in program.inputs
        if isinstance(inp, TensorInput)
    }
    args = [tensors[k] if isinstance(inp, TensorInput) else inp.value for k, inp in program.inputs]
    fd, defined, why_not = define(program, tensors)
    if program.refused is not None:
        step, why = program.refused
        assert defined == step, (
            f"torch refuses step {step} ({why}) but layoutfuse "
            f"{'accepts it' if defined > step else f'refuses step {defined}: {why_not}'}"
            f"\n{program!r}"
        )
        return "refused"
    assert defined == len(program.steps), (
        f"layoutfuse refuses step {defined} ({why_not}), which torch accepts\n{program!r}"
    )
    try:
        outs = fd.execute(args)
        problems = [
            p
            for k, (v, so) in enumerate(program.outputs)
            for p in output_problems(k, outs, program.values[v], so, program, tensors)
        ]
        if not problems:  # a repeated call: what the replay plan runs (``runtime/replay.py``)
            again = fd.execute(args)
            problems = [
                f"second call: {p}"
                for k, (v, so) in enumerate(program.outputs)
                for p in output_problems(k, again, program.values[v], so, program, tensors)
            ]
            if not problems and any(s.op in RANDOM_OPS for s in program.steps):
                problems = nondeterminism(outs, again)
        if not problems and compile_sm90:
            problems = [
                f"kernel {a.name}: its PTX has no sm_90 target"
                for a in compile_last_run(fd.executor())
                if ".target sm_90" not in a.ptx
            ]
    except Exception as e:  # noqa: BLE001 - any failure of a run is reported with its repro
        problems = [f"execute raised {type(e).__name__}: {e}"]
    if problems:
        raise AssertionError(
            "\n".join(problems) + f"\n{program!r}\n--- repro ---\n" + fd.repro_script_for(args)
        )
    return "ran"


def output_view_strides(
    v: Value, program: Program, outs: list[torch.Tensor]
) -> tuple[int, ...] | None:
    """The strides of ``v`` as a torch view of the topmost other output on its chain of
    view ops (``Value.out_view``), or None (no output there, or a reshape its strides
    cannot view)."""
    source, steps = v.out_view
    position = {id(program.values[key].ref): j for j, (key, _) in enumerate(program.outputs)}
    refs = [source] + [ref for _, ref in steps[:-1]]
    for n, ref in enumerate(refs):
        j = position.get(id(ref))
        if j is None or program.values[program.outputs[j][0]] is v:
            continue
        t = outs[j]
        try:
            for fn, _ in steps[n:]:
                t = fn(t)
        except RuntimeError:
            return None
        return t.stride()
    return None


def nondeterminism(first: list, second: list) -> list[str]:
    """Outputs of two runs with the same seeds and offsets that differ in a bit."""
    return [
        f"output {k}: a second run with the same seeds differs"
        for k, (a, b) in enumerate(zip(first, second))
        if not same_bits(a, b)
    ]


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    a, b = a.cpu().contiguous(), b.cpu().contiguous()
    if a.is_floating_point():
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        a, b = a.view(bits), b.view(bits)
    return torch.equal(a, b)


def output_problems(
    k: int,
    outs: list[torch.Tensor],
    v: Value,
    stride_order,
    program: Program,
    tensors: dict[int, torch.Tensor],
) -> list[str]:
    got = outs[k]
    why = mismatch(got, v)
    if why is not None:
        return [f"output {k}: {why}"]
    want = expected_strides(v, stride_order, program, tensors, outs)
    if want is None:
        ok = is_dense(got, v.expanded)
        return [] if ok else [f"output {k}: strides {got.stride()} are not dense"]
    bad = [d for d in range(got.dim()) if got.shape[d] > 1 and got.stride(d) != want[d]]
    return (
        [f"output {k}: strides {got.stride()}, expected {want} (shape {tuple(got.shape)})"]
        if bad
        else []
    )


def expected_strides(
    v: Value,
    stride_order,
    program: Program,
    tensors: dict[int, torch.Tensor],
    outs: list[torch.Tensor] | None = None,
) -> tuple[int, ...] | None:
    """Pinned (``stride_order``, a ``stride_order`` op), a torch view of an input or of
    another output (``Value.out_view``), or the dominant input's order; None where a
    reshape makes the order undefined here."""
    shape = v.shape
    if stride_order is not None or v.pinned is not None:
        order = order_from_stride_order(stride_order) if stride_order is not None else v.pinned
        return dense_strides(shape, order, v.expanded)
    if v.view is not None:
        i, chain = v.view
        try:
            t = tensors[i]
            for fn in chain:
                t = fn(t)
            return t.stride()
        except RuntimeError:
            pass  # a reshape the input's strides cannot view
    if v.out_view is not None and outs is not None:
        view = output_view_strides(v, program, outs)
        if view is not None:
            return view
    if v.reshaped:
        return None
    inputs = {k: program.values[k] for k, inp in program.inputs if isinstance(inp, TensorInput)}
    allocs = {k: inp.layout.alloc for k, inp in program.inputs if isinstance(inp, TensorInput)}
    return dense_strides(shape, inferred_order(v, inputs, allocs), v.expanded)
