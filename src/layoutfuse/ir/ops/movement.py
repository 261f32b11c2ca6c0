"""Data movement as index maps: slice (any positive step), select, pad, cat.

No op here copies. A consumer reads through them as through the other shape ops:

* ``slice``: input index ``start + step * i`` per dim (affine: a strided view of the
  input, at a base offset the kernel receives as an argument); static positive steps,
  bounds static or runtime scalars;
* ``select``: the dim disappears, its index is the (possibly runtime) scalar;
* ``pad``: input index ``i - lo``, valid where it is inside the input (a
  ``MaskedIndex``); elsewhere the value is the fill, a scalar, or, for the pads that
  ``cat`` is built from, another tensor of the output's shape: ``cat([a, b, c])`` is
  ``pad(c, fill=pad(b, fill=pad(a, fill=0)))``, each input read by a masked load where
  its range of the cat dim holds, the others' values selected by ``tl.where``.

Bounds are normalized as torch and nvFuser do (negative counts from the end, clamped
to the extent) by ``slice_range``, at definition time where the extent is static and
on the host at run time (``runtime.extents``) where it is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...dtypes import DataType, is_integral
from ...errors import ArgumentTypeError, DefinitionError, UnsupportedError, describe
from ..domain import IterDomain
from ..opdef import MaskedIndex, OpDef, OpKind, register
from ..values import Scalar, TensorView
from .common import check_tensor, clone_id, emit, normalize_dim, static_value

if TYPE_CHECKING:
    import torch

    from ..fusion import Expr, Fusion
    from ..opdef import IndexAlgebra

MOVEMENT_OPS = frozenset({"slice", "select", "pad"})


def slice_range(
    start: int | None, stop: int | None, step: int, n: int, manual: bool = False
) -> tuple[int, int]:
    """(normalized start, output extent) of ``start:stop:step`` over an extent ``n``.

    Not ``manual``: a negative bound counts from the end, the start is clamped to
    [0, n] and the stop to [start, n] (torch's and nvFuser's rule). ``manual``: the
    bounds are taken as given (the caller promises 0 <= start <= stop <= n)."""
    s = 0 if start is None else start
    e = n if stop is None else stop
    if not manual:
        s = min(max(s + n if s < 0 else s, 0), n)
        e = min(max(e + n if e < 0 else e, s), n)
    return s, max(0, -(-(e - s) // step))


def _int_arg(v: object, op: str, arg: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, Scalar):
        if not is_integral(v.dtype):
            raise ArgumentTypeError(f"{op}: {arg} must be integral, got {describe(v)}")
        if not v.is_constant:
            raise UnsupportedError(
                f"{op}: {arg} is a runtime scalar; slice steps must be static "
                f"(bounds, widths and select's index may be runtime scalars)"
            )
        return int(v.value)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentTypeError(f"{op}: {arg} must be an int, got {describe(v)}")
    return v


def _int_list(v: object, op: str, arg: str, n: int | None = None) -> list[int | None]:
    if not isinstance(v, list | tuple):
        raise ArgumentTypeError(f"{op}: {arg} must be a list of ints, got {describe(v)}")
    if n is not None and len(v) != n:
        raise DefinitionError(f"{op}: {arg} has {len(v)} entries, the input has rank {n}")
    return [_int_arg(x, op, f"{arg}[{k}]") for k, x in enumerate(v)]


def _size(x: TensorView, d: int) -> Scalar:
    from .scalars import size

    return size(x, d)


def _arith(name: str, *operands: Any) -> Scalar:
    from .elementwise import pointwise

    out = pointwise(name, *operands)
    assert isinstance(out, Scalar)
    return out


# --- slice -----------------------------------------------------------------------------------
# inputs: x, then per dim its normalized start (what the index map reads), its start and
# its stop as given (what the run's extents are computed from); attrs: steps, manual
def _slice_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any]:
    steps = expr.attrs["steps"]
    return [
        ix.add(ix.scalar(start), ix.mul(i, ix.scalar(k)))
        for i, start, k in zip(out_idx, expr.inputs[1:], steps)
    ]


def _slice_ref(x: torch.Tensor, *bounds: int, steps: Sequence[int], manual: bool) -> torch.Tensor:
    r = x.dim()
    index = []
    for d, k in enumerate(steps):
        s, n = slice_range(bounds[r + d], bounds[2 * r + d], k, x.shape[d], manual)
        index.append(slice(s, s + k * n, k) if n else slice(0, 0))
    return x[tuple(index)]


SLICE = register(OpDef("slice", OpKind.SHAPE, reference=_slice_ref, index_map=_slice_map))


def _bound(x: TensorView, v: object, d: int, arg: str) -> Scalar | None:
    """A slice bound as a Scalar (None: absent); runtime integer Scalars are taken."""
    if v is None:
        return None
    if isinstance(v, Scalar):
        if not is_integral(v.dtype):
            raise ArgumentTypeError(f"slice: {arg}[{d}] must be integral, got {describe(v)}")
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentTypeError(f"slice: {arg}[{d}] must be an int, got {describe(v)}")
    return Scalar(x.fusion, DataType.Int, v)


def _bounds(x: TensorView, v: object, arg: str) -> list[Scalar | None]:
    if not isinstance(v, list | tuple):
        raise ArgumentTypeError(f"slice: {arg} must be a list of ints, got {describe(v)}")
    if len(v) != x.ndim:
        raise DefinitionError(f"slice: {arg} has {len(v)} entries, the input has rank {x.ndim}")
    return [_bound(x, b, d, arg) for d, b in enumerate(v)]


def _normalized_start(x: TensorView, d: int, start: Scalar) -> Scalar:
    """``min(max(start < 0 ? start + n : start, 0), n)`` as a host scalar (runtime bounds or
    a symbolic extent)."""
    n = _size(x, d)
    wrapped = _arith("where", _arith("lt", start, 0), _arith("add", start, n), start)
    return _arith("minimum", _arith("maximum", wrapped, 0), n)


def slice_(
    x: TensorView,
    start_indices: Sequence[int | Scalar | None],
    end_indices: Sequence[int | Scalar | None],
    strides: Sequence[int | Scalar] | None = None,
    manual_normalization: bool = False,
) -> TensorView:
    """``x[start:end:step]`` per dim (nvFuser's ``slice``, with any positive static step;
    bounds may be runtime scalars, normalized on the host)."""
    x = check_tensor(x, "slice")
    starts = _bounds(x, start_indices, "start_indices")
    stops = _bounds(x, end_indices, "end_indices")
    steps_raw = [1] * x.ndim if strides is None else _int_list(strides, "slice", "strides", x.ndim)
    steps: list[int] = []
    for k, st in enumerate(steps_raw):
        if st is None or st <= 0:
            raise DefinitionError(f"slice: strides[{k}] is {st}; steps must be positive")
        steps.append(st)
    f = x.fusion
    manual = bool(manual_normalization)
    norm: list[Scalar] = []
    raw_starts: list[Scalar] = []
    raw_stops: list[Scalar] = []
    out_ids: list[IterDomain] = []
    trivial = True
    for d, (s0, e0, k) in enumerate(zip(starts, stops, steps)):
        src = x.shape_domain[d]
        n = src.extent
        s_v = 0 if s0 is None else static_value(s0)
        e_v = static_value(e0) if e0 is not None else n
        s0 = s0 if s0 is not None else Scalar(f, DataType.Int, 0)
        e0 = (
            e0 if e0 is not None else (Scalar(f, DataType.Int, n) if n is not None else _size(x, d))
        )
        raw_starts.append(s0)
        raw_stops.append(e0)
        ext: int | None = None
        if n is not None and s_v is not None and e_v is not None:
            s, ext = slice_range(s_v, e_v, k, n, manual)
            norm.append(Scalar(f, DataType.Int, s))
            trivial = trivial and s == 0 and ext == n and (k == 1 or n <= 1)
        else:
            trivial = trivial and s_v == 0 and stops[d] is None and k == 1
            static_ok = s_v is not None and (manual or 0 <= s_v)  # used as given (or clamped
            #   only where the output is empty)
            norm.append(s0 if manual or static_ok else _normalized_start(x, d, s0))
        if src.is_broadcast and ext != 0:
            out_ids.append(IterDomain.broadcast(ext) if src.expanded else IterDomain.broadcast(1))
        else:
            out_ids.append(IterDomain.made(ext))
    if trivial:
        from .shape import set_

        return set_(x)
    out = TensorView(f, out_ids, x.dtype)
    emit(f, SLICE, [x, *norm, *raw_starts, *raw_stops], [out], steps=tuple(steps), manual=manual)
    return out


def static_slice_bounds(e: Expr) -> list[Any] | None:
    """A slice expr's bound inputs as values (what ``_slice_ref`` takes after the tensor),
    or None where one is known only at run time."""
    bounds = e.inputs[1:]
    if not all(isinstance(b, Scalar) and b.is_constant for b in bounds):
        return None
    return [b.value for b in bounds if isinstance(b, Scalar)]


def index_scalars(e: Expr) -> tuple[Any, ...]:
    """The inputs of a movement expr that its kernel reads (its index map's scalars, a
    pad's fill and widths): the runtime ones are kernel arguments."""
    x = e.inputs[0]
    assert isinstance(x, TensorView)
    if e.op.name == "slice":
        return e.inputs[1 : 1 + x.ndim]
    if e.op.name == "select":
        return e.inputs[1:2]
    return e.inputs[1:]


# --- select ----------------------------------------------------------------------------------
def _select_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any]:
    d = expr.attrs["dim"]
    return [*out_idx[:d], ix.scalar(expr.inputs[1]), *out_idx[d:]]


