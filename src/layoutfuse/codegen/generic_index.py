"""Triton expressions for the addresses of accesses that are not affine (generic mode).

``generic_index(spec, params)`` walks the chain of every access that the params mark
not affine (``analysis.index_walk``) with ``TritonIndex``, a string algebra:

* the leaves are the iteration coordinates' indices ``dim0, dim1, ...`` (a literal 0
  for a coordinate of extent 1: it is in no group);
* a static extent is a literal, a symbolic one a kernel argument ``ext<j>`` (numbered
  in the order the walk first needs it);
* every compound expression gets a temporary ``gi<n>``, shared by equal expressions,
  so a chain of reshapes stays linear in size;
* a runtime scalar of an index map (a select's index) is its kernel argument ``c<i>``
  (cast to 32 bits where the kernel indexes in 32);
* a masked map (pad) gives conditions: ``valid[a]`` masks access ``a``'s load,
  ``predicates[chain_key]`` selects between a pad's input and its fill;
* an indexed read's loaded index is ``gv<n>``, an ``Indirect`` line: the kernel's own
  value of the index operand at that point of the chain (``ValueEmitter``), written when
  the lines are (``GenericIndex.emit``), then asserted in range (where Triton compiles
  asserts) and, where the op takes negative indices, wrapped.

The address of access ``a`` is ``sum(index_i * ms<a>_<i>)`` over its memory tensor's
dims, ``ms<a>_<i>`` being that tensor's real strides, passed as arguments. The walk is
a pure function of the spec and the params, so the runtime calls it again to supply
the argument values in the same order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..analysis.accesses import index_operands
from ..analysis.index_walk import chain_key, walk
from ..ir import OpKind, TensorView
from ..schedulers.problem import is_affine
from .indexing import offset_expr


@dataclass(frozen=True, eq=False)
class Indirect:
    """A line ``<name> = <the value of expr's index operand>`` at ``chain`` (the exprs
    between the iteration tensor and ``expr``), then torch's device-side check of it:
    ``in_range``, asserted where Triton compiles asserts."""

    name: str
    expr: Any
    chain: tuple[Any, ...]
    in_range: str

    def check(self, lanes: str | None) -> str:
        """The assert, over the tile's ``lanes`` (a masked lane's index is whatever its
        masked load gave, 0: an index computed from it, say minus 1, is no error)."""
        where = f", mask={lanes}" if lanes else ""
        return f'tl.device_assert({self.in_range}, "{self.expr.attrs["source"]}: index out of range"{where})'


class TritonIndex:
    """The index algebra over Triton expression strings, folding 0, 1 and literals."""

    zero = "0"
    one = "1"

    def __init__(
        self,
        scalar_names: dict[int, str] | None = None,
        index64: bool = False,
        made: tuple[tuple[int, int], ...] = (),
    ):
        self.scalar_names = scalar_names or {}
        self.made = frozenset(made)  # (tensor index, dim): made broadcast by the run
        self.unsigned = "tl.uint64" if index64 else "tl.uint32"
        self.lines: list[str | Indirect] = []
        self.extent_uids: list[int] = []
        self._memo: dict[Any, str] = {}
        self.chain: tuple = ()

    def is_made(self, tv, i: int) -> bool:
        return (tv.index, i) in self.made

    def _bind(self, expr: str) -> str:
        name = self._memo.get(expr)
        if name is None:
            name = f"gi{len(self.lines)}"
            self.lines.append(f"{name} = {expr}")
            self._memo[expr] = name
        return name

    def add(self, a: str, b: str) -> str:
        if a == "0":
            return b
        if b == "0":
            return a
        if a.isdigit() and b.isdigit():
            return str(int(a) + int(b))
        return self._bind(f"{a} + {b}")

    def mul(self, a: str, b: str) -> str:
        if "0" in (a, b):
            return "0"
        if a == "1":
            return b
        if b == "1":
            return a
        if a.isdigit() and b.isdigit():
            return str(int(a) * int(b))
        return self._bind(f"{a} * {b}")

    def floordiv(self, a: str, b: str) -> str:
        if a == "0" or b == "1":
            return a
        if a.isdigit() and b.isdigit():
            return str(int(a) // int(b))
        return self._bind(f"{a} // {b}")

    def mod(self, a: str, b: str) -> str:
        if a == "0" or b == "1":
            return "0"
        if a.isdigit() and b.isdigit():
            return str(int(a) % int(b))
        return self._bind(f"{a} % {b}")

    def scalar(self, s) -> str:
        if isinstance(s, int):
            return str(s)
        if s.is_constant:
            return str(int(s.value))
        return self.scalar_names[id(s)]

    def in_range(self, a: str, n: str) -> str:
        """``0 <= a < n`` as one unsigned compare (a negative ``a`` wraps past any extent;
        ``n`` fits the signed type, so its promotion to unsigned keeps its value): a
        bf16 cat of [8192, 2047] and [8192, 2049] 392 -> 368 SASS instructions a thread."""
        if a.lstrip("-").isdigit() and n.isdigit():
            return "True" if 0 <= int(a) < int(n) else "False"
        return self._bind(f"tl.cast({a}, {self.unsigned}) < {n}")

    def indirect(self, expr, out_idx) -> str:
        key = (id(expr), tuple(id(e) for e in self.chain))
        name = self._memo.get(key)
        if name is None:
            name = f"gv{sum(isinstance(x, Indirect) for x in self.lines)}"
            n = self.extent(expr.inputs[0], expr.attrs["dim"])
            low = f"-{n}" if expr.attrs["negative"] else "0"
            in_range = f"({name} >= {low}) & ({name} < {n})"
            self.lines.append(Indirect(name, expr, self.chain, in_range))
            self._memo[key] = name
        if not expr.attrs["negative"]:
            return name
        n = self.extent(expr.inputs[0], expr.attrs["dim"])
        return self._bind(f"tl.where({name} < 0, {name} + {n}, {name})")

    def extent(self, tv, dim: int) -> str:
        d = tv.shape_domain[dim]
        if d.extent is not None:
            return str(d.extent)
        if d.uid not in self.extent_uids:
            self.extent_uids.append(d.uid)
        return f"ext{self.extent_uids.index(d.uid)}"


@dataclass(frozen=True, eq=False)
class GenericIndex:
    lines: tuple[str | Indirect, ...]  # temporaries, in order, over the ``dim<d>`` leaves
    offsets: dict[int, str]  # access -> its element offset
    guards: dict[int, str]  # store access -> one write along stride-0 dims
    extent_uids: tuple[int, ...]  # IterDomain uid of ``ext<j>``
    strides: tuple[tuple[int, int], ...]  # (access, memory dim) of every ``ms<a>_<i>``
    ends: tuple[tuple[int, int], ...] = ()  # (access, lines written once its walk is done)
    valid: dict[int, str] = field(default_factory=dict)  # load access -> where it is read
    predicates: dict[tuple[int, ...], str] = field(default_factory=dict)  # pad -> its cond

    def predicate(self, expr, chain) -> str | None:
        """The condition under which the pad ``expr`` reached along ``chain`` reads its input."""
        return self.predicates.get(chain_key(expr, chain))

    def arg_names(self) -> list[str]:
        return [f"ext{j}" for j in range(len(self.extent_uids))] + [
            f"ms{a}_{i}" for a, i in self.strides
        ]

    def arg_values(self, spec, env: dict, extents: dict[int, int]) -> list[int]:
        """The values of ``arg_names()``: bound extents, then the memory tensors' strides."""
        return [extents[u] for u in self.extent_uids] + [
            env[id(spec.accesses[a].tv)].stride(i) for a, i in self.strides
        ]

    def dim_lines(self, params, group_index: dict[int, str]) -> list[str]:
        """``dim<d> = <index of the group of coordinate d>`` for every grouped coordinate,
        in int64 when the params index in 64 bits (the walk multiplies indices by extents;
        ``tl.cast`` also takes a loop counter, which the interpreter keeps a Python int)."""
        out = []
        for k, d in enumerate(params.group_dims):
            if k in group_index:
                i = group_index[k]
                out.append(
                    f"dim{d} = tl.cast({i}, tl.int64)" if params.index64 else f"dim{d} = {i}"
                )
        return out

    def emit(
        self,
        w,
        dim_lines: list[str],
        offsets: list[str | None],
        value: Callable[[Any, tuple], str],
        zero_tile: str,
        index64: bool,
        load_masks: list[str] | None = None,
        lanes: str | None = None,
    ) -> None:
        """Write the walk into ``w`` and each access's offset into ``offsets``: the lines in
        order, an ``Indirect`` as the kernel's ``value(index operand, chain)``; an offset
        after every line, or earlier where an indirect value needs it (an index operand read
        through another indexed read: its own walk comes first, ``accesses.reached``).
        Given ``load_masks``, a load's mask is narrowed by its ``valid`` condition (a pad's
        input: read where it lies) with its offset (a caller without them masks per load).
        ``lanes``: the tile's mask, under which the indirect values are asserted in range."""
        for line in dim_lines:
            w.line(line)
        done = dict(self.ends)
        pending = list(self.offsets)

        def flush(upto: int) -> None:
            ready = []
            while pending and done[pending[0]] <= upto:
                ready.append(pending.pop(0))
            for a in ready:
                offsets[a] = w.assign("off", f"{self.offsets[a]} + {zero_tile}")
            for a in ready if load_masks is not None else ():
                if a in self.valid:
                    load_masks[a] = w.assign("lmask", f"{load_masks[a]} & {self.valid[a]}")

        for k, line in enumerate(self.lines):
            if isinstance(line, Indirect):
                flush(k)
                v = value(line.expr.inputs[1], line.chain)
                w.line(f"{line.name} = {v}.to(tl.int64)" if index64 else f"{line.name} = {v}")
                w.line(line.check(lanes))
            else:
                w.line(line)
        flush(len(self.lines))


