"""Scan scheduler: one per-row op along one dim (cumsum, argsort, topk) with its prologue.

The canonical groups keep the scanned dim apart (it is the one reduced group, R; absent
when its extent is 1); every other group is a row coordinate. A program takes
``BLOCK_R`` rows and walks their scanned dim in blocks of ``BLOCK_N``. Which memory
order the rows have only changes the strides: the tile's stride-1 side (the scanned dim,
or the rows) is what Triton coalesces.

cumsum has four modes:

* ``block``: the row fits one tile (``next_pow2(N) <= max_block``; where the stride-1
  dim is a row coordinate, the tile spans ``outer_rows`` rows and what is left of
  ``tile_elements`` along the scanned dim): one ``tl.cumsum``;
* ``loop``: a longer row, with enough row tiles to fill the device: each program walks
  its rows' chunks in order, carrying the running sum;
* ``split``: a longer row with few row tiles: three launches. A block-sum pass writes
  each chunk's sum to a workspace, a second pass turns each row's chunk sums into
  running sums (in place), and the last pass scans each chunk again, starting from the
  running sum of the chunks before it. Every chunk runs in its own program;
* ``chain``: a longer row whose running sum is fp32, where the loop's row tiles are too
  few to fill the device (``_chain_tile``), in at most ``chain_links`` chunks: one
  launch, a program a chunk, one pass. A program draws a ticket from a counter
  (chunk-major: the program of the chunk before has drawn its own, so it runs), loads and
  scans its chunk, then waits for the running sum of the chunks before it: the program of
  the chunk before hands it on in one int64 word a row (the fp32 bits and a ready bit),
  which the waiting program takes and zeroes in one exchange (a word has one reader).
  The counter goes back to zero with the last ticket, so the kept workspace is zeroed
  between launches. The sums add in the loop's order. (CUB's decoupled look-back, each
  chunk publishing its sum at once and the next walking back over them, was slower
  here: see ``chain_links``.)

argsort and topk order (value, index) pairs: NaN the largest, -0.0 equal to 0.0, ties by
the lower index, as torch's stable sort. A value of at most 32 bits (Float, Int32) is
packed with its index in one int64 whose ascending order is the result's (``packed``,
``codegen.packed_keys``: the value's order transform, complemented when descending, in
the high half, the index in the low half), so every compare below is one integer
compare; a value of at most 16 bits (Half, BFloat16, fp8, Bool) in a row of at most
2**15 in one int32 (``narrow_keys``); fp64 and int64 keep the pairs
(``codegen.sort_network``). Their modes:

* ``block``: the row fits one tile (``next_pow2(N) <= max_sort_block``; rows of
  ``sort_tile_elements`` together): a bitonic network sorts it in registers, with warps
  enough that a thread holds at most ``sort_bytes_per_thread`` of its keys;
* ``merge``: a longer row of packed keys (``merges``: rank's N**2 compares above the
  merge's, weighed by ``merge_compare_cost``; ``codegen.scan_merge``): 2 +
  ceil(log2(chunks)) launches over two workspaces of [rows, Npad] keys (the row padded to whole chunks of
  C = ``max_sort_block`` with keys after every real one). The first sorts each chunk by
  the bitonic network, a program a chunk. Pass p merges the sorted runs of L = C * 2**p
  in pairs, from one workspace into the other, a program per ``merge_block`` elements:
  each key finds how many keys of the other run of its pair are below it by a binary
  search (log2(L) + 1 loads; keys are unique, so the count is exact and the order
  stable) and goes to its pair's start plus its offset in its run plus that count. The
  last launch unpacks the first N keys (argsort) or k (topk) of each row and stores the
  results. ``merge_compares``: the argsort of a vocabulary row of 50257 takes 25 chunks
  (1.7M compares in their networks) and 5 passes (3.6M), where rank took 2.5G;
* ``rank``: a longer row of (key, index) pairs (fp64, int64), or one short enough that
  the merge costs more: a program per ``rank_block`` elements of a row counts, for each,
  the elements of the whole row that sort before it, walking the row in blocks, and
  stores the element at that position. O(N**2) compares per row;
* ``select`` (topk of a small k): k passes, each a reduction over the row that picks the
  first pair in that order (packed: the least key, ``tl.min``) after the pass before's
  pick, stored at the pass's position (so the result is sorted, also for
  ``sorted=False``). A row that fits a sort tile stays in registers (each pick is taken
  out of the tile for the next pass) when ``k <= select_max_k``: k reductions over the
  tile cost less than the bitonic network's ``log2(N)**2 / 2`` steps. A longer row is
  walked in chunks of ``select_chunk`` per pass (re-read from L2), a row per program,
  when ``k <= select_max_k_long``: ``k * N`` compares against the rank's ``N**2`` (a
  larger k sorts the row: ``merge``, or ``rank``);
* ``split`` (topk, such a longer row with packed keys, while the rows alone do not fill
  the device: ``split_rows_per_sm``): two launches. The first splits each row into
  chunks of ``block_n`` (enough for ``split_programs_per_sm`` programs a multiprocessor,
  from ``split_min_chunk`` and ``split_chunk_per_k`` times k up to ``split_max_chunk``,
  ``split_chunk``), a program a chunk: its keys in registers, its candidates stored in
  a workspace of [rows, chunks, slots] keys. A chunk of enough keys filters them
  (``filter_groups``, G slots): the keys at most the k-th least of its G strided groups'
  least keys hold its k least, and where they fit the slots they are stored compacted
  (a prefix sum gives each its slot); otherwise, or where the chunk is short, Triton's
  bitonic top-k (``tl.topk``, ``k_block`` wide) keeps its k least. The second launch
  takes each row's k least of its chunks' candidates: a bitonic top-k of one tile of
  ``results_block`` where they fit ``split_merge_block``, else k passes walking them.
  64 vocabulary rows of 50257 with k=50: 832 programs of 4096 elements, then 64 merges
  of 13 x 128 slots, where a program a row made 50 passes over its 50257 elements.

Integers accumulate in Int (int64), Half/BFloat16 in Float.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..analysis.device import DeviceInfo
from ..dtypes import DataType, compute_dtype, itemsize
from ..intmath import cdiv, next_pow2
from ..ir.ops.scans import accumulates_in
from ..segmenter.segments import KernelSpec
from .launch import LaunchSpec, Workspace
from .problem import Problem
from .warps import THREADS_PER_WARP, WarpSteps, warps_for

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
    # ... halved, down to this many bytes of a row segment (a 32-byte sector), until the
    # row tiles reach ``narrow_tiles_per_sm`` a multiprocessor: then ``loop``, one pass
    # (``split`` reads the input twice). Cumsum over the outer dim of [8192, 4096], H100
    # cd404e6, ms: fp32 split 0.150, loop of 16-row tiles 0.136, of 8-row tiles 0.160;
    # bf16 split 0.129, loop of 16-row tiles 0.114
    outer_min_bytes: int = 32
    narrow_tiles_per_sm: int = 1
    # elements of a cumsum tile (rows x the scanned block)
    tile_elements: int = 4096
    # a longer row's chunk, in elements (modes ``loop`` and ``split``)
    chunk: int = 2048
    # ``loop`` when the row tiles reach this many per multiprocessor, else ``split``
    loop_tiles_per_sm: int = 2
    # ``loop``: the walk's software pipelining stages (``tl.range(num_stages=...)``; 1: a
    # plain loop). H100 at a6a591b (tune-ab36-20261206-a6a591b-h100.txt), ms, 1 / 2
    # stages: a cumsum over the strided dim of [8192, 4096] fp32 0.1349 / 0.1290, column-
    # major 0.1356 / 0.1293; bf16 0.1148 / 0.1204 both; rows of 65536 fp32 0.2106 /
    # 0.2142, bf16 0.0952 / 0.0972: no rule. (Each step loading the next block ahead,
    # carried in registers, lost 5-16% on every loop case; removed.)
    loop_stages: int = 1
    # rows of chunk sums one program of the split's middle pass scans at a time
    sums_block: int = 1024
    # a longer row with a fp32 running sum whose loop would have fewer row tiles than
    # ``chain_tiles_per_sm`` a multiprocessor is cut into chunks, a program a chunk (mode
    # ``chain``, one pass; ``_chain_tile``): the loop's tile (``1 x chain_chunk`` where the
    # scanned dim is the stride-1 side), at most ``chain_links`` chunks a row, at least
    # ``chain_link_bytes`` moved a link. 0: off. Each link waits for the one before, about
    # 1-1.5 us on an H100 (tools/dev/chain_ab.py, chain-ab-20261207-c80c9b8-h100.json,
    # where the chain took 32 links at any size: rows of 131072 in 32 chunks 32 us against
    # the split's 12, [4096, 256] along dim 0 34 against 16, while [8192, 4096] along dim
    # 0 took 109 us against the loop's 135 (fp32) and 79 against 115 (bf16); rows of
    # 65536 188 against 211). Decoupled look-back (each chunk publishing its sum at once,
    # the next walking back over them) at 5a0d07b was slower at every count
    # (ops-lookback-ab*-20261207-h100.json: dim 0 of [8192, 4096] fp32 64% of the copy
    # at 32 links, 46% at 128; rows of 2**24 in 4096 links 15%)
    chain_links: int = 32
    # ... the loop's row tiles at least this many a multiprocessor keep the loop: rows of
    # 5000 (100000 of them) and of 8192 (8192 of them) ran the loop at 70% and 97% of the
    # copy, the chain at 63% and 96% (fp32; bf16: the loop 37% and 95%, the chain 30% and
    # 89%)
    chain_tiles_per_sm: int = 4
    # ... bytes moved (loads and stores) a link at least (a link's wait, about 1.2 us, at
    # about 3 TB/s): rows of 65536 (64 of them) in 16 links of 2 MB took 22.8 us against
    # the split's 20.9; [256, 12000] along dim 1 in 3 links of 4 (bf16) to 8 MB (fp32)
    # 9.6-12.6 us against the split's 15.9-18.2
    chain_link_bytes: int = 3 << 20
    # ... the chunk where the scanned dim is the stride-1 side (the prototype,
    # chain-bench-20261207-7f0b789-h100.txt, % of the copy, fp32 / bf16: rows of 65536 in
    # 1 x 4096 tiles 95 / 91, 2 x 2048 94 / 85, 4 x 1024 93 / 81; the loop 82 / 89)
    chain_chunk: int = 4096
    # ... warps of a chain program whose stride-1 side is a row coordinate (0: ``warps``
    # by its tile's elements): the outer dim of [8192, 4096] in 16 x 256 tiles at 8 warps
    # 75 / 46% of the copy, at 4 83 / 59 (the loop 62 / 37); 32 x 128 tiles 77 / 52
    chain_outer_warps: int = 4
    # a sorted row up to this many elements (padded to a power of two) is one tile
    max_sort_block: int = 2048
    # elements of a sort tile (rows x the padded row)
    sort_tile_elements: int = 2048
    # a longer sorted row: elements one program ranks, and the row block it compares with
    rank_block: int = 64
    # a longer row of packed keys is merge sorted (mode ``merge``: its chunks of
    # max_sort_block sorted, then merged in pairs, an element's place in the other run
    # found by a binary search: O(N log**2 N)) where its weighted compares
    # (``merge_compares``) are fewer than rank's N**2: a merge compare is weighed as this
    # many of rank's, since it is a load whose address depends on the compare before it
    # (log2(L) + 1 of them in turn, through L2) where rank compares a [64, 64] tile in
    # registers, and the merge adds launches (an estimate: no GPU timing set it). At the
    # default tile it leaves rank nothing: a row of 2049 takes 4.2M rank compares against
    # 0.9M weighted (two chunks sorted, one pass of 4096 elements); at a tile of 16, rows
    # up to about 730 stay ranked
    merge_compare_cost: int = 16
    # elements one program of a merge pass places (a power of two, at most max_sort_block),
    # at the sort tile's warps: 4 a thread at the 8 warps of int64 keys (8 at the 4 of
    # int32 keys), each a chain of dependent loads beside the others
    merge_block: int = 1024
    # topk selects (mode ``select``) up to this k where the row fits a sort tile
    select_max_k: int = 16
    # ... and up to this k where it does not (rather than rank)
    select_max_k_long: int = 256
    # a longer row's chunk in mode ``select``, in elements
    select_chunk: int = 1024
    # warps by tile elements, (least elements, warps) steps
    warps: WarpSteps = ((4096, 8), (512, 4), (0, 2))
    # a bitonic sort tile (mode block) takes warps enough that a thread holds at most this
    # many bytes of its keys (a packed key: 8 or 4; a pair: the key's and the index's), more
    # than ``warps`` gives where the tile is wide: on sm_90 a row of 2048 packed keys at 4
    # warps (128 bytes a thread) left ptxas 16 bytes of stack for spills, at 8 warps
    # (64) none, in about the same warp-instructions a row (36k, 38k)
    sort_bytes_per_thread: int = 64
    # ... at most this many warps
    sort_max_warps: int = 16
    # sort keys of at most 32 bits packed with their index in one int64 (argsort, topk):
    # a compare-exchange is one int64 min and max instead of a NaN-aware (key, index)
    # compare carrying two tensors (about half the sm_90 instructions of a 2048-element
    # sort); False keeps the pairs, for an A/B on the GPU
    packed_keys: bool = True
    # ... in one int32 where the key has at most 16 bits (Half, BFloat16, fp8, Bool) and
    # the row at most 2**15 elements: half the registers and shuffles, and a native
    # 32-bit min and max (the argsort of bf16 rows of 2048 on sm_90: 4 warps of 3304
    # instructions a program, against 8 warps of 4648 with int64 keys)
    narrow_keys: bool = True
    # ... and a split topk's chunk of such keys in one int32 with its index in the chunk,
    # where the row's index needs the int64 (``chunk_packs``: bf16 vocabulary rows of 50257)
    chunk_keys32: bool = True
    # topk rows beyond a sort tile (k <= select_max_k_long, packed keys) are split across
    # programs (mode ``split``) while there are fewer rows than this many per
    # multiprocessor: a program a row leaves most of them idle (64 vocabulary rows on
    # 132), and walks its row once a pass. From there a program walks each row
    split_rows_per_sm: int = 4
    # ... into chunks enough for this many programs per multiprocessor (rows * chunks)
    split_programs_per_sm: int = 4
    # ... each chunk at least this many times k (its k candidates a fraction of it) ...
    split_chunk_per_k: int = 4
    # ... at least this many elements (a program's work beside its launch) ...
    split_min_chunk: int = 1024
    # ... and at most this many: a chunk is one tile of packed keys in registers (4096:
    # 16 int64 a thread at 8 warps)
    split_max_chunk: int = 4096
    # a row's candidates (chunks * k) up to this many are merged in one tile, more are
    # walked in blocks of it a pass
    split_merge_block: int = 4096
    # a split chunk's candidates are filtered, not sorted (``filter_groups``): its keys in
    # G = this many times ``k_block`` strided groups, those at most the k-th least of the
    # groups' least keys (at most G, else the chunk's bitonic top-k); 0: the top-k always
    split_filter: int = 2
    # ... where each group has at least this many keys (the chunk at least this many G)
    split_filter_group_keys: int = 8


DEFAULT_TUNING = ScanTuning()


@dataclass(frozen=True)
class ScanParams:
    scheduler: str
    op: str  # cumsum, argsort or topk
    mode: str  # block, loop, split or chain (cumsum); block, rank or merge (argsort, topk);
    #   select or split (topk)
    n_groups: int
    scan_group: int | None  # the scanned dim's group (None: its extent is 1)
    block_r: int
    block_n: int
    num_warps: int
    index64: bool
    descending: bool = False  # argsort descending, topk largest
    results_block: int = 0  # split: the block of the chunks' results (cumsum: chunk sums;
    #   topk: candidates) a program of the next launch takes; merge: the elements a
    #   program of a merge pass places
    accumulator: DataType = DataType.Float  # cumsum's
    based: tuple[int, ...] = ()  # accesses with a base offset ``b<a>`` bound at launch (a
    #   slice's start, where the problem has them)
    in_tile: bool = True  # select: the row is one tile (else walked in chunks per pass);
    #   topk split: the row's candidates are one tile of results_block (else walked)
    packed: int = 0  # argsort, topk: the width of the integer each key is packed in with
    #   its index (64 or 32; 0: (key, index) pairs)
    k_block: int = 0  # topk split: the bitonic top-k's width, next_pow2(k) (at least 2)
    chunk_packed: int = 0  # topk split of a 16-bit float row: 32 where each chunk's keys
    #   pack in an int32 with their index in the chunk (``chunk_keys32``), repacked in 64
    #   bits for the workspace; 0: the chunk packs as the row does (``packed``)
    loop_stages: int = 1  # cumsum loop: the walk's pipelining stages (1: a plain loop)
    filter_groups: int = 0  # topk split: G, the strided groups a chunk's keys are cut
    #   into; its candidates are the keys at most the k-th least of the groups' least keys
    #   (every key of the chunk's k least is: k groups hold a key at most that one), G
    #   slots a chunk; 0: the chunk's k least by its bitonic top-k, k slots a chunk

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
    if p.scan_op in SORTS:
        return _sort_params(p, device, tuning)
    return _cumsum_params(p, device, tuning)


def _params(
    p: Problem, mode: str, block_r: int, block_n: int, warps: int, **rest: Any
) -> ScanParams:
    """The params of ``p``'s kernels: its mode and tile, the fields of ``rest``."""
    return ScanParams(
        NAME,
        p.scan_op,
        mode,
        len(p.groups),
        _scan_group(p),
        block_r,
        block_n,
        warps,
        p.needs_int64,
        p.descending,
        based=tuple(getattr(p, "based", ())),
        **rest,
    )


