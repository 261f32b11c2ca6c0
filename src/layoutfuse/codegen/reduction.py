"""Triton source for a reduction segment (``reduction_finish`` combines split partials).

The kernel reads top to bottom as ``reduction_source`` emits it: the arguments and
header, the program's indices and masks, the R loop (loads, the fused prologue, the
accumulations), the reduce, then either the split partials (and the ticket finish) or
the output stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..analysis.accesses import chain_step
from ..dtypes import is_floating
from ..ir import Expr, OpKind, TensorView
from ..ir.ops.reductions import copies_scale
from ..schedulers import reduction as rd
from ..schedulers.problem import is_affine
from ..schedulers.reduction import ReductionParams
from .generic_index import GenericIndex, generic_index
from .helpers import helpers_for
from .indexing import decompose, offset_expr, one_write_per_element
from .kernel import Kernel
from .pointwise import HEADER, kernel_header, load_all, load_line
from .reduction_common import (
    COMBINE,
    COMBINE_PRELUDE,
    acc_dtype,
    accumulator_dtype,
    emit_counted_welford_step,
    emit_online_rows,
    emit_online_step,
    epilogue_values,
    identity,
    n_results,
    prelude,
    reduce_line,
)
from .reduction_finish import emit_ticket_finish, finish_source, workspace_names
from .reduction_tile import TileShape, emit_program_indices, tile_shape, tiled_groups
from .values import ValueEmitter
from .writer import Writer, factored_args, multiply_back, storage_cast, tl_compute, typed_params

if TYPE_CHECKING:
    from ..segmenter.specs import KernelSpec

# pointwise ops that give 0 where every tensor operand is 0 (and no operand is a scalar)
ZERO_KEEPING = frozenset({"cast", "neg", "abs", "add", "sub", "mul"})


__all__ = [
    "COMBINE",
    "COMBINE_PRELUDE",
    "acc_dtype",
    "finish_source",
    "identity",
    "reduce_line",
    "reduction_source",
]


def reduction_source(spec, params: ReductionParams, name: str) -> tuple[str, list[str]]:
    """The reduction kernel's source, and its argument names (constexprs excluded)."""
    k = _ReductionEmitter(Writer(), spec, params)
    args = factored_args(k.kernel_args(), params.factors)
    k.signature(name, args)
    with k.w.indent():
        multiply_back(k.w, params.factors)
        if params.fold > 1:
            k.fold_arguments()
        k.program_indices()
        k.x_offsets()
        k.init_accumulators()
        k.r_loop()
        if params.fold > 1:
            k.fold_tail()
        results = k.reduce()
        if params.partials:
            k.store_partials(results)
        else:
            k.store_outputs(results)
    body = k.w.text()
    return HEADER + prelude() + helpers_for(body) + "\n\n" + body, args


def _carried_index(rg: tuple[int, ...], state: list[list[str]]):
    """``_r_tiles``'s index of tile ``u``: the names that carry its group indices."""
    return lambda r, u: dict(zip(rg, state[u]))


