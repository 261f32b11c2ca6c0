"""Triton source for a reduction segment (and its finishing kernel when R is split)."""

from __future__ import annotations

from ..dtypes import DataType, is_floating
from ..ir.ops.reductions import ROW_BY_NAME
from ..schedulers.problem import is_affine
from ..schedulers.reduction import ReductionParams
from .generic_index import generic_index
from .indexing import decompose, offset_expr, one_write_per_element
from .pointwise import HEADER, kernel_header, load_line
from .values import ValueEmitter
from .writer import Writer, storage_cast, tl_compute, typed_params

COMBINE_PRELUDE = '''
@triton.jit
def _add_combine(a, b):
    return a + b


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_combine(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    delta = mean_b - mean_a
    w = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    return mean_a + delta * w, m2_a + m2_b + delta * delta * n_a * w, n
'''

_COMBINE = {"sum": "_add_combine", "prod": "_mul_combine", "max": "_max_combine",
            "min": "_min_combine"}


def acc_dtype(red_dtype: DataType) -> DataType:
    if red_dtype in (DataType.Half, DataType.BFloat16, DataType.Float, DataType.Float8_e4m3fn,
                     DataType.Float8_e5m2):
        return DataType.Float
    return red_dtype


def identity(op: str, dtype: DataType) -> str:
    row = ROW_BY_NAME[op]
    ident = row.identity
    if not is_floating(dtype) and ident in ("inf", "-inf"):
        bits = 63 if dtype in (DataType.Int, DataType.UInt64) else 31
        return str(2**bits - 1) if ident == "inf" else str(-(2**bits))
    return {"inf": "float('inf')", "-inf": "float('-inf')"}.get(ident, ident)


def reduce_line(dst: str, src: str, op: str, axis: int, floating: bool = True) -> str:
    """Reduce ``src`` along ``axis``; max/min propagate NaN like torch (tl.max does not)."""
    if op == "sum":
        return f"{dst} = tl.sum({src}, {axis}, keep_dims=True)"
    if op in ("max", "min") and not floating:
        return f"{dst} = tl.{op}({src}, {axis}, keep_dims=True)"
    if op in ("max", "min"):
        nan = f"tl.max(({src} != {src}).to(tl.int32), {axis}, keep_dims=True) > 0"
        return (f"{dst} = tl.where({nan}, float('nan'), "
                f"tl.{op}({src}, {axis}, keep_dims=True).to({src}.dtype))")
    return f"{dst} = tl.reduce({src}, {axis}, {_COMBINE[op]}, keep_dims=True)"


def _ptr_names(spec):
    return {id(tv): f"p{i}" for i, tv in enumerate(spec.memory)}


