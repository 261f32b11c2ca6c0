"""Library ops, one table per op: nvFuser's argument forms and dtypes, through generated
kernels and library segments, against torch. (``ir/ops/matmul.py``, ``ir/ops/attention.py``.)
"""

import pytest
import torch

from layoutfuse.errors import DefinitionError, InputShapeError, UnsupportedError
from layoutfuse.nvfuser import DataType, FusionDefinition

DTYPES = [(torch.float32, DataType.Float), (torch.bfloat16, DataType.BFloat16)]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)


def _define(fd, t, dtype):
    """An input like ``t`` (its layout, symbolic extents) of ``dtype``."""
    x = fd.from_pytorch(t)
    assert x.dtype is dtype
    return x


def _randn(shape, dtype, seed):
    return torch.randn(tuple(shape), generator=torch.Generator().manual_seed(seed)).to(dtype)


MATMUL_SHAPES = [
    ((7,), (7,)),
    ((7,), (7, 3)),
    ((4, 7), (7,)),
    ((4, 7), (7, 3)),
    ((2, 4, 7), (7, 3)),
    ((4, 7), (2, 7, 3)),
    ((2, 1, 4, 7), (3, 7, 5)),
]


@pytest.mark.parametrize("tdtype,dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_forms(tdtype, dtype, sa, sb):
    a, b = _randn(sa, tdtype, 0), _randn(sb, tdtype, 1)
    with FusionDefinition() as fd:
        m = fd.ops.matmul(_define(fd, a, dtype), _define(fd, b, dtype))
        fd.add_output(m)
    (out,) = fd.execute([a, b])
    ref = torch.matmul(a, b)
    assert out.shape == ref.shape and out.dtype == tdtype
    torch.testing.assert_close(out, ref, **_tol(tdtype))


def test_matmul_of_a_transposed_input():
    a = _randn((6, 4), torch.float32, 2).t()  # [4, 6], column-major
    b = _randn((6, 5), torch.float32, 3)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.matmul(_define(fd, a, DataType.Float), _define(fd, b, DataType.Float)))
    (out,) = fd.execute([a, b])
    torch.testing.assert_close(out, a @ b)


def test_matmul_checks_extents():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[4, 7], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[6, 3], contiguity=[True, True], dtype=DataType.Float)
        with pytest.raises(DefinitionError, match="contracted extents"):
            fd.ops.matmul(a, b)
    with FusionDefinition() as fd:
        a, b = (fd.define_tensor(shape=[-1, -1], dtype=DataType.Float) for _ in range(2))
        fd.add_output(fd.ops.matmul(a, b))
    with pytest.raises(InputShapeError, match="contracted extents"):
        fd.execute([torch.randn(4, 7), torch.randn(6, 3)])


