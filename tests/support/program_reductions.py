"""The reductions of generated programs: torch's values and their error bounds.

For ``support.program_steps``: sum, prod, max and min (``reduction_compute``) and var_mean
(``var_mean_compute``), with the layout facts of their results (``reduction_layout``);
``exact_sum`` and ``frac_bits`` also decide when a scan or a contraction is exact
(``support.program_table``). Bounds as in ``support.programs``: exact where every partial
result is, whatever the order; else a tree's roundings, or an absolute bound where signs
may cancel.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import torch

from support.programs import (
    BF16,
    BOOL,
    EPS32,
    F16,
    F32,
    I64,
    Unusable,
    Value,
    check_finite,
    rounding,
    same_values,
)


# --- reductions ---------------------------------------------------------------------------------
def frac_bits(x: torch.Tensor) -> int:
    """The least k with every element of ``x`` (float64, finite) a multiple of 2**-k."""
    for k in range(64):
        if bool(((x * 2.0**k) == (x * 2.0**k).round()).all()):
            return k
    return 64


def exact_sum(x: torch.Tensor, dims: Sequence[int]) -> bool:
    """Every partial sum, in any order, is exact in Float: all elements are multiples of
    2**-k and the sum of magnitudes stays below 2**24 of those units."""
    total = x.abs().sum(dims).max() if x.numel() else torch.tensor(0.0)
    return float(total) * 2.0 ** frac_bits(x) < 2.0**24


def exact_prod(x: torch.Tensor, dims: Sequence[int]) -> bool:
    """Every partial product is exact in Float: the significands' bits add up to <= 24."""
    mant, _ = torch.frexp(x)
    bits = torch.zeros_like(x)
    for k in range(1, 54):
        bits = torch.where(
            (bits == 0) & ((mant * 2.0**k) == (mant * 2.0**k).round()), float(k), bits
        )
    return float(torch.where(x == 0, 0.0, bits).sum(dims).max()) <= 24


def reduce_torch(name: str, x: torch.Tensor, dims: Sequence[int], keepdim: bool):
    dims = list(dims)
    if name == "sum":
        return x.sum(dims, keepdim=keepdim)
    if name == "max":
        return x.amax(dims, keepdim=keepdim)
    if name == "min":
        return x.amin(dims, keepdim=keepdim)
    for d in sorted(dims, reverse=True):
        x = x.prod(d, keepdim=keepdim)
    return x


def reduction_compute(name: str, x: Value, dims: Sequence[int], keepdim: bool):
    """sum / prod / max / min: Half and BF16 accumulate in Float; integers and Bool sum and
    multiply as Int64 (modular, so exact in any order)."""
    if name in ("max", "min") and x.dtype is BOOL:
        raise Unusable("max/min of Bool: layoutfuse asks for a cast to Int (by design)")
    float_in = x.dtype.is_floating_point
    out = x.dtype if float_in or name in ("max", "min") else I64
    acc = x.ref.float() if x.dtype in (F16, BF16) else x.ref.to(out)
    faithful = reduce_torch(name, acc, dims, keepdim).to(out)
    if not float_in:
        return faithful, 0.0, 0.0
    true = reduce_torch(name, x.ref.double(), dims, keepdim)
    check_finite(faithful, true)
    if name in ("max", "min"):
        return faithful, x.err, x.abs_err
    if x.abs_err:
        raise Unusable(f"{name}: an operand with an absolute error bound")
    n = math.prod(x.shape[d] for d in dims)
    steps = (math.ceil(math.log2(n)) + 1 if n > 1 else 0) * EPS32
    data = x.ref.double()
    if name == "prod":
        # the partial products of another order reach the product of every factor above 1
        peak = data.abs().clamp(min=1.0).log().sum(dims).max() if data.numel() else 0.0
        if float(peak) >= math.log(torch.finfo(acc.dtype).max):
            raise Unusable("prod: a partial product may overflow in another order")
        # and the product of every nonzero factor below 1: a partial product below the
        # normal range loses bits in one order and not another (program 67408: a factor
        # of 2**-149 made torch's dim-by-dim reference 1.34e-29 where the product is 2.02e-29)
        floor = data.abs().where(data != 0, 1.0).clamp(max=1.0).log().sum(dims).min()
        if data.numel() and float(floor) < math.log(torch.finfo(acc.dtype).tiny):
            raise Unusable("prod: a partial product may fall below the normal range")
        if x.exact and exact_prod(data, dims):
            return faithful, 0.0 if same_values(faithful, true) else rounding(out), 0.0
        return faithful, n * (x.err + 2 * EPS32) + rounding(out), 0.0
    if x.exact and exact_sum(data, dims):
        return faithful, 0.0 if same_values(faithful, true) else rounding(out), 0.0
    if bool((data >= 0).all() or (data <= 0).all()):
        return faithful, x.err + steps + rounding(out), 0.0
    if not x.exact:
        raise Unusable("sum: approximate values of both signs")
    total = float(data.abs().sum(dims).max())
    return faithful, rounding(out), steps * total


def var_mean_compute(x: Value, dims: Sequence[int], correction: int, keepdim: bool):
    """(var, mean) in the input's float dtype (Float for integers and Bool), with the bounds
    of a Welford accumulation in Float (tests/support/reductions.py)."""
    if x.abs_err:
        raise Unusable("var_mean: an operand with an absolute error bound")
    if x.dtype.is_floating_point and bool(x.ref.isinf().any()):
        # torch's Welford mean of an inf is NaN (inf - inf), layoutfuse's inf: not drawn
        # (lgamma's poles make infs from finite inputs)
        raise Unusable("var_mean of an infinite value")
    out = x.dtype if x.dtype.is_floating_point else F32
    with warnings.catch_warnings():  # correction >= n: nan or inf, as intended
        warnings.simplefilter("ignore")
        var, mean = torch.var_mean(
            x.ref.float(), list(dims), correction=correction, keepdim=keepdim
        )
    # NaN elements (acos past 1) give NaN results, compared as equal: not in the bound
    n = math.prod(x.shape[d] for d in dims)
    m2 = torch.var(x.ref.double(), list(dims), correction=0) * n if x.ref.numel() else None
    if m2 is not None and bool((m2.nan_to_num(0.0) >= torch.finfo(torch.float32).max / 2).any()):
        raise Unusable("var_mean: the squared deviations' sum overflows the Float Welford")
    m = float(x.ref.double().abs().nan_to_num(0.0).max()) if x.ref.numel() else 0.0
    return [
        (var.to(out), rounding(out), (256 * EPS32 + 2 * x.err) * m * m),
        (mean.to(out), rounding(out), (256 * EPS32 + x.err) * m),
    ]


def reduction_layout(x: Value, dims: Sequence[int], keepdim: bool) -> dict:
    consumed = {(i, d) for k in dims for i, d in x.origins[k].items()}
    keep = [k for k in range(len(x.shape)) if keepdim or k not in dims]
    return dict(
        bcast=tuple(True if k in dims else x.bcast[k] for k in keep),
        origins=tuple({} if k in dims else x.origins[k] for k in keep),
        consumed=x.consumed | consumed,
        deps=x.deps,
        reshaped=x.reshaped,
    )
