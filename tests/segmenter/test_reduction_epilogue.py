"""A reduction kernel stores its per-row epilogue (issue 15): sibling column sums whose
results are only cast or divided (a layer norm backward's dw and db, cast to bf16 as
Thunder writes them) made a normalization group; where the normalization scheduler
passes on it (columns longer than its tile), its fallback was a reduction kernel, then a
pointwise kernel per cast: 4 kernels for a bf16 layer norm backward. The reduction
kernel now computes the epilogue from its results and stores it with them.

Checked: one reduction kernel (no pointwise one) whose reason names the epilogue;
numbers and output strides against torch for casts to bf16 and fp16, a mean and a var
from a Welford, unsplit, split with the same-launch (ticket) finish and with a finishing
kernel; a row-major and a sliced input; an empty reduced extent (the epilogue
from the fills); an epilogue that reads memory stays a pointwise kernel; sm_90 compiles.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.analysis.device import DeviceInfo
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

# columns past a 64-element tile: the normalization scheduler passes, its fallback runs
SHORT_TILE = dict(normalization=dict(max_tile=64))
# one SM of 8 resident programs and a 4 KB L2: a column's 3000 rows split; past the L2
# (ticket_steps 0) the partials take a finishing kernel
ONE_SM = DeviceInfo("cpu", 1, 2048, 1 << 12, 65536)
NVF = {torch.bfloat16: DataType.BFloat16, torch.float16: DataType.Half}


def _backward_sums(g, x, out_dtype, extra_output=False):
    """db = sum(g, 0), dw = sum(g * x, 0), each cast to ``out_dtype``; ``extra_output``: db
    in fp32 too (a result stored as it is, beside its cast)."""
    with FusionDefinition() as fd:
        tg, tx = fd.from_pytorch(g), fd.from_pytorch(x)
        db = fd.ops.sum(tg, dims=[0])
        dw = fd.ops.sum(fd.ops.mul(tg, tx), dims=[0])
        fd.add_output(fd.ops.cast(db, NVF[out_dtype]))
        fd.add_output(fd.ops.cast(dw, NVF[out_dtype]))
        if extra_output:
            fd.add_output(db)
    return fd


def _check_one_reduction_kernel(fd, n_kernels=1):
    runs = fd.executor().last_run.segments
    assert [r.scheduler for r in runs] == ["reduction"], [(r.scheduler, r.reason) for r in runs]
    assert "epilogue" in runs[0].reason
    assert len(runs[0].kernels) == n_kernels
    return runs[0].params


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("layout", ["row", "sliced"])
@pytest.mark.parametrize(
    "split", ["unsplit", "ticket", "kernel"], ids=lambda s: f"finish-{s}" if s != "unsplit" else s
)
def test_cast_epilogue_in_the_reduction_kernel(out_dtype, layout, split):
    n, h = (300 if split == "unsplit" else 3000), 24  # 3000 rows split on one SM
    gen = torch.Generator().manual_seed(0)
    g, x = (torch.randn(n, h, generator=gen) for _ in range(2))
    if layout == "sliced":  # every other column of [n, 2 h]
        g, x = (torch.randn(n, 2 * h, generator=gen)[:, ::2] for _ in range(2))
    fd = _backward_sums(g, x, out_dtype, extra_output=layout == "row")
    tuning = DEFAULT.with_fields(**SHORT_TILE)
    if split == "kernel":
        tuning = tuning.with_fields(reduction=dict(ticket_steps=0))
    configured(fd, tuning=tuning, target=ONE_SM if split != "unsplit" else None)
    for _ in range(2):  # planned, then replayed
        outs = fd.execute([g, x])
        db, dw = g.double().sum(0), (g.double() * x.double()).sum(0)
        torch.testing.assert_close(outs[0], db.to(out_dtype), rtol=1e-2, atol=1e-2)
        torch.testing.assert_close(outs[1], dw.to(out_dtype), rtol=1e-2, atol=1e-2)
        assert outs[0].dtype == out_dtype and outs[0].shape == (h,)
        if layout == "row":
            torch.testing.assert_close(outs[2], db.float(), rtol=1e-5, atol=1e-4)
    params = _check_one_reduction_kernel(fd, 2 if split == "kernel" else 1)
    assert (params.split > 1) is (split != "unsplit"), params
    if split != "unsplit":
        assert params.finish == split
    (art, *_) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx


def test_mean_and_var_epilogue_of_a_welford():
    """var_mean over dim 0 of a column-major [257, 9]: the var (M2 / (n - 1)) and the mean
    are computed from the Welford's results in the reduction kernel."""
    x = torch.randn(9, 257).t()
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        var, mean = fd.ops.var_mean(t, dims=[0], correction=1)
        fd.add_output(var)
        fd.add_output(fd.ops.mul(mean, fd.define_scalar(2.0)))
    configured(fd, tuning=DEFAULT.with_fields(**SHORT_TILE))
    var, mean2 = fd.execute([x])
    torch.testing.assert_close(var, x.double().var(0).float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mean2, 2 * x.double().mean(0).float(), rtol=1e-5, atol=1e-5)
    _check_one_reduction_kernel(fd)


