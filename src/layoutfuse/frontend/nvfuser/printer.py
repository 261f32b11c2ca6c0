"""How a FusionDefinition prints: nvFuser's Python syntax, one record per line.

The printed records are also the FusionCache key, so every value that changes
the fusion must print exactly: floats print like nvFuser (``1.00000``) when that
text reads back to the same float, and with full precision otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def format_float(v: float) -> str:
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("-inf")' if v < 0 else 'float("inf")'
    text = format(v, "#g")  # C++'s std::showpoint, which nvFuser uses
    return text if float(text) == v else repr(v)


def format_complex(v: complex) -> str:
    re_text, im_text = format_float(v.real), format_float(v.imag)
    if "float(" in re_text + im_text:
        return f"complex({re_text}, {im_text})"
    return f"{re_text}+{im_text}j"


def format_value(v) -> str:
    """A scalar constant as Python source (bool, int, float or complex)."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, complex):
        return format_complex(v)
    raise TypeError(f"cannot print scalar value {v!r} of type {type(v).__name__}")


def format_item(x) -> str:
    """One list entry: a flag, an int, None, or a handle (printed by name)."""
    if x is None or isinstance(x, bool | int | float | complex):
        return "None" if x is None else format_value(x)
    return x.name


def format_list(items: Iterable) -> str:
    return "[" + ", ".join(format_item(x) for x in items) + "]"


def record_line(outputs: list, call: str, trailing_comma: bool = False) -> str:
    """``T3 = fd.ops.add(T1, T2)``: output names, then the call."""
    if not outputs:
        return call
    names = ", ".join(h.name for h in outputs) + ("," if trailing_comma else "")
    return f"{names} = {call}"


def function_text(fusion_id: int | None, lines: Iterable[str]) -> str:
    """The whole definition as nvFuser prints it: an executable Python function."""
    name = f"nvfuser_fusion_id{fusion_id}" if fusion_id is not None else "nvfuser_incomplete_fusion"
    body = "".join(f"    {line}\n" for line in lines)
    return f"\ndef {name}(fd : FusionDefinition) -> None :\n{body}\n"
