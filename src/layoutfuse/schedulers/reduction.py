"""Reduction scheduler: the input's layout decides the read, the output's the store.

The problem arrives canonicalized from the dominant input's memory order (see
``analysis.canonical``). The template follows the innermost group:

* ``inner`` template (innermost group reduced): tile ``[BLOCK_X, BLOCK_R]``; rows are
  all kept groups flattened, columns all reduced groups flattened (the stride-1 one
  fastest), accumulated over a loop along R, then reduced along axis 1;
* ``outer`` template (innermost group kept): tile ``[BLOCK_R, BLOCK_X]``; columns are the
  stride-1 kept group, other kept groups run along the grid, rows walk R. When the
  output's stride-1 kept group is another one (``y_group``), the tile is
  ``[BLOCK_Y, BLOCK_R, BLOCK_X]`` and the result is stored along that group: reduction
  and transpose in one pass (``reduction_tiles.transposed_tile`` says when).

``family`` (inner / outer / mixed) reports the canonical pattern. When the kept
space cannot fill the GPU, R is split over a second grid axis: partial results
go to an fp32 workspace and are combined in split order, so the result does not
depend on timing. ``finish="ticket"`` (the default) combines them in the same
launch: each program takes a ticket from an atomic counter of its X block and the
last one combines; ``finish="kernel"`` launches a second, finishing kernel.
Otherwise the output's layout changes only the store offsets.

In generic mode (an access that is not affine, see ``analysis.index_walk``) the
groups are the single coordinates and that access's offset comes from
``codegen.generic_index``, computed inside the R loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.device import DeviceInfo
from ..dtypes import DataType, itemsize
from ..intmath import cdiv, int32_factor, next_pow2, prod
from ..ir.ops.reductions import accumulator_dtype, n_results
from ..segmenter.segments import KernelSpec
from . import reduction_tiles as tiles
from .launch import LaunchSpec, Workspace
from .problem import Problem, generic_fields, store_group, stride_flags
from .warps import THREADS_PER_WARP, warps_for

NAME = "reduction"


@dataclass(frozen=True)
class ReductionParams:
    scheduler: str
    family: str  # "inner", "outer" or "mixed" (the canonical pattern)
    template: str  # "inner" or "outer" (the kernel shape)
    x_groups: tuple[int, ...]  # kept groups, innermost first (indices into groups)
    r_groups: tuple[int, ...]  # reduced groups, innermost first
    block_x: int
    block_r: int
    num_warps: int
    split: int  # >1: partial results, combined as ``finish`` says
    index64: bool
    zero_strides: tuple[tuple[bool, ...], ...]
    unit_strides: tuple[tuple[bool, ...], ...]
    vector_hint: int = 1  # elements per thread along the contiguous axis
    r_nest: bool = False  # inner template: tile the stride-1 R group, loop the others
    generic: bool = False  # some access walks its chain (not affine)
    # (tensor index, dim) of the dims the run made broadcast that the walk reads at 0
    # (``runtime.extents``; set by the pipeline, not the heuristics)
    made_ones: tuple[tuple[int, int], ...] = ()
    affine: tuple[bool, ...] = ()  # per access, in generic mode
    group_dims: tuple[int, ...] = ()  # iteration coordinate of each group, in generic mode
    based: tuple[int, ...] = ()  # accesses whose offset adds a base argument ``b<a>``
    n_groups: int = 0  # canonical groups of the problem
    finish: str = "ticket"  # split > 1: "ticket" (last program combines) or "kernel"
    unroll: int = 1  # R tiles loaded per loop step, all before accumulating
    y_group: int | None = None  # outer: the output's stride-1 kept group, tiled as rows
    block_y: int = 1  #   (BLOCK_Y of them), so the store is coalesced along it
    combine_elements: int = 8  # ticket finish: partials per thread per combine step
    # flat inner R of an extent the launcher does not specialize as a multiple of 16, or of
    # several groups: whole loop steps run without the R mask (``i < n`` would keep every
    # load one element wide; over several groups it costs each element an add and a compare)
    full_steps: bool = False
    # integer arguments the main kernel receives divided by a power of two it multiplies
    # back (``size_factors``), so Triton knows them multiples of it
    factors: tuple[tuple[str, int], ...] = ()
    # >0: the row loads start their whole steps at their first multiple of this many
    # elements (``aligned_rows``), a masked loop takes the rest of each row
    align_rows: int = 0
    # a flat R walk over several reduced groups carries each tile's group indices from
    # step to step (an add and a wrap a group) instead of dividing every element's flat
    # index by the groups' runtime extents (``carried_index``)
    carry_index: bool = False
    # >1: the outer template reads G consecutive rows of a contiguous [rows, n] input as
    # one row of G * n elements (16-byte aligned where rows of n are not), and the
    # finishing kernel folds the G column partials of each column (``folded_rows``)
    fold: int = 0
    # the problem leaves out reduced coordinates no access moves along (``Problem.repeat``
    # copies of each value): the kernel scales its sums, and a Welford's M2 and count, by
    # the argument ``NREP``
    repeat: bool = False
    # a sum over values that are 0 wherever their loads are masked (``other=0``: loads,
    # casts, negations, absolute values, sums, differences and products of such) adds them
    # without selecting the identity into masked lanes (``ReductionTuning.zero_selects``)
    zero_selects: bool = True
    # outer template: the kept groups the tile's columns span (2: a short stride-1 kept
    # group and the next kept one, each column's indices its flat index ``%`` and ``//``
    # the first's extent: ``_spanned``)
    x_span: int = 1

    @property
    def partials(self) -> bool:
        """The kernel stores partial results that a finish combines (a split, a fold)."""
        return self.split > 1 or self.fold > 1

    @property
    def pattern(self) -> str:
        """The canonical groups' kinds, innermost first ("RX": reduced, then kept)."""
        reduced = set(self.r_groups)
        return "".join("R" if k in reduced else "X" for k in range(self.n_groups))


