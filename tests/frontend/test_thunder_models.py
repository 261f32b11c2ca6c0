"""Thunder's nvFuser executor on layoutfuse, on the rest of what LitGPT-style models run
(issue 15's list beside ``test_thunder_jit.py``'s norms, softmax and GELU MLP): a SwiGLU
MLP (SiLU), rotary position embeddings, causal attention through SDPA (``nv_enable_sdpa``:
Thunder's ``sdpfa_fwd`` / ``sdpfa_bwd``, run through torch by layoutfuse's library
segments), cross-entropy of logits against integer targets, dropout, an Adam step, a
LLaMA-style block of them, smaller programs, and every memory order of an activation.
Each is jitted, forward and backward where it has one, fp32 and bf16, and checked against
eager; every op of the traces runs inside an nvFuser region (matmuls and shape-only regions
excepted, as Thunder's defaults leave them to torch), every region ran on layoutfuse, and
each took the kernels the table says. Dropout's numbers are Thunder's Philox draws, not
torch's: its check is that each output is 0 or x / (1 - p), about p of them 0, and that
the gradient takes the same mask. Skipped without lightning-thunder
(``tests/support/thunder.py``)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from support import thunder as thunder_support
from support.tensors import with_order
from support.thunder import regions_and_torch_ops

TORCH_OPS_ALLOWED = {"linear", "matmul", "permute", "reshape", "torch_prims_reshape_impl"}
TORCH_OPS_ALLOWED |= {"transpose", "view"}
# fp32 attention (Thunder's nvFuser SDPA takes fp16 and bf16 only)
TORCH_OPS_ALLOWED |= {"scaled_dot_product_attention", "torch_sdpa"}
# Thunder's Philox state on CUDA (read and advanced by Thunder before a region draws)
TORCH_OPS_ALLOWED |= {"get_and_update_rng_state_impl"}
DEV = torch.get_default_device  # the tests' device (``--device cuda``: CUDA tensors)
B, T, NH, HD = 2, 8, 2, 16
H = NH * HD
V = 50


def swiglu_mlp(x, w1, w3, w2):
    return F.linear(F.silu(F.linear(x, w1)) * F.linear(x, w3), w2)


def rotary(q, cos, sin):
    """LitGPT's ``apply_rope``: the halves rotated, then mixed by cos and sin."""
    half = q.shape[-1] // 2
    rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
    return (q * cos + rotated * sin).to(q.dtype)


def attention(q, k, v):
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(q.shape[0], q.shape[2], -1)


def cross_entropy(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def dropout(x):
    return F.dropout(x, p=0.25, training=True)


def adam_step(p, g, m, v, step):
    """One Adam update (torch.optim.Adam's formula, bias-corrected), functional."""
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    m_hat = m / (1 - b1**step)
    v_hat = v / (1 - b2**step)
    return p - lr * m_hat / (torch.sqrt(v_hat) + eps), m, v


def _rope_cache(dtype):
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    inv = 1.0 / (10000 ** (torch.arange(0, HD, 2, dtype=torch.float32) / HD))
    angles = torch.cat([pos * inv, pos * inv], dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def _inputs(name: str, dtype: torch.dtype, g: torch.Generator) -> list:
    def grad(*shape):
        t = torch.randn(shape, generator=g, device="cpu") * 0.5
        return t.to(DEV(), dtype).requires_grad_(True)

    if name == "swiglu_mlp":
        return [grad(B, T, H), grad(2 * H, H), grad(2 * H, H), grad(H, 2 * H)]
    if name == "rotary":
        return [grad(B, NH, T, HD), *_rope_cache(dtype)]
    if name == "attention":
        return [grad(B, NH, T, HD) for _ in range(3)]
    if name == "cross_entropy":
        return [grad(B, T, V), torch.randint(0, V, (B, T), generator=g, device="cpu").to(DEV())]
    if name == "dropout":
        return [grad(B, T, H)]
    # adam: parameters, gradients and moments in the dtype (v from squares: non-negative)
    p, gr, m = (torch.randn(B, H, generator=g, device="cpu").to(DEV(), dtype) for _ in range(3))
    return [p, gr, m, torch.rand(B, H, generator=g, device="cpu").to(DEV(), dtype), 3]


PROGRAMS = {
    "swiglu_mlp": swiglu_mlp,
    "rotary": rotary,
    "attention": attention,
    "cross_entropy": cross_entropy,
    "dropout": dropout,
    "adam_step": adam_step,
}
TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1.6e-2, 2e-2)}
# kernels per nvFuser region, in execution order: [forward] or [forward, backward]; the
# same in fp32 and bf16 unless listed twice. cross_entropy's forward: the max and the sum of
# exponentials in one normalization kernel (``segments._chained_groups``), then the loss's
# sum over the rows, the count of valid targets and the mean in another (siblings).
KERNELS = {
    ("swiglu_mlp", "fp32"): [[1, 1], [1, 1, 1]],
    ("swiglu_mlp", "bf16"): [[1], [1, 1, 1]],
    "rotary": [[1], [1]],
    "attention": [[2, 1], [1, 2]],
    # on CUDA Thunder hands bf16 attention to nvFuser's flash SDPA (``sdpfa_fwd``/``_bwd``,
    # one library call each): its checker picks flash attention only there. The backward's
    # operands are views of its inputs (view segments): no kernel (H100 at c99ee56)
    ("attention", "bf16", "cuda"): [[1], [0]],
    "cross_entropy": [[2], [1]],
    "dropout": [[1], [1]],  # run on CUDA only (Thunder keeps its Philox state there)
    "adam_step": [[1]],
}


