"""Library segments between generated kernels: matmul, linear and attention run through
torch as segments of their own; the kernels before and after them read and write their
operands and results in memory. Numerics against torch, the segments and their reasons,
and the replay path (a repeated execute replays the kernels and the library calls)."""

import math

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition

DTYPES = [(torch.float32, DataType.Float), (torch.bfloat16, DataType.BFloat16)]


def _tensor(fd, ndim, dtype, **kw):
    return fd.define_tensor(shape=[-1] * ndim, contiguity=[True] * ndim, dtype=dtype, **kw)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)


def _segments(fd, inputs):
    return [(s["scheduler"], s["ops"], s["reason"]) for s in fd.segment(inputs)]


@pytest.mark.parametrize("tdtype,dtype", DTYPES)
def test_matmul_between_pointwise_kernels(tdtype, dtype):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, 10, generator=g).to(tdtype)
    b = torch.randn(10, 7, generator=g).to(tdtype)
    c = torch.randn(6, 7, generator=g).to(tdtype)
    with FusionDefinition() as fd:
        t0, t1, t2 = (_tensor(fd, 2, dtype) for _ in range(3))
        r = fd.ops.relu(t0)
        m = fd.ops.matmul(r, t1)
        y = fd.ops.tanh(fd.ops.add(m, t2))
        fd.add_output(y)
    (out,) = fd.execute([a, b, c])
    mm = torch.matmul(torch.relu(a), b)
    torch.testing.assert_close(out, torch.tanh(mm + c), **_tol(tdtype))
    assert out.dtype == tdtype
    segs = _segments(fd, [a, b, c])
    assert [s[0] for s in segs] == ["pointwise", "library", "pointwise"]
    assert segs[1][1:] == (["matmul"], "matmul: runs through torch (cuBLAS)")


def test_a_library_result_that_is_an_output_and_used_again():
    """The matmul's result is returned (copied into its destination) and read by the
    kernel after it; a reduction of the sum runs as its own kernel."""
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(5, 8, generator=g), torch.randn(8, 4, generator=g)
    with FusionDefinition() as fd:
        t0, t1 = _tensor(fd, 2, DataType.Float), _tensor(fd, 2, DataType.Float)
        m = fd.ops.matmul(t0, t1)
        s = fd.ops.sum(fd.ops.mul(m, m), dims=[1])
        fd.add_output(m)
        fd.add_output(s)
    mm, ss = fd.execute([a, b])
    torch.testing.assert_close(mm, a @ b)
    torch.testing.assert_close(ss, ((a @ b) ** 2).sum(1), rtol=1e-5, atol=1e-5)
    assert [s[0] for s in _segments(fd, [a, b])] == ["library", "reduction"]