@pytest.mark.parametrize("tdtype,dtype", DTYPES)
@pytest.mark.parametrize("x_shape", [(5, 8), (2, 3, 8), (8,)])
@pytest.mark.parametrize("w_shape", [(6, 8), (8,)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_forms(tdtype, dtype, x_shape, w_shape, with_bias):
    x, w = _randn(x_shape, tdtype, 0), _randn(w_shape, tdtype, 1)
    bias = _randn(w_shape[:1] if len(w_shape) == 2 else (), tdtype, 2)
    with FusionDefinition() as fd:
        tb = _define(fd, bias, dtype) if with_bias else None
        out = fd.ops.linear(_define(fd, x, dtype), _define(fd, w, dtype), tb)
        fd.add_output(out)
    inputs = [bias, x, w] if with_bias else [x, w]
    (got,) = fd.execute(inputs)
    ref = torch.nn.functional.linear(x, w)
    ref = ref + bias if with_bias else ref
    assert got.shape == ref.shape
    torch.testing.assert_close(got, ref, **_tol(tdtype))


GROUPED = [
    ((16, 32), (3, 32, 16), [3, 9, 16]),  # groups of rows
    ((3, 16, 32), (32, 48), [16, 32, 48]),  # groups of columns
    ((16, 32), (32, 16), [8, 16, 32]),  # groups of the contracted dim
]


@pytest.mark.parametrize("tdtype,dtype", DTYPES)
@pytest.mark.parametrize("sa,sb,offsets", GROUPED)
def test_grouped_mm_forms(tdtype, dtype, sa, sb, offsets):
    a, b = _randn(sa, tdtype, 0), _randn(sb, tdtype, 1)
    offs = torch.tensor(offsets, dtype=torch.int32)
    with FusionDefinition() as fd:
        ta, tb = _define(fd, a, dtype), _define(fd, b, dtype)
        to = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32)
        fd.add_output(fd.ops.grouped_mm(ta, tb, to))
    (got,) = fd.execute([a, b, offs])
    # torch's own grouped mm (it takes mat2 with its last two dims column-major)
    ref = torch._grouped_mm(
        a.to(torch.bfloat16),
        b.to(torch.bfloat16).transpose(-2, -1).contiguous().transpose(-2, -1),
        offs=offs,
    )
    torch.testing.assert_close(got.to(torch.bfloat16), ref, rtol=2e-2, atol=5e-2)
    assert got.dtype == tdtype


def _attention_inputs(tdtype, seed, L=5, S=6, E=8, Ev=4):
    q = _randn((2, 3, L, E), tdtype, seed)
    k = _randn((2, 3, S, E), tdtype, seed + 1)
    v = _randn((2, 3, S, Ev), tdtype, seed + 2)
    return q, k, v


@pytest.mark.parametrize("tdtype,dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.25])
def test_sdpfa_backward_against_autograd(tdtype, dtype, is_causal, scale):
    q, k, v = _attention_inputs(tdtype, 0, L=6, S=6)
    grad = _randn((2, 3, 6, 4), tdtype, 9)
    with FusionDefinition() as fd:
        tq, tk, tv = (_define(fd, t, dtype) for t in (q, k, v))
        tg = _define(fd, grad, dtype)
        out, lse, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, None, None, 0.0, is_causal, scale)
        dq, dk, dv = fd.ops.sdpfa_bwd(tg, tq, tk, tv, out, lse, 0.0, is_causal, seed, offset, scale)
        for t in (out, dq, dk, dv):
            fd.add_output(t)
    got = fd.execute([q, k, v, grad])
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    ref = torch.nn.functional.scaled_dot_product_attention(
        *leaves, is_causal=is_causal, scale=scale
    )
    ref.backward(grad.float())
    expected = [ref.detach()] + [t.grad for t in leaves]
    tol = _tol(tdtype) if tdtype == torch.float32 else dict(rtol=5e-2, atol=5e-2)
    for g, e in zip(got, expected):
        assert g.dtype == tdtype
        torch.testing.assert_close(g.float(), e, **tol)


def test_sdpfa_fwd_value_head_dim_and_key_length_differ():
    q, k, v = _attention_inputs(torch.float32, 3, L=3, S=7, E=8, Ev=5)
    with FusionDefinition() as fd:
        out, lse, _, _ = fd.ops.sdpfa_fwd(*(_define(fd, t, DataType.Float) for t in (q, k, v)))
        fd.add_output(out)
        fd.add_output(lse)
    out, lse = fd.execute([q, k, v])
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert out.shape == (2, 3, 3, 5) and lse.shape == (2, 3, 3)


@pytest.mark.parametrize("as_handles", [False, True])
def test_sdpfa_fwd_takes_the_form_before_bias_and_mask(as_handles):
    """nvFuser before 0.2.35 (and Thunder 0.2.6, positionally): (q, k, v, dropout_p,
    is_causal, scale)."""
    q, k, v = _attention_inputs(torch.float32, 4, L=6, S=6)
    with FusionDefinition() as fd:
        tq, tk, tv = (_define(fd, t, DataType.Float) for t in (q, k, v))
        opts = (0.0, True, 0.5)
        if as_handles:
            opts = tuple(fd.define_scalar(x) for x in opts)
        out, lse, _, _ = fd.ops.sdpfa_fwd(tq, tk, tv, *opts)
        fd.add_output(out)
    (got,) = fd.execute([q, k, v])
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    with FusionDefinition() as fd:  # dropout_p None, is_causal given
        tq, tk, tv = (_define(fd, t, DataType.Float) for t in (q, k, v))
        out, *_ = fd.ops.sdpfa_fwd(tq, tk, tv, None, True, 0.5)
        fd.add_output(out)
    (got,) = fd.execute([q, k, v])
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    with FusionDefinition() as fd:
        tq, tk, tv = (_define(fd, t, DataType.Float) for t in (q, k, v))
        with pytest.raises(DefinitionError, match="without bias and mask"):
            fd.ops.sdpfa_fwd(tq, tk, tv, 0.0, True, 0.5, True)


def test_sdpfa_fwd_refuses_mask_and_bias():
    with FusionDefinition() as fd:
        q, k, v, m = (fd.define_tensor(shape=[-1] * 4, dtype=DataType.Float) for _ in range(4))
        with pytest.raises(UnsupportedError, match="bias and mask"):
            fd.ops.sdpfa_fwd(q, k, v, mask=m)


@pytest.mark.skipif(
    torch.get_default_device().type == "cuda", reason="the GPU's flash attention has dropout"
)
def test_sdpfa_dropout_needs_flash_attention():
    q, k, v = _attention_inputs(torch.float32, 0)
    with FusionDefinition() as fd:
        out, *_ = fd.ops.sdpfa_fwd(
            *(_define(fd, t, DataType.Float) for t in (q, k, v)), None, None, 0.5
        )  # noqa: E501
        fd.add_output(out)
    with pytest.raises(UnsupportedError, match="dropout_p=0.5"):
        fd.execute([q, k, v])


_ON_GPU = torch.get_default_device().type == "cuda"


@pytest.mark.skipif(not _ON_GPU, reason="torch's attention kernels run on the GPU")
@pytest.mark.parametrize("tdtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("L,E", [(128, 64), (100, 128), (77, 40)])
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpfa_runs_the_kernel_torch_picks(tdtype, L, E, is_causal):
    """The forward is bit for bit ``F.scaled_dot_product_attention``'s (the same kernel:
    cuDNN, memory-efficient or flash, as torch's dispatch picks), on operands transposed
    out of a [B, L, H, E] projection as a model's are, and the backward matches autograd's
    through it (the logsumexp handed between them in [B, H, L], whatever the kernel's)."""
    B, H = 2, 3
    gen = torch.Generator(device="cuda").manual_seed(L + E)
    q, k, v = (
        torch.randn(B, L, H, E, device="cuda", generator=gen, dtype=tdtype).transpose(1, 2)
        for _ in range(3)
    )
    grad = torch.randn(B, L, H, E, device="cuda", generator=gen, dtype=tdtype).transpose(1, 2)
    dtype = {torch.bfloat16: DataType.BFloat16, torch.float16: DataType.Half}.get(
        tdtype, DataType.Float
    )
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (_define(fd, t, dtype) for t in (q, k, v, grad))
        out, lse, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, None, None, 0.0, is_causal, None)
        dq, dk, dv = fd.ops.sdpfa_bwd(tg, tq, tk, tv, out, lse, 0.0, is_causal, seed, offset, None)
        for t in (out, lse, dq, dk, dv):
            fd.add_output(t)
    got_out, got_lse, *got_grads = fd.execute([q, k, v, grad])
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    ref = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=is_causal)
    ref.backward(grad)
    assert torch.equal(got_out, ref.detach())
    assert got_lse.shape == (B, H, L) and got_lse.dtype == torch.float32
    scores = (q.float() @ k.float().transpose(-2, -1)) / E**0.5
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, L, device="cuda").triu(1).bool(), -torch.inf)
    torch.testing.assert_close(got_lse, torch.logsumexp(scores, -1), rtol=2e-2, atol=2e-2)
    for g, leaf in zip(got_grads, leaves):
        assert g.dtype == tdtype and g.shape == leaf.shape
        torch.testing.assert_close(g, leaf.grad, rtol=2e-2, atol=2e-2)


def test_efficient_attention_logsumexp_is_padded_to_32_rows():
    from layoutfuse.ir.ops.attention import _padded_lse

    lse = torch.randn(2, 3, 45)
    padded = _padded_lse(lse[..., :40])
    assert padded.shape == (2, 3, 64) and padded.is_contiguous()
    assert torch.equal(padded[..., :40], lse[..., :40]) and not padded[..., 40:].any()
    whole = torch.randn(2, 3, 64)
    assert _padded_lse(whole) is whole


@pytest.mark.parametrize(
    "picked,dtype,dropout,want",
    [
        ("cudnn", torch.bfloat16, 0.0, "cudnn"),
        ("cudnn", torch.bfloat16, 0.1, "flash"),  # cuDNN's philox state is not nvFuser's
        ("efficient", torch.float32, 0.0, "efficient"),
        ("efficient", torch.float32, 0.1, "math"),  # no flash in fp32: the math refuses it
        ("flash", torch.float16, 0.1, "flash"),
        ("math", torch.float16, 0.0, "flash"),  # flash takes these operands
        ("math", torch.float32, 0.0, "math"),
    ],
)
def test_the_attention_kernel_follows_torchs_pick(monkeypatch, picked, dtype, dropout, want):
    """``_backend`` on the GPU: torch's pick where the outputs carry its backward's state
    (no dropout for cuDNN and the memory-efficient kernel), else flash where it takes the
    operands, else the math. (Operands on "meta" stand in for CUDA tensors here.)"""
    from layoutfuse.ir.ops import attention

    q = torch.empty(2, 3, 16, 64, dtype=dtype, device="meta")
    monkeypatch.setattr(attention, "_torch_choice", lambda *a: picked)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda t: True))
    assert attention._backend(q, q, q, dropout, True) == want


def test_the_attention_kernel_on_the_cpu_is_the_math():
    from layoutfuse.ir.ops import attention

    q = torch.empty(2, 3, 16, 64, dtype=torch.bfloat16, device="cpu")
    assert attention._backend(q, q, q, 0.0, False) == "math"
