"""The pointwise layout sweep's cases, tensors, fusions and layout oracle.

Used by ``tests/schedulers/test_pointwise_sweep.py`` (the sweep, and its docstring says
what is checked) and by ``tests/codegen/test_pointwise_ptx.py`` (a sample compiled for
sm_90).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import pytest
import torch

from layoutfuse.nvfuser import FusionDefinition

F32, BF16 = torch.float32, torch.bfloat16
SHAPES = {2: (37, 19), 3: (7, 11, 13), 4: (3, 5, 7, 9)}
KINDS = ("copy", "add", "permute", "permute_add", "broadcast_add")
VARIANTS = ("dense", "size1", "expanded", "sliced")
OUTPUTS = ("row_major", "inferred", "reverse")
PLACES = ("inner", "outer")  # which physical dim a variant changes
SAMPLE_SEED = 20240607
PER_STRATUM = 2  # default run: 420 of the 6720 cases
BIAS_DIM = 1  # broadcast_add: the bias lies along logical dim 1


# --- cases -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    kind: str
    rank: int
    order: tuple[int, ...]  # the input's logical dims, outermost first in memory
    variant: str
    place: str  # "inner" or "outer": the dim the variant changes
    output: str
    dtype: torch.dtype

    @property
    def id(self) -> str:
        order = "".join(map(str, self.order))
        variant = self.variant if self.variant == "dense" else f"{self.variant}_{self.place}"
        return (
            f"{self.kind}-r{self.rank}-o{order}-{variant}-{self.output}-"
            f"{str(self.dtype).removeprefix('torch.')}"
        )

    @property
    def special_dim(self) -> int:
        """The logical dim the variant changes: the innermost or outermost in memory."""
        return self.order[-1] if self.place == "inner" else self.order[0]

    @property
    def perm(self) -> tuple[int, ...]:
        """The permute of the permute kinds: a rotation (a transpose at rank 2)."""
        return tuple(range(1, self.rank)) + (0,)


def all_cases() -> list[Case]:
    cases = []
    for kind, rank, output, dtype in itertools.product(KINDS, SHAPES, OUTPUTS, (F32, BF16)):
        for order in itertools.permutations(range(rank)):
            for variant in VARIANTS:
                for place in ("inner",) if variant == "dense" else PLACES:
                    cases.append(Case(kind, rank, order, variant, place, output, dtype))
    return cases


def sample_cases(cases: list[Case]) -> set[Case]:
    """``PER_STRATUM`` cases per (kind, variant, place, output, dtype), rank and order drawn
    with a fixed seed: every combination of those is seen in the default run."""
    rng = random.Random(SAMPLE_SEED)
    strata: dict[tuple, list[Case]] = {}
    for c in cases:
        strata.setdefault((c.kind, c.variant, c.place, c.output, c.dtype), []).append(c)
    chosen = set()
    for _, group in sorted(strata.items(), key=lambda kv: str(kv[0])):
        chosen.update(rng.sample(group, PER_STRATUM))
    return chosen


ALL_CASES = all_cases()
SAMPLE = sample_cases(ALL_CASES)


# --- building tensors ---------------------------------------------------------------------------------
def laid_out(shape, order, dtype, seed: int) -> torch.Tensor:
    """A dense tensor of logical ``shape`` whose dims lie in memory in ``order`` (outermost
    first)."""
    g = torch.Generator().manual_seed(seed)
    physical = torch.randn([shape[d] for d in order], generator=g).to(dtype)
    return physical.permute([order.index(d) for d in range(len(shape))])


def make_input(case: Case, seed: int = 0) -> torch.Tensor:
    """The variant input: dense in ``case.order``, or with a size-1, an expanded or a sliced
    (stride doubled, offset one element) dim at ``case.special_dim``."""
    shape, d = list(SHAPES[case.rank]), case.special_dim
    if case.variant == "dense":
        return laid_out(shape, case.order, case.dtype, seed)
    if case.variant == "size1":
        shape[d] = 1
        return laid_out(shape, case.order, case.dtype, seed)
    if case.variant == "expanded":
        one = shape.copy()
        one[d] = 1
        return laid_out(one, case.order, case.dtype, seed).expand(shape)
    big = shape.copy()
    big[d] = 2 * shape[d]
    index = [slice(None)] * case.rank
    index[d] = slice(1, None, 2)
    x = laid_out(big, case.order, case.dtype, seed)[tuple(index)]
    assert tuple(x.shape) == tuple(shape) and not x.is_contiguous()
    return x


def is_broadcast(t: torch.Tensor, d: int) -> bool:
    return t.shape[d] == 1 or t.stride(d) == 0


# --- fusions ------------------------------------------------------------------------------------------------
@dataclass
class Tensors:
    """A case in torch: its inputs, the expected value, how each input's dims map to output
    dims, and the input an unpinned output is a view of (None if it is computed)."""

    inputs: list[torch.Tensor]
    expected: torch.Tensor
    refs: list[tuple[torch.Tensor, list[int]]]
    view_of: torch.Tensor | None = None


def pin(case: Case) -> list[int] | None:
    n = case.rank
    return {"row_major": list(range(n - 1, -1, -1)), "reverse": list(range(n)), "inferred": None}[
        case.output
    ]


def make_tensors(case: Case) -> Tensors:
    x = make_input(case, seed=1)
    compute, perm, identity = x.float(), list(case.perm), list(range(case.rank))
    permuted = [perm.index(i) for i in range(case.rank)]
    if case.kind == "copy":
        t = Tensors([x], compute, [(x, identity)], view_of=x)
    elif case.kind == "permute":
        t = Tensors([x], compute.permute(perm), [(x, permuted)], view_of=x)
    elif case.kind == "permute_add":
        t = Tensors([x], compute.permute(perm) + 1.0, [(x, permuted)])
    elif case.kind == "add":
        y = laid_out(list(x.shape), case.order, case.dtype, seed=2)
        t = Tensors([x, y], compute + y.float(), [(x, identity), (y, identity)])
    else:  # broadcast_add: x + a bias along BIAS_DIM
        bias = laid_out([x.shape[BIAS_DIM]], [0], case.dtype, seed=3)
        view = [1] * case.rank
        view[BIAS_DIM] = -1
        t = Tensors(
            [x, bias], compute + bias.float().view(view), [(x, identity), (bias, [BIAS_DIM])]
        )
    t.expected = t.expected.to(case.dtype)
    return t


def define(case: Case, inputs: list[torch.Tensor]) -> FusionDefinition:
    """The case's fusion, over handles defined from ``inputs``."""
    perm = list(case.perm)
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(x) for x in inputs]
        tx = handles[0]
        out = {
            "copy": lambda: fd.ops.set(tx),
            "permute": lambda: fd.ops.permute(tx, perm),
            "permute_add": lambda: fd.ops.add(fd.ops.permute(tx, perm), fd.define_scalar(1.0)),
            "add": lambda: fd.ops.add(tx, handles[-1]),
            "broadcast_add": lambda: fd.ops.add(
                tx, fd.ops.broadcast_in_dim(handles[-1], tx.shape(), [BIAS_DIM])
            ),
        }[case.kind]()
        fd.add_output(out, stride_order=pin(case))
    return fd


