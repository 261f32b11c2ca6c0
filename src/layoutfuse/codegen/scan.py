"""Triton source for a scan segment (cumsum, argsort, topk), from its spec and ScanParams.

Every kernel addresses its accesses the same way: a program's ``BLOCK_R`` rows are
split into the coordinates of the kept groups (innermost first), each access's offset
is the sum of those coordinates times its strides (``s<a>_<k>``), plus the column along
the scanned group times that group's stride. The prologue (the segment's pointwise and
shape ops) is emitted by ``ValueEmitter`` at those offsets; the scan works on the
[BLOCK_R, BLOCK_N] tile of the scan's input.
"""

from __future__ import annotations

from ..dtypes import DataType
from ..schedulers.scan import SORTS, ScanParams
from .helpers import helpers_for
from .kernel import Kernel
from .pointwise import HEADER, kernel_header, load_line
from .sort_network import SORT_PRELUDE
from .values import ValueEmitter
from .writer import Writer, storage_cast, tl_compute, tl_dtype, typed_params

TILE_ZEROS = "tl.zeros([BLOCK_R, BLOCK_N], tl.int32)"


class _Tile:
    """The names of one kernel's arguments and its row/column index lines."""

    def __init__(self, spec, params: ScanParams):
        self.spec, self.p = spec, params
        self.n_acc = len(spec.accesses)
        self.kept = [k for k in range(params.n_groups) if k != params.scan_group]
        self.ptr_of = {id(tv): f"p{i}" for i, tv in enumerate(spec.memory)}

    def args(self, extra: list[str]) -> list[str]:
        ptrs = [f"p{i}" for i in range(len(self.spec.memory))]
        sizes = [f"n{k}" for k in range(self.p.n_groups)]
        strides = [f"s{a}_{k}" for a in range(self.n_acc) for k in range(self.p.n_groups)]
        bases = [f"b{a}" for a in self.p.based]
        scalars = [f"c{i}" for i in range(len(self.spec.scalars))]
        return ptrs + extra + sizes + strides + bases + scalars + ["ROWS", "K"]

    def length(self) -> str:
        """The scanned extent."""
        return "1" if self.p.scan_group is None else f"n{self.p.scan_group}"

    def rows(self, w: Writer, tile: str) -> None:
        """``rows``, ``rmask`` and every access's row offset ``roff<a>`` of row tile ``tile``."""
        w.line(f"rows = {tile} * BLOCK_R + tl.arange(0, BLOCK_R)")
        if self.p.index64:
            w.line("rows = rows.to(tl.int64)")
        w.line("rmask = rows < ROWS")
        w.line("rest = rows")
        for j, k in enumerate(self.kept):
            if j + 1 < len(self.kept):
                w.line(f"i{k} = rest % n{k}")
                w.line(f"rest = rest // n{k}")
            else:
                w.line(f"i{k} = rest")
        for a in range(self.n_acc):
            terms = [f"i{k} * s{a}_{k}" for k in self.kept] or ["rows * 0"]
            terms += [f"b{a}"] if a in self.p.based else []  # a slice's start
            w.line(f"roff{a} = {' + '.join(terms)}")

    def columns(self, w: Writer, start: str) -> None:
        """``cols``, ``mask`` and every access's offset ``off<a>`` over the tile."""
        w.line(f"cols = {start} + tl.arange(0, BLOCK_N)")
        if self.p.index64:
            w.line("cols = cols.to(tl.int64)")
        w.line(f"mask = rmask[:, None] & (cols < {self.length()})[None, :]")
        self.offsets(w, "cols[None, :]")

    def offsets(self, w: Writer, positions: str) -> None:
        """Every access's offset ``off<a>`` at ``positions`` along the scanned dim (a
        [1, BLOCK_N] or [BLOCK_R, BLOCK_N] expression) of the tile's rows."""
        g = self.p.scan_group
        for a in range(self.n_acc):
            col = f"{positions} * 0" if g is None else f"{positions} * s{a}_{g}"
            w.line(f"off{a} = roff{a}[:, None] + ({col})")

    def value(self, w: Writer) -> str:
        """The scan input's values over the tile (its prologue computed from the loads);
        the tile's emitter is kept for the epilogue (``finish``)."""
        self.emitter(w)
        return self.ve.value(self.spec.scan.inputs[0])

    def emitter(self, w: Writer) -> None:
        """A fresh ``ValueEmitter`` at the current offsets and ``mask``."""
        spec = self.spec
        load_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses[: spec.n_loads])}
        first_coord = spec.n_loads + spec.n_stores
        coord_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses) if i >= first_coord}

        def load(tv, chain):
            i = load_index.get((id(tv), tuple(id(e) for e in chain)))
            if i is None:
                return None
            return w.assign("v", load_line(self.ptr_of[id(tv)], f"off{i}", "mask", tv.dtype))

        def coordinate(tv, chain):
            return f"off{coord_index[(id(tv), tuple(id(e) for e in chain))]}"

        names = {id(s): f"c{i}" for i, s in enumerate(spec.scalars)}
        self.ve = ValueEmitter(w, load, lambda s: names[id(s)], coordinate, TILE_ZEROS)

    def finish(self, w: Writer, result: str, mask: str) -> None:
        """Store the scan's first result ``result`` and the epilogue outputs computed from
        it (the stores after the scan's results), as a later kernel would read it: rounded
        to its dtype."""
        out = self.spec.scan.outputs[0]
        result = w.assign("res", result)
        self.store(w, 0, result, mask)
        n_results = len(self.spec.scan.outputs)
        if self.spec.n_stores == n_results:
            return
        held = w.assign("r", f"{result}.to({tl_dtype(out.dtype)}).to({tl_compute(out.dtype)})")
        self.ve.special[id(out)] = held
        for k in range(n_results, self.spec.n_stores):
            acc = self.spec.accesses[self.spec.n_loads + k]
            self.store(w, k, self.ve.value(acc.tv, acc.chain), mask)

    def store(self, w: Writer, k: int, value: str, mask: str) -> None:
        """Store ``value`` into the scan's output ``k`` (access ``n_loads + k``)."""
        a = self.spec.n_loads + k
        tv = self.spec.accesses[a].tv
        stored = storage_cast(f"({value})", tv.dtype)
        w.line(f"tl.store({self.ptr_of[id(tv)]} + off{a}, {stored}, mask={mask})")


