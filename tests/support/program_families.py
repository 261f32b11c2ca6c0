"""Drawing the generated programs' steps past pointwise math, reductions and views.

``FamilyDraws`` is a part of ``support.program_draws.Drawing``: one method per kind of
``program_draws.KINDS`` that this module adds, each drawing one step (or, for
``normalization`` and a random op's dropout, several) on the current value ``x``:

* ``movement``: slice (negative and clamped bounds, steps 1-3), pad (crops too; the
  default fill, a constant or a symbolic scalar), cat of 2-3 operands, select (an int or
  a symbolic index);
* ``indexing``: index_select, gather, take_along_axis (negative indices too) and
  embedding_fwd, their index tensors new inputs of in-range Int32/Int64 values in random
  layouts, or an earlier value that holds indices (argsort's);
* ``random``: uniform and normal (of the value's shape or a new one), rand_like and
  randn_like, with ``rng_seed``/``rng_offset`` constants or scalar inputs; half the
  time a dropout follows (``lt`` of the numbers, ``where``);
* ``scan``: cumsum, argsort (descending, stable or not) and topk (``k`` an int or a
  scalar input, sorted or not);
* ``library``: matmul (1-D operands, batch dims that broadcast) and linear (a 1-D or 2-D
  weight, a bias), on the value and a new input or an earlier value;
* ``normalization``: softmax, log_softmax, layer norm (var_mean, affine or not) and RMS
  norm over random dims, as the pointwise and reduction steps they are made of.

``Program.tags`` records what the coverage check asks for beyond op names (a slice
step, a pad value, a cat of three, each pattern).
"""

from __future__ import annotations

import torch

from layoutfuse.dtypes import from_torch
from support.program_steps import Step
from support.programs import BOOL, FLOATS, I32, I64, Const, Unusable, Value

PATTERNS = ("softmax", "log_softmax", "layer_norm", "rms_norm")
EPSILONS = (1e-5, 1.0)
MAX_EXTENT = 7


