"""Reduction tiles and splits (issue 4): bytes and registers per thread, waves, the finish.

* The heuristics, as a table over canonical problems: fp32 keeps the measured tiles; a
  2-byte input loads the same bytes per thread and step into an accumulator of fp32's
  size (``unroll``), where the R loop runs that long; a split fills whole waves of the
  programs the registers let reside; the ticket finish is chosen while the last program
  combines in a few steps.
* The kernels of the benchmark's cases at their real size, planned on meta tensors and
  compiled for sm_90: registers, spills and 16-byte loads, bf16 against fp32.
* Values of unrolled kernels in the interpreter (odd sizes: the masks).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from benchmarks import registers
from benchmarks.cases import SUITES
from layoutfuse.analysis.canonical import Group
from layoutfuse.analysis.device import H200
from layoutfuse.dtypes import DataType
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers import reduction_tiles as tiles
from layoutfuse.schedulers.problem import Problem
from support.execution import INTERPRETER_WARNINGS, schedules
from support.reductions import (
    NV_DTYPES,
    assert_values,
    strided,
)

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]
TUNING = tiles.DEFAULT_TUNING


def problem(pattern: str, sizes: tuple[int, ...], dtype: DataType) -> Problem:
    """A dense single-input problem: groups innermost first, ``X``/``R`` per ``pattern``."""
    load, store, strides = 1, 1, []
    for kind, n in zip(pattern, sizes):
        strides.append((load, store if kind == "X" else 0))
        load *= n
        store *= n if kind == "X" else 1
    groups = tuple(
        Group(n, kind == "R", s, (k,))
        for k, (kind, n, s) in enumerate(zip(pattern, sizes, strides))
    )
    return Problem(groups, 1, 1, (dtype, dtype), (load, store))


def acc_per_thread(p: rd.ReductionParams) -> int:
    return p.block_x * p.block_r // (32 * p.num_warps)


def bytes_per_step(p: rd.ReductionParams, item: int) -> int:
    return acc_per_thread(p) * p.unroll * item


# --- the heuristics --------------------------------------------------------------------------
# (pattern, sizes): the benchmark's families at [256, 512, 1024]
FAMILIES = {
    "outer": ("XR", (524288, 256)),
    "outer-XRX": ("XRX", (1024, 512, 256)),
    "inner": ("RX", (1024, 131072)),
    "inner-short-R": ("RX", (256, 524288)),
    "nested-RXR": ("RXR", (1024, 512, 256)),
    "nested-short-R0": ("RXR", (256, 1024, 512)),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_fp32_keeps_the_measured_tiles(family):
    p = rd.heuristics(problem(*FAMILIES[family], DataType.Float), H200)
    assert (p.unroll, p.num_warps) == (1, 8)
    if p.template == "outer":  # [8, 256]: 32 bytes per thread and step (tune, db75cd4)
        assert (p.block_r, p.block_x) == (8, 256) and p.split == 1
        assert bytes_per_step(p, 4) == TUNING.outer_load_bytes == 32
    else:
        assert acc_per_thread(p) == 16 and bytes_per_step(p, 4) == 64


@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Half])
@pytest.mark.parametrize("family", FAMILIES)
def test_two_byte_inputs_load_fp32_bytes_into_an_fp32_sized_accumulator(family, dtype):
    """The inner template: the same bytes per step and accumulators as fp32. The outer
    one: 4 warps, each thread loading 128 bytes per step into 32 accumulators."""
    pattern, sizes = FAMILIES[family]
    p = rd.heuristics(problem(pattern, sizes, dtype), H200)
    fp32 = rd.heuristics(problem(pattern, sizes, DataType.Float), H200)
    assert p.unroll == 2
    if p.template == "outer":
        assert p.num_warps == TUNING.narrow_outer_warps == 4
        assert acc_per_thread(p) == TUNING.narrow_outer_acc
        assert bytes_per_step(p, 2) == TUNING.narrow_outer_load_bytes
        assert p.block_x * 2 == fp32.block_x * 4 == TUNING.outer_row_bytes  # same row bytes
    else:
        assert acc_per_thread(p) == acc_per_thread(fp32) == TUNING.acc_elements
        assert bytes_per_step(p, 2) == bytes_per_step(fp32, 4) == TUNING.load_bytes
        assert p.num_warps == fp32.num_warps


@pytest.mark.parametrize(
    "pattern, sizes", [("XR", (256, 524288)), ("XR", (1024, 131072)), ("XR", (512, 262144))]
)
def test_fp32_outer_tiles_of_a_split_keep_16_rows(pattern, sizes):
    """Split outer sums: [16, 256] ran at 86-87.7% (b252b80), [8, 256] at 84% (eeebe3d)."""
    p = rd.heuristics(problem(pattern, sizes, DataType.Float), H200)
    assert p.split > 1 and (p.block_r, p.block_x, p.num_warps) == (16, 256, 8)
    assert bytes_per_step(p, 4) == TUNING.outer_split_load_bytes


@pytest.mark.parametrize("nr", [1, 3, 8, 100])
@pytest.mark.parametrize("n0", [16, 64, 2048])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16, DataType.Double])
def test_outer_tiles_stay_within_the_extents(dtype, n0, nr):
    p = rd.heuristics(problem("XR", (n0, nr), dtype), H200)
    assert p.template == "outer"
    assert p.block_x <= max(1, 1 << (n0 - 1).bit_length())
    assert p.block_r * p.unroll <= max(1, 1 << (nr - 1).bit_length())
    assert p.block_x * p.block_r >= 32 * p.num_warps or p.num_warps <= 4


@pytest.mark.parametrize(
    "n, block, least, want",
    [
        (96, 256, 32, 32),  # 128 and 64 pad 96 by a third, 32 not at all
        (192, 256, 32, 64),
        (320, 256, 32, 64),
        (513, 256, 32, 64),  # 768, 640, then 576 elements: within 1/8
        (96, 128, 64, 128),  # none narrower pads less (64 pads the same): the widest
        (100, 128, 32, 128),  # 128 at every width: the widest
        (4096, 256, 32, 256),  # no padding
        (25, 32, 32, 32),  # nothing narrower allowed
        (0, 128, 32, 128),  # no columns: the block as it is
    ],
)
def test_least_padded_rows(n, block, least, want):
    assert tiles.least_padded(n, block, least, TUNING.pad_waste) == want


@pytest.mark.parametrize("dtype, c", [(DataType.Float, 96), (DataType.BFloat16, 192)])
@pytest.mark.parametrize("c_times", [1, 5])
def test_outer_rows_pad_the_kept_group_little(dtype, c, c_times):
    """A channels-last sum over W ([N*H, W, C] as XRX): C = 96 fp32 read [16, 64] tiles with
    a third of the second block's lanes masked; rows now narrow (to a cache line at
    least) until the blocks pad C by at most ``pad_waste``; a padding-free C keeps them."""
    n0 = c * c_times
    p = rd.heuristics(problem("XRX", (n0, 56, 356 * 56), dtype), H200)
    item = 4 if dtype == DataType.Float else 2
    padding = -(-n0 // p.block_x) * p.block_x / n0
    assert padding <= TUNING.pad_waste or p.block_x * item == TUNING.pad_row_bytes, p
    assert p.block_x * item >= TUNING.pad_row_bytes
    off = rd.heuristics(
        problem("XRX", (n0, 56, 356 * 56), dtype), H200, dataclasses.replace(TUNING, pad_waste=9.0)
    )
    assert off.block_x >= p.block_x


def test_a_channels_last_sum_over_w_matches_torch():
    """[N, C, H, W] channels-last, summed over W, C = 96 (32-column blocks, every lane)."""
    x = torch.randn(3, 96, 5, 7).to(memory_format=torch.channels_last)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t, dims=[3]))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.sum(3), rtol=1e-5, atol=1e-5)
    (params,) = [p for p in schedules(fd) if isinstance(p, rd.ReductionParams)]
    assert params.template == "outer" and params.block_x == 32, params


def test_a_short_r_is_not_unrolled_past_itself():
    p = rd.heuristics(problem("XR", (524288, 1), DataType.BFloat16), H200)
    assert p.unroll == 1 and p.block_r == 1
    p = rd.heuristics(problem("RX", (8, 524288), DataType.BFloat16), H200)
    assert p.unroll == 1 and p.block_r == 8  # one 16-byte vector: nothing to unroll


def waves(p: rd.ReductionParams, sizes, device=H200) -> float:
    programs, split = rd.grid(p, sizes)
    resident = tiles.resident_programs(device, p.num_warps, acc_per_thread(p), TUNING)
    return programs * split / resident


@pytest.mark.parametrize(
    "pattern, sizes",
    [
        ("XRX", (1024, 512, 256)),  # 1024 programs: 7.8 per multiprocessor
        ("XR", (131072, 1024)),  # 512 programs: 3.9 per multiprocessor
        ("RX", (131072, 1024)),  # 512 programs of 2 rows
    ],
)
def test_a_few_long_looping_programs_per_multiprocessor_are_not_split(pattern, sizes):
    """Measured on the H200 (benchmarks/NOTES.md): these ran at 80.8% and
    90.8% unsplit against 80.2-81.7% and 74-86% split 2-6."""
    p = rd.heuristics(problem(pattern, sizes, DataType.Float), H200)
    assert p.split == 1


@pytest.mark.parametrize(
    "pattern, sizes",
    [
        ("XR", (1024, 131072)),  # 4 programs
        ("RXR", (512, 256, 1024)),
    ],
)
def test_a_split_fills_whole_waves(pattern, sizes):
    p = rd.heuristics(problem(pattern, sizes, DataType.Float), H200)
    assert p.split > 1
    w = waves(p, sizes)
    assert w >= TUNING.waves - 0.1, (w, p)
    assert w / -(-w // 1) >= 0.9, f"the last wave is mostly empty: {w:.2f} waves"


def test_enough_programs_are_not_split():
    p = rd.heuristics(problem("XR", (524288, 256), DataType.Float), H200)
    assert p.split == 1 and waves(p, (524288, 256)) >= TUNING.waves - 0.1


def test_resident_programs_follow_the_registers():
    assert tiles.estimated_registers(16, TUNING) == 40
    assert tiles.estimated_registers(32, TUNING) == 56
    assert tiles.resident_programs(H200, 8, 16, TUNING) == 132 * 6  # 40 registers, 8 warps
    assert tiles.resident_programs(H200, 8, 32, TUNING) == 132 * 4  # 56 registers
    assert tiles.resident_programs(H200, 8, 8, TUNING) == 132 * 8  # 32: threads bound


@pytest.mark.parametrize(
    "pattern, sizes, finish",
    [
        ("RX", (131072, 256), "ticket"),  # inner: a few columns per X block
        ("XR", (16384, 1536), "ticket"),  # few partials per column
        ("XR", (256, 524288), "kernel"),  # thousands of partials per column, 512 MiB
        ("XR", (2304, 2048), "ticket"),  # the seed's small case fits in L2: one launch
    ],
)
def test_the_finish_follows_the_partials_per_x_block(pattern, sizes, finish):
    p = rd.heuristics(problem(pattern, sizes, DataType.Float), H200)
    assert p.split > 1 and p.finish == finish, p
    if finish == "ticket":
        steps = -(-p.split // rd.combine_block(p, p.block_x))
        assert steps <= TUNING.ticket_steps or p.template == "inner"


@pytest.mark.parametrize("fill", [1, 0])
def test_an_input_in_l2_keeps_a_program_per_multiprocessor(fill):
    """A bf16 Welford over the columns of [2411, 3939] (19 MB: fits in L2) tiles X in 8
    blocks of 512. Cut to what one program combines in ``ticket_steps`` (8 partials a
    block), its split left 64 programs on 132 multiprocessors; it keeps 17 (136 programs),
    the last program of each block combining in more steps (``ticket_fill=0``: 8)."""
    p = dataclasses.replace(
        problem("XR", (3939, 2411), DataType.BFloat16), accumulators=3, welford=True
    )
    # (its rows of 3939 bf16 would fold, with a finishing kernel, few_rounds would narrow
    # its rows, and its scalar loads size the tile as fp32's: the ticket rule alone)
    tuning = dataclasses.replace(
        TUNING, ticket_fill=fill, fold_rows=0, few_rounds=0, scalar_outer_item=0
    )
    params = rd.heuristics(p, H200, tuning)
    programs = -(-3939 // params.block_x)
    assert (params.template, programs, params.finish) == ("outer", 8, "ticket"), params
    assert params.split == (17 if fill else 8), params


@pytest.mark.parametrize(
    "pattern, sizes, split",
    [
        ("XR", (131072, 1024), 1),  # 1024 programs of 256-byte rows: a wave already
        ("XRX", (1024, 512, 256), 2),  # 512 programs (at least 2 per SM, under one wave)
        ("XR", (1024, 131072), 128),  # 8 programs (256-byte rows): chunks of 16 steps
        ("XR", (256, 524288), 512),  # 2 programs of [32, 128] x 2 steps
        ("XR", (524288, 256), 1),  # 1024 programs: a wave already
    ],
)
def test_a_two_byte_outer_sum_splits_into_one_wave(pattern, sizes, split):
    """bf16 outer sums on the H200 (tune-bf16-split-c8a2797): one wave of long
    programs beats the fp32 rule's two waves of short ones (split 4: 88.1%, 13: 70.6%)."""
    p = rd.heuristics(problem(pattern, sizes, DataType.BFloat16), H200)
    resident = tiles.resident_programs(
        H200, p.num_warps, acc_per_thread(p), TUNING, TUNING.narrow_outer_registers
    )
    assert resident == 132 * 8
    assert p.template == "outer" and p.split == split, p
    programs = rd.grid(p, sizes)[0]
    assert programs * p.split <= max(resident, programs)
    # fp32 keeps its two-wave split on the same problem
    f = rd.heuristics(problem(pattern, sizes, DataType.Float), H200)
    if f.split > 1:
        assert waves(f, sizes) >= TUNING.waves - 0.1


