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
  within ``max_tile`` elements (``max_tile / (32 * max_warps)`` values per thread).
* ``looped``: the reduced extent is walked in chunks once per pass, then once more to
  store. A pass serves one level of dependent reductions, except that softmax's max and
  sum share one (a running max and a rescaled running sum: the online softmax), so
  softmax, log_softmax, layer norm, RMS norm and var_mean need one pass and read their
  input twice. Inner template: each program re-reads its own contiguous rows; large
  tiles keep about one program per multiprocessor resident. Chosen when the rows do not
  fit but the kept extent fills the GPU with at least ``sm_count`` programs. Outer
  template: one program per column block, tile ``[BLOCK_R, BLOCK_X]`` with rows of
  ``loop_row_bytes`` (``loop_outer_tile`` elements, ``loop_outer_warps`` warps); chosen
  when the columns do not fit, one pass suffices and the blocks of rows of at least a
  line (``loop_min_row_bytes``) fill the GPU. Walking strided columns twice reads below
  the target, but above the segmented plan (its reduction kernels, then a pointwise
  kernel) in rows of a line or more; in narrower rows the segmented plan read 2x faster.
  Groups that need more passes go segmented, and so do sibling reductions alone (one
  split reduction kernel reads them once).
* ``segmented``: the rows do not fit and looping does not pay (few, very long rows;
  strided columns that need more than one pass): each reduction runs as its own (split)
  reduction kernel, then pointwise kernels (the segment's fallback plan); softmax's max
  and sum share one reduction kernel (a running max and a rescaled running sum per lane,
  ``KernelSpec.online``), so its input is read twice, not three times.

Cross reductions (``Group.cross``: reductions over the kept dims beside the rows, a layer
norm backward's dw and db) run in the persistent mode only: ``row_programs`` programs
(``cross_warps_per_sm`` warps per multiprocessor) walk the row blocks, each adding its
rows into one fp32 partial per column held in registers, stored once at its end into a
``[row_programs, NR]`` workspace; a finishing kernel combines each column's partials in
program order (``cross_finish_*``). The row loop prefetches (``cross_prefetch``): each
iteration issues the next block's loads before its own reductions and stores, so a
program's loads are in flight while it computes (1.7-2.1x on the H100 against the plain
loop, ``tune-cross-20261205-aeb0365-h100``); its tiles are sized (``cross_tile_bytes``,
``cross_thread_bytes``) so that two programs per multiprocessor and their prefetched
blocks fit the register file. Rows that do not fit a tile reject the segment, whose
finer plan is the group's kernel without them, then one reduction kernel for all of them.

The knobs are the fields of ``NormalizationTuning``; the measurements behind them: see
benchmarks/NOTES.md, "Measurements behind the heuristics".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..analysis.accesses import indexed_by, is_indirect
from ..analysis.device import DeviceInfo
from ..dtypes import itemsize
from ..intmath import cdiv, int32_factor, next_pow2, prod
from ..ir.ops.reductions import accumulator_dtype, copies_scale
from ..segmenter.segments import KernelSpec
from .launch import LaunchSpec, Workspace
from .measure import Overrides
from .problem import Problem, generic_fields, store_group, stride_flags
from .warps import THREADS_PER_WARP

NAME = "normalization"


@dataclass(frozen=True)
class NormalizationTuning:
    """The normalization scheduler's knobs, one per rule (see the module's docstring)."""

    # elements of a persistent tile: 64 fp32 values per thread at 16 warps, no spills
    max_tile: int = 32768
    # a group whose results feed no row, over an expanded reduced dim whose copies
    # would be read as this many bytes or more, takes its finer plan (the reduction
    # kernel leaves the copies out): about the reading a launch costs
    copies_min_bytes: int = 4 << 20
    # a group whose results feed no row, over outer columns, whose stores walk another
    # kept group with stride 1, takes the reduction kernel (its transposed tile); 0: kept
    rowless_stores: int = 1
    # warps of a program at most
    max_warps: int = 16
    # bytes of input a thread holds per tile: they set the warps
    thread_bytes: int = 64
    # inner template: rows per program up to this many bytes. H100 at f459f48
    # (tune-ab27-20261206-f459f48-h100.txt), the 43 seed cases 8192 changes against 16384:
    # geomean 1.041x, a layer norm over rows of 307 bf16 1846 -> 2250 GB/s, an RMS norm
    # over rows of 151 943 -> 1078, nanoGPT's [8192, 768] bf16 layer norm 13.9 -> 13.3 us
    # (ln-tiles-20261206-b1b6ce2-h100.txt); three lost 5-8% (fp32 rows of 112 and 2048)
    inner_tile_bytes: int = 8192
    # outer persistent: bytes of the stride-1 kept group per tile row (a whole DRAM burst)
    row_bytes: int = 64
    # ... at least this many (one sector), when only that lets the whole column fit
    min_row_bytes: int = 32
    # an outer reduction with only a per-row epilogue: its tile at most (beyond: reductions)
    epilogue_outer_tile: int = 4096
    # outer persistent, short columns: rows widen until the tile holds this many elements
    short_column_tile: int = 4096
    # ... this many where the rows are not 16-byte aligned (a load's stride along R, in
    # bytes, no multiple of 16: its columns load an element at a time, and twice the
    # elements a thread keep twice the bytes in flight). H100 at f677978 (tune-ab24), GB/s
    # against 4096: a layer norm over 61 rows 694173 apart 2271 -> 2600 (torch.compile
    # 2843), a log_softmax over 127 rows 399550 apart 1939 -> 2323, a layer norm over 251
    # rows 209 apart 1894 -> 2173; aligned rows lost (336 apart: 1703 -> 1217)
    scalar_column_tile: int = 8192
    # ... while the column blocks make this many programs per multiprocessor
    short_column_waves: int = 2
    # ... for loads of at least this many bytes (measured, H200 at 6cd3542: fp32 layer
    # norm over 61 rows 1824 -> 2964 GB/s, log_softmax over 127 rows 1950 -> 2472; an fp16
    # softmax over 28 rows 3557 -> 1246)
    short_column_min_item: int = 4
    # ... and its columns span two kept groups only below this many elements (a [4, 2] tile
    # of a log_softmax over dim 0 of [2, 3, 50257]: 69 -> 357 GB/s spanning dims 1 and 2)
    span_below: int = 256
    # inner looped: elements of a tile at max_warps (one program per SM: re-read rows stay in L2)
    loop_tile: int = 16384
    # inner looped: warps where the rows in flight at the tile's warps overflow half of
    # L2 (fewer programs resident, so the store pass re-reads from L2); 0: off. Measured
    # (H200, 6cd3542): bf16 RMS norm rows of 65954 1432 -> 1943 GB/s, of 50257 1314 -> 1742
    loop_l2_warps: int = 32
    # inner looped, a row a program: rows that Triton cannot prove aligned are walked from
    # their first element on a boundary of this many bytes (``aligned_rows``; 0: off)
    align_row_bytes: int = 16
    # ... and an inner persistent tile of a row a program: its lanes start on the
    # boundary before the row, so that its row loads and stores are vectors
    # (``aligned_rows``); 0: off (not yet timed on a GPU)
    align_persistent: int = 0
    # inner kernels: the row length and row strides passed divided by their power-of-two
    # factor, which the kernel multiplies back (``size_factors``); 0: passed as they are
    size_factors: int = 1
    # outer looped: bytes of the stride-1 kept group per tile row, halved to
    # loop_min_row_bytes (fewer column blocks than multiprocessors: the segmented plan)
    loop_row_bytes: int = 256
    # ... a cache line: a bf16 log_softmax over 128256 strided rows of [4, 1695] ran 651
    # GB/s looped in rows of 64 bytes (212 blocks) against 1298 segmented (a split online
    # reduction in rows of 1 KB, then the pointwise kernel; H100 at 4170aed,
    # tune-ab18-20261206-4170aed-h100.txt, r1_021: torch.compile 1177)
    loop_min_row_bytes: int = 128
    # outer looped: column blocks per multiprocessor at least (fewer: the segmented plan).
    # A bf16 RMS norm of 1.8 blocks a multiprocessor (r3_017) ran 1702 GB/s segmented
    # against 1207 looped (H100 at 5160442, tune-ab69-20261207-5160442-h100.txt); session
    # 18's r1_021 ran 2x faster segmented at 1.6
    loop_min_blocks: int = 2
    # looped rows: Triton's pipelining stages of each walk along R (1: a plain loop)
    looped_stages: int = 1
    # ... fewer where each further stage's buffers (a tile of every load, for every walk)
    # would pass this many bytes of shared memory (sm_90 gives a program up to 227 KB; the
    # rest holds the reductions' scratch). Compiled for sm_90: an fp32 softmax's 16384
    # tile took 128 KB at 2 stages, 256 KB at 3, which no multiprocessor holds
    looped_stage_bytes: int = 131072
    # outer looped only where the column blocks in flight fit half of L2 (their store pass
    # re-reads them); else the segmented plan, whose kernels each stream. An fp32 softmax
    # over 3192 strided rows, 1054 blocks of 256-byte rows: looped 1366 us, segmented
    # 1095 (r3_088, H100 at c85f287, tune-ab71-20261207-c85f287-h100.txt); the fixed
    # suite's column-major [8192, 8192] fp32 softmax and layer norm 274 -> 269 us, the
    # [32, 4096, 4096] bf16 layer norm over the middle dim 1105 -> 1065. Not for the
    # online softmax pair over 2-byte loads (``_past_l2``): the bf16 softmax there 1126
    # -> 1283, r3_101's log_softmax 556 -> 718 (tune-ab73-20261207-e0952d7-h100.txt).
    # 0: off
    loop_outer_l2: int = 1
    # ... the online pair over 2-byte loads stays looped past half of L2 (1); 0: segmented
    loop_online_narrow: int = 1
    # outer looped: elements of the tile (128 x 32 fp32 in the probe)
    loop_outer_tile: int = 4096
    # outer looped: warps of the tile
    loop_outer_warps: int = 8
    # outer looped: fewer column blocks per SM than this take more warps (loads in flight)
    loop_few_blocks: int = 4
    # ... 4-byte and wider inputs: the tile at this many times the warps
    few_blocks_wide_warps_scale: int = 4
    # ... narrower inputs: this many times the tile and the warps (the same values per thread)
    few_blocks_narrow_scale: int = 2
    # reductions only (rows=False), outer: bytes per tile row at most
    reduce_row_bytes: int = 1024
    # ... halved down to this
    reduce_min_row_bytes: int = 128
    # ... bytes per loop step (the reduction scheduler's fp32 [8, 256])
    reduce_step_bytes: int = 8192
    # ... programs per SM the column blocks must make (else the split reduction kernel)
    reduce_waves: int = 2
    # cross reductions (column sums beside the rows: ``Group.cross``): the programs that
    # walk the row blocks, each adding its rows into one partial per column, make this
    # many warps per multiprocessor (the partials are [programs, NR] in fp32)
    cross: int = 1  # 0: cross reductions run apart (the group's kernel, then theirs)
    cross_warps_per_sm: int = 16
    # ... 1: each program adds whole tiles into a tile of partials and reduces its rows
    # once, after the loop (0: each block's rows reduced as they come)
    cross_tile: int = 1
    # ... rows per tile up to this many bytes (``inner_tile_bytes`` of their kernels) and
    # bytes of input a thread holds per tile (``thread_bytes`` of their kernels): a tile
    # and a prefetched one stay in registers at two programs per multiprocessor
    cross_tile_bytes: int = 8192
    cross_thread_bytes: int = 32
    # ... the row loop's software pipelining stages (``tl.range(num_stages=...)``; 1: none)
    cross_stages: int = 1
    # ... 1: each iteration issues the next row block's loads before it reduces and stores
    # its own (a prefetch held in registers), and loads the same for every row block (w of
    # a layer norm backward) are made once before the loop; 0: every load where it is used.
    # Not with ``cross_stages`` (Triton's pipelining overlaps the loads its own way)
    cross_prefetch: int = 1
    # ... their finishing kernel: at most this many columns per program (fewer, down to
    # 4, while the programs do not fill the multiprocessors), the partials of a step
    # filling ``cross_finish_tile`` elements, at these warps
    cross_finish_columns: int = 64
    cross_finish_tile: int = 4096
    cross_finish_warps: int = 4
    # the finishing kernel launched as a programmatic dependent of the row kernel (sm_90+:
    # its programs start while the row kernel's last ones run and wait in ``gdc_wait``
    # for its partials). H100 at 079c82e (tune-ops-ab43-pdl-20261206-079c82e-h100.json),
    # call ms, on / off: bf16 layer norm backward [8192, 2048] 0.0429 / 0.0418, [32768,
    # 768] 0.0647 / 0.0641, fp32 0.0718 / 0.0710 and 0.1143 / 0.1094, bf16 RMS norm
    # 0.0707 / 0.0713: the gap it hides is smaller than what the waiting programs cost
    # the row kernel's tail. 0: a plain second launch (off)
    cross_pdl: int = 0
    # measured choice (``schedulers/measure.py``), timed against the rule's plan: an outer
    # tile's columns at twice and at half the bytes per row (persistent; looped: half and
    # twice), an inner tile of twice the rows or loop step, and one of half the rows at
    # twice the warps. H200 at 6dbc526: outer softmax/log_softmax tiles won 1.10-1.26x
    # either way (r1_100 16 columns, r1_111 64), so neither direction is a rule. Inner
    # looped rows: the half is a loop tile of 4096 at 16 warps (a bf16 softmax over rows
    # of 50257, r2_050: 1792 GB/s in [1, 16384] at 32 warps, whose online max and sum
    # spilled at 64 registers a thread, 1941 in [1, 4096] at 16, eager 65% of the read
    # ceiling in the seed-2 run at f489a24; H100 at
    # 7d748ff, tune-ab35-20261206-7d748ff-h100.txt), where 32 warps won for RMS norms
    # (``loop_l2_warps``); the twice (32768) spills more. Outer looped columns: the half
    # keeps the tile and warps that ``loop_few_blocks`` doubles (a bf16 RMS norm over the
    # strided dim of [15307, 4096], r3_017, 240 column blocks: 1199 GB/s in 64 x 128 at
    # 16 warps, 1300 in 64 x 64 at 8; same A/B). Cross
    # reductions (prefetching, ``tune-cross-20261205-aeb0365-h100``): 24 warps per SM won
    # 0.7-4.5% on fp32 layer norm backwards and lost 13-17% on bf16 ones; half the tile
    # and thread bytes at 32 warps per SM won 1-2% on the fp32 layer norm and bf16 RMS norm
    # backwards and lost 5-32% on the others. Third, the rule's tile at half the warps
    # (twice the bytes a thread): an fp32 var_mean over the 32 outer rows of [32, 32, 2,
    # 2888] ran 29.9 us in its 128 x 32 tile at 8 warps, 12.4 at 4 (16 warps: 31.7;
    # torch.compile 26.8; H100 at 685caed, tune-ab57-20261207-685caed-h100.txt)
    alternatives: tuple[Overrides, ...] = (
        (
            ("row_bytes", 128),
            ("loop_row_bytes", 128),
            ("inner_tile_bytes", 16384),
            ("loop_tile", 32768),
            ("cross_warps_per_sm", 24),
        ),
        (
            ("row_bytes", 32),
            ("loop_row_bytes", 512),
            ("inner_tile_bytes", 4096),
            ("thread_bytes", 32),
            ("cross_tile_bytes", 4096),
            ("cross_thread_bytes", 16),
            ("cross_warps_per_sm", 32),
            ("loop_tile", 4096),
            ("loop_l2_warps", 16),
            ("loop_few_blocks", 0),
        ),
        (("thread_bytes", 128),),
    )


DEFAULT_TUNING = NormalizationTuning()


@dataclass(frozen=True)
class NormalizationParams:
    scheduler: str
    family: str  # "inner", "outer" or "mixed" (the canonical pattern)
    template: str  # "inner" or "outer"
    mode: str  # "persistent", "looped" or "segmented"
    x_groups: tuple[int, ...]
    r_groups: tuple[int, ...]
    block_x: int
    block_r: int
    num_warps: int
    passes: int  # looped reduction passes (softmax's max and sum share one)
    index64: bool
    zero_strides: tuple[tuple[bool, ...], ...]
    unit_strides: tuple[tuple[bool, ...], ...]
    n_groups: int
    based: tuple[int, ...] = ()  # accesses whose offset adds a base argument ``b<a>``
    generic: bool = False  # some load walks its chain (a pad's masked read, an indexed read)
    # (tensor index, dim) of the dims the run made broadcast that the walk reads at 0
    # (``runtime.extents``; set by the pipeline, not the heuristics)
    made_ones: tuple[tuple[int, int], ...] = ()
    affine: tuple[bool, ...] = ()  # per access, in generic mode
    group_dims: tuple[int, ...] = ()  # iteration coordinate of each group, in generic mode
    # outer template: the kept groups the tile's columns span (2: a short stride-1 group
    # and the next kept one, index % and // the first's extent)
    x_span: int = 1
    # cross reductions: the programs that walk the row blocks (0: one program per block),
    # and the finishing kernel's columns per program and partials per step
    row_programs: int = 0
    cross_tile: bool = False  # partials kept as a whole tile, its rows reduced once at the end
    loop_stages: int = 1  # the row loop's pipelining stages (1: a plain loop)
    prefetch: bool = False  # the row loop loads the next row block ahead (``cross_prefetch``)
    finish_columns: int = 0
    finish_rows: int = 0
    finish_warps: int = 0
    finish_pdl: bool = False  # the finish is a programmatic dependent launch (``cross_pdl``)
    # looped inner rows, a row a program: its R loop starts each row at its first element
    # of this many that lies on a 16-byte boundary (0: from element 0; ``aligned_rows``)
    align_rows: int = 0
    # integer arguments the kernel receives divided by a power of two it multiplies back
    # (``size_factors``: ("NR", 4) for rows of 276), so Triton knows them multiples of it
    factors: tuple[tuple[str, int], ...] = ()

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
    x_span: int = 1


def can_schedule(
    segment: KernelSpec,
    p: Problem | None,
    device: DeviceInfo,
    tuning: NormalizationTuning = DEFAULT_TUNING,
) -> str | None:
    """A normalization group whose rows one kernel serves; otherwise why not (its segment
    then runs its finer plan: reduction kernels, then pointwise kernels)."""
    if segment.group is None:
        return "no reduction whose results are used again on its rows"
    if p is None:
        return "empty or mismatched extents"
    if p.generic and not _walked_loads_only(segment, p):
        return "an access is not affine (a reshape that is not a view)"
    if not any(g.reduced for g in p.groups):
        return "nothing is reduced (size-1 reduced dims)"
    if _indexed_by_results(segment):
        return (
            "an indexed read takes its index from the group's own results: the kernel "
            "loads before they are done"
        )
    if _copies_left_out(segment, p, tuning):
        return (
            "a reduced dim is expanded and no row is stored: the reduction kernel leaves "
            "its copies out (Problem.repeat), then the epilogue"
        )
    if tuning.rowless_stores and _stores_across_columns(p):
        return (
            "no row is stored and the stores' stride-1 group is not the tile's columns: the "
            "reduction kernel's transposed tile stores along it"
        )
    plan = _plan(p, device, tuning)
    if plan.mode == "segmented":
        return plan.why
    if p.cross and not tuning.cross:
        return "cross reductions are off (NormalizationTuning.cross)"
    if p.cross and p.generic:
        return "cross reductions beside an access that walks its chain"
    if p.cross and plan.mode != "persistent":
        return f"cross reductions need whole rows in one tile ({plan.why})"
    return None


def _indexed_by_results(segment: KernelSpec) -> bool:
    """An access that reads through an indexed read whose index comes from the group's
    reductions (generated program 178065: a gather indexed by the keepdim prod of the
    rows it reads again): the kernel makes its loads before its reductions are done."""
    assert segment.group is not None
    results = {id(o) for e in segment.group.reductions for o in e.outputs}
    memory = {id(t) for t in segment.memory}
    return any(indexed_by(a.chain, results, memory) for a in segment.accesses)


def _stores_across_columns(p: Problem) -> bool:
    """A group whose results feed only per-row outputs (a var_mean), over outer columns
    (group 0, the input's stride-1 group, kept: the outer template's tile columns), whose
    stores all walk another kept group with stride 1: the outer tile would store each
    result a sector apart, where the reduction scheduler's transposed tile stores along
    that group (r1_077: a var_mean over dim 3 of [23235, 3, 7, 7] stored along dim 2, at
    0.63x of torch.compile)."""
    if p.rows or p.cross or p.generic or p.groups[0].reduced:
        return False
    y = store_group(p)
    return y is not None and y != 0


def _copies_left_out(segment: KernelSpec, p: Problem, tuning: NormalizationTuning) -> bool:
    """A group whose results feed only per-row outputs (a var_mean: a Welford, then var
    from M2) over reduced groups no access moves along (an expanded input's dims, M
    copies), where the copies would cost more than ``copies_min_bytes`` of reading: its
    finer plan's reduction kernel reads each value once and scales by the copies
    (``Problem.repeat``; the epilogue in it or in a pointwise kernel after it), where this
    kernel walks every copy (r3_059: a var_mean over dims of 37 expanded and 31 read 37
    times as much, at 0.58x of torch.compile)."""
    if p.rows or p.cross or p.generic or p.random:
        return False
    if any(copies_scale(e) is None for e in segment.reductions):
        return False
    copies = prod(g.size for g in p.groups if g.reduced and all(st == 0 for st in g.strides))
    item = max(itemsize(d) for d in p.dtypes[: p.n_loads])
    return copies > 1 and p.numel // copies * (copies - 1) * item >= tuning.copies_min_bytes


def _walked_loads_only(segment: KernelSpec, p: Problem) -> bool:
    """Every access that is not affine is a load through a pad (a masked read) or through an
    indexed read, which the kernel walks per element in its R loop (generic mode, as the
    reduction kernel's); a reshape that is not a view is not taken."""
    return all(
        a < p.n_loads
        and (
            any(e.op.name == "pad" for e in segment.accesses[a].chain)
            or is_indirect(segment.accesses[a].chain)
        )
        for a in range(len(p.dtypes))
        if not p.is_affine(a)
    )


def reason(p: Problem, device: DeviceInfo, tuning: NormalizationTuning = DEFAULT_TUNING) -> str:
    """Why the heuristics chose their mode and tile."""
    plan = _plan(p, device, tuning)
    return f"{plan.mode}: {plan.why}"


def heuristics(
    p: Problem, device: DeviceInfo, tuning: NormalizationTuning = DEFAULT_TUNING
) -> NormalizationParams:
    """The persistent or looped kernel's params (``can_schedule`` accepted the problem).

    ``p.loop=False`` (a reduction with only a per-row epilogue): a tile that does not hold
    the rows goes to the reduction scheduler's kernels (segmented) instead of looping.
    ``p.rows=False`` (reductions whose results feed only per-row outputs, as sibling
    reductions do): nothing is read twice, so strided columns take the reduction
    scheduler's wide outer steps when there are enough column blocks (``_reduce_only``),
    else the fallback's split reduction kernel for all of them (``_outer_loop``)."""
    plan = _plan(p, device, tuning)
    if p.cross and plan.mode != "persistent":
        plan = _plan(p, device, DEFAULT_TUNING)  # an alternative's tile that does not hold the rows
    xg, rg, _, _ = p.kept_and_reduced()
    zero, unit = stride_flags(p)
    params = NormalizationParams(
        NAME,
        p.family,
        plan.template,
        plan.mode,
        xg,
        rg,
        plan.block_x,
        plan.block_r,
        plan.warps,
        p.passes,
        p.needs_int64,
        zero,
        unit,
        len(p.groups),
        **generic_fields(p),
        x_span=plan.x_span,
    )
    if not p.cross:
        return replace(
            params,
            align_rows=aligned_rows(p, params, tuning),
            factors=size_factors(p, params, tuning),
            loop_stages=_looped_stages(p, plan, tuning),
        )
    return _with_cross(params, p, device, tuning, plan.warps)


def _looped_stages(p: Problem, plan: _Plan, t: NormalizationTuning) -> int:
    """Pipelining stages of a looped row's walks: ``looped_stages``, as many as keep the
    further stages' buffers (a tile of every load for each walk: the passes and the store's)
    within ``looped_stage_bytes``; 1 for the other modes."""
    if plan.mode != "looped" or t.looped_stages <= 1:
        return 1
    tile = plan.block_x * plan.block_r * sum(itemsize(p.dtypes[a]) for a in range(p.n_loads))
    per_stage = tile * (p.passes + 1)
    return max(1, min(t.looped_stages, 1 + t.looped_stage_bytes // max(1, per_stage)))


def row_accesses(n_accesses: int, params: NormalizationParams) -> list[int]:
    """Of the first ``n_accesses`` (loads, then stores), those that walk each row with unit
    stride along the one reduced group and move along a kept group (a layer norm's weight
    stays in place; a per-row result has stride 0 along R)."""
    if params.generic or len(params.r_groups) != 1:
        return []
    rg = params.r_groups[0]
    return [
        a
        for a in range(n_accesses)
        if params.unit_strides[a][rg]
        and not all(params.zero_strides[a][k] for k in params.x_groups)
    ]


def size_factors(
    p: Problem, params: NormalizationParams, tuning: NormalizationTuning
) -> tuple[tuple[str, int], ...]:
    """``factors`` of an inner kernel: the row length NR and the row accesses' row strides,
    each with its power-of-two factor (``intmath.int32_factor``) when it has one.

    Triton specializes an integer argument only as 1 or a multiple of 16. Rows of 276 bf16
    (a multiple of 4, rows 552 bytes apart) are masked ``r < NR`` and offset ``x * s``
    with nothing known of either, so each thread loads and stores one element; told
    ``NR = NR_q * 4`` and ``s = s_q * 4``, Triton keeps the mask constant over 4 lanes and
    the rows 8-byte aligned: 4-element vectors. (Inductor's persistent reductions get the
    same from sizes it writes into the kernel as literals.)"""
    if not tuning.size_factors or params.template != "inner" or params.generic:
        return ()
    _, _, _, nr = p.kept_and_reduced()
    out = [("NR", int32_factor(nr))]
    for a in row_accesses(p.n_loads + p.n_stores, params):
        for k in params.x_groups:
            if not (params.zero_strides[a][k] or params.unit_strides[a][k]):
                out.append((f"s{a}_{k}", int32_factor(p.groups[k].strides[a])))
    return tuple((name, f) for name, f in out if f > 1)


def aligned_rows(p: Problem, params: NormalizationParams, tuning: NormalizationTuning) -> int:
    """``align_rows`` of an inner kernel of a row a program whose rows Triton cannot prove
    16-byte aligned and whole (a row stride or the row length no multiple of 16 elements,
    a slice's base): elements of the narrowest row access in ``align_row_bytes``. Such a
    row's loads and stores are otherwise one element each: a bf16 softmax over rows of
    50257 ran at 62% of eager's (H200, 2924fc7), whose kernel also starts each row at its
    first aligned element. 0 otherwise.

    Looped: the row accesses walk whole vectors from their first boundary. Persistent
    (``align_persistent``): the tile's lanes start at the row loads' boundary before the
    row, so that it loads and stores whole vectors, where the tile still holds the row
    from there and no load of a weight along the row would lose its vectors (sm_90: a
    bf16 softmax over rows of 9747 at 16 warps 113 registers a thread plain, 99 aligned;
    not yet timed)."""
    if not tuning.align_row_bytes or params.template != "inner" or params.block_x != 1:
        return 0
    if params.mode == "looped":
        rows = row_accesses(p.n_loads + p.n_stores, params)
    elif params.mode == "persistent" and tuning.align_persistent and not params.index64:
        # the loads decide; a store whose rows start elsewhere than theirs takes the plain
        # tile at run time (``codegen.normalization``'s ``persistent_align``)
        rows = row_accesses(p.n_loads, params)
    else:
        return 0
    if not rows:
        return 0
    _, _, _, nr = p.kept_and_reduced()
    strides = [p.groups[k].strides[a] for a in rows for k in params.x_groups]
    v = max(1, tuning.align_row_bytes // min(itemsize(p.dtypes[a]) for a in rows))
    # elements of the boundary Triton proves the rows start on and end at (``size_factors``
    # tell it a persistent tile's row length and strides to that)
    known = v if params.mode == "persistent" and tuning.size_factors else 16
    if nr % known == 0 and all(s % known == 0 for s in strides) and not set(rows) & set(p.based):
        return 0  # Triton proves each row's tiles aligned and whole
    if params.mode == "looped":
        return v
    if v < 2 or next_pow2(nr + v - 1) > params.block_r:
        return 0  # the shifted row would need a wider tile
    if any(m + params.block_r >= 2**31 for m in p.max_offsets):
        return 0  # the vectors' last lanes would pass the 32-bit offsets
    rg = params.r_groups[0]
    shared = [a for a in range(p.n_loads) if a not in rows and not params.zero_strides[a][rg]]
    if shared and nr % v == 0:
        return 0  # a layer norm's weight, whose vectors the shifted lanes would split
    return v


def _with_cross(
    params: NormalizationParams,
    p: Problem,
    device: DeviceInfo,
    t: NormalizationTuning,
    warps: int,
) -> NormalizationParams:
    """The cross reductions' programs and finishing tile: ``cross_warps_per_sm`` warps per
    multiprocessor walk the row blocks; the finish takes ``cross_finish_columns`` columns
    per program, halved (to 4: 16-byte rows of partials) until its programs fill the
    multiprocessors, and as many partials per step as fill ``cross_finish_tile``."""
    _, _, _, nr = p.kept_and_reduced()
    programs = max(
        1, min(grid(params, p.sizes), device.sm_count * max(1, t.cross_warps_per_sm // warps))
    )
    columns = max(4, min(t.cross_finish_columns, next_pow2(nr)))
    while columns > 4 and cdiv(nr, columns) < device.sm_count:
        columns //= 2
    rows = max(1, min(next_pow2(programs), t.cross_finish_tile // columns))
    return replace(
        params,
        row_programs=programs,
        cross_tile=bool(t.cross_tile),
        loop_stages=max(1, t.cross_stages),
        prefetch=bool(t.cross_prefetch) and t.cross_stages <= 1 and not params.generic,
        finish_columns=columns,
        finish_rows=rows,
        finish_warps=t.cross_finish_warps,
        finish_pdl=bool(t.cross_pdl) and not device.interpreted and device.capability >= 90,
    )


def _plan(p: Problem, device: DeviceInfo, tuning: NormalizationTuning) -> _Plan:
    """The mode (persistent, looped or segmented), the tile and the warps."""
    t = tuning
    groups = p.groups
    xg, rg, nx, nr = p.kept_and_reduced()
    item = p.narrowest_load_bytes()
    loop, rows, passes = p.loop, p.rows, p.passes
    template = "inner" if groups and groups[0].reduced else "outer"
    if not xg:
        template = "inner"
    why = None
    span = 1
    mode = "persistent"
    if template == "inner":
        block_r = next_pow2(nr)
        tile_bytes = t.cross_tile_bytes if p.cross else t.inner_tile_bytes
        block_x = max(1, min(next_pow2(nx), tile_bytes // (block_r * item)))
    else:
        # columns: ``row_bytes`` of the stride-1 kept group per row (a whole DRAM burst);
        # ``min_row_bytes`` rows when only they let the whole reduced extent fit the tile
        n0 = groups[0].size
        block_r = next_pow2(nr)
        block_x = min(next_pow2(n0), max(1, t.row_bytes // item))
        if block_x * block_r > t.max_tile and _rows_on_boundaries(p, t.min_row_bytes):
            block_x = min(next_pow2(n0), max(1, t.min_row_bytes // item))
        elif block_x * block_r < (column_tile := _column_tile(p, t)):
            span = _column_span(p, item, block_x * block_r, t)
            if span > 1 or item >= t.short_column_min_item:
                block_x = _short_columns(p, device, block_x, block_r, column_tile, t, span)
    # an epilogue-only outer reduction keeps one small tile: beyond it the reduction
    # scheduler's wider outer tiles (and its split) read faster, and the epilogue runs after
    limit = t.max_tile if loop or template == "inner" else t.epilogue_outer_tile
    warps = 0
    wide = _reduce_only(p, device, t) if (template == "outer" and loop and not rows) else None
    if wide is not None:
        mode, (block_x, block_r, warps) = "looped", wide
        why = (
            f"columns of {nr} elements, reductions only: one pass over "
            f"{block_r}x{block_x} steps, as the reduction scheduler's outer kernels"
        )
    elif block_x * block_r > limit:
        mode = "looped"
        if not loop:
            mode = "segmented"
            why = (
                f"rows of {nr} elements exceed a {limit}-element tile: the reduction "
                "kernel, then the epilogue"
            )
        elif template == "outer":
            mode, block_x, block_r, warps, why = _outer_loop(p, device, passes, t, rows)
        else:
            block_x = 1 if nx >= device.sm_count else block_x
            block_r = min(next_pow2(nr), t.loop_tile // block_x)
            programs = -(-nx // block_x)
            if programs < device.sm_count:
                mode = "segmented"
                why = (
                    f"{programs} programs of rows too long for one pass cannot fill "
                    f"{device.sm_count} multiprocessors: split reductions instead"
                )
            else:
                why = (
                    f"rows of {nr} elements exceed a {t.max_tile}-element tile: {passes + 1} passes"
                )
                warps = _l2_resident_warps(p, device, block_x, nr, item, t)
    else:
        why = f"rows of {nr} elements fit a {block_x}x{block_r} tile: one read"
    tile = block_x * block_r
    per_thread = t.cross_thread_bytes if p.cross else t.thread_bytes
    warps = warps or max(1, min(t.max_warps, tile * item // (THREADS_PER_WARP * per_thread)))
    if mode != "persistent" or template != "outer":
        span = 1  # only the persistent outer tile spans two kept groups
    return _Plan(template, mode, block_x, block_r, warps, why, span)


def _l2_resident_warps(
    p: Problem, device: DeviceInfo, block_x: int, nr: int, item: int, t: NormalizationTuning
) -> int:
    """Warps of an inner looped program (0: the tile's own), raised to ``loop_l2_warps``
    where the rows that programs of the tile's warps keep in flight (as many as the
    threads allow on every multiprocessor) would not fit half of L2: the pass that stores
    re-reads its row, and that read should hit L2 (132 KB bf16 rows: four 16-warp
    programs per multiprocessor hold 70 MB)."""
    if not t.loop_l2_warps:
        return 0
    tile = block_x * min(next_pow2(nr), t.loop_tile // block_x)
    warps = max(1, min(t.max_warps, tile * item // (THREADS_PER_WARP * t.thread_bytes)))
    if _resident_programs(device, warps) * block_x * nr * item * 2 <= device.l2_bytes:
        return 0
    return max(warps, t.loop_l2_warps)


def _span_extent(p: Problem, span: int) -> int:
    """Columns of the first ``span`` kept groups."""
    xg = [g.size for g in p.groups if not g.reduced]
    return prod(xg[:span])


def _column_span(p: Problem, item: int, tile: int, t: NormalizationTuning) -> int:
    """Kept groups an outer persistent tile's columns span: 2 where the stride-1 kept
    group is shorter than ``row_bytes`` and another kept group follows (a log_softmax
    over dim 0 of a [2, 3, 50257] tensor whose dim 1 is innermost: 3 columns, 50257
    programs of one warp, at 27% of eager), else 1."""
    xg = [k for k, g in enumerate(p.groups) if not g.reduced]
    if len(xg) < 2 or p.generic or p.groups[0].size * item >= t.row_bytes:
        return 1
    # only a tiny tile: spanning the groups of a [16, 128] tile (13 of 16 columns) ran a
    # third as fast (rmsnorm over [321110, 64, 13] dim 1: 4213 -> 1373 GB/s)
    return 2 if tile < t.span_below else 1


def _rows_on_boundaries(p: Problem, row: int, every_load: bool = False) -> bool:
    """Whether every load's rows (its strides along the reduced groups) start ``row``
    bytes apart or a multiple of it, so that a tile row of ``row`` bytes is one sector and
    not two: an fp32 softmax over a dim of stride 2157 ran persistent in 32-byte rows at
    36% of the read ceiling, 1.36x slower than the segmented plan (r3_088, H100 at
    c85f287, tune-ab71-20261207-c85f287-h100.txt). Unless ``every_load``, loads constant
    along the tile rows (a layer norm's weight) read one element a row, from cache, and do
    not count."""
    for a in range(p.n_loads):
        item = itemsize(p.dtypes[a])
        if not every_load and p.groups[0].strides[a] == 0:
            continue
        for g in p.groups:
            if g.reduced and g.size > 1 and (g.strides[a] * item) % row:
                return False
    return True


def _column_tile(p: Problem, t: NormalizationTuning) -> int:
    """The elements an outer persistent tile of short columns widens to."""
    return t.scalar_column_tile if _misaligned_rows(p) else t.short_column_tile


def _misaligned_rows(p: Problem) -> bool:
    """Whether a load's rows (its stride along a reduced group) are no multiple of 16 bytes
    apart: its column tile then loads an element at a time."""
    return not _rows_on_boundaries(p, 16, every_load=True)


def _short_columns(
    p: Problem,
    device: DeviceInfo,
    block_x: int,
    block_r: int,
    column_tile: int,
    t: NormalizationTuning,
    span: int = 1,
) -> int:
    """BLOCK_X of an outer tile whose whole columns are short (``block_r`` rows): wider
    rows, up to ``column_tile`` elements (``_column_tile``: ``short_column_tile``, or
    ``scalar_column_tile`` where the rows are not 16-byte aligned), while the column blocks still make
    ``short_column_waves`` programs per multiprocessor. A var_mean over 7 strided rows ran
    [8, 16] fp32 tiles (64-byte rows, one warp) at 41% of torch.compile."""
    _, _, nx, _ = p.kept_and_reduced()
    n0 = _span_extent(p, span)
    want = t.short_column_waves * device.sm_count
    wide = min(next_pow2(n0), max(block_x, column_tile // block_r))
    while wide > block_x and -(-n0 // wide) * (nx // n0) < want:
        wide //= 2
    return wide


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


def _reduce_only(
    p: Problem, device: DeviceInfo, tuning: NormalizationTuning
) -> tuple[int, int, int] | None:
    """(BLOCK_X, BLOCK_R, warps) of one pass over strided columns for reductions whose
    results feed only per-row outputs: steps of ``reduce_step_bytes`` (the reduction
    scheduler's fp32 [8, 256], its fastest outer step), rows of ``reduce_row_bytes``
    halved down to ``reduce_min_row_bytes`` until the column blocks make ``reduce_waves``
    programs per multiprocessor. None where the columns are shorter than two steps (a
    persistent tile reads them as fast) or the blocks stay too few."""
    t = tuning
    _, _, nx, nr = p.kept_and_reduced()
    item = p.narrowest_load_bytes()
    want = t.reduce_waves * device.sm_count
    block_x, programs = _column_blocks(p, t.reduce_row_bytes, t.reduce_min_row_bytes, want)
    block_r = min(next_pow2(nr), max(1, t.reduce_step_bytes // (block_x * item)))
    if programs < want or nr < 2 * block_r:
        return None
    return block_x, block_r, t.loop_outer_warps


def _outer_loop(
    p: Problem, device: DeviceInfo, passes: int, tuning: NormalizationTuning, rows: bool = True
) -> tuple[str, int, int, int, str]:
    """Mode, BLOCK_X, BLOCK_R, warps and reason for outer columns too long for one tile:
    one program per column block walks it twice (the reductions' pass, then the store),
    when one pass suffices and the blocks fill the GPU ``loop_min_blocks`` times (rows of
    ``loop_row_bytes``, halved down to ``loop_min_row_bytes`` where that makes enough
    blocks); else the segmented plan.

    Tiles of ``loop_outer_tile`` elements at ``loop_outer_warps`` warps; where the column
    blocks are fewer than ``loop_few_blocks`` per multiprocessor, more warps, so the few
    programs on each multiprocessor keep enough loads in flight: for 2-byte inputs
    ``few_blocks_narrow_scale`` times the tile and the warps (the same values per thread),
    for wider ones the tile at ``few_blocks_wide_warps_scale`` times the warps (fewer
    values per thread). Measured: see benchmarks/NOTES.md, "Measurements behind the
    heuristics"."""
    t = tuning
    _, _, nx, nr = p.kept_and_reduced()
    # narrower rows (down to a line) where the blocks are too few
    want = max(1, t.loop_min_blocks) * device.sm_count
    block_x, programs = _column_blocks(p, t.loop_row_bytes, t.loop_min_row_bytes, want)
    tile, warps = t.loop_outer_tile, t.loop_outer_warps
    if programs < t.loop_few_blocks * device.sm_count:
        if p.narrowest_load_bytes() >= 4:
            warps *= t.few_blocks_wide_warps_scale
        else:
            tile, warps = tile * t.few_blocks_narrow_scale, warps * t.few_blocks_narrow_scale
    block_r = min(next_pow2(nr), max(1, tile // block_x))
    too_long = f"columns of {nr} elements exceed a {t.max_tile}-element tile"
    if not rows:
        # sibling reductions alone (rows=False with loop=True): too few column blocks for
        # the wide steps of ``_reduce_only``, so one split reduction kernel computes them
        # all from one read (the fallback), as the reduction scheduler splits R
        return (
            "segmented",
            block_x,
            block_r,
            warps,
            (
                f"{too_long}; too few column blocks for one pass of wide steps: one split "
                "reduction kernel for the sibling reductions"
            ),
        )
    if passes > 1:
        # each further pass re-reads strided columns; the reduction scheduler's outer
        # kernels, then a pointwise kernel, read near the ceiling each
        return (
            "segmented",
            block_x,
            block_r,
            warps,
            (
                f"{too_long} and need {passes} passes: outer reduction kernels, then the "
                "pointwise kernel"
            ),
        )
    if programs < want:
        times = f" {t.loop_min_blocks} times over" if t.loop_min_blocks > 1 else ""
        return (
            "segmented",
            block_x,
            block_r,
            warps,
            (
                f"{too_long}; {programs} column blocks cannot fill {device.sm_count} "
                f"multiprocessors{times}: split reductions instead"
            ),
        )
    flight = _blocks_in_flight(p, device, programs, block_x, nr, warps)
    if _past_l2(p, flight, device, t):
        return (
            "segmented",
            block_x,
            block_r,
            warps,
            (
                f"{too_long}; the column blocks in flight hold {flight >> 20} MB, more "
                f"than half of the {device.l2_bytes >> 20} MB L2, so the store pass "
                "would read DRAM again: split reductions instead"
            ),
        )
    walks = passes + 1 if rows else passes  # the store pass, where rows are stored
    return (
        "looped",
        block_x,
        block_r,
        warps,
        (
            f"{too_long}: {walks} pass{'es' if walks > 1 else ''} over {block_r}x{block_x} "
            "column blocks"
        ),
    )


def _past_l2(p: Problem, flight: int, device: DeviceInfo, t: NormalizationTuning) -> bool:
    """Whether outer looped columns whose blocks in flight hold ``flight`` bytes take the
    segmented plan (``loop_outer_l2``): where those pass half of L2, except softmax's
    running max and sum over 2-byte loads, whose split reduction kernel runs at some 58%
    of the read ceiling (regs 96-101), so the looped kernel's DRAM re-read is cheaper."""
    if not t.loop_outer_l2 or flight * 2 <= device.l2_bytes:
        return False
    return not (t.loop_online_narrow and p.online and p.narrowest_load_bytes() < 4)


def _blocks_in_flight(
    p: Problem, device: DeviceInfo, programs: int, block_x: int, nr: int, warps: int
) -> int:
    """Bytes of the column blocks outer looped programs walk at once: as many programs as
    the threads allow on every multiprocessor (at most all of them), a column of ``nr``
    rows of ``block_x`` elements each."""
    resident = min(programs, _resident_programs(device, warps))
    return resident * block_x * nr * p.narrowest_load_bytes()


def _resident_programs(device: DeviceInfo, warps: int) -> int:
    """Programs of ``warps`` warps the GPU holds at once, as many as the threads allow on
    every multiprocessor (one at least; ``reduction_tiles.resident_programs`` also counts
    registers, which a normalization plan does not estimate)."""
    return device.sm_count * max(1, device.max_threads_per_sm // (THREADS_PER_WARP * warps))


def grid(params: NormalizationParams, sizes: Sequence[int]) -> int:
    """Row blocks (inner), or column blocks times the other kept groups (outer): one
    program each, unless ``row_programs`` walk them (cross reductions)."""
    nx = prod(sizes[k] for k in params.x_groups)
    if params.template == "inner":
        return cdiv(nx, params.block_x)
    n0 = prod(sizes[k] for k in params.x_groups[: params.x_span])
    return cdiv(n0, params.block_x) * (nx // n0)


def launches(
    segment: KernelSpec, p: Problem, params: NormalizationParams
) -> tuple[LaunchSpec, ...]:
    """The kernel: the grid, the kept and reduced extents and the column blocks; with cross
    reductions, ``row_programs`` walk the row blocks (``NBLK``), then the finishing kernel
    combines their partials, ``finish_columns`` columns per program."""
    sizes = p.sizes
    _, _, nx, nr = p.kept_and_reduced()
    n0 = prod(sizes[k] for k in params.x_groups[: params.x_span])
    npx = cdiv(n0, params.block_x) if params.template == "outer" else 1
    blocks = grid(params, sizes)
    values = (("NX", nx), ("NR", nr), ("NPX", npx))
    if not params.row_programs:
        return (LaunchSpec(0, (blocks,), values),)
    return (
        LaunchSpec(0, (params.row_programs,), values + (("NBLK", blocks),)),
        LaunchSpec(
            1, (cdiv(nr, params.finish_columns),), (("NR", nr), ("NP", params.row_programs))
        ),
    )


def workspaces(
    segment: KernelSpec, p: Problem, params: NormalizationParams
) -> tuple[Workspace, ...]:
    """Cross reductions: one ``[row_programs, NR]`` buffer of partial column results each,
    in its accumulator dtype."""
    if not params.row_programs:
        return ()
    assert segment.group is not None
    _, _, _, nr = p.kept_and_reduced()
    return tuple(
        Workspace(f"cw{k}", (params.row_programs, nr), accumulator_dtype(e))
        for k, e in enumerate(segment.group.cross)
    )
