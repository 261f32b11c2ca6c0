"""A reduction reads an output that a pointwise kernel stores instead of recomputing it,
where that loads fewer full-size bytes (``segments._reduction_specs``).

Thunder's fp32 MLP backward returns dgelu = dy * gelu'(x + b) and sums it over the rows for
the bias grad: the sum recomputed dgelu from dy and x (two tensors read again, and erf and
exp per element); it now reads the stored dgelu (one tensor), after the pointwise kernel.
A bf16 output (a cast of the fp32 value the sum adds) is not what the sum reads: it
recomputes, as does a reduction whose recompute reads as many bytes (``x * 2`` beside
``sum(x * 2)``). Checked: the loads of the reduction kernel, the run order, and the values
and strides against torch in every memory order of the inputs.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

SHAPE = (4, 6, 40)


def _bias_gelu_backward(dy, x, b, out_dtype):
    fd = FusionDefinition()
    with fd:
        tdy, tx, tb = (fd.ops.cast(fd.from_pytorch(t), DataType.Float) for t in (dy, x, b))
        t = fd.ops.add(tx, fd.ops.broadcast_in_dim(tb, shape=list(SHAPE), broadcast_dims=[2]))
        cdf = fd.ops.mul(
            fd.define_scalar(0.5),
            fd.ops.add(
                fd.define_scalar(1.0), fd.ops.erf(fd.ops.mul(t, fd.define_scalar(0.5**0.5)))
            ),
        )
        pdf = fd.ops.mul(
            fd.ops.exp(fd.ops.mul(fd.define_scalar(-0.5), fd.ops.mul(t, t))),
            fd.define_scalar((2 * torch.pi) ** -0.5),
        )
        g = fd.ops.mul(tdy, fd.ops.add(cdf, fd.ops.mul(t, pdf)))
        fd.add_output(fd.ops.cast(g, out_dtype) if out_dtype is DataType.BFloat16 else g)
        fd.add_output(fd.ops.sum(g, dims=[0, 1]))
    return fd


def _reduction(fd, inputs) -> tuple[int, dict]:
    """(position in run order, description) of the fusion's reduction segment."""
    segments = fd.segment(inputs)
    (i,) = [i for i, s in enumerate(segments) if s["scheduler"] == "reduction"]
    return i, segments[i]


def _laid_out(t: torch.Tensor, order) -> torch.Tensor:
    return t.permute(*order).contiguous().permute(*[order.index(d) for d in range(t.dim())])


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_the_bias_grad_sums_the_stored_dgelu(order):
    g = torch.Generator().manual_seed(0)
    dev = torch.get_default_device()
    dy, x = (_laid_out(torch.randn(SHAPE, generator=g).to(dev), order) for _ in range(2))
    b = torch.randn(SHAPE[2], generator=g).to(dev)
    fd = _bias_gelu_backward(dy, x, b, DataType.Float)
    dgelu, db = fd.execute([dy, x, b])
    want = torch.ops.aten.gelu_backward(dy, x + b)
    torch.testing.assert_close(dgelu, want)
    torch.testing.assert_close(db, want.sum((0, 1)))
    assert dgelu.stride() == want.stride()
    i, red = _reduction(fd, [dy, x, b])
    assert red["ops"] == ["sum"] and i == 1, red  # after the pointwise kernel, no erf
    assert red["reason"].endswith("it reads an output another kernel stores"), red


def test_a_cast_output_is_not_what_the_sum_reads():
    g = torch.Generator().manual_seed(1)
    dev = torch.get_default_device()
    dy, x, b = (torch.randn(s, generator=g).to(dev).bfloat16() for s in (SHAPE, SHAPE, SHAPE[2:]))
    fd = _bias_gelu_backward(dy, x, b, DataType.BFloat16)
    dgelu, db = fd.execute([dy, x, b])
    want = torch.ops.aten.gelu_backward(dy.float(), x.float() + b.float())
    torch.testing.assert_close(dgelu, want.bfloat16())
    torch.testing.assert_close(db, want.sum((0, 1)), rtol=1e-4, atol=1e-4)
    _, red = _reduction(fd, [dy, x, b])
    assert "erf" in red["ops"] and "reads an output" not in red["reason"], red


def test_a_recompute_of_as_many_bytes_stays():
    x = torch.randn(SHAPE, device=torch.get_default_device())
    with FusionDefinition() as fd:
        t = fd.ops.mul(fd.from_pytorch(x), fd.define_scalar(2.0))
        fd.add_output(t)
        fd.add_output(fd.ops.sum(t, dims=[0, 1]))
    out, s = fd.execute([x])
    torch.testing.assert_close(s, (2 * x).sum((0, 1)))
    _, red = _reduction(fd, [x])
    assert red["ops"] == ["mul", "sum"] and "reads an output" not in red["reason"], red