def generic_index(spec, params) -> GenericIndex:
    """The index walk of every access that ``params`` marks not affine."""
    rank = len(spec.root.shape_domain)
    grouped = set(params.group_dims)
    root_idx = [f"dim{d}" if d in grouped else "0" for d in range(rank)]
    # a runtime scalar (a slice's start, a pad's width, a select's index) is an Int
    # argument, a 64-bit one; where the kernel indexes in 32 bits its index arithmetic
    # takes it as 32-bit too (bounded by the extents it indexes): in 64 bits it made the
    # whole walk 64-bit (a bf16 cat of [8192, 2047] and [8192, 2049]: 440 SASS
    # instructions a thread, 392 so, sm_90)
    names = {
        id(v): f"c{i}" if params.index64 else f"tl.cast(c{i}, tl.int32)"
        for i, v in enumerate(spec.scalars)
    }
    ix = TritonIndex(names, params.index64, params.made_ones)
    offsets: dict[int, str] = {}
    valid: dict[int, str] = {}
    predicates: dict[tuple[int, ...], str] = {}
    guards: dict[int, str] = {}
    strides: list[tuple[int, int]] = []
    ends: list[tuple[int, int]] = []
    first_coordinate = spec.n_loads + spec.n_stores
    for a in _walk_order(spec, params):
        access = spec.accesses[a]
        terms: list[tuple[str, int | str]] = []
        conds: list[str] = []
        wk = walk(access, root_idx, ix)
        if wk.valid:
            valid[a] = " & ".join(dict.fromkeys(wk.valid))
        predicates.update((k, " & ".join(c)) for k, c in wk.predicates.items())
        mem = list(wk.indices)
        if a >= first_coordinate:  # iota, random ops: the row-major linear index
            mem = [_linear_index(mem, access.tv, ix)]
        for i, m in enumerate(mem):
            if m == "0":
                continue
            if a >= first_coordinate:
                terms.append((m, 1))
                continue
            s = f"ms{a}_{i}"
            strides.append((a, i))
            terms.append((m, s))
            if access.store:
                conds.append(f"(({m} == 0) | ({s} != 0))")
        offsets[a] = offset_expr(terms)
        ends.append((a, len(ix.lines)))
        if conds:
            guards[a] = " & ".join(conds)
    return GenericIndex(
        tuple(ix.lines),
        offsets,
        guards,
        tuple(ix.extent_uids),
        tuple(strides),
        ends=tuple(ends),
        valid=valid,
        predicates=predicates,
    )