@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_with_a_transposed_weight_and_an_epilogue(with_bias):
    """The weight is a column-major input (its strides say so); the bias joins the library
    call; a normalization kernel (softmax) follows."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 4, 16, generator=g)
    w = torch.randn(16, 12, generator=g).t()  # [12, 16], column-major
    bias = torch.randn(12, generator=g)
    with FusionDefinition() as fd:
        t0 = _tensor(fd, 3, DataType.Float)
        t1 = fd.define_tensor(
            shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1]
        )
        tb = _tensor(fd, 1, DataType.Float) if with_bias else None
        lin = fd.ops.linear(t0, t1, tb)
        mx = fd.ops.max(lin, dims=[2], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(lin, mx))
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, dims=[2], keepdim=True)))
    inputs = [x, w] + ([bias] if with_bias else [])
    (out,) = fd.execute(inputs)
    ref = torch.softmax(torch.nn.functional.linear(x, w, bias if with_bias else None), dim=2)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    segs = _segments(fd, inputs)
    assert segs[0] == ("library", ["linear"], "linear: runs through torch (cuBLAS)")
    assert [s[0] for s in segs[1:]] == ["normalization"]


def _attention_fd(dtype, is_causal, scale):
    with FusionDefinition() as fd:
        q, k, v = (_tensor(fd, 4, dtype) for _ in range(3))
        qs = fd.ops.mul(q, fd.define_scalar(2.0, dtype=DataType.Double))
        out, lse, seed, offset = fd.ops.sdpfa_fwd(
            qs, k, v, dropout_p=0.0, is_causal=is_causal, scale=scale
        )
        fd.add_output(fd.ops.neg(out))
        fd.add_output(lse)
        fd.add_output(seed)
        fd.add_output(offset)
    return fd


@pytest.mark.parametrize("tdtype,dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpa_forward_between_pointwise_kernels(tdtype, dtype, is_causal, scale):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, 5, 8, generator=g).to(tdtype) for _ in range(3))
    fd = _attention_fd(dtype, is_causal, scale)
    out, lse, seed, offset = fd.execute([q, k, v])
    ref = torch.nn.functional.scaled_dot_product_attention(
        2 * q, k, v, is_causal=is_causal, scale=scale
    )
    torch.testing.assert_close(out, -ref, **_tol(tdtype))
    s = 1 / math.sqrt(8) if scale is None else scale
    scores = (2 * q.float()) @ k.float().transpose(-2, -1) * s
    if is_causal:
        scores = scores.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf"))
    torch.testing.assert_close(lse, torch.logsumexp(scores, -1), **_tol(tdtype))
    assert lse.dtype == torch.float32 and lse.shape == (2, 3, 5)
    assert seed.dtype == offset.dtype == torch.uint64
    assert seed.shape == (2,) and offset.shape == ()
    assert [s[0] for s in _segments(fd, [q, k, v])] == ["pointwise", "library", "pointwise"]


def test_replay_runs_the_library_call_with_fresh_inputs():
    """The second and later executes of a signature replay the plan: the kernels and the
    library call, with the new data; the plan's source shows the call."""
    with FusionDefinition() as fd:
        t0, t1 = _tensor(fd, 2, DataType.Float), _tensor(fd, 2, DataType.Float)
        m = fd.ops.matmul(fd.ops.exp(t0), t1)
        fd.add_output(fd.ops.mul(m, fd.define_scalar(3.0)))
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        a, b = torch.randn(4, 6, generator=g), torch.randn(6, 5, generator=g)
        (out,) = fd.execute([a, b])
        torch.testing.assert_close(out, (a.exp() @ b) * 3.0, rtol=1e-5, atol=1e-5)
    executor = fd.executor()
    assert executor.planned_runs == 1
    (plan,) = executor._plans.values()
    assert "library" in plan.source and "= r1[0]" in plan.source


def test_replay_of_two_library_segments_in_a_row():
    """A library result feeds another library call directly (``made`` in the plan)."""
    with FusionDefinition() as fd:
        t0, t1, t2 = (_tensor(fd, 2, DataType.Float) for _ in range(3))
        m = fd.ops.matmul(fd.ops.matmul(t0, t1), t2)
        fd.add_output(fd.ops.abs(m))
    for seed in range(2):
        g = torch.Generator().manual_seed(seed)
        a, b, c = (torch.randn(4, 4, generator=g) for _ in range(3))
        (out,) = fd.execute([a, b, c])
        torch.testing.assert_close(out, ((a @ b) @ c).abs(), rtol=1e-5, atol=1e-5)
    assert fd.executor().planned_runs == 1
    segs = _segments(fd, [a, b, c])
    assert [s[0] for s in segs] == ["library", "library", "pointwise"]


def test_scalar_operand_read_at_run_time_on_replay():
    """is_causal and scale given as Scalar inputs: the replay reads them from each call."""
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=g) for _ in range(3))
    with FusionDefinition() as fd:
        tq, tk, tv = (_tensor(fd, 4, DataType.Float) for _ in range(3))
        scale = fd.define_scalar(DataType.Double)
        out, *_ = fd.ops.sdpfa_fwd(tq, tk, tv, scale=scale)
        fd.add_output(out)
    for s in (0.1, 0.5, 1.0):
        (got,) = fd.execute([q, k, v, s])
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=s)
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    assert fd.executor().planned_runs == 1


def test_plan_without_launching_keeps_the_library_segment():
    """``plan`` (launch=False) records the library segment without calling torch."""
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(3, 4, generator=g), torch.randn(4, 2, generator=g)
    with FusionDefinition() as fd:
        t0, t1 = _tensor(fd, 2, DataType.Float), _tensor(fd, 2, DataType.Float)
        fd.add_output(fd.ops.exp(fd.ops.matmul(t0, t1)))
    fd.execute([a, b])
    record = fd.executor().plan([a, b])
    assert [s.scheduler for s in record.segments] == ["library", "pointwise"]
    assert len(record.library_calls) == 1 and record.library_calls[0].at == 0


