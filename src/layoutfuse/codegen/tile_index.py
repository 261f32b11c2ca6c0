"""Pointwise tile indexing: program ids, the tile's masks and every affine access's
offsets, from ``PointwiseParams`` (the emission half of ``schedulers.pointwise``)."""

from __future__ import annotations

from ..schedulers.pointwise import PointwiseParams, tile_groups
from ..schedulers.problem import is_affine
from .indexing import decompose, offset_expr, one_write_per_element


def emit_indexing(
    w, params: PointwiseParams, spec, axes: dict[str, tuple[str, bool]] | None = None
) -> tuple[str, list[str | None], dict, list[str]]:
    """Lines that compute the tile's mask and the offsets of the affine accesses.

    Returns (mask, offsets, group indices, load masks); an offset is None for an access
    that is not affine. Offsets are tiles: a load's covers at least one tile axis (a
    pointer with none cannot take the tile's mask), a store's both. A load that varies
    along one tile axis only (a row's statistic broadcast along the other) keeps that
    axis's shape and mask: it is loaded, and what is computed from it alone, once per row
    instead of once per element, and broadcast where it meets the tile. ``axes``, when
    given, receives each tile axis's mask by axis name ("x", "y"), with whether the axis is
    unflattened (one group: its mask is ``i < n``).
    """
    pid = "tl.program_id(0).to(tl.int64)" if params.index64 else "tl.program_id(0)"
    w.line(f"pid = {pid}")
    tiled = set(sum(tile_groups(params), ()))
    if params.rest_first:
        grid_sizes = [f"n{k}" for k in range(params.n_groups) if k not in tiled]
        w.line(f"n_rest = {' * '.join(grid_sizes) or '1'}")
        w.line("rest = pid % n_rest")
        w.line("pt = pid // n_rest")
        w.line("px = pt % NUM_PX")
        w.line("py = pt // NUM_PX")
    elif params.y_first:
        w.line("py = pid % NUM_PY")
        w.line("rest = pid // NUM_PY")
        w.line("px = rest % NUM_PX")
        w.line("rest = rest // NUM_PX")
    else:
        w.line("px = pid % NUM_PX")
        w.line("rest = pid // NUM_PX")
        w.line("py = rest % NUM_PY")
        w.line("rest = rest // NUM_PY")
    idx: dict[int, str] = {}
    flats: dict[str, str] = {}  # a flattened axis's index, where offsets run along it
    if params.n_groups:
        axis_masks = [
            w.assign(
                "mask_x",
                tile_axis(
                    w, params, "x", "px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]", idx, flats
                ),
            )
        ]
        if axes is not None:
            axes["x"] = (axis_masks[0], params.gx2 is None)
    else:
        axis_masks = ["(tl.arange(0, BLOCK_X)[None, :] < 1)"]
    if params.gy is not None:
        axis_masks.append(
            w.assign(
                "mask_y",
                tile_axis(
                    w, params, "y", "py * BLOCK_Y + tl.arange(0, BLOCK_Y)[:, None]", idx, flats
                ),
            )
        )
        if axes is not None:
            axes["y"] = (axis_masks[1], params.gy2 is None)
    others = [k for k in range(params.n_groups) if k not in idx]
    if others:
        parts = decompose(w, "rest", [f"n{k}" for k in others], "iz")
        idx.update(zip(others, parts))
    mask = w.assign("mask", " & ".join(axis_masks))
    tile_axes = [axis for axis in tile_groups(params) if axis]
    offsets: list[str | None] = []
    load_masks: list[str] = []
    for a, access in enumerate(spec.accesses):
        load_masks.append(mask)
        if not is_affine(params, a):
            offsets.append(None)
            continue
        groups = [k for k in range(params.n_groups) if not params.zero_strides[a][k]]
        runs = params.flat_runs[a] if params.flat_runs else ""
        merged = {params.gx2 if ax == "x" else params.gy2: ax for ax in runs}
        inner = {params.gx: "x", params.gy: "y"}
        terms = [
            (
                flats[inner[k]] if k in inner and inner[k] in runs else idx[k],
                1 if params.unit_strides[a][k] else f"s{a}_{k}",
            )
            for k in groups
            if k not in merged
        ]
        covered = [any(k in groups for k in axis) for axis in tile_axes]
        off = offset_expr(terms, TILE_ZEROS)
        if terms and not (all(covered) if access.store else any(covered)):
            off = f"{off} + {TILE_ZEROS}"
        elif (
            not access.store
            and terms
            and len(covered) == len(axis_masks) == 2
            and covered.count(True) == 1
        ):
            load_masks[a] = axis_masks[covered.index(True)]  # one axis: its shape
        offsets.append(w.assign("off", off))
    return mask, offsets, idx, load_masks


TILE_ZEROS = "tl.zeros([BLOCK_Y, BLOCK_X], tl.int32)"


def tile_axis(
    w, params: PointwiseParams, axis: str, index: str, idx: dict[int, str], flats: dict[str, str]
) -> str:
    """Lines for the group indices of tile axis ``axis`` ("x" or "y") from its flat
    ``index``, into ``idx`` (a flattened axis's index into ``flats``); returns the axis's
    mask: ``i < split * n_outer`` where the split is the inner group's whole extent."""
    inner, outer, split = (
        (params.gx, params.gx2, params.split_x)
        if axis == "x"
        else (params.gy, params.gy2, params.split_y)
    )
    flat = w.assign(f"i{axis}", index)
    if outer is None:
        idx[inner] = flat
        return f"({flat} < n{inner})"
    idx[inner] = w.assign(f"i{axis}", f"{flat} % {split}")
    idx[outer] = w.assign(f"i{axis}", f"{flat} // {split}")
    flats[axis] = flat
    if axis in params.whole_splits:
        return f"({flat} < {split} * n{outer})"
    return f"({idx[inner]} < n{inner}) & ({idx[outer]} < n{outer})"


def store_mask(
    w,
    params: PointwiseParams,
    access: int,
    mask: str,
    idx: dict[int, str],
    guard: str | None = None,
) -> str:
    """The tile's mask for a store, writing index 0 only along its stride-0 groups."""
    return one_write_per_element(
        w, mask, [idx[k] for k in range(params.n_groups) if params.zero_strides[access][k]], guard
    )
