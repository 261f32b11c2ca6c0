"""Triton source for a normalization segment (see ``schedulers.normalization``).

The tile covers rows (kept coordinates) by reduced coordinates, as in the reduction
templates. ``persistent``: the tile holds whole rows; values are loaded once, each
reduction reduces the tile (``keep_dims``, so its result broadcasts over the row) and
the outputs are computed from the same registers. ``looped``: one loop over the
reduced extent per level of dependent reductions, then one loop that stores.
Per-row results the fusion returns (mean, rstd) are stored once per row.

Softmax's max and sum (``Group.online``) share a loop: the tile keeps a running max ``m``
and a running sum ``s`` of ``exp(a - m)`` per lane, rescaling ``s`` when ``m`` grows (one
exp per element); after the loop the row max is ``M = max(m)`` and the row sum
``sum(s * exp(m - M))``. Where the running max is -inf the terms are 0 (never
``exp(-inf - -inf)``); a NaN propagates through the max and the sums as in torch, and a
row of -inf alone gives a NaN sum, as torch's ``exp(-inf - -inf)`` terms do.
"""

from __future__ import annotations

from types import SimpleNamespace

from ..dtypes import is_floating
from ..schedulers.normalization import NormalizationParams, row_accesses
from ..schedulers.problem import is_affine
from .generic_index import generic_index
from .helpers import helpers_for
from .indexing import decompose, offset_expr, one_write_per_element
from .kernel import Kernel
from .pointwise import HEADER, kernel_header, load_line, raw_load
from .reduction_common import (
    COMBINE,
    accumulator_dtype,
    emit_counted_welford_step,
    emit_online_rows,
    emit_online_step,
    epilogue_values,
    identity,
    n_results,
    prelude,
    reduce_line,
)
from .values import ValueEmitter
from .writer import (
    Writer,
    factored_args,
    multiply_back,
    storage_cast,
    tl_compute,
    typed_params,
)


