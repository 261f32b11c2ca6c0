"""Triton expressions for the addresses of accesses that are not affine (generic mode).

``generic_index(spec, params)`` walks the chain of every access that the params mark
not affine (``analysis.index_walk``) with ``TritonIndex``, a string algebra:

* the leaves are the iteration coordinates' indices ``dim0, dim1, ...`` (a literal 0
  for a coordinate of extent 1: it is in no group);
* a static extent is a literal, a symbolic one a kernel argument ``ext<j>`` (numbered
  in the order the walk first needs it);
* every compound expression gets a temporary ``gi<n>``, shared by equal expressions,
  so a chain of reshapes stays linear in size;
* a runtime scalar of an index map (a select's index) is its kernel argument ``c<i>``;
* a masked map (pad) gives conditions: ``valid[a]`` masks access ``a``'s load,
  ``predicates[chain_key]`` selects between a pad's input and its fill.

The address of access ``a`` is ``sum(index_i * ms<a>_<i>)`` over its memory tensor's
dims, ``ms<a>_<i>`` being that tensor's real strides, passed as arguments. The walk is
a pure function of the spec and the params, so the runtime calls it again to supply
the argument values in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.index_walk import chain_key, walk
from ..schedulers.problem import is_affine
from .indexing import offset_expr


class TritonIndex:
    """The index algebra over Triton expression strings, folding 0, 1 and literals."""

    zero = "0"
    one = "1"

    def __init__(self, scalar_names: dict[int, str] | None = None):
        self.scalar_names = scalar_names or {}
        self.lines: list[str] = []
        self.extent_uids: list[int] = []
        self._memo: dict[str, str] = {}

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
        return self._bind(f"({a} >= 0) & ({a} < {n})")

    def extent(self, tv, dim: int) -> str:
        d = tv.shape_domain[dim]
        if d.extent is not None:
            return str(d.extent)
        if d.uid not in self.extent_uids:
            self.extent_uids.append(d.uid)
        return f"ext{self.extent_uids.index(d.uid)}"


@dataclass(frozen=True, eq=False)
class GenericIndex:
    lines: tuple[str, ...]  # temporaries, in order, over the ``dim<d>`` leaves
    offsets: dict[int, str]  # access -> its element offset
    guards: dict[int, str]  # store access -> one write along stride-0 dims
    extent_uids: tuple[int, ...]  # IterDomain uid of ``ext<j>``
    strides: tuple[tuple[int, int], ...]  # (access, memory dim) of every ``ms<a>_<i>``
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


def generic_index(spec, params) -> GenericIndex:
    """The index walk of every access that ``params`` marks not affine."""
    rank = len(spec.root.shape_domain)
    grouped = set(params.group_dims)
    root_idx = [f"dim{d}" if d in grouped else "0" for d in range(rank)]
    ix = TritonIndex({id(v): f"c{i}" for i, v in enumerate(spec.scalars)})
    offsets: dict[int, str] = {}
    valid: dict[int, str] = {}
    predicates: dict[tuple[int, ...], str] = {}
    guards: dict[int, str] = {}
    strides: list[tuple[int, int]] = []
    first_coordinate = spec.n_loads + spec.n_stores
    for a, access in enumerate(spec.accesses):
        if is_affine(params, a):
            continue
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
        if conds:
            guards[a] = " & ".join(conds)
    return GenericIndex(
        tuple(ix.lines),
        offsets,
        guards,
        tuple(ix.extent_uids),
        tuple(strides),
        valid,
        predicates,
    )


def _linear_index(indices: list[str], tv, ix: TritonIndex) -> str:
    """``tv``'s row-major linear index of per-dim ``indices`` (Horner: one per dim)."""
    lin = ix.zero
    for d, m in enumerate(indices):
        scaled = ix.mul(lin, ix.extent(tv, d)) if lin != ix.zero else ix.zero
        lin = ix.add(scaled, m)
    return lin