def reduction_source(spec, params: ReductionParams, name: str) -> tuple[str, list[str]]:
    w = Writer()
    red = spec.reduction
    op = red.op.name
    welford = op == "welford"
    n_acc = len(spec.accesses)
    sizes = [f"n{k}" for k in range(len(params.sizes))]
    strides = [f"s{a}_{k}" for a in range(n_acc) for k in range(len(params.sizes))
               if is_affine(params, a) and not params.zero_strides[a][k]
               and not params.unit_strides[a][k]]
    ptrs = [f"p{i}" for i in range(len(spec.memory))]
    ws = ["ws0", "ws1", "ws2"][: 3 if welford else 1] if params.split > 1 else []
    scalars = [f"c{i}" for i in range(len(spec.scalars))]
    gen = generic_index(spec, params) if params.generic else None
    walk = gen.arg_names() if gen else []
    args = ptrs + ws + sizes + strides + walk + scalars + ["NX", "NR", "CHUNK", "NPX"]
    for line in kernel_header(spec, params):
        w.line(line)
    w.line("@triton.jit")
    w.line(f"def {name}({', '.join(typed_params(args, spec.scalars))}, BLOCK_X: tl.constexpr, BLOCK_R: tl.constexpr):")
    inner = params.template == "inner"
    xg, rg = params.x_groups, params.r_groups
    acc_t = acc_dtype(red.outputs[0].dtype if not welford else DataType.Float)
    if welford and red.inputs[0].dtype is DataType.Double:
        acc_t = DataType.Double
    with w.indent():
        pid = "tl.program_id(0).to(tl.int64)" if params.index64 else "tl.program_id(0)"
        w.line(f"pid = {pid}")
        w.line("pid_s = tl.program_id(1).to(tl.int64)" if params.index64 else
               "pid_s = tl.program_id(1)")
        idx: dict[int, str] = {}
        if inner:
            w.line("x = pid * BLOCK_X + tl.arange(0, BLOCK_X)[:, None]")
            w.line("xmask = x < NX")
            if xg:
                idx.update(zip(xg, decompose(w, "x", [f"n{k}" for k in xg], "xg")))
            tile = "[BLOCK_X, BLOCK_R]"
            r_arange = "tl.arange(0, BLOCK_R)[None, :]"
            axis = 1
        else:
            w.line("px = pid % NPX")
            w.line("rest = pid // NPX")
            idx[xg[0]] = w.assign("xg", "px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
            w.line(f"xmask = {idx[xg[0]]} < n{xg[0]}")
            if len(xg) > 1:
                idx.update(zip(xg[1:], decompose(w, "rest", [f"n{k}" for k in xg[1:]], "xg")))
            w.line(f"x = {idx[xg[0]]} + n{xg[0]} * rest")
            tile = "[BLOCK_R, BLOCK_X]"
            r_arange = "tl.arange(0, BLOCK_R)[:, None]"
            axis = 0
        # groups whose index is a tile (the others are scalars along the grid or a loop)
        tiles = set(xg if inner else xg[:1]) | set(rg[:1] if params.r_nest else rg)
        xoff: list[str | None] = []
        for a in range(n_acc):
            terms = [(idx[k], 1 if params.unit_strides[a][k] else f"s{a}_{k}")
                     for k in xg if not params.zero_strides[a][k]]
            xoff.append(w.assign("xo", offset_expr(terms, "x * 0")) if is_affine(params, a)
                        else None)
        ct = tl_compute(acc_t)
        if welford:
            w.line(f"acc_mean = tl.zeros({tile}, {ct})")
            w.line(f"acc_m2 = tl.zeros({tile}, {ct})")
            w.line(f"acc_n = tl.zeros({tile}, {ct})")
        else:
            w.line(f"acc = tl.full({tile}, {identity(op, acc_t)}, {ct})")
        ptr_of = _ptr_names(spec)
        load_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses[: spec.n_loads])}
        coord_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses)
                       if i >= spec.n_loads + spec.n_stores}
        scalar_names = {id(s): f"c{i}" for i, s in enumerate(spec.scalars)}

        def body(ridx: dict[int, str]) -> None:
            """Loads at the current R tile, the fused prologue, and the accumulation."""
            offsets: list[str | None] = []
            for a in range(n_acc):
                if not is_affine(params, a):
                    offsets.append(None)
                    continue
                used = [k for k in xg + rg if not params.zero_strides[a][k]]
                terms = [(xoff[a], 1)] + [
                    (ridx[k], 1 if params.unit_strides[a][k] else f"s{a}_{k}")
                    for k in rg if not params.zero_strides[a][k]]
                if used and not tiles.intersection(used):   # a pointer must be a tile (mask)
                    terms.append((f"tl.zeros({tile}, tl.int32)", 1))
                offsets.append(w.assign("off", offset_expr(terms)))
            if gen:
                for line in gen.dim_lines(params, {**idx, **ridx}) + list(gen.lines):
                    w.line(line)
                for a, off in gen.offsets.items():
                    offsets[a] = w.assign("off", f"{off} + tl.zeros({tile}, tl.int32)")

            def load(tv, chain):
                k = (id(tv), tuple(id(e) for e in chain))
                if k not in load_index:
                    return None
                return w.assign("v", load_line(ptr_of[id(tv)], offsets[load_index[k]], "mask",
                                               tv.dtype))

            def coordinate(tv, chain):
                return offsets[coord_index[(id(tv), tuple(id(e) for e in chain))]]

            ve = ValueEmitter(w, load, lambda s: scalar_names[id(s)], coordinate,
                              f"tl.zeros({tile}, tl.int32)")
            val = ve.value(red.inputs[0], ())
            if welford:
                w.line(f"v = ({val}).to({ct})")
                w.line("n_new = acc_n + tl.where(mask, 1.0, 0.0)")
                w.line("delta = v - acc_mean")
                w.line("mean_new = acc_mean + tl.where(mask, delta / tl.maximum(n_new, 1.0), 0.0)")
                w.line("acc_m2 = acc_m2 + tl.where(mask, delta * (v - mean_new), 0.0)")
                w.line("acc_mean = mean_new")
                w.line("acc_n = n_new")
            else:
                w.line(f"v = tl.where(mask, ({val}).to({ct}), {identity(op, acc_t)})")
                w.line(f"acc = {_COMBINE[op]}(acc, v)")

        if params.r_nest:
            # the stride-1 reduced group is tiled; the other reduced groups are a scalar
            # loop (split across programs), so no element pays a div/mod
            g0 = rg[0]
            w.line("ro_lo = pid_s * CHUNK")
            w.line("ro_hi = tl.minimum(ro_lo + CHUNK, NR)")
            w.line("for ro in range(ro_lo, ro_hi):")
            with w.indent():
                outer = decompose(w, "ro", [f"n{k}" for k in rg[1:]], "ro_g")
                w.line(f"for r0 in range(0, n{g0}, BLOCK_R):")
                with w.indent():
                    w.line(f"r = r0 + {r_arange}")
                    w.line(f"mask = xmask & (r < n{g0})")
                    body({g0: "r", **dict(zip(rg[1:], outer))})
        else:
            w.line("r_lo = pid_s * CHUNK")
            w.line("for r0 in range(0, CHUNK, BLOCK_R):")
            with w.indent():
                w.line(f"r = r_lo + r0 + {r_arange}")
                w.line("mask = xmask & (r < NR)")
                body(dict(zip(rg, decompose(w, "r", [f"n{k}" for k in rg], "rg"))) if rg else {})
        if welford:
            w.line(f"mean, m2, cnt = tl.reduce((acc_mean, acc_m2, acc_n), {axis}, "
                   f"_welford_combine, keep_dims=True)")
            results = ["mean", "m2", "cnt"]
        else:
            w.line(reduce_line("res", "acc", op, axis, is_floating(acc_t)))
            results = ["res"]
        if params.split > 1:
            for k, r in enumerate(results):
                w.line(f"tl.store(ws{k} + pid_s * NX + x, {r}, mask=xmask)")
        else:
            for k, out in enumerate(red.outputs):
                a = spec.n_loads + k
                val = results[k]
                off = xoff[a]
                if not inner and params.zero_strides[a][xg[0]]:
                    off = f"{off} + x * 0"             # the store's pointer spans the tile
                smask = one_write_per_element(w, "xmask", [idx[g] for g in xg
                                                           if params.zero_strides[a][g]])
                w.line(f"tl.store({ptr_of[id(out)]} + {off}, {storage_cast(val, out.dtype)}, "
                       f"mask={smask})")
    src = HEADER + _prelude() + "\n\n" + w.text()
    return src, args


