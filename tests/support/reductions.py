"""Single reductions over layouts: inputs of chosen memory orders and their oracles.

Shared by the reduction test modules (``tests/schedulers/test_reduction_*.py``, the
reduction PTX tests): tensors of exact values laid out in a chosen memory order, the
float64 torch reference with dtype-aware bounds (``assert_values``), the expected output
strides (``assert_layout``) and the expected read of the schedule (``assert_family``),
all computed from the input's strides alone.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from layoutfuse.analysis.canonical import Group
from layoutfuse.dtypes import DataType as IrType
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.problem import Problem
from support.execution import as_list

OPS = ("sum", "max", "min", "var_mean")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
NV_DTYPES = {
    torch.float32: DataType.Float,
    torch.float16: DataType.Half,
    torch.bfloat16: DataType.BFloat16,
}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU runs Triton's interpreter


# --- inputs ----------------------------------------------------------------------------------
def exact_values(shape: Sequence[int], gen: torch.Generator) -> torch.Tensor:
    """Multiples of 1/256 in (-1, 1): exact in bf16 (8 significant bits), fp16 and fp32, and
    every fp32 partial sum of up to 2**16 of them is exact, whatever the order."""
    return torch.randint(-255, 256, tuple(shape), generator=gen, dtype=torch.int32) / 256.0


def strided(
    shape: Sequence[int], alloc: Sequence[int], dtype: torch.dtype, gen: torch.Generator
) -> torch.Tensor:
    """A dense tensor of ``exact_values`` of logical ``shape`` whose dims lie in memory in
    ``alloc`` (outermost first), on ``DEVICE``."""
    base = exact_values([shape[d] for d in alloc], gen).to(dtype).to(DEVICE)
    return base.permute(*[list(alloc).index(d) for d in range(len(shape))])


@dataclass(frozen=True)
class InputSpec:
    """One input: the tensor and the ``define_tensor`` arguments that declare it."""

    tensor: torch.Tensor
    shape: list[int]
    contiguity: list[bool | None]
    stride_order: list[int]

    def define(self, fd: FusionDefinition):
        """The input declared in ``fd`` (``define_tensor`` with its arguments)."""
        return fd.define_tensor(
            shape=self.shape,
            contiguity=self.contiguity,
            dtype=NV_DTYPES[self.tensor.dtype],
            stride_order=self.stride_order,
        )


def make_input(
    sizes: Sequence[int],
    alloc: Sequence[int],
    dtype: torch.dtype,
    special: dict[int, str],
    gen: torch.Generator,
) -> InputSpec:
    """An input of logical ``sizes`` whose dims lie in memory in ``alloc`` (outermost first).

    ``special`` maps a logical dim to "size1" (extent 1 instead), "expanded" (a size-1 base
    expanded to ``sizes[d]``, stride 0) or "sliced" (every other element of a base twice
    as long: stride doubled, declared contiguity False).
    """
    rank = len(sizes)
    sizes = [1 if special.get(d) == "size1" else s for d, s in enumerate(sizes)]
    base_sizes = list(sizes)
    for d, kind in special.items():
        if kind in ("size1", "expanded"):
            base_sizes[d] = 1
        elif kind == "sliced":
            base_sizes[d] = 2 * sizes[d]
    x = strided(base_sizes, alloc, dtype, gen)
    for d, kind in special.items():
        if kind == "sliced":
            x = x[(slice(None),) * d + (slice(None, None, 2),)]
    x = x.expand(*sizes)
    shape = [1 if special.get(d) == "size1" else -1 for d in range(rank)]
    contiguity = [
        None if special.get(d) in ("size1", "expanded") else special.get(d) != "sliced"
        for d in alloc
    ]
    stride_order = [rank - 1 - list(alloc).index(d) for d in range(rank)]
    return InputSpec(x, shape, contiguity, stride_order)


# --- oracles ---------------------------------------------------------------------------------
def reference(
    op: str, data: torch.Tensor, dims: Sequence[int], keepdim: bool = False
) -> list[torch.Tensor]:
    """Eager torch on float64 ``data``."""
    dims = list(dims)
    if op == "sum":
        return [data.sum(dims, keepdim=keepdim)]
    if op == "max":
        return [data.amax(dims, keepdim=keepdim)]
    if op == "min":
        return [data.amin(dims, keepdim=keepdim)]
    with warnings.catch_warnings():  # correction=1 over one element: nan, as intended
        warnings.simplefilter("ignore")
        var, mean = torch.var_mean(data, dims, correction=1, keepdim=keepdim)
    return [var, mean]


def assert_values(
    op: str,
    outs: Sequence[torch.Tensor],
    dtype: torch.dtype,
    data: torch.Tensor,
    dims: Sequence[int],
    keepdim: bool = False,
    element_rtol: float | None = None,
) -> None:
    """``outs`` have ``dtype`` and match ``reference(op, data, ...)`` within dtype-aware bounds.

    ``data`` is what is reduced, in float64. ``element_rtol`` is None when ``data`` holds the
    exact values the kernel reduces, multiples of 1/256 small enough that every fp32
    partial sum is exact in any order; else the relative error each element may carry
    (a prologue computed in fp32, or rounded to ``dtype``). Per output element, with
    eps of ``dtype``, u of fp32, M = max |data| and S = sum |data| over the reduced dims:

    * max/min: exact; else eps |ref| + element_rtol M;
    * sum: eps |ref| (the final rounding); else also (element_rtol + 32 u) S;
    * var_mean: eps |ref| + (element_rtol + 256 u) M for the mean, M^2 (twice element_rtol)
      for the variance: a bound of a Welford accumulation in fp32 on these sizes.
    """
    dims = list(dims)
    refs = reference(op, data, dims, keepdim)
    assert len(outs) == len(refs), f"{op}: {len(outs)} outputs, expected {len(refs)}"
    eps = torch.finfo(dtype).eps
    u = torch.finfo(torch.float32).eps
    el = element_rtol or 0.0
    mag = data.abs().amax(dims, keepdim=keepdim)
    total = data.abs().sum(dims, keepdim=keepdim)
    for k, (out, ref) in enumerate(zip(outs, refs)):
        assert out.dtype == dtype, f"{op} output {k}: dtype {out.dtype}, expected {dtype}"
        assert tuple(out.shape) == tuple(ref.shape), (
            f"{op} output {k}: shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
        )
        if op in ("max", "min"):
            rtol, atol = (0.0, 0.0) if element_rtol is None else (eps, el * mag)
        elif op == "sum":
            extra = 0.0 if element_rtol is None else el + 32 * u
            rtol, atol = eps, extra * total
        elif k == 0:
            rtol, atol = eps, (2 * el + 256 * u) * mag * mag
        else:
            rtol, atol = eps, (el + 256 * u) * mag
        got = out.cpu().double()
        allowed = rtol * ref.abs() + atol
        both_nan = got.isnan() & ref.isnan()
        bad = ~both_nan & ~((got - ref).abs() <= allowed)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise AssertionError(
                f"{op} output {k}: {int(bad.sum())} of {bad.numel()} elements off; first at "
                f"{idx}: got {got[idx].item()!r}, expected {ref[idx].item()!r} "
                f"(allowed {allowed[idx].item():.3g})"
            )


def nontrivial(x: torch.Tensor) -> list[int]:
    """Dims of ``x`` that take memory: extent > 1 and a nonzero stride."""
    return [d for d in range(x.dim()) if x.shape[d] > 1 and x.stride(d) != 0]


def dense_strides(
    shape: Sequence[int], order: Sequence[int], expanded: Sequence[int] = ()
) -> tuple[int, ...]:
    """Strides of a dense tensor whose dims lie in ``order`` (outermost first); expanded
    dims get stride 0 and do not grow the running stride."""
    strides, running = [0] * len(shape), 1
    for d in reversed(order):
        if d in expanded:
            continue
        strides[d] = running
        running *= shape[d]
    return tuple(strides)


def output_dims(rank: int, reduced: Sequence[int], keepdim: bool) -> list[int]:
    """The input dim behind each output dim."""
    return list(range(rank)) if keepdim else [d for d in range(rank) if d not in reduced]


def expected_order(
    x: torch.Tensor, reduced: Sequence[int], keepdim: bool, pinned: Sequence[int] | None
) -> list[int]:
    """Output dims outermost first: the pinned order, else the input's relative memory
    order of the kept axes (the others, all size 1 or stride 0, are placed outermost)."""
    if pinned is not None:
        n = len(pinned)
        return sorted(range(n), key=lambda j: -pinned[j])
    src = output_dims(x.dim(), reduced, keepdim)
    mem = sorted(range(x.dim()), key=lambda d: -x.stride(d))  # stable: ties keep order
    mapped = [src.index(d) for d in mem if d in nontrivial(x) and d in src and d not in reduced]
    return [j for j in range(len(src)) if j not in mapped] + mapped


def assert_layout(
    out: torch.Tensor,
    x: torch.Tensor,
    reduced: Sequence[int],
    keepdim: bool,
    pinned: Sequence[int] | None,
) -> None:
    """``out``'s strides are dense in the expected order (size-1 dims' strides are free)."""
    src = output_dims(x.dim(), reduced, keepdim)
    expanded = [
        j for j, d in enumerate(src) if d not in reduced and x.stride(d) == 0 and x.shape[d] > 1
    ]
    order = expected_order(x, reduced, keepdim, pinned)
    want = dense_strides(out.shape, order, expanded)
    got = out.stride()
    bad = [j for j in range(out.dim()) if out.shape[j] > 1 and got[j] != want[j]]
    kind = "pinned" if pinned is not None else "inferred"
    assert not bad, (
        f"{kind} output layout: strides {got} (shape {tuple(out.shape)}), "
        f"expected {want} (order {order}, outermost first)"
    )


def collapse(kinds: str) -> str:
    """Runs of equal kinds merged: "RRXR" -> "RXR"."""
    return "".join(k for k, _ in itertools.groupby(kinds))


def read_pattern(x: torch.Tensor, reduced: Sequence[int]) -> str:
    """Kinds (R reduced / X kept) of the input's dims that take memory, innermost first."""
    dims = sorted(nontrivial(x), key=lambda d: (x.stride(d), -d))
    return collapse("".join("R" if d in reduced else "X" for d in dims))


