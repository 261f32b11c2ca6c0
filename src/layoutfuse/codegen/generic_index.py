"""Triton expressions for the addresses of accesses that are not affine (generic mode).

``generic_index(spec, params)`` walks the chain of every access that the params mark
not affine (``analysis.index_walk``) with ``TritonIndex``, a string algebra:

* the leaves are the iteration coordinates' indices ``dim0, dim1, ...`` (a literal 0
  for a coordinate of extent 1: it is in no group);
* a static extent is a literal, a symbolic one a kernel argument ``ext<j>`` (numbered
  in the order the walk first needs it);
* every compound expression gets a temporary ``gi<n>``, shared by equal expressions,
  so a chain of reshapes stays linear in size;
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
from dataclasses import dataclass
from typing import Any

from ..analysis.index_walk import memory_indices
from ..schedulers.problem import is_affine
from .indexing import offset_expr


@dataclass(frozen=True, eq=False)
class Indirect:
    """A line ``<name> = <the value of expr's index operand>`` at ``chain`` (the exprs
    between the iteration tensor and ``expr``)."""

    name: str
    expr: Any
    chain: tuple[Any, ...]


class TritonIndex:
    """The index algebra over Triton expression strings, folding 0, 1 and literals."""

    zero = "0"
    one = "1"

    def __init__(self):
        self.lines: list[str | Indirect] = []
        self.extent_uids: list[int] = []
        self._memo: dict[Any, str] = {}
        self.chain: tuple = ()

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

    def indirect(self, expr, out_idx) -> str:
        key = (id(expr), tuple(id(e) for e in self.chain))
        name = self._memo.get(key)
        if name is None:
            name = f"gv{sum(isinstance(x, Indirect) for x in self.lines)}"
            self.lines.append(Indirect(name, expr, self.chain))
            self._memo[key] = name
            n = self.extent(expr.inputs[0], expr.attrs["dim"])
            low = f"-{n}" if expr.attrs["negative"] else "0"
            # torch's device-side check (compiled where Triton compiles asserts)
            self.lines.append(
                f"tl.device_assert(({name} >= {low}) & ({name} < {n}), "
                f'"{expr.attrs["source"]}: index out of range")'
            )
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
    ) -> None:
        """Write the walk into ``w`` and each access's offset into ``offsets``: the lines in
        order, an ``Indirect`` as the kernel's ``value(index operand, chain)``; an offset
        after every line, or earlier where an indirect value needs it (an index operand read
        through another indexed read: its own walk comes first, ``accesses.reached``)."""
        for line in dim_lines:
            w.line(line)
        done = dict(self.ends)
        pending = list(self.offsets)

        def flush(upto: int) -> None:
            while pending and done[pending[0]] <= upto:
                a = pending.pop(0)
                offsets[a] = w.assign("off", f"{self.offsets[a]} + {zero_tile}")

        for k, line in enumerate(self.lines):
            if isinstance(line, Indirect):
                flush(k)
                v = value(line.expr.inputs[1], line.chain)
                w.line(f"{line.name} = {v}.to(tl.int64)" if index64 else f"{line.name} = {v}")
            else:
                w.line(line)
        flush(len(self.lines))


def generic_index(spec, params) -> GenericIndex:
    """The index walk of every access that ``params`` marks not affine."""
    rank = len(spec.root.shape_domain)
    grouped = set(params.group_dims)
    root_idx = [f"dim{d}" if d in grouped else "0" for d in range(rank)]
    ix = TritonIndex()
    offsets: dict[int, str] = {}
    guards: dict[int, str] = {}
    strides: list[tuple[int, int]] = []
    ends: list[tuple[int, int]] = []
    first_coordinate = spec.n_loads + spec.n_stores
    for a, access in enumerate(spec.accesses):
        if is_affine(params, a):
            continue
        terms: list[tuple[str, int | str]] = []
        conds: list[str] = []
        for i, m in enumerate(memory_indices(access, root_idx, ix)):
            if m == "0":
                continue
            if a >= first_coordinate:  # iota: its own linear coordinate
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
        tuple(ix.lines), offsets, guards, tuple(ix.extent_uids), tuple(strides), tuple(ends)
    )
