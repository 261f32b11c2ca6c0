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

from ..dtypes import is_floating
from ..schedulers.normalization import NormalizationParams
from ..schedulers.problem import is_affine
from .generic_index import generic_index
from .helpers import helpers_for
from .indexing import decompose, offset_expr, one_write_per_element
from .kernel import Kernel
from .pointwise import HEADER, kernel_header, load_line
from .reduction_common import (
    COMBINE,
    accumulator_dtype,
    emit_counted_welford_step,
    emit_online_rows,
    emit_online_step,
    identity,
    n_results,
    prelude,
    reduce_line,
)
from .values import ValueEmitter
from .writer import Writer, storage_cast, tl_compute, typed_params


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

    def stride(self, a: int, k: int, index: str) -> tuple[str, int | str]:
        return (index, 1 if self.p.unit_strides[a][k] else f"s{a}_{k}")

    def r_term(self, a: int, k: int, index: str) -> tuple[str, int | str]:
        """Reduced group ``k``'s offset term of access ``a``. The R index is 32-bit; with
        64-bit indexing it is widened before a stride multiplies it (a column of an outer
        template, its stride times the R index, can pass 2**31)."""
        if self.p.index64 and not self.p.unit_strides[a][k]:
            index = f"{index}.to(tl.int64)"
        return self.stride(a, k, index)

    def rows(self) -> None:
        """Row indices, their mask and every access's row offset."""
        w, p, xg = self.w, self.p, self.p.x_groups
        w.line("pid = tl.program_id(0).to(tl.int64)" if p.index64 else "pid = tl.program_id(0)")
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

    def tile_offsets(self, ridx: dict[int, str]) -> list[str | None]:
        """Offsets over the tile for loads, row-space stores and coordinates."""
        p, w = self.p, self.w
        out: list[str | None] = []
        for a, acc in enumerate(self.spec.accesses):
            xoff = self.xoff[a]
            if acc.backward or xoff is None:
                out.append(None)
                continue
            terms = [(xoff, 1)] + [
                self.r_term(a, k, ridx[k]) for k in p.r_groups if not p.zero_strides[a][k]
            ]
            if len(terms) == 1:
                terms.append((f"tl.zeros({self.tile}, tl.int32)", 1))
            out.append(w.assign("off", offset_expr(terms)))
        return out

    def emitter(
        self, offsets: list[str | None], mask: str, ridx: dict[int, str] | None = None
    ) -> ValueEmitter:
        """Values over the tile at ``offsets``; in generic mode, the walk at the R tile
        ``ridx`` is written first and its offsets join ``offsets``."""
        w = self.w

        def load(tv, chain):
            k = (id(tv), tuple(id(e) for e in chain))
            if k not in self.load_index:
                return None
            i = self.load_index[k]
            valid = self.gen.valid.get(i) if self.gen else None  # a pad's input
            lmask = mask if valid is None else w.assign("lmask", f"{mask} & {valid}")
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
            self.gen.emit(w, dims, offsets, ve.value, zero, self.p.index64)
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
            if a.backward:
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
    w.line("for r0 in range(0, NR, BLOCK_R):")
    with w.indent():
        ridx, mask = k.r_tile("r0 + ")
        ve = k.emitter(k.tile_offsets(ridx), mask, ridx)
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
    args = ptrs + sizes + strides + walk + bases + scalars + ["NX", "NR", "NPX"]
    for line in kernel_header(spec, params):
        w.line(line)
    w.line("@triton.jit")
    w.line(
        f"def {name}({', '.join(typed_params(args, spec.scalars))}, "
        "BLOCK_X: tl.constexpr, BLOCK_R: tl.constexpr):"
    )
    group = spec.group
    with w.indent():
        k = _Kernel(spec, params, w)
        k.rows()
        if params.mode == "persistent":
            ridx, mask = k.r_tile("")
            offsets = k.tile_offsets(ridx)
            ve = k.emitter(offsets, mask, ridx)
            for e in group.reductions:
                _reduce_whole(k, e, ve.value(e.inputs[0], ()))
            k.store_rows(ve, offsets, mask)
        else:
            for level in sorted(set(group.levels.values())):
                _looped_pass(
                    k, [e for e in group.reductions if group.levels[id(e)] == level], group.online
                )
            if any(
                not a.backward for a in spec.accesses[spec.n_loads : spec.n_loads + spec.n_stores]
            ):
                w.line("for r0 in range(0, NR, BLOCK_R):")  # the store pass
                with w.indent():
                    ridx, mask = k.r_tile("r0 + ")
                    offsets = k.tile_offsets(ridx)
                    k.store_rows(k.emitter(offsets, mask, ridx), offsets, mask)
        k.store_per_row()
    body = w.text()
    return HEADER + prelude() + helpers_for(body) + "\n\n" + body, args


def emit(spec, params: NormalizationParams) -> tuple[Kernel, ...]:
    """The normalization kernel of ``spec`` under ``params``."""
    name = "normalization_kernel"
    src, args = normalization_source(spec, params, name)
    return (
        Kernel(
            name,
            src,
            tuple(args),
            (("BLOCK_X", params.block_x), ("BLOCK_R", params.block_r)),
            params.num_warps,
            params,
        ),
    )
