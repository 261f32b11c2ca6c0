"""Generated programs at scale: random fusions from the whole op table against torch.

Each example draws a program of 2-6 ops: every pointwise row (unary, binary, ternary,
``addcmul``; tensor, constant and symbolic scalar operands, on either side), casts, the
reductions sum/prod/max/min/var_mean (random dims, keepdim), and the shape ops
broadcast_in_dim, broadcast, expand, permute, reshape, squeeze, set, segment_set and
stride_order (layoutfuse has no slicing op), over tensor inputs of rank 1-4, extents 1-7,
dtypes fp32/bf16/fp16/int32/int64/bool and random layouts: every memory order, size-1,
expanded (stride 0) and sliced (every other element, offset 1) dims. Outputs are the last
value and sometimes another, sometimes pinned with ``stride_order``.

The program runs through ``FusionDefinition.execute`` (CPU: Triton's interpreter) and
every output is compared with torch (``tests/support/programs.py``): exact values must be
equal, others within the error bound each op carries (so bf16 and fp16 results are
allowed the whole ulp the interpreter's truncation costs), and strides must be the
pinned order's, the torch view's (a chain of view ops of an input) or the dominant
input's order (README), dense where a reshape leaves that undefined. A failure prints
the program and a repro script (``fd.repro_script_for``).

A step torch refuses for its dtypes must be refused by layoutfuse (``DefinitionError``)
at that step: such draws (about 8%, on purpose) are skipped and counted; at least 80% of
the draws must run. 1000 programs with a fixed seed per CI run, 20000 with ``--full``.
"""

from __future__ import annotations

import collections
import functools

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutfuse.dtypes import from_torch
from layoutfuse.ir.ops.elementwise import ROWS
from layoutfuse.nvfuser import FusionDefinition
from support.execution import INTERPRETER_WARNINGS
from support.program_steps import Program, Step, check_program
from support.programs import (
    ARITY,
    BOOL,
    DTYPES,
    EXACT,
    LIBRARY,
    NONZERO,
    Const,
    Layout,
    TorchRejects,
    Unusable,
    Value,
    input_values,
    torch_result_dtype,
)

pytestmark = [*INTERPRETER_WARNINGS,
              pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
              pytest.mark.usefixtures("kernel_cache_in_tmp")]

CI_PROGRAMS, FULL_PROGRAMS = 1000, 20000
MIN_RAN = 0.8
BY_ARITY = {n: [r.name for r in ROWS if r.arity == n] for n in (1, 2, 3, 4)}
# Step kinds, repeated for weight; the first is what hypothesis shrinks towards.
KINDS = (["unary"] * 4 + ["binary"] * 5 + ["ternary"] * 2 + ["cast"] * 2
         + ["reduction"] * 3 + ["var_mean"] + ["shape_op"] * 4)
SHAPE_OPS = ("permute", "reshape", "broadcast_in_dim", "broadcast", "expand", "squeeze",
             "set", "segment_set", "stride_order")
REDUCTIONS = ("sum", "prod", "max", "min")
FLOAT_CONSTANTS, INT_CONSTANTS = (0.5, -1.5, 2.0, 0.25, -3.0), (2, -3, 1, 5)
MAX_RANK = 4


