"""Tile and split sizes of the reduction scheduler, from bytes and registers per thread.

Every number here comes from the fp32 tiles that reach 86-97% of the read ceiling on
an H200 (``benchmarks/NOTES.md``) and from ptxas's register counts of the generated kernels
for sm_90 (``CompiledArtifacts.resources``; ``python -m benchmarks probe registers``):

* each thread keeps ``LOAD_BYTES`` in flight per loop step, as 16-byte vectors;
* it accumulates into ``ACC_ELEMENTS`` fp32 values; ptxas then allocates about
  ``REG_BASE + ACC_ELEMENTS`` registers (fp32 [16, 256]: 39-40; bf16 [16, 512], 32
  accumulators: 54-64; bf16 [8, 512] loaded twice per step, 16 accumulators: 40);
* so a 2-byte input loads ``UNROLL`` = 2 tiles per step into one accumulator tile of
  fp32's size: the same bytes in flight and the same registers as fp32, where one
  [16, 512] accumulator tile left 4 instead of 6 programs of 8 warps on an SM.

When the output's stride-1 kept group is not the input's (a pinned or inferred output
order), the outer template can tile both (``transposed_tile``): loads follow the input
in whole cache lines, stores run along the output's stride-1 group in whole sectors
(instead of one element per sector), as long as the smaller tiles still fill ``WAVES``
waves without a split.

The outer template departs from this (``tune-reduction-20261130-db75cd4-h200.txt``,
``probe-outer-20261130-2278cee-h200.txt``): fp32 rows of 1 KB read fastest as [8, 256]
steps, ``OUTER_LOAD_BYTES`` = 32 bytes per thread (8 accumulators, 32-34 registers, 8
programs of 8 warps per multiprocessor): 86.9-92.2% against 81-86.8% for [16, 256] on
the sum over dim 1 of the [256, 512, 1024] sweep, 91% against 85% on [256, 524288]. bf16
reads fastest with 4 warps each loading two [8, 512] tiles per step
(``NARROW_OUTER_LOAD_BYTES`` = 128 bytes per thread, 32 accumulators, 64 registers):
+20-30% on the split outer sums (49-53% -> 64-70%), 82% against 67% on [256, 524288],
within 2% of the 8-warp tile elsewhere. Neither is understood from first principles;
both are measurements on one GPU, over shapes with 1 KB rows. Where R will be split
(fewer than ``SPLIT_BELOW`` programs per multiprocessor), fp32 keeps [16, 256] steps
(``OUTER_SPLIT_LOAD_BYTES``): the split outer sums of the sweep ran at 86.0-87.7% with
them (b252b80) and at 84.0% with [8, 256] (eeebe3d), which doubles the partials.

A grid should also fill the GPU with whole waves: the resident programs follow from
the registers (``resident_programs``), and a split of R is sized to about
``WAVES`` waves (``split_for_waves``), except where a program keeps more registers than
an fp32 sum's (a 2-byte outer sum, outer sibling reductions, a Welford): there one wave of
longer programs reads faster (``one_wave_split``). The partials of a split are combined by the last
program of each X block (``finish="ticket"``, one launch) while that is a few steps of
one program (``TICKET_STEPS``: one program reads from L2 about 8 KB per step and
latency); more partials per X block take a finishing kernel, which combines them with
many programs, unless the problem fits in L2 (launch-bound: the split is cut down to
what one program combines, one launch).
"""

from __future__ import annotations

from ..analysis.device import DeviceInfo
from ..intmath import next_pow2

