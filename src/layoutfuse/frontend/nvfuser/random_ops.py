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


def _distribution(name: str, first: str, second: str):
    build = getattr(ir_random, name)

    def op(self, arg1, arg2, shape, *, rng_seed=None, rng_offset=None, dtype=DataType.Float):
        rec = self._fd._recorder_for(name)
        a, b = rec.scalar(arg1, name, first), rec.scalar(arg2, name, second)
        dtype = dtype_arg(dtype, name)
        vec, text = rec.shape(shape, name)
        seed, offset = _seed_offset(rec, name, rng_seed, rng_offset)
        out = build(a, b, vec, dtype, seed, offset)
        return rec.emit(
            out,
            f"fd.ops.{name}({arg1.name}, {arg2.name}, shape={text}"
            f"{_seed_text(rng_seed, rng_offset)}, dtype={dtype!r})",
        )

    op.__name__ = name
    op.__doc__ = (
        f"``{name}({first}, {second}, shape, *, rng_seed=None, rng_offset=None, "
        f"dtype=DataType.Float)``: {(ir_random.UNIFORM if name == 'uniform' else ir_random.NORMAL).doc}."
    )
    return op


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
    "uniform": _distribution("uniform", "minval", "maxval"),
    "normal": _distribution("normal", "mean", "std"),
    "rand_like": _like("rand_like"),
    "randn_like": _like("randn_like"),
}