def _select_ref(x: torch.Tensor, index: int, raw: int, dim: int) -> torch.Tensor:
    return x.select(dim, index)


SELECT = register(OpDef("select", OpKind.SHAPE, reference=_select_ref, index_map=_select_map))


def select(x: TensorView, index: int | Scalar, dim: int) -> TensorView:
    """``x.select(dim, index)``; ``index`` may be a runtime scalar (negative counts from the
    end; out of range is an error when the extents are bound)."""
    x = check_tensor(x, "select")
    d = normalize_dim(dim, x.ndim, "select")
    f = x.fusion
    if isinstance(index, Scalar):
        if not is_integral(index.dtype):
            raise ArgumentTypeError(f"select: index must be integral, got {describe(index)}")
        raw = index
    elif isinstance(index, int) and not isinstance(index, bool):
        raw = Scalar(f, DataType.Int, index)
    else:
        raise ArgumentTypeError(f"select: index must be an int or a Scalar, got {describe(index)}")
    n = x.shape_domain[d].extent
    r = static_value(raw)
    if r is not None and n is not None:
        if not -n <= r < n:
            raise DefinitionError(f"select: index {r} is out of range for dim {d} of extent {n}")
        norm = Scalar(f, DataType.Int, r % n)
    elif r is not None and r >= 0:
        norm = raw
    elif r is not None:
        norm = _arith("add", _size(x, d), r)
    else:
        size = Scalar(f, DataType.Int, n) if n is not None else _size(x, d)
        norm = _arith("where", _arith("lt", raw, 0), _arith("add", raw, size), raw)
    out_ids = [clone_id(a) for i, a in enumerate(x.shape_domain) if i != d]
    out = TensorView(f, out_ids, x.dtype)
    emit(f, SELECT, [x, norm, raw], [out], dim=d)
    return out


