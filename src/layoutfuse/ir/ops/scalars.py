"""Host-side scalar ops: size queries. Scalar arithmetic reuses the pointwise rows."""

from __future__ import annotations

from ...dtypes import DataType
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView, Vector
from .common import check_tensor, emit, normalize_dim

SIZE = register(
    OpDef(
        "size",
        OpKind.SCALAR,
        reference=lambda x, dim: x.shape[dim],
        doc="the extent of one dim of a tensor, known at run time",
    )
)


def size(x: TensorView, dim: int) -> Scalar:
    x = check_tensor(x, "size")
    d = normalize_dim(dim, x.ndim, "size")
    ext = x.shape_domain[d].extent
    if ext is not None:
        return Scalar(x.fusion, DataType.Int, ext)
    out = Scalar(x.fusion, DataType.Int)
    emit(x.fusion, SIZE, [x], [out], dim=d)
    return out


def shape(x: TensorView) -> Vector:
    return Vector(x.fusion, [size(x, i) for i in range(x.ndim)])
