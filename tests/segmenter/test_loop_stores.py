"""A reduction kernel stores the outputs of its input's coordinates from its R loop
(``segments._loop_stores``, ``KernelSpec.loop_stores``): one read of the inputs for both.

Thunder's MLP backward returns dgelu = dy * gelu'(x + b) and sums it over the rows for the
bias grad. Two kernels used to do it (a pointwise kernel storing dgelu, then the sum
reading it back); now the reduction kernel stores each tile of dgelu as it adds it, as
nvFuser's reduction scheduler does with a pointwise output. Where the scheduler declines
the loop's stores (an expanded input's reduced dim is not walked; an output laid out
unlike every load would not be coalesced) the segment's fallback runs: the pointwise
kernel, then the sum of what it stored. Checked: the segments and their reasons, values,
dtypes and strides against torch in every memory order, inner and outer reductions,
sum, max and var_mean, casts, sliced, expanded, size-1 and empty inputs, and the sm_90
PTX of the loop's stores.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

SHAPE = (4, 6, 40)
LOOP = "from its loop"


def _bias_gelu_backward(
    dy, x, b, out_dtype, dims=(0, 1), stride_order=None, strided=False, sum_dtype=None
):
    """dgelu (cast to ``out_dtype``) and its sum over ``dims`` (cast to ``sum_dtype``: a
    per-row epilogue, as Thunder's bf16 backward casts the bias grad); ``strided``: dy and
    x defined with symbolic extents and no contiguity (any strides at run time, 0 too)."""
    fd = FusionDefinition()
    with fd:

        def define(t):
            if strided and t.dim() == 3:
                return fd.define_tensor(
                    shape=[-1] * 3, contiguity=[False] * 3, dtype=DataType.Float
                )
            return fd.from_pytorch(t)

        tdy, tx, tb = (fd.ops.cast(define(t), DataType.Float) for t in (dy, x, b))
        t = fd.ops.add(tx, fd.ops.broadcast_in_dim(tb, shape=list(dy.shape), broadcast_dims=[2]))
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
        out = fd.ops.cast(g, out_dtype) if out_dtype is not DataType.Float else g
        if stride_order is None:
            fd.add_output(out)
        else:
            fd.add_output(out, stride_order=stride_order)
        total = fd.ops.sum(g, dims=list(dims))
        fd.add_output(total if sum_dtype is None else fd.ops.cast(total, sum_dtype))
    return fd


def _want(dy, x, b, dims=(0, 1)):
    g = torch.ops.aten.gelu_backward(dy.float(), x.float() + b.float())
    return g, g.sum(dims)


def _laid_out(t: torch.Tensor, order) -> torch.Tensor:
    return t.permute(*order).contiguous().permute(*[order.index(d) for d in range(t.dim())])


def _inputs(seed, dtype=torch.float32, shape=SHAPE):
    g = torch.Generator().manual_seed(seed)
    dev = torch.get_default_device()
    dy, x = (torch.randn(shape, generator=g).to(dev, dtype) for _ in range(2))
    return dy, x, torch.randn(shape[2], generator=g).to(dev, dtype)


def _segments(fd, inputs) -> list[dict]:
    return fd.segment(inputs)


def _ran(fd) -> list[tuple[str, str]]:
    """(scheduler, reason) of every kernel segment the last execute ran."""
    return [(s.scheduler, s.reason) for s in fd.executor().last_run.segments]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("dims", [(0, 1), (2,), (1,)], ids=["outer", "inner", "middle"])
def test_the_reduction_stores_dgelu_from_its_loop(order, dims):
    dy, x, b = _inputs(0)
    dy, x = _laid_out(dy, order), _laid_out(x, order)
    fd = _bias_gelu_backward(dy, x, b, DataType.Float, dims)
    dgelu, db = fd.execute([dy, x, b])
    want, want_db = _want(dy, x, b, dims)
    torch.testing.assert_close(dgelu, want)
    torch.testing.assert_close(db, want_db, rtol=1e-5, atol=1e-5)
    assert dgelu.stride() == dy.stride()  # the dominant inputs' layout
    (seg,) = _segments(fd, [dy, x, b])
    assert seg["scheduler"] == "reduction" and "erf" in seg["ops"], seg
    assert LOOP in seg["reason"], seg
    ((scheduler, reason),) = _ran(fd)
    assert scheduler == "reduction" and LOOP in reason


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_cast_output_is_stored_beside_the_fp32_sum(dtype):
    """The bf16 (fp16) dgelu is a cast of the fp32 value the sum adds: one kernel stores
    the cast and sums the fp32 values."""
    dy, x, b = _inputs(1, dtype)
    out_dtype = DataType.BFloat16 if dtype is torch.bfloat16 else DataType.Half
    fd = _bias_gelu_backward(dy, x, b, out_dtype)
    dgelu, db = fd.execute([dy, x, b])
    want, want_db = _want(dy, x, b)
    assert dgelu.dtype == dtype and db.dtype == torch.float32
    torch.testing.assert_close(dgelu, want.to(dtype))
    torch.testing.assert_close(db, want_db, rtol=1e-4, atol=1e-4)
    ((scheduler, reason),) = _ran(fd)
    assert scheduler == "reduction" and LOOP in reason


@pytest.mark.parametrize("shape", [SHAPE, (0, 6, 40)], ids=["full", "empty"])
def test_the_bf16_bias_grad_cast_after_its_sum(shape):
    """Thunder's bf16 form: the sum of the fp32 dgelu cast to bf16 (an epilogue of the
    reduction) beside dgelu cast to bf16 (a loop store): one reduction kernel, not a
    normalization kernel of the epilogue and a pointwise kernel."""
    dy, x, b = _inputs(8, torch.bfloat16, shape)
    fd = _bias_gelu_backward(dy, x, b, DataType.BFloat16, sum_dtype=DataType.BFloat16)
    dgelu, db = fd.execute([dy, x, b])
    want, want_db = _want(dy, x, b)
    assert dgelu.dtype == db.dtype == torch.bfloat16
    torch.testing.assert_close(dgelu, want.bfloat16())
    torch.testing.assert_close(db, want_db.bfloat16(), rtol=2e-2, atol=2e-2)
    if shape == SHAPE:
        (seg,) = _segments(fd, [dy, x, b])
        assert seg["scheduler"] == "reduction" and LOOP in seg["reason"], seg
        assert "epilogue" in seg["reason"], seg
        ((scheduler, reason),) = _ran(fd)
        assert scheduler == "reduction" and LOOP in reason


@pytest.mark.parametrize("op", ["sum", "max", "var_mean"])
def test_pointwise_outputs_beside_each_reduction(op):
    """``y = x * 2 + 1`` and ``x.exp()`` as outputs beside a reduction of ``y`` (a
    var_mean: a Welford with its per-row epilogue, the variance)."""
    g = torch.Generator().manual_seed(2)
    x = _laid_out(torch.randn(5, 7, 33, generator=g), (1, 2, 0)).to(torch.get_default_device())
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        y = fd.ops.add(fd.ops.mul(tx, fd.define_scalar(2.0)), fd.define_scalar(1.0))
        fd.add_output(y)
        fd.add_output(fd.ops.exp(tx))
        if op == "var_mean":
            var, mean = fd.ops.var_mean(y, dims=[0, 2], correction=1)
            fd.add_output(var)
            fd.add_output(mean)
        else:
            fd.add_output(getattr(fd.ops, op)(y, dims=[0, 2]))
    outs = fd.execute([x])
    y = x * 2 + 1
    torch.testing.assert_close(outs[0], y)
    torch.testing.assert_close(outs[1], x.exp())
    assert outs[0].stride() == x.stride() and outs[1].stride() == x.stride()
    if op == "var_mean":
        var, mean = torch.var_mean(y, dim=[0, 2], correction=1)
        torch.testing.assert_close(outs[2], var, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(outs[3], mean, rtol=1e-5, atol=1e-5)
    elif op == "max":
        torch.testing.assert_close(outs[2], y.amax((0, 2)))
    else:
        torch.testing.assert_close(outs[2], y.sum((0, 2)), rtol=1e-5, atol=1e-5)
    ((scheduler, reason),) = _ran(fd)
    assert scheduler == "reduction" and LOOP in reason, reason


def test_sliced_inputs():
    g = torch.Generator().manual_seed(3)
    dev = torch.get_default_device()
    big = [torch.randn(6, 9, 50, generator=g).to(dev) for _ in range(2)]
    dy, x = (t[1:5, ::1, 3:43] for t in big)
    b = torch.randn(40, generator=g).to(dev)
    fd = _bias_gelu_backward(dy, x, b, DataType.Float)
    dgelu, db = fd.execute([dy, x, b])
    want, want_db = _want(dy, x, b)
    torch.testing.assert_close(dgelu, want)
    torch.testing.assert_close(db, want_db, rtol=1e-5, atol=1e-5)
    ((scheduler, reason),) = _ran(fd)
    assert scheduler == "reduction" and LOOP in reason


def test_inputs_expanded_along_a_reduced_dim():
    """dy and x expanded along a reduced dim (stride 0 at run time): the store moves along
    it, so the kernel walks it and stores every element of dgelu."""
    dy, x, b = _inputs(4)
    dy = dy[:1].expand(SHAPE)
    x = x[:1].expand(SHAPE)
    fd = _bias_gelu_backward(dy, x, b, DataType.Float, strided=True)
    dgelu, db = fd.execute([dy, x, b])
    want, want_db = _want(dy, x, b)
    torch.testing.assert_close(dgelu, want)
    torch.testing.assert_close(db, want_db, rtol=1e-5, atol=1e-5)
    assert dgelu.stride() == (240, 40, 1)
    ((scheduler, reason),) = _ran(fd)
    assert scheduler == "reduction" and LOOP in reason


def test_an_output_laid_out_unlike_the_loads_falls_back():
    """dgelu pinned column-major while the inputs are row-major: its stores would not be
    coalesced beside the loads; a pointwise kernel (a transpose) stores it, and the sum
    reads what it stored (one tensor instead of dy and x)."""
    dy, x, b = _inputs(5)
    fd = _bias_gelu_backward(dy, x, b, DataType.Float, stride_order=[0, 1, 2])
    dgelu, db = fd.execute([dy, x, b])
    want, want_db = _want(dy, x, b)
    torch.testing.assert_close(dgelu, want)
    torch.testing.assert_close(db, want_db, rtol=1e-5, atol=1e-5)
    assert dgelu.stride() == (1, 4, 24)
    ran = _ran(fd)
    assert [s for s, _ in ran] == ["pointwise", "reduction"], ran
    assert "instead of one reduction kernel" in ran[0][1]
    assert "laid out unlike every load" in ran[0][1]
    assert "reads an output another kernel stores" in ran[1][1]


@pytest.mark.parametrize("shape", [(1, 1, 40), (4, 6, 1), (0, 6, 40), (4, 0, 40)])
def test_size_one_and_empty_extents(shape):
    dy, x, b = _inputs(6, shape=shape)
    fd = _bias_gelu_backward(dy, x, b, DataType.Float)
    dgelu, db = fd.execute([dy, x, b])
    want, want_db = _want(dy, x, b)
    torch.testing.assert_close(dgelu, want)
    torch.testing.assert_close(db, want_db, rtol=1e-5, atol=1e-5)
    assert dgelu.shape == shape and db.shape == (shape[2],)


def test_an_output_of_the_reductions_result_is_not_a_loop_store():
    """``x - sum(x)`` needs the result first: not stored from the loop (a normalization
    kernel's, or a pointwise kernel after the reduction)."""
    x = torch.randn(6, 8, device=torch.get_default_device())
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        s = fd.ops.sum(tx, dims=[0])
        fd.add_output(s)
        fd.add_output(fd.ops.exp(tx))
        fd.add_output(fd.ops.sub(tx, fd.ops.broadcast_in_dim(s, shape=[6, 8], broadcast_dims=[1])))
    s, e, d = fd.execute([x])
    torch.testing.assert_close(s, x.sum(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(e, x.exp())
    torch.testing.assert_close(d, x - x.sum(0), rtol=1e-5, atol=1e-5)


def test_the_loop_stores_are_vectorized_on_sm90():
    """The compiled kernel stores dgelu 16 bytes at a time, as it loads dy and x."""
    from layoutfuse.codegen.backend import ptx_vector_widths
    from layoutfuse.codegen.hopper_check import compile_last_run

    dy, x, b = _inputs(7, shape=(8, 32, 256))
    fd = _bias_gelu_backward(dy, x, b, DataType.Float)
    fd.execute([dy, x, b])
    (artifact, *finish) = compile_last_run(fd.executor())
    widths = ptx_vector_widths(artifact.ptx)
    assert widths.get("st.global.v4", 0) >= 1 and widths.get("ld.global.v4", 0) >= 2, widths


def test_an_epilogue_whose_loop_store_a_scan_kernel_takes():
    """``exp(cumsum(x))`` is an output and its column sum cast to fp16 another: the scan's
    kernel stores ``exp`` as its epilogue, so the sum has no loop store left; its cast is
    still stored after its results (it had been left to no kernel)."""
    x = torch.randn(6, 9, generator=torch.Generator().manual_seed(9)).to(torch.get_default_device())
    with FusionDefinition() as fd:
        y = fd.ops.exp(fd.ops.cumsum(fd.from_pytorch(x * 0.1), 1))
        fd.add_output(y)
        fd.add_output(fd.ops.cast(fd.ops.sum(y, dims=[0]), DataType.Half))
    y, s = fd.execute([x * 0.1])
    want = torch.exp(torch.cumsum(x * 0.1, 1))
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(s, want.sum(0).half())
    kinds = [(seg["scheduler"], seg["ops"][-1]) for seg in _segments(fd, [x * 0.1])]
    assert kinds == [("scan", "exp"), ("reduction", "cast")], kinds
