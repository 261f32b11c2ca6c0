"""Reduction and transpose in one pass (issue 4, deliver 3): pinned output orders.

When the output's stride-1 kept dim is not the input's, the outer template tiles both
(``ReductionParams.y_group``): loads follow the input, the [BLOCK_Y, 1, BLOCK_X] result
is stored along the output's stride-1 dim. Checked:

* a sweep over the 3-D memory orders x each reduced dim x outputs pinned to the reverse
  of the input's kept order (and row-major): values, output strides, the family, and that
  the transposed store is chosen exactly when the input's stride-1 dim is kept and the
  output's is another one. The heuristics need the tiles to fill two waves of the device;
  these small tensors run on a device description of one SM with one resident program;
* the choice on the H200 at the benchmark's sizes (pure heuristics);
* the benchmark's pinned cases compiled for sm_90 at their real size: the store walks the
  output's stride-1 dim, 16-byte loads, registers, no spills.
"""

from __future__ import annotations

import itertools
import random
import re

import pytest
import torch

from benchmarks import registers
from benchmarks.cases import SUITES
from layoutfuse.analysis.canonical import Group
from layoutfuse.analysis.device import H200, DeviceInfo
from layoutfuse.dtypes import DataType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.problem import Problem
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules, small_gpu
from support.reductions import (
    DEVICE,
    NV_DTYPES,
    assert_family,
    assert_layout,
    assert_values,
    exact_values,
    pinned_order,
    strided,
)

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

SHAPE = (40, 36, 33)  # every kept dim spans an fp32 tile edge (32 elements: 128 B)
# the runs below plan for a device that one resident program fills (two programs: two waves)
ONE_PROGRAM_SM = DeviceInfo("cpu", 1, 256, 1 << 20, 65536)


def run(alloc, reduced, op, dtype, output, shape=SHAPE, tuning=None):
    rank = len(alloc)
    x = strided(shape, alloc, dtype, torch.Generator().manual_seed(7))
    pinned = pinned_order(output, alloc, reduced)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1] * rank,
            contiguity=[True] * rank,
            dtype=NV_DTYPES[dtype],
            stride_order=[rank - 1 - list(alloc).index(d) for d in range(rank)],
        )
        outs = (
            fd.ops.var_mean(t0, dims=list(reduced), correction=1)
            if op == "var_mean"
            else [getattr(fd.ops, op)(t0, dims=list(reduced))]
        )
        for out in outs:
            fd.add_output(out, stride_order=pinned)
    results = configured(fd, target=ONE_PROGRAM_SM, tuning=tuning).execute([x])
    assert_values(op, results, dtype, x.cpu().double(), reduced)
    for out in results:
        assert_layout(out, x, reduced, False, pinned)
    assert_family(fd.last_schedule(), x, reduced)
    return x, results, fd


def reduction_params(fd) -> rd.ReductionParams:
    (params,) = [p for p in schedules(fd) if isinstance(p, rd.ReductionParams)]
    return params


# every memory order, reduced dim and output with sum; max (the same plans, another
# combine) in a fixed seeded quarter by default, all of them with --full
_MAX_SAMPLE = set(random.Random(27).sample(range(18 * 2), 9))
SWEEP = [
    pytest.param(
        alloc,
        (d,),
        op,
        output,
        id=f"a{''.join(map(str, alloc))}-r{d}-{op}-{output}",
        marks=() if op == "sum" or k in _MAX_SAMPLE else (pytest.mark.full,),
    )
    for op in ("sum", "max")
    for k, (alloc, d, output) in enumerate(
        itertools.product(itertools.permutations(range(3)), range(3), ("reversed", "row_major"))
    )
]