@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Half])
@pytest.mark.parametrize("sizes", [(256, 524288), (512, 262144), (1024, 131072)])
def test_a_two_byte_outer_sum_that_splits_reads_256_byte_rows(sizes, dtype):
    """The split kernels of bf16 outer sums on the H200 (tune-bf16-width-bc35ee0): rows of
    256 bytes 64.5-64.8 us, 1 KB 65.7-65.9 us, 512 bytes 68.9-69.9 us, for the same
    one wave of 1024 programs. Unsplit ones keep 1 KB rows; fp32 keeps them when split."""
    p = rd.heuristics(problem("XR", sizes, dtype), H200)
    assert p.split > 1 and p.block_x * 2 == TUNING.narrow_outer_short_row_bytes == 256, p
    assert bytes_per_step(p, 2) == TUNING.narrow_outer_load_bytes
    assert rd.grid(p, sizes)[0] * p.split == 1024  # one wave of 8 programs per SM
    unsplit = rd.heuristics(problem("XR", (524288, 256), dtype), H200)
    assert unsplit.split == 1 and unsplit.block_x * 2 == TUNING.outer_row_bytes
    fp32 = rd.heuristics(problem("XR", sizes, DataType.Float), H200)
    assert fp32.split > 1 and fp32.block_x * 4 == TUNING.outer_row_bytes


