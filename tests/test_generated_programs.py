"""Generated programs at scale: random fusions from the whole op table against torch.

Program ``k`` (``support.program_draws.draw_program(k)``: its own seeded generator, so
the same on every run) has 2-6 steps, drawn from every family of the op table:

* pointwise math: every pointwise row (unary, binary, ternary, ``addcmul``; tensor,
  constant and symbolic scalar operands, on either side) and casts;
* reductions sum/prod/max/min, var and var_mean (random dims, keepdim), and the
  normalization patterns softmax, log_softmax, layer norm (affine or not) and RMS norm;
* shape ops broadcast_in_dim, broadcast, expand, permute, reshape, squeeze, set,
  segment_set and stride_order;
* data movement (``support.program_families``): slice (negative and clamped bounds,
  steps 1-3), pad (crops; the default fill, a constant or a scalar input), cat of 2-3
  operands, select (an int or a scalar input);
* indexed reads index_select, gather, take_along_axis and embedding_fwd, their indices
  new Int32/Int64 inputs in range (negative ones for take_along_axis) or computed ones
  (argsort's);
* random numbers uniform, normal, rand_like, randn_like with rng_seed/rng_offset
  (constants or scalar inputs), and dropouts of them; their values are the op rows'
  Philox reference (not torch's RNG, by design), and the program runs twice with the
  same seeds: the bits must not change;
* scans cumsum, argsort (stable or not), topk (sorted or not; ``k`` an int or a scalar
  input): the order torch leaves unspecified (ties, unsorted results) is checked as a
  property, not compared;
* library ops matmul (1-D operands, broadcast batch dims) and linear (a bias or not)
  on computed operands, their results feeding the steps after them.

Inputs have rank 1-4, extents 1-7, dtypes fp32/bf16/fp16/int32/int64/bool and random
layouts: every memory order, size-1, expanded (stride 0) and sliced (every other
element, offset 1) dims. Outputs are the last value and sometimes another, sometimes
pinned with ``stride_order``.

Each program runs through ``FusionDefinition.execute`` (CPU: Triton's interpreter) and
every output is compared with torch (``support.programs``, ``support.program_table``):
exact values must be equal, others within the error bound each op carries (so bf16 and
fp16 results are allowed the whole ulp the interpreter's truncation costs; a bound may
be absolute, where values cancel: layer norm's ``x - mean``), and strides must be the
pinned order's, the torch view's (a chain of view ops of an input) or the dominant
input's order (README), dense where a reshape leaves that undefined. Every
``COMPILE_EVERY``-th program that runs also compiles its kernels for sm_90. A failure
prints the program, its index and a repro script (``fd.repro_script_for``).

A step torch refuses for its dtypes must be refused by layoutfuse (``DefinitionError``)
at that step: such draws (about 8%, on purpose) are skipped and counted; at least 80% of
the draws must run, every pointwise row must run, and every op and pattern of the other
families (``FAMILIES``) must run. 1000 programs per CI run, 20000 with ``--full``
(fewer with ``--device cuda``, where every program compiles its kernels).
"""

from __future__ import annotations

import collections

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.ir.ops.elementwise import ROWS
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS
from support.program_draws import draw_program
from support.program_families import PATTERNS
from support.program_steps import Program, Step, check_program, nondeterminism
from support.program_table import sorting_check, topk_indices_check
from support.programs import COMPLEX_ONLY, EXACT, LIBRARY, Layout, Value

pytestmark = [
    *INTERPRETER_WARNINGS,
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
]

