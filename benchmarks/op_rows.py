"""The ops suite's ops, one row each: a frozen dataclass of the op's parameters that
knows its inputs, its nvFuser definition (as a user or Thunder writes it), its torch
function (eager, and torch.compile of the same function), the bytes it reads and how
a result is checked.

Inputs are drawn through :class:`Draw` (standard normals, integer indices, per-row
permutations), so the same builder makes real inputs and the meta tensors the byte
counts come from. Tensors are declared with ``fd.from_pytorch`` (symbolic sizes, the
tensor's strides) and integer scalars with ``fd.define_scalar(dtype=DataType.Int)``.
A reduced-precision pointwise chain is computed in Float between two casts, as Thunder
writes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from benchmarks.reference import TOLERANCES, as_outputs

Outputs = tuple[torch.Tensor, ...]
Check = Callable[[Any], None]


@dataclass
class Draw:
    """Random inputs on ``device`` (meta: shapes only, no generator)."""

    device: str
    gen: torch.Generator | None = None

    @classmethod
    def seeded(cls, device: str, seed: int) -> Draw:
        return cls(device, torch.Generator(device=device).manual_seed(seed))

    def normal(self, shape, dtype: torch.dtype, column_major: bool = False) -> torch.Tensor:
        dims = tuple(shape[::-1]) if column_major else tuple(shape)
        x = torch.randn(dims, generator=self.gen, device=self.device, dtype=dtype)
        return x.t() if column_major else x

    def integers(self, high: int, shape) -> torch.Tensor:
        return torch.randint(0, high, tuple(shape), generator=self.gen, device=self.device)

    def row_permutations(self, rows: int, n: int) -> torch.Tensor:
        keys = torch.rand((rows, n), generator=self.gen, device=self.device)
        return keys.argsort(dim=1)


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def tensors(xs) -> list[torch.Tensor]:
    return [x for x in xs if isinstance(x, torch.Tensor)]


def declare(fd, xs) -> list:
    """Each input as a fusion input: tensors by ``from_pytorch``, ints as Int scalars."""
    from layoutfuse.nvfuser import DataType

    return [
        fd.from_pytorch(x) if isinstance(x, torch.Tensor) else fd.define_scalar(dtype=DataType.Int)
        for x in xs
    ]


def in_float(fd, t, body):
    """``body(t)`` computed in Float when ``t`` is a 16-bit float, cast back after."""
    from layoutfuse.nvfuser import DataType

    if t.dtype in (DataType.Float, DataType.Double):
        return body(t)
    return fd.ops.cast(body(fd.ops.cast(t, DataType.Float)), t.dtype)


# --- checks -----------------------------------------------------------------------------------
def _same_kind(out: torch.Tensor, want: torch.Tensor, what: str) -> None:
    if tuple(out.shape) != tuple(want.shape) or out.dtype != want.dtype:
        raise AssertionError(
            f"{what}: {tuple(out.shape)} {out.dtype}, expected {tuple(want.shape)} {want.dtype}"
        )


def assert_equal(out, want) -> None:
    """Every output equal to eager's, bit for bit (data movement, no arithmetic)."""
    outs, wants = as_outputs(out), as_outputs(want)
    if len(outs) != len(wants):
        raise AssertionError(f"{len(outs)} outputs, expected {len(wants)}")
    for k, (o, w) in enumerate(zip(outs, wants)):
        _same_kind(o, w, f"output {k}")
        if not torch.equal(o, w):
            bad = int((o != w).sum())
            raise AssertionError(f"output {k}: {bad} of {o.numel()} values differ from eager")


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, scale: float) -> None:
    """``out`` against the fp32 reference, the dtype's tolerance with atol times ``scale``
    (the output's typical magnitude)."""
    _same_kind(out, ref.to(dtype), "output")
    rtol, atol = TOLERANCES[str(dtype).removeprefix("torch.")]
    bad = ~torch.isclose(out.float(), ref, rtol=rtol, atol=atol * scale)
    if bool(bad.any()):
        i = int(bad.flatten().nonzero()[0])
        raise AssertionError(
            f"{int(bad.sum())} of {bad.numel()} values differ from the fp32 reference "
            f"(rtol={rtol:g}, atol={atol * scale:g}); first at flat index {i}: "
            f"{out.flatten()[i].item():g} vs {ref.flatten()[i].item():g}"
        )