# --- pad -------------------------------------------------------------------------------------
def _pad_map(expr: Expr, out_idx: Sequence[Any], ix: IndexAlgebra) -> list[Any] | MaskedIndex:
    x = expr.inputs[0]
    assert isinstance(x, TensorView)
    r = x.ndim
    shifts, highs = expr.inputs[2 : 2 + r], expr.inputs[2 + r :]
    idx, valid = [], []
    for d in range(r):
        shift, high = shifts[d], highs[d]
        assert isinstance(shift, Scalar) and isinstance(high, Scalar)
        i = ix.add(out_idx[d], ix.scalar(shift))
        idx.append(i)
        s, hi = static_value(shift), static_value(high)
        if s is None or s < 0 or hi is None or hi > 0:  # some position may lie outside
            valid.append(ix.in_range(i, ix.extent(x, d)))
    return MaskedIndex(idx, valid) if valid else idx


def _pad_ref(x: torch.Tensor, fill: Any, *widths: int) -> torch.Tensor:
    import torch

    r = x.dim()
    neg_lo, hi = widths[:r], widths[r:]
    shape = [n - s + h for n, s, h in zip(x.shape, neg_lo, hi)]
    if torch.is_tensor(fill) and fill.dim() == r:
        out = fill.to(x.dtype).expand(shape).clone()
    else:
        out = torch.full(shape, fill, dtype=x.dtype, device=x.device)
    src, dst = [], []
    for n, s, m in zip(x.shape, neg_lo, shape):
        a, b = max(s, 0), min(n, m + s)  # input range read: [a, b)
        src.append(slice(a, max(a, b)))
        dst.append(slice(a - s, max(a, b) - s))
    out[tuple(dst)] = x[tuple(src)]
    return out


