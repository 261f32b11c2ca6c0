"""Triton source for argsort and topk kernels over packed keys (``ScanParams.packed``: the
key has at most 32 bits; ``codegen.packed_keys`` says how a (value, index) pair becomes
one int64, or int32, whose ascending order is the result's order).

The modes are those of ``scan_sort`` (block, rank, select), each simpler: the bitonic
network sorts one tensor, a rank counts the keys below each, a topk pass is a ``tl.min``
and the pass after it takes the keys above its pick; and topk's ``split``. The index is
the key's low half; the value, its high half's inverse (exact) where the kernel no
longer holds it.
"""

from __future__ import annotations

from ..dtypes import DataType, is_integral
from ..schedulers.scan import ScanParams
from .kernel import Kernel
from .packed_keys import packed_prelude
from .scan_tile import ScanTile, scan_kernel
from .writer import Writer

# the 16-bit float whose bits order a key packed in 32 bits (fp8 through Half: exact)
_HALF = {DataType.BFloat16: "tl.bfloat16"}


def _is_float(t: ScanTile) -> bool:
    dtype = t.spec.scan.inputs[0].dtype
    return not (is_integral(dtype) or dtype is DataType.Bool)


def key_dtype(t: ScanTile) -> str:
    return "tl.int64" if t.p.packed == 64 else "tl.int32"


def _half(t: ScanTile) -> str:
    return _HALF.get(t.spec.scan.inputs[0].dtype, "tl.float16")


def packed_key(w: Writer, t: ScanTile, v: str, cols: str, real: str) -> str:
    """The packed keys of the scan input's values ``v`` at positions ``cols`` (a tile of
    the row's indices), ``PACKED_LAST`` where not ``real``."""
    low = f"{cols}.to({key_dtype(t)}) * 2"
    if _is_float(t):
        x = w.assign("x", f"({v}).to(tl.float32)")
        s = f"_float_order({x})" if t.p.packed == 64 else f"_half_order({x}, {_half(t)})"
        low += f" + _negative_zero({x}).to({key_dtype(t)})"
    else:
        s = f"({v}).to(tl.int32)"
    return w.assign("key", f"_pack({s}, {low}, {real}, {t.p.descending})")


def value_of(t: ScanTile, key: str) -> str:
    """The value packed in ``key`` (fp32 for floats, int32 for ints and bools)."""
    s = f"_order_of({key}, {t.p.descending})"
    if not _is_float(t):
        return s
    if t.p.packed == 64:
        return f"_float_of({s}, ({key} & 1) != 0)"
    return f"_half_of({s}, ({key} & 1) != 0, {_half(t)})"


def _sort(w: Writer, t: ScanTile) -> None:
    """A row in one tile: its keys sorted by the bitonic network."""
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    t.columns(w, "0")
    key = packed_key(w, t, t.value(w), "cols[None, :]", "mask")
    log_n = t.p.block_n.bit_length() - 1
    w.line(f"key = _sort_packed({key}, BLOCK_R, BLOCK_N, {log_n})")
    if t.p.op == "argsort":
        t.finish(w, "_index_of(key)", "mask")
    else:
        w.line("kmask = rmask[:, None] & (cols < K)[None, :]")
        t.store(w, 0, value_of(t, "key"), "kmask")
        t.store(w, 1, "_index_of(key)", "kmask")


def _rank_sort(w: Writer, t: ScanTile) -> None:
    """A row longer than a sort tile: each element's rank is the number of keys of its row
    below its own (a [BLOCK_N, BLOCK_N] tile of compares at a time: O(N**2) per row), and
    it is stored at that position."""
    n = t.length()
    w.line("pid = tl.program_id(0)")
    w.line(f"blocks = ({n} + BLOCK_N - 1) // BLOCK_N")
    t.rows(w, "pid // blocks")
    t.columns(w, "(pid % blocks) * BLOCK_N")
    v = t.value(w)
    key = packed_key(w, t, v, "cols[None, :]", "mask")
    w.line("ci = cols")
    w.line("mi = mask")
    w.line(f"key_i = tl.reshape({key}, [BLOCK_N, 1])")
    w.line("rank = tl.zeros([BLOCK_N], tl.int32)")
    w.line(f"for j0 in range(0, {n}, BLOCK_N):")
    with w.indent():
        t.columns(w, "j0")
        key_j = packed_key(w, t, t.value(w), "cols[None, :]", "mask")
        w.line(f"rank += tl.sum(({key_j} < key_i).to(tl.int32), axis=1)")
    t.store_ranked(w, v)


def _store_pick(w: Writer, t: ScanTile, pick: str) -> None:
    """Store pass ``j``'s pick (a key per row) at position ``j`` of the rows."""
    w.line(f"pos = tl.full([BLOCK_R], j, {'tl.int64' if t.p.index64 else 'tl.int32'})")
    t.store_at(w, 0, value_of(t, pick), "pos")
    t.store_at(w, 1, f"_index_of({pick})", "pos")


