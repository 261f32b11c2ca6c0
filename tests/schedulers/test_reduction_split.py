"""Split reductions (issue 4): partials combined in split order, in one launch or two.

``finish="ticket"`` (the heuristics' choice): the last program of each X block, found
with an atomic ticket counter, combines the partials and resets its counter;
``finish="kernel"``: a second kernel combines them. Checked for each kernel template
that can split (inner, outer, the nested [R, X, R] loop, outer [X, R, X]) and each
reduction op, fp32 and bf16: values against float64 torch, the same values again on
the replay path with fresh data (the counters were reset), bit-identical results
across runs (deterministic), and the PTX's atomics (sm_90).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionCache, FusionDefinition
from layoutfuse.runtime.pipeline import default_heuristics
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules
from support.reductions import (
    DEVICE,
    NV_DTYPES,
    assert_values,
    strided,
)

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]


@dataclass(frozen=True)
class Layout:
    """A split case: logical shape, memory order (outermost first), reduced dims."""

    shape: tuple[int, ...]
    alloc: tuple[int, ...]
    dims: tuple[int, ...]
    template: str
    r_nest: bool = False


# Small enough for Triton's interpreter, large enough that the heuristics split R.
LAYOUTS = {
    "inner": Layout((2, 16384), (0, 1), (1,), "inner"),
    "outer": Layout((1024, 32), (0, 1), (0,), "outer"),
    "nested-RXR": Layout((8, 32, 64), (0, 1, 2), (0, 2), "inner", r_nest=True),
    "outer-XRX": Layout((2, 2048, 16), (0, 1, 2), (1,), "outer"),
}
OPS = ("sum", "max", "min", "prod", "welford", "var_mean")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# The interpreter combines a tl.reduce with a custom function (prod, Welford) one element
# at a time (seconds per program): by default those run on the nested layout, whose tile
# is small; --full runs every combination. var_mean is welford plus an epilogue: the
# normalization scheduler may take it whole (one kernel, no split); when it falls back to
# a reduction kernel, that kernel is checked like the others.
CHEAP_OPS = ("sum", "max", "min")


def _marks(layout: str, op: str) -> tuple:
    return () if op in CHEAP_OPS or layout == "nested-RXR" else (pytest.mark.full,)


SPLIT_CASES = [
    pytest.param(layout, op, dtype, id=f"{layout}-{op}-{dtype}", marks=_marks(layout, op))
    for layout in LAYOUTS
    for op in OPS
    for dtype in DTYPES
]


def make_input(layout: Layout, op: str, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Exact values: multiples of 1/256 (exact partial sums), or for prod signed powers
    of two near 1 (exact products, far from overflow)."""
    gen = torch.Generator().manual_seed(seed)
    if op != "prod":
        return strided(layout.shape, layout.alloc, dtype, gen)
    mem_shape = [layout.shape[d] for d in layout.alloc]
    k = torch.randint(0, 16, mem_shape, generator=gen)
    exponent = torch.where(k == 0, -1, torch.where(k == 1, 1, 0))
    sign = torch.randint(0, 2, mem_shape, generator=gen) * 2 - 1
    base = sign * torch.pow(2.0, exponent.double())
    inv = [list(layout.alloc).index(d) for d in range(len(layout.shape))]
    return base.to(dtype).to(DEVICE).permute(*inv)


def define(layout: Layout, op: str, dtype: torch.dtype) -> FusionDefinition:
    rank = len(layout.shape)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1] * rank,
            contiguity=[True] * rank,
            dtype=NV_DTYPES[dtype],
            stride_order=[rank - 1 - layout.alloc.index(d) for d in range(rank)],
        )
        dims = list(layout.dims)
        if op == "var_mean":
            outs = fd.ops.var_mean(t0, dims=dims, correction=1)
        elif op == "welford":
            outs = fd.ops.welford(t0, dims=dims)
        else:
            outs = [getattr(fd.ops, op)(t0, dims=dims)]
        for out in outs:
            fd.add_output(out)
    return fd


def check_values(op: str, outs, x: torch.Tensor, dims) -> None:
    data = x.cpu().double()
    if op in ("sum", "max", "min", "var_mean"):
        assert_values(op, outs, x.dtype, data, dims)
        return
    if op == "prod":
        for d in sorted(dims, reverse=True):
            data = data.prod(d)
        ref = [data]
    else:
        n = 1
        for d in dims:
            n *= x.shape[d]
        ref = [
            data.mean(dims),
            data.var(dims, correction=0) * n,
            torch.full(data.mean(dims).shape, n, dtype=torch.float64, device=data.device),
        ]
    for got, want in zip(outs, ref, strict=True):
        torch.testing.assert_close(got.cpu().double(), want, rtol=1e-2, atol=1e-4)


def reduction_params(fd) -> rd.ReductionParams | None:
    """The run's reduction kernel's params (None when another scheduler took it whole)."""
    schedule = schedules(fd)
    found = [p for p in schedule if isinstance(p, rd.ReductionParams)]
    assert len(found) <= 1, schedule
    return found[0] if found else None


def reduction_launches(fd) -> list[str]:
    """Names of the last run's kernels, the epilogue's pointwise kernel left out."""
    names = [r.kernel.name for r in fd.executor().last_run.launches]
    return [n for n in names if not n.startswith("pointwise")]


