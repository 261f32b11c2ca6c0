"""Drawing generated programs (``tests/test_generated_programs.py``).

``draw_program(k)`` draws program ``k`` of a fixed sequence from its own
``random.Random``: the same program on every run and machine, independent of the
others. It starts from one input of random rank, extents, dtype and layout and adds
2-6 steps; each step applies a random op (``KINDS``: every pointwise row, casts,
reductions, var_mean, shape ops) to one of the latest values, with new inputs,
other values, constants or symbolic scalars as further operands. An op that cannot be
checked on its operands (``support.programs.Unusable``), or that torch refuses, is
drawn again (four tries); where the current value cannot take it (a dtype torch
refuses, a zero that a divisor must not hold, an approximate value that a discontinuous
op must not see), a new input of the value's shape takes its place.
"""

from __future__ import annotations

import functools
import random

import torch

from layoutfuse.dtypes import from_torch
from layoutfuse.ir.ops.elementwise import ROWS
from support.program_families import FamilyDraws
from support.program_steps import Program, Step
from support.programs import (
    ARITY,
    BOOL,
    CLASSIFIES,
    COMPLEX_ONLY,
    DTYPES,
    KEEPS,
    NO_CANCEL,
    NONZERO,
    SCALES,
    Const,
    Layout,
    TorchRejects,
    Unusable,
    Value,
    input_values,
    torch_result_dtype,
)

SEED = "layoutfuse-generated-programs"
BY_ARITY = {
    n: [r.name for r in ROWS if r.arity == n and r.name not in COMPLEX_ONLY] for n in (1, 2, 3, 4)
}
KINDS = (
    ["unary"] * 4
    + ["binary"] * 5
    + ["ternary"] * 2
    + ["cast"] * 2
    + ["reduction"] * 3
    + ["var_mean"]
    + ["shape_op"] * 4
    + ["movement"] * 3  # the kinds of support.program_families
    + ["indexing"] * 2
    + ["random"]
    + ["scan"] * 2
    + ["library"]
    + ["normalization"]
)  # repeated for weight
SHAPE_OPS = (
    "permute",
    "reshape",
    "broadcast_in_dim",
    "broadcast",
    "expand",
    "squeeze",
    "set",
    "segment_set",
    "stride_order",
)
REDUCTIONS = ("sum", "prod", "max", "min")
FLOAT_CONSTANTS, INT_CONSTANTS = (0.5, -1.5, 2.0, 0.25, -3.0), (2, -3, 1, 5)
MAX_RANK = 4
STABLE = KEEPS | set(SCALES) | set(NO_CANCEL) | CLASSIFIES  # take approximate operands


def draw_program(k: int, seed: str = SEED) -> Program:
    """Program ``k`` of the sequence ``seed``: 2-6 steps; 1 in 12 programs asks for a
    step torch refuses, at a random step."""
    rng = random.Random(f"{seed}-{k}")
    program = Program()
    d = Drawing(rng, program)
    d.new_input(d.shape(), d.dtype())
    n_steps = rng.randint(2, 6)
    refuse_at = rng.randrange(n_steps) if d.chance(1 / 12) else None
    for step in range(n_steps):
        d.step(refuse=step == refuse_at)
        if program.refused:
            return program
    if not program.step_outputs:
        program.apply(Step("set", (min(program.values),)))
    d.outputs()
    return program


