"""Library rows of the matmul family: matmul, linear, grouped_mm (see ``library.py``).

Each runs through torch: ``torch.matmul`` and ``torch.nn.functional.linear`` (cuBLAS on
the GPU), and ``torch._grouped_mm`` for bfloat16 on the GPU, else one matmul per group.
Outputs have the operands' dtype, as in torch and nvFuser.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ...dtypes import DataType
from ...errors import DefinitionError
from ..values import TensorView
from .common import check_tensor
from .library import (
    Dims,
    LibraryRow,
    check_rank,
    float_result,
    library_op,
    library_row,
    matmul_shape,
    same_extent,
)


# --- matmul --------------------------------------------------------------------------------
def _matmul_run(v: Mapping[str, Any], attrs: Mapping[str, Any]) -> tuple[torch.Tensor]:
    return (torch.matmul(v["a"], v["b"]),)


MATMUL = library_row(
    LibraryRow(
        "matmul",
        ("a", "b"),
        lambda s, attrs: [matmul_shape("matmul", s["a"], s["b"])],
        lambda d, attrs: [float_result("matmul", d["a"], d["b"])],
        _matmul_run,
        "cuBLAS",
        doc="torch.matmul: 1-D operands are a row / a column; batch dims broadcast",
    )
)


def matmul(a: TensorView, b: TensorView) -> TensorView:
    a, b = check_tensor(a, "matmul", "arg1"), check_tensor(b, "matmul", "arg2")
    return library_op("matmul", {"a": a, "b": b})[0]


# --- linear --------------------------------------------------------------------------------
def _linear_shape(s: Mapping[str, Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    a, w = s["a"], s["w"]
    check_rank("linear", "arg2 (the weight)", w, (1, 2))
    if not a:
        raise DefinitionError("linear: arg1 must have rank >= 1")
    same_extent("linear", "in-features (arg1's last dim, the weight's last dim)", a[-1], w[-1])
    out = tuple(a[:-1]) + ((w[0],) if len(w) == 2 else ())
    if "bias" in s:
        bias = s["bias"]
        check_rank("linear", "bias", bias, (0, 1))
        if bias and len(w) == 2:
            same_extent("linear", "out-features (the weight's first dim, the bias)", w[0], bias[0])
    return [out]


def _linear_run(v: Mapping[str, Any], attrs: Mapping[str, Any]) -> tuple[torch.Tensor]:
    a, w, bias = v["a"], v["w"], v.get("bias")
    if w.ndim == 1 and bias is not None:  # torch's linear takes no bias with a 1-D weight
        return (torch.matmul(a, w) + bias,)
    return (torch.nn.functional.linear(a, w, bias),)


LINEAR = library_row(
    LibraryRow(
        "linear",
        ("a", "w", "bias"),
        _linear_shape,
        lambda d, attrs: [float_result("linear", *d.values())],
        _linear_run,
        "cuBLAS",
        doc="torch.nn.functional.linear: a @ w.T + bias; w is [out, in] or [in]",
    )
)


def linear(a: TensorView, w: TensorView, bias: TensorView | None = None) -> TensorView:
    a, w = check_tensor(a, "linear", "arg1"), check_tensor(w, "linear", "arg2")
    if bias is not None:
        bias = check_tensor(bias, "linear", "bias")
    return library_op("linear", {"a": a, "w": w, "bias": bias})[0]


# --- grouped_mm ----------------------------------------------------------------------------
def _grouped_shape(s: Mapping[str, Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    """torch._grouped_mm's three forms, groups ending at ``offsets`` (cumulative, Int32):
    [m, k] x [g, k, n] -> [m, n] (groups of rows), [g, m, k] x [k, n] -> [m, n] (groups of
    columns), [m, k] x [k, n] -> [g, m, n] (groups of the contracted dim)."""
    a, b, offs = s["a"], s["b"], s["offsets"]
    check_rank("grouped_mm", "mat1", a, (2, 3))
    check_rank("grouped_mm", "mat2", b, (2, 3))
    check_rank("grouped_mm", "offsets", offs, (1,))
    if len(a) == 3 and len(b) == 3:
        raise DefinitionError("grouped_mm: mat1 and mat2 of rank 3 (a batched mm) take no offsets")
    same_extent("grouped_mm", "contracted extents", a[-1], b[-2])
    if len(b) == 3:
        same_extent("grouped_mm", "the group counts (mat2's dim 0, offsets)", b[0], offs[0])
        return [(a[0], b[2])]
    if len(a) == 3:
        same_extent("grouped_mm", "the group counts (mat1's dim 0, offsets)", a[0], offs[0])
        return [(a[1], b[1])]
    return [(offs[0], a[0], b[1])]


def grouped_matmul(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """torch._grouped_mm's meaning, one matmul per group; rows (columns, products) past
    the last offset are zero."""
    ends = [int(e) for e in offsets.tolist()]
    starts = [0] + ends[:-1]
    if b.ndim == 3:
        out = a.new_zeros((a.shape[0], b.shape[2]))
        for i, (lo, hi) in enumerate(zip(starts, ends)):
            out[lo:hi] = a[lo:hi] @ b[i]
    elif a.ndim == 3:
        out = a.new_zeros((a.shape[1], b.shape[1]))
        for i, (lo, hi) in enumerate(zip(starts, ends)):
            out[:, lo:hi] = a[i] @ b[:, lo:hi]
    else:
        out = a.new_zeros((len(ends), a.shape[0], b.shape[1]))
        for i, (lo, hi) in enumerate(zip(starts, ends)):
            out[i] = a[:, lo:hi] @ b[lo:hi]
    return out


def _aligned(t: torch.Tensor) -> bool:
    """torch._grouped_mm's requirement: 16-byte aligned data and strides (a dim of stride 1
    apart)."""
    ok = t.data_ptr() % 16 == 0
    return ok and all(s == 1 or s * t.element_size() % 16 == 0 for s in t.stride())


def _grouped_run(v: Mapping[str, Any], attrs: Mapping[str, Any]) -> tuple[torch.Tensor]:
    a, b, offs = v["a"], v["b"], v["offsets"]
    fast = getattr(torch, "_grouped_mm", None)
    if fast is not None and a.is_cuda and a.dtype == b.dtype == torch.bfloat16:
        # the layouts its kernels take: mat1 row-major, mat2 column-major (last two dims)
        a_rows = a.contiguous()
        b_cols = b.transpose(-2, -1).contiguous().transpose(-2, -1)
        if _aligned(a_rows) and _aligned(b_cols):
            try:
                return (fast(a_rows, b_cols, offs=offs.to(torch.int32)),)
            except RuntimeError:  # a form or a device its kernels do not take
                pass
    return (grouped_matmul(a, b, offs),)


GROUPED_MM = library_row(
    LibraryRow(
        "grouped_mm",
        ("a", "b", "offsets"),
        _grouped_shape,
        lambda d, attrs: [float_result("grouped_mm", d["a"], d["b"])],
        _grouped_run,
        "torch._grouped_mm (cuBLAS / CUTLASS), or a matmul per group",
        doc="grouped matmul over groups that end at offsets",
    )
)


def grouped_mm(a: TensorView, b: TensorView, offsets: TensorView) -> TensorView:
    a = check_tensor(a, "grouped_mm", "mat1")
    b = check_tensor(b, "grouped_mm", "mat2")
    offsets = check_tensor(offsets, "grouped_mm", "offsets")
    if offsets.dtype not in (DataType.Int32, DataType.Int):
        raise DefinitionError(f"grouped_mm: offsets must be Int32, got {offsets.dtype}")
    return library_op("grouped_mm", {"a": a, "b": b, "offsets": offsets})[0]


__all__ = ["GROUPED_MM", "LINEAR", "MATMUL", "grouped_matmul", "grouped_mm", "linear", "matmul"]