def _source(spec, params: ScanParams, name: str, body, extra: list[str], sort: bool = False):
    from .backend import PRELUDE

    t = _Tile(spec, params)
    w = Writer()
    for line in kernel_header(spec, params):
        w.line(line)
    args = t.args(extra)
    consts = ["BLOCK_R: tl.constexpr", "BLOCK_N: tl.constexpr"]
    if extra:
        args = args + ["NUM_CHUNKS"]
        consts.append("SUMS_BLOCK: tl.constexpr")
    w.line("@triton.jit")
    w.line(f"def {name}({', '.join(typed_params(args, spec.scalars) + consts)}):")
    with w.indent():
        body(w, t)
    prelude = PRELUDE + (SORT_PRELUDE if sort else "")
    body_text = w.text()
    return HEADER + prelude + helpers_for(body_text) + "\n\n" + body_text, args


def _acc(params: ScanParams) -> str:
    return tl_dtype(params.accumulator)


def _cumsum_block(w: Writer, t: _Tile) -> None:
    w.line("pid = tl.program_id(0)")
    t.rows(w, "pid")
    t.columns(w, "0")
    v = t.value(w)
    w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
    t.finish(w, "tl.cumsum(acc, axis=1)", "mask")


def _cumsum_loop(w: Writer, t: _Tile) -> None:
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


def _split_ids(w: Writer, t: _Tile) -> None:
    w.line("pid = tl.program_id(0)")
    w.line("chunk = pid % NUM_CHUNKS")
    t.rows(w, "pid // NUM_CHUNKS")
    t.columns(w, "chunk * BLOCK_N")


def _chunk_sums(w: Writer, t: _Tile) -> None:
    _split_ids(w, t)
    v = t.value(w)
    w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
    w.line("tl.store(ws0 + rows * NUM_CHUNKS + chunk, tl.sum(acc, axis=1), mask=rmask)")


def _running_sums(w: Writer, t: _Tile) -> None:
    """The middle pass: each row's chunk sums become running sums, in place."""
    w.line("pid = tl.program_id(0)")
    w.line("rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)")
    if t.p.index64:
        w.line("rows = rows.to(tl.int64)")
    w.line("rmask = rows < ROWS")
    w.line(f"carry = tl.zeros([BLOCK_R], {_acc(t.p)})")
    w.line("for start in range(0, NUM_CHUNKS, SUMS_BLOCK):")
    with w.indent():
        w.line("c = start + tl.arange(0, SUMS_BLOCK)")
        w.line("m = rmask[:, None] & (c < NUM_CHUNKS)[None, :]")
        w.line("ptr = ws0 + rows[:, None] * NUM_CHUNKS + c[None, :]")
        # masked lanes are zeroed by a where, not only by the load's other=0: Triton 3.6's
        # OptimizeThreadLocality pass asserts on a loop-carried sum of a plain load whose
        # final value is unused (as the carry is after the loop)
        w.line("x = tl.where(m, tl.load(ptr, mask=m, other=0), 0)")
        w.line("tl.store(ptr, tl.cumsum(x, axis=1) + carry[:, None], mask=m)")
        w.line("carry += tl.sum(x, axis=1)")