class Drawing:
    """Draws one program, step by step, with hypothesis's ``draw``."""

    def __init__(self, draw, program: Program, seed: int):
        self.draw = draw
        self.p = program
        self.gen = torch.Generator().manual_seed(seed)

    def pick(self, options):
        """One of ``options``, near uniformly (``sampled_from`` favours the first few);
        shrinks towards the first."""
        return options[self.draw(st.integers(0, 2 ** 16 - 1)) % len(options)]

    # --- inputs ------------------------------------------------------------------------------
    def shape(self) -> list[int]:
        rank = self.draw(st.integers(1, MAX_RANK))
        return self.draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank))

    def dtype(self, like: torch.dtype | None = None) -> torch.dtype:
        if like is not None and self.draw(st.booleans()):
            return like
        return self.draw(st.sampled_from(DTYPES))

    def new_input(self, shape, dtype, domain: str = "any") -> int:
        rank = len(shape)
        alloc = tuple(self.draw(st.permutations(range(rank))))
        kinds = self.draw(st.lists(st.integers(0, 7), min_size=rank, max_size=rank))
        expanded = frozenset(d for d in range(rank) if kinds[d] == 7 and shape[d] > 1)
        sliced = frozenset(d for d in range(rank) if kinds[d] == 6 and shape[d] > 1)
        values = input_values(shape, dtype, domain, expanded, self.gen)
        return self.p.add_input(values, Layout(alloc, expanded, sliced))

    def like(self, shape) -> list[int]:
        """A shape that broadcasts with ``shape``: dims kept, made 1 or (where ``shape`` has
        1) widened; sometimes fewer dims (numpy's left broadcast)."""
        out = []
        for s in shape:
            k = self.draw(st.integers(0, 5))
            out.append(1 if k == 4 else self.draw(st.integers(2, 5)) if k == 5 and s == 1 else s)
        if len(out) > 1 and self.draw(st.integers(0, 5)) == 0:
            out = out[1:]
        return out

    # --- operands ------------------------------------------------------------------------------
    def current(self) -> int:
        recent = sorted(self.p.values)[::-1][:3]
        return recent[self.draw(st.integers(0, len(recent) - 1))]

    def operand(self, base: Value, dtype=None, domain: str = "any", scalars: bool = True):
        """A second operand for ``base``: an input, another value, a constant or a
        symbolic scalar (``dtype``: the input's, when it must have one)."""
        source = self.draw(st.sampled_from(["input", "value", "const", "scalar"] if scalars
                                           else ["input", "value"]))
        if source == "value":
            fits = [k for k, v in self.p.values.items() if broadcastable(v.shape, base.shape)
                    and (dtype is None or v.dtype == dtype)
                    and in_domain(v.ref, domain)]
            if fits:
                return self.draw(st.sampled_from(fits))
        if source in ("const", "scalar") and dtype is None:
            value = self.draw(st.sampled_from(FLOAT_CONSTANTS + INT_CONSTANTS))
            return Const(value) if source == "const" else self.p.add_scalar(value)
        return self.new_input(self.like(base.shape), dtype or self.dtype(base.dtype), domain)

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
            kind = self.draw(st.sampled_from(KINDS))
            x = self.current()
            try:
                self.p.apply(getattr(self, kind)(x, self.p.values[x]), keep_refusal=refuse)
                return
            except Unusable:
                continue

    def unary(self, x: int, v: Value) -> Step:
        return Step(self.pick(BY_ARITY[1]), (x,))

    def binary(self, x: int, v: Value) -> Step:
        name = self.pick(BY_ARITY[2])
        swap = self.draw(st.integers(0, 3)) == 0
        position = 0 if swap else 1                   # of the other operand
        domain = "nonzero" if position in NONZERO.get(name, ()) else "any"
        if name == "pow" and not v.dtype.is_floating_point:
            domain = "small"                          # integer powers: no negative exponents
        other = self.operand(v, domain=domain)
        return Step(name, (other, x) if swap else (x, other))

    def ternary(self, x: int, v: Value) -> Step:
        name = self.pick(BY_ARITY[3] + BY_ARITY[4])
        if name == "where":
            pred = self.operand(v, dtype=BOOL, scalars=False)
            return Step(name, (pred, x, self.operand(v)))
        if name == "lerp":                            # torch: start and end of one dtype
            weight = self.draw(st.sampled_from([Const(0.25), Const(0.75)]))
            return Step(name, (x, self.operand(v, dtype=v.dtype, scalars=False), weight))
        if name == "addcmul":                         # torch: an integral value for integers
            value = Const(self.draw(st.sampled_from((0.5, -1.5) if v.dtype.is_floating_point
                                                    else (2, -1))))
            return Step(name, (x, self.operand(v), self.operand(v), value))
        return Step(name, (x, self.operand(v), self.operand(v)))    # clamp

    def cast(self, x: int, v: Value) -> Step:
        return Step("cast", (x,), (("dtype", from_torch(self.pick(DTYPES))),))

    def reduction(self, x: int, v: Value) -> Step:
        dims, keepdim = self.dims(v)
        return Step(self.pick(REDUCTIONS), (x,),
                    (("dims", dims), ("keepdim", keepdim)))

    def var_mean(self, x: int, v: Value) -> Step:
        dims, keepdim = self.dims(v)
        correction = self.draw(st.integers(0, 1))
        return Step("var_mean", (x,), (("dims", dims), ("correction", correction),
                                       ("keepdim", keepdim)))

    def dims(self, v: Value) -> tuple[list[int], bool]:
        rank = len(v.shape)
        if rank == 0:
            raise Unusable("a reduction of a 0-dim value")
        dims = sorted(self.draw(st.sets(st.integers(0, rank - 1), min_size=1)))
        if self.draw(st.integers(0, 3)) == 0:
            dims = [d - rank for d in dims]           # negative dims
        return dims, self.draw(st.booleans())

    def shape_op(self, x: int, v: Value) -> Step:
        op = self.pick(SHAPE_OPS)
        return Step(op, (x,), tuple(getattr(self, f"_{op}")(v)))

    def _permute(self, v):
        if len(v.shape) < 2:
            raise Unusable("permute of rank < 2")
        return [("dims", list(self.draw(st.permutations(range(len(v.shape))))))]

    def _stride_order(self, v):
        return [("stride_order", list(self.draw(st.permutations(range(len(v.shape))))))]

    def _reshape(self, v):
        return [("new_shape", reshaped(v.shape, self.draw(st.integers(0, 3)),
                                       self.draw(st.integers(0, 7))))]

    def _broadcast_in_dim(self, v):
        rank = len(v.shape)
        new = self.draw(st.integers(0 if rank else 1, MAX_RANK - rank))
        at = self.draw(st.sets(st.integers(0, rank + new - 1), min_size=new, max_size=new))
        bdims = [j for j in range(rank + new) if j not in at]
        shape, kept = [], iter(range(rank))
        for j in range(rank + new):
            widen = self.draw(st.integers(1, 5))
            if j in at:
                shape.append(widen)
            else:
                i = next(kept)
                shape.append(widen if v.shape[i] == 1 and v.bcast[i] else v.shape[i])
        return [("shape", shape), ("broadcast_dims", bdims)]

    def _broadcast(self, v):
        rank = len(v.shape)
        new = self.draw(st.integers(1, max(1, MAX_RANK - rank)))
        at = self.draw(st.sets(st.integers(0, rank + new - 1), min_size=new, max_size=new))
        return [("is_broadcast_dim", [j in at for j in range(rank + new)])]

    def _expand(self, v):
        return [("shape", [self.draw(st.sampled_from([-1, 2, 3, 5])) if s == 1 and b else -1
                           for s, b in zip(v.shape, v.bcast)])]

    def _squeeze(self, v):
        can = [d for d, b in enumerate(v.bcast) if b]
        if not can:
            raise Unusable("squeeze: no broadcast dim")
        dims = sorted(self.draw(st.sets(st.sampled_from(can), min_size=1)))
        return [("dims", dims), ("squeeze_expanded", any(v.expanded[d] for d in dims))]

    def _set(self, v):
        return []

    _segment_set = _set

    # --- outputs ---------------------------------------------------------------------------------
    def outputs(self) -> None:
        made = [k for ids in self.p.step_outputs for k in ids]
        chosen = [made[-1]]
        if len(made) > 1 and self.draw(st.integers(0, 2)) == 0:
            chosen.append(self.draw(st.sampled_from(made[:-1])))
        for k in chosen:
            rank = len(self.p.values[k].shape)
            pin = rank and self.draw(st.integers(0, 3)) == 0
            self.p.outputs.append(
                (k, list(self.draw(st.permutations(range(rank)))) if pin else None))