PERMS = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]


@pytest.mark.parametrize("perm", PERMS)
@pytest.mark.parametrize("through_kernel", [False, True])
def test_batched_matmul_of_every_memory_order(perm, through_kernel):
    """A [2, 3, 4] operand in each memory order, read by torch directly (an input) or
    after a pointwise kernel (a buffer the kernel wrote); the output layout follows."""
    g = torch.Generator().manual_seed(6)
    shape = (2, 3, 4)
    stored = torch.randn(tuple(shape[p] for p in perm), generator=g)
    a = stored.permute(*[perm.index(d) for d in range(3)])  # logical [2, 3, 4]
    assert a.shape == shape
    b = torch.randn(4, 5, generator=g)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        x = fd.ops.abs(ta) if through_kernel else ta
        fd.add_output(fd.ops.exp(fd.ops.matmul(x, tb)))
    (out,) = fd.execute([a, b])
    x = a.abs() if through_kernel else a
    torch.testing.assert_close(out, torch.exp(x @ b), rtol=1e-5, atol=1e-5)
    kinds = [s[0] for s in _segments(fd, [a, b])]
    assert kinds == (["pointwise"] if through_kernel else []) + ["library", "pointwise"]


def test_matmul_of_sliced_and_expanded_operands():
    """A sliced input (every other column: not contiguous) and an expanded batch dim
    (stride 0) reach torch as they are."""
    g = torch.Generator().manual_seed(7)
    a = torch.randn(3, 8, generator=g)[:, ::2]  # [3, 4], strides (8, 2)
    b = torch.randn(1, 4, 5, generator=g).expand(2, 4, 5)  # stride 0 over the batch
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.neg(fd.ops.matmul(ta, tb)))
    (out,) = fd.execute([a, b])
    torch.testing.assert_close(out, -(a @ b), rtol=1e-5, atol=1e-5)
    assert out.shape == (2, 3, 5)


def test_a_size_one_batch_dim_broadcasts_against_the_kernel_after():
    """matmul of [1, 3, 4] and [4, 5] gives a [1, 3, 5] whose size-1 dim is a broadcast
    dim: adding a [2, 3, 5] input broadcasts it."""
    g = torch.Generator().manual_seed(8)
    a, b, c = (
        torch.randn(1, 3, 4, generator=g),
        torch.randn(4, 5, generator=g),
        torch.randn(2, 3, 5, generator=g),
    )  # noqa: E501
    with FusionDefinition() as fd:
        ta, tb, tc = fd.from_pytorch(a), fd.from_pytorch(b), fd.from_pytorch(c)
        fd.add_output(fd.ops.add(fd.ops.matmul(ta, tb), tc))
    (out,) = fd.execute([a, b, c])
    torch.testing.assert_close(out, a @ b + c, rtol=1e-5, atol=1e-5)


def test_kernels_around_a_library_segment_compile_for_hopper():
    """The generated kernels before and after the library call compile for sm_90."""
    from layoutfuse.codegen.hopper_check import compile_last_run

    g = torch.Generator().manual_seed(9)
    a, b = torch.randn(8, 16, generator=g), torch.randn(16, 8, generator=g)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        m = fd.ops.matmul(fd.ops.sigmoid(ta), tb)
        fd.add_output(fd.ops.sum(fd.ops.mul(m, m), dims=[1]))
    fd.execute([a, b])
    artifacts = compile_last_run(fd.executor())
    assert len(artifacts) == 2 and all(x.ptx for x in artifacts)


def test_library_operands_computed_by_reductions_and_normalizations():
    """An operand from a reduction kernel (a sum over the last dim) and one from a
    normalization kernel (a softmax): both stored in buffers that torch then reads. (A
    keepdim column sum is a per-row value: a normalization kernel stores it.)"""
    g = torch.Generator().manual_seed(10)
    x, y = torch.randn(5, 6, 3, generator=g), torch.randn(6, 4, generator=g)
    with FusionDefinition() as fd:
        tx, ty = fd.from_pytorch(x), fd.from_pytorch(y)
        col = fd.ops.sum(tx, dims=[2])  # [5, 6]
        mx = fd.ops.max(ty, dims=[1], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(ty, mx))
        soft = fd.ops.div(e, fd.ops.sum(e, dims=[1], keepdim=True))  # [6, 4]
        fd.add_output(fd.ops.matmul(col, soft))
    (out,) = fd.execute([x, y])
    ref = x.sum(2) @ torch.softmax(y, 1)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    kinds = [s[0] for s in _segments(fd, [x, y])]
    assert kinds[-1] == "library" and {"normalization", "reduction"} <= set(kinds)


def _heads_fusion(fd, dtype, B, T, H, E, step):
    """GPT-2's attention around one library call: q, k and v sliced out of a [B, T, 3C]
    projection (every ``step``-th of their channels), split into heads and transposed,
    then the output transposed back and merged (C = H * E)."""
    C = H * E
    qkv = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=dtype)
    heads = []
    for k in range(3):
        x = fd.ops.slice(qkv, [0, 0, k * C * step], [B, T, (k + 1) * C * step], [1, 1, step])
        x = fd.ops.reshape(x, [B, T, H, E])
        heads.append(fd.ops.permute(x, [0, 2, 1, 3]))
    out, *_ = fd.ops.sdpfa_fwd(*heads, None, True, None)
    y = fd.ops.reshape(fd.ops.permute(out, [0, 2, 1, 3]), [B, T, C])
    fd.add_output(fd.ops.mul(y, fd.define_scalar(2.0)))


def _heads_reference(qkv, H, E, step):
    B, T, _ = qkv.shape
    C = H * E
    q, k, v = (
        qkv[:, :, j * C * step : (j + 1) * C * step : step].reshape(B, T, H, E).transpose(1, 2)
        for j in range(3)
    )
    out = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), is_causal=True
    )
    return (out.transpose(1, 2).reshape(B, T, C) * 2.0).to(qkv.dtype)


@pytest.mark.parametrize("tdtype,dtype", DTYPES)
@pytest.mark.parametrize("step", [1, 2])
def test_attention_heads_are_views_of_the_projection(tdtype, dtype, step):
    """q, k and v reach torch as views of the input (no kernel copies them): three view
    segments, the library call, one kernel for the output; replays make the views again of
    each call's input."""
    B, T, H, E = 2, 5, 2, 8
    with FusionDefinition() as fd:
        _heads_fusion(fd, dtype, B, T, H, E, step)
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        qkv = torch.randn(B, T, 3 * H * E * step, generator=g).to(tdtype)
        (out,) = fd.execute([qkv])
        torch.testing.assert_close(out, _heads_reference(qkv, H, E, step), **_tol(tdtype))
    executor = fd.executor()
    assert executor.planned_runs == 1
    record = executor.plan([qkv])
    kinds = [s.scheduler for s in record.segments]
    assert kinds == ["view", "view", "view", "library", "pointwise"], kinds
    (call,) = [c for c in record.library_calls if "ViewFn" not in repr(c.fn)]
    for operand in call.args[:3]:  # the views share the input's memory
        assert operand.untyped_storage().data_ptr() == qkv.untyped_storage().data_ptr()
    reasons = [s["reason"] for s in fd.segment([qkv]) if s["scheduler"] == "view"]
    assert all("a view of T0 (slice, reshape, permute), no kernel" in r for r in reasons)


def test_a_view_segment_copies_a_reshape_its_strides_cannot_express():
    """An input stored [T, B, C] and read logically [B, T, C]: merging B and T is no view
    of its strides, so the view segment copies (torch's reshape); the replay does again."""
    g = torch.Generator().manual_seed(11)
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.Float,
                             stride_order=[1, 2, 0])  # fmt: skip
        w = _tensor(fd, 2, DataType.Float)
        flat = fd.ops.reshape(x, [6, 4])
        fd.add_output(fd.ops.exp(fd.ops.matmul(flat, w)))
    for _ in range(2):
        a = torch.randn(3, 2, 4, generator=g).transpose(0, 1)  # [2, 3, 4], B outermost no more
        b = torch.randn(4, 5, generator=g)
        (out,) = fd.execute([a, b])
        torch.testing.assert_close(out, torch.exp(a.reshape(6, 4) @ b), rtol=1e-5, atol=1e-5)
    assert fd.executor().planned_runs == 1
    assert [s["scheduler"] for s in fd.segment([a, b])] == ["view", "library", "pointwise"]
    (view_call, _) = fd.executor().plan([a, b]).library_calls
    (operand,) = view_call.results  # a copy: not the input's memory
    assert operand.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()


def test_expanded_and_squeezed_operands_are_views():
    """A [1, 4, 6] input squeezed to [4, 6] and a [6] bias broadcast to [3, 6, 5]
    (stride 0 over the batch) reach torch as views of the inputs: two view segments, the
    matmul, one kernel."""
    g = torch.Generator().manual_seed(12)
    a = torch.randn(1, 4, 6, generator=g)
    b = torch.randn(6, 5, generator=g)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        sa = fd.ops.squeeze(ta, [0])
        wb = fd.ops.broadcast_in_dim(tb, shape=[3, 6, 5], broadcast_dims=[1, 2])
        fd.add_output(fd.ops.relu(fd.ops.matmul(sa, wb)))
    for _ in range(2):
        (out,) = fd.execute([a, b])
        torch.testing.assert_close(out, torch.relu(a[0] @ b.expand(3, 6, 5)), rtol=1e-5, atol=1e-5)
    assert out.shape == (3, 4, 5)
    record = fd.executor().plan([a, b])
    assert [s.scheduler for s in record.segments] == ["view", "view", "library", "pointwise"]
    views = [c.results[0] for c in record.library_calls if "ViewFn" in repr(c.fn)]
    assert views[1].stride()[0] == 0  # the expanded batch dim
    assert fd.executor().planned_runs == 1


@pytest.mark.parametrize("pinned", [False, True])
def test_an_operand_that_is_also_an_output(pinned):
    """The permuted operand is an output too. Unpinned, the output is a view of the input
    (the output layout pass) and so is the operand: no kernel at all. Pinned to the input's
    own order, a kernel stores the output and torch reads that buffer: no view segment."""
    g = torch.Generator().manual_seed(13)
    a, b = torch.randn(6, 4, generator=g), torch.randn(6, 5, generator=g)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        at = fd.ops.permute(ta, [1, 0])
        if pinned:
            fd.add_output(at, stride_order=[1, 0])
        else:
            fd.add_output(at)
        fd.add_output(fd.ops.matmul(at, tb))
    at_out, mm = fd.execute([a, b])
    torch.testing.assert_close(at_out, a.t())
    torch.testing.assert_close(mm, a.t() @ b, rtol=1e-5, atol=1e-5)
    kinds = [s["scheduler"] for s in fd.segment([a, b])]
    if pinned:
        assert kinds == ["pointwise", "library"], kinds
        assert at_out.stride() == (6, 1)
    else:
        assert kinds == ["view", "library"], kinds
        assert at_out.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()


def _planned(fd):
    (plan,) = fd.executor()._plans.values()
    return plan


def test_a_library_result_that_is_an_output_is_returned_as_torch_made_it():
    """matmul's row-major result is laid out as its output: returned, not copied into a
    buffer of its own; the kernel after it reads it; replays return each call's result
    (a new tensor per call) with the new data."""
    with FusionDefinition() as fd:
        t0, t1 = _tensor(fd, 2, DataType.Float), _tensor(fd, 2, DataType.Float)
        m = fd.ops.matmul(t0, t1)
        fd.add_output(m)
        fd.add_output(fd.ops.exp(m))
    seen = []
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        a, b = torch.randn(4, 6, generator=g), torch.randn(6, 5, generator=g)
        mm, e = fd.execute([a, b])
        torch.testing.assert_close(mm, a @ b, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(e, torch.exp(a @ b), rtol=1e-5, atol=1e-5)
        assert mm.stride() == (5, 1)
        seen.append(mm)  # kept alive: the allocator cannot hand its memory out again
    assert fd.executor().planned_runs == 1
    plan = _planned(fd)
    assert plan.bound == {0: 0} and "out0.copy_" not in plan.source, plan.source
    assert len({m.untyped_storage().data_ptr() for m in seen}) == 3  # each call's own


def test_a_library_result_laid_out_otherwise_is_copied_into_its_output():
    """The output pinned column-major: torch's row-major result is copied into it."""
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(4, 6, generator=g), torch.randn(6, 5, generator=g)
    with FusionDefinition() as fd:
        t0, t1 = _tensor(fd, 2, DataType.Float), _tensor(fd, 2, DataType.Float)
        fd.add_output(fd.ops.matmul(t0, t1), stride_order=[0, 1])
    for _ in range(2):
        (mm,) = fd.execute([a, b])
        torch.testing.assert_close(mm, a @ b, rtol=1e-5, atol=1e-5)
        assert mm.stride() == (1, 4)
    plan = _planned(fd)
    assert plan.bound == {} and "out0.copy_" in plan.source


def test_a_library_result_viewed_by_another_output_is_returned_as_made():
    """matmul's result and a reshape of it (a view of the result, as Thunder returns the
    attention output and its heads merged): the result is returned as torch made it and
    the reshape is a view of it, made again by every replay."""
    g = torch.Generator().manual_seed(6)
    with FusionDefinition() as fd:
        t0, t1 = _tensor(fd, 3, DataType.Float), _tensor(fd, 3, DataType.Float)
        m = fd.ops.matmul(t0, t1)  # [2, 4, 5]
        fd.add_output(m)
        fd.add_output(fd.ops.reshape(m, [8, 5]))
    for _ in range(3):
        a, b = torch.randn(2, 4, 3, generator=g), torch.randn(2, 3, 5, generator=g)
        mm, flat = fd.execute([a, b])
        torch.testing.assert_close(mm, a @ b, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(flat, (a @ b).reshape(8, 5), rtol=1e-5, atol=1e-5)
        assert flat.untyped_storage().data_ptr() == mm.untyped_storage().data_ptr()
    assert fd.executor().planned_runs == 1
    plan = _planned(fd)
    assert plan.bound == {0: 0} and "out0.copy_" not in plan.source, plan.source


def test_a_library_result_whose_view_it_cannot_make_is_copied():
    """The result transposed, then flattened, as an output beside it: a view of a
    row-major buffer laid out for it, not of torch's result; the result is copied into
    that buffer."""
    g = torch.Generator().manual_seed(7)
    with FusionDefinition() as fd:
        t0, t1 = _tensor(fd, 2, DataType.Float), _tensor(fd, 2, DataType.Float)
        m = fd.ops.matmul(t0, t1)  # [4, 5]
        fd.add_output(m)
        fd.add_output(fd.ops.reshape(fd.ops.permute(m, [1, 0]), [20]))
    for _ in range(2):
        a, b = torch.randn(4, 3, generator=g), torch.randn(3, 5, generator=g)
        mm, flat = fd.execute([a, b])
        torch.testing.assert_close(mm, a @ b, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(flat, (a @ b).t().reshape(20), rtol=1e-5, atol=1e-5)


def test_a_library_result_returned_twice_is_copied():
    """The same result added as two outputs: two buffers of their own, both filled."""
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(3, 4, generator=g), torch.randn(4, 2, generator=g)
    with FusionDefinition() as fd:
        t0, t1 = _tensor(fd, 2, DataType.Float), _tensor(fd, 2, DataType.Float)
        m = fd.ops.matmul(t0, t1)
        fd.add_output(m)
        fd.add_output(m)
    for _ in range(2):
        x, y = fd.execute([a, b])
        torch.testing.assert_close(x, a @ b, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(y, a @ b, rtol=1e-5, atol=1e-5)
        assert x.untyped_storage().data_ptr() != y.untyped_storage().data_ptr()


def test_attention_results_kept_for_the_backward_are_returned_as_made():
    """The forward's output, logsumexp and philox state as outputs (as Thunder keeps them
    for the backward): each is returned as the library call made it, in the layout torch's
    kernel gives it (on the GPU the memory-efficient kernel's output is [B, L, H, E] in
    memory and its logsumexp a slice of a padded one: ``F.scaled_dot_product_attention``'s
    own strides, no copy)."""
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=g) for _ in range(3))
    with FusionDefinition() as fd:
        tq, tk, tv = (_tensor(fd, 4, DataType.Float) for _ in range(3))
        for t in fd.ops.sdpfa_fwd(tq, tk, tv, None, True, None):
            fd.add_output(t)
    for _ in range(2):
        out, lse, seed, offset = fd.execute([q, k, v])
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        assert out.stride() == ref.stride()
        assert lse.shape == (1, 2, 4) and seed.shape == (2,) and offset.shape == ()
    assert _planned(fd).bound == {0: 0, 1: 1, 2: 2, 3: 3}
