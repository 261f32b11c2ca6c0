"""Combining the partial results of a split reduction, deterministically.

A split reduction's programs (grid axis 1, ``pid_s``) each store one partial result
per kept element into ``[SPLIT, NX]`` fp32 workspaces. The partials are then combined
in split order, so the result never depends on which program finished first:

* ``finish="ticket"``: in the same launch. Each program takes a ticket from the atomic
  counter of its X block (``acq_rel`` at GPU scope: its partial stores are released
  before the ticket, and the last program acquires all of them); the program that draws
  the last ticket loads the partials (``.cg``: from L2, never a stale L1 line), combines
  them, stores the outputs and resets the counter to 0 for the next launch.
* ``finish="kernel"``: a second kernel (``finish_source``) combines them.
"""

from __future__ import annotations

from ..dtypes import is_floating
from ..ir import REGISTRY
from ..ir.ops.reductions import ROW_BY_NAME, reduction_row
from ..schedulers.reduction import ReductionParams
from .helpers import helpers_for
from .indexing import decompose, offset_expr, one_write_per_element
from .pointwise import HEADER
from .reduction_common import (
    COMBINE,
    accumulator_dtype,
    epilogue_values,
    identity,
    n_results,
    prelude,
    reduce_line,
)
from .reduction_tile import span_columns
from .writer import Writer, storage_cast, tl_compute, typed_params

WELFORD_PARTS = ROW_BY_NAME["welford"].parts  # its results, by name


def partial_names(spec) -> list[str]:
    """The workspaces of the partial results, reduction after reduction (siblings too)."""
    return [f"ws{k}" for k in range(sum(n_results(e) for e in spec.reductions))]


def workspace_names(spec, params: ReductionParams) -> list[str]:
    """The reduction kernel's workspace parameters: the partial results, and the ticket
    counters when the same launch combines them."""
    if not params.partials:
        return []
    return partial_names(spec) + (["tickets"] if params.finish == "ticket" else [])


def emit_ticket_finish(w: Writer, spec, params: ReductionParams, out_ptr) -> None:
    """After the partial stores of a ``finish="ticket"`` kernel: the last program of this X
    block combines the partials and stores the outputs. ``out_ptr(tv)`` names an output's
    pointer; ``pid`` / ``px`` / ``rest`` are the X block's program indices."""
    w.line("tl.debug_barrier()")  # every thread's partial stores precede the ticket
    w.line("ticket = tl.atomic_add(tickets + pid, 1, sem='acq_rel', scope='gpu')")
    w.line("if ticket == SPLIT_N - 1:")
    with w.indent():
        if params.template == "inner":
            w.line("fx = pid * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
            w.line("fmask = fx < NX")
        else:
            n_cols = span_columns(params.x_groups, params.x_span)
            w.line("fx0 = px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
            w.line(f"fmask = fx0 < {n_cols}")
            w.line(f"fx = fx0 + {n_cols} * rest")
        results = _emit_combine(w, spec, params, "fx", "fmask", "SPLIT_N", "BLOCK_S", ".cg")
        _emit_output_stores(w, spec, params, results, "fx", "fmask", out_ptr, "c")
        w.line("tl.atomic_xchg(tickets + pid, 0, sem='relaxed', scope='gpu')")  # next launch


def finish_source(spec, params: ReductionParams, name: str) -> tuple[str, list[str]]:
    """``finish="kernel"``: a second kernel combines the [SPLIT, NX] partial results and
    stores the outputs."""
    w = Writer()
    outputs = spec.results  # the reductions' outputs, then the epilogue's
    xg = params.x_groups
    n_out = len(outputs)
    store_acc = [spec.n_loads + k for k in range(n_out)]
    ws = partial_names(spec)
    outs = [f"o{k}" for k in range(n_out)]
    sizes = [f"n{k}" for k in xg]
    strides = [
        f"s{a}_{k}"
        for a in store_acc
        for k in xg
        if not params.zero_strides[a][k] and not params.unit_strides[a][k]
    ]
    scalars = [f"c{i}" for i in range(len(spec.scalars))] if spec.epilogue else []
    args = ws + outs + sizes + strides + scalars + ["NX", "SPLIT"]
    w.line(f"# finishing kernel of a split reduction; params: {params}")
    w.line("@triton.jit")
    w.line(
        f"def {name}({', '.join(typed_params(args, spec.scalars))}, "
        f"BLOCK_X: tl.constexpr, BLOCK_S: tl.constexpr):"
    )
    with w.indent():
        pid = "tl.program_id(0).to(tl.int64)" if params.index64 else "tl.program_id(0)"
        w.line(f"x = {pid} * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
        w.line("xmask = x < NX")
        results = _emit_combine(w, spec, params, "x", "xmask", "SPLIT", "BLOCK_S", "")
        out_names = {id(out): f"o{k}" for k, out in enumerate(outputs)}
        _emit_output_stores(
            w, spec, params, results, "x", "xmask", lambda tv: out_names[id(tv)], "c"
        )
    body = w.text()
    return HEADER + prelude() + helpers_for(body) + "\n\n" + body, args


def _emit_combine(
    w: Writer,
    spec,
    params: ReductionParams,
    x: str,
    xmask: str,
    n_split: str,
    block_s: str,
    cache: str,
) -> list[str]:
    """Combine the partials of columns ``x`` ([1, BLOCK_X]) over the splits, in split order,
    ``block_s`` at a time, for every reduction of the kernel. Returns the names of the
    combined results, reduction after reduction. With ``index64`` the split index is
    64-bit too, so no partial's offset ``s * NX`` is a 32-bit product."""
    load_opts = f", cache_modifier='{cache}'" if cache else ""
    reds = spec.reductions
    online = spec.online  # softmax's id(sum) -> max
    paired = {id(mx): sid for sid, mx in online.items()}
    at = {id(r): i for i, r in enumerate(reds)}
    ws_of = [sum(n_results(r) for r in reds[:i]) for i in range(len(reds))]  # first ws
    names: list[list[str]] = []
    for i, red in enumerate(spec.reductions):
        op = red.op.name
        acc_t = accumulator_dtype(red)
        ct = tl_compute(acc_t)
        if n_results(red) > 1:
            names.append([f"f{i}_{part}" for part in reduction_row(red).parts])
            for n in names[-1]:
                w.line(f"{n} = tl.zeros([1, BLOCK_X], {ct})")
        else:
            names.append([f"f{i}_res"])
            w.line(f"{names[-1][0]} = tl.full([1, BLOCK_X], {identity(op, acc_t)}, {ct})")
    w.line(f"for s0 in range(0, {n_split}, {block_s}):")
    with w.indent():
        s = f"s0 + tl.arange(0, {block_s})[:, None]"
        w.line(f"s = ({s}).to(tl.int64)" if params.index64 else f"s = {s}")
        w.line(f"pmask = {xmask} & (s < {n_split})")
        for i, (red, fin) in enumerate(zip(reds, names)):
            op = red.op.name
            acc_t = accumulator_dtype(red)
            k = ws_of[i]
            if id(red) in online:
                continue  # combined with its max
            if id(red) in paired:
                j = at[paired[id(red)]]
                _emit_online_combine(
                    w, fin[0], names[j][0], f"ws{k}", f"ws{ws_of[j]}", x, load_opts
                )
                continue
            if n_results(red) > 1:  # each part's partials, combined together
                parts = reduction_row(red).parts
                for j, part in enumerate(parts):
                    w.line(
                        f"p_{part} = tl.load(ws{k + j} + s * NX + {x}, mask=pmask, "
                        f"other=0.0{load_opts})"
                    )
                c, p = (", ".join(f"{pre}_{part}" for part in parts) for pre in ("c", "p"))
                w.line(f"{c} = tl.reduce(({p}), 0, {COMBINE[op]}, keep_dims=True)")
                w.line(f"{', '.join(fin)} = {COMBINE[op]}({', '.join(fin)}, {c})")
            else:
                w.line(
                    f"part = tl.load(ws{k} + s * NX + {x}, mask=pmask, "
                    f"other={identity(op, acc_t)}{load_opts})"
                )
                w.line(reduce_line("chunk", "part", op, 0, is_floating(acc_t)))
                w.line(f"{fin[0]} = {COMBINE[op]}({fin[0]}, chunk)")
    for sid, mx in online.items():
        f_max, f_sum = names[at[id(mx)]][0], names[at[sid]][0]
        # a row of -inf alone sums to NaN, as torch's exp(-inf - -inf) terms do
        w.line(f"{f_sum} = tl.where({f_max} == float('-inf'), float('nan'), {f_sum})")
    return [n for fin in names for n in fin]


def _emit_online_combine(
    w: Writer, f_max: str, f_sum: str, ws_max: str, ws_sum: str, x: str, load_opts: str
) -> None:
    """Softmax's partial (max, sum) pairs of ``BLOCK_S`` splits into the running pair:
    ``M = max(M, max_k m_k)``, ``S = S * exp(M_old - M) + sum_k s_k * exp(m_k - M)``; a
    split or running max of -inf adds 0 (never exp(-inf - -inf)); a NaN max makes both
    NaN."""
    exp = REGISTRY["exp"].triton
    w.line(f"p_max = tl.load({ws_max} + s * NX + {x}, mask=pmask, other=float('-inf'){load_opts})")
    w.line(f"p_sum = tl.load({ws_sum} + s * NX + {x}, mask=pmask, other=0.0{load_opts})")
    w.line(reduce_line("c_max", "p_max", "max", 0))
    w.line(f"n_max = {COMBINE['max']}({f_max}, c_max)")
    w.line(f"c_terms = tl.where(p_max == float('-inf'), 0.0, p_sum * {exp('p_max - n_max')})")
    w.line(
        f"{f_sum} = tl.where({f_max} == float('-inf'), 0.0, "
        f"{f_sum} * {exp(f'{f_max} - n_max')}) + tl.sum(c_terms, 0, keep_dims=True)"
    )
    w.line(f"{f_max} = n_max")


def _emit_output_stores(
    w: Writer,
    spec,
    params: ReductionParams,
    results: list[str],
    x: str,
    xmask: str,
    out_ptr,
    scalar_prefix: str,
) -> None:
    """Store ``results`` (columns ``x``) through each output's own strides, then the per-row
    epilogue computed from them (scalars named ``<scalar_prefix><i>``)."""
    xg = params.x_groups
    idx = dict(zip(xg, decompose(w, x, [f"n{k}" for k in xg], "fg"))) if xg else {}
    values = list(results)
    if spec.epilogue:
        names = {id(sc): f"{scalar_prefix}{i}" for i, sc in enumerate(spec.scalars)}
        values += epilogue_values(
            w, spec, results, lambda sc: names[id(sc)], "tl.zeros([1, BLOCK_X], tl.int32)"
        )
    for k, (out, value) in enumerate(spec.stored_values(values)):
        a = spec.n_loads + k
        terms = [
            (idx[g], 1 if params.unit_strides[a][g] else f"s{a}_{g}")
            for g in xg
            if not params.zero_strides[a][g]
        ]
        off = offset_expr(terms, f"{x} * 0")
        smask = one_write_per_element(w, xmask, [idx[g] for g in xg if params.zero_strides[a][g]])
        w.line(f"tl.store({out_ptr(out)} + {off}, {storage_cast(value, out.dtype)}, mask={smask})")
