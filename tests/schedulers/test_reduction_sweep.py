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
The helpers are shared with ``test_reduction_hypothesis.py``.
"""

from __future__ import annotations

import itertools
import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
import torch

from helpers_layout import INTERPRETER_WARNINGS
from layoutfuse.nvfuser import DataType, FusionDefinition

# the interpreter's warnings (helpers_layout); the values that matter are checked
# explicitly. Re-exported for the other reduction test modules.
pytestmark = INTERPRETER_WARNINGS

SHAPE = (5, 8, 3, 16)          # logical extents, rank r uses SHAPE[:r]; all distinct
SPECIAL = 1                    # the logical dim that a variant changes
OPS = ("sum", "max", "min", "var_mean")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
NV_DTYPES = {torch.float32: DataType.Float, torch.float16: DataType.Half,
             torch.bfloat16: DataType.BFloat16}
VARIANTS = ("dense", "size1", "expanded", "sliced")
OUTPUTS = ("inferred", "row_major", "reversed")
N_SAMPLE = 150
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"   # the CPU runs Triton's interpreter


@pytest.fixture(autouse=True, scope="module")
def _kernel_cache_in_tmp(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path_factory.mktemp("kernels")))
        yield


# --- inputs ----------------------------------------------------------------------------------
def exact_values(shape: Sequence[int], gen: torch.Generator) -> torch.Tensor:
    """Multiples of 1/256 in (-1, 1): exact in bf16 (8 significant bits), fp16 and fp32, and
    every fp32 partial sum of up to 2**16 of them is exact, whatever the order."""
    return torch.randint(-255, 256, tuple(shape), generator=gen, dtype=torch.int32) / 256.0


def strided(shape: Sequence[int], alloc: Sequence[int], dtype: torch.dtype,
            gen: torch.Generator) -> torch.Tensor:
    """A dense tensor of ``exact_values`` of logical ``shape`` whose dims lie in memory in
    ``alloc`` (outermost first), on ``DEVICE``."""
    base = exact_values([shape[d] for d in alloc], gen).to(dtype).to(DEVICE)
    return base.permute(*[list(alloc).index(d) for d in range(len(shape))])


@dataclass(frozen=True)
class InputSpec:
    """One input: the tensor and the ``define_tensor`` arguments that declare it."""

    tensor: torch.Tensor
    shape: list[int]
    contiguity: list[bool | None]
    stride_order: list[int]


def make_input(sizes: Sequence[int], alloc: Sequence[int], dtype: torch.dtype,
               special: dict[int, str], gen: torch.Generator) -> InputSpec:
    """An input of logical ``sizes`` whose dims lie in memory in ``alloc`` (outermost first).

    ``special`` maps a logical dim to "size1" (extent 1 instead), "expanded" (a size-1 base
    expanded to ``sizes[d]``, stride 0) or "sliced" (every other element of a base twice
    as long: stride doubled, declared contiguity False).
    """
    rank = len(sizes)
    sizes = [1 if special.get(d) == "size1" else s for d, s in enumerate(sizes)]
    base_sizes = list(sizes)
    for d, kind in special.items():
        if kind in ("size1", "expanded"):
            base_sizes[d] = 1
        elif kind == "sliced":
            base_sizes[d] = 2 * sizes[d]
    x = strided(base_sizes, alloc, dtype, gen)
    for d, kind in special.items():
        if kind == "sliced":
            x = x[(slice(None),) * d + (slice(None, None, 2),)]
    x = x.expand(*sizes)
    shape = [1 if special.get(d) == "size1" else -1 for d in range(rank)]
    contiguity = [None if special.get(d) in ("size1", "expanded") else
                  special.get(d) != "sliced" for d in alloc]
    stride_order = [rank - 1 - list(alloc).index(d) for d in range(rank)]
    return InputSpec(x, shape, contiguity, stride_order)


# --- oracles ---------------------------------------------------------------------------------
def reference(op: str, data: torch.Tensor, dims: Sequence[int], keepdim: bool = False
              ) -> list[torch.Tensor]:
    """Eager torch on float64 ``data``."""
    dims = list(dims)
    if op == "sum":
        return [data.sum(dims, keepdim=keepdim)]
    if op == "max":
        return [data.amax(dims, keepdim=keepdim)]
    if op == "min":
        return [data.amin(dims, keepdim=keepdim)]
    with warnings.catch_warnings():       # correction=1 over one element: nan, as intended
        warnings.simplefilter("ignore")
        var, mean = torch.var_mean(data, dims, correction=1, keepdim=keepdim)
    return [var, mean]


def assert_values(op: str, outs: Sequence[torch.Tensor], dtype: torch.dtype,
                  data: torch.Tensor, dims: Sequence[int], keepdim: bool = False,
                  element_rtol: float | None = None) -> None:
    """``outs`` have ``dtype`` and match ``reference(op, data, ...)`` within dtype-aware bounds.

    ``data`` is what is reduced, in float64. ``element_rtol`` is None when ``data`` holds the
    exact values the kernel reduces, multiples of 1/256 small enough that every fp32
    partial sum is exact in any order; else the relative error each element may carry
    (a prologue computed in fp32, or rounded to ``dtype``). Per output element, with
    eps of ``dtype``, u of fp32, M = max |data| and S = sum |data| over the reduced dims:

    * max/min: exact; else eps |ref| + element_rtol M;
    * sum: eps |ref| (the final rounding); else also (element_rtol + 32 u) S;
    * var_mean: eps |ref| + (element_rtol + 256 u) M for the mean, M^2 (twice element_rtol)
      for the variance: a bound of a Welford accumulation in fp32 on these sizes.
    """
    dims = list(dims)
    refs = reference(op, data, dims, keepdim)
    assert len(outs) == len(refs), f"{op}: {len(outs)} outputs, expected {len(refs)}"
    eps = torch.finfo(dtype).eps
    u = torch.finfo(torch.float32).eps
    el = element_rtol or 0.0
    mag = data.abs().amax(dims, keepdim=keepdim)
    total = data.abs().sum(dims, keepdim=keepdim)
    for k, (out, ref) in enumerate(zip(outs, refs)):
        assert out.dtype == dtype, f"{op} output {k}: dtype {out.dtype}, expected {dtype}"
        assert tuple(out.shape) == tuple(ref.shape), \
            f"{op} output {k}: shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
        if op in ("max", "min"):
            rtol, atol = (0.0, 0.0) if element_rtol is None else (eps, el * mag)
        elif op == "sum":
            extra = 0.0 if element_rtol is None else el + 32 * u
            rtol, atol = eps, extra * total
        elif k == 0:
            rtol, atol = eps, (2 * el + 256 * u) * mag * mag
        else:
            rtol, atol = eps, (el + 256 * u) * mag
        got = out.cpu().double()
        allowed = rtol * ref.abs() + atol
        both_nan = got.isnan() & ref.isnan()
        bad = ~both_nan & ~((got - ref).abs() <= allowed)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise AssertionError(
                f"{op} output {k}: {int(bad.sum())} of {bad.numel()} elements off; first at "
                f"{idx}: got {got[idx].item()!r}, expected {ref[idx].item()!r} "
                f"(allowed {allowed[idx].item():.3g})")


def nontrivial(x: torch.Tensor) -> list[int]:
    """Dims of ``x`` that take memory: extent > 1 and a nonzero stride."""
    return [d for d in range(x.dim()) if x.shape[d] > 1 and x.stride(d) != 0]


def dense_strides(shape: Sequence[int], order: Sequence[int],
                  expanded: Sequence[int] = ()) -> tuple[int, ...]:
    """Strides of a dense tensor whose dims lie in ``order`` (outermost first); expanded
    dims get stride 0 and do not grow the running stride."""
    strides, running = [0] * len(shape), 1
    for d in reversed(order):
        if d in expanded:
            continue
        strides[d] = running
        running *= shape[d]
    return tuple(strides)


def output_dims(rank: int, reduced: Sequence[int], keepdim: bool) -> list[int]:
    """The input dim behind each output dim."""
    return list(range(rank)) if keepdim else [d for d in range(rank) if d not in reduced]


def expected_order(x: torch.Tensor, reduced: Sequence[int], keepdim: bool,
                   pinned: Sequence[int] | None) -> list[int]:
    """Output dims outermost first: the pinned order, else the input's relative memory
    order of the kept axes (the others, all size 1 or stride 0, are placed outermost)."""
    if pinned is not None:
        n = len(pinned)
        return sorted(range(n), key=lambda j: -pinned[j])
    src = output_dims(x.dim(), reduced, keepdim)
    mem = sorted(range(x.dim()), key=lambda d: -x.stride(d))      # stable: ties keep order
    mapped = [src.index(d) for d in mem if d in nontrivial(x) and d in src and d not in reduced]
    return [j for j in range(len(src)) if j not in mapped] + mapped


def assert_layout(out: torch.Tensor, x: torch.Tensor, reduced: Sequence[int], keepdim: bool,
                  pinned: Sequence[int] | None) -> None:
    """``out``'s strides are dense in the expected order (size-1 dims' strides are free)."""
    src = output_dims(x.dim(), reduced, keepdim)
    expanded = [j for j, d in enumerate(src)
                if d not in reduced and x.stride(d) == 0 and x.shape[d] > 1]
    order = expected_order(x, reduced, keepdim, pinned)
    want = dense_strides(out.shape, order, expanded)
    got = out.stride()
    bad = [j for j in range(out.dim()) if out.shape[j] > 1 and got[j] != want[j]]
    kind = "pinned" if pinned is not None else "inferred"
    assert not bad, (f"{kind} output layout: strides {got} (shape {tuple(out.shape)}), "
                     f"expected {want} (order {order}, outermost first)")


def collapse(kinds: str) -> str:
    """Runs of equal kinds merged: "RRXR" -> "RXR"."""
    return "".join(k for k, _ in itertools.groupby(kinds))


def read_pattern(x: torch.Tensor, reduced: Sequence[int]) -> str:
    """Kinds (R reduced / X kept) of the input's dims that take memory, innermost first."""
    dims = sorted(nontrivial(x), key=lambda d: (x.stride(d), -d))
    return collapse("".join("R" if d in reduced else "X" for d in dims))


