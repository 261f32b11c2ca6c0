"""The reference meaning of a fusion: every op evaluated with torch, one after the other.

This is the oracle the tests compare generated kernels against, and the host
evaluator for scalar expressions. It is never a silent fallback for execution.
Pointwise ops compute Half/BFloat16 in Float and cast to the output dtype,
reductions accumulate in Float, exactly like the generated kernels.
"""

from __future__ import annotations

from typing import Any

import torch

from .dtypes import REDUCED_PRECISION, compute_dtype, to_torch
from .ir import Fusion, OpKind, Scalar, TensorView, Val, Vector
from .ir.fusion import Expr
from .ir.ops.elementwise import ROW_BY_NAME as POINTWISE_ROWS
from .ir.ops.elementwise import DtypeRule


def _compute(v: Any) -> Any:
    if (
        torch.is_tensor(v)
        and v.dtype in (torch.float16, torch.bfloat16)
        or (torch.is_tensor(v) and v.dtype in (torch.float8_e4m3fn, torch.float8_e5m2))
    ):
        return v.to(torch.float32)
    return v


def _scalar_to_tensor(v: Any, val: Val) -> torch.Tensor:
    return torch.tensor(v, dtype=to_torch(compute_dtype(val.dtype)))


def evaluate_expr(expr: Expr, args: list[Any], device) -> list[Any]:
    op = expr.op
    kind = op.kind
    if kind is OpKind.POINTWISE:
        out = expr.outputs[0]
        if op.name == "cast":
            x = args[0]
            if isinstance(out, Scalar):
                return [_to_python(torch.tensor(x).to(to_torch(out.dtype)).item())]
            return [x.to(to_torch(out.dtype))]
        if isinstance(out, Scalar):
            ts = [_scalar_to_tensor(a, v) for a, v in zip(args, expr.inputs)]
            r = op.reference(*ts)
            return [_to_python(r.to(to_torch(out.dtype)).item())]
        cargs = [
            _compute(a) if torch.is_tensor(a) else _scalar_to_tensor(a, v).to(device)
            for a, v in zip(args, expr.inputs)
        ]
        row = POINTWISE_ROWS.get(op.name)
        if row is not None and row.rule is DtypeRule.FLOAT:
            # integer and bool operands of a float op compute in the output's dtype
            ct = to_torch(compute_dtype(out.dtype))
            cargs = [a if a.is_floating_point() else a.to(ct) for a in cargs]
        r = op.reference(*cargs)
        if not torch.is_tensor(r):
            r = torch.tensor(r, device=device)
        return [r.to(to_torch(out.dtype))]
    if kind is OpKind.REDUCTION:
        x = args[0]
        out = expr.outputs[0]
        acc = x.to(torch.float32) if out.dtype in REDUCED_PRECISION else x
        r = op.reference(acc, list(expr.attrs["dims"]))
        return [r.to(to_torch(out.dtype))]
    if kind is OpKind.WELFORD:
        return list(op.reference(args[0], list(expr.attrs["dims"])))
    if kind is OpKind.SHAPE:
        attrs = {k: v for k, v in expr.attrs.items() if k != "groups"}
        shape_args = [
            a if torch.is_tensor(a) and a.dim() else a if isinstance(a, float) else int(a)
            for a in args[1:]
        ]
        return [op.reference(args[0], *shape_args, **attrs)]
    if kind is OpKind.CREATION:
        return [op.reference(*args, **expr.attrs, device=device)]
    if kind is OpKind.SCALAR:
        return [op.reference(*args, **expr.attrs)]
    if kind is OpKind.LIBRARY:  # the row's torch call (``ir/ops/library.py``)
        return list(op.reference(expr, args))
    if kind is OpKind.SCAN:  # the rows of ir.ops.scans: a tuple of outputs
        return list(op.reference(*args, **expr.attrs))
    raise AssertionError(f"unknown op kind {kind}")


def _to_python(v):
    return v.item() if torch.is_tensor(v) else v


def evaluate(fusion: Fusion, inputs: list[Any], device=None) -> dict[int, Any]:
    """Values of every Val of ``fusion`` (by id) for the given input values."""
    if device is None:
        device = next((x.device for x in inputs if torch.is_tensor(x)), torch.device("cpu"))
    env: dict[int, Any] = {}
    for v, x in zip(fusion.inputs, inputs):
        env[id(v)] = x
        if isinstance(v, Vector):  # a vector input binds its elements
            for e, xe in zip(v.elements, x):
                env[id(e)] = xe
    for v in fusion.vals:
        if isinstance(v, Scalar) and v.is_constant:
            env[id(v)] = v.value
    for expr in fusion.exprs:
        args = []
        for i in expr.inputs:
            if isinstance(i, Vector):
                args.append([env[id(e)] for e in i.elements])
            else:
                args.append(env[id(i)])
        for o, r in zip(expr.outputs, evaluate_expr(expr, args, device)):
            env[id(o)] = r
    for v in fusion.vals:
        if isinstance(v, Vector) and id(v) not in env and all(id(e) in env for e in v.elements):
            env[id(v)] = [env[id(e)] for e in v.elements]
    return env


def run_reference(fusion: Fusion, inputs: list[Any], device: Any = None) -> list[Any]:
    """The fusion's outputs, in ``add_output`` order (aliased outputs included);
    ``device``: where tensors that no input places are created (see ``evaluate``)."""
    env = evaluate(fusion, inputs, device)
    outs = []
    for spec in fusion.outputs:
        v = env[id(spec.value)]
        if isinstance(spec.value, TensorView) and torch.is_tensor(v):
            v = (
                v.contiguous()
                if v.data_ptr() in {x.data_ptr() for x in inputs if torch.is_tensor(x)}
                else v
            )
        outs.append(v)
    return outs
