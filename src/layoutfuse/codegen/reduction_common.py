"""What every reduction kernel shares: combine functions, identities, accumulator dtype."""

from __future__ import annotations

from ..dtypes import DataType, is_floating
from ..ir import REGISTRY
from ..ir.ops.reductions import ROW_BY_NAME

COMBINE_PRELUDE = '''
@triton.jit
def _add_combine(a, b):
    return a + b


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_combine(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    delta = mean_b - mean_a
    w = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    return mean_a + delta * w, m2_a + m2_b + delta * delta * n_a * w, n
'''

COMBINE = {"sum": "_add_combine", "prod": "_mul_combine", "max": "_max_combine",
           "min": "_min_combine"}


def acc_dtype(red_dtype: DataType) -> DataType:
    if red_dtype in (DataType.Half, DataType.BFloat16, DataType.Float, DataType.Float8_e4m3fn,
                     DataType.Float8_e5m2):
        return DataType.Float
    return red_dtype


def accumulator_dtype(red) -> DataType:
    """The accumulator of reduction expr ``red``: fp32 for 16-bit and fp32 values, fp64 for a
    Welford of doubles."""
    if red.op.name == "welford":
        return DataType.Double if red.inputs[0].dtype is DataType.Double else DataType.Float
    return acc_dtype(red.outputs[0].dtype)


def identity(op: str, dtype: DataType) -> str:
    row = ROW_BY_NAME[op]
    ident = row.identity
    if not is_floating(dtype) and ident in ("inf", "-inf"):
        bits = 63 if dtype in (DataType.Int, DataType.UInt64) else 31
        return str(2**bits - 1) if ident == "inf" else str(-(2**bits))
    return {"inf": "float('inf')", "-inf": "float('-inf')"}.get(ident, ident)


def reduce_line(dst: str, src: str, op: str, axis: int, floating: bool = True) -> str:
    """Reduce ``src`` along ``axis``. A float max/min is one tree of NaN-propagating
    maxima (``tl.max`` drops NaN, torch keeps it): a max plus a reduced NaN flag cost a
    second block reduction, and softmax over [32, 4096, 4096] (0, 2, 1) fp32 (a
    persistent [4096, 8] tile, 16 warps) read at 55.0% of the ceiling with it, 65.4%
    without (``tune-normalization-nanmax-1f4059a``)."""
    if op == "sum":
        return f"{dst} = tl.sum({src}, {axis}, keep_dims=True)"
    if op in ("max", "min") and not floating:
        return f"{dst} = tl.{op}({src}, {axis}, keep_dims=True)"
    return f"{dst} = tl.reduce({src}, {axis}, {COMBINE[op]}, keep_dims=True)"


def prelude() -> str:
    """Helper jit functions pasted after a reduction module's imports."""
    from .backend import PRELUDE

    return PRELUDE + COMBINE_PRELUDE


def emit_online_step(w, m: str, s: str, val: str, mask: str, ct: str) -> None:
    """Softmax's running pair, one lane at a time: ``m = max(m, a)`` and ``s`` of
    ``exp(a - m)``, rescaled when ``m`` grows. One of the two exponents is 0, so one exp
    serves: ``e = exp(-|a - m|)``, then ``s * e + 1`` where ``a`` is the new max, else
    ``s + e``. A lane whose max is still -inf keeps ``s`` (0; masked lanes hold -inf); a
    NaN in ``a`` or ``m`` makes ``e`` and ``s`` NaN. ``w``: the codegen Writer."""
    exp = REGISTRY["exp"].triton
    a = w.assign("a", f"tl.where({mask}, ({val}).to({ct}), float('-inf'))")
    m_new = w.assign("m_new", f"{COMBINE['max']}({m}, {a})")
    e = w.assign("e", exp(f"-tl.abs({a} - {m})"))
    w.line(f"{s} = tl.where({m_new} == float('-inf'), {s}, "
           f"tl.where({a} > {m}, {s} * {e} + 1.0, {s} + {e}))")
    w.line(f"{m} = {m_new}")


def emit_online_rows(w, m: str, s: str, row_max: str, row_sum: str, axis: int,
                     nan_rows: bool = True) -> None:
    """Softmax's row max and row sum from the lanes' running pairs ``m``, ``s`` along
    ``axis``: ``M = max(m)``, ``S = sum(s * exp(m - M))``, a lane still at -inf adding 0.
    ``nan_rows``: a row of -inf alone sums to NaN, as torch's ``exp(-inf - -inf)`` terms do
    (False where split partials are combined later, which applies it)."""
    exp = REGISTRY["exp"].triton
    w.line(reduce_line(row_max, m, "max", axis))
    terms = w.assign("terms", f"tl.where({m} == float('-inf'), 0.0, "
                              f"{s} * {exp(f'{m} - {row_max}')})")
    w.line(f"{row_sum} = tl.sum({terms}, {axis}, keep_dims=True)")
    if nan_rows:
        w.line(f"{row_sum} = tl.where({row_max} == float('-inf'), float('nan'), {row_sum})")


def emit_counted_welford_step(w, mean: str, m2: str, val: str, mask: str, count: str,
                              ct: str) -> None:
    """One Welford update where every unmasked lane holds the same ``count`` values after
    it (a scalar expression; lanes are masked only past the reduced extent): one
    reciprocal per tile instead of a division per element. The lanes' counts are
    derived after the loop."""
    w.line(f"rcp = 1.0 / (tl.zeros([], {ct}) + {count})")
    w.line(f"v = ({val}).to({ct})")
    w.line(f"delta = v - {mean}")
    w.line(f"mean_new = {mean} + tl.where({mask}, delta * rcp, 0.0)")
    w.line(f"{m2} = {m2} + tl.where({mask}, delta * (v - mean_new), 0.0)")
    w.line(f"{mean} = mean_new")