def family_of(pattern: str) -> str:
    if "R" not in pattern:
        return "pointwise"
    if pattern.startswith("R") and "XR" not in pattern:
        return "inner"
    if pattern.startswith("X") and "RX" not in pattern:
        return "outer"
    return "mixed"


def reduction_params(schedule) -> list:
    items = schedule if isinstance(schedule, list) else [schedule]
    return [p for p in items if p is not None and hasattr(p, "family")]


def assert_family(schedule, x: torch.Tensor, reduced: Sequence[int]) -> None:
    """The read side of the schedule follows the input's memory order.

    The innermost dim that takes memory decides inner vs outer; when no dim is expanded
    (no convention about where a stride-0 dim sits), the collapsed pattern must also
    equal the input's, and the family follow from it.
    """
    dims = sorted(nontrivial(x), key=lambda d: (x.stride(d), -d))
    if not any(d in reduced for d in dims):
        return              # only size-1 or stride-0 dims reduced: no read to classify
    params = reduction_params(schedule)
    assert params, f"no reduction kernel in the schedule {schedule}"
    has_expanded = any(x.stride(d) == 0 and x.shape[d] > 1 for d in range(x.dim()))
    want = read_pattern(x, reduced)
    for p in params:
        where = f"{p.family}/{p.pattern} for strides {x.stride()}, reduced {list(reduced)}"
        if dims and dims[0] in reduced:
            assert p.family in ("inner", "mixed") and p.pattern.startswith("R"), \
                f"innermost input dim {dims[0]} is reduced, schedule reads {where}"
        elif dims:
            assert p.family in ("outer", "mixed") and p.pattern.startswith("X"), \
                f"innermost input dim {dims[0]} is kept, schedule reads {where}"
        if not has_expanded:
            assert collapse(p.pattern) == want, f"pattern: expected {want}, got {where}"
            assert p.family == family_of(want), f"family: expected {family_of(want)}, {where}"