PAD = register(
    OpDef(
        "pad",
        OpKind.SHAPE,
        reference=_pad_ref,
        index_map=_pad_map,
        same_coordinate_inputs=(1,),  # the fill, where it is a tensor (cat)
    )
)


def _width(f: Fusion, v: int | Scalar) -> Scalar:
    return v if isinstance(v, Scalar) else Scalar(f, DataType.Int, v)


def _neg(v: int | Scalar) -> int | Scalar:
    if isinstance(v, Scalar):
        c = static_value(v)
        return -c if c is not None else _arith("neg", v)
    return -v


def _pad_extent(n: int | None, lo: int | Scalar, hi: int | Scalar, op: str, d: int) -> int | None:
    lo_v = static_value(lo) if isinstance(lo, Scalar) else lo
    hi_v = static_value(hi) if isinstance(hi, Scalar) else hi
    if n is None or lo_v is None or hi_v is None:
        return None
    ext = n + lo_v + hi_v
    if ext < 0:
        raise DefinitionError(f"{op}: dim {d} of extent {n} padded by ({lo_v}, {hi_v}) is < 0")
    return ext


def padded(
    x: TensorView,
    lows: Sequence[int | Scalar],
    highs: Sequence[int | Scalar],
    fill: Scalar | TensorView,
    op: str = "pad",
) -> TensorView:
    """``x`` padded by ``lows[d]`` before and ``highs[d]`` after each dim (negative: crop),
    the new positions holding ``fill`` (a scalar, or a tensor of the output's shape)."""
    f = x.fusion
    out_ids: list[IterDomain] = []
    for d, (lo, hi) in enumerate(zip(lows, highs)):
        src = x.shape_domain[d]
        ext = _pad_extent(src.extent, lo, hi, op, d)
        moved = static_value(_width(f, lo)) != 0 or static_value(_width(f, hi)) != 0
        out_id = IterDomain.made(ext) if moved else clone_id(src)
        if isinstance(fill, TensorView):
            from .common import combine_ids

            out_id = combine_ids([out_id, fill.shape_domain[d]], op, d)
            if moved and out_id.is_broadcast:
                out_id = IterDomain.made(ext)
        out_ids.append(out_id)
    out = TensorView(f, out_ids, x.dtype)
    shifts = [_width(f, _neg(lo)) for lo in lows]
    emit(f, PAD, [x, fill, *shifts, *(_width(f, h) for h in highs)], [out])
    return out