@pytest.mark.parametrize("alloc, reduced, op, output", SWEEP)
def test_pinned_outputs_store_along_their_stride_one_dim(alloc, reduced, op, output):
    x, (out,), fd = run(alloc, reduced, op, torch.float32, output)
    params = reduction_params(fd)
    kept = [d for d in range(3) if d not in reduced]
    input_fastest = min(range(3), key=lambda d: x.stride(d))
    output_fastest = kept[min(range(2), key=lambda j: out.stride(j))]
    expect = input_fastest in kept and output_fastest != input_fastest
    (seg,) = [r for r in fd.executor().last_run.segments if r.params is params]
    y = params.y_group
    # Y rows stacked from the next kept group under a short tile (``reduction._stacked``)
    # also set y_group; a transposed store's Y is the output's stride-1 dim
    transposed = y is not None and seg.problem.sizes[y] == SHAPE[output_fastest]
    assert transposed == expect, params
    if y is not None:
        assert params.template == "outer" and params.split == 1


@pytest.mark.parametrize(
    "op, dtype, shape",
    [
        ("sum", torch.bfloat16, (66, 5, 64)),  # a bf16 row: 64 elements
        ("min", torch.bfloat16, (66, 5, 64)),
        ("welford", torch.float32, (32, 3, 32)),
    ],
)
def test_transposed_store_of_other_ops_and_dtypes(op, dtype, shape):
    rank = len(shape)
    x = exact_values(shape, torch.Generator().manual_seed(3)).to(dtype).to(DEVICE)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1] * rank, contiguity=[True] * rank, dtype=NV_DTYPES[dtype])
        outs = (
            fd.ops.welford(t0, dims=[1]) if op == "welford" else [getattr(fd.ops, op)(t0, dims=[1])]
        )
        for out in outs:
            fd.add_output(out, stride_order=[0, 1])  # dim 0 innermost: transposed
    results = configured(fd, target=ONE_PROGRAM_SM).execute([x])
    assert reduction_params(fd).y_group is not None
    data = x.cpu().double()
    if op == "welford":
        refs = [
            data.mean(1),
            data.var(1, correction=0) * shape[1],
            torch.full((shape[0], shape[2]), shape[1], dtype=torch.float64, device="cpu"),
        ]
        for got, ref in zip(results, refs, strict=True):
            torch.testing.assert_close(got.cpu().double(), ref, rtol=1e-5, atol=1e-5)
    else:
        assert_values(op, results, dtype, data, [1])
    for got in results:
        assert got.stride() == (1, shape[0])


# --- the choice on the H200 ---------------------------------------------------------------------
def problem(sizes, kinds, store_fastest: int, dtype=DataType.Float) -> Problem:
    """Groups innermost first (the input dense in that order); the store dense with
    ``store_fastest`` (a kept group) innermost, then the other kept groups in order."""
    kept = [k for k, kind in enumerate(kinds) if kind == "X"]
    store_order = [store_fastest] + [k for k in kept if k != store_fastest]
    load, store = {}, {}
    running = 1
    for k, n in enumerate(sizes):
        load[k], running = running, running * n
    running = 1
    for k in store_order:
        store[k], running = running, running * sizes[k]
    groups = tuple(
        Group(n, kind == "R", (load[k], store.get(k, 0)), (k,))
        for k, (n, kind) in enumerate(zip(sizes, kinds))
    )
    return Problem(groups, 1, 1, (dtype, dtype), (sum(load.values()), running))


