"""Triton source for a scan segment (cumsum, argsort, topk), from its spec and ScanParams:
cumsum's kernels here (modes block, loop, chain, split), argsort's and topk's in ``scan_sort``;
the tile they share (arguments, offsets, prologue, stores) in ``scan_tile``.
"""

from __future__ import annotations

from ..schedulers.scan import SORTS, ScanParams
from . import scan_sort
from .kernel import Kernel
from .scan_tile import ScanTile, scan_kernel
from .writer import Writer, tl_dtype


def _acc(params: ScanParams) -> str:
    return tl_dtype(params.accumulator)


def _cumsum_block(w: Writer, t: ScanTile) -> None:
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    t.columns(w, "0")
    v = t.value(w)
    w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
    t.finish(w, "tl.cumsum(acc, axis=1)", "mask")


def _cumsum_loop(w: Writer, t: ScanTile) -> None:
    """Each program walks its rows' blocks in order, carrying the running sum;
    ``loop_stages`` > 1 lets Triton pipeline the walk."""
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    w.line(f"carry = tl.zeros([BLOCK_R], {_acc(t.p)})")
    walk = f"range(0, {t.length()}, BLOCK_N)"
    if t.p.loop_stages > 1:
        walk = f"tl.range(0, {t.length()}, BLOCK_N, num_stages={t.p.loop_stages})"
    w.line(f"for start in {walk}:")
    with w.indent():
        t.columns(w, "start")
        v = t.value(w)
        w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
        t.finish(w, "tl.cumsum(acc, axis=1) + carry[:, None]", "mask")
        w.line("carry += tl.sum(acc, axis=1)")


def _cumsum_chain(w: Writer, t: ScanTile) -> None:
    """Mode ``chain`` (``schedulers.scan``): the chunk of this program's ticket
    (``ws0[0]``, chunk-major), scanned; the running sums of the chunks before it taken
    from ``ws0[1 + (chunk - 1) * ROWS + row]`` (each an exchange with 0, repeated until
    every row's ready bit is set); its own handed on (but the last chunk's) before the
    stores."""
    w.line("ticket = tl.atomic_add(ws0, 1, sem='relaxed', scope='gpu').to(tl.int32)")
    w.line("if ticket == tl.num_programs(0) - 1:")
    with w.indent():
        w.line("tl.atomic_xchg(ws0, 0, sem='relaxed', scope='gpu')  # the next launch's")
    w.line("row_tiles = tl.cdiv(ROWS, BLOCK_R)")
    w.line("chunk = ticket // row_tiles")
    t.rows(w, "(ticket % row_tiles)")
    t.columns(w, "chunk * BLOCK_N")
    v = t.value(w)
    w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
    w.line("total = tl.sum(acc, axis=1)")
    w.line("carry = tl.zeros([BLOCK_R], tl.float32)")
    w.line("if chunk > 0:")
    with w.indent():
        w.line("handed = ws0 + 1 + (chunk - 1) * ROWS + rows")
        w.line("word = tl.zeros([BLOCK_R], tl.int64)")
        w.line("need = rmask")
        w.line("while tl.max(need.to(tl.int32), axis=0) > 0:")
        with w.indent():
            w.line("got = tl.atomic_xchg(handed, 0, mask=need, sem='acquire', scope='gpu')")
            w.line("word = tl.where(need, got, word)")
            w.line("need = need & (got == 0)")
        w.line("carry = (word & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)")
    w.line("if chunk < NUM_CHUNKS - 1:")
    with w.indent():
        w.line("bits = (carry + total).to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF")
        w.line("at = ws0 + 1 + chunk * ROWS + rows")
        w.line("tl.atomic_xchg(at, bits | (1 << 32), mask=rmask, sem='release', scope='gpu')")
    t.finish(w, "tl.cumsum(acc, axis=1) + carry[:, None]", "mask")


def _split_ids(w: Writer, t: ScanTile) -> None:
    w.line("pid = tl.program_id(0)")
    w.line("chunk = pid % NUM_CHUNKS")
    t.rows(w, "pid // NUM_CHUNKS")
    t.columns(w, "chunk * BLOCK_N")


def _chunk_sums(w: Writer, t: ScanTile) -> None:
    _split_ids(w, t)
    v = t.value(w)
    w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
    w.line("tl.store(ws0 + rows * NUM_CHUNKS + chunk, tl.sum(acc, axis=1), mask=rmask)")


def _running_sums(w: Writer, t: ScanTile) -> None:
    """The middle pass: each row's chunk sums become running sums, in place."""
    w.line("pid = tl.program_id(0)")
    w.line("rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)")
    if t.p.index64:
        w.line("rows = rows.to(tl.int64)")
    w.line("rmask = rows < ROWS")
    w.line(f"carry = tl.zeros([BLOCK_R], {_acc(t.p)})")
    w.line("for start in range(0, NUM_CHUNKS, RESULTS_BLOCK):")
    with w.indent():
        w.line("c = start + tl.arange(0, RESULTS_BLOCK)")
        w.line("m = rmask[:, None] & (c < NUM_CHUNKS)[None, :]")
        w.line("ptr = ws0 + rows[:, None] * NUM_CHUNKS + c[None, :]")
        # masked lanes are zeroed by a where, not only by the load's other=0: Triton 3.6's
        # OptimizeThreadLocality pass asserts on a loop-carried sum of a plain load whose
        # final value is unused (as the carry is after the loop)
        w.line("x = tl.where(m, tl.load(ptr, mask=m, other=0), 0)")
        w.line("tl.store(ptr, tl.cumsum(x, axis=1) + carry[:, None], mask=m)")
        w.line("carry += tl.sum(x, axis=1)")


def _chunk_scan(w: Writer, t: ScanTile) -> None:
    _split_ids(w, t)
    w.line("base = tl.load(ws0 + rows * NUM_CHUNKS + chunk - 1, mask=rmask & (chunk > 0), other=0)")
    v = t.value(w)
    w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
    t.finish(w, "tl.cumsum(acc, axis=1) + base[:, None]", "mask")


def emit(spec, params: ScanParams) -> tuple[Kernel, ...]:
    """The scan segment's kernels: one, or the split's three (chunk sums, their running
    sums, the scan)."""
    if params.op in SORTS:
        return scan_sort.emit(spec, params)
    if params.mode == "block":
        return (scan_kernel(spec, params, "cumsum_kernel", _cumsum_block),)
    if params.mode == "loop":
        return (scan_kernel(spec, params, "cumsum_loop_kernel", _cumsum_loop),)
    if params.mode == "chain":
        return (scan_kernel(spec, params, "cumsum_chain_kernel", _cumsum_chain, ("ws0",)),)
    ws = ("ws0",)
    return (
        scan_kernel(spec, params, "cumsum_chunk_sums_kernel", _chunk_sums, ws),
        scan_kernel(spec, params, "cumsum_running_sums_kernel", _running_sums, ws),
        scan_kernel(spec, params, "cumsum_chunks_kernel", _chunk_scan, ws),
    )
