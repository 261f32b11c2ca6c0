"""``fd.ops.uniform``, ``normal``, ``rand_like`` and ``randn_like``: nvFuser's random ops.

Argument forms as in nvFuser's bindings: ``uniform(minval, maxval, shape, *,
rng_seed=None, rng_offset=None, dtype=DataType.Float)`` (``normal(mean, std, shape,
...)`` likewise), ``shape`` a Vector or a list/tuple of ints and Scalars;
``rand_like(arg)`` or ``rand_like(arg, *, rng_seed, rng_offset)``. ``rng_seed`` and
``rng_offset`` are Scalars (often inputs, ``fd.define_scalar(dtype=DataType.Int)``) given
together; without them each call draws a seed (``layoutfuse.ir.ops.random``).
"""

from __future__ import annotations

from ...dtypes import DataType
from ...ir.ops import random as ir_random
from .arguments import dtype_arg


def _seed_offset(rec, op: str, rng_seed, rng_offset) -> tuple:
    seed = None if rng_seed is None else rec.scalar(rng_seed, op, "rng_seed")
    offset = None if rng_offset is None else rec.scalar(rng_offset, op, "rng_offset")
    return seed, offset


def _seed_text(rng_seed, rng_offset) -> str:
    if rng_seed is None and rng_offset is None:
        return ""
    names = ["None" if h is None else h.name for h in (rng_seed, rng_offset)]
    return f", rng_seed={names[0]}, rng_offset={names[1]}"


def _distribution(self, name: str, args: tuple, names: tuple[str, str], shape, seeds, dtype):
    """The shared body of ``uniform`` and ``normal``: ``args`` their two Scalars."""
    rec = self._fd._recorder_for(name)
    a, b = (rec.scalar(h, name, n) for h, n in zip(args, names))
    dtype = dtype_arg(dtype, name)
    vec, text = rec.shape(shape, name)
    seed, offset = _seed_offset(rec, name, *seeds)
    out = getattr(ir_random, name)(a, b, vec, dtype, seed, offset)
    return rec.emit(
        out,
        f"fd.ops.{name}({args[0].name}, {args[1].name}, shape={text}"
        f"{_seed_text(*seeds)}, dtype={dtype!r})",
    )


def uniform(self, minval, maxval, shape, *, rng_seed=None, rng_offset=None, dtype=DataType.Float):
    return _distribution(
        self,
        "uniform",
        (minval, maxval),
        ("minval", "maxval"),
        shape,
        (rng_seed, rng_offset),
        dtype,
    )


def normal(self, mean, std, shape, *, rng_seed=None, rng_offset=None, dtype=DataType.Float):
    return _distribution(
        self, "normal", (mean, std), ("mean", "std"), shape, (rng_seed, rng_offset), dtype
    )


uniform.__doc__ = (
    "``uniform(minval, maxval, shape, *, rng_seed=None, rng_offset=None, "
    f"dtype=DataType.Float)``: {ir_random.UNIFORM.doc}."
)
normal.__doc__ = (
    "``normal(mean, std, shape, *, rng_seed=None, rng_offset=None, "
    f"dtype=DataType.Float)``: {ir_random.NORMAL.doc}."
)


def _like(name: str):
    build = getattr(ir_random, name)

    def op(self, arg, *, rng_seed=None, rng_offset=None):
        rec = self._fd._recorder_for(name)
        x = rec.tensor(arg, name)
        seed, offset = _seed_offset(rec, name, rng_seed, rng_offset)
        out = build(x, seed, offset)
        return rec.emit(out, f"fd.ops.{name}({arg.name}{_seed_text(rng_seed, rng_offset)})")

    op.__name__ = name
    op.__doc__ = f"``{name}(arg, *, rng_seed=None, rng_offset=None)``: {build.__doc__}"
    return op


RANDOM_OPERATORS = {
    "uniform": uniform,
    "normal": normal,
    "rand_like": _like("rand_like"),
    "randn_like": _like("randn_like"),
}
