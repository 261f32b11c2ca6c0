"""``fd.ops`` bindings of the per-row ops and triu (``layoutfuse.ir.ops.scans``), in
nvFuser's argument forms (its legacy Python frontend's bindings):
``cumsum(arg, dim)``, ``argsort(arg, dim, descending=False, stable=False)``,
``topk(arg, k, dim=-1, largest=True, sorted=False)`` (``k`` a Scalar; a Python int is
taken too) -> (values, indices), and ``triu(input, diagonal=0)``."""

from __future__ import annotations

from ...ir.ops import scans as ir_scans
from .arguments import bool_arg, int_arg
from .handles import Scalar, Tensor


def cumsum(self, arg, dim):
    """Inclusive prefix sum along ``dim`` (integers and bools give Int, as torch)."""
    rec = self._fd._recorder_for("cumsum")
    x = rec.tensor(arg, "cumsum")
    dim = int_arg(dim, "cumsum", "dim")
    return rec.emit(ir_scans.cumsum(x, dim), f"fd.ops.cumsum({arg.name}, dim={dim})")


def argsort(self, arg, dim, descending=False, stable=False):
    """Int indices that sort ``arg`` along ``dim`` (always stable; NaN is the largest)."""
    rec = self._fd._recorder_for("argsort")
    x = rec.tensor(arg, "argsort")
    dim = int_arg(dim, "argsort", "dim")
    descending = bool_arg(descending, "argsort", "descending")
    stable = bool_arg(stable, "argsort", "stable")
    out = ir_scans.argsort(x, dim, descending, stable)
    return rec.emit(
        out,
        f"fd.ops.argsort({arg.name}, dim={dim}, descending={descending}, stable={stable})",
    )


def topk(self, arg, k, dim=-1, largest=True, sorted=False):
    """(values, Int indices) of the ``k`` largest (or smallest) along ``dim``, sorted."""
    rec = self._fd._recorder_for("topk")
    x = rec.tensor(arg, "topk")
    kv = rec.scalar(k, "topk", "k") if isinstance(k, Scalar) else int_arg(k, "topk", "k")
    dim = int_arg(dim, "topk", "dim")
    largest = bool_arg(largest, "topk", "largest")
    sorted = bool_arg(sorted, "topk", "sorted")
    values, indices = ir_scans.topk(x, kv, dim, largest, sorted)
    outs = [rec.new(Tensor, values), rec.new(Tensor, indices)]
    k_text = k.name if isinstance(k, Scalar) else str(k)
    rec.record(
        outs,
        f"fd.ops.topk({arg.name}, {k_text}, dim={dim}, largest={largest}, sorted={sorted})",
    )
    return tuple(outs)


def triu(self, input, diagonal=0):
    """``input`` with the elements below diagonal ``diagonal`` of its last two dims zeroed."""
    rec = self._fd._recorder_for("triu")
    x = rec.tensor(input, "triu", "input")
    diagonal = int_arg(diagonal, "triu", "diagonal")
    out = ir_scans.triu(x, diagonal)
    return rec.emit(out, f"fd.ops.triu({input.name}, diagonal={diagonal})")


OPERATORS = {"cumsum": cumsum, "argsort": argsort, "topk": topk, "triu": triu}
