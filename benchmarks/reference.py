"""What each case means in plain torch: its inputs, the op, the fp32 reference the
systems are checked against, and the tolerances."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from benchmarks.cases import REDUCING_OPS, Case

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
    """Random normal inputs of the case's shape, dtype and memory order (views of a
    larger tensor where the case slices, broadcast where it expands)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    return _inputs(
        case,
        lambda physical: torch.randn(
            physical, generator=gen, device=device, dtype=case.torch_dtype
        ),
    )


def _inputs(case: Case, make) -> list[torch.Tensor]:
    """Each input: ``make(physical shape)`` in the case's order, then sliced and expanded."""
    inputs = []
    for k in range(case.n_inputs):
        shape = list(case.parent_shape())
        expanded = case.expand is not None and k == case.n_inputs - 1
        if expanded:
            # one element along the expanded dim, after the slice's start where the case
            # slices that dim too (a size-1 parent sliced from 1 would be empty)
            sliced_here = case.slice is not None and case.slice[0] == case.expand
            shape[case.expand] = 1 + (case.slice[1] if sliced_here else 0)
        physical = [shape[d] for d in case.order]
        inputs.append(laid_out(case, make(physical).permute(inverse(case.order)), expanded))
    return inputs


def laid_out(case: Case, parent: torch.Tensor, expanded: bool) -> torch.Tensor:
    """``parent`` (logical dims, the case's order in memory) sliced and expanded as the
    case says."""
    x = parent
    if case.slice is not None:
        dim, start, step = case.slice
        index = [slice(None)] * x.dim()
        index[dim] = slice(start, None, step)
        x = x[tuple(index)]
    if expanded:
        x = x.expand(case.shape)
    return x


def input_strides(case: Case) -> list[tuple[int, ...]]:
    """Each input's strides, as :func:`make_inputs` lays it out (computed on meta tensors)."""
    return [tuple(x.stride()) for x in _inputs(case, lambda p: torch.empty(p, device="meta"))]


def operand(case: Case, x: torch.Tensor) -> torch.Tensor:
    """The input as the op sees it: the case's view applied."""
    if case.view is None:
        return x
    perm, shape = case.view
    return x.permute(perm).reshape(shape)


def _layernorm(x, d):
    y = F.layer_norm(x.movedim(d, -1), (x.shape[d],), eps=LAYERNORM_EPS)
    return y.movedim(-1, d)


def _rmsnorm(x, d):
    y = F.rms_norm(x.movedim(d, -1), (x.shape[d],), eps=LAYERNORM_EPS)
    return y.movedim(-1, d)


def _chain(x):
    return torch.tanh(x * 0.5) * x + 1


def plain_op(case: Case) -> Callable[..., torch.Tensor]:
    """The op on its inputs, leaving the output layout to torch."""
    dims = case.dims
    match case.op:
        case "sum":
            return lambda x: operand(case, x).sum(dims)
        case "max":
            return lambda x: operand(case, x).amax(dims)
        case "var_mean":
            return lambda x: torch.var_mean(operand(case, x), dims, correction=1)
        case "softmax":
            return lambda x: torch.softmax(x, dims[0])
        case "log_softmax":
            return lambda x: torch.log_softmax(x, dims[0])
        case "layernorm":
            return lambda x: _layernorm(x, dims[0])
        case "rmsnorm":
            return lambda x: _rmsnorm(x, dims[0])
        case "chain":
            return _chain
        case "var_sums":
            return lambda x: (x * x).mean(dims) - x.mean(dims) ** 2
        case "copy":
            return lambda x: x.clone()
        case "add":
            return lambda x, y: x + y
    raise ValueError(f"unknown op {case.op!r} in case {case.name}")


def reference(case: Case, inputs: list[torch.Tensor]) -> torch.Tensor | tuple[torch.Tensor, ...]:
    """The op computed in fp32 from the (upcast) inputs."""
    return plain_op(case)(*(t.float() for t in inputs))