WARPS = 8
THREADS = 32 * WARPS
LOAD_BYTES = 64            # per thread and loop step: 4 x 16-byte vectors in flight
ACC_ELEMENTS = 16          # fp32 accumulators per thread (4096 per program at 8 warps)
REG_BASE = 24              # registers besides the accumulators (ptxas, sm_90)
OUTER_ROW_BYTES = 1024     # contiguous bytes of one row of an outer tile
INNER_ROW_BYTES = 8192     # contiguous bytes of one row of an inner tile, per loop step
COMBINE_ELEMENTS = 8       # partials per thread in a ticket combine step: no extra registers
TICKET_STEPS = 4           # combine steps the last program of an X block may take
WAVES = 2                  # a split grid: at least this many waves of resident programs
SPLIT_BELOW = 2            # ... made only below this many programs per multiprocessor
MAX_SPLIT = 4096
OUTER_LOAD_BYTES = 32      # outer template, 4-byte and wider inputs: per thread and step,
OUTER_SPLIT_LOAD_BYTES = 64  # ... where R will be split (fewer than SPLIT_BELOW programs/SM)
NARROW_OUTER_WARPS = 4     # outer template, narrower inputs: warps,
NARROW_OUTER_LOAD_BYTES = 128   # ... bytes per thread and step,
NARROW_OUTER_ACC = 32      # ... and fp32 accumulators per thread
NARROW_OUTER_REGISTERS = 64  # ... ptxas's registers for them (the sweep's kernels, sm_90):
                             # 8 programs per multiprocessor, not the 9 REG_BASE would give
NARROW_OUTER_SHORT_ROW_BYTES = 256  # ... rows of this many bytes where R will be split or
                                    # the stride-1 kept group is shorter than 1 KB
SIBLING_OUTER_UNROLL = 4   # outer split step of 4-byte inputs with several accumulators:
                           # loaded as this many tiles into one accumulator tile
STORE_BYTES = 32           # transposed store: contiguous output bytes per column (a sector)
LINE_BYTES = 128           # transposed store: contiguous input bytes per row (a line)


class Tile:
    """Block sizes of one reduction kernel (see ``choose_tile``)."""

    __slots__ = ("block_x", "block_r", "unroll", "block_y", "warps")

    def __init__(self, block_x: int, block_r: int, unroll: int = 1, block_y: int = 1,
                 warps: int | None = None):
        self.block_x, self.block_r, self.unroll, self.block_y = block_x, block_r, unroll, block_y
        self.warps = warps          # None: ``warps_for`` the accumulator tile


