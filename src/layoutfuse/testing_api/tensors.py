"""Fusion inputs as nvFuser's C++ tests make them: ``makeContigTensor`` and friends.

A shape entry of ``-1`` is a symbolic extent (bound when the fusion runs), ``1``
is a broadcast axis (as ``TensorViewBuilder().shape(...)`` makes it), anything
else a static extent. Every tensor gets a row-major allocation domain whose
contiguity says what the tensor promises: True for the ``contig`` makers, False
for the others. ``set_allocation_domain`` on the result replaces it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..dtypes import DataType
from ..errors import DefinitionError, describe
from ..ir import IterDomain, TensorView, current_fusion


def _axis(extent: int, maker: str) -> IterDomain:
    if not isinstance(extent, int) or isinstance(extent, bool) or extent < -1:
        raise DefinitionError(f"{maker}: shape entries must be ints >= -1, got {describe(extent)}")
    if extent == 1:
        return IterDomain.broadcast(1)
    return IterDomain.iteration(None if extent == -1 else extent)


def _make(shape: Sequence[int], dtype: DataType, contiguous: bool, maker: str) -> TensorView:
    if not isinstance(dtype, DataType) or dtype is DataType.Null:
        raise DefinitionError(f"{maker}: invalid dtype {dtype!r}")
    tv = TensorView(current_fusion(), [_axis(e, maker) for e in shape], dtype)
    tv.set_allocation_domain(tv.logical, contiguous)
    return tv


def _rank(ndims: int, maker: str) -> int:
    if not isinstance(ndims, int) or isinstance(ndims, bool) or ndims < 0:
        raise DefinitionError(f"{maker}: ndims must be an int >= 0, got {describe(ndims)}")
    return ndims


def make_contig_tensor(ndims: int, dtype: DataType = DataType.Float) -> TensorView:
    """``makeContigTensor``: symbolic extents, contiguous in row-major order."""
    return _make([-1] * _rank(ndims, "make_contig_tensor"), dtype, True, "make_contig_tensor")


def make_symbolic_tensor(
    ndims: int | Sequence[int], dtype: DataType = DataType.Float
) -> TensorView:
    """``makeSymbolicTensor``: symbolic extents, no contiguity promise.

    Given a shape instead of a rank, size-1 entries become broadcast axes and
    every other entry becomes symbolic (nvFuser's second overload).
    """
    if isinstance(ndims, int):
        shape = [-1] * _rank(ndims, "make_symbolic_tensor")
    else:
        shape = [1 if e == 1 else -1 for e in ndims]
    return _make(shape, dtype, False, "make_symbolic_tensor")


def make_concrete_tensor(shape: Sequence[int], dtype: DataType = DataType.Float) -> TensorView:
    """``makeConcreteTensor``: static extents (-1: symbolic), no contiguity promise."""
    return _make(list(shape), dtype, False, "make_concrete_tensor")


def make_contig_concrete_tensor(
    shape: Sequence[int], dtype: DataType = DataType.Float
) -> TensorView:
    """``makeContigConcreteTensor``: static extents (-1: symbolic), contiguous row-major."""
    return _make(list(shape), dtype, True, "make_contig_concrete_tensor")


__all__ = [
    "make_concrete_tensor",
    "make_contig_concrete_tensor",
    "make_contig_tensor",
    "make_symbolic_tensor",
]