def as_outputs(out) -> tuple[torch.Tensor, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def tolerance(case: Case) -> tuple[float, float]:
    """(rtol, atol) for comparing a result with :func:`reference`.

    atol scales with the output's typical magnitude: sqrt(n) for a sum of n standard
    normals, 1/n for a softmax over n."""
    rtol, atol = TOLERANCES[case.dtype]
    reduced = math.prod(case.operand_shape[d] for d in case.dims)
    if case.op == "sum":
        atol *= math.sqrt(reduced)
    elif case.op in ("var_sums", "var_mean"):  # variances of standard normals: about 1
        atol *= 4
    elif case.op == "softmax":
        atol /= max(reduced, 1)
    elif case.op == "log_softmax":  # about -log(n): the relative error of the logsumexp
        atol *= 1 + math.log(max(reduced, 1))
    return rtol, atol


def check_result(case: Case, out, ref) -> None:
    """Raise AssertionError unless each output has the case's shape, dtype, pinned layout
    and values."""
    outs, refs = as_outputs(out), as_outputs(ref)
    if len(outs) != case.n_outputs:
        raise AssertionError(f"{len(outs)} outputs, expected {case.n_outputs}")
    for k, (o, r) in enumerate(zip(outs, refs)):
        try:
            _check_one(case, o, r)
        except AssertionError as e:
            raise AssertionError(f"output {k}: {e}" if case.n_outputs > 1 else str(e)) from None


def _expanded_out_dim(case: Case) -> int | None:
    """The output dim of the case's expanded input dim (None: none, or reduced away)."""
    e = case.expand
    if e is None or case.view is not None:
        return None
    if case.op in REDUCING_OPS:
        return None if e in case.dims else e - sum(d < e for d in case.dims)
    return e


def _pinned_strides(case: Case, out: torch.Tensor) -> tuple[int, ...]:
    """The strides of an output pinned to ``case.out_order``: dense in that order, except
    that nvFuser keeps an expanded dim expanded in an output, pinned or not: where the
    output has stride 0 on the expanded input's dim, that dim is not allocated (stride 0,
    and the dims outside it step as if its extent were 1)."""
    e = _expanded_out_dim(case)
    if e is None or out.stride()[e] != 0:
        return tuple(dense_strides(case.out_shape, case.out_order))
    shape = [1 if d == e else n for d, n in enumerate(case.out_shape)]
    return tuple(0 if d == e else s for d, s in enumerate(dense_strides(shape, case.out_order)))


def _check_one(case: Case, out: torch.Tensor, ref: torch.Tensor) -> None:
    if tuple(out.shape) != case.out_shape:
        raise AssertionError(f"shape {tuple(out.shape)}, expected {case.out_shape}")
    if out.dtype != case.torch_dtype:
        raise AssertionError(f"dtype {out.dtype}, expected {case.torch_dtype}")
    if case.out_order is not None:
        want = _pinned_strides(case, out)
        if tuple(out.stride()) != want:
            raise AssertionError(f"output strides {tuple(out.stride())}, expected {want}")
    rtol, atol = tolerance(case)
    # no tighter than the output dtype's subnormal step: a softmax over 72M elements
    # (values near 1e-8) rounds to 0 in fp16, whoever computes it
    info = torch.finfo(out.dtype)
    atol = max(atol, info.smallest_normal * info.eps)
    bad = ~torch.isclose(out.float(), ref, rtol=rtol, atol=atol, equal_nan=True)
    if bool(bad.any()):
        i = int(bad.flatten().nonzero()[0])
        raise AssertionError(
            f"{int(bad.sum())} of {bad.numel()} values differ from the fp32 reference "
            f"(rtol={rtol:g}, atol={atol:g}); first at flat index {i}: "
            f"{out.flatten()[i].item():g} vs {ref.flatten()[i].item():g}"
        )
