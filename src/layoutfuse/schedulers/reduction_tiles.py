"""Tile and split sizes of the reduction scheduler, from bytes and registers per thread.

The knobs are the fields of ``ReductionTuning``, set from the fp32 tiles that read closest
to the read ceiling and from ptxas's register counts of the generated kernels for sm_90
(``CompiledArtifacts.resources``; ``python -m benchmarks probe registers``); the
measurements: see benchmarks/NOTES.md, "Measurements behind the heuristics".

* each thread keeps ``load_bytes`` in flight per loop step, as 16-byte vectors;
* it accumulates into ``acc_elements`` fp32 values; ptxas then allocates about
  ``reg_base + acc_elements`` registers;
* so a 2-byte input loads ``unroll`` = 2 tiles per step into one accumulator tile of
  fp32's size: the same bytes in flight and the same registers as fp32, where one
  accumulator tile of twice the elements leaves fewer programs resident.

When the output's stride-1 kept group is not the input's (a pinned or inferred output
order), the outer template can tile both (``transposed_tile``): loads follow the input
in whole cache lines, stores run along the output's stride-1 group in whole sectors
(instead of one element per sector), as long as the smaller tiles still fill ``waves``
waves without a split.

The outer template departs from this: 4-byte rows of 1 KB read fastest as [8, 256] steps
(``outer_load_bytes``), 2-byte ones with 4 warps each loading two [8, 512] tiles per step
(``narrow_outer_*``). Neither is understood from first principles; both are measurements
on one GPU, over shapes with 1 KB rows. Where R will be split (fewer than
``split_below`` programs per multiprocessor), fp32 keeps [16, 256] steps
(``outer_split_load_bytes``): [8, 256] steps double the partials.

A grid should also fill the GPU with whole waves: the resident programs follow from
the registers (``resident_programs``), and a split of R is sized to about
``waves`` waves (``split_for_waves``), except where a program keeps more registers than
an fp32 sum's (a 2-byte outer sum, outer sibling reductions, a Welford): there one wave of
longer programs reads faster (``one_wave_split``). The partials of a split are combined by
the last program of each X block (``finish="ticket"``, one launch) while that is a few
steps of one program (``ticket_steps``: one program reads from L2 about 8 KB per step and
latency); more partials per X block take a finishing kernel, which combines them with
many programs, unless the problem fits in L2 (launch-bound: the split is cut down to
what one program combines, one launch). An input within ``few_rounds_l2`` of L2 is
latency-bound: its plan is the one of fewest DRAM round trips on a program's critical
path (outer: rows per tile and split, ``few_rounds``; inner: the split, down to one loop
step a program, ``few_rounds_inner``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.device import DeviceInfo
from ..intmath import next_pow2
from .measure import Overrides
from .warps import THREADS_PER_WARP, WarpSteps


@dataclass(frozen=True)
class ReductionTuning:
    """The reduction scheduler's knobs, one per rule (see the module's docstring)."""

    # warps of a full tile: the inner template's threads, the outer 4-byte tile's warps
    tile_warps: int = 8
    # the masks' extent and the stride arguments passed divided by their power-of-two
    # factor, which the kernel multiplies back (``reduction.size_factors``); 0: as they are
    size_factors: int = 1
    # an inner row whose tiles Triton cannot prove 16-byte aligned and whole starts its
    # loop at its first boundary of this many bytes (``align_rows``); 0: the plain loop
    align_row_bytes: int = 16
    # a flat R walk over several reduced groups carries its group indices from step to
    # step (``carry_index``); 0: each step divides every element's flat index
    carry_index: int = 1
    # ... where each program takes at least this many loop steps (the indices are
    # divided once before the loop) and its tile at most this many warps (the carried
    # indices' registers then leave the resident programs as they are)
    carry_min_steps: int = 8
    carry_max_warps: int = 4
    # contiguous outer rows no multiple of 16 bytes long are read G at a time as one
    # aligned row (``fold``; 0: off)
    fold_rows: int = 1
    # ... G at least this (a fold of 2: rows already 8 bytes aligned, which the size
    # factors load as 8-byte vectors), leaving this many folded rows, in inputs of this
    # many bytes (the fold adds a finishing kernel)
    fold_least: int = 4
    # ... G at least this for loads of at most ``fold_narrow_item`` bytes an element: a
    # fold of 2 turns their 8-byte loads (4 elements) into 16-byte ones. H100 at 97edecc
    # (tune-ab30-20261206-97edecc-h100.txt): a fp16 max over rows of 1652 (3304 bytes)
    # 2248 GB/s folded against 1444; the fp32 folds of 2 in that A/B lost 0.86x and 0.90x
    fold_least_narrow: int = 2
    fold_narrow_item: int = 2
    # ... a Welford's of loads at most this many bytes an element: its fold's tail counts
    # per lane and its finish folds three partials a column, more than 4-byte element
    # loads cost (H100 at 08cee37, tune-ab19-20261206-08cee37-h100.txt: a fp32 var_mean
    # over rows of 3269, 2837 GB/s unfolded against 2309 folded; a fp32 max over rows of
    # 385 folded 2876 against 2631 unfolded, which it keeps; bf16 and fp16 Welfords
    # gained: r2_040 1.47x, r1_049 1.20x)
    fold_welford_max_item: int = 2
    fold_min_rows: int = 64
    fold_min_bytes: int = 8 << 20
    # bytes per thread and loop step, kept in flight as 16-byte vectors
    load_bytes: int = 64
    # fp32 accumulators per thread (4096 per program at 8 warps); wider steps unroll into them
    acc_elements: int = 16
    # the nested inner template's tile must hold 1/this of a loop step, else R walks flat
    nest_fill: int = 4
    # registers besides the accumulators (ptxas, sm_90): estimates the resident programs
    reg_base: int = 24
    # contiguous bytes of one row of an outer tile (the stride-1 kept group)
    outer_row_bytes: int = 1024
    # ... narrowed, down to rows of ``pad_row_bytes``, while a row pads the stride-1 kept
    # group by more than ``pad_waste`` (its blocks' elements over its own) and a narrower
    # one pads it less (``least_padded``): a channels-last sum over W of C = 96 fp32 read
    # [16, 64] tiles, a third of the second block's lanes masked (r1_000, 0.84x of
    # torch.compile, H100 at 08cee37)
    pad_row_bytes: int = 128
    pad_waste: float = 1.125
    # outer template: a stride-1 kept group of fewer bytes spans its tile's columns with
    # the next kept group (``reduction._spanned``), R whole up to this many rows a step
    span_row_bytes: int = 64
    span_rows: int = 16
    # contiguous bytes of one row of an inner tile, per loop step
    inner_row_bytes: int = 8192
    # partials per thread in a ticket combine step: the combine adds no registers
    combine_elements: int = 8
    # combine steps the last program of an X block may take (more: a finishing kernel)
    ticket_steps: int = 4
    # ... except that an input fitting in L2 keeps a program per multiprocessor (``finish_for``)
    ticket_fill: int = 1
    # an unsplit outer grid past one wave of resident programs by less than this much of
    # a wave takes the tile of half the accumulators a thread (2-byte tiles; wider: half
    # the step) where that makes one wave (``reduction._past_one_wave``); 0: off (not yet
    # timed on a GPU)
    wave_tail: float = 0.0
    # a split grid: at least this many waves of resident programs
    waves: int = 2
    # ... made only below this many programs per multiprocessor (more: a split only adds traffic)
    split_below: int = 2
    # ... of at most this many chunks
    max_split: int = 4096
    # outer template, 4-byte and wider inputs: bytes per thread and step (fp32 [8, 256])
    outer_load_bytes: int = 32
    # ... where R will be split (fp32 [16, 256]: half the partials of [8, 256])
    outer_split_load_bytes: int = 64
    # outer template, narrower inputs: warps (4 warps, each loading two [8, 512] bf16 tiles)
    narrow_outer_warps: int = 4
    # ... bytes per thread and step
    narrow_outer_load_bytes: int = 128
    # ... fp32 accumulators per thread
    narrow_outer_acc: int = 32
    # ... ptxas's registers for them (sm_90): 8 programs per SM, not the 9 reg_base gives
    narrow_outer_registers: int = 64
    # ... rows of this many bytes where R will be split or the stride-1 kept group is short
    narrow_outer_short_row_bytes: int = 256
    # an outer tile none of whose loads can read 16-byte vectors (rows a number of bytes
    # apart that is no multiple of 16) is sized as for elements of at least this many
    # bytes: a bf16 max over [469, 65521] rows of 25 elements 50 apart loaded 64 elements
    # a thread a step one by one in the 2-byte tile ([128, 32] x 2), 250 registers a
    # thread and two programs a multiprocessor (sm_90; 0.82x of eager, H100 at e5b9f9f);
    # as 4-byte elements, [64, 32] at 8 warps. H100 at e837a73 (tune-ab39-20261206-e837a73-
    # h100.txt), kernel time of the ten random cases it changes: that max 4428 -> 1357 us
    # (eager's whole call 1787), bf16 log_softmax over 128256 969 -> 848, bf16 layer norm
    # 1167 -> 840, fp16 max 5.4 -> 4.5, fp16 var_mean 14.0 -> 13.6; two tiny ones lost
    # (bf16 max 2.0 -> 3.4 us, bf16 sum 3.5 -> 4.0), the rest within 0.1 us. 0: off
    scalar_outer_item: int = 4
    # the same for an inner tile the aligned loop (``align_rows``) leaves scalar: several
    # reduced groups, a Welford, rows of no alignment Triton knows (sm_90: a bf16 var_mean
    # over [49, 167, 7, 145] took 171 registers a thread at 8 warps, one program a
    # multiprocessor). 0: off. H100 at eb18c3b (tune-ab40-20261206-eb18c3b-h100.txt), the
    # twelve random cases it changes, kernel time: that var_mean 25.8 -> 21.6 us, fp16
    # var_mean over [31654, 16381] 1065 -> 780, bf16 max over four dims 139 -> 126, fp16
    # max over rows of 50257 9.1 -> 7.9; a fp16 layer norm's statistics over rows of
    # 5983831 27.8 -> 37.5 (its split grew), a bf16 sum over rows of 164 7.0 -> 9.0 (its
    # tile reshaped), four others 2-3% slower, one even. No rule separates them; the large
    # ones are timed by the measured choice's half step already (``alternatives``)
    scalar_inner_item: int = 0
    # outer split step of 4-byte inputs with several accumulators: loaded as this many tiles
    multi_acc_split_unroll: int = 4
    # outer template: a stride-1 kept group of fewer bytes (a sector) stacks the next group
    # in memory, where kept, along Y (``reduction._short_rows``)
    short_row_bytes: int = 32
    # transposed store: contiguous output bytes per column (one sector)
    transposed_store_bytes: int = 32
    # transposed store: contiguous input bytes per row (one cache line)
    transposed_line_bytes: int = 128
    # transposed store: R rows a loop step at most (0: as many as fill ``load_bytes``). 1
    # walks R a row a step, each thread's accumulators its own, with no reduce across the
    # tile's R lanes: a fp32 var_mean over 7 rows 69705 elements apart stored transposed
    # (r1_077) took 80 registers a thread and 11.8 us in [8, 8, 32] steps (a Welford's
    # tile reduce), 24 and 10.4 us in [8, 1, 32] (H100 at 48936a1, tune-r1_077-20261207-
    # 48936a1-h100.txt). One case: timed by the measured choice (``alternatives``)
    transposed_r_rows: int = 0
    # an outer reduction whose input fits in L2 (never timed by the measured choice) takes
    # the rows per tile and the split of fewest DRAM round trips on its critical path
    # (``few_rounds``): a program's loop steps, plus the ticket and each combine step of
    # its split; a grid under a program per multiprocessor adds the bytes it moves over
    # ``round_bytes`` per round trip at its share of the device. 0: the rule's tile and split
    few_rounds: int = 1
    # ... and an inner one's split, down to a loop step a program (``_few_rounds_inner``);
    # 0: the rule's split. H100 at adcfdf7 (tune-ab48-20261206-adcfdf7-h100.txt, each
    # twice): fp32 [143, 2039] sum 105-111 -> 148 GB/s (48 programs of 3 steps -> 143 of
    # one), a fp32 sum of 307238 154-164 -> 175, a bf16 [2849, 768] sum 383-421 -> 570;
    # plans it left alone within noise
    few_rounds_inner: int = 1
    # ... where its input is at most this fraction of L2: rows narrower than 1 KB lose
    # bandwidth that a larger input needs (H100 at 9ed053e, tune-ab19-20261206-9ed053e-h100
    # .txt: a Welford over the 904 rows of a [113, 8, 512] fp32 tensor 110 -> 205 GB/s,
    # fp16 [617, 1024] max 113 -> 154, fp32 [4096, 582] sum 762 -> 887, bf16 var_mean
    # [2411, 3939] 716 -> 755, three others 1.06-1.25x; a 44 MB fp32 sum of [3957, 2782]
    # rows lost 7%, 1774 -> 1646)
    few_rounds_l2: float = 0.5
    # ... bytes the device reads in one DRAM round trip at full rate (H100/H200: 3.4-4.8
    # TB/s over about a microsecond)
    round_bytes: int = 4 << 20
    # ... rows of at least this many bytes of the stride-1 kept group (a cache line)
    few_rounds_row_bytes: int = 128
    # ... taken only where its rounds are below this fraction of the rule's plan's
    few_rounds_gain: float = 0.75
    # a sum whose masked lanes are 0 without a select takes none (``ReductionParams.
    # zero_selects``; the select kept each load's predicate live until its use, and with
    # more masked loads a thread than predicate registers ptxas issued each load after the
    # previous one's math: a sliced fp32 RMS norm's 16 scalar loads a step took 21 us
    # where torch.compile took 3.5, H100 at 9ed053e; sm_90 SASS now issues them first).
    # H100 at 455f162, against the select (0), GB/s: r3_015 246 / 110, r2_104 2541 / 1738,
    # r2_034 2379 / 2093, r3_012 114 / 104; r3_112 697 / 790 and r3_062 110 / 152 (small
    # inputs of 7-10 us, both ahead of eager in the seeds); 10 others within 3%
    zero_selects: int = 1
    # warps of a tile its template does not fix, by its accumulator elements: (least, warps)
    warps: WarpSteps = ((4096, 8), (1024, 4), (0, 2))
    # measured choice (``schedulers/measure.py``): a fold against the unfolded plan,
    # carried R indices against divided ones (a problem they do not change gets the same
    # plan, which is not timed twice), an inner step of half the bytes (loads, fp32
    # accumulators and row bytes a step all halved, at the warps of the whole step: half
    # the bytes a thread), outer tiles of narrower rows, 2-byte outer tiles at half the
    # warps (half the tile, the same bytes a thread: a fp16 sum over the 112 rows of
    # [30, 64, 112, 112], r2_106, 27.1 us in [32, 128] x 2 at 4 warps, 21.4 in [16, 128] x
    # 2 at 2, 31.6 at 8; torch.compile 22.8; H100 at 685caed, tune-ab57-20261207-685caed-
    # h100.txt), 2-byte outer tiles of half the bytes per thread, transposed tiles
    # stepping R a row at a time, and scalar inner tiles sized as for 16-byte elements (a
    # quarter of a fp32 step: a fp32 max over rows of 255, 1020 bytes apart, r3_093, read
    # [16, 256] at 8 warps in 24.4 us, [8, 256] at 8 in 22.7, [4, 256] at 4 in 16.9;
    # torch.compile's call 20.4; H100 at c4ae9f7, tune-r3_093-20261207-c4ae9f7-h100.txt),
    # are timed against the rule's. The half step: a bf16 sum over rows of 3715 (r2_111)
    # read 2587 GB/s in [2, 2048] x 2 steps and 3101 in [2, 1024] x 2 (eager 95% of the
    # read ceiling in the seed-2 run at f489a24), where [4, 1024] x 2 read 2590 and [8,
    # 1024] 2710, all at 8 warps (H100 at 7d748ff, tune-ab35-20261206-7d748ff-h100.txt):
    # one shape, no rule; the rule's step stays, and the half is timed
    alternatives: tuple[Overrides, ...] = (
        (("fold_rows", 0),),
        (("carry_index", 0),),
        (
            ("load_bytes", 32),
            ("acc_elements", 8),
            ("inner_row_bytes", 4096),
            ("warps", ((2048, 8), (512, 4), (0, 2))),
        ),
        (("outer_row_bytes", 256),),
        (("narrow_outer_warps", 2),),
        (("narrow_outer_load_bytes", 64),),
        (("transposed_r_rows", 1),),
        (("scalar_inner_item", 16),),
    )

    @property
    def tile_threads(self) -> int:
        return THREADS_PER_WARP * self.tile_warps


DEFAULT_TUNING = ReductionTuning()


class Tile:
    """Block sizes of one reduction kernel (see ``choose_tile``)."""

    __slots__ = ("block_x", "block_r", "unroll", "block_y", "warps")

    def __init__(
        self,
        block_x: int,
        block_r: int,
        unroll: int = 1,
        block_y: int = 1,
        warps: int | None = None,
    ):
        self.block_x, self.block_r, self.unroll, self.block_y = block_x, block_r, unroll, block_y
        self.warps = warps  # None: ``warps_for`` the accumulator tile


def choose_tile(
    template: str,
    item: int,
    nx: int,
    nr: int,
    n0: int,
    n_r0: int,
    r_nest: bool,
    sm_count: int,
    tuning: ReductionTuning,
    short_rows: bool = True,
) -> Tile:
    """Block sizes for ``item``-byte loads.

    ``nx``/``nr``: kept and reduced elements; ``n0``: the stride-1 kept group (outer);
    ``n_r0``: the stride-1 reduced group (the nested inner template). A loop step loads
    ``load_bytes`` per thread (R as far as it goes, then X) into an accumulator of
    ``acc_elements`` per thread: when the step holds more elements than that (2-byte
    inputs), it is ``unroll`` tiles along R, each at least a 16-byte vector wide.
    The outer template takes its own measured steps (see the module's docstring);
    ``short_rows=False`` (several accumulators: sibling reductions) keeps its 2-byte rows
    at 1 KB where they fit (measured only so), and unrolls its split 4-byte steps.
    """
    t = tuning
    if template == "outer":
        programs = -(-n0 // min(next_pow2(n0), t.outer_row_bytes // item)) * max(1, nx // n0)
        return _outer_tile(item, nr, n0, programs < t.split_below * sm_count, t, short_rows)
    load_elems = t.load_bytes * t.tile_threads // item
    unroll_max = max(1, load_elems // (t.acc_elements * t.tile_threads))
    n_r = n_r0 if r_nest else nr
    r_step = min(next_pow2(n_r), t.inner_row_bytes // item)  # row elements per step
    unroll = max(1, min(unroll_max, r_step * item // 16))
    block_x = max(1, min(next_pow2(nx), load_elems // r_step))
    return Tile(block_x, r_step // unroll, unroll)


def _outer_tile(
    item: int, nr: int, n0: int, split: bool, tuning: ReductionTuning, short_rows: bool = True
) -> Tile:
    """Rows of ``outer_row_bytes`` of the stride-1 kept group; R rows per step from
    ``outer_load_bytes`` per thread of ``tile_warps`` warps (4-byte and wider inputs, no
    unroll; ``outer_split_load_bytes`` where R will be ``split``; a smaller tile where
    the extents end, with fewer warps), or from ``narrow_outer_load_bytes`` per thread of
    ``narrow_outer_warps`` warps, unrolled into ``narrow_outer_acc`` accumulators per
    thread (narrower inputs), in rows of ``narrow_outer_short_row_bytes`` where R will be
    split or the stride-1 kept group has less than ``outer_row_bytes``: never rows of 512
    bytes, which read slowest of all. fp32 keeps 1 KB rows.

    Several accumulators (sibling reductions, ``short_rows=False``): 2-byte rows stay
    1 KB where the group has them (two sums read slower with 256-byte rows), and a split
    4-byte step loads as ``multi_acc_split_unroll`` tiles into one accumulator tile per
    sum (fewer registers, more programs resident). Measured: see benchmarks/NOTES.md,
    "Measurements behind the heuristics"."""
    t = tuning
    short = item < 4 and (n0 * item < t.outer_row_bytes or split and short_rows)
    row_bytes = t.narrow_outer_short_row_bytes if short else t.outer_row_bytes
    block_x = min(next_pow2(n0), max(1, row_bytes // item))
    block_x = least_padded(n0, block_x, max(1, t.pad_row_bytes // item), t.pad_waste)
    if item >= 4:
        step = (t.outer_split_load_bytes if split else t.outer_load_bytes) * t.tile_threads
        step //= item
        block_r = min(next_pow2(nr), max(1, step // block_x))
        warps = t.tile_warps if block_x * block_r == step else None
        unroll = min(t.multi_acc_split_unroll, block_r) if split and not short_rows else 1
        return Tile(block_x, block_r // unroll, unroll, warps=warps)
    threads = THREADS_PER_WARP * t.narrow_outer_warps
    step = t.narrow_outer_load_bytes * threads // item
    r_step = min(next_pow2(nr), max(1, step // block_x))
    unroll = min(max(1, step // (t.narrow_outer_acc * threads)), r_step)
    return Tile(block_x, r_step // unroll, unroll, warps=t.narrow_outer_warps)


def least_padded(n: int, block: int, least: int, waste: float) -> int:
    """``block`` (a power of two), halved down to ``least`` while the best block so far pads
    ``n`` elements by more than ``waste`` (``cdiv(n, b) * b / n``): the widest block of
    the least padding met on the way (96 columns: 128 and 64 pad them by a third, 32 not
    at all; 100 columns: every width pads them to 128, so the first)."""
    if n <= 0:
        return block

    def padding(b: int) -> float:
        return -(-n // b) * b / n

    best = block
    b = block
    while padding(best) > waste and b // 2 >= least:
        b //= 2
        if padding(b) < padding(best):
            best = b
    return best


def transposed_tile(
    item: int, out_item: int, n0: int, n_y: int, nr: int, tuning: ReductionTuning
) -> Tile:
    """The outer template with a transposed store: a [block_y, block_r, block_x] tile of
    the output's stride-1 kept group (``n_y``: ``transposed_store_bytes`` of output per
    column, one 32-byte sector), R, and the input's stride-1 group (``n0``:
    ``transposed_line_bytes`` per row, one cache line). R fills the rest of the step's
    ``load_bytes`` per thread, into ``acc_elements`` accumulators per thread as in
    ``choose_tile``."""
    t = tuning
    block_y = min(next_pow2(n_y), t.transposed_store_bytes // out_item)
    block_x = min(next_pow2(n0), t.transposed_line_bytes // item)
    load_elems = t.load_bytes * t.tile_threads // item
    unroll_max = max(1, load_elems // (t.acc_elements * t.tile_threads))
    r_step = min(next_pow2(nr), max(1, load_elems // (block_x * block_y)))
    if t.transposed_r_rows:
        r_step = min(r_step, t.transposed_r_rows)
    unroll = min(unroll_max, r_step)
    return Tile(block_x, r_step // unroll, unroll, block_y)


def finish_for(
    split: int,
    block_x: int,
    warps: int,
    input_bytes: int,
    device: DeviceInfo,
    tuning: ReductionTuning,
    programs: int,
) -> tuple[str, int]:
    """(finish, split): see the module's docstring. Cut to what one program combines (an
    input that fits in L2), the split keeps ``programs * split`` (``programs``: the X
    blocks) at one program per multiprocessor at least, where it was that many: eight
    [8, 512] bf16 Welford blocks of [2411, 3939] cut to 64 programs ran at 45% of
    torch.compile (H100, 8a06279); the last program of each block then combines in more
    steps."""
    per_step = tuning.combine_elements * THREADS_PER_WARP * warps  # partials, all X columns
    most = tuning.ticket_steps * per_step // block_x  # partials per X block
    if split <= max(most, 1):
        return "ticket", split
    if input_bytes <= device.l2_bytes:
        fill = -(-device.sm_count // max(1, programs)) if tuning.ticket_fill else 1
        return "ticket", min(split, max(most, fill, 1))
    return "kernel", split


def estimated_registers(acc_per_thread: int, tuning: ReductionTuning) -> int:
    """ptxas's registers per thread for ``acc_per_thread`` fp32 accumulators, rounded to
    the allocation unit (8)."""
    return -(-(tuning.reg_base + acc_per_thread) // 8) * 8


def resident_programs(
    device: DeviceInfo,
    warps: int,
    acc_per_thread: int,
    tuning: ReductionTuning,
    registers: int | None = None,
) -> int:
    """Programs of ``warps`` warps that fit on the device at once (threads and registers;
    ``registers`` per thread where known, else estimated from the accumulators)."""
    threads = THREADS_PER_WARP * warps
    by_threads = device.max_threads_per_sm // threads
    regs = registers or estimated_registers(acc_per_thread, tuning)
    by_registers = device.registers_per_sm // (threads * regs)
    return device.sm_count * max(1, min(by_threads, by_registers))


def one_wave_split(
    programs: int, resident: int, units: int, min_units: int, tuning: ReductionTuning
) -> int:
    """The split of a 2-byte outer sum, or of outer sibling reductions (several
    accumulator tiles per program): one wave of resident programs at most (the most chunks
    of at least ``min_units`` with ``programs * split <= resident``), 1 where the programs
    already make a wave. Such programs read fastest as one wave of long programs, and lose
    to a second wave (partial or whole) of shorter ones; a single fp32 sum keeps
    ``split_for_waves``. Measured: see benchmarks/NOTES.md, "Measurements behind the
    heuristics"."""
    if programs >= resident or units < 2 * min_units:
        return 1
    return max(1, min(tuning.max_split, units // min_units, resident // programs))


def split_for_waves(
    programs: int, resident: int, units: int, min_units: int, sm_count: int, tuning: ReductionTuning
) -> int:
    """How many programs share R, which is cut into ``units`` (loop steps, or outer rows)
    and at least ``min_units`` per program: 1 when there are ``split_below`` programs per
    multiprocessor or more (once every multiprocessor has a few long-looping programs, a
    split only adds partial traffic and the combine), else the split in [s, 2 s) (s: the
    least that reaches ``waves`` waves) whose grid wastes least of its last wave.
    Measured: see benchmarks/NOTES.md, "Measurements behind the heuristics"."""
    target = tuning.waves * resident
    if programs >= tuning.split_below * sm_count or units < 2 * min_units:
        return 1
    cap = min(tuning.max_split, units // min_units)
    low = min(-(-target // programs), cap)
    best, best_eff = low, 0.0
    for s in range(low, min(2 * low, cap + 1)):
        total = programs * -(-units // -(-units // s))  # the split the chunks give
        eff = total / (-(-total // resident) * resident)
        if eff > best_eff + 1e-9:
            best, best_eff = s, eff
    return best
