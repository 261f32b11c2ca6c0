"""A segment's ``Problem`` from the run's real strides and extents.

Every access gets its strides over the iteration coordinates. An access whose real
strides move forward along its chain is *affine*; one that crosses a reshape its
strides cannot express is not: it gets its local strides (``index_walk``) only to
order the coordinates, the kernel runs in generic mode (no coordinates merged) and
that access walks its chain per element.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..analysis.accesses import (
    has_base,
    is_indirect,
    load_strides,
    shape_of,
    store_strides_backward,
)
from ..analysis.canonical import canonicalize
from ..analysis.index_walk import local_strides
from ..dtypes import DataType
from ..ir import TensorView, Val
from ..ir.opdef import OpKind
from ..ir.ops.random import NAMES as RANDOM_OPS
from ..ir.ops.reductions import copies_scale, n_results
from ..ir.ops.scans import scan_dim
from ..schedulers.problem import Problem, max_offset
from ..segmenter.segments import KernelSpec

Env = Mapping[int, torch.Tensor]
Extents = dict[int, int]


def real_strides(spec: KernelSpec, access: int, env: Env, extents: Extents) -> tuple[int, ...]:
    """The memory strides of an access's tensor; a coordinate's (iota, random ops) are the
    row-major strides of its tensor's shape: its value is a function of the linear index."""
    if access >= spec.n_loads + spec.n_stores:
        strides, step = [], 1
        for n in reversed(shape_of(spec.accesses[access].tv, extents)):
            strides.append(step)
            step *= max(n, 1)
        return tuple(reversed(strides))
    return tuple(env[id(spec.accesses[access].tv)].stride())


def access_strides(
    spec: KernelSpec, env: Env, extents: Extents
) -> tuple[list[tuple[int, ...]], list[bool]]:
    """Per access: strides over the iteration coordinates, and whether they address it."""
    rank = len(spec.root.shape_domain)
    strides: list[tuple[int, ...]] = []
    affine: list[bool] = []
    for i, a in enumerate(spec.accesses):
        real = real_strides(spec, i, env, extents)
        if (
            spec.kind == "reduction"
            and spec.n_loads <= i < spec.n_loads + spec.n_stores - len(spec.loop_stores)
            and not a.backward  # an epilogue's output: per row, as below
        ):  # a result (a loop store has the root's coordinates: as a load, below)
            st: tuple[int, ...] | None = _with_reduced(real, reduced_dims(spec), rank)
        elif a.cross:
            # a cross reduction's result (or its epilogue's): its strides over the group's
            # reduced coordinates, 0 along the kept ones it reduced
            back = store_strides_backward(a.chain, real, extents)
            assert spec.group is not None and back is not None
            st = _per_row(
                back, shape_of(a.tv, extents), shape_of(spec.root, extents), kept_dims(spec)
            )
        elif a.backward:
            # a per-row result of a normalization kernel: its strides over the reduction
            # result's coordinates, with 0 along the reduced dims
            back = store_strides_backward(a.chain, real, extents)
            st = (
                None
                if back is None
                else _per_row(
                    back,
                    shape_of(a.tv, extents),
                    shape_of(spec.root, extents),
                    reduced_dims(spec),
                )
            )
        else:
            st = load_strides(a, real, extents)
        affine.append(st is not None)
        strides.append(st if st is not None else local_strides(a, real, extents, rank))
    return strides, affine


def reduced_dims(spec: KernelSpec) -> tuple[int, ...]:
    """The iteration coordinates a reduction or normalization segment reduces."""
    if spec.group is not None:
        return tuple(spec.group.dims)
    if spec.scan is not None:  # the dim a scan works along, its own group
        return (scan_dim(spec.scan),)
    assert spec.reduction is not None, spec.reason
    return tuple(spec.reduction.attrs["dims"])


def kept_dims(spec: KernelSpec) -> tuple[int, ...]:
    """The iteration coordinates a normalization segment keeps (its cross reductions')."""
    assert spec.group is not None
    return spec.group.kept_dims()


def _with_reduced(strides: tuple[int, ...], dims: tuple[int, ...], rank: int) -> tuple[int, ...]:
    it = iter(strides)
    return tuple(0 if d in dims else next(it) for d in range(rank))


def _per_row(
    strides: tuple[int, ...],
    shape: tuple[int, ...],
    root_shape: tuple[int, ...],
    dims: tuple[int, ...],
) -> tuple[int, ...]:
    """Strides over the root's coordinates of a per-row result of ``shape``: the reduction
    result's kept dims, in order, with size-1 dims anywhere (``keepdim``'s, or another
    broadcast's); a root dim of extent 1 or reduced has stride 0 (index 0, or one value
    for the whole row)."""
    wide = iter(s for s, n in zip(strides, shape) if n != 1)
    return tuple(0 if d in dims or n == 1 else next(wide) for d, n in enumerate(root_shape))


