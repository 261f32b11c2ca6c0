"""Outputs that are views of other outputs (``OutputLayout.view_of_output``).

An output reached from another output through view ops alone (reshape, permute, squeeze,
broadcast_in_dim, set) comes back as a view of that output's buffer, as nvFuser's alias
analysis makes it: no kernel computes it, on the planned call and on replays. Where the
reshape is no view of the buffer's actual layout, the output is computed like any other.
Checked: values against torch, shared memory, strides, the kernels launched, replays
(the replay plan makes the view again), an output that is both a view and an input of
another op, and Thunder's backward pattern (a gradient cast to bf16 and its reshape to 2-D
beside a layer norm backward).
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _scaled_and_views(x: torch.Tensor, views):
    """``y = x * 2`` and each ``view(fd, y)`` as outputs."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        y = fd.ops.mul(t, fd.define_scalar(2.0, dtype=DataType.Double))
        fd.add_output(y)
        for v in views:
            fd.add_output(v(fd, y))
    return fd


VIEWS = {
    "reshape": (lambda fd, y: fd.ops.reshape(y, new_shape=[24]), lambda y: y.reshape(24)),
    "permute": (lambda fd, y: fd.ops.permute(y, dims=[1, 0]), lambda y: y.permute(1, 0)),
    "split": (lambda fd, y: fd.ops.reshape(y, new_shape=[2, 2, 6]), lambda y: y.reshape(2, 2, 6)),
}


@pytest.mark.parametrize("kind", list(VIEWS))
def test_a_view_of_an_output_shares_its_memory(kind):
    x = torch.randn(4, 6)
    make, ref = VIEWS[kind]
    fd = _scaled_and_views(x, [make])
    for call in range(2):  # planned, then replayed
        y, v = fd.execute([x])
        torch.testing.assert_close(y, x * 2)
        torch.testing.assert_close(v, ref(x * 2))
        assert _same_memory(v, y), call
        assert v.stride() == ref(y).stride()
        if call == 0:  # one kernel computes y; the view is made, not launched
            assert len(fd.executor().last_run.launches) == 1


def test_a_reshape_that_is_no_view_of_the_layout_is_computed():
    """A column-major input gives a column-major y (nvFuser's inferred layout), whose
    flattening is no view: a kernel computes it, in its own memory."""
    x = torch.randn(6, 4).t()  # [4, 6], column-major
    fd = _scaled_and_views(x, [VIEWS["reshape"][0]])
    for _ in range(2):
        y, v = fd.execute([x])
        assert y.stride() == (1, 4)
        torch.testing.assert_close(v, (x * 2).reshape(24))
        assert not _same_memory(v, y)


def test_a_view_that_another_op_reads_too():
    """z = reshape(y) is an output and the input of sum(z): the sum reads y's values."""
    x = torch.randn(4, 6)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        y = fd.ops.exp(t)
        z = fd.ops.reshape(y, new_shape=[24])
        fd.add_output(y)
        fd.add_output(z)
        fd.add_output(fd.ops.sum(z, dims=[0]))
    for _ in range(2):
        y, z, s = fd.execute([x])
        assert _same_memory(z, y)
        torch.testing.assert_close(s, x.exp().sum())


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=str)
def test_a_gradient_and_its_2d_reshape_beside_a_layer_norm_backward(dt):
    """Thunder's region for a GPT-2 block's layer norm backward returns dx (cast) and its
    reshape to [B*T, C] for a weight's matmul: the reshape is a view of dx, one segment."""
    b, t, c = 2, 5, 32
    gen = torch.Generator().manual_seed(0)
    x, dy = (torch.randn(b, t, c, generator=gen).to(dt) for _ in range(2))
    mean = x.float().mean(-1)
    rstd = (x.float().var(-1, unbiased=False) + 1e-5).rsqrt()
    with FusionDefinition() as fd:
        tx, tdy, tm, tr = (fd.from_pytorch(v) for v in (x, dy, mean, rstd))
        shape = fd.ops.shape(tx)
        full = dict(shape=shape, broadcast_dims=[0, 1])
        xhat = fd.ops.mul(
            fd.ops.sub(fd.ops.cast(tx, DataType.Float), fd.ops.broadcast_in_dim(tm, **full)),
            fd.ops.broadcast_in_dim(tr, **full),
        )
        g = fd.ops.cast(tdy, DataType.Float)
        rows = dict(shape=shape, broadcast_dims=[0, 1, 2])
        s1 = fd.ops.broadcast_in_dim(fd.ops.sum(g, dims=[2], keepdim=True), **rows)
        s2 = fd.ops.broadcast_in_dim(
            fd.ops.sum(fd.ops.mul(g, xhat), dims=[2], keepdim=True), **rows
        )
        cf = fd.define_scalar(float(c), dtype=DataType.Double)
        dx = fd.ops.sub(fd.ops.sub(fd.ops.mul(g, cf), s1), fd.ops.mul(xhat, s2))
        dx = fd.ops.mul(dx, fd.ops.div(fd.ops.broadcast_in_dim(tr, **full), cf))
        dxc = fd.ops.cast(dx, DataType.BFloat16 if dt == torch.bfloat16 else DataType.Float)
        fd.add_output(dxc)
        fd.add_output(fd.ops.reshape(dxc, new_shape=[b * t, c]))
    for _ in range(2):
        dx_out, flat = fd.execute([x, dy, mean, rstd])
        assert _same_memory(flat, dx_out) and flat.shape == (b * t, c)
        torch.testing.assert_close(flat, dx_out.reshape(b * t, c))
    xf, gf = x.float(), dy.float()
    xh = (xf - mean[..., None]) * rstd[..., None]
    ref = (
        rstd[..., None]
        / c
        * (gf * c - gf.sum(-1, keepdim=True) - xh * (gf * xh).sum(-1, keepdim=True))
    )
    tol = 3e-2 if dt == torch.bfloat16 else 1e-4
    torch.testing.assert_close(dx_out.float(), ref, rtol=tol, atol=tol)
    (run,) = fd.executor().last_run.segments
    assert run.scheduler == "normalization", run.reason


@pytest.mark.parametrize("order", [list(o) for o in itertools.permutations(range(4))], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [[2, 35, 6], [10, 42]], ids=str)
def test_a_reshape_the_input_cannot_view_is_a_view_of_the_pinned_output(order, dtype, shape):
    """``y = stride_order(x)`` pinned and ``z = reshape(y)`` (program 683742): the chain
    from x is all view ops, but x's layout cannot view the reshape; y's can where its
    pinned order keeps the merged dims together. z then comes back as a view of y (as
    nvFuser's alias analysis takes the nearest output), on the planned call and on
    replays; where neither can view it, z is computed in its own memory."""
    x = torch.randn(420).to(dtype).as_strided((2, 5, 7, 6), (210, 6, 30, 1))
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        y = fd.ops.stride_order(fd.ops.set(t), stride_order=order)
        fd.add_output(fd.ops.reshape(y, new_shape=shape))
        fd.add_output(y)
    for call in range(2):
        z, y = fd.execute([x])
        torch.testing.assert_close(z, x.reshape(shape))
        torch.testing.assert_close(y, x)
        try:
            want = y.view(shape)
        except RuntimeError:
            assert not _same_memory(z, y) and z.is_contiguous(), call
            continue
        assert _same_memory(z, y) and z.stride() == want.stride(), (call, z.stride())
        if call == 0:
            assert len(fd.executor().last_run.launches) == 1
