"""What every reduction kernel shares: combine functions, identities, accumulator dtype."""

from __future__ import annotations

from ..dtypes import DataType
from ..ir import REGISTRY
from ..ir.ops.reductions import (
    ROW_BY_NAME,
    ROWS,
    accumulator_dtype,
    float_accumulator,
    n_results,
)

__all__ = ["accumulator_dtype", "n_results"]  # re-exported: the reductions rows define them

# The rows' combine helpers, in row order.
COMBINE_PRELUDE = "\n" + "\n\n".join(row.combine_source for row in ROWS)

# Each row's combine helper, by name.
COMBINE = {row.name: row.combine for row in ROWS}


def acc_dtype(red_dtype: DataType) -> DataType:
    """The accumulator of a reduction of one result over ``red_dtype`` values."""
    return float_accumulator(red_dtype)


def identity(op: str, dtype: DataType) -> str:
    """The Triton text of row ``op``'s identity in accumulator dtype ``dtype``."""
    value = ROW_BY_NAME[op].identity.value(dtype)
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return f"float('{value}')"
    return str(int(value)) if isinstance(value, bool) else str(value)


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
    w.line(
        f"{s} = tl.where({m_new} == float('-inf'), {s}, "
        f"tl.where({a} > {m}, {s} * {e} + 1.0, {s} + {e}))"
    )
    w.line(f"{m} = {m_new}")


def emit_online_rows(
    w, m: str, s: str, row_max: str, row_sum: str, axis: int, nan_rows: bool = True
) -> None:
    """Softmax's row max and row sum from the lanes' running pairs ``m``, ``s`` along
    ``axis``: ``M = max(m)``, ``S = sum(s * exp(m - M))``, a lane still at -inf adding 0.
    ``nan_rows``: a row of -inf alone sums to NaN, as torch's ``exp(-inf - -inf)`` terms do
    (False where split partials are combined later, which applies it)."""
    exp = REGISTRY["exp"].triton
    w.line(reduce_line(row_max, m, "max", axis))
    terms = w.assign(
        "terms", f"tl.where({m} == float('-inf'), 0.0, {s} * {exp(f'{m} - {row_max}')})"
    )
    w.line(f"{row_sum} = tl.sum({terms}, {axis}, keep_dims=True)")
    if nan_rows:
        w.line(f"{row_sum} = tl.where({row_max} == float('-inf'), float('nan'), {row_sum})")


def emit_counted_welford_step(
    w, mean: str, m2: str, val: str, mask: str, count: str, ct: str
) -> None:
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


def epilogue_values(w, spec, results: list[str], scalar_name, tile_zeros: str) -> list[str]:
    """The values of ``spec.epilogue`` (per-row outputs computed from the results alone),
    in their compute dtype: each reduction output is its result rounded to the output's
    dtype, as the memory a separate kernel would read it from holds it."""
    from .values import ValueEmitter
    from .writer import storage_cast, tl_compute

    outputs = [o for e in spec.reductions for o in e.outputs]
    special = {
        id(o): w.assign("rv", f"{storage_cast(r, o.dtype)}.to({tl_compute(o.dtype)})")
        for o, r in zip(outputs, results)
    }

    def no_load(tv, chain):
        return None  # the segmenter's epilogue reads no memory

    def no_coordinate(tv, chain):
        raise ValueError(f"{tv!r}: a per-row epilogue has no coordinates")

    ve = ValueEmitter(w, no_load, scalar_name, no_coordinate, tile_zeros, special)
    return [ve.value(o) for o in spec.epilogue]