def exact_checker(function: Callable) -> Callable[[list], Check]:
    def checker(xs: list) -> Check:
        want = function(*xs)
        return lambda out: assert_equal(out, want)

    return checker


# --- the rows ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cat:
    """``torch.cat`` of the inputs along ``dim``."""

    dim: int
    family: ClassVar[str] = "cat"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        return [draw.normal(s, dtype) for s in shapes]

    def define(self, fd, ts) -> list:
        return [fd.ops.cat(ts, dim=self.dim)]

    def function(self) -> Callable:
        dim = self.dim
        return lambda *xs: torch.cat(xs, dim)

    def read_bytes(self, xs) -> int:
        return sum(map(nbytes, tensors(xs)))

    def checker(self, xs) -> Check:
        return exact_checker(self.function())(xs)


@dataclass(frozen=True)
class SlicePointwise:
    """``x[bounds] * 2 + 1``; ``bounds`` is (start, stop, step) per dim. Reads the slice's
    elements, or all of ``x`` when ``step`` > 1 along the stride-1 dim (every 32-byte
    sector holds kept elements)."""

    bounds: tuple[tuple[int, int, int], ...]
    family: ClassVar[str] = "slice"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        return [draw.normal(shapes[0], dtype)]

    def define(self, fd, ts) -> list:
        two, one = fd.define_scalar(2.0), fd.define_scalar(1.0)
        starts, stops, steps = (list(v) for v in zip(*self.bounds))
        s = fd.ops.slice(ts[0], start_indices=starts, end_indices=stops, strides=steps)
        return [in_float(fd, s, lambda t: fd.ops.add(fd.ops.mul(t, two), one))]

    def function(self) -> Callable:
        index = tuple(slice(a, b, c) for a, b, c in self.bounds)
        return lambda x: x[index] * 2 + 1

    def read_bytes(self, xs) -> int:
        x = xs[0]
        if self.bounds[-1][2] > 1:
            return nbytes(x)
        return nbytes(self.function()(x))

    def checker(self, xs) -> Check:
        ref = self.function()(xs[0].float())
        return lambda out: assert_close(out, ref, xs[0].dtype, 3.0)


@dataclass(frozen=True)
class Pad:
    """``F.pad(x, widths)`` with zeros (widths of the last dim first)."""

    widths: tuple[int, ...]
    family: ClassVar[str] = "pad"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        return [draw.normal(shapes[0], dtype)]

    def define(self, fd, ts) -> list:
        return [fd.ops.pad(ts[0], list(self.widths))]

    def function(self) -> Callable:
        widths = list(self.widths)
        return lambda x: F.pad(x, widths)

    def read_bytes(self, xs) -> int:
        return nbytes(xs[0])

    def checker(self, xs) -> Check:
        return exact_checker(self.function())(xs)


@dataclass(frozen=True)
class IndexSelect:
    """``torch.index_select(table, 0, index)``: rows of a [vocab, hidden] table at
    ``n_index`` random indices (the first shape is the table's). Reads the rows the
    indices name (a repeated row counted each time) and the index."""

    n_index: int
    family: ClassVar[str] = "gather"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        table = draw.normal(shapes[0], dtype)
        return [table, draw.integers(shapes[0][0], (self.n_index,))]

    def define(self, fd, ts) -> list:
        return [fd.ops.index_select(ts[0], ts[1], 0)]

    def function(self) -> Callable:
        return lambda table, index: torch.index_select(table, 0, index)

    def read_bytes(self, xs) -> int:
        table, index = xs
        return index.numel() * table.shape[1] * table.element_size() + nbytes(index)

    def checker(self, xs) -> Check:
        return exact_checker(self.function())(xs)


@dataclass(frozen=True)
class Embedding:
    """``F.embedding(ids, table)`` through ``fd.ops.embedding_fwd``: ids of shape
    ``ids_shape``; bytes as :class:`IndexSelect`."""

    ids_shape: tuple[int, ...]
    family: ClassVar[str] = "gather"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        table = draw.normal(shapes[0], dtype)
        return [draw.integers(shapes[0][0], self.ids_shape), table]

    def define(self, fd, ts) -> list:
        return [fd.ops.embedding_fwd(ts[0], ts[1])]

    def function(self) -> Callable:
        return lambda ids, table: F.embedding(ids, table)

    def read_bytes(self, xs) -> int:
        ids, table = xs
        return ids.numel() * table.shape[1] * table.element_size() + nbytes(ids)

    def checker(self, xs) -> Check:
        return exact_checker(self.function())(xs)