class Drawing(FamilyDraws):
    """Draws one program, step by step, from ``rng``."""

    def __init__(self, rng: random.Random, program: Program):
        self.rng = rng
        self.p = program
        self.gen = torch.Generator().manual_seed(rng.randrange(2**31))

    def pick(self, options):
        return self.rng.choice(list(options))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def perm(self, n: int) -> list[int]:
        return self.rng.sample(range(n), n)

    def subset(self, options, size: int | None = None) -> list:
        """``size`` of ``options`` (None: a random non-empty subset), in order."""
        options = list(options)
        k = self.rng.randint(1, len(options)) if size is None else size
        return sorted(self.rng.sample(options, k))

    # --- inputs ------------------------------------------------------------------------------
    def shape(self) -> list[int]:
        return [self.rng.randint(1, 7) for _ in range(self.rng.randint(1, MAX_RANK))]

    def dtype(self, like: torch.dtype | None = None) -> torch.dtype:
        if like is not None and self.chance(0.5):
            return like
        return self.pick(DTYPES)

    def new_input(self, shape, dtype, domain: str = "any", values=None) -> int:
        """A new input of ``shape`` in a random layout; ``values`` (else drawn from
        ``domain``) are taken along each dim it expands at their first element."""
        rank = len(shape)
        alloc = tuple(self.perm(rank))
        kinds = [self.rng.randrange(8) for _ in range(rank)]  # 1 in 8 expanded, 1 in 8 sliced
        expanded = frozenset(d for d in range(rank) if kinds[d] == 0 and shape[d] > 1)
        sliced = frozenset(d for d in range(rank) if kinds[d] == 1 and shape[d] > 1)
        if values is None:
            values = input_values(shape, dtype, domain, expanded, self.gen)
        else:
            for d in expanded:
                values = values.narrow(d, 0, 1).expand(values.shape)
            values = values.contiguous()
        return self.p.add_input(values, Layout(alloc, expanded, sliced))

    def like(self, v: Value) -> list[int]:
        """A shape that broadcasts with ``v``'s: dims kept, made 1 or (where ``v`` has a
        broadcast) widened; sometimes fewer dims (numpy's left broadcast)."""
        out = []
        for s, b in zip(v.shape, v.bcast):
            k = self.rng.randrange(6)
            out.append(1 if k == 4 else self.rng.randint(2, 5) if k == 5 and s == 1 and b else s)
        if len(out) > 1 and self.chance(1 / 6):
            out = out[1:]
        return out

    # --- operands ------------------------------------------------------------------------------
    def current(self) -> int:
        recent = sorted(k for k, v in self.p.values.items() if not v.opaque)[::-1][:3]
        return self.pick(recent)

    def operand(self, base: Value, dtype=None, domain: str = "any", scalars: bool = True):
        """A second operand for ``base``: an input, another value, a constant or a
        symbolic scalar (``dtype``: the input's, when it must have one)."""
        source = self.pick(["input", "value", "const", "scalar"] if scalars else ["input", "value"])
        if source == "value":
            fits = [
                k
                for k, v in self.p.values.items()
                if broadcastable(v, base)
                and not v.opaque
                and (dtype is None or v.dtype == dtype)
                and in_domain(v.ref, domain)
            ]
            if fits:
                return self.pick(fits)
        if source in ("const", "scalar") and dtype is None:
            value = self.pick(
                [c for c in FLOAT_CONSTANTS + INT_CONSTANTS if in_domain(torch.tensor(c), domain)]
            )
            return Const(value) if source == "const" else self.p.add_scalar(value)
        return self.new_input(self.like(base), dtype or self.dtype(base.dtype), domain)

    # --- steps -----------------------------------------------------------------------------------
    def step(self, refuse: bool) -> None:
        """One step (a few attempts: an op that cannot be checked on these operands, or
        that torch refuses, is drawn again). ``refuse``: an op torch refuses for the
        current value's dtype, where there is one."""
        if refuse:
            x = self.current()
            dtype = self.p.values[x].dtype
            names = [n for n in BY_ARITY[1] + BY_ARITY[2] if torch_refuses(n, dtype)]
            if names:
                name = self.pick(names)
                try:
                    self.p.apply(Step(name, (x,) * ARITY[name]), keep_refusal=True)
                    return
                except Unusable:
                    pass
        for _ in range(4):
            kind = self.pick(KINDS)
            x = self.current()
            try:
                step = getattr(self, kind)(x, self.p.values[x])
                if step is not None:  # else the kind applied its steps (a pattern)
                    self.p.apply(step, keep_refusal=refuse)
                return
            except Unusable:
                continue

    def unary(self, x: int, v: Value) -> Step:
        name = self.pick(BY_ARITY[1])
        return Step(name, (self.fitting(name, 0, x, v),))

    def binary(self, x: int, v: Value) -> Step:
        name = self.pick(BY_ARITY[2])
        swap = self.chance(0.25)
        x = self.fitting(name, 1 if swap else 0, x, v)
        v = self.p.values[x]
        other = self.operand(v, domain=domain_for(name, 0 if swap else 1, v.dtype))
        return Step(name, (other, x) if swap else (x, other))

    def fitting(self, name: str, position: int, x: int, v: Value) -> int:
        """``x``, or a new input of its shape where ``name`` refuses its dtype or needs no
        zeros at ``position`` (reciprocal of a tensor of "any" values nearly always
        meets a zero); half the time where ``x`` is approximate and ``name`` takes only
        exact operands."""
        dtypes = [d for d in DTYPES if not torch_refuses(name, d)]
        domain = domain_for(name, position, v.dtype)
        unstable = not v.exact and name not in STABLE and self.chance(0.5)
        if v.dtype in dtypes and in_domain(v.ref, domain) and not unstable:
            return x
        dtype = v.dtype if v.dtype in dtypes else self.pick(dtypes)
        return self.new_input(list(v.shape), dtype, domain)

    def ternary(self, x: int, v: Value) -> Step:
        name = self.pick(BY_ARITY[3] + BY_ARITY[4])
        if name == "where":
            pred = self.operand(v, dtype=BOOL, scalars=False)
            return Step(name, (pred, x, self.operand(v)))
        if name == "lerp":  # torch: start and end of one dtype
            weight = self.pick([Const(0.25), Const(0.75)])
            return Step(name, (x, self.operand(v, dtype=v.dtype, scalars=False), weight))
        if name == "threshold":  # nvFuser: two Scalars, of the tensor's kind (torch truncates)
            kind = FLOAT_CONSTANTS if v.dtype.is_floating_point else INT_CONSTANTS
            return Step(name, (x, *(self.scalar_operand(self.pick(kind)) for _ in range(2))))
        if name in ("add_alpha", "sub_alpha"):  # nvFuser: a Scalar alpha; torch: integral for ints
            kind = FLOAT_CONSTANTS if v.dtype.is_floating_point else INT_CONSTANTS
            return Step(name, (x, self.operand(v), self.scalar_operand(self.pick(kind))))
        if name == "addcmul":  # torch: an integral value for integers
            value = Const(self.pick((0.5, -1.5) if v.dtype.is_floating_point else (2, -1)))
            return Step(name, (x, self.operand(v), self.operand(v), value))
        return Step(name, (x, self.operand(v), self.operand(v)))  # clamp

    def scalar_operand(self, value):
        """``value`` as a constant or a symbolic scalar input."""
        return Const(value) if self.chance(0.5) else self.p.add_scalar(value)

    def cast(self, x: int, v: Value) -> Step:
        return Step("cast", (x,), (("dtype", from_torch(self.pick(DTYPES))),))

    def reduction(self, x: int, v: Value) -> Step:
        dims, keepdim = self.dims(v)
        return Step(self.pick(REDUCTIONS), (x,), (("dims", dims), ("keepdim", keepdim)))

    def var_mean(self, x: int, v: Value) -> Step:
        dims, keepdim = self.dims(v)
        correction = self.rng.randint(0, 1)
        attrs = (("dims", dims), ("correction", correction), ("keepdim", keepdim))
        return Step(self.pick(["var_mean", "var"]), (x,), attrs)

    def dims(self, v: Value) -> tuple[list[int], bool]:
        rank = len(v.shape)
        if rank == 0:
            raise Unusable("a reduction of a 0-dim value")
        dims = self.subset(range(rank))
        if self.chance(0.25):
            dims = [d - rank for d in dims]  # negative dims
        return dims, self.chance(0.5)

    def shape_op(self, x: int, v: Value) -> Step:
        op = self.pick(SHAPE_OPS)
        return Step(op, (x,), tuple(getattr(self, f"_{op}")(v)))

    def _permute(self, v):
        if len(v.shape) < 2:
            raise Unusable("permute of rank < 2")
        return [("dims", self.perm(len(v.shape)))]

    def _stride_order(self, v):
        return [("stride_order", self.perm(len(v.shape)))]

    def _reshape(self, v):
        return [("new_shape", reshaped(v.shape, self.rng.randrange(4), self.rng.randrange(8)))]

    def _broadcast_in_dim(self, v):
        rank = len(v.shape)
        new = self.rng.randint(0 if rank else 1, MAX_RANK - rank)
        at = self.subset(range(rank + new), new)
        bdims = [j for j in range(rank + new) if j not in at]
        shape, kept = [], iter(range(rank))
        for j in range(rank + new):
            widen = self.rng.randint(1, 5)
            if j in at:
                shape.append(widen)
            else:
                i = next(kept)
                shape.append(widen if v.shape[i] == 1 and v.bcast[i] else v.shape[i])
        return [("shape", shape), ("broadcast_dims", bdims)]

    def _broadcast(self, v):
        rank = len(v.shape)
        if rank == MAX_RANK:
            raise Unusable("broadcast: no room for a new dim")
        new = self.rng.randint(1, MAX_RANK - rank)
        at = self.subset(range(rank + new), new)
        return [("is_broadcast_dim", [j in at for j in range(rank + new)])]

    def _expand(self, v):
        return [
            (
                "shape",
                [
                    self.pick([-1, 2, 3, 5]) if s == 1 and b else -1
                    for s, b in zip(v.shape, v.bcast)
                ],
            )
        ]

    def _squeeze(self, v):
        can = [d for d, b in enumerate(v.bcast) if b]
        if not can:
            raise Unusable("squeeze: no broadcast dim")
        dims = self.subset(can)
        return [("dims", dims), ("squeeze_expanded", any(v.expanded[d] for d in dims))]

    def _set(self, v):
        return []

    _segment_set = _set

    # --- outputs ---------------------------------------------------------------------------------
    def outputs(self) -> None:
        made = [k for ids in self.p.step_outputs for k in ids]
        chosen = [made[-1]]
        reduced = [
            step.args[0]
            for step in self.p.steps[: len(self.p.step_outputs)]
            if step.op in REDUCTIONS + ("var_mean", "var")
            and step.args[0] in made
            and step.args[0] not in chosen
        ]
        if reduced and self.chance(1 / 2):
            # a reduced value an output too (a backward's dgelu beside the bias grad that
            # sums it): the reduction kernel stores it from its loop
            chosen.append(self.pick(reduced))
            self.p.tags.add("reduced_output")
        elif len(made) > 1 and self.chance(1 / 3):
            chosen.append(self.pick(made[:-1]))
        for k in chosen:
            rank = len(self.p.values[k].shape)
            pin = rank and self.chance(0.25)
            self.p.outputs.append((k, self.perm(rank) if pin else None))