def _passes(w: Writer, key: str, store) -> None:
    """K passes over the keys ``key`` held in registers: each takes the least key of each
    row (``pick``), ``store``s it, and takes it out of the tile."""
    w.line(f"key = {key}")
    w.line("for j in range(0, K):")
    with w.indent():
        w.line("pick = tl.min(key, 1)")
        w.line("key = tl.where(key == pick[:, None], PACKED_LAST, key)")
        store(w)


def _select_tile(w: Writer, t: ScanTile) -> None:
    """topk of a row that fits a tile: K passes over its keys in registers."""
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    t.columns(w, "0")
    key = packed_key(w, t, t.value(w), "cols[None, :]", "mask")
    _passes(w, key, lambda w: _store_pick(w, t, "pick"))


def _walk(w: Writer, dtype: str, length: str, block: str, keys, store) -> None:
    """K passes, each walking ``length`` elements of each row in blocks of ``block`` (whose
    keys, of ``dtype``, ``keys`` writes, given the block's start) for the least key above
    the pass before's pick (``pick``), which ``store`` stores."""
    w.line(f"pick = tl.full([BLOCK_R], PACKED_LAST, {dtype})")
    w.line("for j in range(0, K):")
    with w.indent():
        w.line(f"best = tl.full([BLOCK_R], PACKED_LAST, {dtype})")
        w.line(f"for start in range(0, {length}, {block}):")
        with w.indent():
            key = keys(w, "start")
            # the first pass takes every key (none is below the least int64, but one may
            # be it: a NaN at index 0 of a largest topk)
            w.line(f"after = tl.where(({key} > pick[:, None]) | (j == 0), {key}, PACKED_LAST)")
            w.line("best = tl.minimum(best, tl.min(after, 1))")
        w.line("pick = best")
        store(w)


def _select_loop(w: Writer, t: ScanTile) -> None:
    """topk of a longer row, a program a row: K passes, each walking the row in chunks."""

    def keys(w: Writer, start: str) -> str:
        t.columns(w, start)
        return packed_key(w, t, t.value(w), "cols[None, :]", "mask")

    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    _walk(w, key_dtype(t), t.length(), "BLOCK_N", keys, lambda w: _store_pick(w, t, "pick"))


def _least(key: str) -> str:
    """The K_BLOCK least of each row's keys ``key``, in ascending order: Triton's bitonic
    top-k (``tl.topk``, the largest first) of the keys complemented (``~`` reverses an
    int64's order), complemented back."""
    return f"~tl.topk(~{key}, K_BLOCK, dim=1)"


def chunk_keys(w: Writer, t: ScanTile) -> str:
    """The packed keys of this program's chunk (a program a chunk of ``NUM_CHUNKS`` a
    row, a row tile of them): its rows, columns, and the name of its keys' tile."""
    w.line("pid = tl.program_id(0)")
    w.line("chunk = pid % NUM_CHUNKS")
    t.rows(w, "pid // NUM_CHUNKS")
    t.columns(w, "chunk * BLOCK_N")
    return packed_key(w, t, t.value(w), "cols[None, :]", "mask")


def chunk_keys32(w: Writer, t: ScanTile) -> str:
    """The keys of this program's chunk of a 16-bit float row (``chunk_packed``), packed
    in an int32: the value's 16-bit order and its index in the chunk (``0x7FFFFFFF``
    past the row), in the order of the row's 64-bit keys (``widened``)."""
    w.line("pid = tl.program_id(0)")
    w.line("chunk = pid % NUM_CHUNKS")
    t.rows(w, "pid // NUM_CHUNKS")
    t.columns(w, "chunk * BLOCK_N")
    x = w.assign("x", f"({t.value(w)}).to(tl.float32)")
    s = f"_half_order({x}, {_half(t)})"
    w.line(f"s = ~{s}" if t.p.descending else f"s = {s}")
    w.line(f"low = tl.arange(0, BLOCK_N)[None, :] * 2 + _negative_zero({x}).to(tl.int32)")
    return w.assign("key", "tl.where(mask, (s << 16) | low, 0x7FFFFFFF)")


def widened(w: Writer, t: ScanTile, key: str) -> str:
    """The row's 64-bit keys (as ``packed_key`` packs them) of the chunk's int32 keys
    ``key`` (``chunk_keys32``): each one's value and its index in the row."""
    order = w.assign("order", f"~({key} >> 16)" if t.p.descending else f"{key} >> 16")
    v = w.assign("v", f"_half_of({order}, ({key} & 1) != 0, {_half(t)})")
    col = w.assign("col", f"(chunk * BLOCK_N + (({key} & 0xFFFF) >> 1)).to(tl.int64)")
    return w.assign(
        "wide",
        f"_pack(_float_order({v}), {col} * 2 + ({key} & 1).to(tl.int64), "
        f"{key} != 0x7FFFFFFF, {t.p.descending})",
    )


def _slots(t: ScanTile) -> str:
    """A split chunk's workspace slots: G where its candidates are filtered, else k."""
    return "GROUPS" if t.p.filter_groups else "K"


