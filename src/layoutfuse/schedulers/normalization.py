"""Normalization scheduler: reductions whose results are used again on the same rows.

The problem is canonicalized from the dominant input's layout, exactly as for a
reduction; the template follows the innermost group (``inner``: the stride-1 group
is reduced, tile ``[BLOCK_X, BLOCK_R]``; ``outer``: the stride-1 group is kept, tile
``[BLOCK_R, BLOCK_X]``, the kept stride-1 group across the tile's columns, the other
kept groups along the grid).

Modes, chosen from the reduced extent and the device:

* ``persistent``: one tile holds the whole reduced extent of its rows. Every input is
  read once; the reductions run on the tile in registers, then the outputs are
  computed from the same tile. Chosen when the tile, padded to a power of two, stays
  within ``MAX_TILE`` elements (``MAX_TILE / (32 * MAX_WARPS)`` values per thread).
* ``looped``: the reduced extent is walked in chunks once per pass, then once more to
  store. A pass serves one level of dependent reductions, except that softmax's max and
  sum share one (a running max and a rescaled running sum: the online softmax), so
  softmax, log_softmax, layer norm, RMS norm and var_mean need one pass and read their
  input twice. Inner template: each program re-reads its own contiguous rows; large
  tiles keep about one program per multiprocessor resident. Chosen when the rows do not
  fit but the kept extent fills the GPU with at least ``sm_count`` programs. Outer
  template: one program per column block, tile ``[BLOCK_R, BLOCK_X]`` with rows of
  ``LOOP_ROW_BYTES`` (``LOOP_OUTER_TILE`` elements, ``LOOP_OUTER_WARPS`` warps); chosen
  when the columns do not fit, one pass suffices and the blocks fill the GPU. A
  hand-written probe of this two-pass walk (``benchmarks/probe_outer.py``, softmax over the
  strided dim, fp32 tile 128x32, 8 warps) read at 53-59% of the read ceiling on the
  H200 ([8192, 8192] column-major: 52.7%; [32, 4096, 4096], memory order (0, 2, 1):
  59%): below the 80% target, but above the segmented plan's 41-44% (its reduction
  kernels, then a pointwise kernel: three reads and a write); 32- and 64-byte rows ran
  at 37-50%. The generated kernel (27efa6a, ``benchmarks/NOTES.md``): softmax
  50% fp32 on [8192, 8192] column-major, layer norm 42%; 36/31% bf16 with rows narrowed
  to 64 bytes where 128-byte blocks are too few (do_bench's flush; with the read flush of
  session 4, 1e0ed66: 52/45% fp32, 38/37% bf16). Groups that need more passes go
  segmented, and so do sibling reductions alone (one split reduction kernel reads them
  once: 68.5% fp32 for two sums of the column-major [8192, 8192], 04daff0).
* ``segmented``: the rows do not fit and looping does not pay (few, very long rows;
  strided columns that need more than one pass): each reduction runs as its own (split)
  reduction kernel, then pointwise kernels (the segment's fallback plan); softmax's max
  and sum share one reduction kernel (a running max and a rescaled running sum per lane,
  ``KernelSpec.online``), so its input is read twice, not three times: [64, 262144]
  37.8% -> 52.1% fp32, 29.7% -> 38.2% bf16 (``profile-longrow-da56573``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.device import DeviceInfo
from ..intmath import cdiv, next_pow2, prod
from ..segmenter.segments import KernelSpec
from .launch import LaunchSpec
from .problem import Problem, stride_flags

NAME = "normalization"
MAX_TILE = 32768          # elements of a persistent tile: 64 fp32 values per thread at 16
                          # warps (ptxas: 128 registers, no spills, for softmax and layer norm)
MAX_WARPS = 16
ROW_BYTES = 64            # outer template: bytes of the stride-1 kept group per tile row
INNER_TILE_BYTES = 16384  # inner template: rows per program up to this many bytes
MIN_ROW_BYTES = 32        # ... at least (one sector), when only that fits the whole column
THREAD_BYTES = 64         # bytes of input a thread holds per tile (sets the warps)
EPILOGUE_OUTER_TILE = 4096
LOOP_TILE = 16384         # elements of a looped tile, at MAX_WARPS: about one program per
                          # multiprocessor, so the rows being re-read (sm_count programs'
                          # worth) stay in L2 between passes
LOOP_ROW_BYTES = 256      # outer looped: bytes of the stride-1 kept group per tile row, halved
                          # down to MIN_ROW_BYTES until the column blocks fill the GPU
REDUCE_ROW_BYTES = 1024   # reductions only (rows=False), outer: bytes per tile row at most,
REDUCE_MIN_ROW_BYTES = 128  # ... halved down to this,
REDUCE_STEP_BYTES = 8192  # ... bytes per loop step (fp32 [8, 256]),
REDUCE_WAVES = 2          # ... and programs per multiprocessor the column blocks must make
LOOP_OUTER_TILE = 4096    # outer looped: elements of the tile (128x32 fp32 in the probe)
LOOP_OUTER_WARPS = 8
LOOP_FEW_BLOCKS = 4       # outer looped: fewer column blocks per multiprocessor than this
                          # take more warps (see ``_outer_loop``)


@dataclass(frozen=True)
class NormalizationParams:
    scheduler: str
    family: str                   # "inner", "outer" or "mixed" (the canonical pattern)
    template: str                 # "inner" or "outer"
    mode: str                     # "persistent", "looped" or "segmented"
    x_groups: tuple[int, ...]
    r_groups: tuple[int, ...]
    block_x: int
    block_r: int
    num_warps: int
    passes: int                   # looped reduction passes (softmax's max and sum share one)
    index64: bool
    zero_strides: tuple[tuple[bool, ...], ...]
    unit_strides: tuple[tuple[bool, ...], ...]
    n_groups: int

    @property
    def pattern(self) -> str:
        """The canonical groups' kinds, innermost first ("RX": reduced, then kept)."""
        reduced = set(self.r_groups)
        return "".join("R" if k in reduced else "X" for k in range(self.n_groups))


