"""Pointwise scheduler: every fusion segment without a reduction.

The iteration order is the dominant input's memory order (canonical groups).
The kernel tiles two axes, ``[BLOCK_Y, BLOCK_X]``: X is the dominant input's
stride-1 group; Y is the outputs' stride-1 group when it differs (a transpose:
loads and stores are then both coalesced, Triton converting the layout through
shared memory), else the next group. Other groups run along the grid.

A transpose tile is sized in bytes, not elements, from the fp32 tile that runs closest to
the copy bandwidth (64 x 64, 8 warps): each edge spans ``transpose_edge_bytes`` of the
widest dtype the kernel reads or writes (so loads and stores both move whole 256-byte
segments), and each thread moves ``transpose_thread_bytes`` per access (four 16-byte
vectors). A bf16 transpose thus gets a 128 x 128 tile and 16 warps, not the fp32 tile's
elements with half its bytes. A small transpose whose tiles would make fewer than
``transpose_fill`` programs per multiprocessor halves its tile's longer edge until they
make that many: its time is the latency of a few programs' loads.

A stride-1 group shorter than that edge (the 32 of a [32, 64, 256, 256] tensor whose
dim 0 is innermost) cannot fill it alone: a tile edge of 32 elements moves only 64-128
contiguous bytes per row. Its tile axis is then *flattened*: it spans the short group
(rounded up to a power of two, ``split``) and the group that continues it in that side's
memory, index ``% split`` and ``// split``, so that side still moves an edge of
contiguous bytes per row and the tile keeps its bytes. When the dominant input and the
outputs share a short stride-1 group but continue it with different groups (mem1230 ->
mem3210), the tile is a transpose of those continuations: X spans the short group and
the input's next one, Y the outputs' next one, so each store writes ``BLOCK_Y x short``
contiguous elements.

Around such a short group, each access keeps its runs whole (``flat_runs``,
``interleaved``, ``inner_runs``): a flattened axis whose groups continue one another in an
access's memory is offset as one index; a store whose short group is all of Y and is
continued by X writes the tile transposed and flattened as one run; a store whose short
group is X's (whole) and is continued by Y writes the tile regrouped as
``[BLOCK_X / c, BLOCK_Y * c]``, a run per row. Otherwise those stores move one element
(or one short group) at a time.

The knobs are the fields of ``PointwiseTuning``; the measurements behind them: see
benchmarks/NOTES.md, "Measurements behind the heuristics".

In generic mode (an access that is not affine, see ``analysis.index_walk``) the
groups are the single coordinates; that access's offset comes from
``codegen.generic_index`` instead of group strides.

Full blocks: Triton vectorizes a masked access only as far as the mask is constant, and
the mask ``i < n`` is constant over 16 elements only when the launcher specialized ``n``
as a multiple of 16. An unflattened X of any other extent (an odd 6274245, a 224186856
= 8 * odd) then loads and stores one element at a time (2.6x slower than eager on fp16).
Such a kernel (``full_blocks``) runs the body twice: unmasked along its unflattened tile
axes for the programs whose tile lies inside them, masked for the edge programs. Only
where some access could move vectors along X (stride 1 there, rows a multiple of 16
elements apart), or where the body is short: otherwise the second body gains no vector,
and doubling a long body costs more registers and code than the masks it saves
(``unaligned_full_blocks_ops``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.device import DeviceInfo
from ..dtypes import DataType, itemsize
from ..intmath import cdiv, next_pow2, prod
from ..segmenter.segments import KernelSpec
from .launch import LaunchSpec
from .measure import Overrides
from .problem import Problem, generic_fields, is_affine, stride_flags
from .warps import THREADS_PER_WARP, WarpSteps, warps_for

NAME = "pointwise"


@dataclass(frozen=True)
class PointwiseTuning:
    """The pointwise scheduler's knobs, one per rule (see the module's docstring)."""

    # a transpose tile's edge, in bytes of the widest dtype: loads and stores move whole segments
    transpose_edge_bytes: int = 256
    # a flattened tile axis whose groups continue one another in an access's memory is
    # that access's one run (``flat_runs``); 0: each group keeps its index and mask
    flat_runs: int = 1
    # a transposed tile whose Y is all of a store's short stride-1 group, continued by X,
    # is stored as one run (``interleaved``); 0: element by element along Y
    interleave: int = 1
    # ... in at most this many elements (bounds a 1-byte dtype's tile and its shared memory)
    transpose_edge_max: int = 128
    # ... bytes per thread and access (four 16-byte vectors): they set the tile's warps
    transpose_thread_bytes: int = 64
    # ... at most this many elements per thread (the values sit in fp32 registers)
    transpose_thread_elements: int = 32
    # ... and at least this many warps (enough loads in flight for a small tile)
    transpose_min_warps: int = 4
    # ... and at most this many
    transpose_max_warps: int = 16
    # a transpose whose tiles make fewer than this many programs per multiprocessor
    # halves its longer edge (not a Y it covers whole), down to
    # ``transpose_fill_edge_bytes``, until they make that many (``filled_transpose_tile``);
    # 0: off. H100 at adcfdf7 (tune-ab48- and tune-ab49-20261206-adcfdf7-h100.txt), the
    # random cases whose tile it changed, 2 against off: geomean 1.14x over 10 (a [561,
    # 784] fp32 transpose 601 -> 647 GB/s, bf16 [1024, 650] 434 -> 514, [418, 2048] 629
    # -> 652, fp32 [4, 128256] 777 -> 838, r1_057 1.72x, r3_084 0.99x); 4 lost on two of
    # four (549 against 629 GB/s). Cases of a few microseconds: about 10% noise per run
    transpose_fill: int = 2
    transpose_fill_edge_bytes: int = 64
    # ... and another tile, down to this many bytes of its widest dtype
    # (``filled_tile_elements``); 0: off. Off: the same runs lost more than they won
    # (fp16 [6, 16, 56, 56] add 371 -> 326 GB/s at 4, bf16 [2519, 1024] 1912 -> 1762, a
    # bf16 [19, 256, 14, 14] add 1039 -> 868 at 8; take_along_axis of 64 of 4096 per row,
    # fp32 0.0180 -> 0.0188 ms at 4, bf16 0.0152 -> 0.0165; tune-ops-ab47-20261206-adcfdf7)
    tile_fill: int = 0
    tile_fill_bytes: int = 1024
    # a transpose's programs walk its Y (the stores' stride-1 axis) before X, so that
    # neighbouring programs complete each output line (a store of a tile's edge that is
    # no multiple of a sector, or not aligned to one, leaves partial sectors that the
    # neighbour along Y completes); 0: X first (the loads' lines first). H100 at 4170aed
    # (tune-ab18-20261206-4170aed-h100.txt), the rule's tile: fp32 [104907, 1051]
    # column-major to row-major 1534 -> 2531 GB/s, bf16 [825, 5, 623, 61] 1425 -> 2468,
    # fp32 [2, 668, 6144] 2568 -> 2803, bf16 [3852, 6144] 1914 -> 2193; 7% lost on a
    # [4 x 14, 32000] fp32 one of 4-row Y tiles (1503 -> 1400), the rest within noise
    transpose_store_first: int = 1
    # bytes of the widest dtype in a tile that is not a transpose: 4 KB, 4 warps (32 bytes
    # per thread; H200, tune-flat-20261202-1fd4478: fp32 chains 98.4-99.2% of the copy
    # bandwidth in [1024] / 4 warps where [4096] / 8 read 95.3-96.2%, bf16 chains 82-88%
    # in [2048] / 4 against 80-86%)
    tile_bytes: int = 4096
    # a generic tile (index maps: gathers, cat, pad) holds at least this many elements: a
    # gather's elements are loaded one by one, and its int64 indices, the widest dtype,
    # would size it at 512 (4 a thread); of the others only tiles of 8-byte dtypes grow.
    # 0: tile_bytes alone.
    # H100 at 9ed053e (tune-ops-take_along_axis_full-20261206-9ed053e-h100.json), a row
    # permutation of [8192, 4096] by int64 indices: fp32 2434 -> 2691 GB/s (2048: 2944),
    # bf16 2569 -> 2776 (2048: 1604); torch.compile 2713 and 2801 in the same run
    gather_tile_elements: int = 1024
    # elements of a tile whose load is broadcast along Y (read once per column, reused by
    # its rows), spanning this many Y rows
    broadcast_tile_elements: int = 4096
    broadcast_rows: int = 16
    # ... its warps by its elements, (least elements, warps) steps (``warps.warps_for``)
    warps: WarpSteps = ((4096, 8), (512, 4), (0, 2))
    # full blocks (the module's docstring) also where no access could move vectors along X
    # (``_vector_rows``: rows of a stride that is no multiple of 16 elements), in regions
    # of at most this many math ops (``Problem.math_ops``): the unmasked body still saves
    # each access's mask, while a long body, doubled, costs more than that. H100 at e837a73
    # (tune-ab39-20261206-e837a73-h100.txt), kernel time of one body against two: copies
    # and adds bf16 [5259, 50257] 542 -> 470 us with two, fp32 [104907, 1051] 361 -> 335,
    # bf16 [825, 5, 623, 61] 401 -> 381, fp32 [39307, 8192] 914 -> 901, fp16 [8 x 211,
    # 50257] 129 either way; tanh chains (4 ops) fp32 [10526, 509] 15.1 us with one, 21.0
    # with two (104 registers a thread against 48), bf16 [119111, 6144] 1108 -> 1204.
    # -1: never
    unaligned_full_blocks_ops: int = 2
    # a transpose whose loads' and store's stride-1 groups are both short and continued by
    # the same group (fp32 [4, 14, 32000], dim 1 innermost, stored [14, 32000, 4]) flattens
    # that group into Y, the store's side, so each store runs Y's length, as Inductor's
    # tile does; 0: into X, the loads' side. H100 at e837a73 (tune-ab39), kernel time:
    # that fp32 copy 6.6 -> 5.0 us (torch.compile's 4.5), a bf16 tanh chain of [4, 30,
    # 128256] stored [30, 128256, 4] 72.4 -> 24.9 us; wider Y tiles did no better
    continuation_to_store: int = 1
    # a transpose whose Y is a store's whole stride-1 group (one tile spans it), continued
    # in that store by X's inner group, gives Y's share of the tile to X
    # (``interleaved_tile``'s X): each tile row then stores one run of size_y x BLOCK_X
    # elements. H100 at b4938fe (tune-ab37-20261206-b4938fe-h100.txt), kernel time: fp32
    # [324, 3, 28, 28] stored C innermost then W 4.3 -> 3.3 us (64 x 4 -> 1024 x 4, 8
    # warps; torch.compile 2.9), bf16 channels-last [384, 256, 7, 7] stored H then C 9.4
    # -> 7.9 (64 x 8 -> 256 x 8; torch.compile 6.7), a Y of 28 10.7 -> 10.8. Where the
    # store continues Y with X's flattened outer group instead ([4, 14, 32000] stored
    # [14, 32000, 4]) the wide tile lost (6.6 -> 7.2 us): left out. 0: off
    whole_y_to_x: int = 1
    # a transpose tile's X spanning at most this many bytes (half a sector) gives its
    # share of the tile to Y (``transpose_tile``), and Y flattens with the group that
    # continues it when X and Y fill under half a tile (``filled_y``); 0 turns both off.
    # Measured (H200, tune-pointwise-short-edges-20261202-0f8b1e1): 8-16-byte X rows
    # 425 -> 2796 GB/s ([2, 16, 12601685] sliced), 1578 -> 2587 (mem0231 -> mem2013, 4 x
    # fp32); 64-byte X rows (bf16 32) lost (2951 -> 1681), and so did a short Y giving
    # its share to X (1652 -> 1356, 3307 -> 2559: never done)
    short_edge_bytes: int = 16
    # a transpose whose row strides are no multiple of 16 bytes (no vector loads or
    # stores) sizes its tile as for elements of this many bytes: a bf16 [119111, 6144]
    # column-major transpose ran 1335 GB/s in the 2-byte 128 x 128 tile, 2552 in 64 x 64
    # at 8 warps (H200, tune-tr-20261202-6cd3542)
    unaligned_tile_item: int = 4
    # elements of an aligned run along X that one Philox call serves, where a random op's
    # linear index walks X with unit stride (``coordinate_runs``): a call's 4 uniform
    # Float, Half or BFloat16 numbers, 2 normal or Double ones (``ir.ops.random``); 0 or 1:
    # each element makes its run's call and selects its words (the same numbers), which
    # the compiler shares only where it proves the runs aligned (a flat contiguous kernel,
    # not rows of a runtime stride: 19 ``mul.hi`` per element in sm_90 PTX against 4.9).
    # A call at each element's own index (before runs) made a dropout compute-bound: bf16
    # [8192, 8192] 1263 GB/s against eager's 2329, fp32 2599 against 2869 (H200)
    philox_run: int = 4
    # a short stride-1 group continued in an access's memory by a group at its extent
    # rounded up to a power of two (3 bf16 channels of 4, a slice of padded rows: strides
    # 1, 4, 56) flattens with that group as an exactly continued one does (``flattened``,
    # ``shared_short_inner``): the axis's rows are contiguous, the padding's lanes masked.
    # A bf16 copy of [343288, 3, 14, 14] laid out so (r1_036) read 6 bytes of every 84
    # along its tile's X, at 24% of the copy bandwidth, as eager and torch.compile did
    # (H100 at c4ae9f7). Not measured yet: timed by the measured choice only. 0: off
    padded_continuation: int = 0
    # measured choice (``schedulers/measure.py``): a transpose's tile at half the edge (at
    # the warps the thread bytes give, and at twice as many) and at twice the edge are
    # timed against the rule's; at 6cd3542 (H200) no one tile won every unaligned
    # transpose: bf16 [119111, 6144] best at 64 x 64 / 8 warps (2552 GB/s), fp16
    # [8 x 211, 50257] at 32 x 32 / 4 (2803, 64 x 64 / 8: 2508)
    alternatives: tuple[Overrides, ...] = (
        (("padded_continuation", 1),),  # first: it changes only padded layouts' plans
        (("transpose_edge_bytes", 128),),
        (("transpose_edge_bytes", 128), ("transpose_thread_bytes", 32)),
        (("transpose_edge_bytes", 512),),
    )


DEFAULT_TUNING = PointwiseTuning()


@dataclass(frozen=True)
class PointwiseParams:
    scheduler: str
    gx: int  # group tiled along BLOCK_X (the inner one, if flattened)
    gy: int | None  # group tiled along BLOCK_Y (None: no second tile axis)
    n_groups: int
    block_x: int
    block_y: int
    num_warps: int
    transpose: bool  # Y is a store's contiguous axis: loads run along X, stores along Y
    index64: bool
    zero_strides: tuple[tuple[bool, ...], ...]  # [access][group]
    unit_strides: tuple[tuple[bool, ...], ...]
    gx2: int | None = None  # group flattened outside gx on X (None: X spans gx alone)
    split_x: int = 1  # X index % split_x walks gx, // split_x walks gx2
    gy2: int | None = None  # the same for Y
    split_y: int = 1
    rest_first: bool = False  # program ids walk the grid's other groups before X and Y
    y_first: bool = False  # program ids walk Y before X (a flattened Y: stores' runs)
    generic: bool = False  # some access walks its chain (not affine)
    # (tensor index, dim) of the dims the run made broadcast that the walk reads at 0
    # (``runtime.extents``; set by the pipeline, not the heuristics)
    made_ones: tuple[tuple[int, int], ...] = ()
    affine: tuple[bool, ...] = ()  # per access, in generic mode
    group_dims: tuple[int, ...] = ()  # iteration coordinate of each group, in generic mode
    based: tuple[int, ...] = ()  # accesses whose offset adds a base argument ``b<a>``
    # programs whose tile lies inside every unflattened tile axis run an unmasked copy of
    # the body (``full_blocks``: see the module's docstring)
    full_blocks: bool = False
    # per access: the elements of the aligned runs a coordinate walks along X, each one
    # Philox call of a random op (``coordinate_runs``); () when none is longer than 1
    coordinate_runs: tuple[int, ...] = ()
    # the flattened tile axes ("x", "y") whose split is the inner group's whole extent:
    # their index is one run of both groups, masked once (``flat_runs``)
    whole_splits: str = ""
    # per access: those of ``whole_splits`` along which its outer group continues its
    # inner one in memory, so its offset there is the axis's index times one stride
    flat_runs: tuple[str, ...] = ()
    # stores whose stride-1 group is all of Y (BLOCK_Y its extent) and continue it with X:
    # the tile is transposed and stored as one run (``interleaved``)
    interleaved: tuple[int, ...] = ()
    # stores whose stride-1 group is X's whole inner group (``whole_splits`` "x"),
    # continued by Y: the tile is regrouped and stored in runs along Y (``inner_runs``)
    inner_runs: tuple[int, ...] = ()
    # the problem left out reduced coordinates no access moves along (``Problem.repeat``):
    # one-element sums, and a Welford's M2 and count, are times the argument ``NREP``
    repeat: bool = False

    @property
    def pattern(self) -> str:
        """The canonical groups' kinds, innermost first: all kept ("X")."""
        return "X" * self.n_groups