@dataclass(frozen=True)
class TakeAlongAxis:
    """``torch.take_along_dim(x, index, dim)`` of an [rows, n] ``x``; ``k`` indices a row
    (random, with repeats), or ``k`` = 0: a full-size index, a permutation of each row.
    Reads the elements the index names and the index."""

    dim: int
    k: int
    family: ClassVar[str] = "take_along_axis"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        rows, n = shapes[0]
        x = draw.normal((rows, n), dtype)
        index = draw.row_permutations(rows, n) if self.k == 0 else draw.integers(n, (rows, self.k))
        return [x, index]

    def define(self, fd, ts) -> list:
        return [fd.ops.take_along_axis(ts[0], ts[1], self.dim)]

    def function(self) -> Callable:
        dim = self.dim
        return lambda x, index: torch.take_along_dim(x, index, dim)

    def read_bytes(self, xs) -> int:
        x, index = xs
        return index.numel() * x.element_size() + nbytes(index)

    def checker(self, xs) -> Check:
        return exact_checker(self.function())(xs)


@dataclass(frozen=True)
class Cumsum:
    """``torch.cumsum(x, dim)`` (16-bit floats accumulate in fp32 in both systems)."""

    dim: int
    column_major: bool = False
    family: ClassVar[str] = "cumsum"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        return [draw.normal(shapes[0], dtype, self.column_major)]

    def define(self, fd, ts) -> list:
        return [fd.ops.cumsum(ts[0], self.dim)]

    def function(self) -> Callable:
        dim = self.dim
        return lambda x: torch.cumsum(x, dim)

    def read_bytes(self, xs) -> int:
        return nbytes(xs[0])

    def checker(self, xs) -> Check:
        x = xs[0]
        ref = torch.cumsum(x.float(), self.dim)
        scale = math.sqrt(x.shape[self.dim])  # a sum of n standard normals
        return lambda out: assert_close(out, ref, x.dtype, scale)


@dataclass(frozen=True)
class TopK:
    """``torch.topk(x, k, dim)``: (values, indices), the largest first."""

    k: int
    dim: int = 1
    family: ClassVar[str] = "topk"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        return [draw.normal(shapes[0], dtype)]

    def define(self, fd, ts) -> list:
        values, indices = fd.ops.topk(ts[0], self.k, self.dim, largest=True, sorted=True)
        return [values, indices]

    def function(self) -> Callable:
        k, dim = self.k, self.dim
        return lambda x: torch.topk(x, k, dim)

    def read_bytes(self, xs) -> int:
        return nbytes(xs[0])

    def checker(self, xs) -> Check:
        """The values are eager's (sorted, ties in any order of their indices); each index
        is distinct in its row and names its value."""
        x, dim = xs[0], self.dim
        want = torch.topk(x, self.k, dim).values

        def check(out) -> None:
            values, indices = as_outputs(out)
            _same_kind(values, want, "values")
            if indices.dtype != torch.int64 or indices.shape != want.shape:
                raise AssertionError(f"indices: {tuple(indices.shape)} {indices.dtype}")
            if not torch.equal(values.sort(dim, descending=True).values, want):
                raise AssertionError("the values are not eager's top k")
            if not torch.equal(x.gather(dim, indices), values):
                raise AssertionError("an index does not name its value")
            ordered = indices.sort(dim).values
            if bool((ordered.diff(dim=dim) == 0).any()):
                raise AssertionError("an index repeats in its row")

        return check


@dataclass(frozen=True)
class Argsort:
    """``torch.argsort(x, dim)`` (ascending)."""

    dim: int = 1
    column_major: bool = False
    family: ClassVar[str] = "argsort"

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        return [draw.normal(shapes[0], dtype, self.column_major)]

    def define(self, fd, ts) -> list:
        return [fd.ops.argsort(ts[0], self.dim)]

    def function(self) -> Callable:
        dim = self.dim
        return lambda x: torch.argsort(x, dim=dim)

    def read_bytes(self, xs) -> int:
        return nbytes(xs[0])

    def checker(self, xs) -> Check:
        """A permutation of each row that sorts it (ties in any order)."""
        x, dim = xs[0], self.dim
        want = x.sort(dim).values
        view = [1] * x.dim()
        view[dim] = -1
        positions = torch.arange(x.shape[dim], device=x.device).view(view).expand_as(x)

        def check(out) -> None:
            (idx,) = as_outputs(out)
            if idx.dtype != torch.int64 or idx.shape != x.shape:
                raise AssertionError(f"indices: {tuple(idx.shape)} {idx.dtype}")
            if not torch.equal(x.gather(dim, idx), want):
                raise AssertionError("the indices do not sort the rows")
            if not torch.equal(idx.sort(dim).values, positions):
                raise AssertionError("the indices are not a permutation of each row")

        return check


