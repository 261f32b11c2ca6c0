"""Library rows of scaled-dot-product attention: sdpfa_fwd and sdpfa_bwd (``library.py``).

nvFuser's forms: ``sdpfa_fwd(query, key, value, bias=None, mask=None, dropout_p=None,
is_causal=None, scale=None) -> (output, logsumexp, philox_seed, philox_offset)`` and
``sdpfa_bwd(grad_output, query, key, value, output, logsumexp, dropout_p, is_causal,
philox_seed, philox_offset, scale) -> (grad_query, grad_key, grad_value)``; query is
[B, H, L, E], key [B, H, S, E], value [B, H, S, Ev]; logsumexp [B, H, L] is Float;
philox_seed is a UInt64 [2] (torch's rng state since 2.7), philox_offset a UInt64 [].

On the GPU they run the kernel torch's own dispatch picks for the operands
(``aten._fused_sdp_choice``, as ``F.scaled_dot_product_attention`` would), where this op's
outputs carry what its backward needs: cuDNN's attention (Half and BFloat16 on Hopper; its
logsumexp is [B, H, L, 1], handed out as [B, H, L]) and the memory-efficient kernel (Float;
its logsumexp has L padded to 32, handed out sliced and padded again for the backward)
without dropout, whose philox state is not the [2] rng state of nvFuser's signature; torch's
flash attention (``aten._scaled_dot_product_flash_attention``: Half or BFloat16, one head
dim for query and value, a multiple of 8 up to 256) otherwise. The backward recomputes the
choice from the same dtypes, shapes and options (``_backend``), so both halves take one
kernel. On an H100 cuDNN's took 50 us forward and 161 us backward where flash took 78 and
247 (bf16 [8, 12, 1024, 64], causal: ``tools/dev/sdpa_probe.py``,
``sdpa-probe-20261206-b1b6ce2-h100.txt``). Elsewhere (the CPU, or what no kernel takes)
they run the math of attention through torch's matmuls, in Float (Double for Double):
scores = q k^T * scale, p = softmax(scores) (causal: the upper triangle masked), out = p v,
logsumexp of the scores; the backward from p and the saved logsumexp. The math path has no
dropout (dropout_p must be 0; its philox state is 0).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import torch

from ...dtypes import DataType
from ...errors import DefinitionError, UnsupportedError
from ..values import Scalar, TensorView
from .common import as_val, check_tensor, fusion_of
from .library import Dims, LibraryRow, check_rank, library_op, library_row, same_extent

_FLASH_DTYPES = (torch.float16, torch.bfloat16)


def _flash(q: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether torch's flash attention takes these operands: Half or BFloat16 on the GPU,
    one head dim for query and value (its backward requires it), a multiple of 8 up to 256."""
    e = q.shape[-1]
    return q.is_cuda and q.dtype in _FLASH_DTYPES and v.shape[-1] == e and e % 8 == 0 and e <= 256


def _backend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout_p: float, is_causal: bool
) -> str:
    """The kernel of these operands: "cudnn", "efficient", "flash" or "math" (see the
    module's docstring). A function of the device, dtype, shapes and options only, so that
    the backward, given the forward's operands, picks what the forward did."""
    if not q.is_cuda:
        return "math"
    choice = _torch_choice(
        q.device, q.dtype, tuple(q.shape), tuple(k.shape), tuple(v.shape), dropout_p > 0, is_causal
    )
    if dropout_p == 0 and choice in ("cudnn", "efficient"):
        return choice
    return "flash" if _flash(q, v) else "math"