def test_empty_reduced_extent_fills_then_runs_the_epilogue():
    """Over 0 rows: the sums are 0 (the fill), their casts 0; a mean 0 / 0 is NaN."""
    g, x = torch.randn(0, 5), torch.randn(0, 5)
    with FusionDefinition() as fd:
        tg, tx = fd.from_pytorch(g), fd.from_pytorch(x)
        s = fd.ops.sum(tg, dims=[0])
        s2 = fd.ops.sum(fd.ops.mul(tg, tx), dims=[0])
        fd.add_output(fd.ops.cast(s, DataType.BFloat16))
        fd.add_output(fd.ops.div(s2, fd.define_scalar(0.0)))
    configured(fd, tuning=DEFAULT.with_fields(**SHORT_TILE))
    a, b = fd.execute([g, x])
    assert a.dtype == torch.bfloat16 and torch.equal(a, torch.zeros(5, dtype=torch.bfloat16))
    assert torch.isnan(b).all()


def test_an_epilogue_reading_memory_stays_a_pointwise_kernel():
    """db + bias (a per-row input): not computable from the results alone."""
    g, x, bias = torch.randn(300, 24), torch.randn(300, 24), torch.randn(24)
    with FusionDefinition() as fd:
        tg, tx, tb = fd.from_pytorch(g), fd.from_pytorch(x), fd.from_pytorch(bias)
        db = fd.ops.sum(tg, dims=[0])
        dw = fd.ops.sum(fd.ops.mul(tg, tx), dims=[0])
        fd.add_output(fd.ops.add(db, tb))
        fd.add_output(fd.ops.cast(dw, DataType.BFloat16))
    configured(fd, tuning=DEFAULT.with_fields(**SHORT_TILE))
    out, dw = fd.execute([g, x, bias])
    torch.testing.assert_close(out, g.sum(0) + bias, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(dw, (g * x).sum(0).bfloat16(), rtol=1e-2, atol=1e-2)
    kinds = [r.scheduler for r in fd.executor().last_run.segments]
    assert kinds == ["reduction", "pointwise"], kinds


@pytest.mark.parametrize("spanned", [False, True])
def test_epilogue_of_a_stacked_tile(spanned):
    """The epilogue through the outer tile with Y rows stacked (sums over H of [40, 6, 5,
    7] images, as tests/schedulers/test_reduction_stacked.py), or with its columns spanning
    W and the images (``x_span``, tests/schedulers/test_reduction_spanned.py)."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn((40, 6, 5, 7), generator=gen)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s = fd.ops.sum(t, dims=[2])
        s2 = fd.ops.sum(fd.ops.mul(t, t), dims=[2])
        fd.add_output(fd.ops.cast(s, DataType.BFloat16))
        fd.add_output(fd.ops.mul(s2, fd.define_scalar(0.5)))
    fields = dict(
        normalization=dict(max_tile=4), reduction=dict(span_row_bytes=64 if spanned else 0)
    )
    configured(fd, tuning=DEFAULT.with_fields(**fields), target=DeviceInfo("cpu", 2, 256, 1 << 20))
    for _ in range(2):
        a, b = fd.execute([x])
        torch.testing.assert_close(a, x.double().sum(2).bfloat16(), rtol=1e-2, atol=1e-2)
        torch.testing.assert_close(b, 0.5 * (x.double() ** 2).sum(2).float(), rtol=1e-5, atol=1e-4)
        assert a.stride() == (42, 7, 1)
    params = _check_one_reduction_kernel(fd)
    assert params.template == "outer" and (params.y_group is None) == spanned, params
    assert params.x_span == (2 if spanned else 1), params
    (art, *_) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx
