"""batch_norm, built from existing ops (a Welford reduction and a pointwise epilogue).

nvFuser's meaning (``csrc/ops/normalization.cpp``): the channel dim is 1 (the last one
with ``channels_last``); the statistics reduce every other dim. Training (or no running
stats): mean and the biased variance of the batch, ``invstd = rsqrt(var + eps)``, and,
with running stats, their updates ``running * (1 - momentum) + batch * momentum`` (the
variance unbiased, ``var_sum / (N - 1)``), which the caller writes into the running-stat
inputs (aliased outputs, as nvFuser's ``aliasOutputToInput``). Inference: the running
mean and ``rsqrt(running_var + eps)``. ``y = (x - mean) * invstd * weight + bias``.
The segmenter puts the reduction and the epilogue into one normalization kernel (or its
fallback plan), as it does for layer norm.
"""

from __future__ import annotations

from typing import NamedTuple

from ...dtypes import DataType
from ...errors import DefinitionError
from ..values import Scalar, TensorView
from .common import check_tensor
from .elementwise import cast, pointwise
from .reductions import welford
from .shape import broadcast


class BatchNormResult(NamedTuple):
    """``output``, ``mean``, ``invstd`` (per channel), and the running-stat updates:
    (new value, the running-stat input it is written into)."""

    output: TensorView
    mean: TensorView
    invstd: TensorView
    updates: tuple[tuple[TensorView, TensorView], ...]


def batch_norm(
    x: TensorView,
    weight: TensorView | None,
    bias: TensorView | None,
    running_mean: TensorView | None,
    running_var: TensorView | None,
    momentum: Scalar,
    eps: Scalar,
    training: bool,
    channels_last: bool = False,
) -> BatchNormResult:
    x = check_tensor(x, "batch_norm")
    if (running_mean is None) != (running_var is None):
        raise DefinitionError("batch_norm: running_mean and running_var come in pairs")
    if x.ndim < 2:
        raise DefinitionError(f"batch_norm: the input must have rank >= 2, got {x.ndim}")
    c_axis = x.ndim - 1 if channels_last else 1
    dims = [d for d in range(x.ndim) if d != c_axis]
    mask = [d != c_axis for d in range(x.ndim)]
    updates: list[tuple[TensorView, TensorView]] = []
    if training or running_mean is None:
        mean, var_sum, n = welford(x, dims)
        count = cast(n, mean.dtype)
        if running_mean is not None and running_var is not None:
            rev = pointwise("sub", 1.0, momentum)
            new_mean = pointwise(
                "add", pointwise("mul", running_mean, rev), pointwise("mul", mean, momentum)
            )
            unbiased = pointwise("div", var_sum, pointwise("sub", count, 1.0))
            new_var = pointwise(
                "add", pointwise("mul", running_var, rev), pointwise("mul", unbiased, momentum)
            )
            updates = [
                (_as(new_mean, running_mean.dtype), running_mean),
                (_as(new_var, running_var.dtype), running_var),
            ]
        invstd = pointwise("rsqrt", pointwise("add", pointwise("div", var_sum, count), eps))
    else:
        assert running_var is not None  # they come in pairs
        mean = running_mean
        invstd = pointwise("rsqrt", pointwise("add", running_var, eps))
    y = pointwise("mul", pointwise("sub", x, broadcast(mean, mask)), broadcast(invstd, mask))
    if weight is not None:
        y = pointwise("mul", y, broadcast(check_tensor(weight, "batch_norm", "weight"), mask))
    if bias is not None:
        y = pointwise("add", y, broadcast(check_tensor(bias, "batch_norm", "bias"), mask))
    return BatchNormResult(y, mean, invstd, tuple(updates))


def _as(v: TensorView, dtype: DataType) -> TensorView:
    return v if v.dtype is dtype else cast(v, dtype)


__all__ = ["BatchNormResult", "batch_norm"]