def finish_source(spec, params: ReductionParams, name: str) -> tuple[str, list[str]]:
    """Combine the [SPLIT, NX] partial results and store the outputs."""
    w = Writer()
    red = spec.reduction
    op = red.op.name
    welford = op == "welford"
    xg = params.x_groups
    n_out = len(red.outputs)
    store_acc = [spec.n_loads + k for k in range(n_out)]
    ws = ["ws0", "ws1", "ws2"][: 3 if welford else 1]
    outs = [f"o{k}" for k in range(n_out)]
    sizes = [f"n{k}" for k in xg]
    strides = [f"s{a}_{k}" for a in store_acc for k in xg
               if not params.zero_strides[a][k] and not params.unit_strides[a][k]]
    args = ws + outs + sizes + strides + ["NX", "SPLIT"]
    w.line(f"# finishing kernel of a split reduction; params: {params}")
    w.line("@triton.jit")
    w.line(f"def {name}({', '.join(typed_params(args, spec.scalars))}, BLOCK_X: tl.constexpr, BLOCK_S: tl.constexpr):")
    with w.indent():
        pid = "tl.program_id(0).to(tl.int64)" if params.index64 else "tl.program_id(0)"
        w.line(f"x = {pid} * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
        w.line("xmask = x < NX")
        w.line("s = tl.arange(0, BLOCK_S)[:, None]")
        w.line("mask = xmask & (s < SPLIT)")
        acc_t = DataType.Double if (welford and red.inputs[0].dtype is DataType.Double) else \
            acc_dtype(red.outputs[0].dtype if not welford else DataType.Float)
        if welford:
            w.line("pm = tl.load(ws0 + s * NX + x, mask=mask, other=0.0)")
            w.line("p2 = tl.load(ws1 + s * NX + x, mask=mask, other=0.0)")
            w.line("pn = tl.load(ws2 + s * NX + x, mask=mask, other=0.0)")
            w.line("mean, m2, cnt = tl.reduce((pm, p2, pn), 0, _welford_combine, keep_dims=True)")
            results = ["mean", "m2", "cnt"]
        else:
            ident = identity(op, acc_t)
            w.line(f"part = tl.load(ws0 + s * NX + x, mask=mask, other={ident})")
            w.line(reduce_line("res", "part", op, 0, is_floating(acc_t)))
            results = ["res"]
        idx = dict(zip(xg, decompose(w, "x", [f"n{k}" for k in xg], "xg"))) if xg else {}
        for k, out in enumerate(red.outputs):
            a = store_acc[k]
            terms = [(idx[g], 1 if params.unit_strides[a][g] else f"s{a}_{g}")
                     for g in xg if not params.zero_strides[a][g]]
            off = offset_expr(terms, "x * 0")
            smask = one_write_per_element(w, "xmask", [idx[g] for g in xg
                                                       if params.zero_strides[a][g]])
            w.line(f"tl.store(o{k} + {off}, {storage_cast(results[k], out.dtype)}, mask={smask})")
    return HEADER + _prelude() + "\n\n" + w.text(), args


def _prelude() -> str:
    from .backend import PRELUDE

    return PRELUDE + COMBINE_PRELUDE