def _candidates(w: Writer, t: ScanTile) -> None:
    """A split topk's first launch: a program a chunk of a row (one tile in registers)
    stores its candidates into the workspace at [row, chunk, slot], ``PACKED_LAST`` in
    the slots it leaves: its K least keys in order (``tl.topk``), or, filtered
    (``filter_groups``), every key at most the K-th least of its G strided groups' least
    keys, compacted in row order, where they fit the G slots."""
    narrow = t.p.chunk_packed == 32
    key = chunk_keys32(w, t) if narrow else chunk_keys(w, t)
    last = "0x7FFFFFFF" if narrow else "PACKED_LAST"
    w.line(f"base = ws0 + (rows.to(tl.int64) * NUM_CHUNKS + chunk) * {_slots(t)}")
    if not t.p.filter_groups:
        _store_least(w, t, key, narrow)
        return
    w.line("gi = tl.arange(0, GROUPS)[None, :]")
    w.line(f"least = tl.min(tl.reshape({key}, [BLOCK_R, BLOCK_N // GROUPS, GROUPS]), axis=1)")
    w.line("least = tl.sort(least, dim=1)")
    w.line(f"cut = tl.min(tl.where(gi == K - 1, least, {last}), axis=1)")
    w.line(f"sel = {key} <= cut[:, None]")
    w.line("count = tl.sum(sel.to(tl.int32), axis=1)")
    w.line("if tl.max(tl.where(rmask, count, 0), axis=0) <= GROUPS:")
    with w.indent():
        w.line("slot = tl.cumsum(sel.to(tl.int32), axis=1) - 1")
        found = widened(w, t, key) if narrow else key
        w.line(f"tl.store(base[:, None] + slot, {found}, mask=rmask[:, None] & sel)")
        w.line("left = rmask[:, None] & (gi >= count[:, None])")
        w.line("tl.store(base[:, None] + gi, PACKED_LAST, mask=left)")
    w.line("else:")
    with w.indent():
        _store_least(w, t, key, narrow)


def _store_least(w: Writer, t: ScanTile, key: str, narrow: bool) -> None:
    """The chunk's K least keys ``key``, in order, into its slots (``base``), by Triton's
    bitonic top-k; ``PACKED_LAST`` in the filtered slots past K."""
    top = w.assign("top", _least(key))
    if narrow:
        top = widened(w, t, top)
    w.line("j = tl.arange(0, K_BLOCK)[None, :]")
    w.line(f"tl.store(base[:, None] + j, {top}, mask=rmask[:, None] & (j < K))")
    if t.p.filter_groups:  # (``gi``: the slots, from ``_candidates``)
        w.line("left = rmask[:, None] & (gi >= K)")
        w.line("tl.store(base[:, None] + gi, PACKED_LAST, mask=left)")


def _merge(w: Writer, t: ScanTile) -> None:
    """A split topk's second launch: a program a row tile takes each row's K least of its
    chunks' candidates (NUM_CHUNKS * slots keys of the workspace): a bitonic top-k of
    one tile of RESULTS_BLOCK where they fit (``in_tile``), else K passes walking them in
    blocks of it."""
    slots = _slots(t)

    def keys(w: Writer, start: str) -> str:
        w.line(f"c = {start} + tl.arange(0, RESULTS_BLOCK)")
        w.line(f"m = rmask[:, None] & (c < NUM_CHUNKS * {slots})[None, :]")
        w.line(f"at = ws0 + rows[:, None].to(tl.int64) * (NUM_CHUNKS * {slots}) + c[None, :]")
        return w.assign("key", "tl.load(at, mask=m, other=PACKED_LAST)")

    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    if not t.p.in_tile:
        _walk(
            w,
            key_dtype(t),
            f"NUM_CHUNKS * {slots}",
            "RESULTS_BLOCK",
            keys,
            lambda w: _store_pick(w, t, "pick"),
        )
        return
    w.line(f"top = {_least(keys(w, '0'))}")
    w.line("j = tl.arange(0, K_BLOCK)")
    if t.p.index64:
        w.line("j = j.to(tl.int64)")
    w.line("kmask = rmask[:, None] & (j < K)[None, :]")
    t.offsets(w, "j[None, :]")
    t.store(w, 0, value_of(t, "top"), "kmask")
    t.store(w, 1, "_index_of(top)", "kmask")


def emit(spec, params: ScanParams) -> tuple[Kernel, ...]:
    """The kernel of an argsort or topk segment whose keys pack."""
    prelude = packed_prelude(params.packed)
    if params.mode == "select":
        body = _select_tile if params.in_tile else _select_loop
        return (scan_kernel(spec, params, "topk_select_kernel", body, prelude=prelude),)
    if params.mode == "split":
        ws = ("ws0",)
        return (
            scan_kernel(spec, params, "topk_candidates_kernel", _candidates, ws, prelude),
            scan_kernel(spec, params, "topk_merge_kernel", _merge, ws, prelude),
        )
    if params.mode == "rank":
        name = f"{params.op}_rank_kernel"
        return (scan_kernel(spec, params, name, _rank_sort, prelude=prelude),)
    return (scan_kernel(spec, params, f"{params.op}_kernel", _sort, prelude=prelude),)
