"""Library rows of scaled-dot-product attention: sdpfa_fwd and sdpfa_bwd (``library.py``).

nvFuser's forms: ``sdpfa_fwd(query, key, value, bias=None, mask=None, dropout_p=None,
is_causal=None, scale=None) -> (output, logsumexp, philox_seed, philox_offset)`` and
``sdpfa_bwd(grad_output, query, key, value, output, logsumexp, dropout_p, is_causal,
philox_seed, philox_offset, scale) -> (grad_query, grad_key, grad_value)``; query is
[B, H, L, E], key [B, H, S, E], value [B, H, S, Ev]; logsumexp [B, H, L] is Float;
philox_seed is a UInt64 [2] (torch's rng state since 2.7), philox_offset a UInt64 [].

On the GPU with Half or BFloat16 operands (one head dim for query and value, a multiple of
8 up to 256) they run through torch's flash attention
(``aten._scaled_dot_product_flash_attention`` and its backward). Elsewhere (the CPU,
Float operands) they run the math of attention through torch's matmuls, in Float (Double
for Double): scores = q k^T * scale, p = softmax(scores) (causal: the upper triangle
masked), out = p v, logsumexp of the scores; the backward from p and the saved
logsumexp. The math path has no dropout (dropout_p must be 0; its philox state is 0).
"""

from __future__ import annotations

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
    if _flash(q, val):
        fq, fk, fv = _last_contiguous(q, k, val)
        out, lse, _, _, _, _, seed, offset, _ = torch.ops.aten._scaled_dot_product_flash_attention(
            fq, fk, fv, dropout_p, is_causal, return_debug_mask=False, scale=scale
        )
        return out, lse, seed, offset
    _no_dropout("sdpfa_fwd", dropout_p)
    p, lse = _probabilities(q, k, scale, is_causal)
    out = torch.matmul(p, val.to(p.dtype)).to(q.dtype)
    return (out, lse.to(torch.float32), *_philox(q.device))


SDPFA_FWD = library_row(
    LibraryRow(
        "sdpfa_fwd",
        ("query", "key", "value", "dropout_p", "is_causal", "scale"),
        _fwd_shape,
        lambda d, attrs: [d["query"], DataType.Float, DataType.UInt64, DataType.UInt64],
        _fwd_run,
        "flash attention on the GPU, else the math through matmuls",
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
    if _flash(q, val):
        L, S = q.shape[2], k.shape[2]
        # cum_seq_q and cum_seq_k are undefined (None) for tensors that are not nested
        fg, fq, fk, fv, fo = _last_contiguous(g, q, k, val, out)
        dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
            fg, fq, fk, fv, fo, lse, None, None, L, S, dropout_p, is_causal,
            v["philox_seed"], v["philox_offset"], scale=scale,
        )  # fmt: skip
        return dq, dk, dv
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
        "flash attention on the GPU, else the math through matmuls",
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