def _checked_kernels(traces) -> list[list[int]]:
    """Each (trace, kernels per region) pair's kernels, after checking that every op
    outside the trace's nvFuser regions is an allowed one and every region ran on
    layoutfuse."""
    for trace, kernels in traces:
        regions, torch_ops = regions_and_torch_ops(trace)
        assert set(torch_ops) <= TORCH_OPS_ALLOWED, f"ops outside nvFuser regions: {torch_ops}"
        assert len(regions) == len(kernels), "every region ran on layoutfuse"
    return [kernels for _, kernels in traces]


def _listed(table: dict, *keys):
    """The entry of ``table`` under the first of ``keys`` it lists (most specific first:
    program, dtype and device; program and dtype; program)."""
    return next(table[k] for k in keys if k in table)


def _options(name: str, dtype: torch.dtype) -> dict:
    """Thunder's nvFuser SDPA (``nv_enable_sdpa``) takes fp16 and bf16 only: fp32 attention
    stays on torch."""
    return {"nv_enable_sdpa": True} if name == "attention" and dtype != torch.float32 else {}


def _fp32_leaf(a):
    if not isinstance(a, torch.Tensor) or not a.is_floating_point():
        return a
    return a.detach().float().requires_grad_(a.requires_grad)


def _assert_close(got, want, dtype, msg=""):
    rtol, atol = TOLERANCES[dtype]
    scale = max(1.0, want.detach().abs().max().item())
    torch.testing.assert_close(got.float(), want.float(), rtol=rtol, atol=atol * scale, msg=msg)


def _check_dropout(got, x, p=0.25):
    scaled = x / (1 - p)
    zero = got == 0
    assert torch.equal(got[~zero], scaled[~zero].to(got.dtype)) or torch.allclose(
        got[~zero].float(), scaled[~zero].float(), rtol=1e-2
    )
    frac = zero.float().mean().item()
    n = zero.numel()
    assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / n), frac
    return zero


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_litgpt_programs_on_layoutfuse(name, dtype, region_kernels):
    thunder, impl = thunder_support.load()
    fn = PROGRAMS[name]
    g = torch.Generator().manual_seed(0)
    args = _inputs(name, dtype, g)
    if name == "dropout" and not args[0].is_cuda:
        pytest.skip("Thunder's dropout keeps its Philox state on CUDA only")
    jitted = thunder.jit(fn, executors=[impl.ex], **_options(name, dtype))
    got = jitted(*args)
    # the reference in fp32 (Thunder computes a bf16 program's intermediates in fp32, as
    # layoutfuse does; eager rounds each op's result), compared at the dtype's tolerance
    # of the reference's largest magnitude
    ref_args = [_fp32_leaf(a) for a in args]
    want = fn(*ref_args)
    if name == "dropout":
        mask = ~_check_dropout(got.detach(), args[0].detach())
    elif isinstance(want, tuple):  # the Adam step's parameters and moments
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_close(a, b, dtype, f"result {k}")
    else:
        _assert_close(got, want, dtype)
    n_forward = len(region_kernels)
    differentiable = [
        k for k, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad
    ]
    if differentiable:
        cotangent = torch.randn(want.shape, generator=g, device="cpu").to(got.device, got.dtype)
        got_grads = torch.autograd.grad(got, [args[k] for k in differentiable], cotangent)
        if name == "dropout":
            want_grad = torch.where(mask, cotangent.float() / 0.75, 0)
            _assert_close(got_grads[0], want_grad, dtype)
        else:
            want_grads = torch.autograd.grad(
                want, [ref_args[k] for k in differentiable], cotangent.float()
            )
            for k, (a, b) in enumerate(zip(got_grads, want_grads)):
                _assert_close(a, b, dtype, f"grad {k}")
    traces = [(thunder.last_traces(jitted)[-1], region_kernels[:n_forward])]
    if differentiable:
        traces.append((thunder.last_backward_traces(jitted)[-1], region_kernels[n_forward:]))
    dtype_id = "fp32" if dtype == torch.float32 else "bf16"
    device = torch.get_default_device().type
    assert _checked_kernels(traces) == _listed(
        KERNELS, (name, dtype_id, device), (name, dtype_id), name
    )