def pad(x: TensorView, pad_widths: Sequence[int | Scalar], value: Any = None) -> TensorView:
    """torch.nn.functional.pad's widths (last dim first: ``[lo, hi, lo, hi, ...]``); negative
    widths crop (a pad that only crops is a slice); ``value`` (default 0) fills."""
    x = check_tensor(x, "pad")
    if not isinstance(pad_widths, list | tuple):
        raise ArgumentTypeError(
            f"pad: pad_widths must be a list of ints, got {describe(pad_widths)}"
        )
    if len(pad_widths) % 2 or len(pad_widths) > 2 * x.ndim:
        raise DefinitionError(
            f"pad: pad_widths has {len(pad_widths)} entries; an even number, at most "
            f"twice the input's rank {x.ndim}"
        )
    widths = [_width_arg(w, k) for k, w in enumerate(pad_widths)]
    lows: list[int | Scalar] = [0] * x.ndim
    highs: list[int | Scalar] = [0] * x.ndim
    for p in range(len(widths) // 2):
        lows[x.ndim - 1 - p], highs[x.ndim - 1 - p] = widths[2 * p], widths[2 * p + 1]
    lo_i = [lo for lo in lows if isinstance(lo, int)]
    hi_i = [h for h in highs if isinstance(h, int)]
    if len(lo_i) == len(hi_i) == x.ndim and all(w <= 0 for w in lo_i + hi_i):
        return slice_(x, [-lo for lo in lo_i], [h if h < 0 else None for h in hi_i])
    fill = _fill_scalar(x, value)
    return padded(x, lows, highs, fill)


def _width_arg(w: object, k: int) -> int | Scalar:
    """A pad width: an int, a constant (as an int) or a runtime integer Scalar."""
    if isinstance(w, Scalar) and is_integral(w.dtype) and not w.is_constant:
        return w
    v = _int_arg(w, "pad", f"pad_widths[{k}]")
    return 0 if v is None else v


def _fill_scalar(x: TensorView, value: Any) -> Scalar:
    from .common import as_val

    if value is None:
        return Scalar(x.fusion, x.dtype, False if x.dtype is DataType.Bool else 0)
    v = as_val(x.fusion, value, "pad")
    if not isinstance(v, Scalar):
        raise ArgumentTypeError(f"pad: value must be a number or a Scalar, got {describe(value)}")
    return v


# --- cat -------------------------------------------------------------------------------------
def cat(tensors: Sequence[TensorView], dim: int = 0, manual_padding: bool = False) -> TensorView:
    """``torch.cat(tensors, dim)``: nested pads along ``dim``, each filled by the previous."""
    if not isinstance(tensors, list | tuple) or not tensors:
        raise ArgumentTypeError(f"cat: tensors must be a non-empty list, got {describe(tensors)}")
    xs = [check_tensor(t, "cat", f"tensors[{k}]") for k, t in enumerate(tensors)]
    r = xs[0].ndim
    for t in xs[1:]:
        if t.dtype is not xs[0].dtype:
            raise DefinitionError(
                f"cat: can't concatenate tensors with different data types: "
                f"{xs[0].dtype.value}, {t.dtype.value}"
            )
        if t.ndim != r:
            raise DefinitionError(f"cat: inputs have ranks {[t.ndim for t in xs]}; they must agree")
    d = normalize_dim(dim, r, "cat")
    if len(xs) == 1:
        from .shape import set_

        return set_(xs[0])
    if manual_padding:
        return _cat_padded(xs)
    exts: list[int | Scalar] = []
    for t in xs:
        e = t.shape_domain[d].extent
        exts.append(e if e is not None else _size(t, d))
    total: int | Scalar = 0
    for n in exts:
        total = _add(total, n)
    acc: Scalar | TensorView = Scalar(xs[0].fusion, xs[0].dtype, 0)
    off: int | Scalar = 0
    for t, n in zip(xs, exts):
        lows: list[int | Scalar] = [0] * r
        highs: list[int | Scalar] = [0] * r
        lows[d] = off
        off = _add(off, n)
        highs[d] = _sub(total, off)
        acc = padded(t, lows, highs, acc, "cat")
    assert isinstance(acc, TensorView)
    return acc


def _add(a: int | Scalar, b: int | Scalar) -> int | Scalar:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return _arith("add", a, b)


def _sub(a: int | Scalar, b: int | Scalar) -> int | Scalar:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return _arith("sub", a, b)


def _cat_padded(xs: list[TensorView]) -> TensorView:
    """nvFuser's ``manual_padding``: every input is a pad to the output's extent; each
    pad's own input is read where it lies, the earlier inputs elsewhere."""
    acc: Scalar | TensorView | None = None
    for k, t in enumerate(xs):
        e = t.definition
        if e is None or e.op.name != "pad" or isinstance(e.inputs[1], TensorView):
            raise DefinitionError(
                f"cat: tensors[{k}] is not a pad; manual_padding=True expects every input padded"
            )
        x = e.inputs[0]
        assert isinstance(x, TensorView)
        shifts, highs = e.inputs[2 : 2 + x.ndim], e.inputs[2 + x.ndim :]
        lows = [_neg(s) for s in shifts]  # type: ignore[arg-type]
        fill = e.inputs[1] if acc is None else acc
        assert isinstance(fill, Scalar | TensorView)
        acc = padded(x, lows, list(highs), fill, "cat")  # type: ignore[arg-type]
    assert isinstance(acc, TensorView)
    return acc


__all__ = [
    "MOVEMENT_OPS",
    "cat",
    "index_scalars",
    "pad",
    "padded",
    "select",
    "slice_",
    "slice_range",
    "static_slice_bounds",
]
