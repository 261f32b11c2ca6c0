"""NVFP4 operands and ``cutlass_nvfp4_grouped_mm`` as a library row (see ``library.py``).

nvFuser runs ``cutlass_nvfp4_grouped_mm`` as a Blackwell CUTLASS kernel. Here the fp4
operands and their block scales are dequantized with torch and the groups multiplied
with torch's matmul (cuBLAS), on any device:

* an fp4 e2m1 value is 4 bits: sign, 2 exponent bits (bias 1), 1 mantissa bit; the 16
  codes are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives (``E2M1_VALUES``). Two are
  packed in a byte (``torch.float4_e2m1fn_x2``), the first element in the low nibble,
  along the dim that is contiguous in memory;
* block scales are Float8_e4m3fn, one per 16 consecutive elements along k, stored in
  CUTLASS's swizzled layout of 128 x 4 tiles (rows padded to 128, scale columns to 4):
  tile (mt, kt) holds, at [mt, kt, a, b, c] of its [32, 4, 4] block, the scale of row
  ``mt * 128 + b * 32 + a`` and scale column ``kt * 4 + c``.

The op: rows ``expert_offsets[i] : expert_offsets[i] + problem_sizes[i][0]`` of mat1
([m, k], packed [m, k/2]) times expert i of mat2 ([g, k, n], its packed k contiguous),
each operand scaled by its block scales (expert i's scale1 rows start at
``sf_offsets[i]``; scale2 is [g, n, k/16]), times ``alpha[i]``, in ``dtype``.

fp4 inputs are declared ``DataType.Float4_e2m1fn`` with their element extents (their
torch tensors hold two elements a byte: ``dtypes.PACKED``), or ``Float4_e2m1fn_x2``
with the packed extents (``from_pytorch`` of a ``float4_e2m1fn_x2`` tensor).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ...dtypes import DataType
from ...errors import DefinitionError
from ..values import TensorView
from .common import check_tensor
from .library import Dims, LibraryRow, library_op, library_row

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
"""The non-negative fp4 e2m1 values by code 0-7; codes 8-15 are their negatives."""

BLOCK = 16  # elements per NVFP4 block scale

_FP4 = (DataType.Float4_e2m1fn, DataType.Float4_e2m1fn_x2)
_OPERANDS = (
    "mat1",
    "mat2",
    "scale1",
    "scale2",
    "alpha",
    "problem_sizes",
    "expert_offsets",
    "sf_offsets",
)


def unpack_fp4(packed: torch.Tensor) -> torch.Tensor:
    """The Float values of packed fp4 ``packed`` (``float4_e2m1fn_x2`` or uint8): its dim
    of stride 1 (the packed one) doubles, the low nibble first."""
    codes = packed.view(torch.uint8)
    dim = next((d for d in range(codes.ndim - 1, -1, -1) if codes.stride(d) == 1), -1)
    codes = codes.movedim(dim, -1)
    low, high = codes & 0x0F, codes >> 4
    both = torch.stack((low, high), dim=-1).flatten(-2).to(torch.long)
    magnitude = torch.tensor(E2M1_VALUES, device=packed.device)[both & 7]
    values = torch.where(both >= 8, -magnitude, magnitude)
    return values.movedim(-1, dim)


def unswizzle_scales(swizzled: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Block scales [rows, cols] (Float) from CUTLASS's 128 x 4 swizzled layout (2-D,
    [rows padded to 128, cols padded to 4])."""
    padded_rows, padded_cols = swizzled.shape
    tiles = swizzled.float().reshape(padded_rows // 128, padded_cols // 4, 32, 4, 4)
    # [mt, kt, a, b, c] -> [mt, b, a, kt, c]: row mt*128 + b*32 + a, column kt*4 + c
    linear = tiles.permute(0, 3, 2, 1, 4).reshape(padded_rows, padded_cols)
    return linear[:rows, :cols]


def dequantize(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """fp4 ``values`` [r, k] (Float) times their block ``scales`` [r, k / 16]."""
    return values * scales.repeat_interleave(BLOCK, dim=-1)[:, : values.shape[-1]]


def _round_up(x: int, to: int) -> int:
    return (x + to - 1) // to * to


def nvfp4_grouped_mm(v: Mapping[str, Any], attrs: Mapping[str, Any]) -> tuple[torch.Tensor]:
    """The op's meaning (module docstring) through torch."""
    a = unpack_fp4(v["mat1"])  # [m, k]
    b = unpack_fp4(v["mat2"])  # [g, k, n]
    sizes = v["problem_sizes"].tolist()
    starts = [int(s) for s in v["expert_offsets"].tolist()]
    sf_starts = [int(s) for s in v["sf_offsets"].tolist()]
    alpha = v["alpha"].float()
    k, n = b.shape[1], b.shape[2]
    out = torch.zeros(a.shape[0], n, dtype=torch.float32, device=a.device)
    for i, (rows, _, _) in enumerate(sizes):
        lo, sf = starts[i], sf_starts[i]
        s1 = unswizzle_scales(v["scale1"][sf : sf + _round_up(rows, 128)], rows, k // BLOCK)
        s2 = unswizzle_scales(v["scale2"][i], n, k // BLOCK)  # [n, k / 16]
        a_i = dequantize(a[lo : lo + rows], s1)
        b_i = dequantize(b[i].t(), s2)  # [n, k]
        out[lo : lo + rows] = (a_i @ b_i.t()) * alpha[i]
    return (out.to(_TORCH_OUT[attrs["dtype"]]),)


_TORCH_OUT = {
    DataType.BFloat16: torch.bfloat16,
    DataType.Half: torch.float16,
    DataType.Float: torch.float32,
}


def _shape(s: Mapping[str, Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    return [(s["mat1"][0], s["mat2"][2])]


NVFP4_GROUPED_MM = library_row(
    LibraryRow(
        "cutlass_nvfp4_grouped_mm",
        _OPERANDS,
        _shape,
        lambda d, attrs: [attrs["dtype"]],
        nvfp4_grouped_mm,
        "fp4 operands dequantized, a matmul per group",
        doc="NVFP4 grouped matmul (nvFuser: a CUTLASS kernel for Blackwell)",
    )
)


def cutlass_nvfp4_grouped_mm(
    mat1: TensorView,
    mat2: TensorView,
    scale1: TensorView,
    scale2: TensorView,
    alpha: TensorView,
    problem_sizes: TensorView,
    expert_offsets: TensorView,
    sf_offsets: TensorView,
    dtype: DataType = DataType.BFloat16,
) -> TensorView:
    op = "cutlass_nvfp4_grouped_mm"
    args = (mat1, mat2, scale1, scale2, alpha, problem_sizes, expert_offsets, sf_offsets)
    tensors = {n: check_tensor(x, op, n) for n, x in zip(_OPERANDS, args)}
    for n in ("mat1", "mat2"):
        if tensors[n].dtype not in _FP4:
            raise DefinitionError(f"{op}: {n} must be Float4_e2m1fn, got {tensors[n].dtype}")
    if tensors["mat1"].ndim != 2 or tensors["mat2"].ndim != 3:
        raise DefinitionError(f"{op}: mat1 must have rank 2 ([m, k]) and mat2 rank 3 ([g, k, n])")
    if dtype not in _TORCH_OUT:
        raise DefinitionError(f"{op}: dtype must be BFloat16, Half or Float, got {dtype}")
    return library_op(op, tensors, dtype=dtype)[0]


__all__ = [
    "BLOCK",
    "E2M1_VALUES",
    "NVFP4_GROUPED_MM",
    "cutlass_nvfp4_grouped_mm",
    "dequantize",
    "nvfp4_grouped_mm",
    "unpack_fp4",
    "unswizzle_scales",
]
