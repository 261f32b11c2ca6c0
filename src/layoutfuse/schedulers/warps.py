"""Warps of a program from the elements of its tile: one rule for every scheduler, each
scheduler with its own thresholds (a field of its tuning)."""

from __future__ import annotations

THREADS_PER_WARP = 32

WarpSteps = tuple[tuple[int, int], ...]
"""(least tile elements, warps) steps, largest first; the last step's least is 0."""


def warps_for(tile_elements: int, steps: WarpSteps) -> int:
    """The warps of the first step whose least elements the tile reaches (the last
    step's warps if none)."""
    return next((warps for least, warps in steps if tile_elements >= least), steps[-1][1])