@pytest.mark.parametrize(
    "sizes, kinds, fastest, chosen",
    [
        ((1024, 512, 256), "XXR", 1, True),  # pinned_mem012_sum0: 2048 [8, 32] tiles
        ((1024, 256, 512), "XRX", 2, True),  # pinned_mem102_sum0
        ((1024, 512, 256), "XXR", 0, False),  # the output's stride-1 group is the input's
        ((1024, 512, 256), "RXX", 2, False),  # inner: the input's stride-1 group is reduced
        ((1024, 4, 256), "XXR", 1, False),  # 32 tiles of 16-byte store columns: too few
        ((16, 4096, 256), "XXR", 1, False),  # 16 < a 128-byte input row
        ((256, 1024, 512), "XXR", 1, False),  # 1024 tiles: 1.3 waves, a split is needed
        # R of 7 fp32 (28 bytes: the plain tile's sector-apart stores move more than its
        # loads): 512 tiles, as many as leave the plain tile unsplit, suffice; a store
        # group of 7 fills 28 bytes of the 32-byte column
        ((16384, 7, 7), "XXR", 1, True),
        ((16384, 64, 7), "XXR", 1, True),
        ((4096, 7, 7), "XXR", 1, False),  # 128 tiles: the plain tile would split
    ],
)
def test_the_transposed_store_is_chosen_when_it_fills_the_device(sizes, kinds, fastest, chosen):
    p = rd.heuristics(problem(sizes, kinds, fastest), H200)
    assert (p.y_group is not None) == chosen, p
    if chosen:
        assert p.y_group == fastest and p.split == 1
        # a sector (or the group's 7 elements in 8 of them), a line
        assert p.block_y == min(8, 1 << (sizes[fastest] - 1).bit_length()) and p.block_x == 32
        programs, _ = rd.grid(p, problem(sizes, kinds, fastest).sizes)
        short = sizes[kinds.index("R")] * 4 <= 32
        assert programs >= (2 * 132 if short else 2 * 132 * 6)


@pytest.mark.parametrize("order", [(2, 3, 0, 1), (3, 2, 0, 1)], ids=str)
def test_a_var_mean_of_short_rows_stores_along_its_output(order):
    """A var_mean over 7 strided values a row whose outputs are stored along another kept
    dim of 7 (r1_077's pattern: [23235, 3, 7, 7] in mem2301, reduced over dim 3, outputs
    row-major) runs in the reduction kernel's transposed tile, not the normalization
    kernel's outer tile (a result a sector apart): torch's values, row-major outputs."""
    shape = (40, 3, 7, 7)
    g = torch.Generator().manual_seed(5)
    x = torch.randn([shape[d] for d in order], generator=g).permute(
        *[order.index(d) for d in range(4)]
    )
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.from_pytorch(x), dims=[3], correction=1)
        fd.add_output(var, stride_order=[2, 1, 0])
        fd.add_output(mean, stride_order=[2, 1, 0])
    var, mean = configured(fd, target=small_gpu(1)).execute([x])
    want_var, want_mean = torch.var_mean(x.double(), 3, correction=1)
    torch.testing.assert_close(var.double(), want_var, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mean.double(), want_mean, rtol=1e-5, atol=1e-6)
    assert var.stride() == mean.stride() == (21, 7, 1)
    (params,) = schedules(fd)
    assert params.scheduler == "reduction" and params.template == "outer", params
    assert params.y_group is not None and params.block_y == 8, params