def _rows_stride1(p: Problem) -> bool:
    """Whether the stride-1 side (the innermost group) is a row coordinate, not the
    scanned dim."""
    return bool(p.groups) and not p.groups[0].reduced


def _cumsum_params(p: Problem, device: DeviceInfo, tuning: ScanTuning) -> ScanParams:
    n, nrows = _scan_extent(p), rows(p)
    if _rows_stride1(p):
        # the stride-1 side is a row coordinate: a tile spans outer_rows of it, so
        # every load and store moves whole segments, and walks the dim in blocks
        block_r, narrowed = _outer_rows(p, n, nrows, device, tuning)
        block_n = min(next_pow2(n), max(1, tuning.tile_elements // block_r))
    else:
        narrowed = False
        block_n = next_pow2(n) if next_pow2(n) <= tuning.max_block else tuning.chunk
        block_r = min(next_pow2(nrows), max(1, tuning.tile_elements // block_n))
    tiles = cdiv(nrows, block_r)
    chain = None if block_n >= n else _chain_tile(p, n, (block_r, block_n), device, tuning)
    if block_n >= n:
        mode = "block"
    elif chain is not None:
        mode, (block_r, block_n) = "chain", chain
    elif narrowed or tiles >= tuning.loop_tiles_per_sm * device.sm_count:
        mode = "loop"
    else:
        mode = "split"
    warps = warps_for(block_r * block_n, tuning.warps)
    if mode == "chain" and _rows_stride1(p) and tuning.chain_outer_warps:
        warps = tuning.chain_outer_warps
    # the middle pass's tile has the others' elements
    results = min(tuning.sums_block, max(1, tuning.tile_elements // block_r))
    return _params(
        p,
        mode,
        block_r,
        block_n,
        warps,
        results_block=results if mode == "split" else 0,
        accumulator=accumulates_in(p.dtypes[p.n_loads]),
        loop_stages=tuning.loop_stages if mode == "loop" else 1,
    )


def _chain_tile(
    p: Problem, n: int, loop: tuple[int, int], device: DeviceInfo, tuning: ScanTuning
) -> tuple[int, int] | None:
    """The (rows, chunk) tile of mode ``chain`` for rows of ``n`` longer than a tile, or
    None. The tile is the loop's (``loop``: the outer rows narrowed for one pass, where
    the stride-1 side is a row coordinate), or ``1 x chain_chunk`` where the scanned dim
    is the stride-1 side; a program a chunk of it. None where ``chain_links`` is off, the
    running sum is not fp32 (it is handed on packed with a ready bit in one int64), the
    loop's row tiles reach ``chain_tiles_per_sm`` a multiprocessor (the loop has programs
    enough), the row takes more than ``chain_links`` chunks, or the bytes the kernel moves
    are under ``chain_link_bytes`` a link (each link waits for the one before)."""
    if tuning.chain_links == 0 or accumulates_in(p.dtypes[p.n_loads]) != DataType.Float:
        return None
    nrows = rows(p)
    if cdiv(nrows, loop[0]) >= tuning.chain_tiles_per_sm * device.sm_count:
        return None
    block_r, chunk = loop
    if not _rows_stride1(p):  # the scanned dim is the stride-1 side
        chunk = min(tuning.chain_chunk, tuning.max_block)
        block_r = min(next_pow2(nrows), max(1, tuning.tile_elements // chunk))
    links = cdiv(n, chunk)
    moved = p.numel * sum(itemsize(p.dtypes[a]) for a in range(p.n_loads + p.n_stores))
    if links > tuning.chain_links or moved < links * tuning.chain_link_bytes:
        return None
    return block_r, chunk


def _outer_rows(
    p: Problem, n: int, nrows: int, device: DeviceInfo, tuning: ScanTuning
) -> tuple[int, bool]:
    """Rows of a cumsum tile whose stride-1 side is a row coordinate, and whether they
    were narrowed for ``loop``: ``outer_rows``, halved while a row longer than a tile
    leaves fewer row tiles than ``loop_tiles_per_sm`` a multiprocessor and a row segment
    keeps ``outer_min_bytes``, until they reach ``narrow_tiles_per_sm`` (a cumsum over the
    outer dim of [8192, 4096]: 64 row tiles of 64 took the three-launch split, 256 of 16
    walk their rows in one pass, 1.10x in fp32 and 1.12x in bf16). Where even the narrowest
    tiles are too few, ``outer_rows`` (the split's)."""
    block_r = min(next_pow2(nrows), tuning.outer_rows)
    if next_pow2(n) <= max(1, tuning.tile_elements // block_r):
        return block_r, False  # the row fits a tile (mode ``block``)
    if cdiv(nrows, block_r) >= tuning.loop_tiles_per_sm * device.sm_count:
        return block_r, False  # ``loop`` as it is
    item = max(itemsize(p.dtypes[a]) for a in range(p.n_loads + p.n_stores))
    want = tuning.narrow_tiles_per_sm * device.sm_count
    narrow = block_r
    while cdiv(nrows, narrow) < want and (narrow // 2) * item >= tuning.outer_min_bytes:
        narrow //= 2
    if cdiv(nrows, narrow) >= want:
        return narrow, True
    return block_r, False


def _sort_params(p: Problem, device: DeviceInfo, tuning: ScanTuning) -> ScanParams:
    n, nrows = _scan_extent(p), rows(p)
    packed = packs(p, tuning)
    fits = next_pow2(n) <= tuning.max_sort_block
    rows_of_tile = min(next_pow2(nrows), max(1, tuning.sort_tile_elements // next_pow2(n)))
    if p.scan_op == "topk" and _selects(p, tuning):
        if fits:
            warps = warps_for(rows_of_tile * next_pow2(n), tuning.warps)
            return _params(p, "select", rows_of_tile, next_pow2(n), warps, packed=packed)
        chunk = split_chunk(n, p.scan_keep, nrows, device, tuning) if packed else 0
        if chunk:
            return _split_select(p, chunk, tuning)
        block_n = min(tuning.select_chunk, next_pow2(n))
        warps = warps_for(block_n, tuning.warps)
        return _params(p, "select", 1, block_n, warps, in_tile=False, packed=packed)
    if not fits and merges(n, packed, tuning):
        return _merge(p, packed, tuning)
    if not fits:
        # a rank program compares a [block_n, block_n] tile
        warps = warps_for(tuning.rank_block**2, tuning.warps)
        return _params(p, "rank", 1, tuning.rank_block, warps, packed=packed)
    warps = sort_warps(rows_of_tile * next_pow2(n), _sort_bytes(p, packed), tuning)
    return _params(p, "block", rows_of_tile, next_pow2(n), warps, packed=packed)


def merge_passes(n: int, tuning: ScanTuning) -> int:
    """The merge passes of a row of ``n``: its chunks of ``max_sort_block`` merged in
    pairs until one run holds them all."""
    return _passes(cdiv(n, tuning.max_sort_block))


def _passes(runs: int) -> int:
    """Passes that merge ``runs`` sorted runs in pairs into one: ceil(log2(runs)) (an odd
    run out waits for a pass)."""
    return (runs - 1).bit_length()


def merge_compares(n: int, tuning: ScanTuning) -> tuple[int, int]:
    """A merge sort's compares of a row of ``n``: the bitonic networks' of its chunks of
    C = ``max_sort_block`` (C/2 compare-exchanges a step, log2(C) * (log2(C) + 1) / 2
    steps), and the merge passes' (each of the Npad = chunks * C elements searches the
    other run of its pair, L elements: log2(L) + 1 compares)."""
    c = tuning.max_sort_block
    log_c = c.bit_length() - 1
    nc = cdiv(n, c)
    sort = nc * (c // 2) * log_c * (log_c + 1) // 2
    merge = nc * c * sum(log_c + p + 1 for p in range(merge_passes(n, tuning)))
    return sort, merge


# a merge sort's positions are int32 (the padded row, and a run's partner past it)
MERGE_MAX_ROW = 2**30


def merges(n: int, packed: int, tuning: ScanTuning) -> bool:
    """Whether an argsort's (or a topk's of a k above ``select_max_k_long``) row of ``n``
    longer than a sort tile is merge sorted rather than ranked: its keys are packed (the
    merge compares one integer; pairs keep rank), and rank's N**2 compares exceed the
    merge's, its passes' weighed as ``merge_compare_cost`` each."""
    if not packed or n <= tuning.max_sort_block or n > MERGE_MAX_ROW:
        return False
    sort, merge = merge_compares(n, tuning)
    return n * n > sort + tuning.merge_compare_cost * merge


def _merge(p: Problem, packed: int, tuning: ScanTuning) -> ScanParams:
    """A merge sort's params: chunks of ``max_sort_block`` (a row of them a program of
    the first launch, and of the last), merge passes of ``merge_block`` elements a
    program, the sort tile's warps."""
    c = tuning.max_sort_block
    warps = sort_warps(c, _sort_bytes(p, packed), tuning)
    block = min(tuning.merge_block, c)
    return _params(p, "merge", 1, c, warps, results_block=block, packed=packed)


def sort_warps(elements: int, element_bytes: int, tuning: ScanTuning) -> int:
    """Warps of a bitonic sort tile of ``elements`` of ``element_bytes`` each: those of
    ``warps`` for its elements, or more (up to ``sort_max_warps``) until a thread holds at
    most ``sort_bytes_per_thread`` bytes of it."""
    threads = cdiv(elements * element_bytes, tuning.sort_bytes_per_thread)
    wanted = min(tuning.sort_max_warps, next_pow2(cdiv(threads, THREADS_PER_WARP)))
    return max(warps_for(elements, tuning.warps), wanted)


def _sort_bytes(p: Problem, packed: int) -> int:
    """Bytes a sort carries an element: its packed key, or its key and index."""
    if packed:
        return packed // 8
    key = itemsize(compute_dtype(p.scan_dtype)) if p.scan_dtype is not None else 4
    return key + (8 if p.needs_int64 else 4)


def split_chunk(n: int, k: int, nrows: int, device: DeviceInfo, tuning: ScanTuning) -> int:
    """The chunk (a power of two) of a topk row split across programs (mode ``split``),
    0 where it is not split: the rows alone fill the device, or the row is one chunk.
    Chunks enough that rows * chunks reach ``split_programs_per_sm`` per multiprocessor,
    each at least ``split_chunk_per_k`` times k (so the candidates are a fraction of the
    row) and ``split_min_chunk``, and at most ``split_max_chunk`` (held in registers)."""
    if nrows >= tuning.split_rows_per_sm * device.sm_count:
        return 0
    wanted = cdiv(tuning.split_programs_per_sm * device.sm_count, nrows)
    chunk = next_pow2(cdiv(n, wanted))
    chunk = max(chunk, k_block(k) * tuning.split_chunk_per_k, tuning.split_min_chunk)
    chunk = min(chunk, tuning.split_max_chunk)
    return chunk if chunk < n else 0


def _split_select(p: Problem, chunk: int, tuning: ScanTuning) -> ScanParams:
    """A topk split in chunks of ``chunk``: a program takes each chunk's k least packed
    keys (its candidates, by a bitonic top-k in registers) into a workspace, then a
    program a row takes its k of its chunks' candidates: a bitonic top-k of one tile
    where they fit ``split_merge_block``, else k passes walking them in blocks of it."""
    kb = k_block(p.scan_keep)
    nc = cdiv(_scan_extent(p), chunk)
    groups = filter_groups(chunk, kb, nc, tuning)
    candidates = nc * (groups or p.scan_keep)
    merge = min(max(next_pow2(candidates), kb), tuning.split_merge_block)
    warps = warps_for(chunk, tuning.warps)
    return _params(
        p,
        "split",
        1,
        chunk,
        warps,
        results_block=merge,
        in_tile=candidates <= merge and kb <= merge,
        packed=packs(p, tuning),
        k_block=kb,
        chunk_packed=chunk_packs(p, chunk, tuning),
        filter_groups=groups,
    )


def filter_groups(chunk: int, kb: int, chunks: int, tuning: ScanTuning) -> int:
    """G of a split chunk's filtered candidates (``ScanParams.filter_groups``):
    ``split_filter`` times the top-k's width ``kb``, where the chunk holds at least
    ``split_filter_group_keys`` keys a group and a row's ``chunks`` x G slots fit the
    merge's tile (``split_merge_block``: more are walked, k passes); 0 (its bitonic
    top-k) otherwise.

    Why: the chunk's bitonic top-k sorts its first log2(kb) stages and merges the rest,
    some 60 compare-exchange steps over a 4096-key tile for k=50, where the filter takes
    one min per key, a sort of G keys, one compare per key and a prefix sum. For random
    keys the candidates number about 1.3 k (G = 2 kb; 78 of 128 slots at most in 300
    draws of 4096); a chunk with more (keys that fall in few groups) takes its top-k."""
    groups = tuning.split_filter * kb
    if not groups or chunk < tuning.split_filter_group_keys * groups:
        return 0
    return groups if chunks * groups <= tuning.split_merge_block else 0


def chunk_packs(p: Problem, chunk: int, tuning: ScanTuning) -> int:
    """32 where a split row of 16-bit floats packs in 64 bits (its index passes 2**15) but
    a chunk's keys fit an int32 with their index in the chunk: the chunk's bitonic top-k,
    most of the split's work, then compares and exchanges 32-bit keys, not 64-bit ones."""
    narrow = p.scan_dtype in NARROW_DTYPES and p.scan_dtype is not DataType.Bool
    if not (tuning.chunk_keys32 and narrow and packs(p, tuning) == 64 and chunk <= 2**15):
        return 0
    return 32


def k_block(k: int) -> int:
    """The width of a bitonic top-k of ``k``: a power of two, at least 2 (Triton 3.6's
    ``tl.topk`` of 1 reduces a row to a scalar it cannot reshape)."""
    return max(2, next_pow2(k))


# keys of at most 16 bits: their order fits the high half of an int32 ...
NARROW_DTYPES = frozenset(
    {DataType.Half, DataType.BFloat16, DataType.Float8_e4m3fn, DataType.Float8_e5m2, DataType.Bool}
)
# ... of at most 32 bits: of an int64
PACKED_DTYPES = NARROW_DTYPES | {DataType.Float, DataType.Int32}


def packs(p: Problem, tuning: ScanTuning) -> int:
    """The width of the integer an argsort's or topk's keys pack in with their index
    (``codegen.packed_keys``): 32 for keys of at most 16 bits and an index below 2**15
    (``narrow_keys``), 64 for keys of at most 32 bits and an index below 2**31; 0 (pairs)
    for wider keys or with ``packed_keys`` off."""
    n = _scan_extent(p)
    if not tuning.packed_keys or p.scan_op not in SORTS or p.scan_dtype not in PACKED_DTYPES:
        return 0
    if tuning.narrow_keys and p.scan_dtype in NARROW_DTYPES and n <= 2**15:
        return 32
    return 64 if n <= 2**31 else 0


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
        "merge": _merge_reason(n, params, tuning),
        "loop": f"rows of {n} walked in chunks of {params.block_n}, a running sum carried",
        "chain": (
            f"rows of {n} in {cdiv(n, params.block_n)} chunks of {params.block_n}, a program "
            "a chunk, each handed the running sum of the chunks before it by the program of "
            "the chunk before (one pass)"
        ),
        "split": (
            f"rows of {n} in {cdiv(n, params.block_n)} chunks each, too few rows to fill the "
            "device: chunk sums, their running sums, then each chunk"
        ),
    }[params.mode]
    if params.mode == "split" and params.op == "topk":
        nc = cdiv(n, params.block_n)
        why = (
            f"k={p.scan_keep} of {rows(p)} rows of {n}, too few rows to fill the device: "
            f"each row in {nc} chunks of {params.block_n}, a program selecting a chunk's k "
            f"candidates, then a program a row selecting its k of the "
            f"{nc * (params.filter_groups or p.scan_keep)}"
        )
        if params.filter_groups:
            why += (
                f" (a chunk's candidates filtered: its keys at most the k-th least of "
                f"{params.filter_groups} strided groups' least keys, {params.filter_groups} "
                "slots)"
            )
    return f"mode {params.mode}: {why}"


def _merge_reason(n: int, params: ScanParams, tuning: ScanTuning) -> str:
    if params.mode != "merge":
        return ""
    sort, merge = merge_compares(n, tuning)
    return (
        f"rows of {n} exceed a sort tile (max_sort_block {tuning.max_sort_block}): "
        f"{cdiv(n, params.block_n)} chunks of {params.block_n} sorted, then "
        f"{merge_passes(n, tuning)} merge passes (a binary search an element): "
        f"{sort + merge} compares a row against rank's {n * n}"
    )


def chunks(p: Problem, params: ScanParams) -> int:
    return cdiv(_scan_extent(p), params.block_n)


def launches(segment: KernelSpec, p: Problem, params: ScanParams) -> tuple[LaunchSpec, ...]:
    """One launch per row tile (``block``, ``loop``, ``select``); a rank program per block
    of a row (``rank``); a program per chunk of each row tile (``chain``); cumsum's ``split``: chunk sums, their running sums, the scan
    (kernels 0, 1, 2); topk's ``split``: each chunk's candidates, each row's merge
    (kernels 0, 1); ``merge``: the sorted chunks, each merge pass, the results (kernels
    0, 1 launched once a pass, 2)."""
    nrows = rows(p)
    tiles = cdiv(nrows, params.block_r)
    if params.mode == "rank":
        tiles = nrows * cdiv(_scan_extent(p), params.block_n)
    values: tuple[tuple[str, int], ...] = (("ROWS", nrows), ("K", p.scan_keep))
    if params.mode == "merge":
        return _merge_launches(p, params, values + (("NUM_CHUNKS", chunks(p, params)),))
    if params.mode == "chain":
        nc = chunks(p, params)
        return (LaunchSpec(0, (tiles * nc,), values + (("NUM_CHUNKS", nc),)),)
    if params.mode != "split":
        return (LaunchSpec(0, (tiles,), values),)
    nc = chunks(p, params)
    values += (("NUM_CHUNKS", nc),)
    if params.op == "topk":
        return (LaunchSpec(0, (tiles * nc,), values), LaunchSpec(1, (tiles,), values))
    return (
        LaunchSpec(0, (tiles * nc,), values),
        LaunchSpec(1, (cdiv(nrows, params.block_r),), values),
        LaunchSpec(2, (tiles * nc,), values),
    )


def _merge_launches(
    p: Problem, params: ScanParams, values: tuple[tuple[str, int], ...]
) -> tuple[LaunchSpec, ...]:
    """A program per chunk of each row sorts it; pass ``PASS`` (a program per
    ``results_block`` elements of each padded row) merges runs of ``block_n * 2**PASS``
    in pairs, from the workspace ``PASS % 2`` into the other; a program per chunk of the
    results (argsort: every chunk; topk: those of the first k) stores them."""
    nrows, nc = rows(p), chunks(p, params)
    passes = _passes(nc)
    per_pass = nrows * nc * params.block_n // params.results_block
    results = nc if p.scan_op == "argsort" else max(1, cdiv(p.scan_keep, params.block_n))
    return (
        LaunchSpec(0, (nrows * nc,), values),
        *(LaunchSpec(1, (per_pass,), values + (("PASS", k),)) for k in range(passes)),
        LaunchSpec(2, (nrows * results,), values + (("PASS", passes),)),
    )


def workspaces(segment: KernelSpec, p: Problem, params: ScanParams) -> tuple[Workspace, ...]:
    """``chain``: the tickets' counter and each chunk's running sums handed on, [1 + rows
    x (chunks - 1)] int64, kept and left zeroed; ``split``: cumsum's chunk sums, then their running sums, [rows x chunks]; topk's
    candidates, each chunk's k packed keys, [rows x chunks x k]; ``merge``: two of the
    rows' packed keys padded to whole chunks, [rows x chunks x chunk], that the passes
    read and write in turn."""
    if params.mode == "merge":
        size = max(1, rows(p) * chunks(p, params) * params.block_n)
        key = DataType.Int if params.packed == 64 else DataType.Int32
        return (Workspace("ws0", (size,), key), Workspace("ws1", (size,), key))
    if params.mode == "chain":
        # the tickets' counter, then each chunk's running sums (but the last chunk's)
        size = 1 + max(1, chunks(p, params) - 1) * rows(p)
        return (Workspace("ws0", (size,), DataType.Int, zeroed=True),)
    if params.mode != "split":
        return ()
    if params.op == "topk":
        size = rows(p) * chunks(p, params) * (params.filter_groups or p.scan_keep)
        key = DataType.Int if params.packed == 64 else DataType.Int32
        return (Workspace("ws0", (max(1, size),), key),)
    return (Workspace("ws0", (rows(p) * chunks(p, params),), params.accumulator),)
