"""torch's meaning of the generated programs' ops past pointwise math, reductions and views.

For ``support.program_steps.SEMANTICS``: data movement (slice with steps, pad with a
value, cat, select), indexed reads (index_select, gather, take_along_axis,
embedding_fwd), random numbers (uniform, normal, rand_like, randn_like), the per-row
ops (cumsum, argsort, topk) and the library ops (matmul, linear). Each gives the
values as torch computes them, an error bound (``support.programs``) and the layout
facts nvFuser's output layout rules read (README; ``passes/output_layout.py``):

* slice, pad and cat keep their operands' axes (every operand's, for cat), select
  drops one; none is a view (a slice that keeps everything is never drawn);
* an indexed read's dims are its ``arg``'s off the indexed dim and its index's;
* random values depend on no tensor input (row-major); a scan keeps its input's axes;
  a library op maps none (its output is row-major unless a neighbour maps);
* an extent-1 dim is a broadcast only where nvFuser makes one (an input's, a kept
  reduced dim, a broadcast); a sliced, padded or scanned dim of extent 1 is not, and
  never broadcasts against another extent.

Random numbers are not torch's by design: their reference is the op row's own torch
computation of the same Philox words (``layoutfuse.ir.ops.random``); ``uniform`` is
exact where its float64 value is representable, ``normal`` within the backend's
log, sqrt and cos. A program that draws them also runs twice with the same seeds and
must give the same bits (``check_program``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from layoutfuse.dtypes import from_torch, to_torch
from layoutfuse.ir.opdef import get as op_row
from support.program_reductions import exact_sum, frac_bits
from support.programs import (
    BF16,
    BOOL,
    EPS32,
    F16,
    Const,
    ScalarInput,
    Unusable,
    Value,
    absolute_bound,
    check_finite,
    joined,
    magnitude,
    make_value,
    merge_origins,
    rounding,
    same_values,
    shaped,
)

NORMAL_ULPS = 64  # normal: |std| * this many Float ulps (log, sqrt and cos of the backend)


def number(a) -> int | float:
    return a.value if isinstance(a, Const | ScalarInput) else a


# --- data movement ---------------------------------------------------------------------------
def slice_values(x: Value, start_indices, end_indices, strides=None) -> list[Value]:
    steps = strides or [1] * len(x.shape)
    ref = x.ref[tuple(slice(s, e, k) for s, e, k in zip(start_indices, end_indices, steps))]
    if not ref.numel():
        raise Unusable("slice: an empty result")
    value = shaped(x, ref, range(x.ref.dim()), None)
    # an expanded dim sliced to extent 1 stays an expanded broadcast in nvFuser (of an
    # unknown extent: squeeze refuses it without squeeze_expanded): not drawn as a broadcast
    shrunk = [e and n == 1 for e, n in zip(x.expanded, ref.shape)]
    bcast = tuple(b and not s for b, s in zip(value.bcast, shrunk))
    return [dataclasses.replace(value, bcast=bcast)]


def pad_values(x: Value, value=None, *, pad_widths) -> list[Value]:
    fill = 0 if value is None else number(value)
    ref = F.pad(x.ref, list(pad_widths), value=fill)
    if not ref.numel():
        raise Unusable("pad: an empty result")
    r = x.ref.dim()
    moved = [False] * r
    for p in range(len(pad_widths) // 2):
        moved[r - 1 - p] = pad_widths[2 * p] != 0 or pad_widths[2 * p + 1] != 0
    bcast = [b and not m for b, m in zip(x.bcast, moved)]
    facts = dict(consumed=x.consumed, deps=x.deps, reshaped=x.reshaped)
    return [make_value(ref, x.err, x.abs_err, bcast, x.origins, **facts)]


def cat_values(*tensors: Value, dim: int) -> list[Value]:
    # references are CPU tensors but topk's index placeholder (the default device, see
    # ``_on``): under ``--device cuda`` the operands meet on the first one's device
    ref = torch.cat([_on(t.ref, tensors[0].ref) for t in tensors], dim)
    r = ref.dim()
    bcast = [j != dim % r and all(t.bcast[j] for t in tensors) for j in range(r)]
    origins = [merge_origins([t.origins[j] for t in tensors]) for j in range(r)]
    err, abs_err = max(t.err for t in tensors), max(t.abs_err for t in tensors)
    return [make_value(ref, err, abs_err, bcast, origins, **joined(tensors))]


def select_values(x: Value, index, dim: int) -> list[Value]:
    ref = x.ref.select(dim, number(index))
    return [shaped(x, ref, [d for d in range(x.ref.dim()) if d != dim % x.ref.dim()], None)]


# --- indexed reads ---------------------------------------------------------------------------
def _read(
    arg: Value,
    index: Value,
    ref: torch.Tensor,
    dim: int,
    arg_dims: Sequence[int],
    index_bcast: Sequence[bool],
    index_origins: Sequence[dict],
    kept: Sequence[bool] = (),
) -> Value:
    """An indexed read's value: its dim ``j`` is ``arg``'s dims ``k`` (off ``dim``) with
    ``arg_dims[k] == j`` and the index's dim ``j`` (the index broadcast to the output's
    shape: ``index_bcast``, ``index_origins``); a broadcast only where all of them are,
    or where ``kept`` says the index's broadcast carries over (gather's)."""
    bcast, origins = [], []
    for j in range(ref.dim()):
        ks = [k for k, jj in enumerate(arg_dims) if jj == j and k != dim]
        carried = bool(kept) and kept[j]
        bcast.append(index_bcast[j] and (carried or all(arg.bcast[k] for k in ks)))
        maps = [arg.origins[k] for k in ks] + ([] if index_bcast[j] else [index_origins[j]])
        origins.append(merge_origins(maps))
    return make_value(ref, arg.err, arg.abs_err, bcast, origins, **joined([arg, index]))


def _on(index: torch.Tensor, data: torch.Tensor) -> torch.Tensor:
    """An index reference on its data's device. References live on the CPU (the drawn
    values are), but topk's index placeholder is made on the default device (its check
    gathers the kernel's output): under ``--device cuda`` (0882a85) it met CPU data in a
    later index op."""
    return index.to(data.device)


def check_index(index: Value, n: int, negative: bool = False) -> None:
    """An index operand: integers in range (``negative``: -n..n-1) read exactly."""
    if index.dtype.is_floating_point or index.dtype is BOOL or index.opaque:
        raise Unusable("an index must be an integer tensor of known values")
    lo = -n if negative else 0
    if index.ref.numel() and bool(((index.ref < lo) | (index.ref >= n)).any()):
        raise Unusable("an index out of range")


def index_select_values(arg: Value, index: Value, dim: int) -> list[Value]:
    dim %= arg.ref.dim()
    check_index(index, arg.shape[dim])
    ref = torch.index_select(arg.ref, dim, _on(index.ref.long(), arg.ref))
    r = ref.dim()
    ib = [index.bcast[0] if j == dim else True for j in range(r)]
    io = [index.origins[0] if j == dim else {} for j in range(r)]
    return [_read(arg, index, ref, dim, range(r), ib, io)]


def gather_values(arg: Value, index: Value, dim: int) -> list[Value]:
    dim %= arg.ref.dim()
    check_index(index, arg.shape[dim])
    if any(i > a for k, (i, a) in enumerate(zip(index.shape, arg.shape)) if k != dim):
        raise Unusable("gather: an index extent past arg's")
    ref = torch.gather(arg.ref, dim, _on(index.ref.long(), arg.ref))
    # as nvFuser's gather, the output's dims are the index's: a broadcast of extent 1
    # stays one (an expanded one is a plain dim of its extent where arg's is not)
    kept = [b and not e for b, e in zip(index.bcast, index.expanded)]
    return [_read(arg, index, ref, dim, range(ref.dim()), index.bcast, index.origins, kept)]


def take_along_axis_values(arg: Value, index: Value, dim: int) -> list[Value]:
    dim %= arg.ref.dim()
    check_index(index, arg.shape[dim], negative=True)
    ref = torch.take_along_dim(arg.ref, _on(index.ref.long(), arg.ref), dim)
    return [_read(arg, index, ref, dim, range(ref.dim()), index.bcast, index.origins)]


def embedding_values(input: Value, weight: Value) -> list[Value]:
    check_index(input, weight.shape[0])
    ref = F.embedding(_on(input.ref.long(), weight.ref), weight.ref)
    ib, io = (*input.bcast, True), (*input.origins, {})
    return [_read(weight, input, ref, 0, (0, input.ref.dim()), ib, io)]


# --- random numbers --------------------------------------------------------------------------
def _random(name: str, a, b, seed, offset, shape, dtype: torch.dtype) -> Value:
    row = op_row(name)
    args = (number(seed), number(offset), *shape)
    kw = dict(dtype=from_torch(dtype), device=torch.device("cpu"))
    ref = row.reference(float(number(a)), float(number(b)), *args, **kw)
    if name == "uniform":  # its uniforms are exact in the dtype: lo + (hi - lo) * u
        u = row.reference(0.0, 1.0, *args, **kw).double()
        lo, hi = float(number(a)), float(number(b))
        true = lo + (hi - lo) * u
        err, abs_err = (0.0 if same_values(ref, true) else rounding(dtype)), 0.0
    else:
        err, abs_err = rounding(dtype), abs(float(number(b))) * NORMAL_ULPS * EPS32
    # a constant extent of 1 is a broadcast dim, as nvFuser's factories make it
    # (``ir.ops.common.factory_id``): it broadcasts against an expanded dim of another operand
    bcast = [n == 1 for n in shape]
    return make_value(ref, err, abs_err, bcast, [{}] * len(shape))


def uniform_values(minval, maxval, rng_seed, rng_offset, shape, dtype) -> list[Value]:
    return [_random("uniform", minval, maxval, rng_seed, rng_offset, shape, to_torch(dtype))]


def normal_values(mean, std, rng_seed, rng_offset, shape, dtype) -> list[Value]:
    return [_random("normal", mean, std, rng_seed, rng_offset, shape, to_torch(dtype))]


def rand_like_values(x: Value, rng_seed, rng_offset) -> list[Value]:
    return [_random("uniform", 0.0, 1.0, rng_seed, rng_offset, x.shape, x.dtype)]


def randn_like_values(x: Value, rng_seed, rng_offset) -> list[Value]:
    return [_random("normal", 0.0, 1.0, rng_seed, rng_offset, x.shape, x.dtype)]


# --- scans and sorts -------------------------------------------------------------------------
def _row_value(x: Value, ref: torch.Tensor, dim: int, err=0.0, abs_err=0.0, verify=None) -> Value:
    """A per-row op's result: ``x``'s axes, ``dim`` a plain (never a broadcast) axis."""
    bcast = [b and d != dim for d, b in enumerate(x.bcast)]
    facts = dict(consumed=x.consumed, deps=x.deps, reshaped=x.reshaped, verify=verify)
    return make_value(ref, err, abs_err, bcast, x.origins, **facts)


def cumsum_values(x: Value, dim: int) -> list[Value]:
    """Inclusive prefix sums: Half/BF16 add in Float, integers and Bool in Int64; exact
    where every partial sum is (``exact_sum``), else a sequential sum's bound."""
    dim %= x.ref.dim()
    if x.abs_err:
        raise Unusable("cumsum: an operand with an absolute error bound")
    float_in = x.dtype.is_floating_point
    out = x.dtype if float_in else torch.int64
    acc = x.ref.float() if x.dtype in (F16, BF16) else x.ref.to(out)
    ref = torch.cumsum(acc, dim).to(out)
    if not float_in:
        return [_row_value(x, ref, dim)]
    data = x.ref.double()
    true = torch.cumsum(data, dim)
    check_finite(ref, true)
    n = x.shape[dim]
    if x.exact and exact_sum(data, [dim]):
        return [_row_value(x, ref, dim, 0.0 if same_values(ref, true) else rounding(out))]
    steps = n * EPS32  # a sequential scan rounds once per element
    if bool((data >= 0).all() or (data <= 0).all()):
        return [_row_value(x, ref, dim, x.err + steps + rounding(out))]
    if not x.exact:
        raise Unusable("cumsum: approximate values of both signs")
    total = float(data.abs().sum(dim).max())
    return [_row_value(x, ref, dim, rounding(out), steps * total)]


