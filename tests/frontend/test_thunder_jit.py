"""Thunder's nvFuser executor on layoutfuse (``layoutfuse.use_as_nvfuser()``): programs of
the kind LitGPT-style models run (norms, softmax, GELU and its MLP), forward and
backward, fp32 and bf16, through ``thunder.jit`` against eager. Every op of the traces
runs inside an nvFuser region (matmuls excepted: Thunder leaves them to torch unless
``nv_enable_matmul``), every region runs on layoutfuse, and each took the kernels the
table says. Skipped when lightning-thunder is not installed (see tests/support/thunder.py
for what the test setup patches in memory to run it on torch 2.13 and on the CPU)."""

from __future__ import annotations

import pytest
import torch

from support import thunder as thunder_support
from support.thunder import regions_and_torch_ops

TORCH_OPS_ALLOWED = {"linear", "matmul"}  # Thunder's default keeps these off nvFuser
# regions of shape ops alone stay on torch (a transposed weight, a flattened batch)
TORCH_OPS_ALLOWED |= {"permute", "reshape", "torch_prims_reshape_impl", "transpose", "view"}


def layer_norm(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def rms_norm(x, w):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (y * w.float()).to(x.dtype)


def softmax(x):
    return torch.softmax(x, dim=-1)


def bias_gelu(x, b):
    return torch.nn.functional.gelu(x + b)


def gelu_mlp(x, w1, w2):
    return torch.nn.functional.linear(torch.nn.functional.gelu(x @ w1.t()), w2)


B, S, H = 2, 4, 32
PROGRAMS = {
    "layer_norm": (layer_norm, [(B, S, H), (H,), (H,)]),
    "rms_norm": (rms_norm, [(B, S, H), (H,)]),
    "softmax": (softmax, [(B, S, H)]),
    "bias_gelu": (bias_gelu, [(B, S, H), (H,)]),
    "gelu_mlp": (gelu_mlp, [(B, S, H), (2 * H, H), (H, 2 * H)]),
}
# kernels per nvFuser region, in execution order: (forward, backward), fp32 and bf16
KERNELS = {
    ("layer_norm", "fp32"): ([1], [2]),
    ("layer_norm", "bf16"): ([1], [2]),
    ("rms_norm", "fp32"): ([1], [2]),
    ("rms_norm", "bf16"): ([1], [2]),
    ("softmax", "fp32"): ([1], [1]),
    ("softmax", "bf16"): ([1], [1]),
    # dgelu stored from the loop of the bias grad's sum (bf16: the sum's cast after it)
    ("bias_gelu", "fp32"): ([1], [1]),
    ("bias_gelu", "bf16"): ([1], [1]),
    ("gelu_mlp", "fp32"): ([1], [1]),
    ("gelu_mlp", "bf16"): ([1], [1]),
}
TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1.6e-2, 2e-2)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_thunder_jit_on_layoutfuse_matches_eager(name, dtype, region_kernels):
    thunder, impl = thunder_support.load()
    fn, shapes = PROGRAMS[name]
    g = torch.Generator().manual_seed(0)
    args = [(torch.randn(s, generator=g) * 0.5).to(dtype).requires_grad_(True) for s in shapes]
    jitted = thunder.jit(fn, executors=[impl.ex])
    want = fn(*args)
    got = jitted(*args)
    rtol, atol = TOLERANCES[dtype]
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    forward_kernels = list(region_kernels)
    cotangent = torch.randn(want.shape, generator=g).to(dtype)
    want_grads = torch.autograd.grad(want, args, cotangent)
    got_grads = torch.autograd.grad(got, args, cotangent)
    for k, (a, b) in enumerate(zip(got_grads, want_grads)):
        torch.testing.assert_close(a, b, rtol=4 * rtol, atol=4 * atol, msg=f"grad {k}")
    backward_kernels = region_kernels[len(forward_kernels) :]

    for trace, kernels in (
        (thunder.last_traces(jitted)[-1], forward_kernels),
        (thunder.last_backward_traces(jitted)[-1], backward_kernels),
    ):
        regions, torch_ops = regions_and_torch_ops(trace)
        assert set(torch_ops) <= TORCH_OPS_ALLOWED, f"ops outside nvFuser regions: {torch_ops}"
        assert len(regions) == len(kernels), "every region ran on layoutfuse"
    dtype_id = "fp32" if dtype == torch.float32 else "bf16"
    assert (forward_kernels, backward_kernels) == KERNELS[name, dtype_id]

    # a second call replays every region (same shapes, dtypes and layouts)
    got_again = jitted(*args)
    torch.testing.assert_close(got_again, want, rtol=rtol, atol=atol)