def can_schedule(
    segment: KernelSpec,
    p: Problem | None,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning = tiles.DEFAULT_TUNING,
) -> str | None:
    """Segments of reductions (one, or siblings of the same rows) whose results are only
    stored: a normalization group's results are used again on its rows."""
    if segment.group is not None:
        return "a normalization group (its results are used again): not a plain reduction"
    if not segment.reductions:
        return "the segment has no reduction"
    if p is None:
        return "no problem could be built for the segment's extents"
    if p.family == "pointwise":
        return "every reduced extent is 1: elementwise, the pointwise scheduler's"
    return _why_not_loop_stores(p)


def _why_not_loop_stores(p: Problem) -> str | None:
    """Why the kernel cannot store the segment's loop stores (``Problem.loop_stores``) as
    each tile is computed: the tiles must visit every element once, through strides, and
    each store must walk with its smallest stride the group a load walks with its own (a
    coalesced store beside the coalesced load; an expanded load's dims do not matter). (A
    loop store moves along every dim, so none is left out as repeated: ``Problem.repeat``
    stays 1.) None where it can."""
    if not p.loop_stores:
        return None
    if p.generic:
        return "an access no stride pattern addresses (a generic walk) beside the loop's stores"
    loads = {p.innermost_group(a) for a in range(p.n_loads)}
    if any(p.innermost_group(a) not in loads for a in p.loop_store_accesses()):
        return "a loop store laid out unlike every load (its stores would not be coalesced)"
    return None


def heuristics(
    p: Problem, device: DeviceInfo, tuning: tiles.ReductionTuning = tiles.DEFAULT_TUNING
) -> ReductionParams:
    """The tile, template and split (``_chosen``), and the arguments the kernel is told
    multiples of a power of two (``size_factors``)."""
    g = folded_rows(p, tuning)
    params = _folded(p, g, device, tuning) if g else None
    folded = params is not None
    if params is None:
        params = _chosen(p, device, tuning)
    params = replace(params, align_rows=aligned_rows(p, params, tuning))
    if not folded and _scalar_inner(p, params, tuning):
        params = _chosen(p, device, tuning, tuning.scalar_inner_item)
        params = replace(params, align_rows=aligned_rows(p, params, tuning))
    params = replace(params, carry_index=carried_index(p, params, tuning), repeat=p.repeat > 1)
    if not tuning.size_factors:
        return params
    return replace(params, factors=size_factors(p, params))


def row_loads(p: Problem, params: ReductionParams) -> list[int] | None:
    """The loads that walk each row with unit stride along the inner template's one
    reduced group, all at the same kept strides (so one boundary serves them all); None
    where another load moves along R otherwise or two row loads differ."""
    if params.generic or params.r_nest or len(params.r_groups) != 1 or params.template != "inner":
        return None
    rg = params.r_groups[0]
    rows = []
    for a in range(p.n_loads):
        if params.zero_strides[a][rg]:
            continue
        if not params.unit_strides[a][rg] or a in p.based:
            return None
        rows.append(a)
    kept = {tuple(p.groups[k].strides[a] for k in params.x_groups) for a in rows}
    return rows if len(kept) == 1 else None


def _known_alignment(stride: int, tuning: tiles.ReductionTuning) -> int:
    """The power of two Triton knows to divide a stride argument: 16 for a multiple of 16
    (its own specialization), else the size factor's (``int32_factor``) when passed so."""
    if stride % 16 == 0 and stride < 2**31:
        return 16
    return int32_factor(stride) if tuning.size_factors else 1