@pytest.mark.parametrize("op", ["var_mean", "sum"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_transposed_tile_stepping_r_a_row_at_a_time(op, dtype):
    """``transposed_r_rows=1`` (a measured alternative): the transposed tile of r1_077's
    pattern steps R one row a loop step (block_r 1, no unroll), at the rule's Y and X
    edges; torch's values and row-major outputs; the kernel compiles for sm_90. The
    H200's candidates for r1_077's shape include that tile after the rule's own."""
    from layoutfuse.codegen.hopper_check import compile_last_run
    from layoutfuse.schedulers import measure
    from layoutfuse.schedulers.reduction_tiles import DEFAULT_TUNING as T
    from layoutfuse.schedulers.tuning import DEFAULT

    g = torch.Generator().manual_seed(9)
    order = (2, 3, 0, 1)
    x = torch.randn([(40, 3, 7, 7)[d] for d in order], generator=g).to(dtype)
    x = x.permute(*[order.index(d) for d in range(4)])
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        outs = (
            fd.ops.var_mean(t, dims=[3], correction=1) if op == "var_mean" else [fd.ops.sum(t, [3])]
        )
        for o in outs:
            fd.add_output(o, stride_order=[2, 1, 0])
    tuning = DEFAULT.with_fields(reduction=dict(transposed_r_rows=1))
    got = configured(fd, target=small_gpu(1), tuning=tuning).execute([x])
    xd = x.double()
    want = torch.var_mean(xd, 3, correction=1) if op == "var_mean" else [xd.sum(3)]
    for o, w in zip(got, want, strict=True):
        torch.testing.assert_close(
            o.double(),
            w,
            rtol=2e-2 if dtype == torch.bfloat16 else 1e-5,
            atol=1e-2 if dtype == torch.bfloat16 else 1e-5,
        )
        assert o.stride() == (21, 7, 1)
    (params,) = schedules(fd)
    assert params.y_group is not None and (params.block_y, params.block_r, params.unroll) == (
        8,
        1,
        1,
    )
    compile_last_run(fd.executor())

    big = torch.empty([(23235, 3, 7, 7)[d] for d in order], device="meta").permute(
        *[order.index(d) for d in range(4)]
    )
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.from_pytorch(big), dims=[3], correction=1)
        fd.add_output(var, stride_order=[2, 1, 0])
        fd.add_output(mean, stride_order=[2, 1, 0])
    (seg,) = configured(fd, target=H200).executor().plan([big]).segments
    cands = measure.candidates(rd.heuristics, seg.problem, H200, T, T.alternatives, 4)
    assert cands[0] == seg.params and cands[0].block_r == 8
    assert any(c.y_group is not None and c.block_r == 1 for c in cands[1:]), cands


ROW_AT_A_TIME = [
    pytest.param(alloc, (d,), op, id=f"a{''.join(map(str, alloc))}-r{d}-{op}")
    for op in ("sum", "var_mean")
    for alloc, d in itertools.product(itertools.permutations(range(3)), range(3))
]


@pytest.mark.parametrize("alloc, reduced, op", ROW_AT_A_TIME)
def test_row_at_a_time_in_every_memory_order(alloc, reduced, op):
    """``transposed_r_rows=1`` in every memory order of [40, 36, 33] and every reduced dim,
    the output pinned to the reverse of the input's kept order: torch's values and the
    pinned layout (``run``); a transposed tile (Y set) steps R a row at a time."""
    tuning = DEFAULT.with_fields(reduction=dict(transposed_r_rows=1))
    x, (out, *_), fd = run(alloc, reduced, op, torch.float32, "reversed", tuning=tuning)
    kept = [d for d in range(3) if d not in reduced]
    input_fastest = min(range(3), key=lambda d: x.stride(d))
    output_fastest = kept[min(range(2), key=lambda j: out.stride(j))]
    transposed = 0
    for params in schedules(fd):  # var_mean of some orders: the normalization kernel
        if isinstance(params, rd.ReductionParams) and params.y_group is not None:
            assert params.template == "outer" and params.block_r * params.unroll == 1, params
            transposed += 1
    if op == "sum" and input_fastest in kept and output_fastest != input_fastest:
        assert transposed == 1, schedules(fd)


# --- compiled for sm_90 at the benchmark's sizes ------------------------------------------------
CASES = {c.name: c for c in SUITES["reduction"]()}


@pytest.mark.parametrize("name", ["pinned_mem012_sum0", "pinned_mem102_sum0"])
def test_benchmark_pinned_cases_compile_with_a_coalesced_store(name):
    params, (art,) = registers.compile_variant(CASES[name], {})
    assert params.y_group is not None, params
    assert art.resources["REG"] <= 64 and art.local_bytes == 0, art.resources
    assert art.vector_widths.get("ld.global.v4", 0) > 0, art.vector_widths
    store = next(line for line in art.ttgir.splitlines() if "tt.store" in line)
    layout = re.findall(r"#(blocked\d*)", store)[-1]
    blocked = next(line for line in art.ttgir.splitlines() if line.startswith(f"#{layout} "))
    assert "order = [0," in blocked, f"the store's threads do not run along Y: {blocked}"