@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Half])
@pytest.mark.parametrize(
    "sizes, split", [((256, 1024, 512), 1), ((256, 512, 1024), 1), ((384, 4096, 64), 5)]
)
def test_a_two_byte_outer_sum_never_reads_512_byte_rows(sizes, split, dtype):
    """A stride-1 kept group shorter than 1 KB (the sweep's X = 256 sums over the middle
    dim): two blocks of 256-byte rows (tune-bf16-rows512-d1bdc57: 63.5 us, one wave, no
    split, against 70.4 us for one block of 512-byte rows split twice; 67.3 vs 68.8 us)."""
    p = rd.heuristics(problem("XRX", sizes, dtype), H200)
    assert p.block_x * 2 == TUNING.narrow_outer_short_row_bytes and p.split == split, p
    assert bytes_per_step(p, 2) == TUNING.narrow_outer_load_bytes
    assert p.split == 1 or rd.grid(p, sizes)[0] * p.split <= 132 * 8  # a split: one wave at most
    wide = rd.heuristics(problem("XRX", (1024, 512, 256), dtype), H200)
    assert wide.block_x * 2 == TUNING.outer_row_bytes  # 1 KB rows where they fit


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16])
def test_accumulators_of_sibling_reductions_size_the_split(dtype):
    """Two sums in one kernel (sibling reductions) keep two accumulator tiles: fewer
    programs reside (ptxas, sm_90: 57 registers fp32 at [16, 256], 96 bf16 for the
    var_sums kernels of the normalization suite), and the split makes one wave of them
    (fp32 on the H200: split 16, one wave, 68.0%; 32, two waves, 58.9%). fp32 siblings
    load the split step as ``multi_acc_split_unroll`` tiles of [4, 256] (8 accumulators per
    thread, 48 registers: 77.7% at split 16) and keep the split of the whole step
    (split 20, 5 programs per SM, read at 72.0%)."""
    prob = problem("XR", (8192, 8192), dtype)
    one = rd.heuristics(prob, H200)
    two = rd.heuristics(dataclasses.replace(prob, accumulators=2), H200)
    if dtype == DataType.Float:
        assert one.unroll == 1 and two.unroll == TUNING.multi_acc_split_unroll
        assert (one.block_x, one.block_r) == (two.block_x, two.block_r * two.unroll)
        assert 1 < two.split < one.split, (one, two)
    else:  # one sum that splits reads 256-byte rows; siblings keep 1 KB (43% vs 58%)
        assert one.block_x * 2 == TUNING.narrow_outer_short_row_bytes
        assert two.block_x * 2 == TUNING.outer_row_bytes and two.split > 1, two
    acc = acc_per_thread(two) * (two.unroll if dtype == DataType.Float else 1)
    regs = TUNING.narrow_outer_registers + acc if dtype == DataType.BFloat16 else None
    resident = tiles.resident_programs(H200, two.num_warps, 2 * acc, TUNING, regs)
    assert resident // 2 < rd.grid(two, prob.sizes)[0] * two.split <= resident  # about one wave
    if dtype == DataType.Float:
        assert (two.split, two.finish) == (16, "ticket")  # the measured variant


