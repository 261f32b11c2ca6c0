"""What every scan kernel (cumsum, argsort, topk) shares: its arguments, its row and column
index lines, its prologue's values and its stores (``ScanTile``), and the module around
its body (``scan_kernel``).

Every kernel addresses its accesses the same way: a program's ``BLOCK_R`` rows are
split into the coordinates of the kept groups (innermost first), each access's offset
is the sum of those coordinates times its strides (``s<a>_<k>``), plus the column along
the scanned group times that group's stride. The prologue (the segment's pointwise and
shape ops) is emitted by ``ValueEmitter`` at those offsets; the scan works on the
[BLOCK_R, BLOCK_N] tile of the scan's input.
"""

from __future__ import annotations

from collections.abc import Callable

from ..schedulers.scan import ScanParams
from .helpers import helpers_for
from .kernel import Kernel
from .pointwise import HEADER, kernel_header, load_line
from .values import ValueEmitter
from .writer import Writer, storage_cast, tl_compute, tl_dtype, typed_params

TILE_ZEROS = "tl.zeros([BLOCK_R, BLOCK_N], tl.int32)"


class ScanTile:
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

    def store_ranked(self, w: Writer, value: str) -> None:
        """The rank mode's stores: each element of the row tile ``value`` (the row's
        values, their columns ``ci``) at its position ``rank`` along the dim (argsort: the
        columns and the epilogue; topk: the value and the column where the rank is below K)."""
        w.line("at = tl.reshape(rank, [1, BLOCK_N])")
        if self.p.index64:
            w.line("at = at.to(tl.int64)")
        self.offsets(w, "at")
        w.line("mask = mi")
        self.emitter(w)
        columns = "ci[None, :] + tl.zeros([BLOCK_R, BLOCK_N], ci.dtype)"
        if self.p.op == "argsort":
            self.finish(w, columns, "mi")
        else:
            w.line("kmask = mi & (at < K)")
            self.store(w, 0, value, "kmask")
            self.store(w, 1, columns, "kmask")

    def store_at(self, w: Writer, k: int, value: str, pos: str) -> None:
        """Store ``value`` (one per row: [BLOCK_R]) into the scan's output ``k`` at position
        ``pos`` of the tile's rows (a topk's pick)."""
        a = self.spec.n_loads + k
        tv = self.spec.accesses[a].tv
        g = self.p.scan_group
        col = f"{pos} * 0" if g is None else f"{pos} * s{a}_{g}"
        w.line(f"pick_off = roff{a} + {col}")  # not off<a>: a loop may carry those
        stored = storage_cast(value, tv.dtype)
        w.line(f"tl.store({self.ptr_of[id(tv)]} + pick_off, {stored}, mask=rmask)")


Body = Callable[[Writer, ScanTile], None]


def _constexprs(params: ScanParams, extra: tuple[str, ...]) -> list[tuple[str, int]]:
    """The kernel's constexprs: its tile; with workspaces (``extra``), the block of the
    chunks' results; a split topk's block of k."""
    consts = [("BLOCK_R", params.block_r), ("BLOCK_N", params.block_n)]
    if extra:
        consts.append(("RESULTS_BLOCK", params.results_block))
    if params.k_block:
        consts.append(("K_BLOCK", params.k_block))
    if params.filter_groups:
        consts.append(("GROUPS", params.filter_groups))
    return consts


def _source(
    spec,
    params: ScanParams,
    name: str,
    body: Body,
    extra: tuple[str, ...],
    prelude: str,
    launch: tuple[str, ...],
):
    from .backend import PRELUDE

    t = ScanTile(spec, params)
    w = Writer()
    for line in kernel_header(spec, params):
        w.line(line)
    args = t.args(list(extra)) + (["NUM_CHUNKS"] if extra else []) + list(launch)
    consts = [f"{const}: tl.constexpr" for const, _ in _constexprs(params, extra)]
    w.line("@triton.jit")
    w.line(f"def {name}({', '.join(typed_params(args, spec.scalars) + consts)}):")
    with w.indent():
        body(w, t)
    body_text = w.text()
    return HEADER + PRELUDE + prelude + helpers_for(body_text) + "\n\n" + body_text, args


def scan_kernel(
    spec,
    params: ScanParams,
    name: str,
    body: Body,
    extra: tuple[str, ...] = (),
    prelude: str = "",
    launch: tuple[str, ...] = (),
) -> Kernel:
    """Kernel ``name`` of a scan segment: ``body`` written inside its function, after the
    arguments (``extra``: workspaces, which add ``NUM_CHUNKS`` and ``RESULTS_BLOCK``;
    ``launch``: integers a launch binds, its ``LaunchSpec`` values) and ``prelude`` (jit
    helpers it calls) pasted after the imports."""
    src, args = _source(spec, params, name, body, extra, prelude, launch)
    consts = tuple(_constexprs(params, extra))
    return Kernel(name, src, tuple(args), consts, params.num_warps, params)
