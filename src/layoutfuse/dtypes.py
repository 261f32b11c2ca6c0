"""nvFuser's DataType, its mapping to torch, and the type-promotion rules.

Half and BFloat16 compute in Float (kernels upcast on load); results are cast
back to the op's output dtype on store.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

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


def promote(
    tensor_dtypes: list[DataType],
    scalar_dtypes: list[DataType],
    zero_dim_dtypes: Sequence[DataType] = (),
) -> DataType:
    """Result dtype of a pointwise op, following PyTorch/nvFuser promotion.

    Three tiers, as torch's ``result_type`` and nvFuser's type promotion (dimResult,
    zeroResult, wrappedResult): the dimensioned tensors' dtypes (``tensor_dtypes``), the
    0-dim tensors' (``zero_dim_dtypes``), the scalars' (each a wrapped number: a float
    stands for Float, a complex for ComplexFloat). A lower tier changes the result only
    when its category is higher (bool < integral < floating < complex): then the result is
    its dtype, promoted with the higher tier's where that is Bool or the lower is
    floating (torch's ``combine_categories``); a complex one keeps a Double's precision.
    Scalars alone promote among themselves.
    """
    if not tensor_dtypes and not zero_dim_dtypes:
        result = scalar_dtypes[0]
        for d in scalar_dtypes[1:]:
            result = _pair(result, d)
        return result
    wrapped = [_wrapped(s) for s in scalar_dtypes]
    combined = _combine(_fold(tensor_dtypes), _combine(_fold(zero_dim_dtypes), _fold(wrapped)))
    assert combined is not None  # some tier has a dtype
    return combined


def _fold(dtypes: Sequence[DataType]) -> DataType | None:
    result = None
    for d in dtypes:
        result = d if result is None else _pair(result, d)
    return result


def _wrapped(dtype: DataType) -> DataType:
    """A scalar's dtype as a wrapped number: torch's default float and complex dtypes."""
    if dtype in COMPLEX:
        return DataType.ComplexFloat
    return DataType.Float if dtype in FLOATING else dtype


def _combine(higher: DataType | None, lower: DataType | None) -> DataType | None:
    """The result of a higher tier's dtype and a lower one's (torch's combine_categories)."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher in COMPLEX:
        return higher
    if lower in COMPLEX:
        return complex_of(higher) if higher in FLOATING else lower
    if higher in FLOATING:
        return higher
    if higher is DataType.Bool or lower in FLOATING:
        return _pair(higher, lower)
    return higher


def _pair(a: DataType, b: DataType) -> DataType:
    return from_torch(torch.promote_types(to_torch(a), to_torch(b)))
