"""``fd.ops`` indexed reads (index_select, gather, take_along_axis, embedding_fwd) and
writes (scatter, index_put_accumulate), in nvFuser's argument forms (fe9addc91's
python_bindings.cpp); attached to ``Operators`` by ``ops_namespace``."""

from __future__ import annotations

from ...ir import ops as ir_ops
from .arguments import int_arg, type_error
from .handles import Scalar


def _read(name: str, builder, first: str):
    def op(self, arg, index, dim):
        rec = self._fd._recorder_for(name)
        x = rec.tensor(arg, name, first)
        i = rec.tensor(index, name, "index")
        d = int_arg(dim, name, "dim")
        out = builder(x, i, d)
        return rec.emit(out, f"fd.ops.{name}({arg.name}, {index.name}, dim={d})")

    op.__name__ = name
    op.__doc__ = f"nvFuser's ``{name}``: {builder.__module__}.{builder.__name__} (see there)."
    return op


index_select = _read("index_select", ir_ops.index_select, "arg")
gather = _read("gather", ir_ops.gather, "arg1")
take_along_axis = _read("take_along_axis", ir_ops.take_along_axis, "arg1")

_EMBEDDING_OPTIONS = ("padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")


def embedding_fwd(
    self,
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=None,
    scale_grad_by_freq=None,
    sparse=None,
):
    """torch.nn.functional.embedding's forward: ``weight``'s rows at ``input``'s values.
    padding_idx, scale_grad_by_freq and sparse shape only the backward; max_norm (which
    renormalizes weight in place) is refused."""
    rec = self._fd._recorder_for("embedding_fwd")
    x = rec.tensor(input, "embedding_fwd", "input")
    w = rec.tensor(weight, "embedding_fwd", "weight")
    options = (padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
    for name, v in zip(_EMBEDDING_OPTIONS, options):
        if v is not None and not isinstance(v, Scalar):
            raise type_error("embedding_fwd", name, "a Scalar or None", v)
        if v is not None:
            rec.scalar(v, "embedding_fwd", name)
    out = ir_ops.embedding(x, w, max_norm=max_norm)
    names = ", ".join(v.name if v is not None else "None" for v in options)
    return rec.emit(out, f"fd.ops.embedding_fwd({input.name}, {weight.name}, {names})")


def scatter(self, arg1, index, src, dim):
    """torch.scatter: ``arg1`` with ``src`` (a Tensor or a Scalar) written at ``index``."""
    rec = self._fd._recorder_for("scatter")
    x = rec.tensor(arg1, "scatter", "arg1")
    i = rec.tensor(index, "scatter", "index")
    v = rec.operand(src, "scatter", "src")
    d = int_arg(dim, "scatter", "dim")
    out = ir_ops.scatter(x, i, v, d)
    return rec.emit(out, f"fd.ops.scatter({arg1.name}, {index.name}, {src.name}, dim={d})")


def index_put_accumulate(self, acc, index, value):
    """``acc.index_put([index], value, accumulate=True)`` (out of place)."""
    rec = self._fd._recorder_for("index_put_accumulate")
    a = rec.tensor(acc, "index_put_accumulate", "acc")
    i = rec.tensor(index, "index_put_accumulate", "index")
    v = rec.tensor(value, "index_put_accumulate", "value")
    out = ir_ops.index_put_accumulate(a, i, v)
    return rec.emit(out, f"fd.ops.index_put_accumulate({acc.name}, {index.name}, {value.name})")


READS = {
    "index_select": index_select,
    "gather": gather,
    "take_along_axis": take_along_axis,
    "embedding_fwd": embedding_fwd,
    "scatter": scatter,
    "index_put_accumulate": index_put_accumulate,
}
