"""A reduction kernel stores only the results some kernel loads or the fusion returns
(``segments._drop_unread_results``): a var_mean's Welford stored its M2 and its int64
count beside the variance computed from them (20 bytes a row where 8 are asked for; over
a short reduced dim, more bytes than it loads), a mean its sum.

Checked, against torch, with the output strides: the kernels' stores (every store of a
pointer argument, in each kernel's source) unsplit, split with the ticket finish and
with a finishing kernel, in every memory order of a rank-3 input and a sliced one; an
empty reduced extent (the epilogue's kernels read fills of the unstored results); a
Welford whose results are returned keeps them; a sum that a later kernel loads stays
stored (the normalization kernel's finer plan); the replay, and sm_90 compiles.
"""

from __future__ import annotations

import itertools
import re

import pytest
import torch

from layoutfuse.analysis.device import DeviceInfo
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

ONE_SM = DeviceInfo("cpu", 1, 2048, 1 << 12, 65536)  # a long reduced dim splits
SHORT_TILE = DEFAULT.with_fields(normalization=dict(max_tile=64))


def _stores(fd) -> list[str]:
    """The pointers each kernel of the last run stores to (``p<k>`` and ``o<k>``: outputs
    and buffers; the workspaces and tickets apart)."""
    runs = fd.executor().last_run.segments
    return [
        m for r in runs for k in r.kernels for m in re.findall(r"tl\.store\(([po]\d+)\b", k.source)
    ]


def _var_mean(x, dims, correction=1):
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.from_pytorch(x), dims=dims, correction=correction)
        fd.add_output(var)
        fd.add_output(mean)
    return fd


ORDERS = list(itertools.permutations(range(3)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "mem" + "".join(map(str, o)))
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_var_mean_stores_its_two_results(order, dim, dtype):
    """A var_mean over a short dim of [23, 7, 5] in every memory order, fp32 and bf16 (its
    results cast back): two stores, where the Welford's M2 and count made four."""
    shape = (23, 7, 5)
    x = torch.randn([shape[d] for d in order]).permute([order.index(d) for d in range(3)])
    x = x.to(dtype)
    assert x.shape == shape
    fd = _var_mean(x, [dim])
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-2, atol=1e-2)
    for _ in range(2):  # planned, then replayed
        var, mean = fd.execute([x])
        assert var.dtype == mean.dtype == dtype
        torch.testing.assert_close(var, x.double().var(dim).to(dtype), **tol)
        torch.testing.assert_close(mean, x.double().mean(dim).to(dtype), **tol)
    (run,) = fd.executor().last_run.segments
    assert run.scheduler in ("reduction", "normalization"), run.reason
    assert len(_stores(fd)) == 2, (_stores(fd), run.params)
    if run.scheduler == "reduction":
        assert run.segment.n_stores == 2 and len(run.segment.unstored) == 2


