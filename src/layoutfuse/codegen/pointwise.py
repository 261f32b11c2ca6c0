"""Triton source for a pointwise segment, from its spec and PointwiseParams."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..dtypes import DataType, itemsize
from ..ir import Expr, TensorView
from ..schedulers.pointwise import PointwiseParams, stride_args
from .generic_index import generic_index
from .helpers import FP8_CONVERT, helpers_for
from .indexing import offset_expr
from .kernel import Kernel
from .tile_index import TILE_ZEROS, emit_indexing, store_mask
from .values import ValueEmitter
from .writer import Writer, storage_cast, tl_compute, typed_params

if TYPE_CHECKING:
    from ..segmenter.specs import KernelSpec

VECTOR_BYTES = 16  # a thread's widest global access, which Triton's coalescing gives it

HEADER = """import triton
import triton.language as tl
from triton.language.extra import libdevice as lib
"""


def kernel_header(spec, params) -> list[str]:
    lines = ["# layoutfuse generated kernel", "# ops:"]
    lines += [f"#   {e!r}" for e in spec.exprs]
    lines.append(f"# params: {params}")
    return lines


def raw_load(ptr: str, off: str, mask: str, dtype: DataType) -> str:
    """A load in the storage dtype (``load_line`` without its cast to the compute dtype)."""
    other = "0.0" if dtype in FP8_CONVERT else "0"  # Triton casts no integer to fp8
    return f"tl.load({ptr} + {off}, mask={mask}, other={other})"


def load_line(ptr: str, off: str, mask: str, dtype: DataType) -> str:
    return f"{raw_load(ptr, off, mask, dtype)}.to({tl_compute(dtype)})"


def pointwise_source(spec, params: PointwiseParams, name: str) -> tuple[str, list[str]]:
    """Source text and the ordered names of the runtime arguments (before the constexprs)."""
    from .backend import PRELUDE

    w = Writer()
    n_acc = len(spec.accesses)
    ptrs = [f"p{i}" for i in range(len(spec.memory))]
    sizes = [f"n{k}" for k in range(params.n_groups)]
    strides = [f"s{a}_{k}" for a, k in stride_args(params, n_acc)]
    scalars = [f"c{i}" for i in range(len(spec.scalars))]
    gen = generic_index(spec, params) if params.generic else None
    walk = gen.arg_names() if gen else []
    bases = [f"b{a}" for a in params.based]
    args = ptrs + sizes + strides + walk + bases + scalars + ["NUM_PX", "NUM_PY"]
    args += ["NREP"] if params.repeat else []
    for line in kernel_header(spec, params):
        w.line(line)
    w.line("@triton.jit")
    w.line(
        f"def {name}({', '.join(typed_params(args, spec.scalars))}, BLOCK_X: tl.constexpr, BLOCK_Y: tl.constexpr):"
    )
    with w.indent():
        axes: dict[str, tuple[str, bool]] = {}
        mask, offsets, idx, load_masks = emit_indexing(w, params, spec, axes)
        # a slice's start, a select's index (affine accesses: before the walk, whose
        # indirect values may load them)
        for a in params.based:
            offsets[a] = w.assign("off", f"{offsets[a]} + b{a}")
        dims = gen.dim_lines(params, idx) if gen else []
        if not params.full_blocks:
            _body(w, spec, params, gen, dims, mask, offsets, idx, load_masks)
        else:
            full = {
                name: f"tl.full([{'1, BLOCK_X' if ax == 'x' else 'BLOCK_Y, 1'}], 1, tl.int1)"
                for ax, (name, simple) in axes.items()
                if simple
            }
            inside = [
                f"(p{ax} + 1) * BLOCK_{ax.upper()} <= n{params.gx if ax == 'x' else params.gy}"
                for ax, (_, simple) in axes.items()
                if simple
            ]
            w.line(f"if {' and '.join(inside)}:  # a full tile: unmasked, vectorized")
            with w.indent():
                masks = [full.get(name, name) for name, _ in axes.values()]
                inner = w.assign("mask", " & ".join(masks))
                swap = {mask: inner, **full}
                inner_masks = [swap.get(m, m) for m in load_masks]
                _body(w, spec, params, gen, dims, inner, list(offsets), idx, inner_masks, full=True)
            w.line("else:")
            with w.indent():
                _body(w, spec, params, gen, dims, mask, list(offsets), idx, list(load_masks))
    body = w.text()
    return HEADER + PRELUDE + helpers_for(body) + "\n\n" + body, args


def _body(
    w, spec, params: PointwiseParams, gen, dims, mask, offsets, idx, load_masks, full=False
) -> None:
    """The walk (generic mode), the loads, the computation and the stores of one tile, under
    ``mask`` (the tile's) and ``load_masks`` (each load's); ``full``: a tile inside X and Y."""
    ptr_of = {id(tv): f"p{i}" for i, tv in enumerate(spec.memory)}
    load_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses[: spec.n_loads])}
    coord_index = {
        a.key()[:2]: i for i, a in enumerate(spec.accesses) if i >= spec.n_loads + spec.n_stores
    }

    def load(tv, chain):
        k = (id(tv), tuple(id(e) for e in chain))
        if k not in load_index:
            return None
        i = load_index[k]
        return w.assign("v", load_line(ptr_of[id(tv)], offsets[i], load_masks[i], tv.dtype))

    def coordinate(tv, chain):
        return offsets[coord_index[(id(tv), tuple(id(e) for e in chain))]]

    def coordinate_run(tv: TensorView, chain: tuple[Expr, ...]) -> int:
        # whole runs within BLOCK_X (a run of 4 aligned is one of 2, 1 too)
        runs = params.coordinate_runs
        run = runs[coord_index[(id(tv), tuple(id(e) for e in chain))]] if runs else 1
        return math.gcd(run, params.block_x)

    scalar_names = {id(s): f"c{i}" for i, s in enumerate(spec.scalars)}
    ve = ValueEmitter(
        w,
        load,
        lambda s: scalar_names[id(s)],
        coordinate,
        "tl.zeros([BLOCK_Y, BLOCK_X], tl.int32)",
        predicate=gen.predicate if gen else None,
        one_element=bool(spec.reductions) or spec.group is not None,  # extents of 1 (can_schedule)
        coordinate_run=coordinate_run,
        tile=("BLOCK_Y", "BLOCK_X"),
        vector=thread_vector(spec, params),
        repeat="NREP" if params.repeat else None,
    )
    if gen:
        gen.emit(w, dims, offsets, ve.value, TILE_ZEROS, params.index64, load_masks, mask)
    load_all(ve, spec)
    for i in range(spec.n_loads, spec.n_loads + spec.n_stores):
        acc = spec.accesses[i]
        # an indexed write stores its src (computed in these coordinates) along its
        # chain; accumulating, with atomic adds (duplicate indices add up)
        val = ve.value(acc.value, ()) if acc.value is not None else ve.value(acc.tv, acc.chain)
        if i in params.interleaved:
            _interleaved_store(w, params, i, ptr_of[id(acc.tv)], val, acc.tv.dtype, idx, full)
            continue
        if i in params.inner_runs:
            _inner_run_store(w, params, i, ptr_of[id(acc.tv)], val, acc.tv.dtype, idx, full)
            continue
        smask = store_mask(w, params, i, mask, idx, gen.guards.get(i) if gen else None)
        atomic = bool(acc.chain) and acc.chain[-1].attrs.get("accumulate", False)
        store = "tl.atomic_add" if atomic else "tl.store"
        w.line(
            f"{store}({ptr_of[id(acc.tv)]} + {offsets[i]}, "
            f"{storage_cast(val, acc.tv.dtype)}, mask={smask})"
        )


def load_all(ve: ValueEmitter, spec) -> None:
    """Every load of the tile, before any value is computed: all in flight at once. Emitted
    where first used, a load after libdevice's ``erff`` (whose branches end ptxas's basic
    blocks) was issued only once the erf of every element was done: a GELU backward's
    second input in sm_90 PTX."""
    for acc in spec.accesses[: spec.n_loads]:
        ve.value(acc.tv, acc.chain)


def _grid_offset(params: PointwiseParams, a: int, idx, tiled: tuple) -> str:
    """Access ``a``'s offset from the groups outside ``tiled`` (the grid's), as a prefix
    ``"... + "`` (empty when there are none)."""
    terms = [
        (idx[k], 1 if params.unit_strides[a][k] else f"s{a}_{k}")
        for k in range(params.n_groups)
        if k not in tiled
    ]
    return f"{offset_expr(terms)} + " if terms else ""


def _interleaved_store(
    w, params: PointwiseParams, a: int, ptr: str, val: str, dtype, idx, full: bool
) -> None:
    """Store access ``a`` (``params.interleaved``) as one run: the [BLOCK_Y, BLOCK_X]
    tile transposed and flattened, element (y, x) at ``x * BLOCK_Y + y`` from the tile's
    first column, masked where X ends (unless ``full``); the other groups' offset is
    added once."""
    gx, gy = params.gx, params.gy
    base = _grid_offset(params, a, idx, (gx, gy))
    run = w.assign("run", "tl.arange(0, BLOCK_X * BLOCK_Y)")
    flat = w.assign(
        "flat",
        f"tl.reshape(tl.trans(tl.broadcast_to({val}, [BLOCK_Y, BLOCK_X])), [BLOCK_X * BLOCK_Y])",
    )
    first = "px * BLOCK_X"
    mask = "" if full else f", mask={run} < (n{gx} - {first}) * BLOCK_Y"
    w.line(f"tl.store({ptr} + {base}{first} * BLOCK_Y + {run}, {storage_cast(flat, dtype)}{mask})")


def _inner_run_store(
    w, params: PointwiseParams, a: int, ptr: str, val: str, dtype, idx, full: bool
) -> None:
    """Store access ``a`` (``params.inner_runs``) in runs along Y: the [BLOCK_Y, BLOCK_X]
    tile, X being ``c`` = ``split_x`` elements of the short group by BLOCK_X / c of its
    continuation, regrouped as [BLOCK_X / c, BLOCK_Y * c]: row ``x2``, element
    ``y * c + x1``, which is the store's offset along Y and the short group."""
    gx, gx2, gy, c = params.gx, params.gx2, params.gy, params.split_x
    base = _grid_offset(params, a, idx, (gx, gx2, gy))
    tile = w.assign(
        "tile3",
        f"tl.reshape(tl.broadcast_to({val}, [BLOCK_Y, BLOCK_X]), [BLOCK_Y, BLOCK_X // {c}, {c}])",
    )
    runs = w.assign(
        "runs", f"tl.reshape(tl.permute({tile}, (1, 0, 2)), [BLOCK_X // {c}, BLOCK_Y * {c}])"
    )
    x2 = w.assign("x2", f"px * (BLOCK_X // {c}) + tl.arange(0, BLOCK_X // {c})[:, None]")
    yr = w.assign("yr", f"py * (BLOCK_Y * {c}) + tl.arange(0, BLOCK_Y * {c})[None, :]")
    mask = "" if full else f", mask=({x2} < n{gx2}) & ({yr} < n{gy} * {c})"
    w.line(f"tl.store({ptr} + {base}{x2} * s{a}_{gx2} + {yr}, {storage_cast(runs, dtype)}{mask})")


def thread_vector(spec: KernelSpec, params: PointwiseParams) -> int:
    """Elements of a thread's vector along X: 16 bytes of the narrowest dtype the kernel
    loads or stores (Triton's coalescing), at most BLOCK_X."""
    moved = [itemsize(a.tv.dtype) for a in spec.accesses[: spec.n_loads + spec.n_stores]]
    return max(1, min(params.block_x, VECTOR_BYTES // min(moved, default=VECTOR_BYTES)))


def emit(spec, params: PointwiseParams) -> tuple[Kernel, ...]:
    """The pointwise kernel of ``spec`` under ``params``."""
    name = "pointwise_kernel"
    src, args = pointwise_source(spec, params, name)
    return (
        Kernel(
            name,
            src,
            tuple(args),
            (("BLOCK_X", params.block_x), ("BLOCK_Y", params.block_y)),
            params.num_warps,
            params,
        ),
    )