class _Kernel:
    """State shared by the emission steps of one kernel."""

    def __init__(self, spec, params: NormalizationParams, w: Writer):
        self.spec, self.p, self.w = spec, params, w
        self.inner = params.template == "inner"
        self.tile = "[BLOCK_X, BLOCK_R]" if self.inner else "[BLOCK_R, BLOCK_X]"
        self.axis = 1 if self.inner else 0
        self.r_arange = (
            "tl.arange(0, BLOCK_R)[None, :]" if self.inner else "tl.arange(0, BLOCK_R)[:, None]"
        )
        self.ptr = {id(tv): f"p{i}" for i, tv in enumerate(spec.memory)}
        self.load_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses[: spec.n_loads])}
        end = spec.n_loads + spec.n_stores
        self.coord_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses) if i >= end}
        self.scalar_names = {id(s): f"c{i}" for i, s in enumerate(spec.scalars)}
        self.special: dict[int, str] = {}
        self.xoff: list[str | None] = []
        self.idx: dict[int, str] = {}
        self.gen = generic_index(spec, params) if params.generic else None
        # the aligned R loop's row bases and its test that every row meets them
        # (``align_scalars``; only with ``align_rows``)
        self.row_base: dict[int, str] = {}
        self.aligned = ""

    def stride(self, a: int, k: int, index: str) -> tuple[str, int | str]:
        return (index, 1 if self.p.unit_strides[a][k] else f"s{a}_{k}")

    def r_term(self, a: int, k: int, index: str) -> tuple[str, int | str]:
        """Reduced group ``k``'s offset term of access ``a``. The R index is 32-bit; with
        64-bit indexing it is widened before a stride multiplies it (a column of an outer
        template, its stride times the R index, can pass 2**31)."""
        if self.p.index64 and not self.p.unit_strides[a][k]:
            index = f"{index}.to(tl.int64)"
        return self.stride(a, k, index)

    def rows(self, first: str | None = None, guard: bool = False) -> None:
        """Row indices, their mask and every access's row offset, of block ``first`` (by
        default the program's, or ``blk``, the row loop's block); ``guard``: the block may
        lie past the last (``NBLK``), its rows masked."""
        w, p, xg = self.w, self.p, self.p.x_groups
        if first is None:
            first = "blk" if p.row_programs else "tl.program_id(0)"
        w.line(f"pid = {first}.to(tl.int64)" if p.index64 else f"pid = {first}")
        if self.inner:
            w.line("x = pid * BLOCK_X + tl.arange(0, BLOCK_X)[:, None]")
            w.line("xmask = x < NX")
            if xg:
                self.idx.update(zip(xg, decompose(w, "x", [f"n{k}" for k in xg], "xg")))
        else:
            w.line("px = pid % NPX")
            w.line("rest = pid // NPX")
            span = p.x_span
            if span == 1:
                cols = w.assign("xg", "px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
                self.idx[xg[0]], n_cols = cols, f"n{xg[0]}"
            else:  # the tile's columns span two kept groups (a short stride-1 one first)
                cols = w.assign("xf", "px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
                n_cols = f"(n{xg[0]} * n{xg[1]})"
            w.line(f"xmask = {cols} < {n_cols}")
            if span == 2:
                self.idx[xg[0]] = w.assign("xg", f"{cols} % n{xg[0]}")
                self.idx[xg[1]] = w.assign("xg", f"{cols} // n{xg[0]}")
            if len(xg) > span:
                more = xg[span:]
                self.idx.update(zip(more, decompose(w, "rest", [f"n{k}" for k in more], "xg")))
            w.line(f"x = {cols} + {n_cols} * rest")
        if guard:
            w.line("xmask = xmask & (pid < NBLK)")
        self.xoff = []
        for a in range(len(self.spec.accesses)):
            if not is_affine(p, a):  # walks its chain per element (``emitter``)
                self.xoff.append(None)
                continue
            terms = [self.stride(a, k, self.idx[k]) for k in xg if not p.zero_strides[a][k]]
            if terms and not self.inner and p.zero_strides[a][xg[0]]:
                # only the first x group's index is a tile (the others come from ``rest``):
                # an access of stride 0 along it keeps the tile's shape (an expanded dim)
                terms.append(("x * 0", 1))
            base = f" + b{a}" if a in p.based else ""  # a slice's start, a select's index
            self.xoff.append(w.assign("xo", offset_expr(terms, "x * 0") + base))

    def _row_offset(self, a: int, index: dict[int, str]) -> str:
        """Access ``a``'s offset of the row at the kept groups' ``index`` (a slice's base
        included)."""
        p = self.p
        terms = [self.stride(a, g, index[g]) for g in p.x_groups if not p.zero_strides[a][g]]
        return offset_expr(terms) + (f" + b{a}" if a in p.based else "")

    def _row_starts(self) -> dict[int, str]:
        """Each row access's row offset in the program's row (a row a program), a scalar."""
        p, w = self.p, self.w
        idx = dict(zip(p.x_groups, decompose(w, "pid", [f"n{g}" for g in p.x_groups], "xs")))
        rows = row_accesses(self.spec.n_loads + self.spec.n_stores, p)
        return {a: w.assign("xs", self._row_offset(a, idx)) for a in rows}

    def align_scalars(self) -> None:
        """The row's scalars of the aligned R loop (``align_rows`` = V, a row a program):
        each row access's row offset and its first multiple of V at or after it (``ob``),
        the elements before that boundary (``head``: the first access's, at most NR), the
        whole tiles after it (``NFULL`` elements, from ``head``), the tail's start
        (``tail0``), and whether every row access meets its boundary after ``head``
        elements (``aligned``: else the plain loop runs)."""
        w, v = self.w, self.p.align_rows
        starts = self._row_starts()
        self.row_base = {
            a: w.assign("ob", f"({xs} + {v - 1}) // {v} * {v}") for a, xs in starts.items()
        }
        heads = [f"({self.row_base[a]} - {xs})" for a, xs in starts.items()]
        w.line(f"head = tl.minimum({heads[0]}, NR)")
        w.line("NFULL = (NR - head) // BLOCK_R * BLOCK_R")
        w.line("tail0 = head + NFULL")
        same = [f"({h} == {heads[0]})" for h in heads[1:]]
        self.aligned = " & ".join(same) if same else ""
        if same:
            w.line(f"aligned = {self.aligned}")

    def persistent_align(self) -> str:
        """The aligned persistent tile's scalars (``align_rows`` = V, a row a program): each
        row access's row offset ``xs`` and the V-element boundary at or before it (its row
        base), the row's first lane ``hd`` (the first row load's ``xs`` past its base) and
        the lanes its vectors cover, from the base through the row's last element
        (``LIM``, a multiple of V). Returns when the vector loads may run: every row access
        starts ``hd`` elements past its base, and each row load's last vector ends inside
        its tensor (past the row's end it reads the next row's elements; the last rows in
        memory take the plain tile). The row stores start on their bases too
        (``_persistent_aligned`` stores the row's whole vectors, then its edges)."""
        w, p, v = self.w, self.p, self.p.align_rows
        starts = self._row_starts()
        self.row_base = {a: w.assign("ob", f"{xs} // {v} * {v}") for a, xs in starts.items()}
        (first, xs0), *rest = starts.items()  # a load: the plan aligns by the loads
        w.line(f"hd = {xs0} - {self.row_base[first]}")
        w.line(f"LIM = (hd + NR + {v - 1}) // {v} * {v}")
        conds = [f"({xs} - {self.row_base[a]} == hd)" for a, xs in rest]
        last = {g: f"(n{g} - 1)" for g in p.x_groups}
        for a in starts:
            if a < self.spec.n_loads:
                end = f"{self._row_offset(a, last)} + NR"
                conds.append(f"({self.row_base[a]} + LIM <= {end})")
        return " & ".join(conds)

    def tile_offsets(self, ridx: dict[int, str]) -> list[str | None]:
        """Offsets over the tile for loads, row-space stores and coordinates."""
        p, w = self.p, self.w
        out: list[str | None] = []
        for a, acc in enumerate(self.spec.accesses):
            xoff = self.xoff[a]
            if acc.backward or acc.cross or xoff is None:
                out.append(None)
                continue
            terms = [(xoff, 1)] + [
                self.r_term(a, k, ridx[k]) for k in p.r_groups if not p.zero_strides[a][k]
            ]
            if len(terms) == 1:
                terms.append((f"tl.zeros({self.tile}, tl.int32)", 1))
            out.append(w.assign("off", offset_expr(terms)))
        return out

    def invariant(self, a: int) -> bool:
        """Access ``a`` reads the same addresses for every row block (inner template,
        stride 0 along every kept group: a layer norm's weight)."""
        xg = self.p.x_groups
        return self.inner and bool(xg) and all(self.p.zero_strides[a][k] for k in xg)

    def emitter(
        self,
        offsets: list[str | None],
        mask: str,
        ridx: dict[int, str] | None = None,
        preloaded: dict[int, str] | None = None,
        masks: dict[int, str] | None = None,
    ) -> ValueEmitter:
        """Values over the tile at ``offsets``; in generic mode, the walk at the R tile
        ``ridx`` is written first and its offsets join ``offsets``. ``preloaded``: loads
        already made (by index), in their storage dtype; ``masks``: loads masked otherwise
        than by ``mask`` (by index)."""
        w = self.w

        def load(tv, chain):
            k = (id(tv), tuple(id(e) for e in chain))
            if k not in self.load_index:
                return None
            i = self.load_index[k]
            if preloaded and i in preloaded:
                return w.assign("v", f"{preloaded[i]}.to({tl_compute(tv.dtype)})")
            valid = self.gen.valid.get(i) if self.gen else None  # a pad's input
            own = masks.get(i, mask) if masks else mask
            lmask = own if valid is None else w.assign("lmask", f"{own} & {valid}")
            return w.assign("v", load_line(self.ptr[id(tv)], offsets[i], lmask, tv.dtype))

        def coordinate(tv, chain):
            return offsets[self.coord_index[(id(tv), tuple(id(e) for e in chain))]]

        ve = ValueEmitter(
            w,
            load,
            lambda s: self.scalar_names[id(s)],
            coordinate,
            f"tl.zeros({self.tile}, tl.int32)",
            predicate=self.gen.predicate if self.gen else None,
        )
        ve.special = self.special  # shared: each reduction's result joins as it is made
        if self.gen is not None:
            assert ridx is not None
            dims = self.gen.dim_lines(self.p, {**self.idx, **ridx})
            zero = f"tl.zeros({self.tile}, tl.int32)"
            self.gen.emit(w, dims, offsets, ve.value, zero, self.p.index64, lanes=mask)
        return ve

    def r_tile(self, start: str) -> tuple[dict[int, str], str]:
        w, rg = self.w, self.p.r_groups
        w.line(f"r = {start}{self.r_arange}")
        w.line("mask = xmask & (r < NR)")
        return dict(zip(rg, decompose(w, "r", [f"n{k}" for k in rg], "rg"))), "mask"

    def store_rows(self, ve: ValueEmitter, offsets, mask: str) -> None:
        spec = self.spec
        for i in range(spec.n_loads, spec.n_loads + spec.n_stores):
            a = spec.accesses[i]
            if a.backward or a.cross:
                continue
            val = ve.value(a.tv, a.chain)
            self.w.line(
                f"tl.store({self.ptr[id(a.tv)]} + {offsets[i]}, "
                f"{storage_cast(val, a.tv.dtype)}, mask={mask})"
            )

    def store_per_row(self) -> None:
        spec, p, w = self.spec, self.p, self.w
        ve = ValueEmitter(
            w, lambda tv, chain: None, lambda s: self.scalar_names[id(s)], None, "x * 0"
        )
        ve.special = self.special
        for i in range(spec.n_loads, spec.n_loads + spec.n_stores):
            a = spec.accesses[i]
            if not a.backward:
                continue
            val = ve.value(a.tv, ())
            smask = one_write_per_element(
                w, "xmask", [self.idx[g] for g in p.x_groups if p.zero_strides[i][g]]
            )
            w.line(
                f"tl.store({self.ptr[id(a.tv)]} + {self.xoff[i]} + x * 0, "
                f"{storage_cast(val, a.tv.dtype)}, mask={smask})"
            )


def _reduce_whole(k: _Kernel, e, val: str) -> None:
    """A reduction of a whole row held in the tile (persistent mode)."""
    w, ax = k.w, k.axis
    at = accumulator_dtype(e)
    ct = tl_compute(at)
    if n_results(e) > 1:
        # two passes over registers: the mean, then the squared deviations from it. Every
        # valid row holds NR elements (a reduction of the broadcast mask would be unrolled
        # element by element: 10x slower on the H200)
        cnt = w.assign("cnt", f"(x * 0 + NR).to({ct})")
        v = w.assign("v", f"tl.where(mask, ({val}).to({ct}), 0.0)")
        mean = w.assign("mean", f"tl.sum({v}, {ax}, keep_dims=True) / tl.maximum({cnt}, 1.0)")
        d = w.assign("d", f"tl.where(mask, {v} - {mean}, 0.0)")
        m2 = w.assign("m2", f"tl.sum({d} * {d}, {ax}, keep_dims=True)")
        for o, r in zip(e.outputs, (mean, m2, cnt)):
            k.special[id(o)] = r
        return
    op = e.op.name
    v = w.assign("v", f"tl.where(mask, ({val}).to({ct}), {identity(op, at)})")
    res = w.fresh("red")
    w.line(reduce_line(res, v, op, ax, is_floating(at)))
    k.special[id(e.outputs[0])] = res


def _online_init(k: _Kernel, mx, sm) -> tuple[str, str]:
    """The running max and running sum of softmax's pair, before the loop."""
    w = k.w
    m, s = w.fresh("acc_max"), w.fresh("acc_sum")
    w.line(f"{m} = tl.full({k.tile}, float('-inf'), {tl_compute(accumulator_dtype(mx))})")
    w.line(f"{s} = tl.zeros({k.tile}, {tl_compute(accumulator_dtype(sm))})")
    return m, s


def _online_step(k: _Kernel, mx, val: str, m: str, s: str) -> None:
    """One chunk of softmax's running pair (``emit_online_step``)."""
    emit_online_step(k.w, m, s, val, "mask", tl_compute(accumulator_dtype(mx)))


def _online_rows(k: _Kernel, mx, sm, m: str, s: str) -> None:
    """The row max and row sum from the lanes' running values: they stand for the max's
    and the sum's outputs."""
    row_max, row_sum = k.w.fresh("row_max"), k.w.fresh("row_sum")
    emit_online_rows(k.w, m, s, row_max, row_sum, k.axis)
    k.special[id(mx.outputs[0])] = row_max
    k.special[id(sm.outputs[0])] = row_sum


def _r_loop(k: _Kernel, step, align: bool = True) -> None:
    """The R loop of a looped row: ``step(ridx, mask, offsets)`` writes one tile's work.

    Plain: tiles from element 0, each masked at NR. Aligned (``align_rows``, and ``align``:
    no pass whose step counts its tiles, as Welford's does): one masked tile takes the
    row's ``head`` (the elements before its first 16-byte boundary) in its first lanes and
    the tail's start in the others (a second one the tail's last ``head`` elements, when
    they do not fit), then whole tiles from the boundary, unmasked along R: Triton proves
    their offsets ``ob + j`` (a multiple of V plus a multiple of BLOCK_R plus the arange)
    aligned and contiguous, so they load and store 16-byte vectors."""
    w, rg = k.w, k.p.r_groups
    # Triton's pipelining of the walk (``loop_stages``), else a plain loop
    walk = f"tl.range({{}}, num_stages={k.p.loop_stages})" if k.p.loop_stages > 1 else "range({})"

    def plain() -> None:
        w.line(f"for r0 in {walk.format('0, NR, BLOCK_R')}:")
        with w.indent():
            ridx, mask = k.r_tile("r0 + ")
            step(ridx, mask, k.tile_offsets(ridx))

    def masked(first: str) -> None:
        w.line(f"r = {first}")
        w.line("mask = xmask & (r < NR)")
        ridx = {rg[0]: "r"}
        step(ridx, "mask", k.tile_offsets(ridx))

    def aligned() -> None:
        w.line("t = tl.arange(0, BLOCK_R)[None, :]")
        masked("tl.where(t < head, t, tail0 + t - head)")
        w.line("if tail0 + BLOCK_R - head < NR:")
        with w.indent():
            masked("tail0 + BLOCK_R - head + t")
        w.line(f"for j0 in {walk.format('0, NFULL, BLOCK_R')}:")
        with w.indent():
            w.line("j = j0 + t")
            w.line("r = head + j")
            w.line("mask = tl.broadcast_to(xmask, [BLOCK_X, BLOCK_R])")
            ridx = {rg[0]: "r"}
            offsets = k.tile_offsets(ridx)
            for a, ob in k.row_base.items():
                offsets[a] = w.assign("off", f"{ob} + j")
            step(ridx, "mask", offsets)

    if not (k.p.align_rows and align):
        plain()
    elif not k.aligned:  # one row access: its own boundary
        aligned()
    else:
        w.line("if aligned:")
        with w.indent():
            aligned()
        w.line("else:")
        with w.indent():
            plain()


def _looped_pass(k: _Kernel, reds, online: dict) -> None:
    """One loop over the reduced extent accumulating ``reds``, then their row results.
    ``online`` (id(sum) -> max) names softmax's pairs, accumulated together."""
    w = k.w
    pairs = [(online[id(e)], e) for e in reds if id(e) in online]
    paired = {id(e) for pair in pairs for e in pair}
    reds = [e for e in reds if id(e) not in paired]
    running = [_online_init(k, mx, sm) for mx, sm in pairs]
    accs = {}
    for e in reds:
        at = accumulator_dtype(e)
        ct = tl_compute(at)
        if n_results(e) > 1:
            names = [w.fresh(n) for n in ("acc_mean", "acc_m2", "acc_n")]
            for n in names[:2]:
                w.line(f"{n} = tl.zeros({k.tile}, {ct})")
        else:
            names = [w.fresh("acc")]
            w.line(f"{names[0]} = tl.full({k.tile}, {identity(e.op.name, at)}, {ct})")
        accs[id(e)] = names
    counted = any(n_results(e) > 1 for e in reds)  # Welford's step counts the tiles

    def step(ridx, mask, offsets) -> None:
        ve = k.emitter(offsets, mask, ridx)
        for e in reds:
            at = accumulator_dtype(e)
            ct = tl_compute(at)
            val = ve.value(e.inputs[0], ())
            names = accs[id(e)]
            if n_results(e) > 1:
                # a lane is masked only past NR, so in the chunk starting at r0 every
                # unmasked lane takes its (r0 / BLOCK_R + 1)-th value: the count is one
                # scalar per chunk, its reciprocal one division per chunk, not per element
                mean, m2, _ = names
                emit_counted_welford_step(w, mean, m2, val, "mask", "(r0 // BLOCK_R + 1)", ct)
            else:
                op = e.op.name
                w.line(f"v = tl.where(mask, ({val}).to({ct}), {identity(op, at)})")
                w.line(f"{names[0]} = {COMBINE[op]}({names[0]}, v)")
        for (mx, _), (m, s) in zip(pairs, running):
            _online_step(k, mx, ve.value(mx.inputs[0], ()), m, s)

    _r_loop(k, step, align=not counted)
    for (mx, sm), (m, s) in zip(pairs, running):
        _online_rows(k, mx, sm, m, s)
    for e in reds:
        names = accs[id(e)]
        if n_results(e) > 1:
            # each lane's count: the chunks in which its offset stayed below NR
            w.line(
                f"{names[2]} = tl.maximum(NR - {k.r_arange} + BLOCK_R - 1, 0) // BLOCK_R "
                f"+ tl.zeros({k.tile}, tl.int32)"
            )
            w.line(f"{names[2]} = {names[2]}.to({tl_compute(accumulator_dtype(e))})")
            res = [w.fresh(n) for n in ("mean", "m2", "cnt")]
            w.line(
                f"{', '.join(res)} = tl.reduce(({', '.join(names)}), {k.axis}, "
                f"_welford_combine, keep_dims=True)"
            )
            for o, r in zip(e.outputs, res):
                k.special[id(o)] = r
        else:
            res = w.fresh("red")
            w.line(reduce_line(res, names[0], e.op.name, k.axis, is_floating(accumulator_dtype(e))))
            k.special[id(e.outputs[0])] = res


def _cross_init(k: _Kernel) -> list[str]:
    """Each cross reduction's partial column results of this program, before its row loop:
    one value per column of the tile (``[1, BLOCK_R]`` inner, ``[BLOCK_R, 1]`` outer), or
    (``cross_tile``) one per tile element, its rows reduced after the loop."""
    shape = k.tile if k.p.cross_tile else "[1, BLOCK_R]" if k.inner else "[BLOCK_R, 1]"
    names = []
    for e in k.spec.group.cross:
        at = accumulator_dtype(e)
        names.append(k.w.fresh("cross"))
        k.w.line(f"{names[-1]} = tl.full({shape}, {identity(e.op.name, at)}, {tl_compute(at)})")
    return names


def _cross_step(k: _Kernel, ve: ValueEmitter, accs: list[str], mask: str) -> None:
    """The tile's rows added into the partial column results (the kept axis reduced)."""
    w = k.w
    for e, acc in zip(k.spec.group.cross, accs):
        op, at = e.op.name, accumulator_dtype(e)
        val = ve.value(e.inputs[0], ())
        v = w.assign("v", f"tl.where({mask}, ({val}).to({tl_compute(at)}), {identity(op, at)})")
        if k.p.cross_tile:
            w.line(f"{acc} = {COMBINE[op]}({acc}, {v})")
            continue
        part = w.fresh("part")
        w.line(reduce_line(part, v, op, 1 - k.axis, is_floating(at)))
        w.line(f"{acc} = {COMBINE[op]}({acc}, {part})")


def _cross_store(k: _Kernel, accs: list[str]) -> None:
    """This program's partials into row ``program_id`` of the ``[NP, NR]`` workspaces."""
    w = k.w
    w.line(f"cr = {k.r_arange}")
    prog = "tl.program_id(0).to(tl.int64)" if k.p.index64 else "tl.program_id(0)"
    for j, (e, acc) in enumerate(zip(k.spec.group.cross, accs)):
        if k.p.cross_tile:  # the tile's rows, reduced once
            part = w.fresh("part")
            w.line(reduce_line(part, acc, e.op.name, 1 - k.axis, is_floating(accumulator_dtype(e))))
            acc = part
        w.line(f"tl.store(cw{j} + {prog} * NR + cr, {acc}, mask=cr < NR)")


def _needs_rows(group) -> bool:
    """Some cross reduction's input depends on a result of the group's row reductions."""
    rows, seen = group.red_outputs(), set()

    def reaches(v) -> bool:
        if id(v) in rows:
            return True
        e = getattr(v, "definition", None)
        if e is None or id(v) in seen:
            return False
        seen.add(id(v))
        return any(reaches(i) for i in e.inputs)

    return any(reaches(e.inputs[0]) for e in group.cross)


def _preload(k: _Kernel, first: str, guard: bool, loads: list[int]) -> dict[int, str]:
    """The rows of block ``first`` and the loads ``loads`` (indices) over its tile, in
    their storage dtype, each in the shape it varies over: an invariant load
    (``_Kernel.invariant``) over the reduced coordinates alone (the same values serve
    every row block), a load of stride 0 along every reduced group over the rows alone (a
    norm's saved mean and rstd), the others over the tile."""
    p = k.p
    k.rows(first, guard)
    ridx, mask = k.r_tile("")
    offsets = k.tile_offsets(ridx)
    out = {}
    for i in loads:
        off, tv = offsets[i], k.spec.accesses[i].tv
        if off is None:
            continue
        if k.invariant(i):
            terms = [k.r_term(i, g, ridx[g]) for g in p.r_groups if not p.zero_strides[i][g]]
            base = f" + b{i}" if i in p.based else ""
            off, m = offset_expr(terms, "r * 0") + base, "r < NR"
        elif all(p.zero_strides[i][g] for g in p.r_groups):
            off, m = k.xoff[i], "xmask"
        else:
            m = mask
        out[i] = k.w.assign("pf", raw_load(k.ptr[id(tv)], off, m, tv.dtype))
    return out


def _row_loop(k: _Kernel, params: NormalizationParams, accs: list[str]) -> None:
    """The cross reductions' loop over row blocks; with ``prefetch``, the invariant loads
    made once before it and each block's other loads issued one iteration ahead (held in
    registers, carried by the loop)."""
    w = k.w
    stages = f", num_stages={params.loop_stages}" if params.loop_stages > 1 else ""
    carried: dict[int, str] = {}
    ready: dict[int, str] = {}
    if params.prefetch:
        loads = range(k.spec.n_loads)
        ready = _preload(k, "tl.program_id(0)", False, [i for i in loads if k.invariant(i)])
        carried = _preload(k, "tl.program_id(0)", False, [i for i in loads if not k.invariant(i)])
    w.line(f"for blk in tl.range(tl.program_id(0), NBLK, tl.num_programs(0){stages}):")
    with w.indent():
        ahead = _preload(k, "blk + tl.num_programs(0)", True, list(carried)) if carried else {}
        _body(k, params, accs, {**ready, **carried})
        for i, name in carried.items():
            w.line(f"{name} = {ahead[i]}")


def _stores_rows(spec) -> bool:
    """Whether a store walks the rows (not a per-row result, not a cross partial)."""
    stores = spec.accesses[spec.n_loads : spec.n_loads + spec.n_stores]
    return any(not (a.backward or a.cross) for a in stores)


def _persistent(k: _Kernel, cross: list[str], preloaded) -> None:
    """The tile holds whole rows: its loads, reductions and stores (and its cross
    contributions)."""
    group = k.spec.group
    ridx, mask = k.r_tile("")
    offsets = k.tile_offsets(ridx)
    ve = k.emitter(offsets, mask, ridx, preloaded)
    # cross contributions that need no row result go first: what only they use (dy of
    # a layer norm backward) is then dead before the row reductions' barriers
    early = not _needs_rows(group)
    if early:
        _cross_step(k, ve, cross, mask)
    for e in group.reductions:
        _reduce_whole(k, e, ve.value(e.inputs[0], ()))
    k.store_rows(ve, offsets, mask)
    if not early:
        _cross_step(k, ve, cross, mask)


def _persistent_aligned(k: _Kernel) -> None:
    """The persistent tile of one row, aligned (``persistent_align``'s scalars written):
    lane ``t`` holds the row's element ``t - hd``. The row loads read whole vectors from
    their row bases, masked by vector (``LIM``), and every value outside the row is
    masked after. The stores write the row's whole vectors from the tile (``smask``, a
    vector's lanes at once), and its edges (the elements of the vectors it shares with
    the rows beside it, ``V`` lanes at either end) from a tile of ``2 V`` lanes whose
    values are loaded and computed again: a store masked by element would take a layout
    of an element a thread, and the tile would move through shared memory to it."""
    w, p, v = k.w, k.p, k.p.align_rows
    w.line("t = tl.arange(0, BLOCK_R)[None, :]")
    w.line("r = t - hd")
    w.line("mask = xmask & (r >= 0) & (r < NR)")
    w.line("vmask = xmask & (t < LIM)")
    w.line(f"B0 = (hd + {v - 1}) // {v} * {v}")  # the first lane of a whole vector
    w.line(f"B1 = (hd + NR) // {v} * {v}")  # past the last
    w.line("smask = xmask & (t >= B0) & (t < B1)")
    ridx = {p.r_groups[0]: "r"}
    offsets = k.tile_offsets(ridx)
    for a, base in k.row_base.items():
        offsets[a] = w.assign("off", f"{base} + t")
    loads = {a: "vmask" for a in k.row_base if a < k.spec.n_loads}
    ve = k.emitter(offsets, "mask", ridx, None, loads)
    for e in k.spec.group.reductions:
        _reduce_whole(k, e, ve.value(e.inputs[0], ()))
    k.store_rows(ve, offsets, "smask")
    if not _stores_rows(k.spec):
        return
    tile = k.tile
    k.tile = f"[BLOCK_X, {2 * v}]"
    try:
        w.line(f"te = tl.arange(0, {2 * v})[None, :]")
        w.line(f"te = tl.where(te < {v}, te, B1 + te - {v})")
        w.line("re = te - hd")
        w.line("emask = xmask & (re >= 0) & (re < NR) & ((te < B0) | (te >= B1))")
        ridx = {p.r_groups[0]: "re"}
        edges = k.tile_offsets(ridx)
        k.store_rows(k.emitter(edges, "emask", ridx), edges, "emask")
    finally:
        k.tile = tile


def _body(k: _Kernel, params: NormalizationParams, cross: list[str], preloaded=None) -> None:
    """One row block: its rows, reductions and stores (and its cross contributions);
    ``preloaded``: its loads already made (``_row_loop``)."""
    spec, group = k.spec, k.spec.group
    k.rows()
    if params.mode == "persistent" and params.align_rows and not cross and preloaded is None:
        w = k.w
        w.line(f"if {k.persistent_align()}:")
        with w.indent():
            _persistent_aligned(k)
            k.store_per_row()
        w.line("else:")
        with w.indent():
            k.special.clear()  # the aligned branch's results are not defined here
            _persistent(k, cross, preloaded)
            k.store_per_row()
        return
    if params.mode == "persistent":
        _persistent(k, cross, preloaded)
    else:
        assert not cross, "cross reductions need a persistent tile"
        if params.align_rows:
            k.align_scalars()
        for level in sorted(set(group.levels.values())):
            _looped_pass(
                k, [e for e in group.reductions if group.levels[id(e)] == level], group.online
            )
        if _stores_rows(spec):
            _r_loop(
                k,
                lambda ridx, mask, offsets: k.store_rows(
                    k.emitter(offsets, mask, ridx), offsets, mask
                ),
            )  # the store pass
    k.store_per_row()


def cross_finish_source(spec, params: NormalizationParams, name: str) -> tuple[str, list[str]]:
    """The finishing kernel of a group's cross reductions: each column's ``NP`` partials
    combined in program order (the result does not depend on which program finished
    first), then the results and the outputs computed from them (``Group.cross_epilogue``)
    stored through their strides over the reduced groups."""
    group, rg, w = spec.group, params.r_groups, Writer()
    cross = [(i, a) for i, a in enumerate(spec.accesses) if a.cross]
    ptr = {id(tv): f"p{i}" for i, tv in enumerate(spec.memory)}
    ws = [f"cw{j}" for j in range(len(group.cross))]
    sizes = [f"n{g}" for g in rg]
    strides = [
        f"s{a}_{g}"
        for a, _ in cross
        for g in rg
        if not params.zero_strides[a][g] and not params.unit_strides[a][g]
    ]
    scalars = [f"c{i}" for i in range(len(spec.scalars))]
    ptrs = list(dict.fromkeys(ptr[id(a.tv)] for _, a in cross))
    args = ws + ptrs + sizes + strides + scalars + ["NR", "NP"]
    w.line(f"# finishing kernel of a normalization's cross reductions; params: {params}")
    w.line("@triton.jit")
    w.line(
        f"def {name}({', '.join(typed_params(args, spec.scalars))}, "
        "BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr):"
    )
    with w.indent():
        pid = "tl.program_id(0).to(tl.int64)" if params.index64 else "tl.program_id(0)"
        if params.finish_pdl:  # launched while the row kernel runs: its partials first
            w.line("tl.extra.cuda.gdc_wait()")
        w.line(f"r = {pid} * BLOCK_C + tl.arange(0, BLOCK_C)[None, :]")
        w.line("rmask = r < NR")
        results = _finish_combine(w, group.cross)
        _finish_stores(w, spec, params, _finish_values(w, spec, results), ptr)
    body = w.text()
    return HEADER + prelude() + helpers_for(body) + "\n\n" + body, args


def _finish_combine(w: Writer, cross) -> list[str]:
    """Each cross reduction's ``NP`` partials of columns ``r``, ``BLOCK_S`` at a time, in
    program order: the names of the results."""
    results = []
    for j, e in enumerate(cross):
        at = accumulator_dtype(e)
        results.append(f"f{j}")
        w.line(f"f{j} = tl.full([1, BLOCK_C], {identity(e.op.name, at)}, {tl_compute(at)})")
    w.line("for s0 in range(0, NP, BLOCK_S):")
    with w.indent():
        w.line("s = s0 + tl.arange(0, BLOCK_S)[:, None]")
        w.line("pmask = rmask & (s < NP)")
        for j, e in enumerate(cross):
            op, at = e.op.name, accumulator_dtype(e)
            w.line(f"part = tl.load(cw{j} + s * NR + r, mask=pmask, other={identity(op, at)})")
            w.line(reduce_line("chunk", "part", op, 0, is_floating(at)))
            w.line(f"f{j} = {COMBINE[op]}(f{j}, chunk)")
    return results


def _finish_values(w: Writer, spec, results: list[str]) -> dict[int, str]:
    """The value of every tensor the finish stores, by id: the cross results, then the
    outputs computed from them (``epilogue_values``, scalars ``c<i>``)."""
    group = spec.group
    names = {id(sc): f"c{i}" for i, sc in enumerate(spec.scalars)}
    columns = SimpleNamespace(reductions=group.cross, epilogue=list(group.cross_epilogue))
    epilogue = epilogue_values(
        w, columns, results, lambda sc: names[id(sc)], "tl.zeros([1, BLOCK_C], tl.int32)"
    )
    values = dict(zip((id(e.outputs[0]) for e in group.cross), results))
    values.update(zip((id(o) for o in group.cross_epilogue), epilogue))
    return values


def _finish_stores(w: Writer, spec, params, values: dict[int, str], ptr) -> None:
    """Each cross store through its strides over the reduced groups (an expanded dim's
    once)."""
    rg = params.r_groups
    idx = dict(zip(rg, decompose(w, "r", [f"n{g}" for g in rg], "rg")))
    for a, acc in enumerate(spec.accesses):
        if not acc.cross:
            continue
        terms = [
            (idx[g], 1 if params.unit_strides[a][g] else f"s{a}_{g}")
            for g in rg
            if not params.zero_strides[a][g]
        ]
        smask = one_write_per_element(w, "rmask", [idx[g] for g in rg if params.zero_strides[a][g]])
        val = storage_cast(values[id(acc.tv)], acc.tv.dtype)
        w.line(f"tl.store({ptr[id(acc.tv)]} + {offset_expr(terms, 'r * 0')}, {val}, mask={smask})")


def normalization_source(spec, params: NormalizationParams, name: str) -> tuple[str, list[str]]:
    w = Writer()
    n_acc = len(spec.accesses)
    n_groups = params.n_groups
    sizes = [f"n{k}" for k in range(n_groups)]
    strides = [
        f"s{a}_{k}"
        for a in range(n_acc)
        for k in range(n_groups)
        if is_affine(params, a) and not params.zero_strides[a][k] and not params.unit_strides[a][k]
    ]
    ptrs = [f"p{i}" for i in range(len(spec.memory))]
    scalars = [f"c{i}" for i in range(len(spec.scalars))]
    bases = [f"b{a}" for a in params.based]
    walk = generic_index(spec, params).arg_names() if params.generic else []
    cross = [f"cw{j}" for j in range(len(spec.group.cross))]
    loop = ["NBLK"] if params.row_programs else []
    args = ptrs + cross + sizes + strides + walk + bases + scalars + ["NX", "NR", "NPX"] + loop
    args = factored_args(args, params.factors)
    for line in kernel_header(spec, params):
        w.line(line)
    w.line("@triton.jit")
    w.line(
        f"def {name}({', '.join(typed_params(args, spec.scalars))}, "
        "BLOCK_X: tl.constexpr, BLOCK_R: tl.constexpr):"
    )
    with w.indent():
        multiply_back(w, params.factors)
        k = _Kernel(spec, params, w)
        if not params.row_programs:
            _body(k, params, [])
        else:  # cross reductions: the programs walk the row blocks, then store partials
            if params.finish_pdl:  # the finish's programs may start (they wait for ours)
                w.line("tl.extra.cuda.gdc_launch_dependents()")
            accs = _cross_init(k)
            _row_loop(k, params, accs)
            _cross_store(k, accs)
    body = w.text()
    return HEADER + prelude() + helpers_for(body) + "\n\n" + body, args


def emit(spec, params: NormalizationParams) -> tuple[Kernel, ...]:
    """The normalization kernel of ``spec`` under ``params``."""
    name = "normalization_kernel"
    src, args = normalization_source(spec, params, name)
    main = Kernel(
        name,
        src,
        tuple(args),
        (("BLOCK_X", params.block_x), ("BLOCK_R", params.block_r)),
        params.num_warps,
        params,
    )
    if not params.row_programs:
        return (main,)
    name = "cross_finish_kernel"
    src, args = cross_finish_source(spec, params, name)
    blocks = (("BLOCK_C", params.finish_columns), ("BLOCK_S", params.finish_rows))
    return main, Kernel(
        name, src, tuple(args), blocks, params.finish_warps, params, params.finish_pdl
    )