@functools.cache
def torch_refuses(name: str, dtype: torch.dtype) -> bool:
    try:
        torch_result_dtype(name, [torch.ones(1, dtype=dtype)] * ARITY[name])
    except TorchRejects:
        return True
    return False


def in_domain(x: torch.Tensor, domain: str) -> bool:
    if domain == "nonzero":
        return bool((x != 0).all())
    if domain == "small":
        return bool(((x >= 0) & (x <= 3)).all())
    return domain == "any"


def broadcastable(a, b) -> bool:
    if max(len(a), len(b)) > MAX_RANK:
        return False
    return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1]))


def reshaped(shape, how: int, where: int) -> list[int]:
    """A new shape of the same size: merge two adjacent dims, split one, insert a 1 or
    flatten (``where`` picks the dim)."""
    shape = list(shape)
    r = len(shape)
    if how == 0 and r >= 2:
        i = where % (r - 1)
        return shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:]
    if how == 1 and r >= 1 and r < MAX_RANK:
        i = where % r
        n = shape[i]
        f = next((f for f in range(2, n) if n % f == 0), 1)
        return shape[:i] + [f, n // f] + shape[i + 1:]
    if how == 2 and r < MAX_RANK:
        i = where % (r + 1)
        return shape[:i] + [1] + shape[i:]
    return [max(1, int(torch.tensor(shape).prod()))] if shape else [1]


@st.composite
def programs(draw) -> Program:
    program = Program()
    d = Drawing(draw, program, draw(st.integers(0, 2 ** 20)))
    d.new_input(d.shape(), d.dtype())
    n_steps = draw(st.integers(2, 6))
    refuse_at = draw(st.integers(0, n_steps - 1)) if draw(st.integers(0, 11)) == 11 else None
    for k in range(n_steps):
        d.step(refuse=k == refuse_at)
        if program.refused:
            return program
    if not program.step_outputs:
        first = min(program.values)
        program.apply(Step("set", (first,)))
    d.outputs()
    return program


def test_generated_programs(request):
    """Programs drawn from the whole op table run and match torch; most draws run."""
    full = request.config.getoption("--full")
    outcomes: collections.Counter = collections.Counter()
    ops: collections.Counter = collections.Counter()

    @settings(max_examples=FULL_PROGRAMS if full else CI_PROGRAMS, derandomize=True,
              deadline=None, database=None, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def run(program: Program):
        outcome = check_program(program)
        outcomes[outcome] += 1
        if outcome == "ran":
            ops.update(s.op for s in program.steps)

    run()
    total = sum(outcomes.values())
    assert outcomes["ran"] >= MIN_RAN * total, f"only {outcomes['ran']} of {total} draws ran"
    assert outcomes["refused"], "no draw tested that layoutfuse refuses what torch refuses"
    missing = {r.name for r in ROWS} - set(ops)
    assert not missing, f"rows never drawn in {total} programs: {sorted(missing)}"


def test_every_row_has_an_error_rule():
    """Each pointwise row is classified: exact when representable, or a library function."""
    names = {r.name for r in ROWS}
    assert EXACT | LIBRARY >= names, f"unclassified rows: {sorted(names - EXACT - LIBRARY)}"


def test_an_output_one_ulp_off_fails():
    """The oracle is not vacuous: a program whose exact result is off by one ulp fails."""
    x = torch.tensor([[0.25, -1.5], [2.0, 3.0]])
    program = Program()
    k = program.add_input(x, Layout((0, 1)))
    (y,) = program.apply(Step("add", (k, k)))
    program.outputs.append((y, None))
    assert check_program(program) == "ran"
    v = program.values[y]
    program.values[y] = Value(torch.nextafter(v.ref, torch.tensor(9.0)), v.bcast, v.expanded,
                              v.origins, deps=v.deps)
    with pytest.raises(AssertionError, match="repro"):
        check_program(program)


# --- regressions the generator found ----------------------------------------------------------
@pytest.mark.parametrize("case", ["affine", "generic", "below_a_shape_op"])
def test_a_size_one_dim_broadcasts_in_a_pointwise_op(case):
    """A size-1 (broadcast) dim of an operand of the same rank is broadcast by the
    pointwise op itself: its index is 0, whatever its stride (it was read with its real
    stride, out of bounds). ``generic``: the operand comes through a reshape that is not
    a view, so its address is walked per element; ``below_a_shape_op``: the broadcasting
    op feeds a permute, so the load's chain passes the permute."""
    if case == "generic":
        x, y = torch.arange(6.0).reshape(2, 3).t(), torch.arange(24.0).reshape(4, 6)
    else:
        x, y = torch.tensor([[10.0, 20.0]]), torch.arange(6.0).reshape(3, 2)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if case == "generic":
            t = fd.ops.reshape(t, new_shape=[1, 6])
        out = fd.ops.add(fd.from_pytorch(y), t)
        fd.add_output(fd.ops.permute(out, dims=[1, 0]) if case == "below_a_shape_op" else out)
    (out,) = fd.execute([x, y])
    expected = y + x.reshape(1, -1)
    assert torch.equal(out, expected.t() if case == "below_a_shape_op" else expected)


def test_a_per_row_output_with_keepdim_over_leading_dims():
    """A normalization kernel stores a per-row result with ``keepdim`` over leading dims
    (var of var_mean, its mean used on the rows) at the right place: its strides were
    misaligned with the root's kept dims (out of bounds: heap corruption on the CPU)."""
    x = torch.arange(4 * 6 * 5 * 4.0).reshape(4, 6, 5, 4) % 7
    y = torch.linspace(-1, 8, 4 * 6 * 5 * 4).reshape(4, 6, 5, 4)
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.from_pytorch(x), dims=[0, 3], correction=0,
                                    keepdim=True)
        fd.add_output(fd.ops.maximum(mean, fd.from_pytorch(y)))
        fd.add_output(var)
    out, got_var = fd.execute([x, y])
    want_var, want_mean = torch.var_mean(x, [0, 3], correction=0, keepdim=True)
    assert [s["scheduler"] for s in fd.segment([x, y])] == ["normalization"]
    torch.testing.assert_close(got_var, want_var)
    torch.testing.assert_close(out, torch.maximum(want_mean, y))