def test_sibling_unroll_only_for_split_four_byte_steps():
    """One fp32 sum keeps its [16, 256] split step; unsplit siblings (enough column blocks)
    and 2-byte siblings keep theirs too."""
    split = problem("XR", (8192, 8192), DataType.Float)
    assert rd.heuristics(split, H200).unroll == 1
    unsplit = problem("XR", (262144, 1024), DataType.Float)
    two = rd.heuristics(dataclasses.replace(unsplit, accumulators=2), H200)
    assert two.split == 1 and two.unroll == 1
    bf16 = rd.heuristics(
        dataclasses.replace(problem("XR", (8192, 8192), DataType.BFloat16), accumulators=2), H200
    )
    assert bf16.block_r * bf16.unroll * bf16.block_x * 2 == (
        TUNING.narrow_outer_load_bytes * 32 * TUNING.narrow_outer_warps
    )


def test_override_rederives_whole_steps_per_chunk():
    prob = problem("XR", (131072, 1000), DataType.BFloat16)
    p = rd.heuristics(prob, H200)
    q = rd.override(p, prob.sizes, block_r=16, unroll=4, split=5)
    chunk = rd.chunk(q, prob.sizes)
    assert chunk % (16 * 4) == 0 and (q.split - 1) * chunk < 1000 <= q.split * chunk


