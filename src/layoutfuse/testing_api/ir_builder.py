"""``IrBuilder``: scalars made the way nvFuser's tests make them (``IrBuilder::create<Val>``)."""

from __future__ import annotations

from typing import Any

from ..dtypes import COMPLEX, DataType, is_boolean, is_floating, is_integral
from ..errors import ArgumentTypeError, DefinitionError, describe
from ..ir import Scalar, current_fusion


def _dtype_of(value: Any) -> DataType:
    if isinstance(value, bool):
        return DataType.Bool
    if isinstance(value, int):
        return DataType.Int
    if isinstance(value, float):
        return DataType.Double
    if isinstance(value, complex):
        return DataType.ComplexDouble
    raise ArgumentTypeError(f"IrBuilder.create_val: cannot make a scalar of {describe(value)}")


def _convert(value: Any, dtype: DataType) -> Any:
    if is_boolean(dtype):
        return bool(value)
    if is_integral(dtype):
        if isinstance(value, float) and not value.is_integer():
            raise DefinitionError(f"IrBuilder.create_val: {value!r} is not a {dtype}")
        return int(value)
    if is_floating(dtype):
        return float(value)
    if dtype in COMPLEX:
        return complex(value)
    raise DefinitionError(f"IrBuilder.create_val: invalid dtype {dtype!r}")


class IrBuilder:
    """``IrBuilder.create_val(1.0)`` is ``IrBuilder::create<Val>(1.0)``: a constant Double.

    ``create_val(DataType.Float)`` (or ``create_val(dtype=DataType.Float)``) is a
    symbolic scalar, to be added as a fusion input and bound when the fusion runs.
    """

    @staticmethod
    def create_val(value: Any = None, dtype: DataType | None = None) -> Scalar:
        if isinstance(value, DataType):
            if dtype is not None:
                raise DefinitionError("IrBuilder.create_val: the dtype is given twice")
            value, dtype = None, value
        if value is None:
            if dtype is None or dtype is DataType.Null:
                raise DefinitionError("IrBuilder.create_val: a symbolic scalar needs a dtype")
            _convert(0, dtype)  # rejects dtypes that no scalar can have
            return Scalar(current_fusion(), dtype)
        dtype = _dtype_of(value) if dtype is None else dtype
        return Scalar(current_fusion(), dtype, _convert(value, dtype))


__all__ = ["IrBuilder"]