@pytest.mark.parametrize("finish", ["ticket", "kernel"])
@pytest.mark.parametrize("layout", ["row", "column", "sliced"])
def test_split_var_mean_finishes_two_results(finish, layout):
    """3000 rows (the inner template: 2 columns of 8000) on one SM split; the finish (the
    last program's, or a finishing kernel's) stores the variance and the mean, the
    workspaces hold every partial."""
    gen = torch.Generator().manual_seed(3)
    x = {
        "row": lambda: torch.randn(3000, 24, generator=gen),
        "column": lambda: torch.randn(2, 8000, generator=gen).t(),
        "sliced": lambda: torch.randn(3000, 48, generator=gen)[:, ::2],
    }[layout]()
    fd = _var_mean(x, [0])
    tuning = DEFAULT.with_fields(normalization=dict(max_tile=64))
    if finish == "kernel":
        tuning = tuning.with_fields(reduction=dict(ticket_steps=0))
    configured(fd, tuning=tuning, target=ONE_SM)
    for _ in range(2):
        var, mean = fd.execute([x])
        torch.testing.assert_close(var, x.double().var(0).float(), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(mean, x.double().mean(0).float(), rtol=1e-4, atol=1e-5)
        assert var.stride() == (1,) and mean.stride() == (1,)
    (run,) = fd.executor().last_run.segments
    assert run.scheduler == "reduction" and run.params.split > 1, run.params
    assert run.params.finish == finish
    assert len(run.kernels) == (2 if finish == "kernel" else 1)
    assert len(_stores(fd)) == 2, _stores(fd)
    if layout == "row":  # (a few seconds each)
        for art in compile_last_run(fd.executor()):
            assert ".target sm_90" in art.ptx


def test_a_mean_does_not_store_its_sum():
    """sum(x, 1) / n returned alone: the sum is computed, not stored."""
    x = torch.randn(40, 300)
    with FusionDefinition() as fd:
        s = fd.ops.sum(fd.from_pytorch(x), dims=[1])
        fd.add_output(fd.ops.div(s, fd.define_scalar(300.0)))
    configured(fd, tuning=SHORT_TILE)
    (mean,) = fd.execute([x])
    torch.testing.assert_close(mean, x.mean(1), rtol=1e-5, atol=1e-6)
    assert _stores(fd) == ["p1"], _stores(fd)


def test_returned_welford_results_are_stored():
    """fd.ops.welford's mean, M2 and count returned: all three stored."""
    x = torch.randn(50, 7)
    with FusionDefinition() as fd:
        mean, m2, n = fd.ops.welford(fd.from_pytorch(x), dims=[1])
        for t in (mean, m2, n):
            fd.add_output(t)
    mean, m2, n = fd.execute([x])
    torch.testing.assert_close(mean, x.mean(1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(m2, x.var(1, correction=0) * 7, rtol=1e-5, atol=1e-5)
    assert torch.equal(n, torch.full((50,), 7, dtype=n.dtype))
    assert len(_stores(fd)) == 3, _stores(fd)


def test_empty_reduced_extent_fills_the_unstored_results():
    """A var_mean over 0 rows: no launch; the mean is NaN and the variance NaN (torch's),
    computed by the epilogue's kernels from fills of results the kernel would not store."""
    x = torch.randn(0, 6)
    fd = _var_mean(x, [0])
    configured(fd, tuning=SHORT_TILE)
    for _ in range(2):
        var, mean = fd.execute([x])
        assert var.shape == (6,) and torch.isnan(var).all() and torch.isnan(mean).all()
        ref_var, ref_mean = torch.var_mean(x, 0)
        torch.testing.assert_close(var, ref_var, equal_nan=True)
        torch.testing.assert_close(mean, ref_mean, equal_nan=True)


def test_a_sum_a_later_kernel_loads_stays_stored():
    """x - sum(x, 1) beside sum(x, 1) / n, rows too few to fill the GPU: the normalization
    kernel's finer plan, whose reduction kernel stores the sum (both pointwise kernels
    after it load it)."""
    x = torch.randn(16, 200)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s = fd.ops.sum(t, dims=[1])
        mean = fd.ops.div(s, fd.define_scalar(200.0))
        fd.add_output(fd.ops.sub(t, fd.ops.broadcast_in_dim(s, [16, 200], [0])))
        fd.add_output(mean)
    configured(fd, tuning=SHORT_TILE)
    for _ in range(2):
        centered, mean = fd.execute([x])
        torch.testing.assert_close(centered, x - x.sum(1, keepdim=True), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(mean, x.mean(1), rtol=1e-5, atol=1e-6)
    kinds = [r.scheduler for r in fd.executor().last_run.segments]
    assert kinds == ["reduction", "pointwise", "pointwise"], kinds
    assert fd.executor().last_run.segments[0].segment.unstored == frozenset()
    assert len(_stores(fd)) == 3, _stores(fd)