# --- running one case -------------------------------------------------------------------------
def define_reduction(fd: FusionDefinition, t, op: str, dims: Sequence[int], keepdim: bool):
    if op == "var_mean":
        return list(fd.ops.var_mean(t, dims=list(dims), correction=1, keepdim=keepdim))
    return [getattr(fd.ops, op)(t, dims=list(dims), keepdim=keepdim)]


def pinned_order(output: str, alloc: Sequence[int], reduced: Sequence[int]) -> list[int] | None:
    """stride_order for ``add_output``: None (inferred), row-major, or the reverse of the
    input's memory order of the kept axes."""
    kept = [d for d in range(len(alloc)) if d not in reduced]
    n = len(kept)
    if output == "inferred" or n == 0:
        return None
    if output == "row_major":
        return list(range(n - 1, -1, -1))
    reversed_alloc = [kept.index(d) for d in reversed(alloc) if d in kept]
    return [n - 1 - reversed_alloc.index(j) for j in range(n)]


@dataclass(frozen=True)
class Case:
    alloc: tuple[int, ...]       # logical dims, outermost first in memory
    reduced: tuple[int, ...]
    op: str
    dtype: str
    output: str                  # one of OUTPUTS
    variant: str = "dense"       # one of VARIANTS, applied to logical dim SPECIAL

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
        t0 = fd.define_tensor(shape=inp.shape, contiguity=inp.contiguity,
                              dtype=NV_DTYPES[x.dtype], stride_order=inp.stride_order)
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
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, None, True],
                              dtype=DataType.Float)
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
    for attr, values in (("op", OPS), ("dtype", DTYPES), ("output", OUTPUTS),
                         ("variant", VARIANTS)):
        assert {getattr(c, attr) for c in SAMPLE} == set(values), attr
    assert {len(c.alloc) for c in SAMPLE} == {2, 3, 4}