def can_schedule(
    segment: KernelSpec,
    p: Problem | None,
    device: DeviceInfo,
    tuning: PointwiseTuning = DEFAULT_TUNING,
) -> str | None:
    """Any segment without a reduction, or whose reductions reduce extents of 1 only (each
    then computed in place, ``codegen.values``: a copy at the bandwidth of a pointwise
    kernel, not a reduction kernel's one-element rows)."""
    if segment.scan is not None:
        return f"the segment holds a per-row {segment.scan.op.name} (a scan kernel's)"
    if p is None:
        return "no problem could be built for the segment's extents"
    if (segment.reductions or segment.group is not None) and p.family != "pointwise":
        return "the segment has a reduction"
    if p.cross:
        return "the segment has reductions over its kept dims (cross reductions)"
    if device.interpreted and any(
        a.value is not None
        and a.chain
        and a.chain[-1].attrs.get("accumulate")
        and a.tv.dtype is DataType.BFloat16
        for a in segment.accesses
    ):
        return "bf16 atomic adds do not run in Triton's interpreter (they do on the GPU)"
    return None


def heuristics(
    p: Problem, device: DeviceInfo, tuning: PointwiseTuning = DEFAULT_TUNING
) -> PointwiseParams:
    groups = p.groups
    n = len(groups)
    gx, gy, gx2, gy2, split_x, split_y = 0, None, None, None, 1, 1
    transpose = False
    edge = edge_elements(widest_itemsize(p), tuning)
    padded = bool(tuning.padded_continuation)
    for a in p.stores():
        inner = p.innermost_group(a)
        if inner is not None and inner != gx and n > 1:
            gy, transpose = inner, True
            if tuning.continuation_to_store and _same_continuation(p, a, gx, gy, edge):
                gy2, split_y = flattened(p, a, gy, {gx}, edge, padded)
                gx2, split_x = flattened(p, 0, gx, {gy, gy2}, edge, padded)
            else:
                gx2, split_x = flattened(p, 0, gx, {gy}, edge, padded)
                gy2, split_y = flattened(p, a, gy, {gx, gx2}, edge, padded)
            break
    if not transpose and n > 1:
        gy, gx2, split_x = shared_short_inner(p, edge, padded)
        transpose = gy is not None
    if gy is None and n > 1:
        gy = 1
    size_x = split_x * groups[gx2].size if gx2 is not None else groups[0].size if n else 1
    size_y = (
        split_y * groups[gy2].size if gy2 is not None else groups[gy].size if gy is not None else 1
    )
    if tuning.short_edge_bytes and gy is not None and gy2 is None:
        gy2, split_y = filled_y(p, gx, gx2, gy, size_x, transpose, edge, tuning)
        if gy2 is not None:
            size_y = split_y * groups[gy2].size
    rest_first = y_first = False
    inter: tuple[int, ...] = ()
    if transpose:
        assert gy is not None  # transpose is set only with gy
        elem = widest_itemsize(p)
        if _unaligned(p, (gx, gx2, gy, gy2)):
            # no 16-byte vectors along the tile: the tile of elements, not of bytes
            elem = max(elem, tuning.unaligned_tile_item)
        bx, by, warps = transpose_tile(size_x, size_y, elem, tuning)
        inter = interleaved(p, gx, gx2, gy, gy2, by) if tuning.interleave else ()
        if inter or (tuning.whole_y_to_x and _y_whole_before_x(p, gx, gy, gy2, by)):
            bx, warps = interleaved_tile(size_x, by, elem, tuning)
        else:
            others = prod(g.size for k, g in enumerate(groups) if k not in (gx, gx2, gy, gy2))
            bx, by, warps = filled_transpose_tile(
                size_x, size_y, others, bx, by, warps, elem, device, tuning
            )
        rest_first = gy2 is None and size_y <= by and _store_continues_on_grid(p, gy, {gx, gx2, gy})
        # a flattened Y spans the stores' contiguous run across its tiles: neighbouring
        # programs along Y then write neighbouring memory
        y_first = gy2 is not None or (bool(tuning.transpose_store_first) and not rest_first)
    else:
        # a load broadcast along Y (zero stride there: per-column statistics of a
        # normalization's epilogue, a bias) is read once per tile column and reused by
        # the tile's rows, not once per element
        broadcast = gy is not None and _broadcast_along(p, gx, gy)
        rows = tuning.broadcast_rows if broadcast else 1
        elements = tuning.broadcast_tile_elements if broadcast else tile_elements(p, tuning)
        if not broadcast:
            others = prod(g.size for k, g in enumerate(groups) if k not in (gx, gx2, gy, gy2))
            elements = filled_tile_elements(p, size_x, size_y, others, elements, device, tuning)
        bx = min(next_pow2(size_x), max(1, elements // rows))
        by = min(next_pow2(size_y), max(1, elements // bx))
        warps = warps_for(bx * by, tuning.warps)
    zero, unit = stride_flags(p)
    runs = inner_runs(p, gx, gx2, split_x, gy, gy2, bx) if tuning.interleave else ()
    full = _needs_full_blocks(p, gx, gx2, bx, bool(inter or runs), tuning)
    return PointwiseParams(
        NAME,
        gx,
        gy,
        n,
        bx,
        by,
        warps,
        transpose,
        p.needs_int64,
        zero,
        unit,
        gx2,
        split_x,
        gy2,
        split_y,
        rest_first,
        y_first,
        **generic_fields(p),
        full_blocks=full,
        coordinate_runs=coordinate_runs(p, gx, gx2, bx, tuning),
        **(flat_runs(p, ((gx, gx2, split_x), (gy, gy2, split_y))) if tuning.flat_runs else {}),
        interleaved=inter,
        inner_runs=runs,
        repeat=p.repeat > 1,
    )


def inner_runs(
    p: Problem, gx: int, gx2: int | None, split_x: int, gy: int | None, gy2: int | None, bx: int
) -> tuple[int, ...]:
    """The stores a tile whose X is a short group and the group continuing it in the
    input writes in runs along Y: the short group is the store's stride-1 group, whole in
    X (its extent the split), and Y continues it in the store's memory. A bf16
    [7493668, 16, 2] input stored as [16, 7493668, 2] wrote each pair apart (4 bytes a
    store, at 36% of eager's, H200 2924fc7); regrouped as [BLOCK_X / 2, BLOCK_Y * 2], each
    row of the tile is one run of the output."""
    if p.generic or p.based or gy is None or gx2 is None or gy2 is not None:
        return ()
    if split_x != p.groups[gx].size or bx % split_x or split_x < 2:
        return ()
    return _run_stores(p, gx, gy)


def _run_stores(p: Problem, short: int, then: int) -> tuple[int, ...]:
    """The stores (none broadcast) whose stride-1 group is ``short``, continued in their
    memory by ``then``."""
    return tuple(
        a
        for a in p.stores()
        if p.groups[short].strides[a] == 1
        and continuation(p, a, short) == then
        and all(g.strides[a] != 0 for g in p.groups)
    )


def override(params: PointwiseParams, **fields: Any) -> PointwiseParams:
    """``params`` with ``fields`` replaced (a tuning tool's variant); an interleaved store
    needs BLOCK_Y to be its group's extent, so a changed BLOCK_Y stores element-wise."""
    out = replace(params, **fields)
    if out.block_y != params.block_y:
        out = replace(out, interleaved=())
    if out.block_x % max(1, out.split_x):
        out = replace(out, inner_runs=())
    return out


def interleaved(
    p: Problem, gx: int, gx2: int | None, gy: int | None, gy2: int | None, by: int
) -> tuple[int, ...]:
    """The stores a transposed tile writes as one run: Y is one group of the store's
    stride-1 run, whole in the tile (``BLOCK_Y`` its extent), and X the group that
    continues it there. A fp16 [4, 245384018] input stored as [245384018, 4] wrote the
    tile's four 2-byte rows element by element (at 81% of eager's, H200 2924fc7); the
    [BLOCK_Y, BLOCK_X] values transposed and flattened are ``BLOCK_X * BLOCK_Y``
    consecutive elements."""
    if p.generic or gy is None or gx2 is not None or gy2 is not None or p.based:
        return ()
    if p.groups[gy].size != by or by < 2:
        return ()
    return _run_stores(p, gy, gx)


def _same_continuation(p: Problem, store: int, gx: int, gy: int, edge: int) -> bool:
    """Whether the dominant input's stride-1 group ``gx`` and ``store``'s ``gy`` are both
    shorter than ``edge`` (rounded up to powers of two) and continued in their memory by
    one and the same group (``continuation_to_store``)."""
    if max(next_pow2(p.groups[gx].size), next_pow2(p.groups[gy].size)) >= edge:
        return False
    after = continuation(p, 0, gx)
    return after is not None and after == continuation(p, store, gy)


def _y_whole_before_x(p: Problem, gx: int, gy: int, gy2: int | None, by: int) -> bool:
    """Whether Y is one group, whole in the tile, that a store (of stride 1 along it)
    continues with X's inner group (``whole_y_to_x``)."""
    if p.generic or gy2 is not None or p.groups[gy].size > by:
        return False
    return any(p.groups[gy].strides[a] == 1 and continuation(p, a, gy) == gx for a in p.stores())


def flat_runs(p: Problem, axes: tuple[tuple[int | None, int | None, int], ...]) -> dict[str, Any]:
    """``whole_splits`` and ``flat_runs`` of the tile axes ``((inner, outer, split), ...)``
    (x, then y). A bf16 [7493668, 16, 2] input transposed to [16, 7493668, 2] tiles X as
    the 2 of the short group and the 16 that continue it; offsetting that as ``i % 2 +
    (i // 2) * s`` with ``s`` = 2 at run time hid the run of 32 from Triton, so the loads
    moved one element each (at 36% of eager's, H200 2924fc7). An axis index ``i`` whose
    groups continue one another in an access's memory is that access's offset ``i * s``
    instead, its mask ``i < split * n_outer``."""
    if p.generic:
        return {}
    split_axes = [
        (name, inner, outer)
        for name, (inner, outer, split) in zip("xy", axes)
        if inner is not None and outer is not None and split == p.groups[inner].size
    ]
    if not split_axes:
        return {}
    whole = "".join(name for name, _, _ in split_axes)
    runs = []
    for a in range(len(p.dtypes)):
        along = ""
        for name, inner, outer in split_axes:
            if p.groups[inner].strides[a] != 0 and continuation(p, a, inner) == outer:
                along += name
        runs.append(along)
    return {"whole_splits": whole, "flat_runs": tuple(runs)}


def filled_tile_elements(
    p: Problem,
    size_x: int,
    size_y: int,
    others: int,
    elements: int,
    device: DeviceInfo,
    tuning: PointwiseTuning,
) -> int:
    """Elements of a tile that is not a transpose whose tiles (``others``: the extent of
    the groups outside the tile) make fewer than ``tile_fill`` programs per
    multiprocessor: halved, down to ``tile_fill_bytes`` of the widest dtype, until they
    make that many. A gather of 64 scattered elements from each of 8192 rows made 512
    programs of 1024 elements at 4 warps: a quarter of the warps an H100 holds, each
    waiting on its loads. 0: the tile as it is."""
    if not tuning.tile_fill:
        return elements
    want = tuning.tile_fill * device.sm_count
    least = max(1, tuning.tile_fill_bytes // widest_itemsize(p))

    def programs(n: int) -> int:
        bx = min(next_pow2(size_x), n)
        return cdiv(size_x, bx) * cdiv(size_y, min(next_pow2(size_y), max(1, n // bx))) * others

    while elements > least and programs(elements) < want:
        elements //= 2
    return elements


def tile_elements(p: Problem, tuning: PointwiseTuning) -> int:
    """Elements of a tile that is not a transpose: ``tile_bytes`` of the widest dtype that
    moves along X (group 0). An access of stride 0 there is one element per tile row: the
    int64 row indices of an index_select of bf16 rows sized its tile as 512 elements (1 KB
    of rows a program) where the rows moved 2 bytes an element."""
    elements = max(1, tuning.tile_bytes // widest_itemsize(p, along=0))
    if p.generic:
        elements = max(elements, tuning.gather_tile_elements)
    return elements


SPECIALIZED_MULTIPLE = 16  # Triton's launcher marks an int argument divisible by 16


def _needs_full_blocks(
    p: Problem, gx: int, gx2: int | None, bx: int, run_stores: bool, tuning: PointwiseTuning
) -> bool:
    """Whether X (the loads' vectorized axis), unflattened, has an extent the launcher does
    not specialize as a multiple of 16, spans at least one whole tile, and some access
    could move vectors along it unmasked (``_vector_rows``, or stores of whole runs:
    ``run_stores``) or the body is short (``unaligned_full_blocks_ops``). (A transpose's
    Y of such an extent gains nothing: the dense output's rows are then that many
    elements apart, never 16-byte aligned.)"""
    if p.generic or not p.groups or gx2 is not None:
        return False
    n = p.groups[gx].size
    if n % SPECIALIZED_MULTIPLE == 0 or not n > bx >= SPECIALIZED_MULTIPLE:
        return False
    if run_stores or _vector_rows(p, gx):
        return True
    return p.math_ops <= tuning.unaligned_full_blocks_ops


def _vector_rows(p: Problem, gx: int) -> bool:
    """Whether some access could load or store vectors along X: stride 1 there and a
    multiple of 16 elements along every other group (the launcher's specialization), or a
    base offset (specialized at run time). Rows of another stride start unaligned, so the
    unmasked body gains no vector, only the masks: a fp32 transpose of [10526, 509] with
    tanh took 104 registers a thread in both bodies, 48 in one (sm_90), at 8 warps two
    programs a multiprocessor against five."""
    for a in range(p.n_loads + p.n_stores):
        if not p.is_affine(a) or p.groups[gx].strides[a] != 1:
            continue
        others = (g.strides[a] for k, g in enumerate(p.groups) if k != gx)
        if a in p.based or all(st % SPECIALIZED_MULTIPLE == 0 for st in others):
            return True
    return False


def coordinate_runs(
    p: Problem, gx: int, gx2: int | None, bx: int, tuning: PointwiseTuning
) -> tuple[int, ...]:
    """Per access, the elements of the runs that one Philox call may serve along X: a
    random op's coordinate (its linear index, ``Problem.random``) that walks an
    unflattened X with stride 1, every other group by a multiple of the run and has no
    base offset starts each run of BLOCK_X at a multiple of the run (BLOCK_X too is one).
    Runs are powers of two up to ``philox_run``; other accesses have runs of 1. () when
    no run is longer than 1."""
    most = min(bx, tuning.philox_run)
    if not p.groups or gx2 is not None or most < 2:
        return ()
    runs = [_aligned_run(p, a, gx, most) if a in p.random else 1 for a in range(len(p.dtypes))]
    return tuple(runs) if max(runs, default=1) > 1 else ()


def _aligned_run(p: Problem, access: int, gx: int, most: int) -> int:
    """The largest power of two up to ``most`` that divides ``access``'s strides along
    every group but ``gx``, where its stride is 1 (else 1)."""
    if not p.is_affine(access) or access in p.based or p.groups[gx].strides[access] != 1:
        return 1
    run = 1 << (most.bit_length() - 1)
    others = [g.strides[access] for k, g in enumerate(p.groups) if k != gx]
    while run > 1 and any(s % run for s in others):
        run //= 2
    return run


def _unaligned(p: Problem, tiled: tuple[int | None, ...]) -> bool:
    """Some affine access steps along a tiled group by a stride that is no multiple of
    16 bytes (its rows are not vector-aligned)."""
    for a in range(p.n_loads + p.n_stores):
        if not p.is_affine(a):
            continue
        item = itemsize(p.dtypes[a])
        for k in tiled:
            if k is None:
                continue
            st = p.groups[k].strides[a]
            if st not in (0, 1) and (st * item) % 16:
                return True
    return False


def _broadcast_along(p: Problem, gx: int, gy: int) -> bool:
    """Some affine load varies along group ``gx`` and not along ``gy``."""
    gx_g, gy_g = p.groups[gx], p.groups[gy]
    return any(
        p.is_affine(a) and gy_g.strides[a] == 0 and gx_g.strides[a] != 0 for a in range(p.n_loads)
    )


def _store_continues_on_grid(p: Problem, gy: int, tiled: set[int | None]) -> bool:
    """Whether every store continues its stride-1 run past the Y group (which one tile
    covers whole) in a group the grid walks: consecutive programs along that group then
    write consecutive memory (mem1230 -> mem3210: each program writes a 4 KB run per X
    row; walking X first put neighbouring programs 1 MiB apart)."""
    stores = list(p.stores())
    return bool(stores) and all(
        (c := continuation(p, a, gy)) is not None and c not in tiled for a in stores
    )


def continuation(p: Problem, access: int, k: int, extent: int | None = None) -> int | None:
    """The group that continues group ``k`` in ``access``'s memory (its stride is ``k``'s
    extent, or ``extent``, times ``k``'s stride), or None."""
    want = p.groups[k].strides[access] * (extent or p.groups[k].size)
    if want == 0 or not p.is_affine(access):
        return None
    return next((j for j, g in enumerate(p.groups) if j != k and g.strides[access] == want), None)


def continued_by(p: Problem, access: int, k: int, padded: bool) -> int | None:
    """``continuation``; where there is none and ``padded``, the group that continues
    ``k`` at its extent rounded up to a power of two (``padded_continuation``)."""
    exact = continuation(p, access, k)
    size = p.groups[k].size
    if exact is not None or not padded or next_pow2(size) == size:
        return exact
    return continuation(p, access, k, next_pow2(size))


def flattened(
    p: Problem, access: int, k: int, taken: set[int | None], edge: int, padded: bool = False
) -> tuple[int | None, int]:
    """(outer group, split) of a tile axis whose inner group ``k`` is ``access``'s
    stride-1 group: when ``k``'s extent, rounded up to a power of two (``split``), is
    under ``edge`` elements and the group that continues ``k`` in ``access``'s memory
    (``padded``: or at ``split`` times its stride) is not ``taken`` by the other axis,
    the axis spans both; else (None, 1)."""
    split = next_pow2(p.groups[k].size)
    outer = continued_by(p, access, k, padded)
    if split >= edge or outer is None or outer in taken:
        return None, 1
    return outer, split


def filled_y(
    p: Problem,
    gx: int,
    gx2: int | None,
    gy: int,
    size_x: int,
    transpose: bool,
    edge: int,
    tuning: PointwiseTuning,
) -> tuple[int | None, int]:
    """(gy2, split_y) that flatten Y with the group continuing ``gy`` when X and ``gy``
    together fill less than half a tile (``tile_elements``; a transpose's ``edge`` x
    ``edge``): a [2, 16, 12601685] input sliced along dim 1 has no group to merge, and a
    2 x 16 tile ran 12.6M programs of 32 elements at 14% of torch.compile. Y continues in
    the stores' memory on a transpose (its stores stay contiguous), else in the dominant
    input's, else in a store's. (None, 1) when nothing continues ``gy``."""
    split = next_pow2(p.groups[gy].size)
    if transpose:
        target, bx = edge * edge, min(next_pow2(size_x), edge)
        cap_y = edge
    else:
        target = tile_elements(p, tuning)
        bx = min(next_pow2(size_x), target)
        cap_y = target // bx
    if split >= cap_y or 2 * bx * split >= target:
        return None, 1
    accesses = list(p.stores()) if transpose else [0, *p.stores()]
    for a in accesses:
        outer = continuation(p, a, gy)
        if outer is not None and outer not in (gx, gx2):
            return outer, split
    return None, 1


def shared_short_inner(
    p: Problem, edge: int, padded: bool = False
) -> tuple[int | None, int | None, int]:
    """(gy, gx2, split_x) when the dominant input and a store share a stride-1 group
    shorter than ``edge`` but continue it with different groups: Y is the store's
    continuation, X spans the short group and the input's (``padded``: the input's may
    continue it at its power-of-two extent). (None, None, 1) otherwise."""
    split = next_pow2(p.groups[0].size)
    if split >= edge:
        return None, None, 1
    load_next = continued_by(p, 0, 0, padded)
    for a in p.stores():
        store_next = continuation(p, a, 0)
        if store_next is not None and store_next != load_next:
            return store_next, load_next, split if load_next is not None else 1
    return None, None, 1


def widest_itemsize(p: Problem, along: int | None = None) -> int:
    """Bytes per element of the widest dtype the kernel loads or stores (4 if none); with
    ``along``, of the accesses that do not stay in place along that group (stride 0)."""
    accesses = list(range(p.n_loads + p.n_stores))
    if along is not None and p.groups:
        accesses = [a for a in accesses if not (p.is_affine(a) and p.groups[along].strides[a] == 0)]
    return max((itemsize(p.dtypes[a]) for a in accesses), default=4)


def edge_elements(elem_bytes: int, tuning: PointwiseTuning) -> int:
    """Elements of a transpose tile's edge: ``transpose_edge_bytes`` (at most
    ``transpose_edge_max``)."""
    return min(tuning.transpose_edge_max, max(1, tuning.transpose_edge_bytes // elem_bytes))


def transpose_tile(
    size_x: int, size_y: int, elem_bytes: int, tuning: PointwiseTuning
) -> tuple[int, int, int]:
    """(BLOCK_X, BLOCK_Y, num_warps) of a transpose: edges of ``transpose_edge_bytes``
    (capped by the extents), warps for ``transpose_thread_bytes`` per thread, clamped to
    ``transpose_min_warps`` .. ``transpose_max_warps``.

    An X of at most ``short_edge_bytes`` gives its share of the tile to Y (the tile keeps
    ``edge x edge`` elements): X's runs cannot be longer anyway, and a 2 x 64 tile of a
    [2, 16 x 12601685] transpose moved 128 elements per program."""
    edge = edge_elements(elem_bytes, tuning)
    area = edge * edge
    bx = min(next_pow2(size_x), edge)
    by = min(next_pow2(size_y), edge)
    if bx <= tuning.short_edge_bytes // elem_bytes:
        by = min(next_pow2(size_y), area // bx)
    return bx, by, transpose_warps(bx, by, elem_bytes, tuning)


def filled_transpose_tile(
    size_x: int,
    size_y: int,
    others: int,
    bx: int,
    by: int,
    warps: int,
    elem_bytes: int,
    device: DeviceInfo,
    tuning: PointwiseTuning,
) -> tuple[int, int, int]:
    """(BLOCK_X, BLOCK_Y, num_warps) of a transpose whose tiles (``others``: the extent
    of the groups outside the tile) make fewer than ``transpose_fill`` programs per
    multiprocessor: its longer edge halves, down to ``transpose_fill_edge_bytes``, until
    they make that many. A small transpose's time is the latency of a program's loads,
    and more, smaller programs keep more of them in flight (a [561, 784] fp32 transpose
    made 111 programs of 64 x 64 for 132 multiprocessors). 0: the tile as it is."""
    if not tuning.transpose_fill:
        return bx, by, warps
    want = tuning.transpose_fill * device.sm_count
    least = max(1, tuning.transpose_fill_edge_bytes // elem_bytes)
    start = (bx, by)
    whole_y = size_y <= by  # a Y the tile covers stays whole (its stores run on the grid)
    while cdiv(size_x, bx) * cdiv(size_y, by) * others < want:
        if by >= bx and by > least and not whole_y:
            by //= 2
        elif bx > least:
            bx //= 2
        else:
            break
    if (bx, by) == start:
        return bx, by, warps
    return bx, by, transpose_warps(bx, by, elem_bytes, tuning)


def transpose_warps(bx: int, by: int, elem_bytes: int, tuning: PointwiseTuning) -> int:
    """Warps of a transpose tile: ``transpose_thread_bytes`` per thread, clamped to
    ``transpose_min_warps`` .. ``transpose_max_warps``."""
    per_thread = min(
        tuning.transpose_thread_elements, max(1, tuning.transpose_thread_bytes // elem_bytes)
    )
    warps = bx * by // (per_thread * THREADS_PER_WARP)
    return min(tuning.transpose_max_warps, max(tuning.transpose_min_warps, warps))


def interleaved_tile(
    size_x: int, by: int, elem_bytes: int, tuning: PointwiseTuning
) -> tuple[int, int]:
    """(BLOCK_X, num_warps) of a transposed tile stored as one run (``interleaved``): Y,
    the store's whole short group, gives its share of the ``edge x edge`` tile to X, whose
    length is the run's. The transpose's 64 x 4 bf16 tile stored runs of 256 elements, 2 a
    thread (4-byte stores)."""
    edge = edge_elements(elem_bytes, tuning)
    bx = min(next_pow2(size_x), max(1, edge * edge // by))
    return bx, transpose_warps(bx, by, elem_bytes, tuning)


def axis_extents(params: PointwiseParams, sizes: Sequence[int]) -> tuple[int, int]:
    """Index extents of the X and Y tile axes (a flattened axis: split x outer extent)."""
    if not sizes:
        return 1, 1
    x = params.split_x * sizes[params.gx2] if params.gx2 is not None else sizes[params.gx]
    y = (
        params.split_y * sizes[params.gy2]
        if params.gy2 is not None
        else sizes[params.gy]
        if params.gy is not None
        else 1
    )
    return x, y


def tile_counts(params: PointwiseParams, sizes: Sequence[int]) -> tuple[int, int]:
    """(NUM_PX, NUM_PY): tiles along X and Y."""
    x, y = axis_extents(params, sizes)
    return cdiv(x, params.block_x), cdiv(y, params.block_y)


def tile_groups(params: PointwiseParams) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The groups the X and Y axes walk."""
    x = (params.gx,) + ((params.gx2,) if params.gx2 is not None else ())
    y = (
        ()
        if params.gy is None
        else (params.gy,) + ((params.gy2,) if params.gy2 is not None else ())
    )
    return (x if params.n_groups else ()), y


def grid(params: PointwiseParams, sizes: Sequence[int]) -> int:
    """Programs: tiles along X and Y times every other group's extent."""
    if not sizes:
        return 1
    px, py = tile_counts(params, sizes)
    tiled = set(sum(tile_groups(params), ()))
    return px * py * prod(n for k, n in enumerate(sizes) if k not in tiled)


def launches(segment: KernelSpec, p: Problem, params: PointwiseParams) -> tuple[LaunchSpec, ...]:
    """One launch: the grid, and the tile counts along X and Y."""
    sizes = p.sizes
    px, py = tile_counts(params, sizes)
    return (LaunchSpec(0, (grid(params, sizes),), (("NUM_PX", px), ("NUM_PY", py))),)


def stride_args(params: PointwiseParams, n_access: int) -> list[tuple[int, int]]:
    """(access, group) pairs whose stride is passed as a kernel argument."""
    return [
        (a, k)
        for a in range(n_access)
        for k in range(params.n_groups)
        if is_affine(params, a) and not params.zero_strides[a][k] and not params.unit_strides[a][k]
    ]