@dataclass(frozen=True)
class _Plan:
    """The mode and tile the rules choose, and why (what ``fd.segment()`` reports)."""

    template: str
    mode: str
    block_x: int
    block_r: int
    warps: int
    why: str


def can_schedule(segment: KernelSpec, p: Problem | None, device: DeviceInfo) -> str | None:
    """A normalization group whose rows one kernel serves; otherwise why not (its segment
    then runs its finer plan: reduction kernels, then pointwise kernels)."""
    if segment.group is None:
        return "no reduction whose results are used again on its rows"
    if p is None:
        return "empty or mismatched extents"
    if p.generic:
        return "an access is not affine (a reshape that is not a view)"
    if not any(g.reduced for g in p.groups):
        return "nothing is reduced (size-1 reduced dims)"
    plan = _plan(p, device)
    return plan.why if plan.mode == "segmented" else None


def reason(p: Problem, device: DeviceInfo) -> str:
    """Why the heuristics chose their mode and tile."""
    plan = _plan(p, device)
    return f"{plan.mode}: {plan.why}"


def heuristics(p: Problem, device: DeviceInfo) -> NormalizationParams:
    """The persistent or looped kernel's params (``can_schedule`` accepted the problem).

    ``p.loop=False`` (a reduction with only a per-row epilogue): a tile that does not hold
    the rows goes to the reduction scheduler's kernels (segmented) instead of looping.
    ``p.rows=False`` (reductions whose results feed only per-row outputs, as sibling
    reductions do): nothing is read twice, so strided columns take the reduction
    scheduler's wide outer steps when there are enough column blocks (``_reduce_only``),
    else the fallback's split reduction kernel for all of them (``_outer_loop``)."""
    plan = _plan(p, device)
    xg, rg, _, _ = p.kept_and_reduced()
    zero, unit = stride_flags(p)
    return NormalizationParams(NAME, p.family, plan.template, plan.mode, xg, rg, plan.block_x,
                               plan.block_r, plan.warps, p.passes, p.needs_int64, zero, unit,
                               len(p.groups))