@dataclass(eq=False)
class _ReductionEmitter:
    """The state the emission steps of one reduction kernel share."""

    w: Writer
    spec: KernelSpec
    params: ReductionParams
    gen: GenericIndex | None = field(init=False)  # the generic (non-affine) index walk
    tile: TileShape = field(init=False)
    tiled: set[int] = field(init=False)  # groups indexed by a tile
    pair_of: dict[int, int] = field(init=False)  # softmax's id(max) -> index of its sum
    ptr_of: dict[int, str] = field(init=False)  # id(tensor) -> its pointer argument
    load_index: dict[tuple, int] = field(init=False)  # access key -> index of its load
    coord_index: dict[tuple, int] = field(init=False)  # access key -> its coordinate (iota)
    scalar_names: dict[int, str] = field(init=False)  # id(scalar) -> its argument
    idx: dict[int, str] = field(default_factory=dict)  # kept group -> its index
    xoff: list[str | None] = field(default_factory=list)  # access -> its kept groups' offset

    def __post_init__(self):
        spec, params = self.spec, self.params
        self.gen = generic_index(spec, params) if params.generic else None
        self.tile = tile_shape(params)
        self.tiled = tiled_groups(params)
        self.pair_of = {
            id(mx): next(j for j, r in enumerate(self.reds) if id(r) == sid)
            for sid, mx in spec.online.items()
        }
        self.ptr_of = {id(tv): f"p{i}" for i, tv in enumerate(spec.memory)}
        self.load_index = {a.key()[:2]: i for i, a in enumerate(spec.accesses[: spec.n_loads])}
        self.coord_index = {
            a.key()[:2]: i for i, a in enumerate(spec.accesses) if i >= spec.n_loads + spec.n_stores
        }
        self.scalar_names = {id(s): f"c{i}" for i, s in enumerate(spec.scalars)}

    @property
    def reds(self) -> list:
        """One reduction, or siblings of the same rows: one accumulator each."""
        return self.spec.reductions

    @property
    def online(self) -> dict:
        """Softmax's id(sum) -> max: accumulated together."""
        return self.spec.online

    @property
    def transposed(self) -> bool:
        """A [BLOCK_Y, BLOCK_X] tile of kept groups."""
        return self.params.y_group is not None

    @property
    def zero_tile(self) -> str:
        return f"tl.zeros({self.tile.shape}, tl.int32)"

    @property
    def step_r(self) -> str:
        """How far R advances per loop step (``unroll`` tiles)."""
        unroll = self.params.unroll
        return "BLOCK_R" if unroll == 1 else f"BLOCK_R * {unroll}"

    # -- the arguments and header --------------------------------------------------------

    def kernel_args(self) -> list[str]:
        """Pointers, split workspaces, group sizes, strides, the generic walk, scalars,
        then the launch's extents."""
        spec, params = self.spec, self.params
        n_groups = params.n_groups
        sizes = [f"n{k}" for k in range(n_groups)]
        strides = [
            f"s{a}_{k}"
            for a in range(len(spec.accesses))
            for k in range(n_groups)
            if is_affine(params, a)
            and not params.zero_strides[a][k]
            and not params.unit_strides[a][k]
        ]
        ptrs = [f"p{i}" for i in range(len(spec.memory))]
        scalars = [f"c{i}" for i in range(len(spec.scalars))]
        walk = self.gen.arg_names() if self.gen else []
        bases = [f"b{a}" for a in params.based]
        return (
            ptrs
            + workspace_names(spec, params)
            + sizes
            + strides
            + walk
            + bases
            + scalars
            + ["NX", "NR", "CHUNK", "NPX", "SPLIT_N"]
            + (["NREP"] if params.repeat else [])
        )

    def signature(self, name: str, args: list[str]) -> None:
        w = self.w
        for line in kernel_header(self.spec, self.params):
            w.line(line)
        w.line("@triton.jit")
        w.line(
            f"def {name}({', '.join(typed_params(args, self.spec.scalars))}, "
            f"BLOCK_X: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, "
            f"BLOCK_Y: tl.constexpr):"
        )

    # -- a fold (``ReductionParams.fold``) -------------------------------------------------

    def fold_arguments(self) -> None:
        """The kernel walks ``fold`` rows as one: the kept extent ``n0`` and the reduced
        ``n1`` are rebound to the folded ones (``G * n0``, whole folds), so are the loads'
        row strides; ``TAIL`` rows are left after the whole folds, ``n0r`` is a row."""
        g, w = self.params.fold, self.w
        w.line(f"TAIL = n1 % {g}")
        w.line("n0r = n0")
        w.line(f"n0 = n0 * {g}")
        w.line(f"n1 = n1 // {g}")
        for a in range(self.spec.n_loads):
            if not (self.params.zero_strides[a][1] or self.params.unit_strides[a][1]):
                w.line(f"s{a}_1 = s{a}_1 * {g}")

    def fold_tail(self) -> None:
        """The rows past the whole folds (fewer than ``fold``), in the last split program:
        folded row ``NR``, whose column ``c`` of ``G * n0`` holds row ``c // n0r`` of them."""
        w = self.w
        q = w.assign("q", f"{self.idx[self.params.x_groups[0]]} // n0r")
        start = "tl.cast(NR, tl.int64)" if self.params.index64 else "NR"
        r = w.assign("r", f"{start} + {self.tile.r_arange}")
        mask = w.assign("mask", f"xmask & ({r} == NR) & ({q} < TAIL) & (pid_s == SPLIT_N - 1)")
        self._step([({self.params.r_groups[0]: r}, mask, None, {})])

    # -- program indices and masks -------------------------------------------------------

    def program_indices(self) -> None:
        """``pid``, ``pid_s``, ``xmask`` and each kept group's index (``reduction_tile``)."""
        self.idx = emit_program_indices(self.w, self.params)

    def x_offsets(self) -> None:
        """Each affine access's offset from the kept groups (``xoff``), once per program."""
        params = self.params
        base = self.zero_tile if self.transposed else "x * 0"
        for a in range(len(self.spec.accesses)):
            terms = [
                (self.idx[k], 1 if params.unit_strides[a][k] else f"s{a}_{k}")
                for k in params.x_groups
                if not params.zero_strides[a][k]
            ]
            off = offset_expr(terms, base) + (f" + b{a}" if a in params.based else "")
            self.xoff.append(self.w.assign("xo", off) if is_affine(params, a) else None)

    def init_accumulators(self) -> None:
        """``acc<i>`` at the reduction's identity; a Welford's mean, m2 and count at 0."""
        for i, red in enumerate(self.reds):
            acc_t = accumulator_dtype(red)
            ct = tl_compute(acc_t)
            if n_results(red) > 1:
                for part in ("mean", "m2", "n"):
                    self.w.line(f"acc{i}_{part} = tl.zeros({self.tile.shape}, {ct})")
            else:
                self.w.line(
                    f"acc{i} = tl.full({self.tile.shape}, {identity(red.op.name, acc_t)}, {ct})"
                )

    # -- the R loop: loads, prologue, accumulations --------------------------------------

    def r_loop(self) -> None:
        """The program's chunk of R, ``unroll`` tiles a step; a flat R index is decomposed
        into its groups per tile (``_nested_r_loop`` avoids that), or carried from step to
        step (``carry_index``)."""
        if self.params.r_nest:
            self._nested_r_loop()
            return
        if self.params.align_rows and not any(n_results(r) > 1 for r in self.reds):
            self._aligned_r_loop()  # a Welford counts per tile: the plain loop
            return
        w, rg = self.w, self.params.r_groups

        def r_index(r: str, u: int) -> dict[int, str]:
            return dict(zip(rg, decompose(w, r, [f"n{k}" for k in rg], "rg"))) if rg else {}

        w.line("r_lo = pid_s * CHUNK")
        loops = [("0", "CHUNK", "NR")]
        if self.params.full_steps:  # whole steps unmasked along R: vectorized loads
            step = f"({self.step_r})"
            w.line(f"r_full = tl.minimum(CHUNK, NR - r_lo) // {step} * {step}")
            loops = [("0", "r_full", None), ("r_full", "CHUNK", "NR")]
        for lo, hi, bound in loops:
            carried = self._carried_indices(lo) if self.params.carry_index else None
            w.line(f"for r0 in range({lo}, {hi}, {self.step_r}):")
            with w.indent():
                index = r_index if not carried else _carried_index(rg, carried[0])
                self._step(self._r_tiles("r_lo + r0", bound, index, counted=True))
                if carried:
                    self._carry(*carried)
        for i, red in enumerate(self.reds):
            if n_results(red) > 1:
                self._lane_counts(i)

    def _carried_indices(self, r0: str) -> tuple[list[list[str]], list[str]]:
        """Before a loop that starts at ``r0``: each tile's group indices, in names the
        loop carries (``cr<tile>_<group>``), and one step (``unroll`` tiles) decomposed
        over the groups: what a step adds to each index before it wraps."""
        w, rg = self.w, self.params.r_groups
        sizes = [f"n{k}" for k in rg]
        state = []
        for u in range(self.params.unroll):
            r = w.assign("r", f"r_lo + {r0} + {u} * BLOCK_R + {self.tile.r_arange}")
            names = [f"cr{u}_{j}" for j in range(len(rg))]
            for name, part in zip(names, decompose(w, r, sizes, "rg")):
                w.line(f"{name} = {part}")
            state.append(names)
        return state, decompose(w, f"({self.step_r})", sizes, "rd")

    def _carry(self, state: list[list[str]], step: list[str]) -> None:
        """Advance each tile's carried indices by one step: every group but the last adds
        its part of the step and the carry from the group below, and wraps once at its
        extent (both terms are under it); the last group adds the rest."""
        w, rg = self.w, self.params.r_groups
        for names in state:
            carry = None
            for j, (name, d) in enumerate(zip(names, step)):
                total = f"{name} + {d}" + (f" + {carry}.to({name}.dtype)" if carry else "")
                if j == len(names) - 1:
                    w.line(f"{name} = {total}")
                    continue
                t = w.assign("ct", total)
                carry = w.assign("cy", f"{t} >= n{rg[j]}")
                w.line(f"{name} = tl.where({carry}, {t} - n{rg[j]}, {t})")

    def _aligned_r_loop(self) -> None:
        """``align_rows`` = V: each row's chunk walks its whole V-element vectors from its
        first boundary ``ob`` (the same for every row load): ``NV`` elements, a multiple of
        V, at offsets ``ob + j`` masked ``j < NV``, which Triton proves aligned, contiguous
        and masked a vector at a time (16-byte loads). One masked tile then takes the rest
        of each row: its ``head`` before ``ob`` and its tail after ``ob + NV``, fewer than
        V elements each. (Loaded before the loop instead, the rest tile's registers held
        through it cost more than its latency: rows of 3715 bf16 0.95x, H100 02596c8.)"""
        w, params = self.w, self.params
        rg, v = params.r_groups[0], params.align_rows
        rows = [a for a in range(self.spec.n_loads) if not params.zero_strides[a][rg]]
        w.line("r_lo = pid_s * CHUNK")
        w.line("L = tl.minimum(CHUNK, NR - r_lo)")
        xs = w.assign("xs", f"{self.xoff[rows[0]]} + r_lo")
        ob = w.assign("ob", f"({xs} + {v - 1}) // {v} * {v}")
        # a chunk too short for a whole vector past its boundary (a split's last) is all rest
        w.line(f"NV = tl.maximum(({xs} + L) // {v} * {v} - {ob}, 0)")
        w.line(f"head = tl.minimum({ob} - {xs}, L)")
        r_arange = self.tile.r_arange
        w.line(f"for r0 in range(0, L, {self.step_r}):")
        with w.indent():
            tiles = []
            for u in range(params.unroll):
                j = w.assign("j", f"r0 + {u} * BLOCK_R + {r_arange}" if u else f"r0 + {r_arange}")
                r = w.assign("r", f"r_lo + head + {j}")
                mask = w.assign("mask", f"xmask & ({j} < NV)")
                tiles.append(({rg: r}, mask, None, {a: f"{ob} + {j}" for a in rows}))
            self._step(tiles)
        t = w.assign("t", r_arange)
        r = w.assign("r", f"r_lo + tl.where({t} < head, {t}, {t} + NV)")
        mask = w.assign("mask", f"xmask & ({t} < L - NV)")
        self._step([({rg: r}, mask, None, {})])

    def _nested_r_loop(self) -> None:
        """The stride-1 reduced group is tiled; the other reduced groups are a scalar loop
        (split across programs), so no element pays a div/mod."""
        w, rg = self.w, self.params.r_groups
        g0 = rg[0]
        w.line("ro_lo = pid_s * CHUNK")
        w.line("ro_hi = tl.minimum(ro_lo + CHUNK, NR)")
        w.line("for ro in range(ro_lo, ro_hi):")
        with w.indent():
            outer = dict(zip(rg[1:], decompose(w, "ro", [f"n{k}" for k in rg[1:]], "ro_g")))
            w.line(f"for r0 in range(0, n{g0}, {self.step_r}):")
            with w.indent():
                # 64-bit indexing: another access's stride along g0 times the index can pass
                # 2**31 (``ro`` is 64-bit already, from ``pid_s``)
                start = w.assign("r0w", "tl.cast(r0, tl.int64)") if self.params.index64 else "r0"
                self._step(self._r_tiles(start, f"n{g0}", lambda r, u: {g0: r, **outer}))

    def _r_tiles(self, r0: str, bound: str | None, r_index, counted: bool = False) -> list[tuple]:
        """The ``unroll`` R tiles of the step at ``r0``: (index per group, mask, count)
        each. ``counted``: ``r0`` starts at 0 and R is masked only at its end, so a lane
        masked once stays masked and every unmasked lane's count after tile ``u`` is
        ``r0 // BLOCK_R + u + 1``. ``bound`` None: the step lies inside R (no R mask)."""
        w, r_arange = self.w, self.tile.r_arange
        parts = []
        for u in range(self.params.unroll):
            r = w.assign("r", f"{r0} + {u} * BLOCK_R + {r_arange}" if u else f"{r0} + {r_arange}")
            count = f"(r0 // BLOCK_R + {u + 1})" if counted else None
            mask = (
                f"tl.broadcast_to(xmask, {self.tile.shape})"
                if bound is None
                else f"xmask & ({r} < {bound})"
            )
            parts.append((r_index(r, u), w.assign("mask", mask), count, {}))
        return parts

    def _step(self, tiles_of_step) -> None:
        """The loop step's R tiles, ``(r index per group, mask, count, offsets given per
        access)`` each: every load
        first (all in flight together), then the accumulations, one accumulator per
        reduction."""
        loaded = [
            (self._load_values(ridx, mask, fixed), mask, count)
            for ridx, mask, count, fixed in tiles_of_step
        ]
        for vals, mask, count in loaded:
            for i, val in enumerate(vals):
                self._accumulate(i, val, mask, count)

    def _load_values(
        self, ridx: dict[int, str], mask: str, fixed: dict[int, str]
    ) -> list[str | None]:
        """Loads at one R tile and the fused prologue, and the loop stores (outputs of the
        tile's coordinates, ``KernelSpec.loop_stores``); returns the values to reduce (None
        for an online sum, whose terms come with its max). ``fixed``: offsets given for
        some accesses (the aligned loop's row loads)."""
        offsets = self._tile_offsets(ridx, fixed)
        ve = self._value_emitter(offsets, mask)
        if self.gen:
            self.gen.emit(
                self.w,
                self.gen.dim_lines(self.params, {**self.idx, **ridx}),
                offsets,
                ve.value,
                self.zero_tile,
                self.params.index64,
                lanes=mask,
            )
        load_all(ve, self.spec)
        values = [
            None if id(red) in self.online else ve.value(red.inputs[0], ()) for red in self.reds
        ]
        first = self.spec.n_loads + len(self.spec.results)
        for j, out in enumerate(self.spec.loop_stores):  # outputs of these coordinates
            self.w.line(
                f"tl.store({self.ptr_of[id(out)]} + {offsets[first + j]}, "
                f"{storage_cast(ve.value(out, ()), out.dtype)}, mask={mask})"
            )
        return values

    def _tile_offsets(
        self, ridx: dict[int, str], fixed: dict[int, str] | None = None
    ) -> list[str | None]:
        """Each affine access's offset over the R tile (None for the others: the generic
        walk's, written by ``GenericIndex.emit`` once the kernel's values can feed it);
        ``fixed``: the offsets given for some accesses."""
        w, params = self.w, self.params
        offsets: list[str | None] = []
        for a in range(len(self.spec.accesses)):
            if fixed and a in fixed:
                offsets.append(w.assign("off", fixed[a]))
                continue
            if not is_affine(params, a):
                offsets.append(None)
                continue
            used = [k for k in params.x_groups + params.r_groups if not params.zero_strides[a][k]]
            terms = [(self.xoff[a], 1)] + [
                (ridx[k], 1 if params.unit_strides[a][k] else f"s{a}_{k}")
                for k in params.r_groups
                if not params.zero_strides[a][k]
            ]
            if used and not self.tiled.intersection(used):  # a pointer must be a tile (mask)
                terms.append((self.zero_tile, 1))
            offsets.append(w.assign("off", offset_expr(terms)))
        return offsets

    def _value_emitter(self, offsets: list[str | None], mask: str) -> ValueEmitter:
        """Values over the R tile: loads at ``offsets`` under ``mask``, scalars, iotas."""
        w = self.w

        def load(tv, chain):
            k = (id(tv), tuple(id(e) for e in chain))
            if k not in self.load_index:
                return None
            a = self.load_index[k]
            valid = self.gen.valid.get(a) if self.gen else None  # a pad's input
            lmask = mask if valid is None else w.assign("lmask", f"{mask} & {valid}")
            return w.assign("v", load_line(self.ptr_of[id(tv)], offsets[a], lmask, tv.dtype))

        def coordinate(tv, chain):
            return offsets[self.coord_index[(id(tv), tuple(id(e) for e in chain))]]

        return ValueEmitter(
            w,
            load,
            lambda s: self.scalar_names[id(s)],
            coordinate,
            self.zero_tile,
            predicate=self.gen.predicate if self.gen else None,
        )

    def _accumulate(self, i: int, val: str, mask: str, count: str | None) -> None:
        """``count``: where every unmasked lane holds the same number of values after
        this update (a scalar expression), a Welford divides once per tile by it and
        counts each lane after the loop (``_lane_counts``); else it counts per lane."""
        red, w = self.reds[i], self.w
        op, acc_t = red.op.name, accumulator_dtype(red)
        ct = tl_compute(acc_t)
        if id(red) in self.online:
            return  # accumulated with its max (``emit_online_step``)
        if id(red) in self.pair_of:  # softmax's max, with its sum
            emit_online_step(w, f"acc{i}", f"acc{self.pair_of[id(red)]}", val, mask, ct)
        elif n_results(red) > 1 and count is not None:
            emit_counted_welford_step(w, f"acc{i}_mean", f"acc{i}_m2", val, mask, count, ct)
        elif n_results(red) > 1:
            _emit_lane_welford_step(w, i, val, mask, ct)
        elif op == "sum" and self.params.zero_selects and self._zero_where_masked(red.inputs[0]):
            w.line(f"acc{i} = {COMBINE[op]}(acc{i}, ({val}).to({ct}))")
        else:
            w.line(f"v = tl.where({mask}, ({val}).to({ct}), {identity(op, acc_t)})")
            w.line(f"acc{i} = {COMBINE[op]}(acc{i}, v)")

    def _zero_where_masked(self, tv: TensorView, chain: tuple[Expr, ...] = ()) -> bool:
        """Whether ``tv`` is 0 in every masked lane of a step: a load (masked with
        ``other=0``), or casts, negations, absolute values, sums, differences and
        products of such (a pad's fill, a scalar or any other op: not known). A sum over
        it then adds those zeros without selecting them. The select would keep each load's
        predicate live until its value is used; with more masked loads a thread than
        predicate registers (7), ptxas issued each load after the previous one's math, a
        DRAM round trip each (16 scalar loads a step of an fp32 [512, 8] tile: 16 round
        trips where one would do; sm_90 SASS, ``tests/codegen/test_reduction_loads_first.py``)."""
        if (id(tv), tuple(id(e) for e in chain)) in self.load_index:
            return True
        e = tv.definition
        if e is None:
            return False
        if e.op.kind is OpKind.SHAPE and e.op.name != "pad":
            return self._zero_where_masked(e.inputs[0], chain_step(chain, e))
        if e.op.kind is OpKind.POINTWISE and e.op.name in ZERO_KEEPING:
            return all(
                isinstance(v, TensorView) and self._zero_where_masked(v, chain) for v in e.inputs
            )
        return False

    def _lane_counts(self, i: int) -> None:
        """After a ``counted`` loop: each lane's Welford count, the tiles of the chunk in
        which its offset stayed below NR."""
        w, step_r = self.w, self.step_r
        ct = tl_compute(accumulator_dtype(self.reds[i]))
        visited = f"(CHUNK + {step_r} - 1) // ({step_r}) * {self.params.unroll}"  # the loop's
        w.line(
            f"acc{i}_n = tl.minimum(tl.maximum(NR - r_lo - {self.tile.r_arange} + BLOCK_R "
            f"- 1, 0) // BLOCK_R, {visited}) + {self.zero_tile}"
        )
        w.line(f"acc{i}_n = acc{i}_n.to({ct})")

    # -- the reduce and the stores -------------------------------------------------------

    def reduce(self) -> list[str]:
        """Each accumulator reduced along the tile's R axis; returns the result names,
        one per output (a Welford's mean, m2 and count)."""
        w, axis = self.w, self.tile.axis
        results: list[str] = []
        for i, red in enumerate(self.reds):
            if id(red) in self.online:
                results.append(f"res{i}")  # computed with its max, below
            elif id(red) in self.pair_of:
                # the tile's max and its sum; a row of -inf alone gets its NaN sum here
                # when unsplit, else where the splits combine
                j = self.pair_of[id(red)]
                emit_online_rows(
                    w,
                    f"acc{i}",
                    f"acc{j}",
                    f"res{i}",
                    f"res{j}",
                    axis,
                    nan_rows=not self.params.partials,
                )
                results.append(f"res{i}")
            elif n_results(red) > 1:
                parts = [f"{n}{i}" for n in ("mean", "m2", "cnt")]
                w.line(
                    f"{', '.join(parts)} = tl.reduce((acc{i}_mean, acc{i}_m2, acc{i}_n), "
                    f"{axis}, _welford_combine, keep_dims=True)"
                )
                results += parts
            else:
                w.line(
                    reduce_line(
                        f"res{i}", f"acc{i}", red.op.name, axis, is_floating(accumulator_dtype(red))
                    )
                )
                results.append(f"res{i}")
        if self.params.repeat:
            self._repeat(results)
        return results

    def _repeat(self, results: list[str]) -> None:
        """``NREP`` copies of each value (``ReductionParams.repeat``): each result the
        row's ``copies`` marks (a sum, a Welford's M2 and count) times NREP."""
        k = 0
        for red in self.reds:
            scale = copies_scale(red)
            assert scale is not None, red  # the problem repeats only rows that say how
            for name, times in zip(results[k : k + n_results(red)], scale):
                if times:
                    self.w.line(f"{name} = {name} * NREP")
            k += n_results(red)

    def store_partials(self, results: list[str]) -> None:
        """A split's partial results into the workspaces; with a ticket, the last program
        of each row combines them."""
        for k, r in enumerate(results):
            self.w.line(f"tl.store(ws{k} + pid_s * NX + x, {r}, mask=xmask)")
        if self.params.finish == "ticket":
            emit_ticket_finish(self.w, self.spec, self.params, lambda tv: self.ptr_of[id(tv)])

    def store_outputs(self, results: list[str]) -> None:
        """Each result into its output, then the per-row epilogue's outputs, one write per
        element where the output broadcasts a kept group."""
        spec, params, w = self.spec, self.params, self.w
        xg = params.x_groups
        spans = (
            [xg[0], params.y_group]
            if self.transposed
            else []
            if params.template == "inner"
            else list(xg[: params.x_span])
        )
        values = list(results)
        if spec.epilogue:  # the per-row epilogue, from the results
            values += epilogue_values(
                w, spec, results, lambda s: self.scalar_names[id(s)], self._result_zeros
            )
        for k, (out, value) in enumerate(spec.stored_values(values)):
            a = spec.n_loads + k
            off = self.xoff[a]
            if any(params.zero_strides[a][g] for g in spans):  # the pointer spans the tile
                off = f"{off} + {self.zero_tile if self.transposed else 'x * 0'}"
            smask = one_write_per_element(
                w, "xmask", [self.idx[g] for g in xg if params.zero_strides[a][g]]
            )
            w.line(
                f"tl.store({self.ptr_of[id(out)]} + {off}, "
                f"{storage_cast(value, out.dtype)}, mask={smask})"
            )

    @property
    def _result_zeros(self) -> str:
        """Zeros of a result's shape (the tile with its R axis reduced to 1)."""
        if self.params.template == "inner":
            return "tl.zeros([BLOCK_X, 1], tl.int32)"
        if self.transposed:
            return "tl.zeros([BLOCK_Y, 1, BLOCK_X], tl.int32)"
        return "tl.zeros([1, BLOCK_X], tl.int32)"


