"""Building a replay plan (``runtime/replay.py``) from the record of a planned run: its
launches and library calls, the tensors they read and wrote, the copies after them.

Input and output tensors become slots, kept tensors (split tickets) stay, the other
tensors are scratch; scalar inputs are read from each call, host arithmetic on them is
redone (``host_scalar``), outputs that share an input's memory are made again as views.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..ir import Fusion, Scalar
from ..ir.ops.random import PHILOX_SEED
from ..reference import evaluate_expr
from .allocate import same_storage
from .index_bounds import IndexCheck
from .launch import LaunchRecord
from .library import LibraryCall
from .replay import LaunchPlan, PlannedCall, PlannedLaunch, Ref


def build_plan(
    fusion: Fusion,
    inputs: list[Any],
    returned: list[Any],
    log: list[LaunchRecord],
    kept: frozenset[int] = frozenset(),
    library_calls: Sequence[LibraryCall] = (),
    copies: Sequence[tuple[torch.Tensor, torch.Tensor]] = (),
    parts: dict[int, tuple[str, int, int]] | None = None,
    scalar_inputs: dict[int, int] | None = None,
    index_checks: tuple[IndexCheck, ...] = (),
) -> LaunchPlan | None:
    """A plan that reproduces the launches ``log`` and the library calls (in their places),
    then the ``copies`` (destination, source), or None when the run cannot be replayed that
    way. ``kept``: ids of the tensors the plan keeps (split tickets); the results of library
    calls are made by each replay's calls; the other tensors that are neither inputs nor
    outputs are scratch, allocated by each replay. A returned tensor that shares an input's
    memory and that no launch, call or copy writes is a view of that input, made again by
    the replay.

    A fusion with complex values launches its real lowering: ``parts`` maps the id of each
    part view it launched with to ``("in" | "out", position, 0 for re or 1 for im)``, and
    ``scalar_inputs`` the id of each of the lowering's scalar inputs to its position among
    ``inputs`` (``fusion``'s own scalar inputs otherwise). ``index_checks``: the bounds
    checks each replay makes before its launches (``runtime/index_bounds.py``)."""
    b = _Builder(fusion, inputs, returned, kept, library_calls, parts or {}, scalar_inputs)
    if not b.take_outputs(_written(log, library_calls, copies, returned, parts or {})):
        return None
    for n, record in enumerate(log):
        if not (b.add_calls(n) and b.add_launch(record)):
            return None
    if not (b.add_calls(len(log)) and b.add_scalar_outputs()):
        return None
    planned_copies = b.planned_copies(copies)
    if planned_copies is None:
        return None
    return b.plan(planned_copies, index_checks)


def _written(
    log: list[LaunchRecord],
    library_calls: Sequence[LibraryCall],
    copies: Sequence[tuple[torch.Tensor, torch.Tensor]],
    returned: list[Any],
    parts: dict[int, tuple[str, int, int]],
) -> set[int]:
    """Ids of the tensors the run writes: every launch's tensor arguments, the copies'
    destinations, the library calls' destinations and the results they return as made
    (``library.call_library``: outputs of their own), and a complex output whose parts a
    launch writes (``parts``: by returned position)."""
    written = {id(a) for r in log for a in r.args if isinstance(a, torch.Tensor)}
    written |= {id(dst) for dst, _ in copies}
    written |= {id(d) for c in library_calls for d in c.dests if d is not None}
    written |= {id(r) for c in library_calls for d, r in zip(c.dests, c.results) if d is None}
    written |= {id(returned[parts[a][1]]) for a in written if a in parts and parts[a][0] == "out"}
    return written


_View = tuple[int, tuple[int, ...], tuple[int, ...], int]  # base, shape, strides, offset


class _Builder:
    """One plan being built (``build_plan``): the slot each tensor of the run takes
    (``ref``), the launches and library calls in order, the outputs made again as views,
    bound to a call's result or computed on the host."""

    def __init__(
        self,
        fusion: Fusion,
        inputs: list[Any],
        returned: list[Any],
        kept: frozenset[int],
        library_calls: Sequence[LibraryCall],
        parts: dict[int, tuple[str, int, int]],
        scalar_inputs: dict[int, int] | None,
    ) -> None:
        self.fusion, self.inputs, self.returned = fusion, inputs, returned
        self.kept, self.parts = kept, parts
        self.scratch: dict[int, int] = {}
        self.tickets: list[torch.Tensor] = []  # the kept tensors, as the launches use them
        self.in_ids = {id(x): i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)}
        self.out_ids: dict[int, int] = {}
        self.views: dict[int, _View] = {}
        self.output_views: dict[int, _View] = {}
        self.values = [s.value for s in fusion.outputs if s.alias_input is None]
        self.scalar_outputs: dict[int, tuple[Any, torch.dtype]] = {}
        self.made: dict[int, int] = {}  # id of a library call's result -> its made number
        self.bound: dict[int, int] = {}  # returned output j -> the made result it is
        self.scalar_pos = (
            scalar_inputs
            if scalar_inputs is not None
            else {id(v): i for i, v in enumerate(fusion.inputs) if isinstance(v, Scalar)}
        )
        # a random op's drawn seed (by id) -> its number: fusion order, the order of the draws
        draws = (e for e in fusion.exprs if e.op is PHILOX_SEED)
        self.seeds = {id(e.outputs[0]): k for k, e in enumerate(draws)}
        self.launches: list[PlannedLaunch | PlannedCall] = []
        self.pending = sorted(library_calls, key=lambda c: c.at)

    def take_outputs(self, written: set[int]) -> bool:
        """Each returned tensor's slot: an output, a view of an input or of another output
        (made again by the replay), or a host scalar; False where one cannot be replayed.
        An output with expanded (stride-0) dims is replayed as ``empty_strided`` of its
        strides: the same storage as the planned run's expanded buffer."""
        returned = self.returned
        for j, t in enumerate(returned):
            if not isinstance(t, torch.Tensor):
                return False
            if isinstance(self.values[j], Scalar):  # computed on the host, not by a launch
                continue
            sharing = _inputs_sharing_memory(t, self.inputs)
            if len(sharing) > 1:
                # inputs that share memory (views of one buffer, one tensor passed twice):
                # which of them ``t`` is a view of is not told by its memory, and the key
                # does not hold the sharing (a later call's inputs need not share)
                return False
            if sharing:
                base = sharing[0]
                x = self.inputs[base]
                if id(t) in written or t.device != x.device:
                    return False
                offset = t.storage_offset() - x.storage_offset()
                self.views[j] = (base, tuple(t.shape), t.stride(), offset)
                continue
            if id(t) not in written:
                # a view of another output (``OutputLayout.view_of_output``): of the one a
                # launch, call or copy writes
                bases = [
                    k
                    for k, u in enumerate(returned)
                    if k != j and same_storage(t, u) and id(u) in written
                ]
                if len(bases) == 1:
                    u = returned[bases[0]]
                    offset = t.storage_offset() - u.storage_offset()
                    self.output_views[j] = (bases[0], tuple(t.shape), t.stride(), offset)
                    continue
                if any(k != j and same_storage(t, u) for k, u in enumerate(returned)):
                    return False
            self.out_ids[id(t)] = j
        return True

    def ref(self, t: torch.Tensor) -> Ref:
        if id(t) in self.in_ids:
            return ("in", self.in_ids[id(t)])
        if id(t) in self.made:  # (before "out": a made result returned as an output)
            return ("made", self.made[id(t)])
        if id(t) in self.out_ids:
            return ("out", self.out_ids[id(t)])
        if id(t) in self.parts:
            return ("part", self.parts[id(t)])
        return _scratch_or_kept(t, self.kept, self.scratch, self.tickets)

    def argspec(self, args: tuple[Any, ...], slots: Any) -> list[tuple[str, Any]] | None:
        """How each replay makes a launch's or call's arguments; None where one cannot."""
        spec: list[tuple[str, Any]] = [
            self.ref(a) if isinstance(a, torch.Tensor) else ("val", a) for a in args
        ]
        for k, s in slots:
            if id(s) in self.scalar_pos:  # args[k]: the value as validated
                spec[k] = ("scalar", (self.scalar_pos[id(s)], type(args[k])))
            elif s.definition is not None and s.definition.op is PHILOX_SEED:
                spec[k] = ("seed", self.seeds[id(s)])  # drawn anew by each replay
            elif s.definition is not None and s.definition.op.name != "size":
                try:
                    fn = host_scalar(s, self.scalar_pos, type(args[k]))
                except ValueError:
                    return None  # arithmetic the plan cannot redo (extents, seeds, parts)
                if fn is not None:  # None: no scalar input upstream (a constant of the key)
                    spec[k] = ("host", (id(s), fn))
            elif s.definition is None and not s.is_constant:
                return None  # an input the plan cannot read (a part of a complex scalar)
        return spec

    def add_calls(self, upto: int) -> bool:
        """The library calls made before launch ``upto``, in their places."""
        while self.pending and self.pending[0].at <= upto:
            c = self.pending.pop(0)
            spec = self.argspec(c.args, c.scalar_slots)
            if spec is None:
                return False
            results: list[tuple[str, Any]] = []
            for dst, r in zip(c.dests, c.results):
                if dst is not None:
                    if id(dst) not in self.out_ids:
                        return False  # a destination the plan does not return
                    results.append(("out", self.out_ids[id(dst)]))
                else:
                    self.made[id(r)] = len(self.made)
                    results.append(("made", self.made[id(r)]))
                    if id(r) in self.out_ids:  # an output returned as the call made it
                        self.bound[self.out_ids[id(r)]] = self.made[id(r)]
            self.launches.append(PlannedCall(c.fn, tuple(spec), tuple(results)))
        return True

    def add_launch(self, record: LaunchRecord) -> bool:
        spec = self.argspec(record.args, record.scalar_slots)
        if spec is None:
            return False
        self.launches.append(
            PlannedLaunch(
                record.fn,
                record.grid,
                tuple(spec),
                record.meta,
                record.compiled,
                tuple(record.constexpr_values()),
            )
        )
        return True

    def add_scalar_outputs(self) -> bool:
        """Each output computed on the host: its value, or how to compute it again."""
        for j, v in enumerate(self.values):
            if isinstance(v, Scalar):
                value = self.returned[j].item()
                try:
                    fn = host_scalar(v, self.scalar_pos, type(value))
                except ValueError:
                    return False
                self.scalar_outputs[j] = (value if fn is None else fn, self.returned[j].dtype)
        return True

    def planned_copies(
        self, copies: Sequence[tuple[torch.Tensor, torch.Tensor]]
    ) -> list[tuple[Ref, Ref]] | None:
        out = []
        for dst, src in copies:
            if 0 in dst.stride() and dst.numel() > 1:
                return None  # an expanded destination: the executor copies its first elements
            out.append((self.ref(dst), self.ref(src)))
        if any(r == ("out", j) for copy in out for r in copy for j in self.bound):
            return None  # a copy of an output made between the launches
        return out

    def plan(
        self, planned_copies: list[tuple[Ref, Ref]], index_checks: tuple[IndexCheck, ...]
    ) -> LaunchPlan:
        made_again = {**self.views, **self.output_views, **self.scalar_outputs, **self.bound}
        outputs = [
            None if j in made_again else (tuple(t.shape), t.stride(), t.dtype, t.device)
            for j, t in enumerate(self.returned)
        ]
        return LaunchPlan(
            outputs,
            self.launches,
            [isinstance(x, torch.Tensor) for x in self.inputs],
            seeds=len(self.seeds),
            views=self.views,
            output_views=self.output_views,
            copies=planned_copies,
            scalar_outputs=self.scalar_outputs,
            index_checks=index_checks,
            bound=self.bound,
            kept=tuple(self.tickets),
        )