def finish_kernel(scheduler, problem, device, tuning):
    """The heuristics' params with ``finish="kernel"`` (the two-launch path)."""
    params = default_heuristics(scheduler, problem, device, tuning)
    return dataclasses.replace(params, finish="kernel") if scheduler.name == "reduction" else params


def run_repeatedly(
    layout: Layout, op: str, dtype: torch.dtype, runs: int = 2, heuristics=None, tuning=None
):
    """Fresh data each run (the first plans, the later ones replay); returns the definition
    and the last run's outputs. ``heuristics``: the executor's params chooser (None: the
    schedulers' own); ``tuning``: theirs (None: the defaults)."""
    FusionCache.reset()  # a fresh executor: no plans of another test's inputs
    fd = define(layout, op, dtype)
    if heuristics is not None or tuning is not None:
        settings = {"heuristics": heuristics, "tuning": tuning}
        configured(fd, **{k: v for k, v in settings.items() if v is not None})
    for seed in range(runs):
        x = make_input(layout, op, dtype, seed)
        outs = fd.execute([x])
        check_values(op, outs, x, list(layout.dims))
    return fd, outs


@pytest.mark.parametrize("layout, op, dtype", SPLIT_CASES)
def test_one_launch_split_matches_torch_and_resets_its_counters(layout, op, dtype):
    lay = LAYOUTS[layout]
    fd, _ = run_repeatedly(lay, op, DTYPES[dtype])
    params = reduction_params(fd)
    if params is None and op == "var_mean":
        return  # the normalization scheduler took it
    assert params.split > 1 and params.finish == "ticket", params
    assert (params.template, params.r_nest) == (lay.template, lay.r_nest), params
    assert reduction_launches(fd) == ["reduction_kernel"], "one launch, no finishing kernel"
    assert len(fd.executor()._plans) == 1, "the later runs replayed"
    for counters in fd.executor()._compiled._tickets.values():  # split tickets, kept
        assert int(counters.abs().sum()) == 0, f"counters not reset: {counters}"


@pytest.mark.parametrize(
    "layout, op",
    [
        pytest.param(layout, op, id=f"{layout}-{op}", marks=_marks(layout, op))
        for layout in LAYOUTS
        for op in ("sum", "max", "welford")
    ],
)
def test_finishing_kernel_path_is_selectable(layout, op):
    fd, _ = run_repeatedly(LAYOUTS[layout], op, torch.float32, runs=2, heuristics=finish_kernel)
    params = reduction_params(fd)
    assert params.split > 1 and params.finish == "kernel", params
    assert reduction_launches(fd) == ["reduction_kernel", "finish_kernel"]


def test_many_splits_combine_in_several_steps():
    """64 partials per column of a [16, 256]-tiled outer kernel: combined 16 at a time
    (the split rule alone: ``few_rounds`` would take fewer partials of narrower rows)."""
    lay = Layout((2048, 256), (0, 1), (0,), "outer")
    rule = DEFAULT.with_fields(reduction=dict(few_rounds=0))
    for dtype in DTYPES.values():
        fd, _ = run_repeatedly(lay, "sum", dtype, tuning=rule)
        params = reduction_params(fd)
        assert params.split > rd.combine_block(params, params.block_x) > 1, params


@pytest.mark.parametrize("layout", ("inner", "outer"))
def test_split_results_are_bit_identical_across_runs(layout):
    lay = LAYOUTS[layout]
    fd = define(lay, "sum", torch.float32)
    x = (
        torch.randn(*[lay.shape[d] for d in lay.alloc], generator=torch.Generator().manual_seed(3))
        .to(DEVICE)
        .permute(*[lay.alloc.index(d) for d in range(len(lay.shape))])
    )
    first = fd.execute([x])[0].clone()
    for _ in range(3):
        assert torch.equal(fd.execute([x])[0], first)
    torch.testing.assert_close(
        first.cpu().double(), x.cpu().double().sum(list(lay.dims)), rtol=1e-5, atol=1e-3
    )


def test_nan_in_a_late_split_propagates():
    lay = LAYOUTS["outer"]
    x = make_input(lay, "max", torch.float32, 0)
    x[1000, 5] = float("nan")
    fd = define(lay, "max", torch.float32)
    (out,) = fd.execute([x])
    assert reduction_params(fd).split > 1
    assert out[5].isnan() and not out[4].isnan()


@pytest.mark.parametrize(
    "layout, op",
    [
        pytest.param(layout, op, id=f"{layout}-{op}", marks=_marks(layout, op))
        for layout in LAYOUTS
        for op in ("sum", "welford")
    ],
)
def test_ticket_kernel_compiles_with_acq_rel_atomics_for_sm90(layout, op):
    fd, _ = run_repeatedly(LAYOUTS[layout], op, torch.bfloat16, runs=1)
    (art,) = [a for a in compile_last_run(fd.executor()) if a.name == "reduction_kernel"]
    ptx = art.ptx
    ticket = ptx.index("atom.global.gpu.acq_rel.add")
    assert "bar.sync" in ptx[:ticket], "the block's partial stores are synchronized first"
    assert "atom.global.gpu.relaxed.exch" in ptx[ticket:], "the counter is reset"
    assert "ld.global.cg" in ptx[ticket:], "partials are read from L2"