def _exact_sortable(x: Value, op: str) -> None:
    if not x.exact or x.opaque:
        raise Unusable(f"{op}: not continuous in an approximate operand")
    if x.dtype is BOOL:
        raise Unusable(f"{op}: bool (torch's topk refuses it on the CPU)")


def argsort_values(x: Value, dim: int, descending=False, stable=False) -> list[Value]:
    """Stable: torch's order. Not stable: any sorting permutation (checked as one)."""
    _exact_sortable(x, "argsort")
    dim %= x.ref.dim()
    ref = torch.argsort(x.ref, dim=dim, descending=descending, stable=True)
    verify = None if stable else sorting_check(x.ref, ref, dim, x.shape[dim], descending)
    return [_row_value(x, ref, dim, verify=verify)]


def topk_values(x: Value, k, dim: int, largest=True, sorted=False) -> list[Value]:
    """(values, indices). torch leaves the indices of ties unspecified (and the order
    where not ``sorted``): the indices are checked to be distinct and to hold the
    values; unsorted values are compared as a set."""
    _exact_sortable(x, "topk")
    dim %= x.ref.dim()
    values, _ = torch.topk(x.ref, number(k), dim, largest=largest, sorted=True)
    as_set = None if sorted else sorted_check(values, dim)
    indices = topk_indices_check(x.ref, values, dim, sorted)
    return [
        _row_value(x, values, dim, verify=as_set),
        # a placeholder on the default device: its check gathers the kernel's output
        _row_value(x, torch.zeros(values.shape, dtype=torch.int64), dim, verify=indices),
    ]


