"""Reduction scheduler: the input's layout decides the read, the output's the store.

The problem arrives canonicalized from the dominant input's memory order (see
``analysis.canonical``). The template follows the innermost group:

* ``inner`` template (innermost group reduced): tile ``[BLOCK_X, BLOCK_R]``; rows are
  all kept groups flattened, columns all reduced groups flattened (the stride-1 one
  fastest), accumulated over a loop along R, then reduced along axis 1;
* ``outer`` template (innermost group kept): tile ``[BLOCK_R, BLOCK_X]``; columns are the
  stride-1 kept group, other kept groups run along the grid, rows walk R.

``family`` (inner / outer / mixed) reports the canonical pattern. When the kept
space cannot fill the GPU, R is split over a second grid axis: partial results
go to an fp32 workspace and are combined in split order, so the result does not
depend on timing. ``finish="ticket"`` (the default) combines them in the same
launch: each program takes a ticket from an atomic counter of its X block and the
last one combines; ``finish="kernel"`` launches a second, finishing kernel.
The output's layout changes only the store offsets.

In generic mode (an access that is not affine, see ``analysis.index_walk``) the
groups are the single coordinates and that access's offset comes from
``codegen.generic_index``, computed inside the R loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.device import DeviceInfo
from ..codegen.indexing import next_pow2
from .problem import Problem, generic_fields, stride_flags

NAME = "reduction"


@dataclass(frozen=True)
class ReductionParams:
    scheduler: str
    family: str                   # "inner", "outer" or "mixed" (the canonical pattern)
    template: str                 # "inner" or "outer" (the kernel shape)
    x_groups: tuple[int, ...]     # kept groups, innermost first (indices into groups)
    r_groups: tuple[int, ...]     # reduced groups, innermost first
    block_x: int
    block_r: int
    num_warps: int
    split: int                    # >1: partial results, combined as ``finish`` says
    index64: bool
    zero_strides: tuple[tuple[bool, ...], ...]
    unit_strides: tuple[tuple[bool, ...], ...]
    vector_hint: int = 1          # elements per thread along the contiguous axis
    r_nest: bool = False          # inner template: tile the stride-1 R group, loop the others
    generic: bool = False                  # some access walks its chain (not affine)
    affine: tuple[bool, ...] = ()          # per access, in generic mode
    group_dims: tuple[int, ...] = ()       # iteration coordinate of each group, in generic mode
    pattern: str = field(default="", compare=False)
    sizes: tuple[int, ...] = field(default=(), compare=False)
    chunk: int = field(default=0, compare=False)
    finish: str = "ticket"        # split > 1: "ticket" (last program combines) or "kernel"


def can_schedule(n_reductions: int) -> str | None:
    if n_reductions != 1:
        return f"a reduction kernel takes one reduction op, this segment has {n_reductions}"
    return None


def heuristics(p: Problem, device: DeviceInfo) -> ReductionParams:
    groups = p.groups
    xg = tuple(k for k, g in enumerate(groups) if not g.reduced)
    rg = tuple(k for k, g in enumerate(groups) if g.reduced)
    nx = _prod(groups[k].size for k in xg)
    nr = _prod(groups[k].size for k in rg)
    fam = p.family
    item = min(p.vector_bytes(a) for a in range(max(p.n_loads, 1))) if p.n_loads else 4
    vec = max(1, 16 // item)
    template = "inner" if (groups and groups[0].reduced) else "outer"
    if not rg:
        template = "inner"
    tile = 4096 if item >= 4 else 8192
    r_nest = template == "inner" and len(rg) >= 2
    if r_nest:
        n_r0 = groups[rg[0]].size
        block_r = min(next_pow2(n_r0), 2048 if item >= 4 else 4096)
        block_x = max(1, min(next_pow2(nx), tile // block_r))
        programs = -(-nx // block_x)
    elif template == "inner":
        block_r = min(next_pow2(nr), 2048 if item >= 4 else 4096)
        block_x = max(1, min(next_pow2(nx), tile // block_r))
        programs = -(-nx // block_x)
    else:
        n0 = groups[0].size
        block_x = min(next_pow2(n0), 256 if item >= 4 else 512)
        block_r = max(1, min(next_pow2(nr), tile // block_x))
        programs = -(-n0 // block_x) * (nx // n0)
    warps = 8 if block_x * block_r >= 4096 else 4 if block_x * block_r >= 1024 else 2
    split = 1
    target = device.sm_count * 4
    if r_nest:
        # split the scalar loop over the outer reduced groups
        n_outer = nr // groups[rg[0]].size
        if programs < target:
            split = min(-(-target // programs), n_outer, 1024)
        chunk = -(-n_outer // split)
        split = -(-n_outer // chunk)
    else:
        if programs < target and nr >= 4 * block_r:
            split = min(-(-target // programs), -(-nr // (2 * block_r)), 1024)
        per_split = -(-nr // split)
        chunk = -(-per_split // block_r) * block_r if split > 1 else nr
        if split > 1:
            split = -(-nr // chunk)
    zero, unit = stride_flags(p)
    return ReductionParams(NAME, fam, template, xg, rg, block_x, block_r, warps, split,
                           p.needs_int64, zero, unit, vec, r_nest, **generic_fields(p),
                           pattern=p.pattern, sizes=tuple(g.size for g in groups), chunk=chunk,
                           finish="ticket")


def combine_block(params: ReductionParams, block_x: int) -> int:
    """Partials combined per step (a power of two): up to ``split``, with a
    [BLOCK_S, block_x] tile of at most 4096 elements."""
    block_s = 1
    while block_s < params.split and block_s * block_x < 4096:
        block_s *= 2
    return block_s


def grid(params: ReductionParams) -> tuple[int, int]:
    s = params.sizes
    nx = _prod(s[k] for k in params.x_groups)
    if params.template == "inner":
        programs = -(-nx // params.block_x)
    else:
        n0 = s[0]
        programs = -(-n0 // params.block_x) * (nx // n0 if n0 else 0)
    return programs, params.split


def _prod(xs) -> int:
    p = 1
    for v in xs:
        p *= v
    return p