def family_of(pattern: str) -> str:
    if "R" not in pattern:
        return "pointwise"
    if pattern.startswith("R") and "XR" not in pattern:
        return "inner"
    if pattern.startswith("X") and "RX" not in pattern:
        return "outer"
    return "mixed"


def reduction_params(schedule) -> list:
    return [p for p in as_list(schedule) if hasattr(p, "family")]


def assert_family(schedule, x: torch.Tensor, reduced: Sequence[int]) -> None:
    """The read side of the schedule follows the input's memory order.

    The innermost dim that takes memory decides inner vs outer; when no dim is expanded
    (no convention about where a stride-0 dim sits), the collapsed pattern must also
    equal the input's, and the family follow from it.
    """
    dims = sorted(nontrivial(x), key=lambda d: (x.stride(d), -d))
    if not any(d in reduced for d in dims):
        return  # only size-1 or stride-0 dims reduced: no read to classify
    params = reduction_params(schedule)
    assert params, f"no reduction kernel in the schedule {schedule}"
    has_expanded = any(x.stride(d) == 0 and x.shape[d] > 1 for d in range(x.dim()))
    want = read_pattern(x, reduced)
    for p in params:
        where = f"{p.family}/{p.pattern} for strides {x.stride()}, reduced {list(reduced)}"
        if dims and dims[0] in reduced:
            assert p.family in ("inner", "mixed") and p.pattern.startswith("R"), (
                f"innermost input dim {dims[0]} is reduced, schedule reads {where}"
            )
        elif dims:
            assert p.family in ("outer", "mixed") and p.pattern.startswith("X"), (
                f"innermost input dim {dims[0]} is kept, schedule reads {where}"
            )
        if not has_expanded:
            assert collapse(p.pattern) == want, f"pattern: expected {want}, got {where}"
            assert p.family == family_of(want), f"family: expected {family_of(want)}, {where}"