# --- compiled for sm_90 at the benchmark's sizes ------------------------------------------------
CASES = {c.name: c for c in SUITES["reduction"]()}
COMPILED = [
    "mem012_sum0",
    "mem012_sum2",
    "mem012_sum02",
    "mem120_sum01",
    "mem021_sum2",
    "mem120_sum2",
    "mem120_sum12",
]  # the last two: 256-byte bf16 rows


# The register estimate that sizes the split is of the kernels that select each masked
# lane's identity (``zero_selects`` off): without the select ptxas issues a step's loads
# first, and the nested bf16 sum's 2 unrolled tiles then hold 48 registers, not 40
SELECTS = {"zero_selects": False}


@pytest.mark.parametrize("tag", COMPILED)
def test_bf16_kernels_use_no_more_registers_than_fp32(tag):
    bf16, bf16_arts = registers.compile_variant(CASES[f"bf16_{tag}"], SELECTS)
    fp32, fp32_arts = registers.compile_variant(CASES[f"sweep_{tag}"], SELECTS)
    # the outer template's bf16 tile has 32 accumulators at 4 warps: the split of a 2-byte
    # outer sum counts on ``narrow_outer_registers`` (64: 8 programs per multiprocessor)
    narrow_outer = TUNING.narrow_outer_registers
    # (the two may differ in split, so in finishing kernels: compare the reduction kernels)
    regs, ref_regs = bf16_arts[0].resources["REG"], fp32_arts[0].resources["REG"]
    bound = (
        narrow_outer
        if bf16.template == "outer"
        else max(ref_regs, tiles.estimated_registers(TUNING.acc_elements, TUNING))
    )
    assert regs <= bound, f"{regs} registers for bf16, {ref_regs} for fp32 ({bf16}, {fp32})"
    for art in bf16_arts:
        assert art.local_bytes == 0, f"{art.name} spills: {art.resources}"
        assert "ld.global.v4.b32" in art.ptx, f"{art.name}: no 16-byte loads"


