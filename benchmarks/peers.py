"""The peers we measure against: eager PyTorch and torch.compile (Inductor).

Pinned outputs follow the anchors: eager writes into a strided ``out=`` tensor,
torch.compile computes ``op(...).permute(p).clone().permute(inv)`` so that Inductor
fuses the layout change into the op's kernel.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from benchmarks.cases import Case
from benchmarks.harness import SystemUnavailable
from benchmarks.reference import empty_in_order, inverse, operand, plain_op


def _eager_into(case: Case, out: torch.Tensor) -> Callable[..., torch.Tensor]:
    match case.op:
        case "sum":
            return lambda x: torch.sum(operand(case, x), case.dims, out=out)
        case "max":
            return lambda x: torch.amax(operand(case, x), case.dims, out=out)
        case "copy":
            return lambda x: out.copy_(x)
        case "add":
            return lambda x, y: torch.add(x, y, out=out)
    return pinned_op(case)  # no ``out=`` form: the op, then a copy into the pinned layout


def pinned_op(case: Case) -> Callable[..., torch.Tensor]:
    """The op followed by a dense copy into the case's pinned output order.

    A pinned copy is that dense copy alone: Inductor (2.11 to 2.13) turns
    ``x.clone().permute(p).clone(...)`` into an alias of ``x`` when ``x`` is already
    in the pinned order."""
    if case.out_order is None:
        return plain_op(case)
    op = (lambda x: x) if case.op == "copy" else plain_op(case)
    perm, inv = list(case.out_order), inverse(case.out_order)

    def pinned(*xs):
        outs = op(*xs)
        if isinstance(outs, tuple):
            return tuple(relaid(o) for o in outs)
        return relaid(outs)

    def relaid(o):
        return o.permute(perm).clone(memory_format=torch.contiguous_format).permute(inv)

    return pinned


class EagerPeer:
    name = "eager"

    def prepare(self, case: Case, inputs: list[torch.Tensor]) -> Callable[..., torch.Tensor]:
        if case.out_order is None:
            return plain_op(case)
        out = empty_in_order(case.out_shape, case.out_order, case.torch_dtype, inputs[0].device)
        return _eager_into(case, out)


class CompilePeer:
    """torch.compile with the default (Inductor) backend, recompiled for every case.

    Off CUDA a compile failure (no C++ compiler, say) makes the system unavailable for
    the rest of the run instead of failing every case."""

    name = "compile"

    def __init__(self, function: Callable[[Case], Callable[..., object]] = pinned_op) -> None:
        self.function = function  # the torch function of a case (the ops suite gives its own)

    def prepare(self, case: Case, inputs: list[torch.Tensor]) -> Callable[..., torch.Tensor]:
        torch._dynamo.reset()
        compiled = torch.compile(self.function(case), dynamic=False)
        try:
            compiled(*inputs)
        except Exception as e:
            if inputs[0].device.type != "cuda":
                raise SystemUnavailable(f"torch.compile failed off CUDA: {e!r}"[:500]) from e
            raise
        return compiled