# --- running one case -------------------------------------------------------------------------
def define_reduction(fd: FusionDefinition, t, op: str, dims: Sequence[int], keepdim: bool):
    if op == "var_mean":
        return list(fd.ops.var_mean(t, dims=list(dims), correction=1, keepdim=keepdim))
    return [getattr(fd.ops, op)(t, dims=list(dims), keepdim=keepdim)]


def pinned_order(output: str, alloc: Sequence[int], reduced: Sequence[int]) -> list[int] | None:
    """stride_order for ``add_output``: None (inferred), row-major, or the reverse of the
    input's memory order of the kept axes."""
    kept = [d for d in range(len(alloc)) if d not in reduced]
    n = len(kept)
    if output == "inferred" or n == 0:
        return None
    if output == "row_major":
        return list(range(n - 1, -1, -1))
    reversed_alloc = [kept.index(d) for d in reversed(alloc) if d in kept]
    return [n - 1 - reversed_alloc.index(j) for j in range(n)]


def dense_problem(sizes: Sequence[int], kinds: str, dtype: IrType = IrType.Float) -> Problem:
    """A one-input reduction problem: groups innermost first (``kinds``: ``X`` kept, ``R``
    reduced), the input dense in that order, the store dense over the kept groups in the
    same order."""
    load, store, running, out = [], [], 1, 1
    for n, kind in zip(sizes, kinds):
        load.append(running)
        running *= n
        store.append(out if kind == "X" else 0)
        out *= n if kind == "X" else 1
    groups = tuple(
        Group(n, kind == "R", (ls, st), (k,))
        for k, (n, ls, st, kind) in enumerate(zip(sizes, load, store, kinds))
    )
    return Problem(groups, 1, 1, (dtype, dtype), (running, out))