def aligned_rows(p: Problem, params: ReductionParams, tuning: tiles.ReductionTuning) -> int:
    """``align_rows`` of an inner kernel whose row loads start where Triton can prove less
    than 8 bytes of alignment (a row stride with a power-of-two factor under that, with
    ``size_factors``): elements of the row loads in ``align_row_bytes``, where each row
    (or split chunk) holds a tile (``block_r``) of at least two such vectors. Rows of 3715
    bf16 were otherwise summed one element per load, at 64% of eager's (H200, 2924fc7);
    aligned, 1.10x, rows of 8191 fp16 1.19x (H100, 1e2e510). Rows shorter than a tile take
    an extra tile aligned (bf16 rows of 9: 0.95x), and rows already 8-byte aligned gain
    too little for it (164: 0.93x): 0 there, and where a whole tensor is the row. A
    Welford's masked rest counts per lane, a division an element (layer norms' statistics
    of rows of 677393 fp32: 0.93-0.97x): 0."""
    if not tuning.align_row_bytes or p.welford:
        return 0
    rows = row_loads(p, params)
    if not rows or not params.x_groups:
        return 0
    item = min(p.vector_bytes(a) for a in rows)
    v = max(1, tuning.align_row_bytes // item)
    strides = [p.groups[k].strides[rows[0]] for k in params.x_groups]
    strides = [s for s in strides if s]
    known = min((_known_alignment(s, tuning) for s in strides), default=16)
    if known * item >= 8:
        return 0
    _, _, _, nr = p.kept_and_reduced()
    per_program = nr if params.split <= 1 else min(nr, chunk(params, p.sizes))
    if v < 2 or params.block_r < 2 * v or per_program < params.block_r:
        return 0
    return v


def folded_rows(p: Problem, tuning: tiles.ReductionTuning) -> int:
    """``fold``: the rows folded into one where an outer reduction's rows are contiguous
    (every load walks ``[n1, n0]`` with strides ``(n0, 1)``: the whole input is one run)
    but no multiple of 16 bytes long, so no row but every 8th (bf16) starts on a vector
    boundary and every load moves one element: a bf16 sum over rows of 127 or 3939 took
    6.8 and 11 SASS instructions per byte (``python -m benchmarks probe sass``) against a
    budget of 8 at the read ceiling, and ran at 0.82x of eager (r3_048, H100). G rows of n0
    are one row of ``G * n0`` elements, a multiple of 16 bytes: the loads are 16-byte
    vectors, the ``G * n0`` column results are folded by the finishing kernel (G partials
    of each column, with the split's; a Welford's tail step counts per lane, after its
    counted loop). 0 where it does not apply: a Welford's loads wider than
    ``fold_welford_max_item`` bytes an element, other groups, a broadcast load, fewer than
    ``fold_min_rows`` folded rows, inputs under ``fold_min_bytes`` (a second launch), and
    rows already 8 bytes aligned whose loads are wider than ``fold_narrow_item`` (a fold
    of 2: the size factors give them 8-byte loads, and the fold's finishing launch and
    tail cost more than the wider loads save: fp32 rows of 2 ran 0.89x, H100 4e4abfc; a
    fp16 max over rows of 1652 folded by 2 ran 1.56x, H100 97edecc)."""
    if not tuning.fold_rows or p.generic or p.based or p.loop_stores or len(p.groups) != 2:
        return 0
    x, r = p.groups
    if x.reduced or not r.reduced or not p.n_loads:
        return 0
    widest = max(itemsize(p.dtypes[a]) for a in range(p.n_loads))
    if p.welford and widest > tuning.fold_welford_max_item:
        return 0
    if any(x.strides[a] != 1 or r.strides[a] != x.size for a in range(p.n_loads)):
        return 0
    g = 1
    for a in range(p.n_loads):
        row_bytes = x.size * p.vector_bytes(a)
        g = max(g, 16 // math.gcd(row_bytes, 16))
    least = tuning.fold_least_narrow if widest <= tuning.fold_narrow_item else tuning.fold_least
    if g < least or r.size // g < tuning.fold_min_rows:
        return 0
    if x.size * g >= 2**31:  # the folded row's extent and stride are 32-bit arguments
        return 0
    if p.numel * p.narrowest_load_bytes() < tuning.fold_min_bytes:
        return 0
    return g


def fold_problem(p: Problem, g: int) -> Problem:
    """``p`` seen with ``g`` rows as one: ``[n1 // g, g * n0]`` (the rows past the last
    whole fold are the kernel's tail step)."""
    x, r = p.groups
    return replace(
        p,
        groups=(
            replace(x, size=x.size * g),
            replace(r, size=r.size // g, strides=tuple(s * g for s in r.strides)),
        ),
    )


def _folded(
    p: Problem, g: int, device: DeviceInfo, tuning: tiles.ReductionTuning
) -> ReductionParams | None:
    """The plan of the folded problem, with ``fold`` and a finishing kernel; None where it
    comes out as anything but the plain outer template."""
    params = _chosen(fold_problem(p, g), device, tuning)
    if params.template != "outer" or params.y_group is not None or params.r_nest:
        return None
    return replace(params, fold=g, finish="kernel")


def folded_sizes(params: ReductionParams, sizes: Sequence[int]) -> tuple[int, ...]:
    """The group extents the main kernel walks: ``sizes``, or folded (``fold_problem``)."""
    if params.fold <= 1:
        return tuple(sizes)
    n0, n1 = sizes
    return (n0 * params.fold, n1 // params.fold)


def carried_index(p: Problem, params: ReductionParams, tuning: tiles.ReductionTuning) -> bool:
    """``carry_index`` where the inner template's R loop walks a flat index over two or
    more reduced groups (not nested, not the aligned row loop), each program takes at least
    ``carry_min_steps`` loop steps and its tile at most ``carry_max_warps`` warps. Each
    element's index was split by ``%`` and ``//`` of the groups' runtime extents every
    step (a 32-bit division by a runtime value is some 25 instructions on sm_90); carried,
    a step adds the step's own decomposition to each group's index and wraps it once.
    Measured on the H100 (dcbf512, ``tune-random-20261205-dcbf512-h100.txt``): a bf16 max
    over ``[48899, 64, 7, 7]`` (12 steps a program, 4 warps) 1.17x; but the carried
    indices take some 50 registers a thread, which at 8 warps halved the resident
    programs: an fp16 max over ``[18126, 96, 7, 7]`` (8 steps) 0.90x, and with 2 steps a
    program (``[8, 6, 50257]``) the divisions before the loop cost more than the loop
    saves (0.67x). The measured choice also times the plan without it."""
    if params.template != "inner":  # an outer tile's R index is per row, shared by its
        return False  # columns: r1_013's outer walk over 2 groups ran 0.85x carried
    if not tuning.carry_index or len(params.r_groups) < 2 or params.r_nest or params.align_rows:
        return False
    if params.num_warps > tuning.carry_max_warps:
        return False
    _, _, _, nr = p.kept_and_reduced()
    per_program = nr if params.split <= 1 else min(nr, chunk(params, p.sizes))
    return per_program >= tuning.carry_min_steps * params.block_r * params.unroll


def size_factors(p: Problem, params: ReductionParams) -> tuple[tuple[str, int], ...]:
    """``factors``: the extent a tile's mask compares with (the inner template's R extent
    NR, the outer's stride-1 kept group), the split's R chunk and the loads' stride
    arguments, each with its power-of-two factor where it has one
    (``intmath.int32_factor``: Triton specializes an integer only as 1 or a multiple of
    16). Rows of 164 elements summed (a multiple of 4, rows 328 bytes apart) then load
    4 elements at once, not one."""
    if params.generic:
        return ()
    sizes = p.sizes
    if params.template == "inner" or not params.x_groups:
        _, _, _, nr = p.kept_and_reduced()
        extent = ("NR", nr // sizes[params.r_groups[0]] if params.r_nest else nr)
    else:
        extent = (f"n{params.x_groups[0]}", sizes[params.x_groups[0]])
    # a split's R chunk starts each program's R range (``r_lo = pid_s * CHUNK``)
    out = [(extent[0], int32_factor(extent[1]))]
    out.append(("CHUNK", int32_factor(chunk(params, sizes))))
    for a in range(p.n_loads):  # the stores' (a reduced output's) vectors matter little, and a
        # transposed store's (``y_group``) would make Triton convert the tile's layout
        for k in range(params.n_groups):
            if not (params.zero_strides[a][k] or params.unit_strides[a][k]):
                out.append((f"s{a}_{k}", int32_factor(p.groups[k].strides[a])))
    return tuple((name, f) for name, f in out if f > 1)


def _chosen(
    p: Problem, device: DeviceInfo, tuning: tiles.ReductionTuning, min_item: int = 0
) -> ReductionParams:
    """``p.accumulators`` (the partial results each program keeps per tile element: one per
    reduction, three for a Welford) sets the registers and so the resident programs that
    the split is sized from.

    The inner template with several reduced groups nests its loops (``r_nest``: the
    stride-1 group tiled, the others looped), and its split then cuts the outer R rows
    only. Where the stride-1 group and the kept space are both too short for the tile
    to fill ``1/nest_fill`` of a loop step (a full reduction; 2 or 7 results of rows of
    31 or 7), R is walked flat. Where those rows are too few for the split the kept space needs (a long
    stride-1 group under a short, e.g. expanded, outer one: 16 programs for 58M
    elements), R is walked flat instead, and the split cuts its loop steps. ``min_item``:
    the tile is sized as for elements of at least this many bytes (``_scalar_inner``)."""
    _, rg, _, _ = p.kept_and_reduced()
    template = "inner" if (p.groups and p.groups[0].reduced) or not rg else "outer"
    nest = template == "inner" and len(rg) >= 2
    nested = _heuristics(p, device, tuning, template, nest, min_item)
    if not nested.r_nest:
        return nested
    step = tuning.load_bytes * tuning.tile_threads // max(p.narrowest_load_bytes(), min_item)
    if nested.block_x * nested.block_r * nested.unroll * tuning.nest_fill < step:
        # a short stride-1 R group (13 of a sliced [13, 1021, 158] max; 31 under 2 results
        # of [763, 128, 2, 31]) cannot fill the nested tile: 16- and 64-element steps ran
        # at 30-40% of torch.compile; R is walked flat
        return _heuristics(p, device, tuning, template, False, min_item)
    programs, split = grid(nested, p.sizes)
    units, _ = _split_units(nested, p.sizes)
    if split < units or programs * split >= tuning.split_below * device.sm_count:
        return nested  # the split was not held back by the outer rows
    flat = _heuristics(p, device, tuning, template, False, min_item)
    flat_programs, flat_split = grid(flat, p.sizes)
    return flat if flat_programs * flat_split > programs * split else nested


def _heuristics(
    p: Problem,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
    template: str,
    r_nest: bool,
    min_item: int = 0,
) -> ReductionParams:
    accumulators = p.accumulators
    xg, rg, nx, nr = p.kept_and_reduced()
    item = p.narrowest_load_bytes()
    tile_item = max(item, min_item)
    if template == "outer" and tuning.scalar_outer_item and _scalar_loads(p):
        tile_item = max(tile_item, tuning.scalar_outer_item)
    narrow = template == "outer" and tile_item < 4  # _outer_tile's narrow_outer_* tile
    tile, programs, warps, resident = _tile(p, device, tuning, template, r_nest, tile_item)
    one_wave = narrow or accumulators > 1
    if template == "outer" and _past_one_wave(programs, resident, one_wave, device, tuning):
        # a second wave of a few programs: the tile of half the accumulators where that
        # makes one (a 2-byte step keeps its loads, unrolled into them twice as often)
        halved = (
            replace(tuning, narrow_outer_acc=max(1, tuning.narrow_outer_acc // 2))
            if narrow
            else replace(tuning, outer_load_bytes=tuning.outer_load_bytes // 2)
        )
        candidate = _tile(p, device, halved, template, r_nest, tile_item)
        if candidate[1] <= candidate[3]:
            tuning, (tile, programs, warps, resident) = halved, candidate
    zero, unit = stride_flags(p)
    params = ReductionParams(
        NAME,
        p.family,
        template,
        xg,
        rg,
        tile.block_x,
        tile.block_r,
        warps,
        1,
        p.needs_int64,
        zero,
        unit,
        max(1, 16 // item),
        r_nest,
        **generic_fields(p),
        n_groups=len(p.groups),
        unroll=tile.unroll,
        combine_elements=tuning.combine_elements,
        zero_selects=bool(tuning.zero_selects),
    )
    transposed = _transposed(p, params, item, nr, device, tuning)
    if transposed is None:
        transposed = _spanned(p, params, item, nr, device, tuning)
    if transposed is None:
        transposed = _stacked(p, params, tile, item, device, tuning)
    if transposed is None:
        transposed = _short_rows(p, params, item, nr, device, tuning)
    if transposed is not None:
        return transposed
    sizes = p.sizes
    units, min_units = _split_units(params, sizes)
    if template == "outer" and (narrow or accumulators > 1):
        split = tiles.one_wave_split(programs, resident, units, min_units, tuning)
    else:
        split = tiles.split_for_waves(programs, resident, units, min_units, device.sm_count, tuning)
    split = with_split(params, split, sizes).split  # whole loop steps per chunk
    finish, split = tiles.finish_for(
        split, tile.block_x, warps, p.numel * item, device, tuning, programs
    )
    # several reduced groups: each element's R mask is an add and a compare more per load
    # of one element (no vector to keep), which whole steps drop too
    full_steps = (
        template == "inner"
        and not r_nest
        and not p.generic
        and (nr % 16 != 0 or len(rg) > 1)
        and nr >= 2 * tile.block_r * tile.unroll
    )
    chosen = with_split(replace(params, finish=finish, full_steps=full_steps), split, sizes)
    if template == "outer":
        return _few_rounds(p, chosen, resident, device, tuning)
    return _few_rounds_inner(p, chosen, resident, device, tuning)


def _scalar_inner(p: Problem, params: ReductionParams, tuning: tiles.ReductionTuning) -> bool:
    """Whether an inner tile is sized as for ``scalar_inner_item``-byte elements: its loads
    are narrower, none can read 16-byte vectors along the stride-1 group (``_scalar_loads``)
    and the aligned loop (``align_rows``) does not make them vectors."""
    if params.template != "inner" or params.align_rows or params.generic:
        return False
    return tuning.scalar_inner_item > p.narrowest_load_bytes() and _scalar_loads(p)


def _scalar_loads(p: Problem) -> bool:
    """Whether no load can read 16-byte vectors along the stride-1 group (group 0, kept
    in the outer template, reduced in the inner): every load that walks it with stride 1
    steps some other group by a number of bytes that is no multiple of 16
    (``ReductionTuning.scalar_outer_item``, ``scalar_inner_item``)."""
    if p.generic or not p.groups:
        return False
    for a in range(p.n_loads):
        if not p.is_affine(a) or p.groups[0].strides[a] != 1:
            continue
        size = itemsize(p.dtypes[a])
        if all(g.strides[a] * size % 16 == 0 for g in p.groups[1:]):
            return False
    return True


def _tile(
    p: Problem,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
    template: str,
    r_nest: bool,
    tile_item: int,
) -> tuple[tiles.Tile, int, int, int]:
    """The tile for ``tile_item``-byte elements, its programs (before a split), its warps
    and how many of its programs the device holds at once."""
    groups = p.groups
    _, rg, nx, nr = p.kept_and_reduced()
    tile = tiles.choose_tile(
        template,
        tile_item,
        nx,
        nr,
        groups[0].size if groups else 1,
        groups[rg[0]].size if rg else 1,
        r_nest,
        device.sm_count,
        tuning,
        short_rows=p.accumulators == 1,
    )
    if template == "outer":
        programs = -(-groups[0].size // tile.block_x) * (nx // groups[0].size)
    else:
        programs = -(-nx // tile.block_x)
    narrow = template == "outer" and tile_item < 4
    warps, resident = _warps_and_resident(tile, tile_item, narrow, p.accumulators, device, tuning)
    return tile, programs, warps, resident


def _past_one_wave(
    programs: int, resident: int, one_wave: bool, device: DeviceInfo, t: tiles.ReductionTuning
) -> bool:
    """Whether an unsplit outer grid (``one_wave``: the split of ``one_wave_split``, else
    of ``split_for_waves``, which leaves ``split_below`` programs per multiprocessor whole)
    passes one wave of resident programs by less than ``wave_tail`` of a wave: its last
    wave is a few programs, each a whole walk of R, on a few multiprocessors. The online
    max and sum of a bf16 log_softmax over the 5142 rows of [5142, 64, 28, 28] (r3_101)
    took 784 programs of [64, 64] x 2 bf16 at 96 registers, 660 resident, at about 58% of
    the read ceiling (H100, e0952d7); [64, 32] x 4 takes 56 (sm_90), one wave."""
    if not t.wave_tail or programs <= resident or programs >= resident * (1 + t.wave_tail):
        return False
    return one_wave or programs >= t.split_below * device.sm_count


def _rounds(
    p: Problem,
    params: ReductionParams,
    resident: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> float | None:
    """The DRAM round trips on a program's critical path under ``params`` (its loop steps,
    then for a split the ticket and each combine step), plus the input's bytes over
    ``round_bytes`` at the grid's share of the multiprocessors; None where the grid
    exceeds one wave of ``resident`` programs or the finish is a kernel."""
    programs, split = grid(params, p.sizes)
    if programs * split > resident or params.finish != "ticket":
        return None
    units, _ = _split_units(params, p.sizes)
    steps = cdiv(units, split)
    if split > 1:
        steps += 1 + cdiv(split, combine_block(params, params.block_x))
    share = min(1.0, programs * split / device.sm_count)
    return steps + p.numel * p.narrowest_load_bytes() / (tuning.round_bytes * share)


def _few_rounds(
    p: Problem,
    params: ReductionParams,
    resident: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> ReductionParams:
    """An outer reduction whose input fits in ``few_rounds_l2`` of L2 (``few_rounds``):
    narrower rows per tile (down to ``few_rounds_row_bytes``, each loop step keeping its
    elements in more R rows) and the split whose critical path has the fewest DRAM round
    trips (``_rounds``), where that is under ``few_rounds_gain`` of the rule's plan. Such
    an input is never timed by the measured choice, and its time is latency: a Welford
    over the 904 rows of a [113, 8, 512] fp32 tensor took 2 programs of 1 KB rows in 19
    chunks (38 programs of 3 steps each, then 3 combine steps), 0.53x of torch.compile
    (H100, 4e4abfc). (Plain outer tiles only: Y-stacked ones return before it.)"""
    item = p.narrowest_load_bytes()
    base = _latency_rounds(p, params, resident, device, tuning) if tuning.few_rounds else None
    if base is None:
        return params
    step = params.block_x * params.block_r * params.unroll
    nr = prod(p.groups[k].size for k in params.r_groups)
    best, best_rounds = params, base * tuning.few_rounds_gain
    block_x = params.block_x
    while block_x >= max(1, tuning.few_rounds_row_bytes // item):
        rows = min(next_pow2(nr), max(1, step // block_x))
        unroll = min(params.unroll, rows)
        shaped = replace(params, block_x=block_x, block_r=rows // unroll, unroll=unroll)
        best, best_rounds = _fewest_rounds(p, shaped, best, best_rounds, resident, device, tuning)
        block_x //= 2
    return best


def _few_rounds_inner(
    p: Problem,
    params: ReductionParams,
    resident: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> ReductionParams:
    """An inner reduction whose input fits in ``few_rounds_l2`` of L2
    (``few_rounds_inner``): the split whose critical path has the fewest DRAM round trips
    (``_rounds``, down to one loop step a program), where that is under ``few_rounds_gain``
    of the rule's plan. The rule's split keeps two steps a program at least: the sum of
    a [143, 2039] fp32 tensor took 48 programs of 3 steps, then the ticket and a combine
    step, at 0.74x of the faster peer (H100, fffb7ba, r3_062)."""
    if not tuning.few_rounds_inner or params.y_group is not None:
        return params
    base = _latency_rounds(p, params, resident, device, tuning)
    if base is None:
        return params
    gain = base * tuning.few_rounds_gain
    return _fewest_rounds(p, params, params, gain, resident, device, tuning)[0]


def _latency_rounds(
    p: Problem,
    params: ReductionParams,
    resident: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> float | None:
    """The round trips of the rule's plan (``_rounds``) where the input fits in
    ``few_rounds_l2`` of L2 and is not folded; None where the few-rounds rules leave it."""
    if params.fold or p.numel * p.narrowest_load_bytes() > tuning.few_rounds_l2 * device.l2_bytes:
        return None
    return _rounds(p, params, resident, device, tuning)


def _fewest_rounds(
    p: Problem,
    shaped: ReductionParams,
    best: ReductionParams,
    best_rounds: float,
    resident: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> tuple[ReductionParams, float]:
    """``shaped``'s split of fewest round trips (each split up to one wave of resident
    programs, as ``finish_for`` cuts it) where it beats ``best_rounds``; else ``best``."""
    units, _ = _split_units(shaped, p.sizes)
    programs, _ = grid(shaped, p.sizes)
    input_bytes = p.numel * p.narrowest_load_bytes()
    for split in range(1, min(units, resident // max(1, programs)) + 1):
        finish, cut = tiles.finish_for(
            split, shaped.block_x, shaped.num_warps, input_bytes, device, tuning, programs
        )
        candidate = with_split(replace(shaped, finish=finish), cut, p.sizes)
        rounds = _rounds(p, candidate, resident, device, tuning)
        if rounds is not None and rounds < best_rounds - 1e-9:
            best, best_rounds = candidate, rounds
    return best, best_rounds


def _warps_and_resident(
    tile: tiles.Tile,
    item: int,
    narrow: bool,
    accumulators: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> tuple[int, int]:
    """The tile's warps, and how many of its programs the device holds at once (from the
    registers of ``accumulators`` accumulator tiles per program)."""
    acc_elements = tile.block_x * tile.block_r
    warps = tile.warps or warps_for(acc_elements, tuning.warps)
    acc_per_thread = acc_elements // (THREADS_PER_WARP * warps)
    registers = None
    if narrow:
        registers = tuning.narrow_outer_registers + (accumulators - 1) * acc_per_thread
    elif tile.unroll > 1 and item >= 4:
        # an unrolled 4-byte outer step (sibling sums) is split as its whole step would be
        # with one accumulator tile per unrolled tile (4 programs per SM for two fp32 sums,
        # not the 5 that ptxas's 48 registers allow; see benchmarks/NOTES.md, "Measurements
        # behind the heuristics")
        registers = tiles.estimated_registers(acc_per_thread * tile.unroll * accumulators, tuning)
    resident = tiles.resident_programs(
        device, warps, acc_per_thread * accumulators, tuning, registers
    )
    return warps, resident


def _transposed(
    p: Problem,
    params: ReductionParams,
    item: int,
    nr: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> ReductionParams | None:
    """The outer template with a transposed store, when the stores' stride-1 kept group is
    not the input's, the input's spans a whole tile edge (an input line; the stores' may be
    shorter than their sector: a group of 7 fp32 stores 28 of its 32 bytes, where the
    plain tile stores 4 a sector), no store is expanded along them, and the tiles make
    ``waves`` waves without a split; or, where R is so short that the plain tile's stores
    (a sector per result) move more bytes than its loads (R of at most a sector: r1_077, a var_mean over 7 fp32 stored
    along a group of 7, 0.63x of torch.compile), the ``split_below`` programs per
    multiprocessor that leave the plain tile unsplit."""
    y = store_group(p)
    if params.template != "outer" or p.generic or y is None or y == 0:
        return None
    n0, n_y = p.groups[0].size, p.groups[y].size
    out_item = min(p.vector_bytes(a) for a in p.result_stores())
    tile = tiles.transposed_tile(item, out_item, n0, n_y, nr, tuning)
    if n0 < tile.block_x or any(
        params.zero_strides[a][k] for a in p.result_stores() for k in (0, y)
    ):
        return None
    acc_elements = tile.block_x * tile.block_r * tile.block_y
    warps = warps_for(acc_elements, tuning.warps)
    resident = tiles.resident_programs(
        device, warps, acc_elements // (THREADS_PER_WARP * warps), tuning
    )
    transposed = replace(
        params,
        block_x=tile.block_x,
        block_r=tile.block_r,
        block_y=tile.block_y,
        y_group=y,
        unroll=tile.unroll,
        num_warps=warps,
        split=1,
    )
    programs = grid(transposed, p.sizes)[0]
    enough = tuning.waves * resident
    if nr * item <= tuning.transposed_store_bytes:
        # rows so short that the plain tile's stores (a sector each) move more than its
        # loads: as many programs as leave the plain tile unsplit do
        enough = min(enough, tuning.split_below * device.sm_count)
    return transposed if programs >= enough else None


def _spanned(
    p: Problem,
    params: ReductionParams,
    item: int,
    nr: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> ReductionParams | None:
    """The outer template's tile with its columns spanning the stride-1 kept group and the
    next kept one (``x_span=2``), where the first holds fewer than ``span_row_bytes``: a
    max over H of contiguous [1000, 256, 14, 14] fp32 read [8, 16, 16] Y-stacked tiles, 14
    of each 16 columns and rows used (0.86x of torch.compile, whose tile spans (N C, W)).
    The tile holds R whole up to ``span_rows`` rows, its columns the rest of the 4-byte
    template's step (``outer_load_bytes`` per thread of ``tile_warps`` warps); unsplit,
    where the grid makes a program per multiprocessor at least."""
    xg = params.x_groups
    n0 = p.groups[0].size
    if (
        params.template != "outer"
        or p.generic
        or len(xg) < 2
        or n0 * item >= tuning.span_row_bytes
        or any(params.zero_strides[a][k] for a in p.result_stores() for k in xg[:2])
    ):
        return None
    step = max(tuning.outer_load_bytes, 4 * item) * tuning.tile_threads // item
    block_r = min(next_pow2(nr), tuning.span_rows)
    n_span = n0 * p.groups[xg[1]].size
    block_x = min(next_pow2(n_span), max(1, step // block_r))
    spanned = replace(
        params,
        block_x=block_x,
        block_r=block_r,
        unroll=1,
        num_warps=warps_for(block_x * block_r, tuning.warps),
        split=1,
        x_span=2,
    )
    return spanned if grid(spanned, p.sizes)[0] >= device.sm_count else None


def _stacked(
    p: Problem,
    params: ReductionParams,
    tile: tiles.Tile,
    item: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> ReductionParams | None:
    """The outer template's tile with rows of the next kept group stacked along Y
    (``y_group``), where the stride-1 kept group and R are both so short that the tile
    holds less than half the template's 4-byte step (``outer_load_bytes`` per thread of
    ``tile_warps`` warps): a [16, 16] tile of 2 warps per 14 x 14 fp32 image read at 40%
    of eager's rate, one program per image. The Y rows fill the step, fewer where the
    grid would not fill ``waves`` waves unsplit. (Narrower inputs keep their measured
    narrow tiles.)"""
    xg = params.x_groups
    if (
        params.template != "outer"
        or item < 4
        or p.generic
        or len(xg) < 2
        or params.y_group is not None
    ):
        return None
    elements = tile.block_x * tile.block_r * tile.unroll
    step = tuning.outer_load_bytes * tuning.tile_threads // item
    y = xg[1]
    if 2 * elements > step or any(
        params.zero_strides[a][k] for a in p.result_stores() for k in (0, y)
    ):
        return None
    block_y = min(next_pow2(p.groups[y].size), step // elements)
    while block_y >= 2:  # the most rows whose grid still fills the waves
        stacked = _filling(
            p, params, elements * block_y, device, tuning, block_y=block_y, y_group=y
        )
        if stacked is not None:
            return stacked
        block_y //= 2
    return None


def _filling(
    p: Problem,
    params: ReductionParams,
    elements: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
    **tile: Any,
) -> ReductionParams | None:
    """``params`` with a Y-stacked ``tile`` of ``elements`` (its warps by them, unsplit),
    where its grid fills ``waves`` waves of resident programs; else None."""
    warps = warps_for(elements, tuning.warps)
    resident = tiles.resident_programs(
        device, warps, max(1, elements // (THREADS_PER_WARP * warps)), tuning
    )
    stacked = replace(params, **tile, num_warps=warps, split=1)
    return stacked if grid(stacked, p.sizes)[0] >= tuning.waves * resident else None


def _short_rows(
    p: Problem,
    params: ReductionParams,
    item: int,
    nr: int,
    device: DeviceInfo,
    tuning: tiles.ReductionTuning,
) -> ReductionParams | None:
    """The outer template's tile with rows of the next group in memory stacked along Y
    (``y_group``), where that group is kept and the stride-1 kept group holds less than
    ``short_row_bytes`` (a sector): the groups did not merge (a slice's gap, another
    access's order), so the plain tile read one such row per R step and program, a
    sector per lane (a bf16 [2, 109545] of a sliced [4, 109545, 1536] summed over its
    outer dim: 9% of the read ceiling where eager reached 47%). Y rows make
    ``outer_row_bytes`` of tile per R row, fewer (at least a sector's worth) where the
    grid would not fill ``waves`` waves unsplit; R fills the 4-byte template's step
    (``outer_load_bytes`` per thread of ``tile_warps`` warps)."""
    groups = p.groups
    if (
        params.template != "outer"
        or p.generic
        or params.y_group is not None
        or len(groups) < 2
        or groups[1].reduced
        or groups[0].size * item >= tuning.short_row_bytes
        or any(params.zero_strides[a][k] for a in p.result_stores() for k in (0, 1))
    ):
        return None
    block_x = next_pow2(groups[0].size)
    step = tuning.outer_load_bytes * tuning.tile_threads // item
    block_y = min(next_pow2(groups[1].size), max(1, tuning.outer_row_bytes // (item * block_x)))
    least = max(2, tuning.short_row_bytes // (item * block_x))
    while block_y >= least:
        block_r = min(next_pow2(nr), max(1, step // (block_x * block_y)))
        stacked = _filling(
            p,
            params,
            block_x * block_y * block_r,
            device,
            tuning,
            block_x=block_x,
            block_r=block_r,
            block_y=block_y,
            y_group=1,
            unroll=1,
        )
        if stacked is not None:
            return stacked
        block_y //= 2
    return None


def _split_units(params: ReductionParams, sizes: Sequence[int]) -> tuple[int, int]:
    """R as the split cuts it: (units, least units per program). Loop steps of
    ``block_r * unroll`` elements, at least 2 per program; nested: outer R rows."""
    sizes = folded_sizes(params, sizes)
    nr = prod(sizes[k] for k in params.r_groups)
    if params.r_nest:
        return nr // sizes[params.r_groups[0]], 1
    return cdiv(nr, params.block_r * params.unroll), 2


def with_split(params: ReductionParams, split: int, sizes: Sequence[int]) -> ReductionParams:
    """``params`` with R cut into ``split`` chunks of whole loop steps (the split may come
    out smaller: every chunk but the last is full)."""
    if params.y_group is not None:  # R rows in one program: no split
        return replace(params, split=1)
    units, _ = _split_units(params, sizes)
    per_split = cdiv(units, max(1, min(split, units)))
    return replace(params, split=cdiv(units, per_split))


def chunk(params: ReductionParams, sizes: Sequence[int]) -> int:
    """R per split program: whole loop steps (nested: outer R rows); all of R unsplit."""
    walked = folded_sizes(params, sizes)
    nr = prod(walked[k] for k in params.r_groups)
    if params.y_group is not None:
        return nr
    units, _ = _split_units(params, sizes)
    per_split = cdiv(units, params.split)
    if params.r_nest:
        return per_split
    return per_split * params.block_r * params.unroll if params.split > 1 else nr


def override(params: ReductionParams, sizes: Sequence[int], **fields: Any) -> ReductionParams:
    """``params`` with ``fields`` replaced and the split re-derived for ``sizes`` (a variant
    of ``benchmarks.tune``); ``split`` may be among the fields."""
    split = fields.pop("split", params.split)
    return with_split(replace(params, **fields), split, sizes)


def combine_block(params: ReductionParams, block_x: int) -> int:
    """Partials combined per step of a ticket finish (a power of two): up to ``split``, at
    most ``params.combine_elements`` per thread, so the combine adds no registers to the
    kernel (``ReductionTuning.combine_elements``)."""
    limit = params.combine_elements * THREADS_PER_WARP * params.num_warps
    block_s = 1
    while block_s < params.split and block_s * block_x < limit:
        block_s *= 2
    return block_s


def grid(params: ReductionParams, sizes: Sequence[int]) -> tuple[int, int]:
    """(programs over the kept groups, split programs along R)."""
    sizes = folded_sizes(params, sizes)
    nx = prod(sizes[k] for k in params.x_groups)
    if params.template == "inner":
        programs = cdiv(nx, params.block_x)
    elif params.y_group is not None:
        n0, n_y = sizes[0], sizes[params.y_group]
        programs = cdiv(n0, params.block_x) * cdiv(n_y, params.block_y) * (nx // (n0 * n_y))
    else:
        n0 = span_extent(params, sizes)
        programs = cdiv(n0, params.block_x) * (nx // n0 if n0 else 0)
    return programs, params.split


def span_extent(params: ReductionParams, sizes: Sequence[int]) -> int:
    """The columns an outer tile's blocks cover: the first ``x_span`` kept groups."""
    return prod(sizes[k] for k in params.x_groups[: params.x_span])


def finish_tile(params: ReductionParams) -> tuple[int, int]:
    """(BLOCK_X, BLOCK_S) of the finishing kernel: all partials of a column in one tile
    (``BLOCK_S``, a power of two), up to 4096 elements per program."""
    block_s = next_pow2(params.split * max(1, params.fold))
    return max(1, min(1024, 4096 // block_s)), block_s


def workspaces(segment: KernelSpec, p: Problem, params: ReductionParams) -> tuple[Workspace, ...]:
    """A split's ``[SPLIT, NX]`` partial results (one per result of each reduction, in
    its accumulator dtype), and the ticket counters of a same-launch finish."""
    if not params.partials:
        return ()
    nx = prod(folded_sizes(params, p.sizes)[k] for k in params.x_groups)
    dtypes = [accumulator_dtype(e) for e in segment.reductions for _ in range(n_results(e))]
    out = [Workspace(f"ws{k}", (params.split, nx), dtype) for k, dtype in enumerate(dtypes)]
    if params.finish == "ticket":
        out.append(Workspace("tickets", (grid(params, p.sizes)[0],), DataType.Int32, zeroed=True))
    return tuple(out)


def launches(segment: KernelSpec, p: Problem, params: ReductionParams) -> tuple[LaunchSpec, ...]:
    """The reduction kernel, then (a split with ``finish="kernel"``) its finishing kernel."""
    sizes = folded_sizes(params, p.sizes)  # what the main kernel walks
    nx = prod(sizes[k] for k in params.x_groups)
    nr = prod(sizes[k] for k in params.r_groups)
    npx = cdiv(span_extent(params, sizes), params.block_x) if params.template == "outer" else 1
    nr_arg = nr // sizes[params.r_groups[0]] if params.r_nest else nr
    main = LaunchSpec(
        0,
        grid(params, p.sizes),
        (
            ("NX", nx),
            ("NR", nr_arg),
            ("CHUNK", chunk(params, p.sizes)),
            ("NPX", npx),
            ("SPLIT_N", params.split),
        ),
    )
    if not params.partials or params.finish != "kernel":
        return (main,)
    block_x, _ = finish_tile(params)
    # a fold's [SPLIT, G * n0] partials are [SPLIT * G, n0]: G more partials per column
    _, _, nx_out, _ = p.kept_and_reduced()
    n_split = params.split * max(1, params.fold)
    return main, LaunchSpec(1, (cdiv(nx_out, block_x),), (("NX", nx_out), ("SPLIT", n_split)))