def _plan(p: Problem, device: DeviceInfo) -> _Plan:
    """The mode (persistent, looped or segmented), the tile and the warps."""
    groups = p.groups
    xg, rg, nx, nr = p.kept_and_reduced()
    item = p.narrowest_load_bytes()
    loop, rows, passes = p.loop, p.rows, p.passes
    template = "inner" if groups and groups[0].reduced else "outer"
    if not xg:
        template = "inner"
    why = None
    mode = "persistent"
    if template == "inner":
        block_r = next_pow2(nr)
        block_x = max(1, min(next_pow2(nx), INNER_TILE_BYTES // (block_r * item)))
    else:
        # columns: 64 bytes of the stride-1 kept group per row (a whole DRAM burst); 32-byte
        # rows when only they let the whole reduced extent fit the tile
        n0 = groups[0].size
        block_r = next_pow2(nr)
        block_x = min(next_pow2(n0), max(1, ROW_BYTES // item))
        if block_x * block_r > MAX_TILE:
            block_x = min(next_pow2(n0), max(1, MIN_ROW_BYTES // item))
    # an epilogue-only outer reduction keeps one small tile: beyond it the reduction
    # scheduler's wider outer tiles (and its split) read faster, and the epilogue runs after
    limit = MAX_TILE if loop or template == "inner" else EPILOGUE_OUTER_TILE
    warps = 0
    wide = _reduce_only(p, device) if (template == "outer" and loop and not rows) else None
    if wide is not None:
        mode, (block_x, block_r, warps) = "looped", wide
        why = (f"columns of {nr} elements, reductions only: one pass over "
               f"{block_r}x{block_x} steps, as the reduction scheduler's outer kernels")
    elif block_x * block_r > limit:
        mode = "looped"
        if not loop:
            mode = "segmented"
            why = (f"rows of {nr} elements exceed a {limit}-element tile: the reduction "
                   "kernel, then the epilogue")
        elif template == "outer":
            mode, block_x, block_r, warps, why = _outer_loop(p, device, passes, rows)
        else:
            block_x = 1 if nx >= device.sm_count else block_x
            block_r = min(next_pow2(nr), LOOP_TILE // block_x)
            programs = -(-nx // block_x)
            if programs < device.sm_count:
                mode = "segmented"
                why = (f"{programs} programs of rows too long for one pass cannot fill "
                       f"{device.sm_count} multiprocessors: split reductions instead")
            else:
                why = (f"rows of {nr} elements exceed a {MAX_TILE}-element tile: "
                       f"{passes + 1} passes")
    else:
        why = f"rows of {nr} elements fit a {block_x}x{block_r} tile: one read"
    tile = block_x * block_r
    warps = warps or max(1, min(MAX_WARPS, tile * item // (32 * THREAD_BYTES)))
    return _Plan(template, mode, block_x, block_r, warps, why)


def _column_blocks(p: Problem, row: int, min_row: int, want: int) -> tuple[int, int]:
    """(BLOCK_X, programs) of the outer template with tile rows of ``row`` bytes of the
    stride-1 kept group, halved down to ``min_row`` until the column blocks make ``want``
    programs."""
    _, _, nx, _ = p.kept_and_reduced()
    n0, item = p.groups[0].size, p.narrowest_load_bytes()
    while True:
        block_x = min(next_pow2(n0), max(1, row // item))
        programs = -(-n0 // block_x) * (nx // n0)
        if programs >= want or row <= min_row:
            return block_x, programs
        row //= 2


def _reduce_only(p: Problem, device: DeviceInfo) -> tuple[int, int, int] | None:
    """(BLOCK_X, BLOCK_R, warps) of one pass over strided columns for reductions whose
    results feed only per-row outputs: steps of ``REDUCE_STEP_BYTES`` (the reduction
    scheduler's fp32 [8, 256]: 91% of the read ceiling on the H200), rows of
    ``REDUCE_ROW_BYTES`` halved down to ``REDUCE_MIN_ROW_BYTES`` until the column blocks make
    ``REDUCE_WAVES`` programs per multiprocessor. None where the columns are shorter than
    two steps (a persistent tile reads them as fast) or the blocks stay too few."""
    _, _, nx, nr = p.kept_and_reduced()
    item = p.narrowest_load_bytes()
    block_x, programs = _column_blocks(p, REDUCE_ROW_BYTES, REDUCE_MIN_ROW_BYTES,
                                       REDUCE_WAVES * device.sm_count)
    block_r = min(next_pow2(nr), max(1, REDUCE_STEP_BYTES // (block_x * item)))
    if programs < REDUCE_WAVES * device.sm_count or nr < 2 * block_r:
        return None
    return block_x, block_r, LOOP_OUTER_WARPS


def _outer_loop(p: Problem, device: DeviceInfo, passes: int,
                rows: bool = True) -> tuple[str, int, int, int, str]:
    """Mode, BLOCK_X, BLOCK_R, warps and reason for outer columns too long for one tile:
    one program per column block walks it twice (the reductions' pass, then the store),
    when one pass suffices and the blocks fill the GPU (rows of ``LOOP_ROW_BYTES``, halved
    down to ``MIN_ROW_BYTES`` where that makes enough blocks: the probe's bf16 [8192, 8192]
    column-major softmax ran at 43% with 64-byte rows, the segmented plan at 33%); else
    the segmented plan.

    Tiles of ``LOOP_OUTER_TILE`` elements at ``LOOP_OUTER_WARPS`` warps; where the column
    blocks are fewer than ``LOOP_FEW_BLOCKS`` per multiprocessor, more warps, so the few
    programs on each multiprocessor keep enough loads in flight: for 2-byte inputs twice
    the tile at twice the warps (the same values per thread), for wider ones the tile at 4
    times the warps (4 values per thread: column-major [8192, 8192] fp32 layer norm 58.8%
    of the ceiling against 54.7% with twice both, softmax 57.9% against 58.4-58.7%;
    bf16 softmax lost 46.1 -> 42.5% that way, ``tune-normalization-rows-cdc5253``).
    Measured on the H200 (``tune-normalization-tiles-d1bdc57.txt``, the column-major
    [8192, 8192], 256 blocks): 8192 elements at 16 warps against 4096 at 8,
    softmax fp32 2591 vs 2288 GB/s, layer norm 2413 vs 1978, bf16 2039 vs 1663 and 2090
    vs 1616; 16384 at 8 warps 1017-2287. With 2048 blocks ((0, 2, 1) [32, 4096, 4096]
    bf16) 8192-element tiles lose: 2049 vs 2450 (softmax), 1848 vs 2354. There (1024 blocks
    of 256-byte rows) 256-byte rows beat 128-byte ones (``tune-normalization-nanmax-1f4059a``:
    layer norm bf16 2490 vs 2358 GB/s, softmax 2468 vs 2445); 512-byte rows gain no more
    (``tune-normalization-rows-cdc5253``)."""
    _, _, nx, nr = p.kept_and_reduced()
    # narrower rows (down to a sector) where the blocks are too few
    block_x, programs = _column_blocks(p, LOOP_ROW_BYTES, MIN_ROW_BYTES, device.sm_count)
    tile, warps = LOOP_OUTER_TILE, LOOP_OUTER_WARPS
    if programs < LOOP_FEW_BLOCKS * device.sm_count:
        if p.narrowest_load_bytes() >= 4:
            warps *= 4
        else:
            tile, warps = tile * 2, warps * 2
    block_r = min(next_pow2(nr), max(1, tile // block_x))
    too_long = f"columns of {nr} elements exceed a {MAX_TILE}-element tile"
    if not rows:
        # sibling reductions alone (rows=False with loop=True): too few column blocks for
        # the wide steps of ``_reduce_only``, so one split reduction kernel computes them
        # all from one read (the fallback), as the reduction scheduler splits R
        return "segmented", block_x, block_r, warps, (
            f"{too_long}; too few column blocks for one pass of wide steps: one split "
            "reduction kernel for the sibling reductions")
    if passes > 1:
        # each further pass re-reads strided columns; the reduction scheduler's outer
        # kernels, then a pointwise kernel, read at ~90% each
        return "segmented", block_x, block_r, warps, (
            f"{too_long} and need {passes} passes: outer reduction kernels, then the "
            "pointwise kernel")
    if programs < device.sm_count:
        return "segmented", block_x, block_r, warps, (
            f"{too_long}; {programs} column blocks cannot fill {device.sm_count} "
            "multiprocessors: split reductions instead")
    walks = passes + 1 if rows else passes          # the store pass, where rows are stored
    return "looped", block_x, block_r, warps, (
        f"{too_long}: {walks} pass{'es' if walks > 1 else ''} over {block_r}x{block_x} "
        "column blocks")


def grid(params: NormalizationParams, sizes) -> int:
    """Programs: row blocks (inner), or column blocks times the other kept groups (outer)."""
    nx = prod(sizes[k] for k in params.x_groups)
    if params.template == "inner":
        return cdiv(nx, params.block_x)
    n0 = sizes[params.x_groups[0]]
    return cdiv(n0, params.block_x) * (nx // n0)


def launches(segment: KernelSpec, p: Problem,
             params: NormalizationParams) -> tuple[LaunchSpec, ...]:
    """One launch: the grid, the kept and reduced extents and the column blocks."""
    sizes = p.sizes
    _, _, nx, nr = p.kept_and_reduced()
    npx = cdiv(sizes[params.x_groups[0]], params.block_x) if params.template == "outer" else 1
    return (LaunchSpec(0, (grid(params, sizes),), (("NX", nx), ("NR", nr), ("NPX", npx))),)
