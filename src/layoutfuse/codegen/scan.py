"""Triton source for a scan segment (cumsum, argsort, topk), from its spec and ScanParams:
cumsum's kernels here (modes block, loop, lookback, split), argsort's and topk's in ``scan_sort``;
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
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    w.line(f"carry = tl.zeros([BLOCK_R], {_acc(t.p)})")
    w.line(f"for start in range(0, {t.length()}, BLOCK_N):")
    with w.indent():
        t.columns(w, "start")
        v = t.value(w)
        w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
        t.finish(w, "tl.cumsum(acc, axis=1) + carry[:, None]", "mask")
        w.line("carry += tl.sum(acc, axis=1)")


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


LOOKBACK_HELPERS = """
@triton.jit
def _flag_word(tag, value):
    \"\"\"A look-back word: ``tag`` (the epoch's tag plus the kind) over the fp32 bits.\"\"\"
    bits = value.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
    return (tag.to(tl.int64) << 32) | bits


@triton.jit
def _flag_value(word):
    return (word & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)

"""

# a look-back word's kinds, over the epoch's tag ((epoch + 1) * 4)
AGGREGATE, INCLUSIVE = 1, 2


def _ticket(w: Writer) -> None:
    """``t``, this program's place in the launch, and ``tag``, its epoch's: the counter's
    low half counts the launch's tickets, its high half is the epoch; the program that
    draws the last ticket advances the epoch and zeroes the count for the next launch
    (every ticket is drawn by then)."""
    w.line("ticket = tl.atomic_add(tickets, 1, sem='relaxed')")
    w.line("epoch = (ticket >> 32) & 0x0FFFFFFF")
    w.line("t = (ticket & 0xFFFFFFFF).to(tl.int32)")
    w.line("if t == TILES * NUM_CHUNKS - 1:")
    w.line("    tl.atomic_xchg(tickets, ((epoch + 1) & 0x0FFFFFFF) << 32, sem='relaxed')")
    w.line("tag = (epoch.to(tl.int32) + 1) * 4")


def _look_back(w: Writer) -> None:
    """``prefix``: the sum of each row's chunks before ``chunk``, from their published words,
    ``RESULTS_BLOCK`` predecessors a step: back to the nearest running sum (kind
    INCLUSIVE) where every word after it is published (kind AGGREGATE), else the whole
    window's sums and on to the window before; a window with a word not yet published
    is read again."""
    w.line("prefix = tl.zeros([BLOCK_R], tl.float32)")
    w.line("look = tl.zeros([BLOCK_R], tl.int32) + chunk")
    w.line("pending = rmask & (chunk > 0)")
    w.line("lane = tl.arange(0, RESULTS_BLOCK)[None, :]")
    w.line("while tl.max(pending.to(tl.int32), axis=0) > 0:")
    with w.indent():
        w.line("j = look[:, None] - RESULTS_BLOCK + lane")
        w.line("m = pending[:, None] & (j >= 0)")
        w.line("word = tl.load(flags + j * ROWS + rows[:, None], mask=m, other=0, volatile=True)")
        w.line("h = (word >> 32).to(tl.int32)")
        w.line(f"inc = m & (h == tag + {INCLUSIVE})")
        w.line(f"ready = inc | (m & (h == tag + {AGGREGATE})) | (m == 0)")
        w.line("last = tl.max(tl.where(inc, lane, -1), axis=1)")
        w.line("whole = tl.min(tl.where(lane > last[:, None], ready.to(tl.int32), 1), axis=1) > 0")
        w.line(
            "part = tl.sum(tl.where(m & (lane >= last[:, None]), _flag_value(word), 0.0), axis=1)"
        )
        w.line("take = pending & whole")
        w.line("prefix += tl.where(take, part, 0.0)")
        w.line("look = tl.where(take, look - RESULTS_BLOCK, look)")
        w.line("pending = pending & ((take & ((last >= 0) | (look <= 0))) == 0)")


def _cumsum_lookback(w: Writer, t: ScanTile) -> None:
    """A program a chunk of a row tile, in ticket order: its row sums published (chunk 0's
    as running sums), its predecessors' looked back at, its running sums published, its
    chunk scanned from them."""
    _ticket(w)
    w.line("chunk = t // TILES")
    t.rows(w, "t % TILES")
    t.columns(w, "chunk * BLOCK_N")
    v = t.value(w)
    w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
    w.line("total = tl.sum(acc, axis=1)")
    w.line("slot = flags + chunk * ROWS + rows")
    w.line(f"kind = tl.where(chunk == 0, {INCLUSIVE}, {AGGREGATE})")
    w.line("tl.atomic_xchg(slot, _flag_word(tag + kind, total), mask=rmask, sem='release')")
    _look_back(w)
    w.line(
        f"tl.atomic_xchg(slot, _flag_word(tag + {INCLUSIVE}, prefix + total), "
        "mask=rmask & (chunk > 0), sem='release')"
    )
    t.finish(w, "tl.cumsum(acc, axis=1) + prefix[:, None]", "mask")


def emit(spec, params: ScanParams) -> tuple[Kernel, ...]:
    """The scan segment's kernels: one, or the split's three (chunk sums, their running
    sums, the scan)."""
    if params.op in SORTS:
        return scan_sort.emit(spec, params)
    if params.mode == "block":
        return (scan_kernel(spec, params, "cumsum_kernel", _cumsum_block),)
    if params.mode == "loop":
        return (scan_kernel(spec, params, "cumsum_loop_kernel", _cumsum_loop),)
    if params.mode == "lookback":
        kept = ("tickets", "flags")  # scheduler.scan.lookback_workspaces
        return (
            scan_kernel(
                spec,
                params,
                "cumsum_lookback_kernel",
                _cumsum_lookback,
                kept,
                LOOKBACK_HELPERS,
                ("TILES",),
            ),
        )
    ws = ("ws0",)
    return (
        scan_kernel(spec, params, "cumsum_chunk_sums_kernel", _chunk_sums, ws),
        scan_kernel(spec, params, "cumsum_running_sums_kernel", _running_sums, ws),
        scan_kernel(spec, params, "cumsum_chunks_kernel", _chunk_scan, ws),
    )