# Programs per run, (CI, --full), by device: each program's kernels are interpreted on
# the CPU (about 60 ms a program) but compiled on the GPU, so a CUDA run draws fewer.
PROGRAMS = {"cpu": (1000, 20000), "cuda": (250, 5000)}
COVERAGE_PROGRAMS = 1000  # a run of this many draws runs every row, op and pattern
COMPILE_EVERY = 10  # of the programs that run, these also compile their kernels for sm_90
MIN_RAN = 0.8
MAX_REPORTED = 5  # failing programs reported in full; the run goes on past them
# The op families beyond the pointwise rows: each op (and drawing tag) must run.
FAMILIES = {
    "reduction": {"sum", "prod", "max", "min", "var", "var_mean", "reduced_output"},
    "normalization": set(PATTERNS),
    "shape": {"broadcast_in_dim", "broadcast", "expand", "permute", "reshape", "squeeze"},
    "movement": {"slice", "pad", "cat", "select", "slice_step", "pad_value", "cat3"},
    "indexing": {"index_select", "gather", "take_along_axis", "embedding_fwd"},
    "random": {"uniform", "normal", "rand_like", "randn_like", "dropout"},
    "scan": {"cumsum", "argsort", "topk"},
    "library": {"matmul", "linear"},
}


def test_generated_programs(request):
    """Programs drawn from the whole op table run and match torch; most draws run."""
    ci, full = PROGRAMS[torch.get_default_device().type]
    n_programs = full if request.config.getoption("--full") else ci
    outcomes: collections.Counter = collections.Counter()
    ops: collections.Counter = collections.Counter()
    failures: list[str] = []
    for k in range(n_programs):
        program = draw_program(k)
        try:
            outcome = check_program(program, compile_sm90=outcomes["ran"] % COMPILE_EVERY == 0)
        except AssertionError as e:
            failures.append(f"program {k} (support.program_draws.draw_program({k})): {e}")
            outcome = "failed"
        outcomes[outcome] += 1
        if outcome == "ran":
            ops.update(s.op for s in program.steps)
            ops.update(program.tags)
    if failures:
        pytest.fail(
            f"{len(failures)} of {n_programs} programs failed; the first "
            f"{MAX_REPORTED}:\n\n" + "\n\n".join(failures[:MAX_REPORTED]),
            pytrace=False,
        )
    assert outcomes["ran"] >= MIN_RAN * n_programs, (
        f"only {outcomes['ran']} of {n_programs} draws ran ({dict(outcomes)})"
    )
    assert outcomes["refused"], "no draw tested that layoutfuse refuses what torch refuses"
    missing = {r.name for r in ROWS} - set(ops) - COMPLEX_ONLY
    missing |= {f"{f}: {op}" for f, names in FAMILIES.items() for op in names - set(ops)}
    if n_programs >= COVERAGE_PROGRAMS:  # fewer (the 250 on CUDA) may miss a row by chance
        assert not missing, f"never run in {n_programs} programs: {sorted(missing)}"


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
    program.values[y] = Value(
        torch.nextafter(v.ref, torch.tensor(9.0)), v.bcast, v.expanded, v.origins, deps=v.deps
    )
    with pytest.raises(AssertionError, match="repro"):
        check_program(program)


def test_the_property_checks_are_not_vacuous():
    """topk indices that hold other values or repeat, an argsort that does not sort and a
    second run one bit apart fail; the right ones pass."""
    x = torch.tensor([[3.0, 1.0, 3.0, 2.0]])
    values = torch.tensor([[3.0, 3.0]])
    indices = topk_indices_check(x, values, 1, in_order=True)
    assert indices(torch.tensor([[2, 0]])) is None
    assert "hold" in indices(torch.tensor([[0, 3]]))
    assert "repeats" in indices(torch.tensor([[0, 0]]))
    sorting = sorting_check(x, torch.tensor([[1, 3, 0, 2]]), 1, 4, descending=False)
    assert sorting(torch.tensor([[1, 3, 2, 0]])) is None  # the tie in another order
    assert "do not sort" in sorting(torch.tensor([[3, 1, 0, 2]]))
    a = torch.tensor([0.5, -0.0])
    assert not nondeterminism([a], [a.clone()])
    assert nondeterminism([a], [torch.tensor([0.5, 0.0])])  # -0.0 and 0.0 differ in a bit


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
        var, mean = fd.ops.var_mean(fd.from_pytorch(x), dims=[0, 3], correction=0, keepdim=True)
        fd.add_output(fd.ops.maximum(mean, fd.from_pytorch(y)))
        fd.add_output(var)
    out, got_var = fd.execute([x, y])
    want_var, want_mean = torch.var_mean(x, [0, 3], correction=0, keepdim=True)
    assert [s["scheduler"] for s in fd.segment([x, y])] == ["normalization"]
    torch.testing.assert_close(got_var, want_var)
    torch.testing.assert_close(out, torch.maximum(want_mean, y))