# --- the layout oracle ---------------------------------------------------------------------------------
def allocation_order(t: torch.Tensor) -> list[int]:
    """``t``'s dims outermost first as nvFuser's computeTensorDescriptor orders them: by
    decreasing stride, stride-0 dims at their logical position."""
    dims = sorted((d for d in range(t.dim()) if t.stride(d) != 0), key=lambda d: -t.stride(d))
    for d in range(t.dim()):
        if t.stride(d) == 0:
            dims.insert(d, d)
    return dims


def output_broadcast_dims(out_shape, refs) -> set[int]:
    """Output dims where every input is broadcast (size 1 or stride 0)."""
    covered = {o for t, to_out in refs for d, o in enumerate(to_out) if not is_broadcast(t, d)}
    return {d for d in range(len(out_shape)) if d not in covered}


def expected_order(out_shape, refs) -> list[int]:
    """nvFuser's allocation order inference for a pointwise output, outermost first.

    The references are the inputs with the most non-broadcast dims. Each is walked from its
    innermost dim outward; a non-broadcast dim maps to its output dim, a broadcast dim is
    skipped (nvFuser's exact map never maps a broadcast to a concrete dim). Unmapped output
    dims go outermost in logical order. Tied references that disagree give row-major.
    """
    rank = len(out_shape)
    count = {id(t): sum(not is_broadcast(t, d) for d in range(t.dim())) for t, _ in refs}
    best = max(count.values())
    orders = set()
    for t, to_out in refs:
        if count[id(t)] != best:
            continue
        walk = [to_out[d] for d in reversed(allocation_order(t)) if not is_broadcast(t, d)]
        if not walk:
            return list(range(rank))
        orders.add(tuple(d for d in range(rank) if d not in walk) + tuple(reversed(walk)))
    return list(orders.pop()) if len(orders) == 1 else list(range(rank))


