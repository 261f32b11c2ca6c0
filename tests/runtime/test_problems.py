"""``runtime.problems.build_problem``'s ``math_ops``: the pointwise ops of a segment other
than casts, the length of its kernel's body, which the pointwise scheduler's full blocks
for unaligned rows key on (``PointwiseTuning.unaligned_full_blocks_ops``)."""

from __future__ import annotations

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


def _x(dtype=torch.float32) -> torch.Tensor:
    return torch.randn(6, 10, generator=torch.Generator().manual_seed(0)).to(dtype)


def _math_ops(fd: FusionDefinition, xs: list[torch.Tensor]) -> list[int]:
    fd.execute(xs)
    return [s.problem.math_ops for s in fd.executor().last_run.segments]


def test_a_copy_has_none():
    x = _x()
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.set(fd.from_pytorch(x)), stride_order=[0, 1])
    assert _math_ops(fd, [x]) == [0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_casts_do_not_count(dtype):
    """A bf16 add is computed in Float between casts: still one op."""
    x, y = _x(dtype), _x(dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.from_pytorch(x), fd.from_pytorch(y)))
    assert _math_ops(fd, [x, y]) == [1]


def test_a_chain_counts_each_op():
    """``tanh(x / 2) * x + 1`` (the random suite's chain) and an explicit cast to Half."""
    x = _x()
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        y = fd.ops.add(
            fd.ops.mul(fd.ops.tanh(fd.ops.mul(t, fd.define_scalar(0.5))), t),
            fd.define_scalar(1.0),
        )
        fd.add_output(fd.ops.cast(y, DataType.Half))
    assert _math_ops(fd, [x]) == [4]


def test_a_reduction_counts_its_prologue():
    x = _x()
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(fd.ops.exp(fd.ops.neg(t)), [1]))
    (ops,) = _math_ops(fd, [x])
    assert ops == 2