@functools.lru_cache(maxsize=256)
def _torch_choice(
    device: torch.device,
    dtype: torch.dtype,
    q: tuple[int, ...],
    k: tuple[int, ...],
    v: tuple[int, ...],
    dropout: bool,
    is_causal: bool,
) -> str:
    """``aten._fused_sdp_choice`` on contiguous operands of these shapes."""
    from torch.nn.attention import SDPBackend

    ops = [torch.empty(s, dtype=dtype, device=device) for s in (q, k, v)]
    picked = torch.ops.aten._fused_sdp_choice(*ops, None, 0.5 if dropout else 0.0, is_causal)
    names = {
        SDPBackend.CUDNN_ATTENTION.value: "cudnn",
        SDPBackend.EFFICIENT_ATTENTION.value: "efficient",
        SDPBackend.FLASH_ATTENTION.value: "flash",
    }
    return names.get(int(picked), "math")


def _last_contiguous(*ts: torch.Tensor) -> list[torch.Tensor]:
    """Flash attention's operands need a stride-1 last dim: a copy of those that lack it."""
    return [t if t.stride(-1) == 1 else t.contiguous() for t in ts]


def _options(v: Mapping[str, Any], q: torch.Tensor) -> tuple[float, bool, float]:
    dropout_p = float(v.get("dropout_p") or 0.0)
    is_causal = bool(v.get("is_causal") or False)
    scale = v.get("scale")
    return dropout_p, is_causal, 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


def _math_dtype(q: torch.Tensor) -> torch.dtype:
    return torch.float64 if q.dtype == torch.float64 else torch.float32