def _chunk_scan(w: Writer, t: _Tile) -> None:
    _split_ids(w, t)
    w.line("base = tl.load(ws0 + rows * NUM_CHUNKS + chunk - 1, mask=rmask & (chunk > 0), other=0)")
    v = t.value(w)
    w.line(f"acc = tl.where(mask, ({v}).to({_acc(t.p)}), 0)")
    t.finish(w, "tl.cumsum(acc, axis=1) + base[:, None]", "mask")


def _sort(w: Writer, t: _Tile) -> None:
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


def _rank_sort(w: Writer, t: _Tile) -> None:
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
    w.line("at = tl.reshape(rank, [1, BLOCK_N])")
    if t.p.index64:
        w.line("at = at.to(tl.int64)")
    t.offsets(w, "at")
    w.line("mask = mi")
    t.emitter(w)
    if t.p.op == "argsort":
        t.finish(w, "ci[None, :] + tl.zeros([BLOCK_R, BLOCK_N], ci.dtype)", "mi")
    else:
        w.line("kmask = mi & (at < K)")
        t.store(w, 0, key, "kmask")
        t.store(w, 1, "ci[None, :] + tl.zeros([BLOCK_R, BLOCK_N], ci.dtype)", "kmask")


def _select_names(t: _Tile) -> tuple[str, str, str]:
    """The combine function, the key's dtype and the index's of a ``select`` kernel."""
    combine = "_first_desc" if t.p.descending else "_first_asc"
    dtype = t.spec.scan.inputs[0].dtype
    key = "tl.int8" if dtype is DataType.Bool else tl_compute(dtype)
    return combine, key, "tl.int64" if t.p.index64 else "tl.int32"


def _store_pick(w: Writer, t: _Tile, key: str, idx: str) -> None:
    """Store pass ``j``'s pick (``key``, ``idx``: [BLOCK_R]) at position ``pos`` of the rows."""
    g = t.p.scan_group
    for k, value in enumerate((key, idx)):
        a = t.spec.n_loads + k
        tv = t.spec.accesses[a].tv
        col = "pos * 0" if g is None else f"pos * s{a}_{g}"
        w.line(f"pick_off = roff{a} + {col}")  # not off<a>: the loop carries those
        stored = storage_cast(value, tv.dtype)
        w.line(f"tl.store({t.ptr_of[id(tv)]} + pick_off, {stored}, mask=rmask)")


def _select_tile(w: Writer, t: _Tile) -> None:
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
        _store_pick(w, t, "pk", "pi")


def _select_loop(w: Writer, t: _Tile) -> None:
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
        _store_pick(w, t, "pk", "pi")


def _key(w: Writer, t: _Tile, v: str) -> str:
    """The sort key of the scan input's value ``v`` (bools compare as int8)."""
    if t.spec.scan.inputs[0].dtype is DataType.Bool:
        return w.assign("key", f"({v}).to(tl.int8)")
    return v


def _kernel(spec, params: ScanParams, name: str, body, extra=(), sort=False) -> Kernel:
    src, args = _source(spec, params, name, body, list(extra), sort)
    consts = [("BLOCK_R", params.block_r), ("BLOCK_N", params.block_n)]
    if extra:
        consts.append(("SUMS_BLOCK", params.sums_block))
    return Kernel(name, src, tuple(args), tuple(consts), params.num_warps, params)


def emit(spec, params: ScanParams) -> tuple[Kernel, ...]:
    """The scan segment's kernels: one, or the split's three (chunk sums, their running
    sums, the scan)."""
    if params.mode == "select":
        body = _select_tile if params.in_tile else _select_loop
        return (_kernel(spec, params, "topk_select_kernel", body, sort=True),)
    if params.op in SORTS and params.mode == "rank":
        return (_kernel(spec, params, f"{params.op}_rank_kernel", _rank_sort, sort=True),)
    if params.op in SORTS:
        return (_kernel(spec, params, f"{params.op}_kernel", _sort, sort=True),)
    if params.mode == "block":
        return (_kernel(spec, params, "cumsum_kernel", _cumsum_block),)
    if params.mode == "loop":
        return (_kernel(spec, params, "cumsum_loop_kernel", _cumsum_loop),)
    return (
        _kernel(spec, params, "cumsum_chunk_sums_kernel", _chunk_sums, ["ws0"]),
        _kernel(spec, params, "cumsum_running_sums_kernel", _running_sums, ["ws0"]),
        _kernel(spec, params, "cumsum_chunks_kernel", _chunk_scan, ["ws0"]),
    )
