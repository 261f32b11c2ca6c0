"""Scan scheduler: one per-row op along one dim (cumsum, argsort, topk) with its prologue.

The canonical groups keep the scanned dim apart (it is the one reduced group, R; absent
when its extent is 1); every other group is a row coordinate. A program takes
``BLOCK_R`` rows and walks their scanned dim in blocks of ``BLOCK_N``. Which memory
order the rows have only changes the strides: the tile's stride-1 side (the scanned dim,
or the rows) is what Triton coalesces.

cumsum has three modes:

* ``block``: the row fits one tile (``next_pow2(N) <= max_block``; where the stride-1
  dim is a row coordinate, the tile spans ``outer_rows`` rows and what is left of
  ``tile_elements`` along the scanned dim): one ``tl.cumsum``;
* ``loop``: a longer row, with enough row tiles to fill the device: each program walks
  its rows' chunks in order, carrying the running sum;
* ``split``: a longer row with few row tiles: three launches. A block-sum pass writes
  each chunk's sum to a workspace, a second pass turns each row's chunk sums into
  running sums (in place), and the last pass scans each chunk again, starting from the
  running sum of the chunks before it. Every chunk runs in its own program.

argsort and topk order (value, index) pairs: NaN the largest, -0.0 equal to 0.0, ties
by the lower index, as torch's stable sort. A value of at most 32 bits (Float, Half,
BFloat16, fp8, Int32, Bool) is packed with its index in one int64 whose ascending order
is the result's (``packed``, ``codegen.packed_keys``: the order transform of the value,
complemented when descending, in the high half; the index in the low half), so every
compare below is one int64 compare; fp64 and int64 keep the pairs
(``codegen.sort_network``). They sort a row in one tile (mode ``block``: a bitonic
network) when ``next_pow2(N) <= max_sort_block``. A longer
row is ranked (mode ``rank``): a program per ``rank_block`` elements of a row counts, for
each, the elements of the whole row that sort before it, walking the row in blocks, and
stores the element at that position. That is O(N**2) compares per row (a fallback that
is correct for any length, not fast: a merge of sorted tiles would be O(N log N)).

topk of a small k selects instead (mode ``select``): k passes, each a reduction over the
row that picks the first pair in that order (packed: the least key, ``tl.min``) after the
pass before's pick, stored at the pass's position (so the
result is sorted, also for ``sorted=False``). A row that fits a sort tile stays in
registers (each pick is taken out of the tile for the next pass) when ``k <=
select_max_k``: k reductions over the tile cost less than the bitonic network's
``log2(N)**2 / 2`` steps. A longer row is walked in chunks of ``select_chunk`` per pass
(re-read from L2), a row per program, when ``k <= select_max_k_long``: ``k * N``
compares against the rank's ``N**2``.

Integers accumulate in Int (int64), Half/BFloat16 in Float.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.device import DeviceInfo
from ..dtypes import DataType
from ..intmath import cdiv, next_pow2
from ..ir.ops.scans import accumulates_in
from ..segmenter.segments import KernelSpec
from .launch import LaunchSpec, Workspace
from .problem import Problem
from .warps import WarpSteps, warps_for

NAME = "scan"
SORTS = ("argsort", "topk")


@dataclass(frozen=True)
class ScanTuning:
    """The scan scheduler's knobs (see the module's docstring)."""

    # a cumsum row up to this many elements is one tile (mode ``block``)
    max_block: int = 4096
    # rows of a cumsum tile where the stride-1 dim is a row coordinate (not the scanned
    # one): 256 bytes of fp32 per access; the tile walks the scanned dim in blocks
    outer_rows: int = 64
    # elements of a cumsum tile (rows x the scanned block)
    tile_elements: int = 4096
    # a longer row's chunk, in elements (modes ``loop`` and ``split``)
    chunk: int = 2048
    # ``loop`` when the row tiles reach this many per multiprocessor, else ``split``
    loop_tiles_per_sm: int = 2
    # rows of chunk sums one program of the split's middle pass scans at a time
    sums_block: int = 1024
    # a sorted row up to this many elements (padded to a power of two) is one tile
    max_sort_block: int = 2048
    # elements of a sort tile (rows x the padded row)
    sort_tile_elements: int = 2048
    # a longer sorted row: elements one program ranks, and the row block it compares with
    rank_block: int = 64
    # topk selects (mode ``select``) up to this k where the row fits a sort tile
    select_max_k: int = 16
    # ... and up to this k where it does not (rather than rank)
    select_max_k_long: int = 256
    # a longer row's chunk in mode ``select``, in elements
    select_chunk: int = 1024
    # warps by tile elements, (least elements, warps) steps
    warps: WarpSteps = ((4096, 8), (512, 4), (0, 2))
    # sort keys of at most 32 bits packed with their index in one int64 (argsort, topk):
    # a compare-exchange is one int64 min and max instead of a NaN-aware (key, index)
    # compare carrying two tensors (about half the sm_90 instructions of a 2048-element
    # sort); False keeps the pairs, for an A/B on the GPU
    packed_keys: bool = True


DEFAULT_TUNING = ScanTuning()


@dataclass(frozen=True)
class ScanParams:
    scheduler: str
    op: str  # cumsum, argsort or topk
    mode: str  # block, loop or split (cumsum); block or rank (argsort, topk); select (topk)
    n_groups: int
    scan_group: int | None  # the scanned dim's group (None: its extent is 1)
    block_r: int
    block_n: int
    num_warps: int
    index64: bool
    descending: bool = False  # argsort descending, topk largest
    sums_block: int = 0  # split: the middle pass's block of chunk sums
    accumulator: DataType = DataType.Float  # cumsum's
    based: tuple[int, ...] = ()  # accesses with a base offset ``b<a>`` bound at launch (a
    #   slice's start, where the problem has them)
    in_tile: bool = True  # select: the row is one tile (else walked in chunks per pass)
    packed: bool = False  # argsort, topk: keys packed with their index in one int64

    @property
    def pattern(self) -> str:
        return "S" + "X" * (self.n_groups - (self.scan_group is not None))


def _scan_extent(p: Problem) -> int:
    return next((g.size for g in p.groups if g.reduced), 1)


def _scan_group(p: Problem) -> int | None:
    return next((k for k, g in enumerate(p.groups) if g.reduced), None)


def rows(p: Problem) -> int:
    """Independent rows: every element but the scanned dim's."""
    return p.numel // _scan_extent(p)