def _sort(t: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.sort(t, dim=dim, stable=True).values


def sorted_check(want: torch.Tensor, dim: int):
    def verify(got: torch.Tensor) -> str | None:
        if same_values(_sort(got, dim), _sort(want, dim)):
            return None
        return f"values {got.tolist()}, expected {want.tolist()} in some order along dim {dim}"

    return verify


def topk_indices_check(x: torch.Tensor, values: torch.Tensor, dim: int, in_order: bool):
    n = x.shape[dim]

    def verify(got: torch.Tensor) -> str | None:
        why = permutation_problem(got, n, dim)
        if why:
            return why
        at = x.gather(dim, _on(got, x))  # under --device cuda one of them is a CUDA tensor
        ok = (
            same_values(at, values) if in_order else same_values(_sort(at, dim), _sort(values, dim))
        )
        return None if ok else f"indices {got.tolist()} hold {at.tolist()}, not {values.tolist()}"

    return verify


def sorting_check(x: torch.Tensor, want: torch.Tensor, dim: int, n: int, descending: bool):
    """``got`` is a permutation per row that sorts ``x`` (ties in any order)."""

    def verify(got: torch.Tensor) -> str | None:
        why = permutation_problem(got, n, dim)
        if why:
            return why
        at, expected = x.gather(dim, _on(got, x)), x.gather(dim, _on(want, x))
        return None if same_values(at, expected) else f"indices {got.tolist()} do not sort"

    return verify


def permutation_problem(got: torch.Tensor, n: int, dim: int) -> str | None:
    if got.numel() and bool(((got < 0) | (got >= n)).any()):
        return f"indices {got.tolist()}: one is out of range [0, {n})"
    s = _sort(got, dim)
    k = got.shape[dim]
    if k > 1 and bool((s.narrow(dim, 1, k - 1) == s.narrow(dim, 0, k - 1)).any()):
        return f"indices {got.tolist()}: one repeats along dim {dim}"
    return None


# --- library ops -----------------------------------------------------------------------------
def _static_one(v: Value, d: int) -> bool:
    """nvFuser makes a library output's dim a broadcast where its extent is statically 1."""
    return v.shape[d] == 1 and v.bcast[d]


def _contraction(ref, true, total: float, k: int, operands: Sequence[Value], bias=None):
    """(err, abs_err) of a sum of ``k`` products (``total``: the largest sum of their
    magnitudes): exact where every partial sum is in Float, else each product's bound
    plus a sequential sum's rounding; a bias adds its own."""
    a, b = operands
    check_finite(ref, true)
    dtype = ref.dtype
    exact = all(v.exact for v in (a, b, *([bias] if bias else [])))
    units = 2.0 ** (frac_bits(a.ref.double()) + frac_bits(b.ref.double()))
    if bias is not None:
        total += magnitude(bias)
        units = max(units, 2.0 ** frac_bits(bias.ref.double()))
    # torch's kernels may sum a half dtype's products in that dtype (cuBLAS; the CPU's on
    # strided or expanded operands: a bf16 linear of an expanded view, program 294656):
    # exact only while every partial sum is exact in it
    half = dtype in (F16, BF16)
    if exact and total * units < (2.0 / torch.finfo(dtype).eps if half else 2.0**24):
        return (0.0 if same_values(ref, true) else rounding(dtype)), 0.0
    ea, eb = absolute_bound(a), absolute_bound(b)
    products = k * (ea * magnitude(b) + magnitude(a) * eb + ea * eb)
    sums = k * EPS32 * total
    if half:
        sums += k * torch.finfo(dtype).eps * total  # the half dtype's sums (above)
    return rounding(dtype), products + sums + (absolute_bound(bias) if bias else 0.0)


def _library_value(ref: torch.Tensor, err, abs_err, bcast, operands) -> Value:
    r = ref.dim()
    return make_value(ref, err, abs_err, bcast, [{}] * r, **joined(list(operands)))


def matmul_values(a: Value, b: Value) -> list[Value]:
    if a.dtype != b.dtype or not a.dtype.is_floating_point:
        raise Unusable("matmul: operands of one float dtype")
    if a.opaque or b.opaque:
        raise Unusable("matmul: an opaque operand")
    try:
        ref = torch.matmul(a.ref, b.ref)
    except RuntimeError as e:
        raise Unusable(f"matmul: {str(e).splitlines()[0]}") from None
    true = torch.matmul(a.ref.double(), b.ref.double())
    magnitudes = torch.matmul(a.ref.double().abs(), b.ref.double().abs())
    total = float(magnitudes.max()) if ref.numel() else 0.0
    err, abs_err = _contraction(ref, true, total, a.shape[-1], (a, b))
    return [_library_value(ref, err, abs_err, matmul_bcast(a, b), (a, b))]


def matmul_bcast(a: Value, b: Value) -> list[bool]:
    ra, rb = a.ref.dim(), b.ref.dim()
    if ra == 1 and rb == 1:
        return []
    if rb == 1:
        return [_static_one(a, d) for d in range(ra - 1)]
    if ra == 1:
        return [_static_one(b, d) for d in range(rb - 2)] + [_static_one(b, rb - 1)]
    n = max(ra, rb) - 2
    batch = []
    for j in range(n):
        srcs = [(v, j - n + v.ref.dim() - 2) for v in (a, b) if j - n + v.ref.dim() - 2 >= 0]
        batch.append(all(_static_one(v, d) for v, d in srcs))
    return batch + [_static_one(a, ra - 2), _static_one(b, rb - 1)]


def linear_values(a: Value, w: Value, bias: Value | None = None) -> list[Value]:
    ops = [t for t in (a, w, bias) if t is not None]
    if len({t.dtype for t in ops}) != 1 or not a.dtype.is_floating_point:
        raise Unusable("linear: operands of one float dtype")
    if any(t.opaque for t in ops):
        raise Unusable("linear: an opaque operand")
    bias_ref = None if bias is None else bias.ref
    ref = F.linear(a.ref, w.ref, bias_ref)
    true = F.linear(a.ref.double(), w.ref.double(), None if bias is None else bias_ref.double())
    total = F.linear(a.ref.double().abs(), w.ref.double().abs())
    total_max = float(total.max()) if total.numel() else 0.0
    err, abs_err = _contraction(ref, true, total_max, a.shape[-1], (a, w), bias)
    bcast = [_static_one(a, d) for d in range(a.ref.dim() - 1)]
    if w.ref.dim() == 2:
        bcast.append(_static_one(w, 0))
    return [_library_value(ref, err, abs_err, bcast, ops)]


TABLE_SEMANTICS = {
    "slice": slice_values,
    "pad": pad_values,
    "cat": cat_values,
    "select": select_values,
    "index_select": index_select_values,
    "gather": gather_values,
    "take_along_axis": take_along_axis_values,
    "embedding_fwd": embedding_values,
    "uniform": uniform_values,
    "normal": normal_values,
    "rand_like": rand_like_values,
    "randn_like": randn_like_values,
    "cumsum": cumsum_values,
    "argsort": argsort_values,
    "topk": topk_values,
    "matmul": matmul_values,
    "linear": linear_values,
}
RANDOM_OPS = frozenset({"uniform", "normal", "rand_like", "randn_like"})
