"""Reduction sweep (issue 4): every input layout x reduced-dim set x output layout.

One case is a single reduction (sum, max, min or var_mean) of one input through the
nvFuser frontend, with

* an input allocation order (every permutation of ranks 2 to 4), in fp32, fp16 or bf16,
  optionally with one special dim (logical dim ``SPECIAL``): size 1 (a broadcast),
  expanded (stride 0, declared contiguity None) or sliced (``::2``, contiguity False);
* a non-empty set of reduced dims (up to all of them);
* an output layout: unpinned (inferred), or pinned with ``add_output(stride_order=)``
  to row-major or to the reverse of the input's memory order of the kept axes.

Every case checks, against oracles computed here from the input's strides alone:

* values against eager torch in float64 (see ``assert_values`` for the tolerances);
* output strides: dense in the pinned order; unpinned, dense in the input's relative
  memory order of the kept axes (layoutfuse's extension of nvFuser's allocation-order
  inference); kept expanded dims stay stride 0;
* the schedule: the innermost non-size-1, non-broadcast dim of the input decides the
  read: reduced => family "inner" or "mixed" and pattern starting with "R"; kept =>
  "outer" or "mixed" and pattern starting with "X" (plus, without expanded dims, the
  exact run-length pattern and family).

Default runs take a fixed seeded sample of ``N_SAMPLE`` cases; ``--full`` runs the rest.
The inputs and oracles are in ``tests/support/reductions.py``, shared with the other
reduction test modules.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS
from support.reductions import (
    DEVICE,
    DTYPES,
    OPS,
    assert_family,
    assert_layout,
    assert_values,
    define_reduction,
    exact_values,
    make_input,
    pinned_order,
)

# the interpreter's warnings (support.execution); the values that matter are checked
# explicitly. Each module's kernels are cached in a fresh directory.
pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

SHAPE = (5, 8, 3, 16)  # logical extents, rank r uses SHAPE[:r]; all distinct
SPECIAL = 1  # the logical dim that a variant changes
VARIANTS = ("dense", "size1", "expanded", "sliced")
OUTPUTS = ("inferred", "row_major", "reversed")
N_SAMPLE = 150


# --- one case -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    alloc: tuple[int, ...]  # logical dims, outermost first in memory
    reduced: tuple[int, ...]
    op: str
    dtype: str
    output: str  # one of OUTPUTS
    variant: str = "dense"  # one of VARIANTS, applied to logical dim SPECIAL

    @property
    def id(self) -> str:
        a = "".join(map(str, self.alloc))
        r = "".join(map(str, self.reduced))
        return f"a{a}-r{r}-{self.op}-{self.dtype}-{self.output}-{self.variant}"


def run_case(case: Case, seed: int = 0) -> None:
    rank = len(case.alloc)
    special = {} if case.variant == "dense" else {SPECIAL: case.variant}
    gen = torch.Generator().manual_seed(seed)
    inp = make_input(SHAPE[:rank], case.alloc, DTYPES[case.dtype], special, gen)
    x = inp.tensor
    pinned = pinned_order(case.output, case.alloc, case.reduced)
    with FusionDefinition() as fd:
        t0 = inp.define(fd)
        for out in define_reduction(fd, t0, case.op, case.reduced, False):
            fd.add_output(out, stride_order=pinned)
    outs = fd.execute([x])
    assert_values(case.op, outs, x.dtype, x.cpu().double(), case.reduced)
    for out in outs:
        assert_layout(out, x, case.reduced, False, pinned)
    assert_family(fd.last_schedule(), x, case.reduced)


# --- the sweep -------------------------------------------------------------------------------
def all_cases() -> list[Case]:
    cases = []
    for variant in VARIANTS:
        for rank in (2, 3, 4):
            for alloc in itertools.permutations(range(rank)):
                for n_red in range(1, rank + 1):
                    for reduced in itertools.combinations(range(rank), n_red):
                        orders, outputs = [], []
                        for output in OUTPUTS:
                            order = pinned_order(output, alloc, reduced)
                            if output == "inferred" or (order is not None and order not in orders):
                                orders.append(order)
                                outputs.append(output)
                        for output, op, dtype in itertools.product(outputs, OPS, DTYPES):
                            cases.append(Case(alloc, reduced, op, dtype, output, variant))
    return cases


ALL = all_cases()
SAMPLE = random.Random(0).sample(ALL, N_SAMPLE)
_IN_SAMPLE = set(SAMPLE)


# Known layoutfuse bugs: case id -> precise reason; those cases are marked
# xfail(strict=True), so a fix turns them into failures and the entry gets removed.
KNOWN_BUGS: dict[str, str] = {}


def _param(case: Case, *marks) -> pytest.param:
    reason = KNOWN_BUGS.get(case.id)
    if reason is not None:
        marks = marks + (pytest.mark.xfail(strict=True, reason=reason),)
    return pytest.param(case, id=case.id, marks=marks)


def test_var_mean_keeping_an_expanded_dim():
    """var_mean over dim 0 of [5, 8 (expanded), 3]: the epilogue (var = M2 / (N - 1)) is a
    pointwise kernel whose store has a stride-0 tile axis. Before f180174 its pointer tile
    was [1, BLOCK_X] against a [BLOCK_Y, BLOCK_X] mask, which Triton rejects (1026 cases of
    the full sweep failed so)."""
    x = exact_values([5, 1, 3], torch.Generator().manual_seed(0)).to(DEVICE).expand(5, 8, 3)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1, -1, -1], contiguity=[True, None, True], dtype=DataType.Float
        )
        var, mean = fd.ops.var_mean(t0, dims=[0], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    var, mean = fd.execute([x])
    ref_var, ref_mean = torch.var_mean(x.cpu().double(), [0], correction=1)
    torch.testing.assert_close(var.cpu().double(), ref_var, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mean.cpu().double(), ref_mean, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [_param(c) for c in SAMPLE])
def test_reduction_sample(case: Case):
    run_case(case)


def test_reduction_full(case: Case):
    run_case(case)


def pytest_generate_tests(metafunc):
    """The rest of the sweep (~45k cases) is only built with ``--full``: collecting it
    just to skip it would cost a default run ~12 s."""
    if metafunc.definition.name != "test_reduction_full":
        return
    if metafunc.config.getoption("--full"):
        params = [_param(c, pytest.mark.full) for c in ALL if c not in _IN_SAMPLE]
    else:
        params = [pytest.param(None, id="rest-of-sweep", marks=pytest.mark.full)]
    metafunc.parametrize("case", params)


def test_sample_covers_every_axis():
    """The default sample touches every op, dtype, output kind, variant and rank."""
    for attr, values in (
        ("op", OPS),
        ("dtype", DTYPES),
        ("output", OUTPUTS),
        ("variant", VARIANTS),
    ):
        assert {getattr(c, attr) for c in SAMPLE} == set(values), attr
    assert {len(c.alloc) for c in SAMPLE} == {2, 3, 4}
