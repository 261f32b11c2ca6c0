"""What each case means in plain torch: its inputs, the op, the fp32 reference the
systems are checked against, and the tolerances."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from benchmarks.cases import Case

LAYERNORM_EPS = 1e-5
# (rtol, atol per unit of the output's typical magnitude)
TOLERANCES = {"float32": (1e-3, 1e-3), "bfloat16": (2e-2, 2e-2), "float16": (5e-3, 5e-3)}


def inverse(perm: tuple[int, ...]) -> list[int]:
    return [perm.index(i) for i in range(len(perm))]


def dense_strides(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    """Strides of a dense tensor of logical ``shape`` laid out in memory ``order``."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def empty_in_order(shape, order, dtype, device) -> torch.Tensor:
    physical = [shape[d] for d in order]
    return torch.empty(physical, dtype=dtype, device=device).permute(inverse(tuple(order)))


def make_inputs(case: Case, device: str, seed: int = 0) -> list[torch.Tensor]:
    """Random normal inputs of the case's shape, dtype and memory order."""
    gen = torch.Generator(device=device).manual_seed(seed)
    physical = [case.shape[d] for d in case.order]
    return [
        torch.randn(physical, generator=gen, device=device, dtype=case.torch_dtype).permute(
            inverse(case.order)
        )
        for _ in range(case.n_inputs)
    ]


def operand(case: Case, x: torch.Tensor) -> torch.Tensor:
    """The input as the op sees it: the case's view applied."""
    if case.view is None:
        return x
    perm, shape = case.view
    return x.permute(perm).reshape(shape)


def _layernorm(x, d):
    y = F.layer_norm(x.movedim(d, -1), (x.shape[d],), eps=LAYERNORM_EPS)
    return y.movedim(-1, d)


def plain_op(case: Case) -> Callable[..., torch.Tensor]:
    """The op on its inputs, leaving the output layout to torch."""
    dims = case.dims
    match case.op:
        case "sum":
            return lambda x: operand(case, x).sum(dims)
        case "softmax":
            return lambda x: torch.softmax(x, dims[0])
        case "layernorm":
            return lambda x: _layernorm(x, dims[0])
        case "var_sums":
            return lambda x: (x * x).mean(dims) - x.mean(dims) ** 2
        case "copy":
            return lambda x: x.clone()
        case "add":
            return lambda x, y: x + y
    raise ValueError(f"unknown op {case.op!r} in case {case.name}")


def reference(case: Case, inputs: list[torch.Tensor]) -> torch.Tensor:
    """The op computed in fp32 from the (upcast) inputs."""
    return plain_op(case)(*(t.float() for t in inputs))


def tolerance(case: Case) -> tuple[float, float]:
    """(rtol, atol) for comparing a result with :func:`reference`.

    atol scales with the output's typical magnitude: sqrt(n) for a sum of n standard
    normals, 1/n for a softmax over n."""
    rtol, atol = TOLERANCES[case.dtype]
    reduced = math.prod(case.operand_shape[d] for d in case.dims)
    if case.op == "sum":
        atol *= math.sqrt(reduced)
    elif case.op == "var_sums":  # E[x^2] - E[x]^2 of standard normals: about 1
        atol *= 4
    elif case.op == "softmax":
        atol /= reduced
    return rtol, atol


def check_result(case: Case, out: torch.Tensor, ref: torch.Tensor) -> None:
    """Raise AssertionError unless ``out`` has the case's shape, dtype, pinned layout
    and values."""
    if tuple(out.shape) != case.out_shape:
        raise AssertionError(f"shape {tuple(out.shape)}, expected {case.out_shape}")
    if out.dtype != case.torch_dtype:
        raise AssertionError(f"dtype {out.dtype}, expected {case.torch_dtype}")
    if case.out_order is not None:
        want = dense_strides(case.out_shape, case.out_order)
        if tuple(out.stride()) != want:
            raise AssertionError(f"output strides {tuple(out.stride())}, expected {want}")
    rtol, atol = tolerance(case)
    bad = ~torch.isclose(out.float(), ref, rtol=rtol, atol=atol)
    if bool(bad.any()):
        i = int(bad.flatten().nonzero()[0])
        raise AssertionError(
            f"{int(bad.sum())} of {bad.numel()} values differ from the fp32 reference "
            f"(rtol={rtol:g}, atol={atol:g}); first at flat index {i}: "
            f"{out.flatten()[i].item():g} vs {ref.flatten()[i].item():g}"
        )
