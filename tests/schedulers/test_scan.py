"""The scan scheduler's rules at real sizes, planned on meta tensors (nothing runs).

The warps of a bitonic sort tile: enough that a thread holds at most
``sort_bytes_per_thread`` bytes of keys. The split of a topk's long rows across
programs (mode ``split``), for the device tables of an H200 and of smaller GPUs. A row
longer than a sort tile is split while the rows alone do not fill the device (``split_rows_per_sm``), in chunks enough for ``split_programs_per_sm``
programs a multiprocessor, each a power of two between ``split_min_chunk`` (and
``split_chunk_per_k`` times k) and ``split_max_chunk``; the merge takes each row's
candidates in one tile up to ``split_merge_block``. An argsort's (or a topk's of a large
k) row of packed keys longer than a sort tile is merge sorted (mode ``merge``: its chunks
sorted, log2(chunks) merge passes, the results) where rank's N**2 compares cost more
(``merges``); pairs keep ``rank``.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.analysis.device import H200
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.scan import (
    ScanParams,
    ScanTuning,
    merge_compares,
    merge_passes,
    merges,
    sort_warps,
    split_chunk,
)
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, small_gpu


def _plan(shape, k, dtype=torch.float32, sms=132) -> tuple[ScanParams, list[tuple[int, ...]]]:
    """The scan's params and the launches' grids of a topk of ``k`` along dim 1 (an
    argsort where ``k`` is None)."""
    x = torch.empty(shape, dtype=dtype, device="meta")
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if k is None:
            fd.add_output(fd.ops.argsort(t, 1))
        else:
            values, indices = fd.ops.topk(t, k, 1, largest=True, sorted=True)
            fd.add_output(values)
            fd.add_output(indices)
    fd = configured(fd, target=small_gpu(sms))
    record = fd.executor().plan([x])
    (params,) = [p for p in record.params if isinstance(p, ScanParams)]
    return params, [launch.grid for launch in record.launches]


@pytest.mark.parametrize(
    "shape, k, chunk, grids, merge, in_tile, groups",
    [
        # 64 vocabulary rows: 9 chunks would fill 4 programs a multiprocessor, but a
        # chunk is at most 4096 elements: 13 chunks, each filtered into 128 slots (2 x 64
        # groups), 1664 candidates a row
        ((64, 50257), 50, 4096, [(832,), (64,)], 2048, True, 128),
        # 13 x 512 filtered slots would not fit the merge's tile: each chunk's top-k
        ((64, 50257), 256, 4096, [(832,), (64,)], 4096, True, 0),
        ((4, 1 << 20), 256, 4096, [(1024,), (4,)], 4096, False, 0),  # 65536 candidates
        ((16, 8192), 8, 1024, [(128,), (16,)], 128, True, 16),  # 33 chunks fill; >= 1024
    ],
)
def test_long_rows_split_into_chunks(shape, k, chunk, grids, merge, in_tile, groups):
    params, launched = _plan(shape, k)
    assert (params.mode, params.block_n, params.results_block) == ("split", chunk, merge)
    assert params.in_tile is in_tile and params.packed == 64
    assert params.filter_groups == groups
    assert launched == grids


@pytest.mark.parametrize(
    "shape, k, dtype, sms",
    [
        ((1024, 50257), 50, torch.float32, 132),  # rows fill the device
        ((64, 50257), 50, torch.float32, 8),  # 64 rows are 8 a multiprocessor of 8
        ((64, 50257), 50, torch.float64, 132),  # keys that do not pack
    ],
)
def test_rows_that_are_not_split(shape, k, dtype, sms):
    params, launched = _plan(shape, k, dtype, sms)
    assert params.mode in ("select", "rank") and len(launched) == 1


def test_the_chunk_rule():
    tuning = ScanTuning()
    assert split_chunk(50257, 50, 64, H200, tuning) == 4096
    assert split_chunk(50257, 50, 600, H200, tuning) == 0  # 600 rows >= 4 * 132
    assert split_chunk(3000, 1, 1, H200, tuning) == 1024  # split_min_chunk
    assert split_chunk(3000, 1024, 1, H200, tuning) == 0  # 1024 * 4: the whole row
    assert split_chunk(1 << 16, 8, 100, H200, tuning) == 4096  # 6 chunks: 16384, capped
    assert split_chunk(50257, 50, 64, H200, ScanTuning(split_max_chunk=2048)) == 2048


@pytest.mark.parametrize(
    "shape, dtype, tile, warps",
    [
        ((8192, 2048), torch.float32, (1, 2048), 8),  # 16 KiB of packed keys: 64 B a thread
        ((8192, 2048), torch.bfloat16, (1, 2048), 4),  # keys packed in 32 bits
        ((65536, 256), torch.float32, (8, 256), 8),
        ((8192, 2048), torch.float64, (1, 2048), 16),  # pairs of 12 bytes
        ((4096, 64), torch.float32, (32, 64), 8),
        ((64, 8), torch.float32, (64, 8), 4),  # 512 elements: ``warps``' 4
    ],
)
def test_sort_tiles_take_warps_by_their_bytes(shape, dtype, tile, warps):
    params, launched = _plan(shape, None, dtype)
    assert params.mode == "block"
    assert ((params.block_r, params.block_n), params.num_warps) == (tile, warps)
    assert launched == [(shape[0] // tile[0],)]


def test_sort_warps():
    tuning = ScanTuning()
    assert sort_warps(2048, 8, tuning) == 8
    assert sort_warps(2048, 8, ScanTuning(sort_bytes_per_thread=128)) == 4
    assert sort_warps(64, 8, tuning) == 2  # warps' last step
    assert sort_warps(1 << 14, 16, tuning) == 16  # sort_max_warps


@pytest.mark.parametrize(
    "shape, dtype, packed",
    [
        ((4, 1 << 15), torch.bfloat16, 32),  # an index of 15 bits beside a 16-bit key
        ((4, (1 << 15) + 1), torch.bfloat16, 64),
        ((4, 1 << 15), torch.float16, 32),
        ((4, 1 << 15), torch.float32, 64),
        ((4, 1 << 15), torch.int32, 64),
        ((4, 1 << 15), torch.int64, 0),
    ],
)
def test_the_width_keys_pack_in(shape, dtype, packed):
    assert _plan(shape, None, dtype)[0].packed == packed
    assert _plan(shape, 8, dtype)[0].packed == packed


@pytest.mark.parametrize(
    "shape, k, dtype, passes, per_pass",
    [
        # a top-p step's vocabulary rows: 25 chunks of 2048 (the row padded to 51200), 5
        # passes of 50 programs a row
        ((8, 50257), None, torch.float32, 5, 400),
        ((8, 128256), None, torch.bfloat16, 6, 1008),  # 63 chunks: 6 passes
        ((8, 2049), None, torch.float32, 1, 32),  # just over the tile
        ((64, 3000), 300, torch.float32, 1, 256),  # k above select_max_k_long
        ((2, 1 << 20), 1000, torch.int32, 9, 2048),  # a power of two: 512 chunks
    ],
)
def test_long_rows_of_packed_keys_merge(shape, k, dtype, passes, per_pass):
    params, launched = _plan(shape, k, dtype)
    nrows, n = shape
    chunks = -(-n // 2048)
    assert (params.mode, params.block_r, params.block_n) == ("merge", 1, 2048)
    assert (params.results_block, params.num_warps, params.packed) == (1024, 8, 64)
    assert merge_passes(n, ScanTuning()) == passes
    results = chunks if k is None else -(-k // 2048)
    assert launched == [(nrows * chunks,), *[(per_pass,)] * passes, (nrows * results,)]


@pytest.mark.parametrize("shape", [(8, 50257), (8, 2049)])
def test_pairs_keep_rank(shape):
    params, launched = _plan(shape, None, torch.float64)
    assert (params.mode, params.packed, len(launched)) == ("rank", 0, 1)


def test_the_merge_rule():
    tuning = ScanTuning()
    # the compares of a vocabulary row: its 25 chunks' networks and 5 passes, against
    # rank's 50257**2 = 2.5G
    assert merge_compares(50257, tuning) == (25 * 1024 * 66, 25 * 2048 * (12 + 13 + 14 + 15 + 16))
    assert merge_compares(2049, tuning) == (2 * 1024 * 66, 4096 * 12)
    assert [merge_passes(n, tuning) for n in (2049, 4096, 4097, 6145, 1 << 20)] == [1, 1, 2, 2, 9]
    assert merges(2049, 64, tuning) and merges(50257, 32, tuning)
    assert not merges(2048, 64, tuning)  # one tile: mode block
    assert not merges(50257, 0, tuning)  # pairs
    # at a tile of 16, a merge compare weighed as one of rank's: rows of 17 (289 rank
    # compares against 160 + 160) stay ranked, rows of 18 merge
    small = ScanTuning(max_sort_block=16, merge_compare_cost=1)
    assert not merges(17, 64, small) and merges(18, 64, small)
    # ... and at the default weight, rows up to about 730
    assert not merges(700, 64, ScanTuning(max_sort_block=16))
    assert merges(800, 64, ScanTuning(max_sort_block=16))


NO_CHAIN = DEFAULT.with_fields(scan=dict(chain_links=0))


def _cumsum_plan(
    shape, dim, dtype, sms=132, tuning=NO_CHAIN
) -> tuple[ScanParams, list[tuple[int, ...]]]:
    """The cumsum's params and grids, along ``dim`` of a row-major ``shape`` (by default
    with mode ``chain`` off: the loop's and the split's rules)."""
    x = torch.empty(shape, dtype=dtype, device="meta")
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), dim))
    fd = configured(fd, target=small_gpu(sms), tuning=tuning)
    record = fd.executor().plan([x])
    (params,) = [p for p in record.params if isinstance(p, ScanParams)]
    return params, [launch.grid for launch in record.launches]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize(
    "shape, sms, mode, block_r, grids",
    [
        # 4096 columns in tiles of 64: 64 tiles, too few for the loop; tiles of 16 rows
        # (64 or 32 bytes a segment) give 256, one pass
        ((8192, 4096), 132, "loop", 16, [(256,)]),
        # 256 columns: 32 tiles of 8 (fp32) or 16 of 16 (bf16) would still leave most
        # multiprocessors idle: the split's three launches in tiles of 64
        ((8192, 256), 132, "split", 64, None),
        # 16384 columns fill 132 multiprocessors in tiles of 64: the loop as it is
        ((2048, 16384), 132, "loop", 64, [(256,)]),
        # a smaller GPU: 64 tiles of 64 rows are one a multiprocessor
        ((8192, 4096), 32, "loop", 64, [(64,)]),
    ],
)
def test_a_cumsum_over_the_outer_dim_narrows_its_tiles_for_one_pass(
    shape, sms, mode, block_r, grids, dtype
):
    params, got = _cumsum_plan(shape, 0, dtype, sms)
    assert (params.mode, params.block_r) == (mode, block_r), params
    if grids is not None:
        assert got == grids
    else:
        assert len(got) == 3  # block sums, their running sums, the scan again


@pytest.mark.parametrize(
    "shape, dim, dtype, tile, links, warps",
    [
        # the outer dim of [8192, 4096]: the loop's tile narrowed to 16 columns (256 row
        # tiles, under 4 a multiprocessor), 32 chunks of 256; 4 warps (chain_outer_warps)
        ((8192, 4096), 0, torch.float32, (16, 256), 32, 4),
        ((8192, 4096), 0, torch.bfloat16, (16, 256), 32, 4),
        # 1024 rows of it: the same tile, 4 links of 8 (fp32) or 4 MB (bf16)
        ((1024, 4096), 0, torch.float32, (16, 256), 4, 4),
        ((1024, 4096), 0, torch.bfloat16, (16, 256), 4, 4),
        # 300 rows of 5000 columns: tiles of 32 columns (157 of them), 3 chunks of 128
        ((300, 5000), 0, torch.float32, (32, 128), 3, 4),
        # the rows are the stride-1 side: chunks of 4096 (chain_chunk), a row a tile,
        # warps by the tile's elements
        ((1024, 65536), 1, torch.float32, (1, 4096), 16, 8),
        ((256, 12000), 1, torch.bfloat16, (1, 4096), 3, 8),
    ],
)
def test_a_long_row_with_a_float_sum_is_one_chained_pass(shape, dim, dtype, tile, links, warps):
    params, grids = _cumsum_plan(shape, dim, dtype, tuning=DEFAULT)
    assert (params.mode, (params.block_r, params.block_n)) == ("chain", tile), params
    assert params.num_warps == warps
    rows = shape[0] * shape[1] // shape[dim]
    assert grids == [(-(-rows // tile[0]) * links,)]


@pytest.mark.parametrize(
    "shape, dim, dtype, mode",
    [
        # an int64 running sum is not handed on in one word: the loop or the split
        ((8192, 4096), 0, torch.int32, "loop"),
        ((4, 100000), 1, torch.float64, "split"),
        # rows of 2**24 would take 4096 links (chain_links)
        ((4, 1 << 24), 1, torch.float32, "split"),
        # the outer dim of 16384: 128 chunks of the loop's 32 x 128 tile
        ((16384, 8192), 0, torch.float32, "loop"),
        # 64 rows of 65536: 16 links of 2 MB, 4 rows of 131072: 32 of 128 KB
        # (chain_link_bytes)
        ((64, 65536), 1, torch.float32, "split"),
        ((4, 131072), 1, torch.float16, "split"),
        # 4096 row tiles of 2 rows, 31 a multiprocessor: the loop has programs enough
        # (chain_tiles_per_sm)
        ((8192, 8192), 1, torch.float32, "loop"),
        ((100000, 5000), 1, torch.bfloat16, "loop"),
    ],
)
def test_what_the_chain_leaves_to_loop_and_split(shape, dim, dtype, mode):
    params, _ = _cumsum_plan(shape, dim, dtype, tuning=DEFAULT)
    assert params.mode == mode, params
