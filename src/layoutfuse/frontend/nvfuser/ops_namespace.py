"""``fd.ops``: nvFuser's operators, each a thin binding over a layoutfuse IR builder.

Every call checks its arguments (operands must be handles of this definition),
builds the IR through ``layoutfuse.ir.ops``, and records the one line nvFuser
would print for it. Pointwise operators are generated from the rows of
``layoutfuse.ir.ops.elementwise``, reductions from the rows of one result of
``layoutfuse.ir.ops.reductions`` (``welford``, ``var`` and ``var_mean`` are
written out: they take other arguments); an operator layoutfuse does not have is an
AttributeError, as an unknown attribute of nvFuser's ``Operators`` is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...dtypes import DataType
from ...errors import DefinitionError
from ...ir import ops as ir_ops
from ...ir.ops import scalars as ir_scalars
from ...ir.ops.elementwise import ROW_BY_NAME
from ...ir.ops.reductions import ROWS as REDUCTION_ROWS
from .handles import Scalar, Tensor, Vector
from .printer import format_list
from .recording import bind_arguments, int_list

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition

# nvFuser operator names that are another name for a row: ``mod`` is C's ``%``
# (truncating, like fmod).
ALIASES = {"mod": "fmod"}

# The reductions of one result (sum, prod, max, min), one operator each.
REDUCTIONS = tuple(r.name for r in REDUCTION_ROWS if r.n_results == 1)


def _check_dtype(dtype, op: str, allow_null: bool = False) -> DataType:
    if not isinstance(dtype, DataType):
        raise TypeError(f"{op}: dtype must be a DataType, got {dtype!r}")
    if dtype is DataType.Null and not allow_null:
        raise DefinitionError(f"{op}: dtype DataType.Null is not a valid dtype here")
    return dtype


def _check_bool(x, op: str, arg: str) -> bool:
    if not isinstance(x, bool):
        raise TypeError(f"{op}: {arg} must be a bool, got {x!r}")
    return x


def _pointwise_op(name: str, row_name: str, arity: int):
    def op(self, *args):
        if len(args) != arity:
            raise TypeError(f"fd.ops.{name}() takes {arity} operands ({len(args)} given)")
        rec = self._fd._recorder_for(name)
        vals = [rec.operand(a, name, f"operand {k + 1}") for k, a in enumerate(args)]
        out = ir_ops.pointwise(row_name, *vals)
        return rec.emit(out, f"fd.ops.{name}({', '.join(a.name for a in args)})")

    op.__name__ = name
    op.__doc__ = f"nvFuser's ``{name}``: {arity} Tensor or Scalar operands."
    return op


def _reduction_arguments(op: str, ndim: int, args: tuple, kwargs: dict):
    """nvFuser's three forms: (dtype), (dim: int, keepdim, dtype), (dims: list, keepdim, dtype)."""
    if (args and isinstance(args[0], DataType)) or (
        not args and "dim" not in kwargs and "dims" not in kwargs
    ):
        b = bind_arguments(op, ("dtype",), args, kwargs, {"dtype": DataType.Null})
        dims, keepdim = list(range(ndim)), False
    else:
        first = args[0] if args else kwargs.get("dim", kwargs.get("dims"))
        form = "dim" if isinstance(first, int) and not isinstance(first, bool) else "dims"
        b = bind_arguments(op, (form, "keepdim", "dtype"), args, kwargs,
                           {"keepdim": False, "dtype": DataType.Null})
        dims = [b["dim"]] if form == "dim" else int_list(b["dims"], op, "dims")
        keepdim = _check_bool(b["keepdim"], op, "keepdim")
    return dims, keepdim, _check_dtype(b["dtype"], op, allow_null=True)


def _reduction_op(name: str):
    def op(self, arg, *args, **kwargs):
        rec = self._fd._recorder_for(name)
        x = rec.tensor(arg, name)
        dims, keepdim, dtype = _reduction_arguments(name, x.ndim, args, kwargs)
        out = ir_ops.reduction(name, x, dims, keepdim, dtype)
        return rec.emit(out, f"fd.ops.{name}({arg.name}, dims={format_list(dims)}, "
                             f"keepdim={keepdim}, dtype={dtype!r})")

    op.__name__ = name
    op.__doc__ = (f"``{name}(arg, dtype=Null)``, ``{name}(arg, dim: int, keepdim=False, "
                  f"dtype=Null)`` or ``{name}(arg, dims: list, keepdim=False, dtype=Null)``.")
    return op