def can_schedule(
    segment: KernelSpec, p: Problem | None, device: DeviceInfo, tuning: ScanTuning = DEFAULT_TUNING
) -> str | None:
    """A scan segment whose accesses are all affine."""
    if segment.scan is None:
        return "the segment has no scan"
    if p is None:
        return "no problem could be built for the segment's extents"
    if p.generic:
        return "a load crosses a reshape that is not a view (scan kernels need strides)"
    return None


def heuristics(p: Problem, device: DeviceInfo, tuning: ScanTuning = DEFAULT_TUNING) -> ScanParams:
    n, nrows = _scan_extent(p), rows(p)
    acc = accumulates_in(p.dtypes[p.n_loads]) if p.scan_op == "cumsum" else DataType.Float
    fits = next_pow2(n) <= tuning.max_sort_block
    if p.scan_op == "topk" and _selects(p, tuning):
        mode = "select"
        block_n = next_pow2(n) if fits else min(tuning.select_chunk, next_pow2(n))
        block_r = min(next_pow2(nrows), max(1, tuning.sort_tile_elements // block_n)) if fits else 1
    elif p.scan_op in SORTS and not fits:
        mode, block_n, block_r = "rank", tuning.rank_block, 1
    elif p.scan_op in SORTS:
        mode, block_n = "block", next_pow2(n)
        block_r = min(next_pow2(nrows), max(1, tuning.sort_tile_elements // block_n))
    else:
        if p.groups and not p.groups[0].reduced:
            # the stride-1 side is a row coordinate: a tile spans outer_rows of it, so
            # every load and store moves whole segments, and walks the dim in blocks
            block_r = min(next_pow2(nrows), tuning.outer_rows)
            block_n = min(next_pow2(n), max(1, tuning.tile_elements // block_r))
        else:
            block_n = next_pow2(n) if next_pow2(n) <= tuning.max_block else tuning.chunk
            block_r = min(next_pow2(nrows), max(1, tuning.tile_elements // block_n))
        tiles = cdiv(nrows, block_r)
        if block_n >= n:
            mode = "block"
        else:
            mode = "loop" if tiles >= tuning.loop_tiles_per_sm * device.sm_count else "split"
    return ScanParams(
        NAME,
        p.scan_op,
        mode,
        len(p.groups),
        _scan_group(p),
        block_r,
        block_n,
        # a rank program compares a [block_n, block_n] tile
        warps_for(block_n * block_n if mode == "rank" else block_r * block_n, tuning.warps),
        p.needs_int64,
        p.descending,
        # the middle pass's tile has the others' elements
        min(tuning.sums_block, max(1, tuning.tile_elements // block_r)) if mode == "split" else 0,
        acc,
        tuple(getattr(p, "based", ())),
        mode != "select" or fits,
        packed=packs(p, tuning),
    )


# keys of at most 32 bits: their order fits the high half of a packed key
PACKED_DTYPES = frozenset(
    {
        DataType.Float,
        DataType.Half,
        DataType.BFloat16,
        DataType.Float8_e4m3fn,
        DataType.Float8_e5m2,
        DataType.Int32,
        DataType.Bool,
    }
)


def packs(p: Problem, tuning: ScanTuning) -> bool:
    """Whether an argsort's or topk's keys pack with their index in one int64
    (``codegen.packed_keys``): at most 32 bits, a row's index below 2**31."""
    return (
        tuning.packed_keys
        and p.scan_op in SORTS
        and p.scan_dtype in PACKED_DTYPES
        and _scan_extent(p) < 2**31
    )


def _selects(p: Problem, tuning: ScanTuning) -> bool:
    """Whether a topk selects its k (mode ``select``) rather than sorting or ranking."""
    fits = next_pow2(_scan_extent(p)) <= tuning.max_sort_block
    return p.scan_keep <= (tuning.select_max_k if fits else tuning.select_max_k_long)


def reason(p: Problem, device: DeviceInfo, tuning: ScanTuning = DEFAULT_TUNING) -> str:
    params = heuristics(p, device, tuning)
    n = _scan_extent(p)
    why = {
        "block": f"rows of {n} fit a tile of {params.block_n}",
        "rank": (
            f"rows of {n} exceed a sort tile (max_sort_block {tuning.max_sort_block}): each "
            f"element ranked against its whole row, {params.block_n} at a time (O(N**2))"
        ),
        "select": (
            f"k={p.scan_keep} of rows of {n}: k passes, each a reduction picking the next "
            "(value, index) pair, "
            + (
                f"the row held in a tile of {params.block_n} (k <= select_max_k "
                f"{tuning.select_max_k})"
                if params.in_tile
                else f"the row walked in chunks of {params.block_n} a pass (k <= "
                f"select_max_k_long {tuning.select_max_k_long})"
            )
        ),
        "loop": f"rows of {n} walked in chunks of {params.block_n}, a running sum carried",
        "split": (
            f"rows of {n} in {cdiv(n, params.block_n)} chunks each, too few rows to fill the "
            "device: chunk sums, their running sums, then each chunk"
        ),
    }[params.mode]
    return f"mode {params.mode}: {why}"


def chunks(p: Problem, params: ScanParams) -> int:
    return cdiv(_scan_extent(p), params.block_n)


def launches(segment: KernelSpec, p: Problem, params: ScanParams) -> tuple[LaunchSpec, ...]:
    """One launch per row tile (``block``, ``loop``); ``split``: chunk sums, their running
    sums, the scan (kernels 0, 1, 2)."""
    nrows = rows(p)
    tiles = cdiv(nrows, params.block_r)
    if params.mode == "rank":
        tiles = nrows * cdiv(_scan_extent(p), params.block_n)
    values: tuple[tuple[str, int], ...] = (("ROWS", nrows), ("K", p.scan_keep))
    if params.mode != "split":
        return (LaunchSpec(0, (tiles,), values),)
    nc = chunks(p, params)
    values += (("NUM_CHUNKS", nc),)
    return (
        LaunchSpec(0, (tiles * nc,), values),
        LaunchSpec(1, (cdiv(nrows, params.block_r),), values),
        LaunchSpec(2, (tiles * nc,), values),
    )


def workspaces(segment: KernelSpec, p: Problem, params: ScanParams) -> tuple[Workspace, ...]:
    """``split``: every chunk's sum, then its running sum, [rows x chunks]."""
    if params.mode != "split":
        return ()
    return (Workspace("ws0", (rows(p) * chunks(p, params),), params.accumulator),)