def _probabilities(
    q: torch.Tensor, k: torch.Tensor, scale: float, is_causal: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T * scale) (causal: key positions after the query's masked, aligned at
    the top left as torch's is_causal is) and its logsumexp, in the math dtype."""
    ct = _math_dtype(q)
    scores = torch.matmul(q.to(ct), k.to(ct).transpose(-2, -1)) * scale
    if is_causal:
        L, S = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    return torch.exp(scores - lse.unsqueeze(-1)), lse


def _no_dropout(op: str, dropout_p: float) -> None:
    if dropout_p != 0.0:
        raise UnsupportedError(
            f"{op}: dropout_p={dropout_p} needs torch's flash attention (Half or BFloat16 "
            f"operands on the GPU); the math path has no dropout"
        )


def _philox(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.zeros(2, dtype=torch.uint64, device=device),
        torch.zeros((), dtype=torch.uint64, device=device),
    )


def _no_rng(device: torch.device) -> torch.Tensor:
    """The philox seed or offset of a kernel run without dropout (unread)."""
    return torch.zeros((), dtype=torch.int64, device=device)


def _padded_lse(lse: torch.Tensor) -> torch.Tensor:
    """The memory-efficient kernel's logsumexp layout: [B, H, L padded to 32], contiguous."""
    B, H, L = lse.shape
    padded = -(-L // 32) * 32
    if padded == L and lse.is_contiguous():
        return lse
    out = lse.new_zeros(B, H, padded)
    out[..., :L] = lse
    return out


# --- forward -------------------------------------------------------------------------------
def _fwd_shape(s: Mapping[str, Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    q, k, v = s["query"], s["key"], s["value"]
    for name, x in (("query", q), ("key", k), ("value", v)):
        check_rank("sdpfa_fwd", name, x, (4,))
    same_extent("sdpfa_fwd", "head dims of query and key", q[3], k[3])
    same_extent("sdpfa_fwd", "sequence lengths of key and value", k[2], v[2])
    for i in (0, 1):
        same_extent("sdpfa_fwd", f"dim {i} of query, key, value", q[i], k[i])
        same_extent("sdpfa_fwd", f"dim {i} of query, key, value", q[i], v[i])
    return [(q[0], q[1], q[2], v[3]), (q[0], q[1], q[2]), (2,), ()]


def _fwd_run(v: Mapping[str, Any], attrs: Mapping[str, Any]) -> tuple[torch.Tensor, ...]:
    q, k, val = v["query"], v["key"], v["value"]
    dropout_p, is_causal, scale = _options(v, q)
    backend = _backend(q, k, val, dropout_p, is_causal)
    if backend == "math":
        _no_dropout("sdpfa_fwd", dropout_p)
        p, lse = _probabilities(q, k, scale, is_causal)
        out = torch.matmul(p, val.to(p.dtype)).to(q.dtype)
        return (out, lse.to(torch.float32), *_philox(q.device))
    fq, fk, fv = _last_contiguous(q, k, val)
    L = q.shape[2]
    if backend == "cudnn":
        out, lse, *_ = torch.ops.aten._scaled_dot_product_cudnn_attention(
            fq, fk, fv, None, True, 0.0, is_causal, False, scale=scale
        )
        return (out, lse[..., 0], *_philox(q.device))
    if backend == "efficient":
        out, lse, _, _ = torch.ops.aten._scaled_dot_product_efficient_attention(
            fq, fk, fv, None, True, 0.0, is_causal, scale=scale
        )
        return (out, lse[..., :L], *_philox(q.device))
    out, lse, _, _, _, _, seed, offset, _ = torch.ops.aten._scaled_dot_product_flash_attention(
        fq, fk, fv, dropout_p, is_causal, return_debug_mask=False, scale=scale
    )
    return out, lse, seed, offset


SDPFA_FWD = library_row(
    LibraryRow(
        "sdpfa_fwd",
        ("query", "key", "value", "dropout_p", "is_causal", "scale"),
        _fwd_shape,
        lambda d, attrs: [d["query"], DataType.Float, DataType.UInt64, DataType.UInt64],
        _fwd_run,
        "torch's attention kernel on the GPU (cuDNN, memory-efficient or flash), else the "
        "math through matmuls",
        doc="scaled-dot-product attention, forward",
    )
)


def _scalar_operands(op: str, fusion_src: TensorView, **values: Any) -> dict[str, Scalar | None]:
    """Optional scalar operands: Scalars, Python numbers (constants) or None."""
    fusion = fusion_of(fusion_src)
    out: dict[str, Scalar | None] = {}
    for name, x in values.items():
        if x is None:
            out[name] = None
            continue
        val = as_val(fusion, x, op)
        if not isinstance(val, Scalar):
            raise DefinitionError(f"{op}: {name} must be a Scalar, got a tensor")
        out[name] = val
    return out


def sdpfa_fwd(
    query: TensorView,
    key: TensorView,
    value: TensorView,
    dropout_p: Any = None,
    is_causal: Any = None,
    scale: Any = None,
) -> tuple[TensorView, TensorView, TensorView, TensorView]:
    q = check_tensor(query, "sdpfa_fwd", "query")
    k = check_tensor(key, "sdpfa_fwd", "key")
    v = check_tensor(value, "sdpfa_fwd", "value")
    if len({q.dtype, k.dtype, v.dtype}) != 1:
        raise DefinitionError(f"sdpfa_fwd: query, key, value differ in dtype: {q.dtype}, ...")
    scalars = _scalar_operands(
        "sdpfa_fwd", q, dropout_p=dropout_p, is_causal=is_causal, scale=scale
    )
    out, lse, seed, offset = library_op("sdpfa_fwd", {"query": q, "key": k, "value": v, **scalars})
    return out, lse, seed, offset


# --- backward ------------------------------------------------------------------------------
_BWD_TENSORS = ("grad_output", "query", "key", "value", "output", "logsumexp")


def _bwd_shape(s: Mapping[str, Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    for name in _BWD_TENSORS[:5]:
        check_rank("sdpfa_bwd", name, s[name], (4,))
    check_rank("sdpfa_bwd", "logsumexp", s["logsumexp"], (3,))
    return [s["query"], s["key"], s["value"]]


def _bwd_run(v: Mapping[str, Any], attrs: Mapping[str, Any]) -> tuple[torch.Tensor, ...]:
    g, q, k, val, out, lse = (v[n] for n in _BWD_TENSORS)
    dropout_p, is_causal, scale = _options(v, q)
    backend = _backend(q, k, val, dropout_p, is_causal)
    if backend == "math":
        return _math_bwd(g, q, k, val, out, dropout_p, is_causal, scale)
    L, S = q.shape[2], k.shape[2]
    fg, fq, fk, fv, fo = _last_contiguous(g, q, k, val, out)
    if backend == "cudnn":
        if fg.stride() != fo.stride():  # cuDNN's backward reads both in one layout
            fg = torch.empty_like(fo).copy_(fg)
        rng = _no_rng(q.device)
        dq, dk, dv = torch.ops.aten._scaled_dot_product_cudnn_attention_backward(
            fg, fq, fk, fv, fo, lse.unsqueeze(-1), rng, rng, None, None, None, L, S, 0.0,
            is_causal, scale=scale,
        )  # fmt: skip
        return dq, dk, dv
    if backend == "efficient":
        rng = _no_rng(torch.device("cpu"))  # the kernel's philox state lives on the host
        dq, dk, dv, _ = torch.ops.aten._scaled_dot_product_efficient_attention_backward(
            fg, fq, fk, fv, None, fo, _padded_lse(lse), rng, rng, 0.0,
            [True, True, True, False], is_causal, scale=scale,
        )  # fmt: skip
        return dq, dk, dv
    # cum_seq_q and cum_seq_k are undefined (None) for tensors that are not nested
    dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
        fg, fq, fk, fv, fo, lse, None, None, L, S, dropout_p, is_causal,
        v["philox_seed"], v["philox_offset"], scale=scale,
    )  # fmt: skip
    return dq, dk, dv


def _math_bwd(
    g: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    val: torch.Tensor,
    out: torch.Tensor,
    dropout_p: float,
    is_causal: bool,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _no_dropout("sdpfa_bwd", dropout_p)
    ct = _math_dtype(q)
    p, _ = _probabilities(q, k, scale, is_causal)
    gf, vf = g.to(ct), val.to(ct)
    dv = torch.matmul(p.transpose(-2, -1), gf)
    dp = torch.matmul(gf, vf.transpose(-2, -1))
    ds = p * (dp - (gf * out.to(ct)).sum(-1, keepdim=True))
    dq = torch.matmul(ds, k.to(ct)) * scale
    dk = torch.matmul(ds.transpose(-2, -1), q.to(ct)) * scale
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(val.dtype)


SDPFA_BWD = library_row(
    LibraryRow(
        "sdpfa_bwd",
        (*_BWD_TENSORS, "dropout_p", "is_causal", "philox_seed", "philox_offset", "scale"),
        _bwd_shape,
        lambda d, attrs: [d["query"], d["key"], d["value"]],
        _bwd_run,
        "the forward's attention kernel's backward on the GPU, else the math through matmuls",
        doc="scaled-dot-product attention, backward",
    )
)


def sdpfa_bwd(
    grad_output: TensorView,
    query: TensorView,
    key: TensorView,
    value: TensorView,
    output: TensorView,
    logsumexp: TensorView,
    dropout_p: Any,
    is_causal: Any,
    philox_seed: TensorView,
    philox_offset: TensorView,
    scale: Any = None,
) -> tuple[TensorView, TensorView, TensorView]:
    args = (grad_output, query, key, value, output, logsumexp)
    tensors = {n: check_tensor(x, "sdpfa_bwd", n) for n, x in zip(_BWD_TENSORS, args)}
    tensors["philox_seed"] = check_tensor(philox_seed, "sdpfa_bwd", "philox_seed")
    tensors["philox_offset"] = check_tensor(philox_offset, "sdpfa_bwd", "philox_offset")
    scalars = _scalar_operands(
        "sdpfa_bwd", tensors["query"], dropout_p=dropout_p, is_causal=is_causal, scale=scale
    )
    dq, dk, dv = library_op("sdpfa_bwd", {**tensors, **scalars})
    return dq, dk, dv


__all__ = ["SDPFA_BWD", "SDPFA_FWD", "sdpfa_bwd", "sdpfa_fwd"]
