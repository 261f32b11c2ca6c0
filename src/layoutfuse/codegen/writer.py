"""A small line writer for generated Triton source, with fresh names and indentation."""

from __future__ import annotations

import itertools

from ..dtypes import DataType, compute_dtype
from .helpers import FP8_CONVERT

TRITON_DTYPE = {
    DataType.Double: "tl.float64",
    DataType.Float: "tl.float32",
    DataType.Half: "tl.float16",
    DataType.BFloat16: "tl.bfloat16",
    DataType.Int: "tl.int64",
    DataType.Int32: "tl.int32",
    DataType.UInt64: "tl.uint64",
    DataType.Bool: "tl.int1",
    DataType.Float8_e4m3fn: "tl.float8e4nv",
    DataType.Float8_e5m2: "tl.float8e5",
}


def tl_dtype(dtype: DataType) -> str:
    return TRITON_DTYPE[dtype]


def tl_compute(dtype: DataType) -> str:
    return TRITON_DTYPE[compute_dtype(dtype)]


def storage_cast(expr: str, dtype: DataType) -> str:
    """``expr`` converted for a store into memory of ``dtype`` (bools are stored as int8)."""
    if dtype is DataType.Bool:
        return f"({expr} != 0).to(tl.int1)"
    if dtype in FP8_CONVERT:  # rounded as torch rounds (codegen/helpers.py)
        return f"{FP8_CONVERT[dtype]}({expr})"
    return f"{expr}.to({tl_dtype(dtype)})"


class Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.depth = 0
        self._names = itertools.count()

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._names)}"

    def line(self, text: str = "") -> None:
        self.lines.append(("    " * self.depth + text) if text else "")

    def assign(self, prefix: str, expr: str) -> str:
        name = self.fresh(prefix)
        self.line(f"{name} = {expr}")
        return name

    def indent(self):
        writer = self

        class _Block:
            def __enter__(self):
                writer.depth += 1

            def __exit__(self, *exc):
                writer.depth -= 1

        return _Block()

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def typed_params(args: list[str], scalars) -> list[str]:
    """Kernel parameters, the scalar ones (``c<i>``) annotated with their compute dtype so
    the launcher passes a Double as f64 (a plain Python float would be specialized f32)."""
    out = []
    for a in args:
        if a.startswith("c") and a[1:].isdigit():
            dtype = scalars[int(a[1:])].dtype
            if dtype is not DataType.Bool:
                a = f"{a}: {tl_compute(dtype)}"
        out.append(a)
    return out


def factored_args(args: list[str], factors: tuple[tuple[str, int], ...]) -> list[str]:
    """The kernel's argument names with each factored one (``params.factors``: received
    divided by its factor, ``runtime.launch.bind``) renamed ``<name>_q``."""
    divided = dict(factors)
    return [f"{a}_q" if a in divided else a for a in args]


def multiply_back(w: Writer, factors: tuple[tuple[str, int], ...]) -> None:
    """The kernel's first lines: each factored argument multiplied back under its own name,
    a multiple of its factor that Triton knows as one."""
    for a, f in factors:
        w.line(f"{a} = {a}_q * {f}")
