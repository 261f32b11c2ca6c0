"""Concrete extents of every IterDomain, propagated from the inputs through the ops.

One pass over ``fusion.exprs`` (a topological order). Each op kind has a rule
that binds its outputs' extents from its inputs' extents and from the values of
its shape arguments (constants, scalar inputs, size queries or host arithmetic
on them). Size queries and scalar arithmetic are evaluated along the way; tensor
data is never read. Disagreements that only show at run time (two symbolic dims
that meet in a pointwise op, a reshape whose element counts differ, a static
extent contradicted by the inputs) raise :class:`InputShapeError`.

A dim that an op makes at run time (a slice or pad that resizes it, a reshape, a
factory, topk's k) and that comes out of extent 1 is a broadcast dim from there on, as
nvFuser concretizes such symbolic dims (``csrc/dynamic_transform.cpp``): it may meet any
extent in a pointwise op and be expanded by ``broadcast_in_dim``, as a declared
broadcast dim may; a pointwise output whose operands are all broadcast there is one too.
Their uids are ``RunExtents.made_one``; the loads read them at index 0
(``analysis.accesses.unit_broadcasts``). A declared input dim of symbolic extent stays
an iteration dim even when it is 1. ``broadcast_in_dim`` of such a dim to a wider extent
makes an expanded broadcast (``RunExtents.made_expanded``, kept through copies): a buffer
for it has stride 0 there, as nvFuser returns an expanded output.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

from ..errors import DefinitionError, InputShapeError, UnsupportedError
from ..ir import Expr, Fusion, IterDomain, OpKind, Scalar, TensorView, Val
from ..ir.ops.library import row_of as library_row
from ..ir.ops.random import N_PARAMS
from ..ir.ops.random import NAMES as RANDOM_OPS
from ..reference import evaluate_expr

_MISSING = object()


class RunExtents(dict[int, int]):
    """A run's extents by IterDomain uid, and ``made_one``: the uids of dims made at run
    time with extent 1, which are broadcast dims from there on (the module's docstring)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.made_one: set[int] = set()
        self.made_expanded: set[int] = set()


def propagate_extents(
    fusion: Fusion, extents: dict[int, int], scalars: dict[int, Any], origins: dict[int, str]
) -> None:
    """Fill ``extents`` (by IterDomain uid) and ``scalars`` (by Val index) for every expr.

    ``extents`` and ``origins`` must already hold the inputs' dims; ``origins``
    says where an extent came from (e.g. "input 0 (T0) dim 1"), for messages.
    """
    prop = _Propagator(extents, scalars, origins)
    if isinstance(extents, RunExtents):
        prop.made_one = extents.made_one
        prop.made_expanded = extents.made_expanded
    for expr in fusion.exprs:
        if not any(isinstance(o, TensorView) for o in expr.outputs):
            prop.scalar_expr(expr)
        else:
            prop.tensor_expr(expr)


class _Propagator:
    def __init__(self, extents: dict[int, int], scalars: dict[int, Any], origins: dict[int, str]):
        self.ext = extents
        self.scalars = scalars
        self.origins = origins
        self.made_one: set[int] = set()  # uids of dims made at run time with extent 1
        self.made_expanded: set[int] = set()  # ... and such dims broadcast_in_dim widened

    def broadcast(self, d: IterDomain) -> bool:
        """Declared broadcast, or made one at run time (the module's docstring)."""
        return d.is_broadcast or d.uid in self.made_one

    def made(self, d: IterDomain) -> None:
        """``d`` was made at run time (a resize, reshape, factory or topk's k)."""
        if self.ext[d.uid] == 1 and not d.is_broadcast:
            self.made_one.add(d.uid)

    # --- values --------------------------------------------------------------------------
    def value(self, s: Scalar) -> Any:
        return s.value if s.is_constant else self.scalars.get(s.index, _MISSING)

    def shape_values(self, expr: Expr, shape_args: Iterable[Val]) -> list[int]:
        vals = []
        for s in shape_args:
            assert isinstance(s, Scalar)  # shape arguments are Scalars (ops.common.as_shape)
            v = self.value(s)
            if v is _MISSING:
                raise UnsupportedError(
                    f"{expr!r}: the shape argument {s!r} has no value known on the host"
                )
            vals.append(int(v))
        return vals

    def scalar_expr(self, expr: Expr) -> None:
        if expr.op.kind is OpKind.SCALAR and expr.op.name == "size":
            x = expr.inputs[0]
            assert isinstance(x, TensorView)
            self.scalars[expr.outputs[0].index] = self.ext[x.shape_domain[expr.attrs["dim"]].uid]
            return
        args = [self.value(v) if isinstance(v, Scalar) else _MISSING for v in expr.inputs]
        if any(a is _MISSING for a in args):
            return  # not computable on the host; only an error if a shape needs it
        for o, r in zip(expr.outputs, evaluate_expr(expr, args, torch.device("cpu"))):
            self.scalars[o.index] = r

    # --- binding ---------------------------------------------------------------------------
    def origin(self, d: IterDomain) -> str:
        return self.origins.get(d.uid, repr(d))

    def bind(self, expr: Expr, out: TensorView, d: IterDomain, value: int, origin: str) -> None:
        if value < 0:
            raise InputShapeError(
                f"{expr!r}: negative extent {value} for T{out.index} (from {origin})"
            )
        if d.extent is not None and d.extent != value:
            dim = next(i for i, x in enumerate(out.logical) if x is d)
            raise InputShapeError(
                f"{expr!r}: T{out.index} dim {dim} has the static extent {d.extent} in the "
                f"fusion, but the inputs give {value} (from {origin})"
            )
        self.ext[d.uid] = value
        self.origins.setdefault(d.uid, origin)

    def copy(
        self, expr: Expr, out: TensorView, pairs: Iterable[tuple[IterDomain, IterDomain]]
    ) -> None:
        for src, dst in pairs:
            self.bind(expr, out, dst, self.ext[src.uid], self.origin(src))
            if src.uid in self.made_one and not dst.is_broadcast:
                self.made_one.add(dst.uid)
            if src.uid in self.made_expanded and not dst.is_broadcast:
                self.made_expanded.add(dst.uid)

    # --- tensor exprs ------------------------------------------------------------------------
    def tensor_expr(self, expr: Expr) -> None:
        kind, name = expr.op.kind, expr.op.name
        out = expr.outputs[0]
        assert isinstance(out, TensorView)  # an op with a tensor output has only tensor outputs
        if kind is OpKind.POINTWISE:
            self.pointwise(expr)
        elif kind in (OpKind.REDUCTION, OpKind.WELFORD):
            x = expr.inputs[0]
            assert isinstance(x, TensorView)
            for o in expr.outputs:
                assert isinstance(o, TensorView)
                self.copy(expr, o, zip(x.shape_domain, o.logical))
        elif kind is OpKind.SCAN:
            self.scan(expr)
        elif name == "set":
            x = expr.inputs[0]
            assert isinstance(x, TensorView)
            self.copy(expr, out, zip(x.shape_domain, out.shape_domain))
        elif name == "permute":
            x = expr.inputs[0]
            assert isinstance(x, TensorView)
            src = x.shape_domain
            self.copy(
                expr, out, ((src[d], out.shape_domain[i]) for i, d in enumerate(expr.attrs["dims"]))
            )
        elif name == "squeeze":
            x, dims = expr.inputs[0], expr.attrs["dims"]
            assert isinstance(x, TensorView)
            for i in dims:  # a symbolic dim (``ir.domain``): 1 at run time
                d = x.shape_domain[i]
                if not d.is_broadcast and self.ext[d.uid] != 1:
                    raise InputShapeError(
                        f"{expr!r}: squeezed dim {i} of T{x.index} has extent "
                        f"{self.ext[d.uid]} at run time ({self.origin(d)}), expected 1"
                    )
            kept = [d for i, d in enumerate(x.shape_domain) if i not in dims]
            self.copy(expr, out, zip(kept, out.shape_domain))
        elif name == "broadcast_in_dim":
            self.broadcast_in_dim(expr)
        elif name == "reshape":
            self.reshape(expr)
        elif name == "gather_dim":
            self.gather_dim(expr)
        elif name == "scatter_dim":
            self.scatter_dim(expr)
        elif name in ("slice", "select", "pad"):
            self.movement(expr)
        elif name == "full":
            for d, v in zip(out.shape_domain, self.shape_values(expr, expr.inputs[1:])):
                self.bind(expr, out, d, v, f"the shape of {expr!r}")
                self.made(d)
        elif name in RANDOM_OPS:  # (a, b, seed, offset, *shape)
            for d, v in zip(out.shape_domain, self.shape_values(expr, expr.inputs[N_PARAMS:])):
                self.bind(expr, out, d, v, f"the shape of {expr!r}")
                self.made(d)
        elif kind is OpKind.LIBRARY:
            self.library(expr)
        elif name == "iota":
            (n,) = self.shape_values(expr, expr.inputs[:1])
            self.bind(expr, out, out.shape_domain[0], n, f"the length of {expr!r}")
            self.made(out.shape_domain[0])
        else:
            self.static_only(expr)

    def scan(self, expr: Expr) -> None:
        """A per-row op: the input's extents, but ``k`` along a topk's dim."""
        x = expr.inputs[0]
        assert isinstance(x, TensorView)
        dim = expr.attrs["dim"]
        n = along = self.ext[x.shape_domain[dim].uid]
        if expr.op.name == "topk":
            (along,) = self.shape_values(expr, expr.inputs[1:2])
            if not 0 <= along <= n:
                raise InputShapeError(f"{expr!r}: k {along} is out of range for an extent of {n}")
        for o in expr.outputs:
            assert isinstance(o, TensorView)
            for i, (src, dst) in enumerate(zip(x.shape_domain, o.shape_domain)):
                if i == dim and expr.op.name == "topk":
                    self.bind(expr, o, dst, along, self.origin(src))
                    self.made(dst)
                else:
                    self.copy(expr, o, [(src, dst)])

    def static_only(self, expr: Expr) -> None:
        """An op without a rule here: fine as long as its outputs' extents are static."""
        for o in expr.outputs:
            assert isinstance(o, TensorView)
            for d in o.logical:
                if d.extent is None:
                    raise UnsupportedError(
                        f"{expr!r}: no extent rule for op {expr.op.name!r} "
                        f"and T{o.index} has symbolic extents"
                    )
                self.bind(expr, o, d, d.extent, f"the static extents of {expr!r}")

    def library(self, expr: Expr) -> None:
        """A library op's outputs from its row's shape rule on the operands' extents."""
        tensors = [v for v in expr.inputs if isinstance(v, TensorView)]
        shapes = [tuple(self.ext[d.uid] for d in t.shape_domain) for t in tensors]
        try:
            out_shapes = library_row(expr).output_shapes(expr, shapes)
        except DefinitionError as e:
            raise InputShapeError(f"{expr!r}: {e}") from None
        for o, shape in zip(expr.outputs, out_shapes):
            assert isinstance(o, TensorView)
            for d, v in zip(o.shape_domain, shape):
                assert v is not None  # every operand extent is known at run time
                self.bind(expr, o, d, v, f"the shape rule of {expr.op.name}")

    def pointwise(self, expr: Expr) -> None:
        out = expr.outputs[0]
        assert isinstance(out, TensorView)
        ins = [v for v in expr.inputs if isinstance(v, TensorView)]
        for i, d in enumerate(out.shape_domain):
            ids = [t.shape_domain[i] for t in ins]
            concrete = [x for x in ids if not self.broadcast(x)]
            expanded = [x for x in ids if self.broadcast(x) and self.ext[x.uid] != 1]
            group = concrete + expanded
            if not group:
                self.bind(expr, out, d, 1, self.origin(ids[0]))
                if not d.is_broadcast and any(x.uid in self.made_one for x in ids):
                    self.made_one.add(d.uid)
                continue
            first = group[0]
            for x in group[1:]:
                if self.ext[x.uid] != self.ext[first.uid]:
                    hint = ""
                    if 1 in (self.ext[x.uid], self.ext[first.uid]):
                        hint = (
                            " (a dim declared with a symbolic or non-1 extent is not a "
                            "broadcast dim even when it is 1 at run time)"
                        )
                    raise InputShapeError(
                        f"{expr!r}: operands disagree on the extent of dim {i}: "
                        f"{self.origin(first)} is {self.ext[first.uid]}, "
                        f"{self.origin(x)} is {self.ext[x.uid]}{hint}"
                    )
            self.bind(expr, out, d, self.ext[first.uid], self.origin(first))

    def broadcast_in_dim(self, expr: Expr) -> None:
        x, out = expr.inputs[0], expr.outputs[0]
        assert isinstance(x, TensorView) and isinstance(out, TensorView)
        vals = self.shape_values(expr, expr.inputs[1:])
        bdims = list(expr.attrs["broadcast_dims"])
        for j, (d, v) in enumerate(zip(out.shape_domain, vals)):
            if j not in bdims:
                if v < 0:
                    raise InputShapeError(f"{expr!r}: invalid extent {v} for new dim {j}")
                self.bind(expr, out, d, v, f"the shape of {expr!r}")
                continue
            src = x.shape_domain[bdims.index(j)]
            es = self.ext[src.uid]
            if v == -1 or v == es:
                self.copy(expr, out, [(src, d)])
            elif self.broadcast(src) and es == 1 and v >= 0:
                self.bind(expr, out, d, v, f"the shape of {expr!r}")
                if src.uid in self.made_one and not d.is_broadcast and v != 1:
                    self.made_expanded.add(d.uid)
            else:
                raise InputShapeError(
                    f"{expr!r}: input dim {bdims.index(j)} ({self.origin(src)}) has extent "
                    f"{es} and cannot become {v} at output dim {j}; only broadcast dims of "
                    f"extent 1 can be expanded"
                )

    def gather_dim(self, expr: Expr) -> None:
        """An indexed read: the output has its index operand's extents; off the indexed dim,
        ``arg``'s extent equals the output's (``gather``: is at least it), or is 1 where
        ``arg`` is broadcast."""
        arg, index, out = expr.inputs[0], expr.inputs[1], expr.outputs[0]
        assert isinstance(arg, TensorView) and isinstance(index, TensorView)
        assert isinstance(out, TensorView)
        self.copy(expr, out, zip(index.shape_domain, out.shape_domain))
        source, le = expr.attrs["source"], expr.attrs["mode"] == "le"
        for k, j in enumerate(expr.attrs["arg_dims"]):
            if k == expr.attrs["dim"]:
                continue
            a, o = arg.shape_domain[k], out.shape_domain[j]
            na, no = self.ext[a.uid], self.ext[o.uid]
            if na == no or (le and no <= na) or (self.broadcast(a) and na == 1):
                continue
            rule = "at most" if le else "equal to"
            raise InputShapeError(
                f"{source}: the index's extent {no} at dim {j} must be {rule} the extent "
                f"{na} of arg dim {k} ({self.origin(a)})"
            )

    def scatter_dim(self, expr: Expr) -> None:
        """An indexed write: the output has ``arg``'s extents; the index's are at most
        ``arg``'s off the indexed dim and at most ``src``'s everywhere."""
        arg, index, src, out = expr.inputs[0], expr.inputs[1], expr.inputs[2], expr.outputs[0]
        assert isinstance(arg, TensorView) and isinstance(index, TensorView)
        assert isinstance(src, TensorView) and isinstance(out, TensorView)
        self.copy(expr, out, zip(arg.shape_domain, out.shape_domain))
        source, dim = expr.attrs["source"], expr.attrs["dim"]
        for k, d in enumerate(index.shape_domain):
            n = self.ext[d.uid]
            for what, t in (("arg", arg), ("src", src)):
                if what == "arg" and k == dim:
                    continue
                m = self.ext[t.shape_domain[k].uid]
                if n > m:
                    raise InputShapeError(
                        f"{source}: the index's extent {n} at dim {k} must be at most the "
                        f"extent {m} of {what} dim {k} ({self.origin(t.shape_domain[k])})"
                    )

    def movement(self, expr: Expr) -> None:
        """slice: each dim's extent after normalizing its bounds; select: the index is in
        range; pad: each dim's extent plus its widths (>= 0), a tensor fill's agreeing."""
        from ..ir.ops.movement import slice_range

        x, out = expr.inputs[0], expr.outputs[0]
        assert isinstance(x, TensorView) and isinstance(out, TensorView)
        ins = [self.ext[d.uid] for d in x.shape_domain]
        a = expr.attrs
        if expr.op.name == "slice":
            r = x.ndim
            bounds = self.shape_values(expr, expr.inputs[1 + r :])  # starts, then stops
            for d, n in enumerate(ins):
                k = a["steps"][d]
                start, m = slice_range(bounds[d], bounds[r + d], k, n, a["manual"])
                src, dst = x.shape_domain[d], out.shape_domain[d]
                if m == n and start == 0:  # the whole dim: nvFuser keeps it as it is
                    self.copy(expr, out, [(src, dst)])
                    continue
                self.bind(expr, out, dst, m, f"the slice of {self.origin(src)}")
                self.made(dst)
            return
        if expr.op.name == "select":
            d = a["dim"]
            (raw,) = self.shape_values(expr, expr.inputs[2:3])
            if not -ins[d] <= raw < ins[d]:
                raise InputShapeError(
                    f"{expr!r}: select index {raw} is out of range for dim {d} of T{x.index}, "
                    f"whose extent is {ins[d]} ({self.origin(x.shape_domain[d])})"
                )
            kept = [dd for i, dd in enumerate(x.shape_domain) if i != d]
            self.copy(expr, out, zip(kept, out.shape_domain))
            return
        r = x.ndim
        widths = self.shape_values(expr, expr.inputs[2:])
        fill = expr.inputs[1]
        for d, n in enumerate(ins):
            m = n - widths[d] + widths[r + d]
            if m < 0:
                raise InputShapeError(
                    f"{expr!r}: dim {d} of T{x.index} has extent {n}; padded by "
                    f"({-widths[d]}, {widths[r + d]}) it would be {m}"
                )
            if isinstance(fill, TensorView):
                f_ext = self.ext[fill.shape_domain[d].uid]
                if f_ext != m and not (self.broadcast(fill.shape_domain[d]) and f_ext == 1):
                    raise InputShapeError(
                        f"{expr!r}: the concatenated inputs disagree on dim {d}: {m} and {f_ext}"
                    )
            src, dst = x.shape_domain[d], out.shape_domain[d]
            if not (widths[d] or widths[r + d]):  # not padded: nvFuser keeps it as it is
                self.copy(expr, out, [(src, dst)])
                continue
            self.bind(expr, out, dst, m, f"the padding of {self.origin(src)}")
            self.made(dst)

    def reshape(self, expr: Expr) -> None:
        x, out = expr.inputs[0], expr.outputs[0]
        assert isinstance(x, TensorView) and isinstance(out, TensorView)
        vals = self.shape_values(expr, expr.inputs[1:])
        in_shape = [self.ext[d.uid] for d in x.shape_domain]
        numel = math.prod(in_shape)
        if vals.count(-1) > 1 or any(v < -1 for v in vals):
            raise InputShapeError(
                f"{expr!r}: invalid new shape {vals} (at most one -1, no other negative extents)"
            )
        if -1 in vals:
            rest = math.prod(v for v in vals if v != -1)
            if rest == 0 or numel % rest:
                raise InputShapeError(
                    f"{expr!r}: cannot infer -1 in {vals} for an input of "
                    f"shape {in_shape} ({numel} elements)"
                )
            vals[vals.index(-1)] = numel // rest
        if math.prod(vals) != numel:
            raise InputShapeError(
                f"{expr!r}: cannot reshape T{x.index} of shape {in_shape} ({numel} elements) "
                f"into {vals} ({math.prod(vals)} elements)"
            )
        for d, v in zip(out.shape_domain, vals):
            self.bind(expr, out, d, v, f"the shape of {expr!r}")
            self.made(d)


__all__ = ["RunExtents", "propagate_extents"]