# --- Half/BFloat16 results rounded at every op, as torch and nvFuser round them ----------------
@pytest.mark.parametrize(
    "dtype,x,y",
    [
        pytest.param(torch.bfloat16, [1.0, 256.0, 3.0], [2.0**-8, 1.0, 2.0**-6], id="bfloat16"),
        pytest.param(torch.float16, [1.0, 2048.0, 3.0], [2.0**-11, 1.0, 2.0**-9], id="float16"),
    ],
)
def test_half_precision_results_are_rounded_at_every_op(dtype, x, y):
    """x + y is a tie (rounded down, to even: truncation gives the same) in the first two
    columns and exact in the third."""
    x, y = torch.tensor(x, dtype=dtype), torch.tensor(y, dtype=dtype)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(y)
        s = fd.ops.add(t0, t1)
        fd.add_output(fd.ops.sub(s, t0))
        fd.add_output(fd.ops.gt(s, t0))
    diff, greater = fd.execute([x, y])
    assert torch.equal(diff, (x + y) - x), f"{diff} != {(x + y) - x}"
    assert torch.equal(greater, (x + y) > x), f"{greater} != {(x + y) > x}"


@pytest.mark.parametrize(
    "dims,zero",
    [
        (torch.float16, torch.float32),
        (torch.bfloat16, torch.float64),
        (torch.int32, torch.int64),
        (torch.int32, torch.float32),  # a higher category: the 0-dim tensor's dtype
        (torch.bool, torch.int32),
        (torch.float32, torch.complex64),
        (None, torch.int32),  # 0-dim tensors alone: their own promotion
    ],
    ids=str,
)
def test_a_zero_dim_tensor_promotes_below_dimensioned_ones(dims, zero):
    """torch's and nvFuser's three tiers (dimensioned tensors, 0-dim tensors, scalars): a
    0-dim tensor lifts the result only to a higher category, where it is its own dtype."""
    y = torch.tensor(2, dtype=zero)
    x = torch.ones(3, dtype=dims) if dims is not None else torch.tensor(3, dtype=torch.int64)
    with FusionDefinition() as fd:
        tx, ty = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.add(tx, ty))
        fd.add_output(fd.ops.mul(ty, fd.define_scalar(1.5, dtype=DataType.Double)))
    out, scaled = fd.execute([x, y])
    assert out.dtype == (x + y).dtype
    assert torch.equal(out, x + y)
    assert scaled.dtype == (y * 1.5).dtype and torch.equal(scaled, y * 1.5)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
def test_an_integer_power_of_a_negative_exponent(dtype):
    """torch's integer power: a negative exponent gives 1 for a base of 1, -1 or 1 for -1
    (odd or even), else 0 (0 too); non-negative exponents by squaring, as before."""
    base = torch.tensor([2, -1, 1, 3, -2, 0, -1, 0, 3, -3], dtype=dtype)
    exponent = torch.tensor([-3, -3, -2, -1, -2, -1, -4, 0, 4, 3], dtype=dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.pow(fd.from_pytorch(base), fd.from_pytorch(exponent)))
    (out,) = fd.execute([base, exponent])
    assert torch.equal(out, torch.pow(base, exponent)), f"{out} != {torch.pow(base, exponent)}"
    compile_last_run(fd.executor())  # the helper compiles for sm_90
