"""nvFuser's DataType, its mapping to torch, and the type-promotion rules.

Half and BFloat16 compute in Float (kernels upcast on load); results are cast
back to the op's output dtype on store.
"""

from __future__ import annotations

import enum

import torch


class DataType(enum.Enum):
    Double = "Double"
    Float = "Float"
    Half = "Half"
    BFloat16 = "BFloat16"
    Int = "Int"
    Int32 = "Int32"
    UInt64 = "UInt64"
    Bool = "Bool"
    Float8_e4m3fn = "Float8_e4m3fn"
    Float8_e5m2 = "Float8_e5m2"
    ComplexFloat = "ComplexFloat"
    ComplexDouble = "ComplexDouble"
    Float4_e2m1fn = "Float4_e2m1fn"  # one fp4 element; its tensors are packed (PACKED)
    Float4_e2m1fn_x2 = "Float4_e2m1fn_x2"  # two fp4 elements a byte, as torch's dtype
    Null = "Null"

    def __repr__(self) -> str:
        return f"DataType.{self.value}"

    __str__ = __repr__


_TO_TORCH = {
    DataType.Double: torch.float64,
    DataType.Float: torch.float32,
    DataType.Half: torch.float16,
    DataType.BFloat16: torch.bfloat16,
    DataType.Int: torch.int64,
    DataType.Int32: torch.int32,
    DataType.UInt64: torch.uint64,
    DataType.Bool: torch.bool,
    DataType.Float8_e4m3fn: torch.float8_e4m3fn,
    DataType.Float8_e5m2: torch.float8_e5m2,
    DataType.ComplexFloat: torch.complex64,
    DataType.ComplexDouble: torch.complex128,
}
if hasattr(torch, "float4_e2m1fn_x2"):
    _TO_TORCH[DataType.Float4_e2m1fn_x2] = torch.float4_e2m1fn_x2
_FROM_TORCH = {v: k for k, v in _TO_TORCH.items()}

PACKED = {DataType.Float4_e2m1fn: DataType.Float4_e2m1fn_x2}
"""Sub-byte dtypes and the dtype of their torch tensors: a tensor of ``Float4_e2m1fn``
holds two elements a byte along its innermost allocated dim (nvFuser's convention), so
its torch tensor (``float4_e2m1fn_x2``) has half that dim's extent. Only library ops
(``ir/ops/nvfp4.py``) read them."""

FLOATING = frozenset(
    {
        DataType.Double,
        DataType.Float,
        DataType.Half,
        DataType.BFloat16,
        DataType.Float8_e4m3fn,
        DataType.Float8_e5m2,
    }
)
INTEGRAL = frozenset({DataType.Int, DataType.Int32, DataType.UInt64})
COMPLEX = frozenset({DataType.ComplexFloat, DataType.ComplexDouble})
REDUCED_PRECISION = frozenset(
    {DataType.Half, DataType.BFloat16, DataType.Float8_e4m3fn, DataType.Float8_e5m2}
)


def to_torch(dtype: DataType) -> torch.dtype:
    try:
        return _TO_TORCH[dtype]
    except KeyError:
        raise ValueError(f"DataType {dtype} has no torch dtype") from None


def from_torch(dtype: torch.dtype) -> DataType:
    try:
        return _FROM_TORCH[dtype]
    except KeyError:
        raise ValueError(f"torch dtype {dtype} has no layoutfuse DataType") from None


def is_floating(dtype: DataType) -> bool:
    return dtype in FLOATING


def is_integral(dtype: DataType) -> bool:
    return dtype in INTEGRAL


def is_boolean(dtype: DataType) -> bool:
    return dtype is DataType.Bool


def compute_dtype(dtype: DataType) -> DataType:
    """The dtype a kernel computes in: reduced-precision floats compute in Float."""
    return DataType.Float if dtype in REDUCED_PRECISION else dtype


def is_complex(dtype: DataType) -> bool:
    return dtype in COMPLEX


def part_dtype(dtype: DataType) -> DataType:
    """The real dtype of a complex dtype's two parts (Float, Double); others are unchanged."""
    return {DataType.ComplexFloat: DataType.Float, DataType.ComplexDouble: DataType.Double}.get(
        dtype, dtype
    )


def complex_of(dtype: DataType) -> DataType:
    """The complex dtype with parts of ``dtype`` (Double -> ComplexDouble, else ComplexFloat)."""
    if dtype in COMPLEX:
        return dtype
    return DataType.ComplexDouble if dtype is DataType.Double else DataType.ComplexFloat


def itemsize(dtype: DataType) -> int:
    return to_torch(dtype).itemsize


# Category order for promotion: bool < integral < floating < complex.
def _category(dtype: DataType) -> int:
    if dtype is DataType.Bool:
        return 0
    if dtype in INTEGRAL:
        return 1
    if dtype in FLOATING:
        return 2
    return 3


def promote(tensor_dtypes: list[DataType], scalar_dtypes: list[DataType]) -> DataType:
    """Result dtype of a pointwise op, following PyTorch/nvFuser promotion.

    Tensors win over scalars of the same or lower category; a scalar of a higher
    category lifts the result to that category's default (Float for floats, Int
    for ints), as in PyTorch's ``result_type``.
    """
    if tensor_dtypes:
        result = tensor_dtypes[0]
        for d in tensor_dtypes[1:]:
            result = _pair(result, d)
        for s in scalar_dtypes:
            if _category(s) > _category(result):
                # a complex scalar keeps a Double tensor's precision (torch.result_type)
                result = complex_of(result) if s in COMPLEX else _default_for_category(s)
        return result
    result = scalar_dtypes[0]
    for d in scalar_dtypes[1:]:
        result = _pair(result, d)
    return result


def _default_for_category(dtype: DataType) -> DataType:
    cat = _category(dtype)
    return {0: DataType.Bool, 1: DataType.Int, 2: DataType.Float, 3: DataType.ComplexFloat}[cat]


def _pair(a: DataType, b: DataType) -> DataType:
    return from_torch(torch.promote_types(to_torch(a), to_torch(b)))