@dataclass(frozen=True)
class Dropout:
    """Dropout with probability ``p``: ``where(mask, x, 0) * 1/(1-p)``, ``mask =
    uniform(0, 1, seed, offset) > p`` for layoutfuse (the fusion's inputs: x, seed and
    offset), ``F.dropout(x, p)`` for the peers (their RNG: other numbers by design). The
    check: the kept fraction within 6 sigma of 1-p and every kept value x/(1-p)."""

    p: float
    family: ClassVar[str] = "dropout"
    SEED: ClassVar[int] = 0x5EED_0F_D20
    OFFSET: ClassVar[int] = 4

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        return [draw.normal(shapes[0], dtype), self.SEED, self.OFFSET]

    def define(self, fd, ts) -> list:
        from layoutfuse.nvfuser import DataType

        x, seed, offset = ts
        zero, one = fd.define_scalar(0.0), fd.define_scalar(1.0)
        u = fd.ops.uniform(
            zero, one, x.shape(), rng_seed=seed, rng_offset=offset, dtype=DataType.Float
        )
        keep = fd.ops.gt(u, fd.define_scalar(self.p))
        kept = fd.ops.where(keep, x, fd.define_scalar(0.0))
        return [fd.ops.mul(kept, fd.define_scalar(1.0 / (1.0 - self.p)))]

    def function(self) -> Callable:
        p = self.p
        return lambda x, seed, offset: F.dropout(x, p, training=True)

    def read_bytes(self, xs) -> int:
        return nbytes(xs[0])

    def checker(self, xs) -> Check:
        x, p = xs[0], self.p
        scaled = (x.float() / (1.0 - p)).to(x.dtype)

        def check(out) -> None:
            (y,) = as_outputs(out)
            _same_kind(y, x, "output")
            kept = y != 0
            rate, n = float(kept.float().mean()), kept.numel()
            sigma = math.sqrt(p * (1 - p) / n)
            if abs(rate - (1 - p)) > 6 * sigma:
                raise AssertionError(f"kept {rate:.4f} of the values, expected {1 - p:.4f}")
            assert_close(y[kept], scaled[kept].float(), x.dtype, 1.0)

        return check

    def mask(self, x: torch.Tensor) -> torch.Tensor:
        """The mask layoutfuse's fusion computes: its uniform op's reference numbers."""
        from layoutfuse.dtypes import DataType
        from layoutfuse.ir.ops.random import UNIFORM

        u = UNIFORM.reference(
            0.0, 1.0, self.SEED, self.OFFSET, *x.shape, dtype=DataType.Float, device=x.device
        )
        return u > self.p


