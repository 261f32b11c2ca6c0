"""Reductions over extents of 1 only (issue 16): a sum over the size-1 dim of a symbolic
[1, N, 7, 1] input ran as a reduction kernel of one-element rows, whose mask ``x < NX``
kept every access one element wide (26% of the read ceiling where torch reached 81%).
The pointwise scheduler now takes such segments (plain reductions, siblings and
normalization groups alike): each reduction is its row's ``one_element`` of its input,
computed in place, with the pointwise kernel's full tiles and transposed stores.

Checked: the schedule (pointwise, the reduction scheduler's reason), numbers and output
strides against torch for sum, prod, max, min, var_mean, Welford and softmax, in fp32,
bf16, fp16, int32 and Bool, over every memory order of a rank-3 input with a size-1 dim,
sliced and expanded inputs, pinned output orders; a reduced dim that is expanded (stride
0, extent N) is N copies (``Problem.repeat``); 16-byte vectors in the sm_90 PTX.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.codegen.backend import ptx_vector_widths
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import schedules
from support.tensors import with_order

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

_NVF_DTYPES = {
    torch.float32: DataType.Float,
    torch.bfloat16: DataType.BFloat16,
    torch.float16: DataType.Half,
    torch.int32: DataType.Int32,
    torch.bool: DataType.Bool,
}


def _declared(fd, x):
    """``x`` as Thunder declares a dense input: every size symbolic (-1, a size-1 dim too),
    its memory order as ``stride_order``; sliced and expanded inputs as ``from_pytorch``
    describes them."""
    if not _dense(x):
        return fd.from_pytorch(x)
    ranks = sorted(range(x.ndim), key=lambda d: (x.stride(d), -d))
    return fd.define_tensor(
        shape=[-1] * x.ndim,
        contiguity=[True] * x.ndim,
        dtype=_NVF_DTYPES[x.dtype],
        stride_order=[ranks.index(d) for d in range(x.ndim)],
    )


def _dense(x):
    """No gap and no stride 0: a permutation of a contiguous tensor."""
    want = 1
    for d in sorted(range(x.ndim), key=lambda d: (x.stride(d), -d)):
        if x.shape[d] != 1 and x.stride(d) != want:
            return False
        want *= x.shape[d]
    return True


def _define(fd, x, op, dims):
    """``op`` over ``dims`` of ``x`` (``_declared``)."""
    t = _declared(fd, x)
    if op == "var_mean":
        var, mean = fd.ops.var_mean(t, dims=dims, correction=0)
        return [var, mean]
    if op == "welford":
        avg, m2, n = fd.ops.welford(t, dims=dims)
        return [avg, m2, n]
    if op == "softmax":
        m = fd.ops.max(t, dims=dims, keepdim=True)
        e = fd.ops.exp(fd.ops.sub(t, m))
        return [fd.ops.div(e, fd.ops.sum(e, dims=dims, keepdim=True))]
    return [getattr(fd.ops, op)(t, dims=dims)]


def _expected(x, op, dims):
    if op == "var_mean":
        var, mean = torch.var_mean(x.double(), dim=dims, correction=0)
        return [var.to(x.dtype), mean.to(x.dtype)]
    if op == "welford":
        mean = x.double().mean(dims)
        count = torch.ones(mean.shape, dtype=torch.int64)
        return [mean.float(), torch.zeros(mean.shape), count]
    if op == "softmax":
        return [torch.softmax(x.double(), dim=dims[0]).to(x.dtype)]
    if op == "sum":
        return [x.sum(dims)]
    if op == "prod":
        return [x.prod(dims[0]) if len(dims) == 1 else x.prod(dims[0]).prod(dims[1] - 1)]
    return [getattr(torch, "amax" if op == "max" else "amin")(x, dim=dims)]


def _run(x, op, dims, stride_order=None):
    with FusionDefinition() as fd:
        outs = _define(fd, x, op, dims)
        for k, o in enumerate(outs):
            fd.add_output(o, stride_order=stride_order if k == 0 else None)
    results = [fd.execute([x]) for _ in range(2)]  # planned, then replayed
    expect = _expected(x, op, dims)
    for got in results:
        for out, e in zip(got, expect):
            assert out.shape == e.shape
            torch.testing.assert_close(out.cpu(), e.cpu().to(out.dtype), equal_nan=True)
    return fd, results[0]


def _one_kernel_pointwise(fd):
    """One pointwise kernel, and the reason the reduction schedulers passed it on."""
    (params,) = schedules(fd)
    assert params.scheduler == "pointwise", params
    (seg,) = fd.executor().last_run.segments
    # a plain reduction: the reduction scheduler's reason; a group: the normalization's
    assert any(
        "every reduced extent is 1" in why or "size-1 reduced dims" in why
        for _, why in seg.rejected
    ), seg.rejected
    return params


ORDERS = list(itertools.permutations(range(3)))


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "mem" + "".join(map(str, o)))
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod", "var_mean", "welford", "softmax"])
def test_every_order_one_kernel(op, order):
    """[5, 1, 4099] in every memory order, reduced over its size-1 dim."""
    x = with_order([5, 1, 4099], order, torch.float32)
    fd, _ = _run(x, op, [1])
    _one_kernel_pointwise(fd)


@pytest.mark.parametrize(
    "op, dtype",
    [
        (op, dtype)
        for op in ("sum", "max", "prod")
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.bool)
        if not (op == "max" and dtype is torch.bool)  # refused at definition (bool_inputs)
    ],
    ids=str,
)
def test_dtypes(op, dtype):
    """Integers and Bool sum and multiply as Int (torch's), through a cast."""
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(1, 3001, 7, generator=g) * 4).to(dtype)
    fd, (out,) = _run(x, op, [0])
    _one_kernel_pointwise(fd)
    assert out.dtype == _expected(x, op, [0])[0].dtype


