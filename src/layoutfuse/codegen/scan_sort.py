"""Triton source for argsort and topk kernels (modes block, rank, select; see
``schedulers.scan``) over (key, index) pairs, on the tile ``scan_tile`` addresses: keys of
more than 32 bits (fp64, int64), or any key with the scan tuning's ``packed_keys`` off.
Keys of at most 32 bits are packed with their index in one int64 (``scan_packed``), and
their long rows merge sorted (``scan_merge``)."""

from __future__ import annotations

from ..dtypes import DataType
from ..schedulers.scan import ScanParams
from . import scan_merge, scan_packed
from .kernel import Kernel
from .scan_tile import ScanTile, scan_kernel
from .sort_network import SORT_PRELUDE
from .writer import Writer, tl_compute


def _sort(w: Writer, t: ScanTile) -> None:
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    t.columns(w, "0")
    w.line(f"key = {_key(w, t, t.value(w))}")
    w.line("idx = cols[None, :] + tl.zeros([BLOCK_R, BLOCK_N], cols.dtype)")
    log_n = t.p.block_n.bit_length() - 1
    w.line(
        f"key, idx = _sort_rows(key, idx, {t.length()}, BLOCK_R, BLOCK_N, {log_n}, "
        f"{t.p.descending})"
    )
    if t.p.op == "argsort":
        t.finish(w, "idx", "mask")
    else:
        w.line("kmask = rmask[:, None] & (cols < K)[None, :]")
        t.store(w, 0, "key", "kmask")
        t.store(w, 1, "idx", "kmask")


def _rank_sort(w: Writer, t: ScanTile) -> None:
    """A row longer than a sort tile: each element's rank is the number of elements of its
    row that sort before it (counted a [BLOCK_N, BLOCK_N] tile at a time: O(N**2)
    compares per row), and it is stored at that position."""
    n = t.length()
    w.line("pid = tl.program_id(0)")
    w.line(f"blocks = ({n} + BLOCK_N - 1) // BLOCK_N")
    t.rows(w, "pid // blocks")
    t.columns(w, "(pid % blocks) * BLOCK_N")
    key = _key(w, t, t.value(w))
    w.line("ci = cols")
    w.line("mi = mask")
    w.line(f"key_i = tl.reshape({key}, [BLOCK_N, 1])")
    w.line("idx_i = tl.reshape(ci, [BLOCK_N, 1])")
    w.line("rank = tl.zeros([BLOCK_N], tl.int32)")
    w.line(f"for j0 in range(0, {n}, BLOCK_N):")
    with w.indent():
        t.columns(w, "j0")
        w.line(f"key_j = {_key(w, t, t.value(w))}")
        w.line(f"before = _sorts_before(key_j, cols[None, :], key_i, idx_i, {n}, {t.p.descending})")
        w.line("rank += tl.sum(before.to(tl.int32), axis=1)")
    t.store_ranked(w, key)


def _select_names(t: ScanTile) -> tuple[str, str, str]:
    """The combine function, the key's dtype and the index's of a ``select`` kernel."""
    combine = "_first_desc" if t.p.descending else "_first_asc"
    dtype = t.spec.scan.inputs[0].dtype
    key = "tl.int8" if dtype is DataType.Bool else tl_compute(dtype)
    return combine, key, "tl.int64" if t.p.index64 else "tl.int32"


def _select_tile(w: Writer, t: ScanTile) -> None:
    """topk of a row that fits a tile: K passes over the tile in registers, each reducing it
    to its first (key, index) pair and taking that pair out of the tile."""
    combine, key_dtype, idx_dtype = _select_names(t)
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    t.columns(w, "0")
    w.line(f"key = ({_key(w, t, t.value(w))}).to({key_dtype})")
    w.line(f"idx = tl.where(mask, cols[None, :], SKIP).to({idx_dtype})")
    w.line("for j in range(0, K):")
    with w.indent():
        w.line(f"pk, pi = tl.reduce((key, idx), 1, {combine})")
        w.line("idx = tl.where(idx == pi[:, None], SKIP, idx)")
        w.line(f"pos = tl.full([BLOCK_R], j, {idx_dtype})")
        t.store_at(w, 0, "pk", "pos")
        t.store_at(w, 1, "pi", "pos")


def _select_loop(w: Writer, t: ScanTile) -> None:
    """topk of a longer row: K passes, each walking the row in chunks and carrying the first
    (key, index) pair after the pass before's pick."""
    combine, key_dtype, idx_dtype = _select_names(t)
    n = t.length()
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    w.line(f"pk = tl.zeros([BLOCK_R], {key_dtype})")
    w.line(f"pi = tl.full([BLOCK_R], SKIP, {idx_dtype})")
    w.line("for j in range(0, K):")
    with w.indent():
        w.line(f"bk = tl.zeros([BLOCK_R], {key_dtype})")
        w.line(f"bi = tl.full([BLOCK_R], SKIP, {idx_dtype})")
        w.line(f"for start in range(0, {n}, BLOCK_N):")
        with w.indent():
            t.columns(w, "start")
            w.line(f"key = ({_key(w, t, t.value(w))}).to({key_dtype})")
            w.line(f"col = cols[None, :] + tl.zeros([BLOCK_R, BLOCK_N], {idx_dtype})")
            w.line(
                "after = (pi == SKIP)[:, None] | "
                f"_sorts_before(pk[:, None], pi[:, None], key, col, {n}, {t.p.descending})"
            )
            w.line("idx = tl.where(mask & after, col, SKIP)")
            w.line(f"ck, ci = tl.reduce((key, idx), 1, {combine})")
            w.line(f"bk, bi = {combine}(bk, bi, ck, ci)")
        w.line("pk, pi = bk, bi")
        w.line(f"pos = tl.full([BLOCK_R], j, {idx_dtype})")
        t.store_at(w, 0, "pk", "pos")
        t.store_at(w, 1, "pi", "pos")


def _key(w: Writer, t: ScanTile, v: str) -> str:
    """The sort key of the scan input's value ``v`` (bools compare as int8)."""
    if t.spec.scan.inputs[0].dtype is DataType.Bool:
        return w.assign("key", f"({v}).to(tl.int8)")
    return v


def emit(spec, params: ScanParams) -> tuple[Kernel, ...]:
    """The kernels of an argsort or topk segment: over packed keys (``scan_packed``; a
    merge sort's, ``scan_merge``) where they pack, else over (key, index) pairs."""
    if params.packed and params.mode == "merge":
        return scan_merge.emit(spec, params)
    if params.packed:
        return scan_packed.emit(spec, params)
    if params.mode == "select":
        body = _select_tile if params.in_tile else _select_loop
        return (scan_kernel(spec, params, "topk_select_kernel", body, prelude=SORT_PRELUDE),)
    if params.mode == "rank":
        name = f"{params.op}_rank_kernel"
        return (scan_kernel(spec, params, name, _rank_sort, prelude=SORT_PRELUDE),)
    return (scan_kernel(spec, params, f"{params.op}_kernel", _sort, prelude=SORT_PRELUDE),)
