"""Triton source for a reduction segment (``reduction_finish`` combines split partials)."""

from __future__ import annotations

from ..dtypes import is_floating
from ..schedulers.problem import is_affine
from ..schedulers.reduction import ReductionParams
from .generic_index import generic_index
from .indexing import decompose, offset_expr, one_write_per_element
from .pointwise import HEADER, kernel_header, load_line
from .reduction_common import (
    COMBINE,
    COMBINE_PRELUDE,
    acc_dtype,
    accumulator_dtype,
    emit_counted_welford_step,
    emit_online_rows,
    emit_online_step,
    identity,
    n_results,
    prelude,
    reduce_line,
)
from .reduction_finish import emit_ticket_finish, finish_source, workspace_names
from .values import ValueEmitter
from .writer import Writer, storage_cast, tl_compute, typed_params

__all__ = ["COMBINE", "COMBINE_PRELUDE", "acc_dtype", "finish_source", "identity",
           "reduce_line", "reduction_source"]


def _ptr_names(spec):
    return {id(tv): f"p{i}" for i, tv in enumerate(spec.memory)}


def reduction_source(spec, params: ReductionParams, name: str) -> tuple[str, list[str]]:
    w = Writer()
    reds = spec.reductions        # one, or siblings of the same rows: one accumulator each
    online = spec.online          # softmax's id(sum) -> max: accumulated together
    pair_of = {id(mx): next(j for j, r in enumerate(reds) if id(r) == sid)
               for sid, mx in online.items()}       # id(max) -> index of its sum
    n_acc = len(spec.accesses)
    sizes = [f"n{k}" for k in range(len(params.sizes))]
    strides = [f"s{a}_{k}" for a in range(n_acc) for k in range(len(params.sizes))
               if is_affine(params, a) and not params.zero_strides[a][k]
               and not params.unit_strides[a][k]]
    ptrs = [f"p{i}" for i in range(len(spec.memory))]
    ws = workspace_names(spec, params)
    scalars = [f"c{i}" for i in range(len(spec.scalars))]
    gen = generic_index(spec, params) if params.generic else None
    walk = gen.arg_names() if gen else []
    args = ptrs + ws + sizes + strides + walk + scalars + ["NX", "NR", "CHUNK", "NPX", "SPLIT_N"]
    for line in kernel_header(spec, params):
        w.line(line)
    w.line("@triton.jit")
    w.line(f"def {name}({', '.join(typed_params(args, spec.scalars))}, "
           f"BLOCK_X: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, "
           f"BLOCK_Y: tl.constexpr):")
    inner = params.template == "inner"
    transposed = params.y_group is not None     # a [BLOCK_Y, BLOCK_X] tile of kept groups
    xg, rg = params.x_groups, params.r_groups
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
        elif transposed:
            # [BLOCK_Y, BLOCK_R, BLOCK_X]: Y is the output's stride-1 kept group, so the
            # [BLOCK_Y, 1, BLOCK_X] result is stored along it; X is the input's
            y = params.y_group
            w.line("px = pid % NPX")
            w.line(f"npy = tl.cdiv(n{y}, BLOCK_Y)")
            w.line("py = (pid // NPX) % npy")
            w.line("rest = pid // NPX // npy")
            idx[xg[0]] = w.assign("xg", "px * BLOCK_X + tl.arange(0, BLOCK_X)[None, None, :]")
            idx[y] = w.assign("yg", "py * BLOCK_Y + tl.arange(0, BLOCK_Y)[:, None, None]")
            w.line(f"xmask = ({idx[xg[0]]} < n{xg[0]}) & ({idx[y]} < n{y})")
            others = [k for k in xg[1:] if k != y]
            if others:
                idx.update(zip(others, decompose(w, "rest", [f"n{k}" for k in others], "xg")))
            tile = "[BLOCK_Y, BLOCK_R, BLOCK_X]"
            r_arange = "tl.arange(0, BLOCK_R)[None, :, None]"
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
        if transposed:
            tiles = {xg[0], params.y_group, *rg}
        else:
            tiles = set(xg if inner else xg[:1]) | set(rg[:1] if params.r_nest else rg)
        zero_tile = f"tl.zeros({tile}, tl.int32)"
        xoff: list[str | None] = []
        for a in range(n_acc):
            terms = [(idx[k], 1 if params.unit_strides[a][k] else f"s{a}_{k}")
                     for k in xg if not params.zero_strides[a][k]]
            xoff.append(w.assign("xo", offset_expr(terms, zero_tile if transposed else "x * 0"))
                        if is_affine(params, a) else None)
        for i, red in enumerate(reds):
            acc_t = accumulator_dtype(red)
            ct = tl_compute(acc_t)
            if n_results(red) > 1:
                for part in ("mean", "m2", "n"):
                    w.line(f"acc{i}_{part} = tl.zeros({tile}, {ct})")
            else:
                w.line(f"acc{i} = tl.full({tile}, {identity(red.op.name, acc_t)}, {ct})")
        ptr_of = _ptr_names(spec)
        load_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses[: spec.n_loads])}
        coord_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses)
                       if i >= spec.n_loads + spec.n_stores}
        scalar_names = {id(s): f"c{i}" for i, s in enumerate(spec.scalars)}

        def load_value(ridx: dict[int, str], mask: str) -> list[str]:
            """Loads at one R tile and the fused prologue; returns the values to reduce."""
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
                return w.assign("v", load_line(ptr_of[id(tv)], offsets[load_index[k]], mask,
                                               tv.dtype))

            def coordinate(tv, chain):
                return offsets[coord_index[(id(tv), tuple(id(e) for e in chain))]]

            ve = ValueEmitter(w, load, lambda s: scalar_names[id(s)], coordinate,
                              f"tl.zeros({tile}, tl.int32)")
            return [None if id(red) in online else ve.value(red.inputs[0], ())
                    for red in reds]

        def accumulate(i: int, val: str, mask: str, count: str | None) -> None:
            """``count``: where every unmasked lane holds the same number of values after
            this update (a scalar expression), a Welford divides once per tile by it and
            counts each lane after the loop (``lane_counts``); else it counts per lane."""
            red = reds[i]
            op, acc_t = red.op.name, accumulator_dtype(red)
            ct = tl_compute(acc_t)
            if id(red) in online:
                return                    # accumulated with its max (``emit_online_step``)
            if id(red) in pair_of:            # softmax's max, with its sum
                emit_online_step(w, f"acc{i}", f"acc{pair_of[id(red)]}", val, mask, ct)
            elif n_results(red) > 1 and count is not None:
                emit_counted_welford_step(w, f"acc{i}_mean", f"acc{i}_m2", val, mask, count, ct)
            elif n_results(red) > 1:
                mean, m2, n = (f"acc{i}_{part}" for part in ("mean", "m2", "n"))
                w.line(f"v = ({val}).to({ct})")
                w.line(f"n_new = {n} + tl.where({mask}, 1.0, 0.0)")
                w.line(f"delta = v - {mean}")
                w.line(f"mean_new = {mean} + tl.where({mask}, delta / tl.maximum(n_new, 1.0), "
                       "0.0)")
                w.line(f"{m2} = {m2} + tl.where({mask}, delta * (v - mean_new), 0.0)")
                w.line(f"{mean} = mean_new")
                w.line(f"{n} = n_new")
            else:
                w.line(f"v = tl.where({mask}, ({val}).to({ct}), {identity(op, acc_t)})")
                w.line(f"acc{i} = {COMBINE[op]}(acc{i}, v)")

        def step(tiles_of_step) -> None:
            """The loop step's R tiles, ``(r index per group, mask)`` each: every load first
            (all in flight together), then the accumulations, one accumulator per
            reduction."""
            loaded = [(load_value(ridx, mask), mask, count)
                      for ridx, mask, count in tiles_of_step]
            for vals, mask, count in loaded:
                for i, val in enumerate(vals):
                    accumulate(i, val, mask, count)

        def r_tiles(r0: str, bound: str, r_index, counted: bool = False) -> list[tuple]:
            """The ``unroll`` R tiles of the step at ``r0``: (index per group, mask, count)
            each. ``counted``: ``r0`` starts at 0 and R is masked only at its end, so a lane
            masked once stays masked and every unmasked lane's count after tile ``u`` is
            ``r0 // BLOCK_R + u + 1``."""
            parts = []
            for u in range(params.unroll):
                r = w.assign("r", f"{r0} + {u} * BLOCK_R + {r_arange}" if u else
                             f"{r0} + {r_arange}")
                count = f"(r0 // BLOCK_R + {u + 1})" if counted else None
                parts.append((r_index(r), w.assign("mask", f"xmask & ({r} < {bound})"), count))
            return parts

        def lane_counts(i: int) -> None:
            """After a ``counted`` loop: each lane's Welford count, the tiles of the chunk in
            which its offset stayed below NR."""
            ct = tl_compute(accumulator_dtype(reds[i]))
            visited = f"(CHUNK + {step_r} - 1) // ({step_r}) * {params.unroll}"  # the loop's
            w.line(f"acc{i}_n = tl.minimum(tl.maximum(NR - r_lo - {r_arange} + BLOCK_R - 1, 0)"
                   f" // BLOCK_R, {visited}) + tl.zeros({tile}, tl.int32)")
            w.line(f"acc{i}_n = acc{i}_n.to({ct})")

        step_r = "BLOCK_R" if params.unroll == 1 else f"BLOCK_R * {params.unroll}"
        if params.r_nest:
            # the stride-1 reduced group is tiled; the other reduced groups are a scalar
            # loop (split across programs), so no element pays a div/mod
            g0 = rg[0]
            w.line("ro_lo = pid_s * CHUNK")
            w.line("ro_hi = tl.minimum(ro_lo + CHUNK, NR)")
            w.line("for ro in range(ro_lo, ro_hi):")
            with w.indent():
                outer = dict(zip(rg[1:], decompose(w, "ro", [f"n{k}" for k in rg[1:]], "ro_g")))
                w.line(f"for r0 in range(0, n{g0}, {step_r}):")
                with w.indent():
                    step(r_tiles("r0", f"n{g0}", lambda r: {g0: r, **outer}))
        else:
            w.line("r_lo = pid_s * CHUNK")
            w.line(f"for r0 in range(0, CHUNK, {step_r}):")
            with w.indent():
                step(r_tiles("r_lo + r0", "NR", lambda r: dict(zip(rg, decompose(
                    w, r, [f"n{k}" for k in rg], "rg"))) if rg else {}, counted=True))
            for i, red in enumerate(reds):
                if n_results(red) > 1:
                    lane_counts(i)
        results: list[str] = []
        for i, red in enumerate(reds):
            if id(red) in online:
                results.append(f"res{i}")          # computed with its max, below
                continue
            if id(red) in pair_of:
                # the tile's max and its sum; a row of -inf alone gets its NaN sum here
                # when unsplit, else where the splits combine
                j = pair_of[id(red)]
                emit_online_rows(w, f"acc{i}", f"acc{j}", f"res{i}", f"res{j}", axis,
                                 nan_rows=params.split <= 1)
                results.append(f"res{i}")
                continue
            if n_results(red) > 1:
                parts = [f"{n}{i}" for n in ("mean", "m2", "cnt")]
                w.line(f"{', '.join(parts)} = tl.reduce((acc{i}_mean, acc{i}_m2, acc{i}_n), "
                       f"{axis}, _welford_combine, keep_dims=True)")
                results += parts
            else:
                w.line(reduce_line(f"res{i}", f"acc{i}", red.op.name, axis,
                                   is_floating(accumulator_dtype(red))))
                results.append(f"res{i}")
        if params.split > 1:
            for k, r in enumerate(results):
                w.line(f"tl.store(ws{k} + pid_s * NX + x, {r}, mask=xmask)")
            if params.finish == "ticket":
                emit_ticket_finish(w, spec, params, lambda tv: ptr_of[id(tv)])
        else:
            for k, out in enumerate(o for red in reds for o in red.outputs):
                a = spec.n_loads + k
                val = results[k]
                off = xoff[a]
                spans = [xg[0], params.y_group] if transposed else [] if inner else [xg[0]]
                if any(params.zero_strides[a][g] for g in spans):   # the pointer spans the tile
                    off = f"{off} + {zero_tile if transposed else 'x * 0'}"
                smask = one_write_per_element(w, "xmask", [idx[g] for g in xg
                                                           if params.zero_strides[a][g]])
                w.line(f"tl.store({ptr_of[id(out)]} + {off}, {storage_cast(val, out.dtype)}, "
                       f"mask={smask})")
    src = HEADER + prelude() + "\n\n" + w.text()
    return src, args
