"""The reduction kernel's tile (``codegen.reduction``): its shape, and the program's
indices and masks over it.

* ``inner`` template: a ``[BLOCK_X, BLOCK_R]`` tile of rows; ``x`` is the row.
* ``outer`` template: a ``[BLOCK_R, BLOCK_X]`` tile whose columns are the stride-1 kept
  group (``x_span=2``: a flat index over it and the next kept group, each one's index
  ``%`` and ``//`` the first's extent); the other kept groups go along the grid; ``x`` is
  the output element.
* transposed (``y_group`` set): a ``[BLOCK_Y, BLOCK_R, BLOCK_X]`` tile; Y is the output's
  stride-1 kept group, so the ``[BLOCK_Y, 1, BLOCK_X]`` result is stored along it; X is
  the input's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schedulers.reduction import ReductionParams
from .indexing import decompose
from .writer import Writer


@dataclass(frozen=True)
class TileShape:
    """The program's tile: its shape, the R index's arange in it, and the reduced axis."""

    shape: str
    r_arange: str
    axis: int


def tile_shape(params: ReductionParams) -> TileShape:
    if params.template == "inner":
        return TileShape("[BLOCK_X, BLOCK_R]", "tl.arange(0, BLOCK_R)[None, :]", 1)
    if params.y_group is not None:
        return TileShape("[BLOCK_Y, BLOCK_R, BLOCK_X]", "tl.arange(0, BLOCK_R)[None, :, None]", 1)
    return TileShape("[BLOCK_R, BLOCK_X]", "tl.arange(0, BLOCK_R)[:, None]", 0)


def tiled_groups(params: ReductionParams) -> set[int]:
    """Groups whose index is a tile (the others are scalars along the grid or a loop)."""
    xg, rg = params.x_groups, params.r_groups
    if params.y_group is not None:
        return {xg[0], params.y_group, *rg}
    inner = params.template == "inner"
    return set(xg if inner else xg[: params.x_span]) | set(rg[:1] if params.r_nest else rg)


def emit_program_indices(w: Writer, params: ReductionParams) -> dict[int, str]:
    """``pid``, ``pid_s`` (the split) and ``xmask``; returns each kept group's index."""
    w.line("pid = tl.program_id(0).to(tl.int64)" if params.index64 else "pid = tl.program_id(0)")
    w.line(
        "pid_s = tl.program_id(1).to(tl.int64)" if params.index64 else "pid_s = tl.program_id(1)"
    )
    if params.template == "inner":
        return _inner_indices(w, params.x_groups)
    if params.y_group is not None:
        return _transposed_indices(w, params.x_groups, params.y_group)
    return _outer_indices(w, params.x_groups, params.x_span)


def _inner_indices(w: Writer, xg: list[int]) -> dict[int, str]:
    w.line("x = pid * BLOCK_X + tl.arange(0, BLOCK_X)[:, None]")
    w.line("xmask = x < NX")
    return dict(zip(xg, decompose(w, "x", [f"n{k}" for k in xg], "xg"))) if xg else {}


def _transposed_indices(w: Writer, xg: list[int], y: int) -> dict[int, str]:
    idx: dict[int, str] = {}
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
    return idx


def _outer_indices(w: Writer, xg: list[int], span: int = 1) -> dict[int, str]:
    """Span 2: the block's columns are a flat index over the first two kept groups (the
    first's index ``%`` its extent, the second's ``//``)."""
    idx: dict[int, str] = {}
    w.line("px = pid % NPX")
    w.line("rest = pid // NPX")
    cols = w.assign("xg", "px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]")
    n_cols = span_columns(xg, span)
    w.line(f"xmask = {cols} < {n_cols}")
    if span == 1:
        idx[xg[0]] = cols
    else:
        idx[xg[0]] = w.assign("xg", f"{cols} % n{xg[0]}")
        idx[xg[1]] = w.assign("xg", f"{cols} // n{xg[0]}")
    if len(xg) > span:
        more = xg[span:]
        idx.update(zip(more, decompose(w, "rest", [f"n{k}" for k in more], "xg")))
    w.line(f"x = {cols} + {n_cols} * rest")
    return idx


def span_columns(xg, span: int) -> str:
    """The columns an outer tile's blocks cover, as an expression of the kernel's extents."""
    return f"n{xg[0]}" if span == 1 else f"(n{xg[0]} * n{xg[1]})"