def output_expanded_dims(out_shape, refs) -> set[int]:
    """Output dims that stay expanded: size > 1, and every input broadcast there."""
    return {d for d in output_broadcast_dims(out_shape, refs) if out_shape[d] > 1}


def dense_strides(shape, order, expanded=()) -> list[int]:
    """Strides of a tensor dense in ``order`` (outermost first); expanded dims get 0."""
    strides, running = [0] * len(shape), 1
    for d in reversed(order):
        if d in expanded:
            continue
        strides[d] = running
        running *= max(shape[d], 1)
    return strides


def significant(strides, shape) -> list[int]:
    return [s for s, n in zip(strides, shape) if n > 1]


def assert_strides(out: torch.Tensor, expected, what: str) -> None:
    got, want = significant(out.stride(), out.shape), significant(expected, out.shape)
    assert got == want, (
        f"{what}: strides {tuple(out.stride())} (shape {tuple(out.shape)}), "
        f"expected {tuple(expected)} on the dims of size > 1"
    )


def same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def case_param(case: Case, full: bool = False):
    """``case`` as a pytest param, marked ``full`` if asked."""
    marks = [pytest.mark.full] if full else []
    return pytest.param(case, id=case.id, marks=marks)


def sweep_params() -> list:
    """Every case; those outside the seeded sample are marked ``full``."""
    return [case_param(c, full=c not in SAMPLE) for c in ALL_CASES]


# --- running a case ---------------------------------------------------------------------------------------
@dataclass
class Run:
    fd: FusionDefinition
    tensors: Tensors
    out: torch.Tensor


def run_case(case: Case) -> Run:
    t = make_tensors(case)
    fd = define(case, t.inputs)
    (out,) = fd.execute(t.inputs)
    return Run(fd, t, out)


def check_case(case: Case) -> None:
    r = run_case(case)
    t, out = r.tensors, r.out
    assert out.dtype == case.dtype and out.shape == t.expected.shape
    torch.testing.assert_close(out, t.expected)
    shape = tuple(out.shape)
    order = pin(case)
    if order is not None:
        alloc = sorted(range(case.rank), key=lambda d: -order[d])  # outermost first
        assert not any(same_storage(out, x) for x in t.inputs), "a pinned output is a copy"
        assert_strides(
            out,
            dense_strides(shape, alloc, output_expanded_dims(shape, t.refs)),
            f"pinned stride_order={order}",
        )
    elif t.view_of is not None:
        assert same_storage(out, t.view_of), "a pure view of an input must come back as a view"
        want = t.view_of.permute(list(case.perm)) if case.kind == "permute" else t.view_of
        assert out.data_ptr() == want.data_ptr()
        assert_strides(out, want.stride(), "view")
    else:
        assert not any(same_storage(out, x) for x in t.inputs)
        alloc = expected_order(shape, t.refs)
        assert_strides(
            out,
            dense_strides(shape, alloc, output_expanded_dims(shape, t.refs)),
            f"inferred order {alloc}",
        )
