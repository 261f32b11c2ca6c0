"""A reduction whose input uses other reductions of its rows again, broadcast back over
them, with no full-size output to root a normalization (``segments._chained_groups``,
``normalization.chained_group``): a log-sum-exp, as Thunder's cross-entropy forward and
``torch.logsumexp`` compute it (the max, the sum of ``exp(x - max)``, its log, plus the
max), is one normalization kernel that stores per-row results, where the max was a
reduction kernel of its own and the sum read every row a second time.

Checked: the plan (one normalization kernel: the max and the sum an online pair on the
looped path, one read), the values against ``torch.logsumexp`` over the inner and the
outer dim in every memory order of a 3-D input, fp32 and bf16, persistent and looped; a
reduction over other coordinates (the min over a keepdim result's rows of one element)
is not chained.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules, small_gpu
from support.tensors import with_order

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

NVF = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}


def _logsumexp(x: torch.Tensor, dim: int) -> FusionDefinition:
    """log(sum(exp(x - max))) + max over ``dim`` in fp32, and the max: both outputs."""
    fd = FusionDefinition()
    with fd:
        t = fd.ops.cast(fd.from_pytorch(x), DataType.Float)
        mx = fd.ops.max(t, dims=[dim], keepdim=False)
        keep = [d for d in range(x.dim()) if d != dim]
        back = fd.ops.broadcast_in_dim(mx, shape=fd.ops.shape(t), broadcast_dims=keep)
        s = fd.ops.sum(fd.ops.exp(fd.ops.sub(t, back)), dims=[dim], keepdim=False)
        fd.add_output(fd.ops.add(fd.ops.log(s), mx))
        fd.add_output(mx)
    return fd


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("dim", [2, 0])
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_logsumexp_is_one_normalization_kernel(order, dim, dtype):
    x = (with_order((3, 5, 37), order, dtype) * 4).to(torch.get_default_device())
    fd = _logsumexp(x, dim)
    lse, mx = fd.execute([x])
    torch.testing.assert_close(lse, torch.logsumexp(x.float(), dim))
    torch.testing.assert_close(mx, x.float().amax(dim))
    (seg,) = fd.segment([x])
    assert seg["scheduler"] == "normalization" and seg["ops"].count("max") == 1, seg
    assert "each used again by the next on its rows" in seg["reason"], seg


def test_long_rows_accumulate_the_max_and_the_sum_online():
    """Rows longer than a tile: the looped kernel takes the max and the sum of exponentials
    in one pass (an online pair), then stores the per-row results: one read of the rows."""
    x = torch.randn(6, 90, device=torch.get_default_device()) * 8
    tuning = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_tile=32))
    fd = configured(_logsumexp(x, 1), tuning=tuning, target=small_gpu(4))
    lse, mx = fd.execute([x])
    torch.testing.assert_close(lse, torch.logsumexp(x, 1))
    (params,) = schedules(fd)
    assert params.mode == "looped" and params.passes == 1, params
    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx


def test_a_reduction_over_other_rows_is_not_chained():
    """``min`` over a keepdim mean's row of one element reaches the mean but not its rows:
    the mean's kernel and the min's stay apart, and the values are torch's."""
    x = torch.randn(4, 7, device=torch.get_default_device())
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        mean = fd.ops.sum(t, dims=[1], keepdim=True)
        fd.add_output(fd.ops.min(fd.ops.mul(mean, fd.define_scalar(2.0)), dims=[1], keepdim=True))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, 2 * x.sum(1, keepdim=True))
    assert not any("each used again" in s["reason"] for s in fd.segment([x]))


def _cross_entropy_forward(logits: torch.Tensor, target: torch.Tensor) -> FusionDefinition:
    """Thunder's nvFuser cross-entropy forward (``nvfuserex_impl.cross_entropy_fwd``, mean
    reduction, ignore_index -100) as its definition writes it: the loss, the max, the
    log-sum-exp without the max, the count of valid targets."""
    b, t, v = logits.shape
    fd = FusionDefinition()
    with fd:
        x = fd.ops.reshape(fd.from_pytorch(logits), new_shape=[b * t, v])
        tgt = fd.ops.reshape(fd.from_pytorch(target), new_shape=[b * t])
        zero = fd.define_scalar(0.0, dtype=DataType.Float)
        valid = fd.ops.ne(tgt, fd.define_scalar(-100, dtype=DataType.Int))
        where = fd.ops.where(valid, tgt, zero)  # Float: nvFuser's promotion
        picked = fd.ops.take_along_axis(
            x, fd.ops.broadcast_in_dim(where, shape=[b * t, 1], broadcast_dims=[0]), dim=1
        )
        picked = fd.ops.reshape(picked, new_shape=[b * t])
        mx = fd.ops.max(x, dims=[1], keepdim=False)
        back = fd.ops.broadcast_in_dim(mx, shape=[b * t, 1], broadcast_dims=[0])
        lse = fd.ops.log(fd.ops.sum(fd.ops.exp(fd.ops.sub(x, back)), dims=[1], keepdim=False))
        loss = fd.ops.where(valid, fd.ops.neg(fd.ops.sub(fd.ops.sub(picked, mx), lse)), zero)
        count = fd.ops.cast(fd.ops.sum(valid, dims=[0], keepdim=False), DataType.Float)
        fd.add_output(fd.ops.div(fd.ops.sum(loss, dims=[0], keepdim=False), count))
        fd.add_output(mx)
        fd.add_output(lse)
        fd.add_output(count)
    return fd


def test_thunder_cross_entropy_forward_takes_two_kernels():
    """The log-sum-exp of the logits' rows in one kernel; the loss's sum over the rows and
    the count of valid targets (siblings: both reach the reshaped target through pointwise
    ops) with the mean in a second."""
    g = torch.Generator().manual_seed(0)
    dev = torch.get_default_device()
    logits = (torch.randn(2, 8, 50, generator=g) * 3).to(dev)
    target = torch.randint(0, 50, (2, 8), generator=g).to(dev)
    target[0, 3] = -100  # ignored
    fd = _cross_entropy_forward(logits, target)
    loss, mx, lse, count = fd.execute([logits, target])
    flat = logits.reshape(16, 50)
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(flat, target.reshape(-1)))
    torch.testing.assert_close(mx, flat.amax(1))
    torch.testing.assert_close(lse, torch.logsumexp(flat - flat.amax(1, keepdim=True), 1))
    assert count.item() == 15
    segments = fd.segment([logits, target])
    assert [s["scheduler"] for s in segments] == ["normalization", "normalization"], segments
    assert segments[1]["ops"].count("sum") == 2 and "div" in segments[1]["ops"]