@functools.cache
def torch_refuses(name: str, dtype: torch.dtype) -> bool:
    try:
        torch_result_dtype(name, [torch.ones(1, dtype=dtype)] * ARITY[name])
    except TorchRejects:
        return True
    return False


def domain_for(name: str, position: int, dtype: torch.dtype) -> str:
    """The values operand ``position`` of ``name`` must hold: no zero (``NONZERO``), or for
    an integer power's exponent 0..3 (layoutfuse's ``_ipow`` takes no negative exponent:
    ``test_an_integer_power_of_a_negative_exponent``)."""
    if position in NONZERO.get(name, ()):
        return "nonzero"
    if name == "pow" and position == 1 and not dtype.is_floating_point:
        return "small"
    return "any"


def in_domain(x: torch.Tensor, domain: str) -> bool:
    if domain == "nonzero":
        return bool((x != 0).all())
    if domain == "small":
        return bool(((x >= 0) & (x <= 3)).all())
    return domain == "any"


def broadcastable(a: Value, b: Value) -> bool:
    """``a`` and ``b`` broadcast in nvFuser: aligned at the right, equal extents or a
    broadcast (an extent-1 dim that is not one, a slice's, does not)."""
    if max(len(a.shape), len(b.shape)) > MAX_RANK:
        return False
    pairs = zip(zip(a.shape[::-1], a.bcast[::-1]), zip(b.shape[::-1], b.bcast[::-1]))
    return all(x == y or (x == 1 and bx) or (y == 1 and by) for (x, bx), (y, by) in pairs)


def reshaped(shape, how: int, where: int) -> list[int]:
    """A new shape of the same size: merge two adjacent dims, split one, insert a 1 or
    flatten (``where`` picks the dim)."""
    shape = list(shape)
    r = len(shape)
    if how == 0 and r >= 2:
        i = where % (r - 1)
        return shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2 :]
    if how == 1 and r >= 1 and r < MAX_RANK:
        i = where % r
        n = shape[i]
        f = next((f for f in range(2, n) if n % f == 0), 1)
        return shape[:i] + [f, n // f] + shape[i + 1 :]
    if how == 2 and r < MAX_RANK:
        i = where % (r + 1)
        return shape[:i] + [1] + shape[i:]
    return [max(1, int(torch.tensor(shape).prod()))] if shape else [1]
