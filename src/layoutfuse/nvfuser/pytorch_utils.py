"""``nvfuser.pytorch_utils``: torch dtypes (and Python types) to DataType."""

from __future__ import annotations

import torch

from ..dtypes import DataType, from_torch

_PYTHON_TYPES = {
    bool: DataType.Bool,
    int: DataType.Int,
    float: DataType.Double,
    complex: DataType.ComplexDouble,
}


def torch_dtype_to_nvfuser_dtype(dtype: torch.dtype | type) -> DataType:
    """The DataType of a torch dtype, or of the Python types bool, int, float, complex."""
    if dtype in _PYTHON_TYPES:
        return _PYTHON_TYPES[dtype]
    return from_torch(dtype)


__all__ = ["torch_dtype_to_nvfuser_dtype"]
