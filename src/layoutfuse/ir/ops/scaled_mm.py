"""``scaled_mm`` as a library row (see ``library.py``).

nvFuser's form: ``scaled_mm(mat1, mat2, scale1, scale2, alpha=None, bias=None,
beta=None, dtype=BFloat16, output_block_scale_size=0, output_block_scale_dtype=BFloat16,
output_gamma=False) -> (out, None, None)``, with
``out = alpha * (dequant(mat1, scale1) @ dequant(mat2, scale2)) + beta * bias`` in
``dtype``; mat1 is [m, k], mat2 [k, n]. Quantizing the output
(``output_block_scale_size > 0``, ``output_gamma``) is not supported.

Dequantization, with torch, in Float:

* fp4 operands (``Float4_e2m1fn``, NVFP4): each element times its block scale (one per
  16 along k, Float8_e4m3fn, in CUTLASS's 128 x 4 swizzled layout over [m, k / 16] for
  mat1 and [n, k / 16] for mat2; ``nvfp4.py``);
* other operands (Float8, BFloat16, Half, Float): times the scale broadcast to the
  operand: one value (per tensor), [m, 1] rows of mat1, [1, n] columns of mat2.

Then one matmul (cuBLAS on the GPU).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ...dtypes import DataType
from ...errors import DefinitionError, UnsupportedError
from ..values import TensorView
from .common import check_tensor
from .library import Dims, LibraryRow, check_rank, library_op, library_row, same_extent
from .matmul import GROUPED_MM, grouped_matmul
from .nvfp4 import BLOCK, dequantize, unpack_fp4, unswizzle_scales

_OUT = {
    DataType.BFloat16: torch.bfloat16,
    DataType.Half: torch.float16,
    DataType.Float: torch.float32,
}
_FP4_TORCH = tuple(getattr(torch, n) for n in ("float4_e2m1fn_x2",) if hasattr(torch, n))


def _dequantized(mat: torch.Tensor, scale: torch.Tensor, second: bool) -> torch.Tensor:
    """``mat`` ([m, k], or [k, n] when ``second``) times its scales, in Float."""
    if mat.dtype in _FP4_TORCH or mat.dtype == torch.uint8:
        values = unpack_fp4(mat)
        rows_major = values.t() if second else values  # [rows, k]
        rows, k = rows_major.shape
        scales = unswizzle_scales(scale, rows, -(-k // BLOCK))
        deq = dequantize(rows_major, scales)
        return deq.t() if second else deq
    return mat.float() * scale.float()


def _run(v: Mapping[str, Any], attrs: Mapping[str, Any]) -> tuple[torch.Tensor]:
    a = _dequantized(v["mat1"], v["scale1"], second=False)
    b = _dequantized(v["mat2"], v["scale2"], second=True)
    out = torch.matmul(a, b)
    if v.get("alpha") is not None:
        out = out * v["alpha"].float()
    if v.get("bias") is not None:
        beta = v.get("beta")
        bias = v["bias"].float()
        out = out + (bias if beta is None else beta.float() * bias)
    return (out.to(_OUT[attrs["dtype"]]),)


def _shape(s: Mapping[str, Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    a, b = s["mat1"], s["mat2"]
    check_rank("scaled_mm", "mat1", a, (2,))
    check_rank("scaled_mm", "mat2", b, (2,))
    same_extent("scaled_mm", "contracted extents (mat1's dim 1, mat2's dim 0)", a[1], b[0])
    return [(a[0], b[1])]


SCALED_MM = library_row(
    LibraryRow(
        "scaled_mm",
        ("mat1", "mat2", "scale1", "scale2", "alpha", "bias", "beta"),
        _shape,
        lambda d, attrs: [attrs["dtype"]],
        _run,
        "operands dequantized, then cuBLAS",
        doc="matmul of scaled (quantized) operands",
    )
)


def scaled_mm(
    mat1: TensorView,
    mat2: TensorView,
    scale1: TensorView,
    scale2: TensorView,
    alpha: TensorView | None = None,
    bias: TensorView | None = None,
    beta: TensorView | None = None,
    dtype: DataType = DataType.BFloat16,
    output_block_scale_size: int = 0,
    output_gamma: bool = False,
) -> TensorView:
    op = "scaled_mm"
    if output_block_scale_size > 0 or output_gamma:
        raise UnsupportedError(f"{op}: quantizing the output is not supported")
    if dtype not in _OUT:
        raise DefinitionError(f"{op}: dtype must be BFloat16, Half or Float, got {dtype}")
    named: dict[str, TensorView | None] = {
        "mat1": mat1,
        "mat2": mat2,
        "scale1": scale1,
        "scale2": scale2,
        "alpha": alpha,
        "bias": bias,
        "beta": beta,
    }
    operands = {n: None if x is None else check_tensor(x, op, n) for n, x in named.items()}
    return library_op(op, operands, dtype=dtype)[0]


# --- grouped_mm's scaled form -------------------------------------------------------------
def _scale_like(scale: torch.Tensor, mat: torch.Tensor, second: bool) -> torch.Tensor:
    """A per-tensor, per-row (mat1) or per-column (mat2, per group) scale broadcastable to
    ``mat``: a scale of one rank less lacks the contracted dim."""
    scale = scale.float()
    if scale.numel() == 1 or scale.ndim == mat.ndim:
        return scale.reshape(()) if scale.numel() == 1 else scale
    return scale.unsqueeze(-2 if second else -1)


def _per_group(v: torch.Tensor, out: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
               offsets: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """``v`` (one value or [g] per group, or [g, n] / [n] rows) broadcast over ``out``."""
    v = v.float()
    if v.numel() == 1:
        return v.reshape(())
    if a.ndim == 2 and b.ndim == 2:  # out [g, m, n]
        return v.reshape(v.shape[0], 1, -1) if v.ndim == 2 else v.reshape(-1, 1, 1)
    ends = offsets.to(torch.long)
    sizes = torch.diff(ends, prepend=ends.new_zeros(1))
    groups = torch.arange(ends.shape[0], device=ends.device)
    group = torch.repeat_interleave(groups, sizes, output_size=int(ends[-1]))
    if b.ndim == 3:  # groups of rows: [g] or [g, n] per row
        rows = v[group].reshape(group.shape[0], -1)
        pad = out.shape[0] - rows.shape[0]
        return torch.cat([rows, rows.new_zeros(pad, rows.shape[1])]) if pad else rows
    # groups of columns: [g] per column, or [g, n]: column j's entry of its group's row
    cols = v[group] if v.ndim == 1 else v[group, torch.arange(group.shape[0], device=v.device)]
    pad = out.shape[1] - cols.shape[0]
    return torch.cat([cols, cols.new_zeros(pad)]) if pad else cols


def _grouped_run(v: Mapping[str, Any], attrs: Mapping[str, Any]) -> tuple[torch.Tensor]:
    a, b, offs = v["mat1"], v["mat2"], v["offsets"]
    a_f = a.float() * _scale_like(v["scale1"], a, second=False)
    b_f = b.float() * _scale_like(v["scale2"], b, second=True)
    out = grouped_matmul(a_f, b_f, offs)
    if v.get("alpha") is not None:
        out = out * _per_group(v["alpha"], out, a, b, offs)
    if v.get("bias") is not None:
        bias = _per_group(v["bias"], out, a, b, offs)
        if v.get("beta") is not None:
            bias = bias * _per_group(v["beta"], out, a, b, offs)
        out = out + bias
    return (out.to(_OUT[attrs["dtype"]]),)


def _grouped_shape(s: Mapping[str, Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    return GROUPED_MM.shapes({"a": s["mat1"], "b": s["mat2"], "offsets": s["offsets"]}, attrs)


SCALED_GROUPED_MM = library_row(
    LibraryRow(
        "scaled_grouped_mm",
        ("mat1", "mat2", "offsets", "scale1", "scale2", "alpha", "bias", "beta"),
        _grouped_shape,
        lambda d, attrs: [attrs["dtype"]],
        _grouped_run,
        "operands dequantized, a matmul per group",
        doc="grouped_mm's scaled form: alpha * grouped(mat1 * scale1, mat2 * scale2) + beta * bias",
    )
)


def scaled_grouped_mm(
    mat1: TensorView,
    mat2: TensorView,
    offsets: TensorView,
    scale1: TensorView,
    scale2: TensorView,
    alpha: TensorView | None = None,
    bias: TensorView | None = None,
    beta: TensorView | None = None,
    dtype: DataType = DataType.BFloat16,
    output_block_scale_size: int = 0,
    output_gamma: bool = False,
) -> TensorView:
    """nvFuser's scaled ``grouped_mm``; scales per tensor, per row of mat1 ([m]) and per
    group and column of mat2 ([g, n]); alpha and beta one value or one per group; bias [n]
    or per group [g, n]. fp4 operands are not supported here."""
    op = "grouped_mm"
    if output_block_scale_size > 0 or output_gamma:
        raise UnsupportedError(f"{op}: quantizing the output is not supported")
    if dtype not in _OUT:
        raise DefinitionError(f"{op}: dtype must be BFloat16, Half or Float, got {dtype}")
    named: dict[str, TensorView | None] = {
        "mat1": mat1,
        "mat2": mat2,
        "offsets": offsets,
        "scale1": scale1,
        "scale2": scale2,
        "alpha": alpha,
        "bias": bias,
        "beta": beta,
    }
    operands = {n: None if x is None else check_tensor(x, op, n) for n, x in named.items()}
    for n in ("mat1", "mat2"):
        t = operands[n]
        if t is not None and t.dtype in (DataType.Float4_e2m1fn, DataType.Float4_e2m1fn_x2):
            raise UnsupportedError(f"{op}: fp4 {n} in the scaled form is not supported")
    return library_op("scaled_grouped_mm", operands, dtype=dtype)[0]


__all__ = ["SCALED_GROUPED_MM", "SCALED_MM", "scaled_grouped_mm", "scaled_mm"]