def _inputs_sharing_memory(t: torch.Tensor, inputs: list[Any]) -> list[int]:
    """The positions of the inputs whose memory ``t`` shares."""
    return [i for i, x in enumerate(inputs) if same_storage(t, x)]


def host_scalar(
    s: Scalar, scalar_pos: dict[int, int], kind: type
) -> Callable[[Sequence[Any]], Any] | None:
    """``fn(inputs)``: the value of ``s``, computed on the host from the call's scalar
    inputs by its definition (the arithmetic ``runtime/extents.py`` does), as ``kind``;
    None when ``s`` depends on no scalar input (then its value is fixed by the key).
    Raises ValueError when it depends on scalar inputs and on an extent (``size``) too, or on
    a value the plan cannot compute (a drawn seed, a part of a complex scalar input)."""
    order: list[Scalar] = []
    seen: set[int] = set()
    depends = False

    def visit(v: Scalar) -> None:
        nonlocal depends
        if id(v) in seen:
            return
        seen.add(id(v))
        if id(v) in scalar_pos:
            depends = True
        elif v.definition is not None and v.definition.op is PHILOX_SEED:
            raise ValueError(f"{s!r}: host arithmetic on a drawn seed")
        elif v.definition is None and not v.is_constant:
            raise ValueError(f"{s!r}: host arithmetic on an input the plan cannot read")
        elif v.definition is not None:
            for u in v.definition.inputs:
                if isinstance(u, Scalar):
                    visit(u)
        order.append(v)

    visit(s)
    if not depends:
        return None
    if any(v.definition is not None and v.definition.op.name == "size" for v in order):
        raise ValueError(f"{s!r}: host arithmetic on extents and scalar inputs")
    fixed = {id(v): v.value for v in order if v.is_constant}

    def fn(inputs: Sequence[Any]) -> Any:
        values = dict(fixed)
        for v in order:
            if id(v) in values:
                continue
            if id(v) in scalar_pos:
                x = inputs[scalar_pos[id(v)]]
                values[id(v)] = x.item() if isinstance(x, torch.Tensor) else x
                continue
            expr = v.definition
            assert expr is not None  # a scalar neither input nor constant is defined
            args = [values[id(u)] for u in expr.inputs]
            for o, r in zip(expr.outputs, evaluate_expr(expr, args, torch.device("cpu"))):
                values[id(o)] = r
        return kind(values[id(s)])

    return fn


def _scratch_or_kept(
    t: torch.Tensor, kept: frozenset[int], scratch: dict[int, int], tickets: list[torch.Tensor]
) -> tuple[str, Any]:
    """A launch's tensor argument that is neither an input nor an output: a kept ticket
    (``("kept", k)``, ``LaunchPlan.kept[k]``) or a scratch buffer."""
    if id(t) in kept:
        for k, u in enumerate(tickets):
            if u is t:
                return ("kept", k)
        tickets.append(t)
        return ("kept", len(tickets) - 1)
    k = scratch.setdefault(id(t), len(scratch))
    return ("scratch", (k, tuple(t.shape), tuple(t.stride()), t.dtype, t.device))