@dataclass(frozen=True)
class NormBackward:
    """The backward of a norm over the last dim of ``[N, H]``, as Thunder's nvFuser
    regions compute it: ``layer_norm`` (dx, dw, db from dy, x, the saved fp32 mean and
    rstd, and w), ``rms_norm`` (dx, dw from dy, x, the saved rstd, w), ``softmax`` (dx
    from dy and the saved output y). The peers run torch's own backward kernels on the
    same saved tensors (``native_layer_norm_backward``, ``_softmax_backward_data``; RMS
    norm as its formula), eager and under torch.compile (which generates its own)."""

    kind: str  # "layer_norm", "rms_norm" or "softmax"
    family: ClassVar[str] = "backward"
    EPS: ClassVar[float] = 1e-5

    def inputs(self, shapes, dtype, draw: Draw) -> list:
        (n, h) = shapes[0]
        dy, x = draw.normal((n, h), dtype), draw.normal((n, h), dtype)
        if self.kind == "softmax":
            return [dy, torch.softmax(x.float(), -1).to(dtype)]
        w = draw.normal((h,), dtype)
        xf = x.float()
        if self.kind == "rms_norm":
            return [dy, x, (xf.pow(2).mean(-1, keepdim=True) + self.EPS).rsqrt(), w]
        mean = xf.mean(-1, keepdim=True)
        return [dy, x, mean, (xf.var(-1, unbiased=False, keepdim=True) + self.EPS).rsqrt(), w]

    def define(self, fd, ts) -> list:
        from layoutfuse.nvfuser import DataType

        f32 = DataType.Float
        dy = fd.ops.cast(ts[0], f32)
        n, h = fd.ops.size(ts[0], 0), fd.ops.size(ts[0], 1)

        def rows(t):  # [N, 1] -> [N, H]
            return fd.ops.broadcast_in_dim(t, shape=[n, h], broadcast_dims=[0, 1])

        def row_sum(t):
            return rows(fd.ops.sum(t, dims=[1], keepdim=True))

        if self.kind == "softmax":
            y = fd.ops.cast(ts[1], f32)
            dx = fd.ops.mul(y, fd.ops.sub(dy, row_sum(fd.ops.mul(dy, y))))
            return [fd.ops.cast(dx, ts[0].dtype)]
        x, w = fd.ops.cast(ts[1], f32), fd.ops.cast(ts[-1], f32)
        rstd = rows(ts[-2])
        xhat = fd.ops.mul(x if self.kind == "rms_norm" else fd.ops.sub(x, rows(ts[2])), rstd)
        g = fd.ops.mul(dy, fd.ops.broadcast_in_dim(w, shape=[n, h], broadcast_dims=[1]))
        hf = fd.ops.cast(h, f32)
        t = fd.ops.sub(fd.ops.mul(g, hf), fd.ops.mul(xhat, row_sum(fd.ops.mul(g, xhat))))
        if self.kind == "layer_norm":
            t = fd.ops.sub(t, row_sum(g))
        dx = fd.ops.mul(fd.ops.div(rstd, hf), t)
        dw = fd.ops.sum(fd.ops.mul(dy, xhat), dims=[0])
        outs = [dx, dw] + ([fd.ops.sum(dy, dims=[0])] if self.kind == "layer_norm" else [])
        return [fd.ops.cast(o, ts[0].dtype) for o in outs]

    def function(self) -> Callable:
        if self.kind == "softmax":
            return lambda dy, y: torch.ops.aten._softmax_backward_data(dy, y, -1, dy.dtype)
        if self.kind == "layer_norm":

            def layer_norm(dy, x, mean, rstd, w):
                h = x.shape[-1]
                if not x.is_cuda:  # the CPU kernel takes the statistics in x's dtype
                    mean, rstd = mean.to(x.dtype), rstd.to(x.dtype)
                return torch.ops.aten.native_layer_norm_backward(
                    dy, x, [h], mean, rstd, w, w, [True, True, True]
                )

            return layer_norm

        def rms_norm(dy, x, rstd, w):
            xhat = x.float() * rstd
            g = dy.float() * w.float()
            dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
            dw = (dy.float() * xhat).sum(0)
            return dx.to(dy.dtype), dw.to(dy.dtype)

        return rms_norm

    def read_bytes(self, xs) -> int:
        return sum(nbytes(t) for t in xs)

    def checker(self, xs) -> Check:
        dy, *rest = (t.double() for t in xs)
        dtype = xs[0].dtype
        if self.kind == "softmax":
            (y,) = rest
            refs = [y * (dy - (dy * y).sum(-1, keepdim=True))]
            scales = [float(refs[0].abs().max())]
        else:
            x, *stats, w = rest
            h = x.shape[-1]
            xhat = (x if self.kind == "rms_norm" else x - stats[0]) * stats[-1]
            g = dy * w
            t = g * h - xhat * (g * xhat).sum(-1, keepdim=True)
            if self.kind == "layer_norm":
                t = t - g.sum(-1, keepdim=True)
            refs = [stats[-1] / h * t, (dy * xhat).sum(0)]
            refs += [dy.sum(0)] if self.kind == "layer_norm" else []
            scales = [1.0] + [math.sqrt(x.shape[0])] * (len(refs) - 1)

        def check(out) -> None:
            outs = as_outputs(out)
            if len(outs) != len(refs):
                raise AssertionError(f"{len(outs)} outputs, expected {len(refs)}")
            for o, r, s in zip(outs, refs, scales):
                assert_close(o, r.float(), dtype, s)

        return check