def test_two_size_one_dims_sliced_input_pinned_transposed_output():
    """[1, 301, 1, 77] sliced every other element along dim 3; the output pinned
    column-major (nvFuser stride_order [0, 1]: dim 0 innermost) is a transposed store."""
    x = torch.randn(1, 301, 1, 154)[..., ::2]
    fd, (out,) = _run(x, "sum", [0, 2], stride_order=[0, 1])
    params = _one_kernel_pointwise(fd)
    assert out.stride() == (1, 301)
    assert params.transpose


def test_expanded_input():
    """A stride-0 kept dim (an expanded input): the output keeps the expanded values."""
    x = torch.randn(1, 1, 999).expand(1, 6, 999)
    fd, (out,) = _run(x, "max", [0])
    _one_kernel_pointwise(fd)


def test_an_expanded_reduced_dim_of_extent_n_sums_n_copies():
    """Reducing a stride-0 dim of extent 6 sums 6 copies, not one element: the pointwise
    scheduler computes it in place times the copies (``Problem.repeat``), and the values
    are torch's."""
    x = torch.randn(1, 999).expand(6, 999)
    fd, (out,) = _run(x, "sum", [0])
    (params,) = schedules(fd)
    assert params.scheduler == "pointwise" and params.repeat, params


def test_odd_extent_compiles_to_16_byte_vectors():
    """[1, 3 * 4099 * 7] fp16 summed over dim 0: full tiles, 16-byte loads and stores."""
    x = torch.randn(1, 3 * 4099 * 7).half()
    fd, _ = _run(x, "sum", [0])
    params = _one_kernel_pointwise(fd)
    assert params.full_blocks
    (art,) = compile_last_run(fd.executor())
    widths = ptx_vector_widths(art.ptx)
    assert widths.get("ld.global.v4", 0) > 0 and widths.get("st.global.v4", 0) > 0, widths


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layernorm"])
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0)], ids=["mem012", "mem210"])
def test_static_size_one_rows_one_kernel(op, order):
    """``from_pytorch`` declares a size-1 dim static (a broadcast dim): the frontend makes a
    sum of computed values over it a squeeze, the max or var_mean of the input stays a
    reduction, and the normalization over it is one pointwise kernel (was a reduction
    kernel, then a pointwise one, reading the input twice)."""
    x = with_order([5, 1, 4099], order, torch.float32)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if op == "layernorm":
            var, mean = fd.ops.var_mean(t, dims=[1], correction=0, keepdim=True)
            rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5)))
            fd.add_output(fd.ops.mul(fd.ops.sub(t, mean), rstd))
        else:
            shifted = fd.ops.sub(t, fd.ops.max(t, dims=[1], keepdim=True))
            e = fd.ops.exp(shifted)
            total = fd.ops.sum(e, dims=[1], keepdim=True)
            if op == "softmax":
                fd.add_output(fd.ops.div(e, total))
            else:
                fd.add_output(fd.ops.sub(shifted, fd.ops.log(total)))
    (out,) = fd.execute([x])
    ref = x.double()
    if op == "layernorm":
        expect = torch.nn.functional.layer_norm(ref.transpose(1, 2), [1], eps=1e-5).transpose(1, 2)
    else:
        expect = getattr(torch, op)(ref, dim=1)
    torch.testing.assert_close(out.double(), expect, rtol=1e-5, atol=1e-5)
    assert [out.stride(d) for d in (0, 2)] == [x.stride(d) for d in (0, 2)]  # dim 1: extent 1
    _one_kernel_pointwise(fd)


@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("op", ["var_mean", "var"])
def test_the_variance_of_a_nan_or_infinite_element_is_nan(op, correction):
    """Found by the generated programs (draws 14379 and 15949 of the full run): a variance
    over a size-1 dim of NaN, inf or -inf is NaN in torch (``x - mean`` is NaN), as the
    reduction kernels' Welford combine gives it; the in-place form gave 0."""
    x = torch.tensor([[float("nan")], [1.5], [float("inf")], [-float("inf")], [0.0]])
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if op == "var_mean":
            for out in fd.ops.var_mean(t, dims=[1], correction=correction, keepdim=True):
                fd.add_output(out)
        else:
            fd.add_output(fd.ops.var(t, dims=[1], correction=correction, keepdim=False))
    outs = fd.execute([x])
    if op == "var_mean":
        want = list(torch.var_mean(x, dim=1, correction=correction, keepdim=True))
    else:
        want = [torch.var(x, dim=1, correction=correction)]
    assert [p.scheduler for p in schedules(fd)] == ["pointwise"]
    for got, ref in zip(outs, want):
        torch.testing.assert_close(got, ref, equal_nan=True, rtol=0, atol=0)