class _RMSNorm(torch.nn.Module):
    def __init__(self, n: int, g: torch.Generator):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + 0.1 * torch.randn(n, generator=g, device="cpu"))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
        return (y * self.weight.float()).to(x.dtype)


class LlamaBlock(torch.nn.Module):
    """A LLaMA-style block as LitGPT builds one: RMS norms, fused qkv, rotary embeddings on
    q and k, causal SDPA, a SwiGLU MLP, residuals; no biases."""

    def __init__(self, n: int, heads: int, hidden: int, g: torch.Generator):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = _RMSNorm(n, g), _RMSNorm(n, g)

        def linear(i, o):
            return torch.nn.Parameter(torch.randn(o, i, generator=g, device="cpu") / i**0.5)

        self.qkv, self.proj = linear(n, 3 * n), linear(n, n)
        self.fc1, self.fc2, self.out = linear(n, hidden), linear(n, hidden), linear(hidden, n)

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        q, k, v = F.linear(self.norm1(x), self.qkv).split(c, dim=2)
        q, k, v = (u.view(b, t, self.heads, c // self.heads).transpose(1, 2) for u in (q, k, v))
        y = F.scaled_dot_product_attention(
            rotary(q, cos, sin), rotary(k, cos, sin), v, is_causal=True
        )
        x = x + F.linear(y.transpose(1, 2).reshape(b, t, c), self.proj)
        h = self.norm2(x)
        return x + F.linear(F.silu(F.linear(h, self.fc1)) * F.linear(h, self.fc2), self.out)


# kernels per region, forward then backward (Thunder's regions between the matmuls). The
# forward's 3: q, k and v split from qkv, each transposed to heads (k and q rotated), each
# stored by a kernel of its own coordinates. A backward region of 0 kernels returns views.
BLOCK_KERNELS = {
    "fp32": [[1, 3, 1, 1, 1, 1, 1], [1, 1, 2, 1, 1, 2]],
    "bf16": [[1, 3, 1, 1, 1, 1], [0, 1, 1, 2, 1, 1, 2]],
    # on CUDA the bf16 attention is nvFuser's flash SDPA inside the regions around it: the
    # forward's rotary q and k kernels and the SDPA call in one region (3: v is a view), the
    # backward's SDPA call with the gradients' kernels around it (3: its operands are views)
    ("bf16", "cuda"): [[1, 3, 1, 1, 1], [0, 1, 1, 2, 3, 2]],
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_a_llama_style_block_trains_on_layoutfuse(dtype, region_kernels):
    """The block's forward and every gradient (input and parameters) against the fp32
    eager block with the same weights; every op but the matmuls and shape-only regions in
    an nvFuser region, every region on layoutfuse."""
    thunder, impl = thunder_support.load()
    g = torch.Generator().manual_seed(0)
    block = LlamaBlock(H, NH, 2 * H, g)
    ref = LlamaBlock(H, NH, 2 * H, torch.Generator().manual_seed(0))
    block = block.to(device=torch.get_default_device(), dtype=dtype)
    ref = ref.to(device=torch.get_default_device())
    x = (torch.randn(B, T, H, generator=g, device="cpu") * 0.5).to(
        torch.get_default_device(), dtype
    )
    x.requires_grad_(True)
    cos, sin = (c.to(torch.get_default_device()) for c in _rope_cache(dtype))
    jitted = thunder.jit(block, executors=[impl.ex], **_options("attention", dtype))
    got = jitted(x, cos, sin)
    x32 = x.detach().float().requires_grad_(True)
    want = ref(x32, cos.float(), sin.float())
    _assert_close(got, want, dtype)
    n_forward = len(region_kernels)
    cotangent = torch.randn(got.shape, generator=g, device="cpu").to(got.device, dtype)
    got.backward(cotangent)
    want.backward(cotangent.float())
    _assert_close(x.grad, x32.grad, dtype, "grad x")
    for (name, p), (_, p32) in zip(block.named_parameters(), ref.named_parameters(), strict=True):
        _assert_close(p.grad, p32.grad, dtype, f"grad {name}")
    traces = [
        (thunder.last_traces(jitted)[-1], region_kernels[:n_forward]),
        (thunder.last_backward_traces(jitted)[-1], region_kernels[n_forward:]),
    ]
    dtype_id = "fp32" if dtype == torch.float32 else "bf16"
    device = torch.get_default_device().type
    assert _checked_kernels(traces) == _listed(BLOCK_KERNELS, (dtype_id, device), dtype_id)


# --- smaller programs: what else Thunder's nvFuser executor hands over ----------------------
def _small(*shape, dtype, g, grad=True):
    t = torch.randn(*shape, generator=g, device="cpu").to(torch.get_default_device(), dtype)
    return t.requires_grad_(grad)


def _ints(high, shape, g):
    return torch.randint(0, high, shape, generator=g, device="cpu").to(torch.get_default_device())


SMALL = {
    "embedding": (
        lambda w, i: F.embedding(i, w),
        lambda d, g: [_small(50, 16, dtype=d, g=g), _ints(50, (4, 8), g)],
    ),
    "gelu_tanh": (
        lambda x: F.gelu(x, approximate="tanh"),
        lambda d, g: [_small(4, 8, 16, dtype=d, g=g)],
    ),
    "layer_norm_no_affine": (
        lambda x: F.layer_norm(x, (16,)),
        lambda d, g: [_small(4, 8, 16, dtype=d, g=g)],
    ),
    "causal_mask_softmax": (
        lambda x: x.masked_fill(
            torch.ones(8, 8, dtype=torch.bool, device=x.device).triu(1), float("-inf")
        ).softmax(-1),
        lambda d, g: [_small(2, 8, 8, dtype=d, g=g)],
    ),
    "topk_values": (lambda x: x.topk(3, -1)[0], lambda d, g: [_small(4, 16, dtype=d, g=g)]),
    "mse": (F.mse_loss, lambda d, g: [_small(4, 16, dtype=d, g=g), _small(4, 16, dtype=d, g=g)]),
    "tanh_sigmoid": (
        lambda x: torch.tanh(x) * torch.sigmoid(x),
        lambda d, g: [_small(4, 16, dtype=d, g=g)],
    ),
    "clamp_pow": (lambda x: x.clamp(-1, 1).pow(3), lambda d, g: [_small(4, 16, dtype=d, g=g)]),
    "var": (lambda x: torch.var_mean(x, -1)[0], lambda d, g: [_small(4, 16, dtype=d, g=g)]),
    "amax": (lambda x: x.amax(0), lambda d, g: [_small(4, 16, dtype=d, g=g)]),
    "cat_chunk": (
        lambda x, y: torch.cat([x, y], -1).chunk(4, -1)[1] * 2,
        lambda d, g: [_small(4, 16, dtype=d, g=g), _small(4, 16, dtype=d, g=g)],
    ),
    "pad": (lambda x: F.pad(x, (1, 2)), lambda d, g: [_small(4, 16, dtype=d, g=g)]),
    "group_norm": (lambda x: F.group_norm(x, 2), lambda d, g: [_small(2, 4, 8, dtype=d, g=g)]),
    "batch_norm_train": (
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        lambda d, g: [
            _small(4, 3, 5, dtype=d, g=g),
            _small(3, dtype=d, g=g),
            _small(3, dtype=d, g=g),
        ],
    ),
    "leaky_where": (
        lambda x: torch.where(x > 0, x, 0.1 * x),
        lambda d, g: [_small(4, 16, dtype=d, g=g)],
    ),
    "logsumexp": (lambda x: torch.logsumexp(x, -1), lambda d, g: [_small(4, 16, dtype=d, g=g)]),
    "outer_broadcast": (
        lambda x, y: x[:, None, :] * y[None, :, :],
        lambda d, g: [_small(4, 16, dtype=d, g=g), _small(3, 16, dtype=d, g=g)],
    ),
    "index_select_sum": (
        lambda x, i: x.index_select(0, i).sum(0),
        lambda d, g: [_small(10, 16, dtype=d, g=g), _ints(10, (4,), g)],
    ),
}
# ops Thunder 0.2.6 keeps off nvFuser in these programs (its executor does not claim them)
SMALL_OUTSIDE = {"matmul", "shallow_copy", "torch.ops.aten.embedding_backward"}
SMALL_OUTSIDE |= {"scatter_add", "index_add"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", SMALL)
def test_smaller_programs_run_on_layoutfuse(name, dtype):
    """Embedding, tanh GELU, causal masking, topk, losses, group and batch norm, pads,
    concatenations, gathers: forward and backward through Thunder against an fp32 eager
    reference; every nvFuser region ran on layoutfuse."""
    thunder, impl = thunder_support.load()
    fn, make = SMALL[name]
    g = torch.Generator().manual_seed(1)
    args = make(dtype, g)
    jitted = thunder.jit(fn, executors=[impl.ex])
    got = jitted(*args)
    ref_args = [_fp32_leaf(a) for a in args]
    want = fn(*ref_args)
    _assert_close(got, want, dtype)
    grads = [k for k, a in enumerate(args) if a.requires_grad]
    cotangent = torch.randn(got.shape, generator=g, device="cpu").to(got.device, got.dtype)
    got_grads = torch.autograd.grad(got, [args[k] for k in grads], cotangent)
    want_grads = torch.autograd.grad(want, [ref_args[k] for k in grads], cotangent.float())
    for k, (a, b) in enumerate(zip(got_grads, want_grads, strict=True)):
        _assert_close(a, b, dtype, f"grad {k}")
    forward, backward = thunder.last_traces(jitted)[-1], thunder.last_backward_traces(jitted)[-1]
    for trace in (forward, backward):
        _, torch_ops = regions_and_torch_ops(trace)
        assert set(torch_ops) <= TORCH_OPS_ALLOWED | SMALL_OUTSIDE, torch_ops
    assert regions_and_torch_ops(forward)[0], "the forward runs an nvFuser region"


# --- every memory order of an activation, through Thunder ------------------------------------
LAYOUT_PROGRAMS = {
    "layer_norm": lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b),
    "softmax_outer": lambda x, w, b: torch.softmax(x, 0) * w,
    "rms_norm": lambda x, w, b: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
    "bias_gelu": lambda x, w, b: F.gelu(x + b),
    "column_sums": lambda x, w, b: (x * w).sum((0, 1)),
    "log_softmax_middle": lambda x, w, b: F.log_softmax(x, 1) + b,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("name", LAYOUT_PROGRAMS)
def test_every_memory_order_of_the_activation(name, order, dtype):
    """A [3, 5, 16] activation in each of its six memory orders (a transposed or permuted
    tensor, as a model hands Thunder), forward and backward against fp32 eager."""
    thunder, impl = thunder_support.load()
    fn = LAYOUT_PROGRAMS[name]
    g = torch.Generator().manual_seed(2)
    dev = torch.get_default_device()
    x = with_order((3, 5, 16), order, dtype).to(dev).requires_grad_(True)
    w, b = (_small(16, dtype=dtype, g=g) for _ in range(2))
    jitted = thunder.jit(fn, executors=[impl.ex])
    got = jitted(x, w, b)
    ref = [_fp32_leaf(a) for a in (x, w, b)]
    want = fn(*ref)
    _assert_close(got, want, dtype)
    cotangent = torch.randn(got.shape, generator=g, device="cpu").to(dev, got.dtype)
    got_grads = torch.autograd.grad(got, [x, w, b], cotangent, allow_unused=True)
    want_grads = torch.autograd.grad(want, ref, cotangent.float(), allow_unused=True)
    for k, (a, r) in enumerate(zip(got_grads, want_grads, strict=True)):
        assert (a is None) == (r is None)
        if a is not None:
            _assert_close(a, r, dtype, f"grad {k}")
    assert regions_and_torch_ops(thunder.last_traces(jitted)[-1])[0]
