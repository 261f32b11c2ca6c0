"""The programs ``benchmarks thunder`` times, their sizes, and the issue's nvFuser figures.

Each program is a function of tensors (or a small ``torch.nn.Module``: the nanoGPT
block) built on seeded inputs; a row of the benchmark is a program, a dtype and a mode
(``fwd``: the forward under ``torch.no_grad``; ``fwd_bwd``: the forward, then
``torch.autograd.grad`` of its output against a fixed ``grad_out`` for every input and
parameter).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
MODES = ("fwd", "fwd_bwd")


@dataclass(frozen=True)
class Sizes:
    """B, S, H of the pointwise and normalization programs; the block's batch, sequence
    length, embedding width and heads."""

    B: int
    S: int
    H: int
    batch: int
    T: int
    n_embd: int
    n_head: int
    V: int  # the cross-entropy's classes (GPT-2's vocabulary), over batch x T tokens


FULL = Sizes(B=8, S=1024, H=2048, batch=8, T=1024, n_embd=768, n_head=12, V=50257)  # the issue's
QUICK = {
    "cuda": Sizes(B=2, S=128, H=512, batch=2, T=128, n_embd=128, n_head=4, V=1000),
    # Triton's interpreter
    "cpu": Sizes(B=2, S=4, H=32, batch=2, T=8, n_embd=32, n_head=2, V=50),
}


def bias_gelu(x, b):
    return F.gelu(x + b)


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def softmax(x):
    return torch.softmax(x, dim=-1)


def add_sum(x, y):
    return (x + y).sum(-1)


class Block(nn.Module):
    """A GPT-2 block as nanoGPT writes it: LayerNorm, causal self-attention through
    ``F.scaled_dot_product_attention``, residual, LayerNorm, a GELU MLP, residual (no
    dropout)."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.mlp_proj = nn.Linear(4 * n_embd, n_embd)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


@dataclass(frozen=True)
class Built:
    """What the systems run: ``fn(*args)``; gradients are taken for ``args + params``."""

    fn: Callable[..., torch.Tensor]
    args: list[torch.Tensor]
    params: list[torch.Tensor]


@dataclass(frozen=True)
class Program:
    name: str
    dtypes: tuple[str, ...]
    modes: tuple[str, ...]
    build: Callable[[Sizes, torch.dtype, str, torch.Generator], Built]
    # Thunder executors left out of its default list for this program, so that the
    # nvFuser executor (layoutfuse) gets the regions a default executor would take
    thunder_without: tuple[str, ...] = ()
    # options of ``thunder.jit`` (compile options such as ``nv_enable_sdpa``)
    thunder_options: tuple[tuple[str, object], ...] = ()


def _randn(shape, dtype, device, gen, scale=1.0) -> torch.Tensor:
    t = torch.randn(shape, generator=gen) * scale
    return t.to(device=device, dtype=dtype).requires_grad_(True)


def _function(fn, *shapes) -> Callable[[Sizes, torch.dtype, str, torch.Generator], Built]:
    """A function of tensors whose shapes are named by ``Sizes`` fields (``"BSH"``: [B, S, H])."""

    def build(sizes: Sizes, dtype: torch.dtype, device: str, gen: torch.Generator) -> Built:
        args = [_randn([getattr(sizes, d) for d in s], dtype, device, gen) for s in shapes]
        return Built(fn, args, [])

    return build


def cross_entropy(logits, target):
    """A language model's loss: the logits' classes in fp32, as LitGPT computes it."""
    return F.cross_entropy(logits.float(), target)


def _cross_entropy(sizes: Sizes, dtype: torch.dtype, device: str, gen: torch.Generator) -> Built:
    tokens = sizes.batch * sizes.T
    logits = _randn((tokens, sizes.V), dtype, device, gen, scale=2.0)
    target = torch.randint(0, sizes.V, (tokens,), generator=gen).to(device)
    return Built(cross_entropy, [logits, target], [])


def _block(sizes: Sizes, dtype: torch.dtype, device: str, gen: torch.Generator) -> Built:
    seed = int(torch.randint(0, 2**31 - 1, (), generator=gen))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = Block(sizes.n_embd, sizes.n_head)
    module = module.to(device=device, dtype=dtype)
    x = _randn((sizes.batch, sizes.T, sizes.n_embd), dtype, device, gen)
    return Built(module, [x], list(module.parameters()))


BOTH = ("fp32", "bf16")
PROGRAMS = [
    Program("bias_gelu", ("fp32",), MODES, _function(bias_gelu, "BSH", "H")),
    Program("rms_norm", ("fp32",), MODES, _function(rms_norm, "BSH", "H")),
    Program("layer_norm", BOTH, MODES, _function(layer_norm, "BSH", "H", "H")),
    Program("softmax", ("fp32",), MODES, _function(softmax, "BSH")),
    Program("add_sum", ("bf16",), ("fwd",), _function(add_sum, "BSH", "BSH")),
    Program("nanogpt_block", BOTH, MODES, _block),
    # the same block with Thunder's nvFuser SDPA switched on (Half and BFloat16 only): its
    # attention runs through layoutfuse's sdpfa_fwd/sdpfa_bwd, on the kernel torch picks
    Program("nanogpt_block_sdpa", ("bf16",), MODES, _block, ("sdpa",), (("nv_enable_sdpa", True),)),
    # Thunder 0.2.6 hands a cross-entropy to its torch.compile executor by default
    Program("cross_entropy", BOTH, MODES, _cross_entropy, ("torchcompile_xentropy",)),
]


def case_name(program: str, dtype: str, mode: str) -> str:
    return f"{program}-{dtype}-{mode}"


# Thunder + nvFuser 0.2.36 on the H200 at the sizes (FULL), ms per call; not
# measured by this benchmark: quoted for side-by-side reading.
REFERENCE = {
    "source": "issue 15, measured 2026-12-01",
    "measured_by_this_run": False,
    "sizes": "B=8, S=1024, H=2048; nanoGPT block n_embd 768, 12 heads, T=1024, batch 8",
    "device": "NVIDIA H200",
    "thunder_nvfuser_0.2.36_ms": {
        case_name("bias_gelu", "fp32", "fwd"): 0.111,
        case_name("bias_gelu", "fp32", "fwd_bwd"): 1.387,
        case_name("rms_norm", "fp32", "fwd"): 0.110,
        case_name("rms_norm", "fp32", "fwd_bwd"): 1.584,
        case_name("layer_norm", "fp32", "fwd"): 0.130,
        case_name("layer_norm", "fp32", "fwd_bwd"): 1.405,
        case_name("layer_norm", "bf16", "fwd"): 0.185,
        case_name("layer_norm", "bf16", "fwd_bwd"): 1.407,
        case_name("softmax", "fp32", "fwd"): 0.175,
        case_name("softmax", "fp32", "fwd_bwd"): 0.999,
        case_name("add_sum", "bf16", "fwd"): 0.285,
        case_name("nanogpt_block", "fp32", "fwd_bwd"): 9.490,
        case_name("nanogpt_block", "bf16", "fwd_bwd"): 4.692,
    },
    "eager_ms": {
        case_name("nanogpt_block", "fp32", "fwd_bwd"): 9.625,
        case_name("nanogpt_block", "bf16", "fwd_bwd"): 1.858,
    },
    "compile_ms": {
        case_name("nanogpt_block", "fp32", "fwd_bwd"): 9.457,
        case_name("nanogpt_block", "bf16", "fwd_bwd"): 2.395,
    },
}