# --- values -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape, stride_order, dims",
    [
        ((67, 520), (1, 0), (0,)),  # outer [8, 512] x 2, a partial last step
        ((3, 9000), (1, 0), (1,)),  # inner [2, 2048] x 2
        ((5, 3, 200), (2, 1, 0), (0, 2)),  # nested [4, 128] x 2, a partial step
    ],
)
@pytest.mark.parametrize("op", ["sum", "max", "var_mean"])
def test_unrolled_kernels_match_torch(shape, stride_order, dims, op):
    rank = len(shape)
    alloc = sorted(range(rank), key=lambda d: -stride_order[d])
    x = strided(shape, alloc, torch.bfloat16, torch.Generator().manual_seed(1))
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1] * rank,
            contiguity=[True] * rank,
            dtype=NV_DTYPES[x.dtype],
            stride_order=list(stride_order),
        )
        outs = (
            fd.ops.var_mean(t0, dims=list(dims), correction=1)
            if op == "var_mean"
            else [getattr(fd.ops, op)(t0, dims=list(dims))]
        )
        for out in outs:
            fd.add_output(out)
    results = fd.execute([x])
    assert_values(op, results, x.dtype, x.cpu().double(), dims)
    schedule = schedules(fd)
    params = [p for p in schedule if isinstance(p, rd.ReductionParams)]
    assert op == "var_mean" or (params and params[0].unroll == 2), schedule
    if op == "var_mean" and params:
        # a Welford divides once per tile (its lanes' counts are equal) except in the nested
        # template, whose inner loop masks each row's last tile
        per_element = "delta / tl.maximum" in fd.last_triton_code()
        assert per_element == params[0].r_nest, params[0]


@pytest.mark.parametrize("tag", COMPILED)
def test_kernels_without_selects_keep_their_programs_resident(tag):
    """The default kernels (no select for a sum's masked lanes) spill nothing and keep
    64 registers a thread at most: 4 programs of 8 warps a multiprocessor."""
    for dtype in ("bf16", "sweep"):
        params, arts = registers.compile_variant(CASES[f"{dtype}_{tag}"], {})
        assert params.zero_selects
        for art in arts:
            assert art.local_bytes == 0, f"{art.name} spills: {art.resources}"
            assert art.resources["REG"] <= 64, (art.name, art.resources, params)