def _linear_index(indices: list[str], tv, ix: TritonIndex) -> str:
    """``tv``'s row-major linear index of per-dim ``indices`` (Horner: one per dim)."""
    lin = ix.zero
    for d, m in enumerate(indices):
        scaled = ix.mul(lin, ix.extent(tv, d)) if lin != ix.zero else ix.zero
        lin = ix.add(scaled, m)
    return lin


def _walk_order(spec, params) -> list[int]:
    """The accesses that are not affine, each walked after the accesses that its indexed
    reads' index operands load (their offsets feed the values of its ``Indirect`` lines:
    an index operand read through a pad or another indexed read walks too)."""
    keys = {
        a.key()[:2]: i
        for i, a in enumerate(spec.accesses)
        if not spec.n_loads <= i < spec.n_loads + spec.n_stores
    }
    memory = {id(a.tv) for a in spec.accesses[: spec.n_loads]}
    order: list[int] = []
    seen: set[int] = set()

    def visit(a: int) -> None:
        if a in seen:
            return
        seen.add(a)
        acc = spec.accesses[a]
        for k, e in enumerate(() if acc.backward else acc.chain):
            for operand in index_operands(e):
                for tv, chain in _reached(operand, acc.chain[:k], memory):
                    b = keys.get((id(tv), tuple(id(x) for x in chain)))
                    if b is not None:
                        visit(b)
        if not is_affine(params, a):
            order.append(a)

    for a in range(len(spec.accesses)):
        visit(a)
    return order


def _reached(tv, chain: tuple, memory: set[int]) -> list[tuple[Any, tuple]]:
    """(tensor, chain) pairs read backward from ``tv`` at ``chain`` within a kernel (as
    ``accesses.reached``, stopping at whatever the kernel does not compute in place)."""
    out: list[tuple[Any, tuple]] = []
    stack = [(tv, chain)]
    seen: set[tuple] = set()
    while stack:
        t, c = stack.pop()
        key = (id(t), tuple(id(e) for e in c))
        if key in seen:
            continue
        seen.add(key)
        out.append((t, c))
        e = t.definition
        if id(t) in memory or e is None:
            continue
        if e.op.kind is OpKind.SHAPE:
            stack += [(i, c) for i in index_operands(e)] + [(e.inputs[0], (*c, e))]
            stack += [
                (e.inputs[k], c) for k in e.op.same_coordinate_inputs if _is_tensor(e.inputs[k])
            ]
        elif e.op.kind is OpKind.POINTWISE:
            stack += [(i, c) for i in e.inputs if _is_tensor(i)]
    return out


def _is_tensor(v) -> bool:
    return isinstance(v, TensorView)