def _emit_lane_welford_step(w: Writer, i: int, val: str, mask: str, ct: str) -> None:
    """Welford's update of accumulator ``i`` by ``val``, each lane counting its own values."""
    mean, m2, n = (f"acc{i}_{part}" for part in ("mean", "m2", "n"))
    w.line(f"v = ({val}).to({ct})")
    w.line(f"n_new = {n} + tl.where({mask}, 1.0, 0.0)")
    w.line(f"delta = v - {mean}")
    w.line(f"mean_new = {mean} + tl.where({mask}, delta / tl.maximum(n_new, 1.0), 0.0)")
    w.line(f"{m2} = {m2} + tl.where({mask}, delta * (v - mean_new), 0.0)")
    w.line(f"{mean} = mean_new")
    w.line(f"{n} = n_new")


def emit(spec, params: ReductionParams) -> tuple[Kernel, ...]:
    """The reduction kernel of ``spec`` under ``params``, and its finishing kernel where a
    split's partials are combined by a second launch."""
    name = "reduction_kernel"
    src, args = reduction_source(spec, params, name)
    main = Kernel(
        name,
        src,
        tuple(args),
        (
            ("BLOCK_X", params.block_x),
            ("BLOCK_R", params.block_r),
            ("BLOCK_S", rd.combine_block(params, params.block_x)),
            ("BLOCK_Y", params.block_y),
        ),
        params.num_warps,
        params,
    )
    if not params.partials or params.finish != "kernel":
        return (main,)
    block_x, block_s = rd.finish_tile(params)
    fsrc, fargs = finish_source(spec, params, "finish_kernel")
    return main, Kernel(
        "finish_kernel",
        fsrc,
        tuple(fargs),
        (("BLOCK_X", block_x), ("BLOCK_S", block_s)),
        params.num_warps,
        params,
    )