def build_problem(spec: KernelSpec, env: Env, extents: Extents) -> Problem | None:
    """The segment's problem; None for a normalization group over an empty extent or whose
    reductions' inputs (its cross reductions' too) do not all have the root's extents."""
    root_shape = shape_of(spec.root, extents)
    group = spec.group
    if group is not None and (
        0 in root_shape
        or any(
            shape_of(_tensor(e.inputs[0]), extents) != root_shape
            for e in group.reductions + group.cross
        )
    ):
        return None
    strides, affine = access_strides(spec, env, extents)
    reduced = [False] * len(root_shape)
    if spec.kind in ("reduction", "normalization", "scan"):
        for d in reduced_dims(spec):
            reduced[d] = True
    generic = not all(affine)
    repeat = 1
    for d in _repeated_dims(spec, reduced, strides, root_shape, generic):
        reduced[d] = False  # a kept coordinate no access moves along: canonicalize drops it
        repeat *= root_shape[d]
    order_by = None
    if generic:
        # the affine loads decide the order; the others' local strides break ties. An
        # indexed read's data comes first: its dims off the indexed one are affine, and
        # its index operand (broadcast along them) should not decide
        loads = range(spec.n_loads)
        gathered = [a for a in loads if is_indirect(spec.accesses[a].chain)]
        order_by = (
            gathered
            + [a for a in loads if affine[a]]
            + [a for a in loads if not affine[a] and a not in gathered]
        )
    groups = canonicalize(
        root_shape,
        reduced,
        strides,
        spec.n_loads,
        merge=not generic,
        order_by=order_by,
        n_stores=spec.n_stores,
    )
    dtypes = tuple(
        a.tv.dtype if i < spec.n_loads + spec.n_stores else DataType.Int
        for i, a in enumerate(spec.accesses)
    )
    # a slice's or select's load, or coordinate (a random op's, an iota's read through
    # one): its base offset is bound at launch (``b<a>``)
    based = tuple(
        i
        for i, a in enumerate(spec.accesses)
        if not spec.n_loads <= i < spec.n_loads + spec.n_stores and affine[i] and has_base(a)
    )
    random = tuple(
        i
        for i, a in enumerate(spec.accesses)
        if i >= spec.n_loads + spec.n_stores
        and a.tv.definition is not None
        and a.tv.definition.op.name in RANDOM_OPS
    )
    offs = tuple(
        max_offset(root_shape, s)
        if affine[i] and i not in based
        else max_offset(shape_of(a.tv, extents), real_strides(spec, i, env, extents))
        for i, (a, s) in enumerate(zip(spec.accesses, strides))
    )
    return Problem(
        groups,
        spec.n_loads,
        spec.n_stores,
        dtypes,
        offs,
        tuple(affine),
        **_reduction_fields(spec),
        based=based,
        random=random,
        repeat=repeat,
        math_ops=sum(e.op.kind is OpKind.POINTWISE and e.op.name != "cast" for e in spec.exprs),
        **_scan_fields(spec, extents),
    )


def _repeated_dims(
    spec: KernelSpec,
    reduced: list[bool],
    strides: list[tuple[int, ...]],
    shape: tuple[int, ...],
    generic: bool,
) -> list[int]:
    """Reduced coordinates no access moves along (an expanded input's), of a plain
    reduction segment whose reductions all say how M copies of each value change them
    (their rows' ``copies``: M times the sum, the same max and min, a Welford's M2 and
    count times M; ``Problem.repeat``). The kernel does not walk them; where none is left
    to walk, the pointwise scheduler computes each reduction in place, scaled the same
    way."""
    if spec.kind != "reduction" or spec.group is not None or generic or spec.scan is not None:
        return []
    if not spec.reductions or any(copies_scale(e) is None for e in spec.reductions):
        return []
    return [
        d for d, r in enumerate(reduced) if r and shape[d] > 1 and all(st[d] == 0 for st in strides)
    ]


def _tensor(v: Val) -> TensorView:
    assert isinstance(v, TensorView), v
    return v


def _scan_fields(spec: KernelSpec, extents: Extents) -> dict[str, Any]:
    """A scan segment's op, its order and what each row keeps (a topk's k)."""
    e = spec.scan
    if e is None:
        return {}
    out = e.outputs[0]
    assert isinstance(out, TensorView)
    return {
        "scan_op": e.op.name,
        "descending": bool(e.attrs.get("descending", e.attrs.get("largest", False))),
        "scan_keep": shape_of(out, extents)[scan_dim(e)],
        "scan_dtype": e.inputs[0].dtype,
    }


def _reduction_fields(spec: KernelSpec) -> dict[str, Any]:
    """What the heuristics need of the segment's reductions: the accumulators per tile
    element; a normalization group's passes, whether it may loop and whether its results
    are used again on the rows."""
    accumulators = sum(n_results(e) for e in spec.reductions) or 1
    welford = any(n_results(e) > 1 for e in spec.reductions)
    if spec.group is None:
        return {
            "accumulators": accumulators,
            "welford": welford,
            "loop_stores": len(spec.loop_stores),
        }
    group = spec.group
    return {
        "accumulators": accumulators,
        "welford": welford,
        "passes": 1 + max(group.levels.values()),
        "loop": group.rows or len(group.reductions) > 1,
        "rows": group.rows,
        "cross": len(group.cross),
        "online": bool(group.online),
    }
