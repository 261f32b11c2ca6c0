"""``testing.validate``: nvFuser's ``testValidate``, checking outputs against the reference.

The expected outputs are recomputed by the torch reference (``layoutfuse.reference``)
on copies of the inputs upcast to float64 (complex128 for complex), so the
reference's own rounding stays far below the tolerance; integer and bool inputs
are used as they are. Each output is then checked for

* shape and dtype (the dtype of its TensorView);
* layout: an output whose TensorView has an allocation domain must be dense in
  that order (reduction axes of the allocation domain are not allocated);
* values: ``|out - ref| <= atol + rtol * |ref|`` elementwise, NaN where the
  reference has NaN and infinities equal.

Default tolerances depend on the output dtype and on the reduction size ``n``
(how many elements were folded into each output value, multiplied along chains
of reductions): ``rtol = base(dtype) + base(Float) * sqrt(n) / 128`` for ``n > 1``
(reductions accumulate in Float, or in Double for Double), and ``atol = rtol * mean|ref|``
so that values near zero from cancelling sums do not fail on rounding alone.
Integer and bool outputs must match exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ..dtypes import COMPLEX, DataType, is_floating, to_torch
from ..ir import Fusion, OpKind, Scalar, TensorView, Val
from ..reference import evaluate
from ..runtime.allocate import dense_strides

# Relative tolerance for results computed once in each dtype (a few units in the last place).
BASE_RTOL: dict[DataType, float] = {
    DataType.Double: 1e-12,
    DataType.ComplexDouble: 1e-12,
    DataType.Float: 1e-5,
    DataType.ComplexFloat: 1e-5,
    DataType.Half: 1e-2,
    DataType.BFloat16: 1.6e-2,
    DataType.Float8_e4m3fn: 1.25e-1,
    DataType.Float8_e5m2: 2.5e-1,
}


def default_rtol(dtype: DataType, reduction_size: int = 1) -> float:
    """The relative tolerance of an output of ``dtype`` that folds ``reduction_size`` values."""
    base = BASE_RTOL.get(dtype, 0.0)
    if reduction_size <= 1 or base == 0.0:
        return base
    accumulator = (
        DataType.Double if dtype in (DataType.Double, DataType.ComplexDouble) else DataType.Float
    )
    return base + BASE_RTOL[accumulator] * math.sqrt(reduction_size) / 128


def reduction_sizes(fusion: Fusion, env: dict[int, Any]) -> dict[int, int]:
    """For every value (by id), how many input elements were folded into each of its elements.

    Reductions multiply the size by the number of elements they fold; other ops take
    the largest size among their operands. ``env`` is ``reference.evaluate``'s result.
    """
    sizes: dict[int, int] = {}
    for expr in fusion.exprs:
        n = max((sizes.get(id(v), 1) for v in expr.inputs), default=1)
        if expr.op.kind in (OpKind.REDUCTION, OpKind.WELFORD):
            shape = env[id(expr.inputs[0])].shape
            for d in expr.attrs["dims"]:
                n *= shape[d]
        if expr.op.name == "cumsum":  # a prefix sum folds up to its dim's extent
            n *= env[id(expr.inputs[0])].shape[expr.attrs["dim"]]
        for out in expr.outputs:
            sizes[id(out)] = n
    return sizes


def _upcast(x: Any) -> Any:
    if not torch.is_tensor(x):
        return x
    if x.is_complex():
        return x.to(torch.complex128)
    if x.is_floating_point():
        return x.to(torch.float64)
    return x


def _label(k: int, v: Val) -> str:
    return f"output {k} ({v!r})"


def _check_layout(label: str, tv: TensorView, out: torch.Tensor) -> None:
    if tv.allocation is None or out.numel() == 0:
        return
    expected = dense_strides(tuple(out.shape), tv.allocation_order)
    checked = [i for i, d in enumerate(tv.shape_domain) if not d.is_broadcast and out.shape[i] > 1]
    if any(out.stride(i) != expected[i] for i in checked):
        raise AssertionError(
            f"validate: {label} has strides {tuple(out.stride())}, but its allocation domain "
            f"{list(tv.allocation.order)} asks for dense strides {expected} "
            f"(compared on dims {checked})"
        )


def _compare(
    label: str,
    out: torch.Tensor,
    ref: torch.Tensor,
    dtype: DataType,
    n: int,
    rtol: float | None,
    atol: float | None,
) -> None:
    exact = not (is_floating(dtype) or dtype in COMPLEX) and rtol is None and atol is None
    if exact:
        bad = out.to(torch.int64) != ref.to(device=out.device, dtype=torch.int64)
        if bad.any():
            _fail(
                label,
                out,
                ref,
                bad,
                (out.to(torch.float64) - ref.to(out.device).double()).abs(),
                "exact match",
            )
        return
    wide = torch.complex128 if out.is_complex() or ref.is_complex() else torch.float64
    o, r = out.to(wide), ref.to(device=out.device, dtype=wide)
    rtol = default_rtol(dtype, n) if rtol is None else rtol
    if atol is None:
        finite = r.abs()[torch.isfinite(r.abs())]
        scale = finite.mean().item() if finite.numel() else 0.0
        atol = rtol * scale if scale > 0 else torch.finfo(torch.float32).tiny
    nan_o, nan_r = torch.isnan(o), torch.isnan(r)
    err = torch.where(o == r, torch.zeros_like(r.real), (o - r).abs())
    err = torch.where(nan_o & nan_r, torch.zeros_like(err), err)
    bad = (err > atol + rtol * r.abs()) | (nan_o != nan_r) | (torch.isinf(r) & (o != r))
    if bad.any():
        _fail(
            label,
            out,
            ref,
            bad,
            err,
            f"atol={atol:.3g}, rtol={rtol:.3g} ({dtype.value}, reduction size {n})",
        )


def _fail(
    label: str,
    out: torch.Tensor,
    ref: torch.Tensor,
    bad: torch.Tensor,
    err: torch.Tensor,
    tolerance: str,
) -> None:
    err = torch.where(bad, torch.nan_to_num(err, nan=math.inf), torch.zeros_like(err))
    flat = int(err.reshape(-1).argmax())
    where = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(out.shape)))
    raise AssertionError(
        f"validate: {label} differs from the reference in {int(bad.sum())} of {bad.numel()} "
        f"elements; max abs error {err.reshape(-1)[flat].item():.4g} at index {where} "
        f"(got {out[where].item()!r}, expected {ref[where].item()!r}); tolerance: {tolerance}"
    )


def _as_tensor(x: Any, like: torch.Tensor | None = None) -> torch.Tensor:
    return (
        x
        if torch.is_tensor(x)
        else torch.as_tensor(x, device=None if like is None else like.device)
    )


def validate(
    fusion: Fusion,
    outputs: Sequence[Any],
    inputs: Sequence[Any],
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Raise AssertionError unless ``outputs`` are what ``fusion`` computes from ``inputs``.

    ``outputs`` are in ``add_output`` order, with or without the outputs aliased to
    inputs. ``rtol``/``atol`` replace the defaults described in the module docstring.
    """
    outputs = list(outputs)
    if len(inputs) != len(fusion.inputs):
        raise AssertionError(
            f"validate: the fusion has {len(fusion.inputs)} inputs, {len(inputs)} were given"
        )
    returned = [s for s in fusion.outputs if s.alias_input is None]
    specs = returned if len(outputs) == len(returned) else fusion.outputs
    if len(outputs) != len(specs):
        raise AssertionError(
            f"validate: the fusion returns {len(returned)} outputs "
            f"({len(fusion.outputs)} with aliases), got {len(outputs)}"
        )
    env = evaluate(fusion, [_upcast(x) for x in inputs])
    sizes = reduction_sizes(fusion, env)
    for k, (spec, out) in enumerate(zip(specs, outputs)):
        v, label = spec.value, _label(k, spec.value)
        ref = _as_tensor(env[id(v)])
        if isinstance(v, TensorView):
            if not torch.is_tensor(out):
                raise AssertionError(f"validate: {label} is a tensor, got {type(out).__name__}")
            if tuple(out.shape) != tuple(ref.shape):
                raise AssertionError(
                    f"validate: {label} has shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
                )
            if out.dtype != to_torch(v.dtype):
                raise AssertionError(
                    f"validate: {label} has dtype {out.dtype}, expected {to_torch(v.dtype)}"
                )
            _check_layout(label, v, out)
        elif isinstance(v, Scalar):
            out = _as_tensor(out, ref).reshape(())
            ref = ref.reshape(())
        _compare(label, out, ref, v.dtype, sizes.get(id(v), 1), rtol, atol)


validate.__test__ = False  # keeps pytest from collecting the ``test_validate`` alias

__all__ = ["BASE_RTOL", "default_rtol", "reduction_sizes", "validate"]