def choose_tile(template: str, item: int, nx: int, nr: int, n0: int, n_r0: int,
                r_nest: bool, sm_count: int, short_rows: bool = True) -> Tile:
    """Block sizes for ``item``-byte loads.

    ``nx``/``nr``: kept and reduced elements; ``n0``: the stride-1 kept group (outer);
    ``n_r0``: the stride-1 reduced group (the nested inner template). A loop step loads
    ``LOAD_BYTES`` per thread (R as far as it goes, then X) into an accumulator of
    ``ACC_ELEMENTS`` per thread: when the step holds more elements than that (2-byte
    inputs), it is ``unroll`` tiles along R, each at least a 16-byte vector wide.
    The outer template takes its own measured steps (see the module's docstring);
    ``short_rows=False`` (several accumulators: sibling reductions) keeps its 2-byte rows
    at 1 KB where they fit (measured only so), and unrolls its split 4-byte steps.
    """
    if template == "outer":
        programs = -(-n0 // min(next_pow2(n0), OUTER_ROW_BYTES // item)) * max(1, nx // n0)
        return _outer_tile(item, nr, n0, programs < SPLIT_BELOW * sm_count, short_rows)
    load_elems = LOAD_BYTES * THREADS // item
    unroll_max = max(1, load_elems // (ACC_ELEMENTS * THREADS))
    n_r = n_r0 if r_nest else nr
    r_step = min(next_pow2(n_r), INNER_ROW_BYTES // item)             # row elements per step
    unroll = max(1, min(unroll_max, r_step * item // 16))
    block_x = max(1, min(next_pow2(nx), load_elems // r_step))
    return Tile(block_x, r_step // unroll, unroll)


def _outer_tile(item: int, nr: int, n0: int, split: bool, short_rows: bool = True) -> Tile:
    """Rows of ``OUTER_ROW_BYTES`` of the stride-1 kept group; R rows per step from
    ``OUTER_LOAD_BYTES`` per thread of ``WARPS`` warps (4-byte and wider inputs, no
    unroll; ``OUTER_SPLIT_LOAD_BYTES`` where R will be ``split``; a smaller tile where
    the extents end, with fewer warps), or from
    ``NARROW_OUTER_LOAD_BYTES`` per thread of ``NARROW_OUTER_WARPS`` warps, unrolled into
    ``NARROW_OUTER_ACC`` accumulators per thread (narrower inputs), in rows of
    ``NARROW_OUTER_SHORT_ROW_BYTES`` where R will be split or the stride-1 kept group has
    less than ``OUTER_ROW_BYTES``: never rows of 512 bytes.

    Measured on the H200, 256 MiB of bf16, each kernel alone: split sums, one wave of 1024
    programs (``tune-bf16-width-bc35ee0.txt``): rows of 256 bytes read in 64.5-64.8 us for
    X = 256, 512 and 1024 kept columns, rows of 1 KB in 65.7-65.9 us (X = 512, 1024),
    rows of 512 bytes in 68.9-69.9 us (all three; X = 256 had only these: 79.7% of the
    read ceiling end to end), rows of 128 bytes in 76-79 us. Unsplit, X = 256
    (``tune-bf16-rows512-d1bdc57.txt``): 256-byte rows 63.5 us (one wave, no split)
    against 70.4 us for 512-byte rows (split 2), 67.3 vs 68.8 us (2048 programs); 1 KB
    rows of X = 1024 stay (66.8 us against 67.3). fp32 keeps 1 KB rows: its split sums of
    512-byte rows took 140-144 us against 124-125 us. Two bf16 sums in one kernel
    (sibling reductions, ``short_rows=False``) read slower with 256-byte rows: the
    column-major [8192, 8192] var_sums case 43% of the read ceiling (4bb267a) against 58%
    with 1 KB rows (04daff0); they keep 1 KB rows where the group has them. Two fp32 sums
    split over R (``short_rows=False``) load their [16, 256] step as ``SIBLING_OUTER_UNROLL``
    tiles of [4, 256] into one accumulator tile per sum (8 accumulators per thread, 48
    registers instead of 57): the column-major [8192, 8192] var_sums case 67.5% -> 78.5% of
    the read ceiling, [8, 256] x 2 77.2% (``tune-varsums-table-8bae8cb``); bf16 gained
    nothing from narrower accumulators there."""
    short = item < 4 and (n0 * item < OUTER_ROW_BYTES or split and short_rows)
    row_bytes = NARROW_OUTER_SHORT_ROW_BYTES if short else OUTER_ROW_BYTES
    block_x = min(next_pow2(n0), max(1, row_bytes // item))
    if item >= 4:
        step = (OUTER_SPLIT_LOAD_BYTES if split else OUTER_LOAD_BYTES) * THREADS // item
        block_r = min(next_pow2(nr), max(1, step // block_x))
        warps = WARPS if block_x * block_r == step else None
        unroll = min(SIBLING_OUTER_UNROLL, block_r) if split and not short_rows else 1
        return Tile(block_x, block_r // unroll, unroll, warps=warps)
    threads = 32 * NARROW_OUTER_WARPS
    step = NARROW_OUTER_LOAD_BYTES * threads // item
    r_step = min(next_pow2(nr), max(1, step // block_x))
    unroll = min(max(1, step // (NARROW_OUTER_ACC * threads)), r_step)
    return Tile(block_x, r_step // unroll, unroll, warps=NARROW_OUTER_WARPS)


def transposed_tile(item: int, out_item: int, n0: int, n_y: int, nr: int) -> Tile:
    """The outer template with a transposed store: a [block_y, block_r, block_x] tile of
    the output's stride-1 kept group (``n_y``: ``STORE_BYTES`` of output per column, one
    32-byte sector), R, and the input's stride-1 group (``n0``: ``LINE_BYTES`` per row,
    one cache line). R fills the rest of the step's ``LOAD_BYTES`` per thread, into
    ``ACC_ELEMENTS`` accumulators per thread as in ``choose_tile``."""
    block_y = min(next_pow2(n_y), STORE_BYTES // out_item)
    block_x = min(next_pow2(n0), LINE_BYTES // item)
    load_elems = LOAD_BYTES * THREADS // item
    unroll_max = max(1, load_elems // (ACC_ELEMENTS * THREADS))
    r_step = min(next_pow2(nr), max(1, load_elems // (block_x * block_y)))
    unroll = min(unroll_max, r_step)
    return Tile(block_x, r_step // unroll, unroll, block_y)


def finish_for(split: int, block_x: int, warps: int, input_bytes: int,
               device: DeviceInfo) -> tuple[str, int]:
    """(finish, split): see the module's docstring."""
    most = TICKET_STEPS * COMBINE_ELEMENTS * 32 * warps // block_x      # partials per X block
    if split <= max(most, 1):
        return "ticket", split
    if input_bytes <= device.l2_bytes:
        return "ticket", max(1, most)
    return "kernel", split


def warps_for(tile_elements: int) -> int:
    return WARPS if tile_elements >= 4096 else 4 if tile_elements >= 1024 else 2


def estimated_registers(acc_per_thread: int) -> int:
    """ptxas's registers per thread for ``acc_per_thread`` fp32 accumulators, rounded to
    the allocation unit (8)."""
    return -(-(REG_BASE + acc_per_thread) // 8) * 8


def resident_programs(device: DeviceInfo, warps: int, acc_per_thread: int,
                      registers: int | None = None) -> int:
    """Programs of ``warps`` warps that fit on the device at once (threads and registers;
    ``registers`` per thread where known, else estimated from the accumulators)."""
    threads = 32 * warps
    by_threads = device.max_threads_per_sm // threads
    regs = registers or estimated_registers(acc_per_thread)
    by_registers = device.registers_per_sm // (threads * regs)
    return device.sm_count * max(1, min(by_threads, by_registers))


def one_wave_split(programs: int, resident: int, units: int, min_units: int) -> int:
    """The split of a 2-byte outer sum, or of outer sibling reductions (several
    accumulator tiles per program): one wave of resident programs at most (the most chunks
    of at least ``min_units`` with ``programs * split <= resident``), 1 where the programs
    already make a wave.

    Measured on the H200 (``tune-bf16-split-c8a2797.txt``, read flush): a
    bf16 outer sum runs fastest with one wave of long programs and loses 10-18% to a
    second, partial or whole, wave of shorter ones. [131072, 1024] summed over the 1024
    (256 column blocks): split 4 (1024 programs, 0.97 waves) 88.1%, split 8 (1.94 waves)
    80.8%, split 13 (3.2 waves; the two-wave rule's choice) 70.6%, unsplit 58.3%; [1024,
    512, 256] over the 512 (512 programs): split 2 86.3%, 3 (1.45 waves) 75.6%, 4 80.4%,
    unsplit 75.6%. Two fp32 sums of a column-major [8192, 8192] in one kernel
    (``tune-varsums-cd85b84.txt``; 57 registers, 4 programs per SM): split 16
    (512 programs, 0.97 waves) 68.0%, 32 (1.9 waves) 58.9%, 64 46.5%, 128 32.9%. A single
    fp32 sum keeps ``split_for_waves``: its sweep is at 86.9-97% with it."""
    if programs >= resident or units < 2 * min_units:
        return 1
    return max(1, min(MAX_SPLIT, units // min_units, resident // programs))


def split_for_waves(programs: int, resident: int, units: int, min_units: int,
                    sm_count: int) -> int:
    """How many programs share R, which is cut into ``units`` (loop steps, or outer rows)
    and at least ``min_units`` per program: 1 when there are ``SPLIT_BELOW`` programs per
    multiprocessor or more, else the split in [s, 2 s) (s: the least that reaches
    ``WAVES`` waves) whose grid wastes least of its last wave.

    Measured on the H200 (acf35ec, benchmarks/NOTES.md): once every
    multiprocessor has a few long-looping programs, a split only adds partial traffic and
    the combine: fp32 outer [256, 512, 1024] sums, 512 programs, 90.8% unsplit vs 82-86%
    split; bf16, 1024 programs, 67% unsplit vs 48% at split 3."""
    target = WAVES * resident
    if programs >= SPLIT_BELOW * sm_count or units < 2 * min_units:
        return 1
    cap = min(MAX_SPLIT, units // min_units)
    low = min(-(-target // programs), cap)
    best, best_eff = low, 0.0
    for s in range(low, min(2 * low, cap + 1)):
        total = programs * -(-units // -(-units // s))      # the split the chunks give
        eff = total / (-(-total // resident) * resident)
        if eff > best_eff + 1e-9:
            best, best_eff = s, eff
    return best
