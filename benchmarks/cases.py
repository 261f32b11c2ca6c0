"""Benchmark cases as data: one frozen :class:`Case` per measurement, and the suites.

A memory order lists logical dims from outermost to innermost in memory, as in the
anchors' ``memABC`` names: ``(1, 0)`` is a column-major matrix. Case names follow
``/work/shared/anchors`` (``sweep_mem021_sum12``, ``pinned_...``, ``bf16_...``,
``seed_...``, ``norm_...``) so that rows can be set beside the anchor figures.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

OPS = (
    "sum",
    "max",
    "var_mean",
    "softmax",
    "log_softmax",
    "layernorm",
    "rmsnorm",
    "var_sums",
    "copy",
    "add",
    "chain",
)
REDUCING_OPS = ("sum", "max", "var_mean", "var_sums")  # the output drops ``dims``
TWO_OUTPUTS = ("var_mean",)  # (var, mean)
TIMINGS = ("device", "host")
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Case:
    """One measurement.

    ``dims`` are the reduced dims of a sum, or the normalized dim of softmax and
    layer norm, in the logical dims of the op's operand (after ``view``). ``var_sums``
    is the variance over ``dims`` from two sums, ``E[x^2] - E[x]^2``: two reductions of
    the same rows (siblings), one read.
    ``out_order`` pins the output's memory order (in the output's logical dims);
    ``None`` leaves the layout to each system. ``view`` = (permutation, new shape) is
    applied to the input before the op (the seed's permuted reshape). ``timing`` is
    ``"device"`` (kernel time) or ``"host"`` (end to end through each system's call).
    ``chain`` is ``tanh(x / 2) * x + 1``, pointwise. ``var_mean`` (correction 1) has two
    outputs, both in ``out_order`` when it is pinned.

    ``slice = (dim, start, step)`` makes the inputs views ``x[start::step]`` along
    ``dim`` of a dense tensor in ``order`` (strided reads); ``expand`` is a dim whose
    extent the last input broadcasts (stored with extent 1, stride 0: a bias-like
    operand for ``add``).
    """

    name: str
    group: str
    op: str
    shape: tuple[int, ...]
    order: tuple[int, ...]
    dtype: str = "float32"
    dims: tuple[int, ...] = ()
    out_order: tuple[int, ...] | None = None
    view: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    timing: str = "device"
    slice: tuple[int, int, int] | None = None
    expand: int | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS or self.timing not in TIMINGS or self.dtype not in TORCH_DTYPES:
            raise ValueError(
                f"case {self.name}: op, timing or dtype not one of {OPS}, "
                f"{TIMINGS}, {tuple(TORCH_DTYPES)}"
            )

    @property
    def torch_dtype(self) -> torch.dtype:
        return TORCH_DTYPES[self.dtype]

    @property
    def n_inputs(self) -> int:
        return 2 if self.op == "add" else 1

    @property
    def operand_shape(self) -> tuple[int, ...]:
        return self.view[1] if self.view else self.shape

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.op in REDUCING_OPS:
            return tuple(s for d, s in enumerate(self.operand_shape) if d not in self.dims)
        return self.operand_shape

    @property
    def n_outputs(self) -> int:
        return 2 if self.op in TWO_OUTPUTS else 1

    def parent_shape(self) -> tuple[int, ...]:
        """The logical shape of the dense tensor an input is a view of."""
        shape = list(self.shape)
        if self.slice is not None:
            dim, start, step = self.slice
            shape[dim] = start + (shape[dim] - 1) * step + 1 if shape[dim] else start
        return tuple(shape)

    @property
    def input_bytes(self) -> int:
        """The storage the inputs occupy (a sliced input's whole parent; an expanded
        input's one copy of the broadcast dim)."""
        per_input = math.prod(self.parent_shape()) * self.torch_dtype.itemsize
        total = self.n_inputs * per_input
        if self.expand is not None and self.shape[self.expand]:
            total -= per_input - per_input // self.shape[self.expand]
        return total

    @property
    def bytes_moved(self) -> int:
        """The elements the inputs hold (each distinct one read once: an expanded input
        counts its stored extent, a sliced one its view) plus the outputs written once."""
        item = self.torch_dtype.itemsize
        elems = math.prod(self.shape)
        read = self.n_inputs * elems
        if self.expand is not None and self.shape[self.expand]:
            read -= elems - elems // self.shape[self.expand]
        written = self.n_outputs * math.prod(self.out_shape)
        return (read + written) * item

    def shrinkable_dims(self) -> list[int]:
        """Input dims whose size may change: all of them, or with a view the leading
        dims that its reshape leaves as they are."""
        if self.view is None:
            return list(range(len(self.shape)))
        perm, new_shape = self.view
        dims = []
        for d, size in zip(perm, new_shape):
            if self.shape[d] != size:
                break
            dims.append(d)
        return dims

    def shrunk(self, factor: int) -> Case:
        """The case with up to ``factor`` times fewer elements: the largest shrinkable
        dim is halved until the factor is used up or every such dim is below 4."""
        shape = list(self.shape)
        free = self.shrinkable_dims()
        while factor > 1:
            candidates = [d for d in free if shape[d] >= 4]
            if not candidates:
                break
            d = max(candidates, key=lambda d: shape[d])
            shape[d] //= 2
            factor //= 2
        view = self.view
        if view is not None:
            perm, new_shape = view
            kept = len(free)
            view = (perm, tuple(shape[perm[i]] if i < kept else n for i, n in enumerate(new_shape)))
        return dataclasses.replace(self, shape=tuple(shape), view=view)


def order_tag(order: tuple[int, ...]) -> str:
    return "mem" + "".join(map(str, order))


def dims_tag(dims: tuple[int, ...]) -> str:
    return "".join(map(str, dims))


def reversed_kept_order(order: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    """The output order the anchors pin: the input's memory order of the kept dims,
    reversed, renumbered in the output's logical dims."""
    kept = [d for d in order if d not in dims]
    kept_logical = sorted(kept)
    return tuple(kept_logical.index(d) for d in reversed(kept))


SWEEP_SHAPE = (256, 512, 1024)
SWEEP_DIMS = [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]


def sweep_cases(group: str, dtype: str, pinned: bool = False) -> list[Case]:
    cases = []
    for order in itertools.permutations(range(3)):
        for dims in SWEEP_DIMS:
            if pinned and len(dims) != 1:
                continue  # a 1-D output has one layout
            out_order = reversed_kept_order(order, dims) if pinned else None
            name = f"{group}_{order_tag(order)}_sum{dims_tag(dims)}"
            cases.append(Case(name, group, "sum", SWEEP_SHAPE, order, dtype, dims, out_order))
    return cases


def seed_cases() -> list[Case]:
    """The seed issue's cases: a column-major sum and its row-major twin (kernel time),
    and two small fusions timed end to end through the host path."""
    permuted = ((0, 2, 1, 3), (16, 128, 2304))
    return [
        Case("seed_colmajor_sum1", "seed", "sum", (16384, 36864), (1, 0), dims=(1,)),
        Case("seed_colmajor_ref_sum0", "seed", "sum", (36864, 16384), (0, 1), dims=(0,)),
        Case(
            "seed_permuted_reshape_sum01",
            "seed_e2e",
            "sum",
            (16, 12, 128, 192),
            (0, 2, 1, 3),
            dims=(0, 1),
            view=permuted,
            timing="host",
        ),
        Case(
            "seed_playground_sum01",
            "seed_e2e",
            "sum",
            (16, 1024, 1024),
            (0, 1, 2),
            dims=(0, 1),
            timing="host",
        ),
    ]


def reduction_cases() -> list[Case]:
    return (
        sweep_cases("sweep", "float32")
        + sweep_cases("bf16", "bfloat16")
        + sweep_cases("pinned", "float32", pinned=True)
        + seed_cases()
    )


NORM_LAYOUTS = [
    ((8192, 8192), (0, 1), 1, "rowmajor_reduce_inner"),
    ((8192, 8192), (1, 0), 1, "colmajor_reduce_outer"),
    ((32, 4096, 4096), (0, 1, 2), 2, "3d_reduce_inner"),
    ((32, 4096, 4096), (0, 2, 1), 2, "3d_reduce_middle"),
    ((64, 262144), (0, 1), 1, "longrow_reduce_inner"),
]


def normalization_cases() -> list[Case]:
    cases = []
    for dtype in ("float32", "bfloat16"):
        for shape, order, dim, tag in NORM_LAYOUTS:
            for op in ("softmax", "layernorm"):
                name = f"norm_{op}_{tag}_{dtype}"
                cases.append(Case(name, op, op, shape, order, dtype, (dim,)))
    for dtype in ("float32", "bfloat16"):  # sibling reductions: sum and sum of squares
        for shape, order, dim, tag in NORM_LAYOUTS[:4]:
            cases.append(
                Case(
                    f"norm_varsums_{tag}_{dtype}",
                    "var_sums",
                    "var_sums",
                    shape,
                    order,
                    dtype,
                    (dim,),
                )
            )
    return cases


# About 512 MiB in fp32 (2**27 elements); bf16 uses the same shapes.
POINTWISE_SHAPES = {2: (8192, 16384), 3: (256, 512, 1024), 4: (32, 64, 256, 256)}


def pointwise_pairs(rank: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(input order, output order) pairs: all of them up to 3-D; for 4-D every input
    order against the row-major output and its reverse."""
    orders = list(itertools.permutations(range(rank)))
    if rank < 4:
        return [(i, o) for i in orders for o in orders]
    row_major = tuple(range(rank))
    return [(i, o) for i in orders for o in (row_major, row_major[::-1])]


def pointwise_cases() -> list[Case]:
    """copy and add (x + y) write the input's layout; permute writes another one."""
    cases = []
    for dtype in ("float32", "bfloat16"):
        for rank, shape in POINTWISE_SHAPES.items():
            for order, out_order in pointwise_pairs(rank):
                src = f"{rank}d_{order_tag(order)}"
                if order == out_order:
                    for op in ("copy", "add"):
                        cases.append(
                            Case(
                                f"{op}_{src}_{dtype}",
                                op,
                                op,
                                shape,
                                order,
                                dtype,
                                out_order=out_order,
                            )
                        )
                else:
                    name = f"permute_{src}_to_{order_tag(out_order)}_{dtype}"
                    cases.append(
                        Case(name, "permute", "copy", shape, order, dtype, out_order=out_order)
                    )
    return cases


SUITES: dict[str, Callable[[], list[Case]]] = {
    "reduction": reduction_cases,
    "pointwise": pointwise_cases,
    "normalization": normalization_cases,
    "seed": seed_cases,
}
