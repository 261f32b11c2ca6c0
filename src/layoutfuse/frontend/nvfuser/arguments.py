"""The frontend's argument checks, in one place.

Every ``fd.ops`` operator, ``define_*`` and ``add_output`` checks its plain arguments
(ints, bools, dtypes, lists; ``int_list`` is the IR builders' own check, shared with the test
API) here and its handles through the ``Recorder``; a wrong type
is an :class:`~layoutfuse.errors.ArgumentTypeError` (a ``DefinitionError`` and a
``TypeError``) whose message names the call, the argument, what it takes and what it got,
described by :func:`~layoutfuse.errors.describe` (a tensor by shape, dtype, strides and
device, never its values). Values of the right type that do not fit the tensor (a dim out
of range, a repeated dim, a bad extent) are checked by the IR builders, which name the
op and the argument too.
"""

from __future__ import annotations

from typing import Any

import torch

from ...dtypes import DataType, from_torch
from ...errors import ArgumentTypeError, describe
from ...ir.ops.common import int_sequence as int_list


def is_int(x: object) -> bool:
    """A Python int that is not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)


def type_error(op: str, arg: str, expected: str, x: object, hint: str = "") -> ArgumentTypeError:
    """``op: arg must be expected, got <x described>`` and an optional hint."""
    return ArgumentTypeError(f"{op}: {arg} must be {expected}, got {describe(x)}{hint}")


def int_arg(x: object, op: str, arg: str) -> int:
    if not is_int(x):
        raise type_error(op, arg, "an int", x)
    return x  # type: ignore[return-value]  # checked: an int


def bool_arg(x: object, op: str, arg: str) -> bool:
    if not isinstance(x, bool):
        raise type_error(op, arg, "a bool", x)
    return x


def dtype_arg(x: object, op: str, arg: str = "dtype") -> DataType:
    """A DataType; a torch dtype is refused with the DataType to use instead."""
    if isinstance(x, DataType):
        return x
    hint = ""
    if isinstance(x, torch.dtype):
        try:
            hint = f"; use {from_torch(x)!r}"
        except ValueError:
            hint = "; it has no DataType"
    raise type_error(op, arg, "a DataType", x, hint)


def bool_list(x: object, op: str, arg: str) -> list[bool]:
    if not isinstance(x, list | tuple):
        raise type_error(op, arg, "a list of bools", x)
    for k, v in enumerate(x):
        if not isinstance(v, bool):
            raise type_error(op, f"{arg}[{k}]", "a bool", v)
    return list(x)


def bind_arguments(
    op: str, names: tuple[str, ...], args: tuple, kwargs: dict, defaults: dict[str, Any]
) -> dict[str, Any]:
    """Python's argument binding for an overload given as parameter names and defaults."""
    if len(args) > len(names):
        raise ArgumentTypeError(
            f"{op}() takes at most {len(names)} arguments ({', '.join(names)}), {len(args)} given"
        )
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise ArgumentTypeError(
                f"{op}() got an unexpected keyword argument {k!r}; this "
                f"form takes {', '.join(names)}"
            )
        if k in bound:
            raise ArgumentTypeError(f"{op}() got multiple values for argument {k!r}")
        bound[k] = v
    for k in names:
        if k not in bound:
            if k not in defaults:
                raise ArgumentTypeError(f"{op}() missing required argument {k!r}")
            bound[k] = defaults[k]
    return bound


__all__ = [
    "bind_arguments",
    "bool_arg",
    "bool_list",
    "dtype_arg",
    "int_arg",
    "int_list",
    "is_int",
    "type_error",
]