class FamilyDraws:
    """Methods of ``Drawing`` (``rng``, ``p``, ``gen``, ``pick``, ``chance``, ``perm``,
    ``subset``, ``new_input``, ``scalar_operand``, ``dims`` come from there)."""

    # --- data movement ---------------------------------------------------------------------
    def movement(self, x: int, v: Value) -> Step:
        if not v.shape:
            raise Unusable("movement of a 0-dim value")
        op = self.pick(["slice", "slice", "pad", "cat", "select"])
        return getattr(self, f"_draw_{op}")(x, v)

    def _draw_slice(self, x: int, v: Value) -> Step:
        starts, stops, steps = [], [], []
        for n in v.shape:
            if self.chance(0.4):
                s, e, k = 0, n, 1
            else:
                s = self.rng.randint(-n, n - 1)
                e = self.pick([n, n + 2, -1, self.rng.randint(1, n)])
                k = self.pick([1, 1, 2, 3])
            starts.append(s)
            stops.append(e)
            steps.append(k)
        kept = [len(range(n)[s:e:k]) for n, s, e, k in zip(v.shape, starts, stops, steps)]
        moved = [
            n > 1 and (range(n)[s:e:k] != range(n))
            for n, s, e, k in zip(v.shape, starts, stops, steps)
        ]
        if not any(moved) or not all(kept):
            raise Unusable("slice: nothing cut, or an empty result")
        if any(k > 1 for k in steps):
            self.p.tags.add("slice_step")
        strides = None if all(k == 1 for k in steps) and self.chance(0.5) else steps
        attrs = (("start_indices", starts), ("end_indices", stops), ("strides", strides))
        return Step("slice", (x,), attrs)

    def _draw_pad(self, x: int, v: Value) -> Step:
        if v.dtype is BOOL:
            raise Unusable("pad of Bool")
        widths: list[int] = []
        for n in reversed(v.shape[-self.rng.randint(1, len(v.shape)) :]):
            lo, hi = self.rng.randint(-1, 3), self.rng.randint(-1, 3)
            if n + lo + hi < 1 or (lo < 0 and n + lo < 1):
                lo, hi = 0, 1
            widths += [lo, hi]
        if all(w <= 0 for w in widths):
            widths[-1] = 1
        fill = self.pick([None, "const", "scalar"])
        if fill is None:
            return Step("pad", (x,), (("pad_widths", widths),))
        self.p.tags.add("pad_value")
        value = self.pick((0.5, -1.5, 2.0) if v.dtype.is_floating_point else (2, -3))
        operand = Const(value) if fill == "const" else self.p.add_scalar(value)
        return Step("pad", (x, operand), (("pad_widths", widths),))

    def _draw_cat(self, x: int, v: Value) -> Step:
        dim = self.rng.randrange(len(v.shape))
        count = self.pick([2, 2, 3])
        if count == 3:
            self.p.tags.add("cat3")
        parts = [x]
        for _ in range(count - 1):
            fits = [
                k
                for k, w in self.p.values.items()
                if w.dtype == v.dtype
                and not w.opaque
                and len(w.shape) == len(v.shape)
                and all(a == b for d, (a, b) in enumerate(zip(w.shape, v.shape)) if d != dim)
            ]
            if fits and self.chance(0.4):
                parts.append(self.pick(fits))
                continue
            shape = list(v.shape)
            shape[dim] = self.rng.randint(1, 4)
            parts.append(self.new_input(shape, v.dtype))
        if self.chance(0.25):
            parts.reverse()
        return Step("cat", tuple(parts), (("dim", dim - len(v.shape) * self.chance(0.2)),))

    def _draw_select(self, x: int, v: Value) -> Step:
        dim = self.rng.randrange(len(v.shape))
        index = self.rng.randint(-v.shape[dim], v.shape[dim] - 1)
        if self.chance(0.3):
            return Step("select", (x, self.p.add_scalar(index)), (("dim", dim),))
        return Step("select", (x,), (("index", index), ("dim", dim)))

    # --- indexed reads ---------------------------------------------------------------------
    def indexing(self, x: int, v: Value) -> Step:
        op = self.pick(["index_select", "gather", "take_along_axis", "embedding_fwd"])
        if op == "embedding_fwd":
            return self._draw_embedding(x, v)
        if not v.shape:
            raise Unusable(f"{op} of a 0-dim value")
        dim = self.rng.randrange(len(v.shape))
        n = v.shape[dim]
        if op == "index_select":
            index = self.index_input([self.rng.randint(1, 5)], n)
        elif op == "gather":
            shape = [
                self.rng.randint(1, 5) if d == dim else self.rng.randint(1, s)
                for d, s in enumerate(v.shape)
            ]
            index = self.earlier_index(shape, n) or self.index_input(shape, n)
        else:
            shape = [
                self.rng.randint(1, 5)
                if d == dim
                else self.pick([s, 1] if not (v.bcast[d] and s == 1) else [1, 3])
                for d, s in enumerate(v.shape)
            ]
            same = all(a == b for d, (a, b) in enumerate(zip(shape, v.shape)) if d != dim)
            earlier = self.earlier_index(shape, n) if same else None  # no broadcast of those
            index = earlier or self.index_input(shape, n, negative=True)
        signed = dim - len(v.shape) if self.chance(0.2) else dim
        return Step(op, (x, index), (("dim", signed),))

    def _draw_embedding(self, x: int, v: Value) -> Step:
        if len(v.shape) == 2 and v.dtype.is_floating_point and not v.opaque:
            weight = x
        else:
            shape = [self.rng.randint(1, 6), self.rng.randint(1, 5)]
            weight = self.new_input(shape, self.pick(FLOATS))
        rows = self.p.values[weight].shape[0]
        shape = [self.rng.randint(1, 4) for _ in range(self.rng.randint(1, 2))]
        return Step("embedding_fwd", (self.index_input(shape, rows), weight))

    def index_input(self, shape, n: int, negative: bool = False) -> int:
        """A new input of ``shape`` holding indices into an extent ``n``, in a random layout."""
        lo = -n if negative else 0
        values = torch.randint(lo, n, tuple(shape), generator=self.gen).to(self.pick([I32, I64]))
        return self.new_input(shape, values.dtype, values=values)

    def earlier_index(self, shape, n: int) -> int | None:
        """Now and then an earlier value of ``shape`` that holds indices into ``n`` (an
        argsort's): indices computed in the fusion."""
        fits = [
            k
            for k, w in self.p.values.items()
            if list(w.shape) == list(shape)
            and w.dtype in (I32, I64)
            and not w.opaque
            and w.ref.numel()
            and bool(((w.ref >= 0) & (w.ref < n)).all())
        ]
        return self.pick(fits) if fits and self.chance(0.5) else None

    # --- random numbers --------------------------------------------------------------------
    def random(self, x: int, v: Value) -> Step | None:
        seeds = (self.seed_operand(2**31), self.seed_operand(64))
        like = v.dtype.is_floating_point and self.chance(0.6)
        if like:
            op = self.pick(["rand_like", "randn_like"])
            step = Step(op, (x, *seeds))
        else:
            op = self.pick(["uniform", "normal"])
            shape = list(v.shape) if self.chance(0.6) else self.shape()
            a, b = self.pick([(0.0, 1.0), (-1.5, 2.0), (0.25, 0.5)])
            dtype = from_torch(self.pick(FLOATS))
            params = (self.scalar_operand(a), self.scalar_operand(b))
            step = Step(op, (*params, *seeds), (("shape", shape), ("dtype", dtype)))
        if op not in ("rand_like", "uniform") or self.chance(0.5):
            return step
        # dropout: keep x where the numbers are below 1/2
        (r,) = self.p.apply(step)
        (keep,) = self.p.apply(Step("lt", (r, Const(0.5))))
        target = x if self.p.values[r].shape == v.shape else r
        zero = Const(0.0 if self.p.values[target].dtype.is_floating_point else 0)
        self.p.apply(Step("where", (keep, target, zero)))
        self.p.tags.add("dropout")
        return None

    def seed_operand(self, top: int):
        return self.scalar_operand(self.rng.randrange(top))

    # --- scans and sorts -------------------------------------------------------------------
    def scan(self, x: int, v: Value) -> Step:
        if not v.shape:
            raise Unusable("a scan of a 0-dim value")
        dim = self.rng.randrange(len(v.shape))
        signed = dim - len(v.shape) if self.chance(0.2) else dim
        op = self.pick(["cumsum", "argsort", "topk"])
        if op == "cumsum":
            return Step("cumsum", (x,), (("dim", signed),))
        if op == "argsort":
            flags = (("descending", self.chance(0.5)), ("stable", self.chance(0.7)))
            return Step("argsort", (x,), (("dim", signed), *flags))
        k = self.rng.randint(1, v.shape[dim]) if v.shape[dim] else 0
        flags = (("dim", signed), ("largest", self.chance(0.6)), ("sorted", self.chance(0.7)))
        if self.chance(0.3):
            return Step("topk", (x, self.p.add_scalar(k)), flags)
        return Step("topk", (x,), (("k", k), *flags))

    # --- library ops -----------------------------------------------------------------------
    def library(self, x: int, v: Value) -> Step:
        if not v.dtype.is_floating_point or not v.shape or v.opaque:
            raise Unusable("a library op takes float tensors of rank >= 1")
        k = v.shape[-1]
        if self.chance(0.65):
            other = self.matmul_partner(v)
            return Step("matmul", (other, x) if self.swap_matmul(v, other) else (x, other))
        n = self.rng.randint(1, 5)
        w = self.new_input([n, k] if self.chance(0.8) else [k], v.dtype)
        if len(self.p.values[w].shape) == 2 and self.chance(0.5):
            return Step("linear", (x, w, self.new_input([n], v.dtype)))
        return Step("linear", (x, w))

    def matmul_partner(self, v: Value) -> int:
        """b for ``matmul(v, b)``: [K] or [..., K, N], batch dims that broadcast."""
        k = v.shape[-1]
        if len(v.shape) == 1 or self.chance(0.2):
            return self.new_input([k, self.rng.randint(1, 5)] if self.chance(0.5) else [k], v.dtype)
        batch = [
            self.pick([1, 3]) if v.bcast[d] and s == 1 else self.pick([s, 1])
            for d, s in enumerate(v.shape[:-2])
        ]
        if batch and self.chance(0.3):
            batch = batch[1:]
        return self.new_input([*batch, k, self.rng.randint(1, 5)], v.dtype)

    def swap_matmul(self, v: Value, other: int) -> bool:
        """``matmul(b, v)`` instead, where b is 1-D: [K] @ v needs v of rank >= 2... so
        only a 1-D ``v`` swaps with a 1-D b (a dot product)."""
        return len(v.shape) == 1 and len(self.p.values[other].shape) == 1 and self.chance(0.5)

    # --- normalization patterns ------------------------------------------------------------
    def normalization(self, x: int, v: Value) -> None:
        if not v.shape or v.opaque:
            raise Unusable("a normalization of a 0-dim value")
        if not v.dtype.is_floating_point or not v.exact:
            x = self.new_input(list(v.shape), self.pick(FLOATS))
            v = self.p.values[x]
        pattern = self.pick(PATTERNS)
        dims = self.subset(range(len(v.shape)))
        getattr(self, f"_pattern_{pattern}")(x, v, dims)
        self.p.tags.add(pattern)

    def _reduce(self, op: str, x: int, dims) -> int:
        return self.p.apply(Step(op, (x,), (("dims", dims), ("keepdim", True))))[0]

    def _apply(self, op: str, *args) -> int:
        return self.p.apply(Step(op, args))[0]

    def _pattern_softmax(self, x: int, v: Value, dims) -> None:
        shifted = self._apply("sub", x, self._reduce("max", x, dims))
        e = self._apply("exp", shifted)
        self._apply("div", e, self._reduce("sum", e, dims))

    def _pattern_log_softmax(self, x: int, v: Value, dims) -> None:
        shifted = self._apply("sub", x, self._reduce("max", x, dims))
        total = self._reduce("sum", self._apply("exp", shifted), dims)
        self._apply("sub", shifted, self._apply("log", total))

    def _pattern_layer_norm(self, x: int, v: Value, dims) -> None:
        attrs = (("dims", dims), ("correction", 0), ("keepdim", True))
        var, mean = self.p.apply(Step("var_mean", (x,), attrs))
        rstd = self._apply("rsqrt", self._apply("add", var, Const(self.pick(EPSILONS))))
        y = self._apply("mul", self._apply("sub", x, mean), rstd)
        if self.chance(0.5):  # affine: a weight and a bias over the normalized dims
            shape = [s if d in dims else 1 for d, s in enumerate(v.shape)]
            y = self._apply("mul", y, self.new_input(shape, v.dtype))
            self._apply("add", y, self.new_input(shape, v.dtype))

    def _pattern_rms_norm(self, x: int, v: Value, dims) -> None:
        n = 1
        for d in dims:
            n *= v.shape[d]
        total = self._reduce("sum", self._apply("mul", x, x), dims)
        mean = self._apply("mul", total, Const(1.0 / n))
        rstd = self._apply("rsqrt", self._apply("add", mean, Const(self.pick(EPSILONS))))
        self._apply("mul", x, rstd)
