"""``fd.ops.slice``, ``pad``, ``cat`` and ``select``: nvFuser's argument forms (the legacy
frontend at fe9addc91) over the IR rows of ``ir.ops.movement``."""

from __future__ import annotations

from typing import Any

from ...ir.ops import movement
from .arguments import bool_arg, int_arg
from .handles import Scalar, Vector
from .printer import format_list


def _ints(rec, values, op: str, arg: str) -> tuple[list[Any], str]:
    """A list of ints and Scalars (or a Vector) as IR values, and its printed form."""
    if isinstance(values, Vector):
        vec = rec.vector(values, op, arg)
        return list(vec.elements), values.name
    if not isinstance(values, list | tuple):
        from .arguments import type_error

        raise type_error(op, arg, "a Vector, list or tuple of ints and Scalars", values)
    out: list[Any] = []
    for k, v in enumerate(values):
        out.append(rec.scalar(v, op, f"{arg}[{k}]") if isinstance(v, Scalar) else v)
    return out, format_list(list(values))


def slice(self, arg, start_indices, end_indices, strides=None, manual_normalization=False):
    """``arg[start:end:stride]`` per dim; negative bounds count from the end and bounds are
    clamped to the extent unless ``manual_normalization``."""
    rec = self._fd._recorder_for("slice")
    x = rec.tensor(arg, "slice")
    starts, st_text = _ints(rec, start_indices, "slice", "start_indices")
    stops, en_text = _ints(rec, end_indices, "slice", "end_indices")
    steps, sp_text = (None, "None") if strides is None else _ints(rec, strides, "slice", "strides")
    manual = bool_arg(manual_normalization, "slice", "manual_normalization")
    out = movement.slice_(x, starts, stops, steps, manual)
    return rec.emit(
        out,
        f"fd.ops.slice({arg.name}, start_indices={st_text}, end_indices={en_text}, "
        f"strides={sp_text}, manual_normalization={manual})",
    )


def pad(self, arg, pad_widths, value=None):
    """torch.nn.functional.pad: widths for the last dim first; negative widths crop."""
    rec = self._fd._recorder_for("pad")
    x = rec.tensor(arg, "pad")
    widths, text = _ints(rec, pad_widths, "pad", "pad_widths")
    fill = None if value is None else rec.scalar(value, "pad", "value")
    out = movement.pad(x, widths, fill)
    return rec.emit(
        out, f"fd.ops.pad({arg.name}, {text}" + ("" if value is None else f", {value.name}") + ")"
    )


def cat(self, tensors, dim=0, manual_padding=False):
    """torch.cat along ``dim`` (inputs of one dtype, as nvFuser requires)."""
    rec = self._fd._recorder_for("cat")
    if not isinstance(tensors, list | tuple):
        from .arguments import type_error

        raise type_error("cat", "tensors", "a list of Tensors", tensors)
    xs = [rec.tensor(t, "cat", f"tensors[{k}]") for k, t in enumerate(tensors)]
    dim = int_arg(dim, "cat", "dim")
    manual = bool_arg(manual_padding, "cat", "manual_padding")
    out = movement.cat(xs, dim, manual)
    names = ", ".join(t.name for t in tensors)
    return rec.emit(out, f"fd.ops.cat([{names}], dim={dim}, manual_padding={manual})")


def select(self, arg, index, dim):
    """``arg.select(dim, index)``; ``index`` an int or a (runtime) Scalar."""
    rec = self._fd._recorder_for("select")
    x = rec.tensor(arg, "select")
    idx = rec.scalar(index, "select", "index") if isinstance(index, Scalar) else index
    dim = int_arg(dim, "select", "dim")
    out = movement.select(x, idx, dim)
    text = index.name if isinstance(index, Scalar) else str(index)
    return rec.emit(out, f"fd.ops.select({arg.name}, {text}, dim={dim})")


METHODS = {"slice": slice, "pad": pad, "cat": cat, "select": select}
__all__ = ["METHODS"]