class Operators:
    """nvFuser's ``FusionDefinition.Operators``; ``fd.ops`` of one definition."""

    def __init__(self, fd: FusionDefinition):
        self._fd = fd

    def __getattr__(self, name: str):
        raise AttributeError(f"fd.ops has no operator {name!r}: layoutfuse does not support it")

    # --- pointwise with attributes --------------------------------------------------
    def cast(self, arg, dtype):
        rec = self._fd._recorder_for("cast")
        x = rec.operand(arg, "cast", "arg")
        dtype = _check_dtype(dtype, "cast")
        same = isinstance(arg, Tensor) and x.dtype is dtype
        out = ir_ops.set_(x) if same else ir_ops.cast(x, dtype)  # nvFuser: castOp -> set
        return rec.emit(out, f"fd.ops.cast({arg.name}, dtype={dtype!r})")

    def set(self, arg):
        return self._set("set", arg)

    def segment_set(self, arg):
        return self._set("segment_set", arg)

    def _set(self, name, arg):
        rec = self._fd._recorder_for(name)
        x = rec.operand(arg, name, "arg")
        out = ir_ops.set_(x) if isinstance(arg, Tensor) else x
        return rec.emit(out, f"fd.ops.{name}({arg.name})")

    # --- Welford family -------------------------------------------------------------------
    def var(self, arg, dims, correction, keepdim=False):
        rec = self._fd._recorder_for("var")
        x = rec.tensor(arg, "var")
        dims, correction, keepdim = self._norm_args("var", dims, correction, keepdim)
        out = ir_ops.var(x, dims, correction, keepdim)
        return rec.emit(out, f"fd.ops.var({arg.name}, dims={format_list(dims)}, "
                             f"correction={correction}, keepdim={keepdim})")

    def var_mean(self, arg, dims, correction=1, keepdim=False):
        """(var, mean) over ``dims``."""
        rec = self._fd._recorder_for("var_mean")
        x = rec.tensor(arg, "var_mean")
        dims, correction, keepdim = self._norm_args("var_mean", dims, correction, keepdim)
        var, mean = ir_ops.var_mean(x, dims, correction, keepdim)
        outs = [rec.new(Tensor, var), rec.new(Tensor, mean)]
        rec.record(outs, f"fd.ops.var_mean({arg.name}, dims={format_list(dims)}, "
                         f"correction={correction}, keepdim={keepdim})")
        return tuple(outs)

    def welford(self, arg, dims):
        """(avg, var_sum, n) over ``dims``."""
        rec = self._fd._recorder_for("welford")
        x = rec.tensor(arg, "welford")
        dims = int_list(dims, "welford", "dims")
        outs = [rec.new(Tensor, v) for v in ir_ops.welford(x, dims)]
        rec.record(outs, f"fd.ops.welford({arg.name}, dims={format_list(dims)})")
        return tuple(outs)

    @staticmethod
    def _norm_args(op, dims, correction, keepdim):
        dims = int_list(dims, op, "dims")
        if not isinstance(correction, int) or isinstance(correction, bool):
            raise TypeError(f"{op}: correction must be an int, got {correction!r}")
        return dims, correction, _check_bool(keepdim, op, "keepdim")

    # --- shape ops --------------------------------------------------------------------------
    def permute(self, arg, dims):
        rec = self._fd._recorder_for("permute")
        x = rec.tensor(arg, "permute")
        dims = int_list(dims, "permute", "dims")
        out = ir_ops.permute(x, dims)
        norm = [d % x.ndim for d in dims]
        return rec.emit(out, f"fd.ops.permute({arg.name}, dims={format_list(norm)})")

    def stride_order(self, arg, stride_order):
        """A copy of ``arg`` laid out densely in ``stride_order`` (0 = innermost)."""
        rec = self._fd._recorder_for("stride_order")
        x = rec.tensor(arg, "stride_order")
        order = int_list(stride_order, "stride_order", "stride_order")
        if len(order) != x.ndim:
            raise DefinitionError(f"stride_order: stride_order {order} has {len(order)} entries "
                                  f"but the input has rank {x.ndim}")
        out = ir_ops.stride_order(x, order)
        norm = [d % x.ndim for d in order]
        return rec.emit(out, f"fd.ops.stride_order({arg.name}, stride_order={format_list(norm)})")

    def reshape(self, arg, new_shape):
        rec = self._fd._recorder_for("reshape")
        x = rec.tensor(arg, "reshape")
        vec, text = rec.shape(new_shape, "reshape", "new_shape")
        out = ir_ops.reshape(x, vec)
        return rec.emit(out, f"fd.ops.reshape({arg.name}, new_shape={text})")

    def broadcast_in_dim(self, arg, shape, broadcast_dims):
        rec = self._fd._recorder_for("broadcast_in_dim")
        x = rec.tensor(arg, "broadcast_in_dim")
        bdims = int_list(broadcast_dims, "broadcast_in_dim", "broadcast_dims")
        vec, text = rec.shape(shape, "broadcast_in_dim")
        out = ir_ops.broadcast_in_dim(x, vec, bdims)
        return rec.emit(out, f"fd.ops.broadcast_in_dim({arg.name}, shape={text}, "
                             f"broadcast_dims={format_list(bdims)})")

    def broadcast(self, arg, is_broadcast_dim):
        rec = self._fd._recorder_for("broadcast")
        x = rec.tensor(arg, "broadcast")
        if not isinstance(is_broadcast_dim, list | tuple) or any(
            not isinstance(b, bool) for b in is_broadcast_dim
        ):
            raise TypeError(f"broadcast: is_broadcast_dim must be a list of bools, got "
                            f"{is_broadcast_dim!r}")
        flags = list(is_broadcast_dim)
        out = ir_ops.broadcast(x, flags)
        return rec.emit(out, f"fd.ops.broadcast({arg.name}, is_broadcast_dim={format_list(flags)})")

    def expand(self, arg, shape):
        rec = self._fd._recorder_for("expand")
        x = rec.tensor(arg, "expand")
        vec, text = rec.shape(shape, "expand")
        out = ir_ops.expand(x, vec)
        return rec.emit(out, f"fd.ops.expand({arg.name}, shape={text})")

    def squeeze(self, arg, dims, squeeze_expanded=False):
        rec = self._fd._recorder_for("squeeze")
        x = rec.tensor(arg, "squeeze")
        dims = int_list(dims, "squeeze", "dims")
        squeeze_expanded = _check_bool(squeeze_expanded, "squeeze", "squeeze_expanded")
        out = ir_ops.squeeze(x, dims, squeeze_expanded)
        return rec.emit(out, f"fd.ops.squeeze({arg.name}, dims={format_list(dims)}, "
                             f"squeeze_expanded={squeeze_expanded})")

    # --- creation -------------------------------------------------------------------------------
    def full(self, shape, fill_value, dtype):
        rec = self._fd._recorder_for("full")
        fill = rec.scalar(fill_value, "full", "fill_value")
        dtype = _check_dtype(dtype, "full")
        vec, text = rec.shape(shape, "full")
        out = ir_ops.full(vec, fill, dtype)
        return rec.emit(out, f"fd.ops.full(shape={text}, fill_value={fill_value.name}, "
                             f"dtype={dtype!r})")

    def iota(self, length, start=None, step=None, dtype=DataType.Int):
        rec = self._fd._recorder_for("iota")
        n = rec.scalar(length, "iota", "length")
        st = None if start is None else rec.scalar(start, "iota", "start")
        sp = None if step is None else rec.scalar(step, "iota", "step")
        dtype = _check_dtype(dtype, "iota")
        out = ir_ops.iota(n, st, sp, dtype)
        names = [h.name if h is not None else "None" for h in (length, start, step)]
        return rec.emit(out, f"fd.ops.iota({', '.join(names)}, dtype={dtype!r})")

    # --- size queries ---------------------------------------------------------------------------
    def shape(self, arg) -> Vector:
        rec = self._fd._recorder_for("shape")
        x = rec.tensor(arg, "shape")
        out = rec.new(Vector, ir_scalars.shape(x))
        rec.record([out], f"fd.ops.shape({arg.name})")
        return out

    def size(self, arg, dim) -> Scalar:
        rec = self._fd._recorder_for("size")
        x = rec.tensor(arg, "size")
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"size: dim must be an int, got {dim!r}")
        return rec.emit(ir_scalars.size(x, dim), f"fd.ops.size({arg.name}, dim={dim})")

    def at(self, arg, index) -> Scalar:
        rec = self._fd._recorder_for("at")
        if not isinstance(arg, Vector):
            raise TypeError(f"at: arg must be a Vector, got {type(arg).__name__} {arg!r}")
        rec._own(arg, "at", "arg")
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"at: index must be an int, got {index!r}")
        n = arg.size
        if not -n <= index < n:
            raise DefinitionError(f"at: index {index} is out of range for a Vector of size {n}")
        return rec.emit(arg._val.elements[index], f"fd.ops.at({arg.name}, index={index})")

    def tensor_sizes(self, arg) -> list[Scalar]:
        rec = self._fd._recorder_for("tensor_sizes")
        x = rec.tensor(arg, "tensor_sizes")
        outs = [rec.new(Scalar, ir_scalars.size(x, d)) for d in range(x.ndim)]
        rec.record(outs, f"fd.ops.tensor_sizes({arg.name})", trailing_comma=True)
        return outs


for _name, _row in ROW_BY_NAME.items():
    setattr(Operators, _name, _pointwise_op(_name, _name, _row.arity))
for _alias, _target in ALIASES.items():
    setattr(Operators, _alias, _pointwise_op(_alias, _target, ROW_BY_NAME[_target].arity))
for _name in REDUCTIONS:
    setattr(Operators, _name, _reduction_op(_name))
