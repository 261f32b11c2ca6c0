"""Library segments at run time: one call of a library row's torch execution.

A library segment (``segmenter/specs.py:library_spec``; the ops of ``ir/ops/library.py``)
has no scheduler, params or kernels: the pipeline calls ``LibraryFn`` with the segment's
operands (tensors from memory, scalar values) and gets torch's results. A result that is
a fusion output is copied into its destination (laid out as the output layout pass
chose); any other result is used as torch made it (the kernels after it read it through
its strides). ``LibraryCall`` records the call for the replay plan (``replay.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..dtypes import to_torch
from ..errors import UnsupportedError
from ..ir import Expr, Scalar, TensorView
from ..ir.ops.library import row_of
from .allocate import make_view, same_storage
from .launch import TensorArg


class ViewFn:
    """A view segment's call (``segmenter/specs.py:view_spec``): its source tensor through
    the chain's view ops (``allocate.make_view``, the extents of this call's shapes), or,
    where the source's strides cannot express a reshape as a view, through torch's
    ``reshape`` (a copy). Replays call it again on each call's source."""

    def __init__(self, chain: Sequence[Expr], shapes: Sequence[tuple[int, ...]]):
        self.chain = tuple(chain)
        self.shapes = {id(e.outputs[0]): tuple(s) for e, s in zip(chain, shapes)}

    def shape(self, tv: TensorView) -> tuple[int, ...]:
        return self.shapes[id(tv)]

    def __call__(self, base: torch.Tensor) -> list[torch.Tensor]:
        view = make_view(self.chain, base, self, copy_reshapes=True)
        assert view is not None  # every op of a view segment's chain has a torch form
        return [view]

    def __repr__(self) -> str:
        return f"ViewFn({', '.join(e.op.name for e in self.chain)})"


class LibraryFn:
    """The call of one library expr: operand values in ``expr.inputs`` order -> its results,
    each in its declared dtype (torch's result cast when it differs)."""

    def __init__(self, expr: Expr):
        self.expr = expr
        self.row = row_of(expr)
        self.dtypes = [to_torch(o.dtype) for o in expr.outputs]

    def __call__(self, *args: Any) -> list[torch.Tensor]:
        results = self.row.execute(self.expr, args)
        return [r if r.dtype == d else r.to(d) for r, d in zip(results, self.dtypes)]

    def __repr__(self) -> str:
        return f"LibraryFn({self.expr.op.name})"


@dataclass(frozen=True)
class LibraryCall:
    """One library segment's call as it ran: the function, its arguments (tensors and
    scalar values, in ``expr.inputs`` order) with the positions of the scalar inputs
    among them, per result its destination (a fusion output it was copied into) or None,
    the results torch made, and how many kernel launches ran before it."""

    fn: LibraryFn | ViewFn
    args: tuple[Any, ...]
    scalar_slots: tuple[tuple[int, Scalar], ...]
    dests: tuple[Any, ...]
    results: tuple[Any, ...]
    at: int
    time_ms: Any = None

    def detached(self) -> LibraryCall:
        """The record without the call's tensors (each becomes a ``TensorArg``)."""

        def detach(xs: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(TensorArg.of(a) if isinstance(a, torch.Tensor) else a for a in xs)

        return dataclasses.replace(
            self, args=detach(self.args), dests=detach(self.dests), results=detach(self.results)
        )


def call_library(
    expr: Expr,
    env: dict[int, torch.Tensor],
    scalars: dict[int, Any],
    shapes: Sequence[tuple[int, ...]],
    launch: bool,
    empty: Any,
    bindable: Mapping[int, Callable[[torch.Tensor, torch.Tensor], bool]] | None = None,
    bound: dict[int, torch.Tensor] | None = None,
) -> tuple[
    LibraryFn, tuple[Any, ...], tuple[tuple[int, Scalar], ...], tuple[Any, ...], tuple[Any, ...]
]:
    """Run ``expr`` (``launch``; else make empty results of the outputs' ``shapes`` with
    ``empty(shape, dtype)``), writing its results into ``env``: copied into the
    destinations already there, bound otherwise. A result whose output is in ``bindable``
    (ids of outputs the executor may return as torch made them, each with its check of
    the result's layout: the destination's where it is pinned, and the outputs that view
    it) of the destination's shape, dtype and device, in memory of its own, is not
    copied: it replaces the destination (in ``bound``, by the output's id; its destination
    in the returned ones becomes None). Returns the call's
    function, arguments, scalar slots, destinations and results."""
    fn = LibraryFn(expr)
    args: list[Any] = []
    slots: list[tuple[int, Scalar]] = []
    for k, v in enumerate(expr.inputs):
        if isinstance(v, TensorView):
            args.append(env[id(v)])
        elif isinstance(v, Scalar) and v.is_constant:
            args.append(v.value)
        else:
            assert isinstance(v, Scalar)  # library operands are tensors and scalars
            if id(v) not in scalars:
                raise UnsupportedError(f"{expr!r}: the scalar operand {v!r} has no host value")
            args.append(scalars[id(v)])
            slots.append((k, v))
    dests = tuple(env.get(id(o)) for o in expr.outputs)
    if launch:
        results = tuple(fn(*args))
    else:
        results = tuple(empty(s, o.dtype) for s, o in zip(shapes, expr.outputs))
    kept = list(dests)
    for k, (o, shape, dst, r) in enumerate(zip(expr.outputs, shapes, dests, results)):
        if tuple(r.shape) != tuple(shape):
            raise UnsupportedError(
                f"{expr!r}: torch returned shape {tuple(r.shape)} for T{o.index}, "
                f"the shape rule says {tuple(shape)}"
            )
        if dst is None:
            env[id(o)] = r
        elif (
            launch
            and bound is not None
            and bindable is not None
            and id(o) in bindable
            and _bindable(r, dst, args, results)
            and bindable[id(o)](r, dst)
        ):
            env[id(o)] = bound[id(o)] = r
            kept[k] = None
        elif launch:
            dst.copy_(r)
    return fn, tuple(args), tuple(slots), tuple(kept), results


def _bindable(
    r: torch.Tensor, dst: torch.Tensor, args: Sequence[Any], results: Sequence[Any]
) -> bool:
    """Whether torch's result ``r`` can be returned in place of ``dst`` whatever its
    layout: the same shape, dtype and device, memory of its own (no operand's, no other
    result's)."""
    if (r.shape, r.dtype, r.device) != (dst.shape, dst.dtype, dst.device):
        return False
    others = [a for a in args if isinstance(a, torch.Tensor)]
    others += [x for x in results if isinstance(x, torch.Tensor) and x is not r]
    return not any(same_storage(r, x) for x in others)


__all__ = ["LibraryCall", "LibraryFn", "ViewFn", "call_library"]
