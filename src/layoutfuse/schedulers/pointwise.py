"""Pointwise scheduler: every fusion segment without a reduction.

The iteration order is the dominant input's memory order (canonical groups).
The kernel tiles two groups, ``[BLOCK_Y, BLOCK_X]``: X is the dominant input's
stride-1 group; Y is the outputs' stride-1 group when it differs (a transpose:
loads and stores are then both coalesced, Triton converting the layout through
shared memory), else the next group. Other groups run along the grid.

A transpose tile is sized in bytes, not elements, from the fp32 tile that runs at
89-96% of the H200's copy bandwidth (64 x 64, 8 warps): each edge spans
``TRANSPOSE_EDGE_BYTES`` of the widest dtype the kernel reads or writes (so loads and
stores both move whole 256-byte segments), and each thread moves ``THREAD_BYTES`` per
access (four 16-byte vectors). A bf16 transpose thus gets a 128 x 128 tile and 16
warps, not the fp32 tile's elements with half its bytes.

In generic mode (an access that is not affine, see ``analysis.index_walk``) the
groups are the single coordinates; that access's offset comes from
``codegen.generic_index`` instead of group strides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.device import DeviceInfo
from ..codegen.indexing import decompose, next_pow2, offset_expr, one_write_per_element
from ..dtypes import itemsize
from .problem import Problem, generic_fields, is_affine, stride_flags

NAME = "pointwise"

TRANSPOSE_EDGE_BYTES = 256     # each tile edge: 64 fp32, 128 bf16 (loads and stores alike)
TRANSPOSE_EDGE_MAX = 128       # elements: bounds a 1-byte tile (and its shared memory)
THREAD_BYTES = 64              # per thread and access: four 16-byte vectors
THREAD_ELEMENTS = 32           # per thread at most: the values sit in (fp32) registers


@dataclass(frozen=True)
class PointwiseParams:
    scheduler: str
    gx: int                       # group tiled along BLOCK_X
    gy: int | None                # group tiled along BLOCK_Y (None: no second tile axis)
    n_groups: int
    block_x: int
    block_y: int
    num_warps: int
    transpose: bool
    index64: bool
    zero_strides: tuple[tuple[bool, ...], ...]   # [access][group]
    unit_strides: tuple[tuple[bool, ...], ...]
    generic: bool = False                  # some access walks its chain (not affine)
    affine: tuple[bool, ...] = ()          # per access, in generic mode
    group_dims: tuple[int, ...] = ()       # iteration coordinate of each group, in generic mode
    pattern: str = field(default="", compare=False)
    sizes: tuple[int, ...] = field(default=(), compare=False)


def can_schedule(has_reduction: bool) -> str | None:
    return "the segment has a reduction" if has_reduction else None


def heuristics(p: Problem, device: DeviceInfo) -> PointwiseParams:
    groups = p.groups
    n = len(groups)
    gx = 0
    gy = None
    transpose = False
    for a in p.stores():
        inner = p.innermost_group(a)
        if inner is not None and inner != gx and n > 1:
            gy, transpose = inner, True
            break
    if gy is None and n > 1:
        gy = 1
    size_x = groups[0].size if n else 1
    size_y = groups[gy].size if gy is not None else 1
    if transpose:
        bx, by, warps = transpose_tile(size_x, size_y, widest_itemsize(p))
    else:
        target = 4096
        bx = min(next_pow2(size_x), target)
        by = min(next_pow2(size_y), max(1, target // bx))
        warps = 8 if bx * by >= 4096 else 4 if bx * by >= 512 else 2
    zero, unit = stride_flags(p)
    return PointwiseParams(NAME, gx, gy, n, bx, by, warps, transpose, p.needs_int64, zero, unit,
                           **generic_fields(p), pattern=p.pattern,
                           sizes=tuple(g.size for g in groups))


def widest_itemsize(p: Problem) -> int:
    """Bytes per element of the widest dtype the kernel loads or stores (4 if none)."""
    return max((itemsize(p.dtypes[a]) for a in range(p.n_loads + p.n_stores)), default=4)


def transpose_tile(size_x: int, size_y: int, elem_bytes: int) -> tuple[int, int, int]:
    """(BLOCK_X, BLOCK_Y, num_warps) of a transpose: edges of ``TRANSPOSE_EDGE_BYTES``
    (capped by the extents), warps for ``THREAD_BYTES`` per thread, 4 to 16."""
    edge = min(TRANSPOSE_EDGE_MAX, max(1, TRANSPOSE_EDGE_BYTES // elem_bytes))
    bx = min(next_pow2(size_x), edge)
    by = min(next_pow2(size_y), edge)
    per_thread = min(THREAD_ELEMENTS, max(1, THREAD_BYTES // elem_bytes))
    warps = min(16, max(4, bx * by // (per_thread * 32)))
    return bx, by, warps


def grid(params: PointwiseParams) -> int:
    s = params.sizes
    if not s:
        return 1
    px = -(-s[params.gx] // params.block_x)
    py = -(-s[params.gy] // params.block_y) if params.gy is not None else 1
    rest = 1
    for k, n in enumerate(s):
        if k != params.gx and k != params.gy:
            rest *= n
    return px * py * rest


def emit_indexing(w, params: PointwiseParams, spec) -> tuple[str, list[str | None], dict]:
    """Lines that compute the tile's mask and the offsets of the affine accesses.

    Returns (mask, offsets, group indices); an offset is None for an access that is not
    affine. Offsets are tiles: a load's covers at least one tile axis (a pointer with
    none cannot take the tile's mask), a store's both.
    """
    pid = "tl.program_id(0).to(tl.int64)" if params.index64 else "tl.program_id(0)"
    w.line(f"pid = {pid}")
    w.line("px = pid % NUM_PX")
    w.line("rest = pid // NUM_PX")
    w.line("py = rest % NUM_PY")
    w.line("rest = rest // NUM_PY")
    idx: dict[int, str] = {}
    if params.n_groups:
        idx[params.gx] = w.assign("ix", "px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
        mask = f"({idx[params.gx]} < n{params.gx})"
    else:
        mask = "(tl.arange(0, BLOCK_X)[None, :] < 1)"
    if params.gy is not None:
        idx[params.gy] = w.assign("iy", "py * BLOCK_Y + tl.arange(0, BLOCK_Y)[:, None]")
        mask += f" & ({idx[params.gy]} < n{params.gy})"
    others = [k for k in range(params.n_groups) if k not in idx]
    if others:
        parts = decompose(w, "rest", [f"n{k}" for k in others], "iz")
        idx.update(zip(others, parts))
    mask = w.assign("mask", mask)
    tile_axes = [k for k in (params.gx, params.gy) if k is not None and params.n_groups]
    offsets: list[str | None] = []
    for a, access in enumerate(spec.accesses):
        if not is_affine(params, a):
            offsets.append(None)
            continue
        groups = [k for k in range(params.n_groups) if not params.zero_strides[a][k]]
        terms = [(idx[k], 1 if params.unit_strides[a][k] else f"s{a}_{k}") for k in groups]
        covered = [k in groups for k in tile_axes]
        off = offset_expr(terms, TILE_ZEROS)
        if terms and not (all(covered) if access.store else any(covered)):
            off = f"{off} + {TILE_ZEROS}"
        offsets.append(w.assign("off", off))
    return mask, offsets, idx


TILE_ZEROS = "tl.zeros([BLOCK_Y, BLOCK_X], tl.int32)"


def store_mask(w, params: PointwiseParams, access: int, mask: str, idx: dict[int, str],
               guard: str | None = None) -> str:
    """The tile's mask for a store, writing index 0 only along its stride-0 groups."""
    return one_write_per_element(w, mask, [idx[k] for k in range(params.n_groups)
                                           if params.zero_strides[access][k]], guard)


def stride_args(params: PointwiseParams, n_access: int) -> list[tuple[int, int]]:
    """(access, group) pairs whose stride is passed as a kernel argument."""
    return [(a, k) for a in range(n_access) for k in range(params.n_groups)
            if is_affine(params, a) and not params.zero_strides[a][k]
            and not params.unit_strides[a][k]]
