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

import inspect
from typing import TYPE_CHECKING

from ...dtypes import DataType
from ...errors import ArgumentTypeError, DefinitionError
from ...ir import ops as ir_ops
from ...ir.ops import scalars as ir_scalars
from ...ir.ops.elementwise import ROW_BY_NAME
from ...ir.ops.reductions import REDUCTION_DIMS_RULE
from ...ir.ops.reductions import ROWS as REDUCTION_ROWS
from .arguments import (
    bind_arguments,
    bool_arg,
    bool_list,
    dtype_arg,
    int_arg,
    int_list,
    is_int,
    type_error,
)
from .handles import Scalar, Tensor, Vector
from .printer import format_list
from .random_ops import RANDOM_OPERATORS

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition

# nvFuser operator names that are another name for a row: ``mod`` is C's ``%``
# (truncating, like fmod).
ALIASES = {"mod": "fmod"}

# The reductions of one result (sum, prod, max, min), one operator each, and their rows' docs.
REDUCTIONS = {r.name: r.doc for r in REDUCTION_ROWS if r.n_results == 1}


def _dtype(dtype, op: str, allow_null: bool = False) -> DataType:
    dtype = dtype_arg(dtype, op)
    if dtype is DataType.Null and not allow_null:
        raise DefinitionError(f"{op}: dtype DataType.Null is not a valid dtype here")
    return dtype


def _operand_names(arity: int) -> tuple[str, ...]:
    return ("arg",) if arity == 1 else tuple(f"arg{k + 1}" for k in range(arity))


def _pointwise_op(name: str, row_name: str, arity: int, scalars: tuple[int, ...] = ()):
    """``fd.ops.<name>``: ``arity`` Tensor or Scalar operands, Scalars only at ``scalars``
    (nvFuser's binding of an alpha or a threshold)."""
    names = _operand_names(arity)

    def op(self, *args):
        if len(args) != arity:
            raise ArgumentTypeError(
                f"fd.ops.{name}() takes {arity} operands ({', '.join(names)}), {len(args)} given"
            )
        rec = self._fd._recorder_for(name)
        vals = [
            rec.scalar(a, name, n) if k in scalars else rec.operand(a, name, n)
            for k, (a, n) in enumerate(zip(args, names))
        ]
        out = ir_ops.pointwise(row_name, *vals)
        return rec.emit(out, f"fd.ops.{name}({', '.join(a.name for a in args)})")

    op.__name__ = name
    only = f" ({', '.join(names[k] for k in scalars)}: Scalar)" if scalars else ""
    op.__doc__ = f"nvFuser's ``{name}``: {arity} Tensor or Scalar operands{only}."
    op.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
        + [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names]
    )
    return op


def _reduction_arguments(op: str, args: tuple, kwargs: dict):
    """nvFuser's three forms: (dtype), (dim: int, keepdim, dtype), (dims: list, keepdim, dtype).

    As in nvFuser's bindings, the form is chosen by the keyword (``dim=`` or ``dims=``) or by
    the type of the second argument; ``dims`` takes a list only (``dims=1`` is refused with
    the two spellings that work). Returns (dims or None for every dim, keepdim, dtype).
    """
    unknown = sorted(set(kwargs) - {"dim", "dims", "keepdim", "dtype"})
    if unknown or {"dim", "dims"} <= set(kwargs):
        got = f"an unexpected keyword argument {unknown[0]!r}" if unknown else "both dim and dims"
        raise ArgumentTypeError(
            f"{op}() got {got}; it takes dims (a list of ints) or dim (an "
            f"int), then keepdim and dtype"
        )
    first = args[0] if args else None
    if "dims" in kwargs or (args and not is_int(first) and not isinstance(first, DataType)):
        b = bind_arguments(
            op,
            ("dims", "keepdim", "dtype"),
            args,
            kwargs,
            {"keepdim": False, "dtype": DataType.Null},
        )
        if is_int(b["dims"]):
            raise type_error(
                op,
                "dims",
                "a list of ints",
                b["dims"],
                f"; for one dim pass dims=[{b['dims']}] or dim={b['dims']}",
            )
        dims = int_list(b["dims"], op, "dims")
    elif "dim" in kwargs or is_int(first):
        b = bind_arguments(
            op,
            ("dim", "keepdim", "dtype"),
            args,
            kwargs,
            {"keepdim": False, "dtype": DataType.Null},
        )
        dims = [int_arg(b["dim"], op, "dim")]
    else:
        b = bind_arguments(op, ("dtype",), args, kwargs, {"dtype": DataType.Null})
        b["keepdim"], dims = False, None
    return dims, bool_arg(b["keepdim"], op, "keepdim"), _dtype(b["dtype"], op, allow_null=True)


def _reduction_op(name: str, doc: str):
    def op(self, arg, *args, **kwargs):
        rec = self._fd._recorder_for(name)
        x = rec.tensor(arg, name)
        dims, keepdim, dtype = _reduction_arguments(name, args, kwargs)
        out = ir_ops.reduction(name, x, dims, keepdim, dtype)
        dims = list(range(x.ndim)) if dims is None else dims
        return rec.emit(
            out,
            f"fd.ops.{name}({arg.name}, dims={format_list(dims)}, "
            f"keepdim={keepdim}, dtype={dtype!r})",
        )

    op.__name__ = name
    op.__doc__ = (
        f"``{name}(arg, dtype=Null)`` (every dim), ``{name}(arg, dim: int, "
        f"keepdim=False, dtype=Null)`` or ``{name}(arg, dims: list, keepdim=False, "
        f"dtype=Null)``: {doc}.\n\n{REDUCTION_DIMS_RULE}"
    )
    op.__signature__ = inspect.Signature(
        [  # type: ignore[attr-defined]
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("arg", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("dims", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("keepdim", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False),
            inspect.Parameter(
                "dtype", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=DataType.Null
            ),
        ]
    )
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
        dtype = _dtype(dtype, "cast")
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
        """The variance over ``dims`` with ``correction`` (required, as in nvFuser)."""
        rec = self._fd._recorder_for("var")
        x = rec.tensor(arg, "var")
        dims, correction, keepdim = self._norm_args("var", dims, correction, keepdim)
        out = ir_ops.var(x, dims, correction, keepdim)
        return rec.emit(
            out,
            f"fd.ops.var({arg.name}, dims={format_list(dims)}, "
            f"correction={correction}, keepdim={keepdim})",
        )

    def var_mean(self, arg, dims, correction=1, keepdim=False):
        """(var, mean) over ``dims``."""
        rec = self._fd._recorder_for("var_mean")
        x = rec.tensor(arg, "var_mean")
        dims, correction, keepdim = self._norm_args("var_mean", dims, correction, keepdim)
        var, mean = ir_ops.var_mean(x, dims, correction, keepdim)
        outs = [rec.new(Tensor, var), rec.new(Tensor, mean)]
        rec.record(
            outs,
            f"fd.ops.var_mean({arg.name}, dims={format_list(dims)}, "
            f"correction={correction}, keepdim={keepdim})",
        )
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
        return (
            int_list(dims, op, "dims"),
            int_arg(correction, op, "correction"),
            bool_arg(keepdim, op, "keepdim"),
        )

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
            raise DefinitionError(
                f"stride_order: stride_order {order} has {len(order)} entries "
                f"but the input has rank {x.ndim}"
            )
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
        return rec.emit(
            out,
            f"fd.ops.broadcast_in_dim({arg.name}, shape={text}, "
            f"broadcast_dims={format_list(bdims)})",
        )

    def broadcast(self, arg, is_broadcast_dim):
        rec = self._fd._recorder_for("broadcast")
        x = rec.tensor(arg, "broadcast")
        flags = bool_list(is_broadcast_dim, "broadcast", "is_broadcast_dim")
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
        squeeze_expanded = bool_arg(squeeze_expanded, "squeeze", "squeeze_expanded")
        out = ir_ops.squeeze(x, dims, squeeze_expanded)
        return rec.emit(
            out,
            f"fd.ops.squeeze({arg.name}, dims={format_list(dims)}, "
            f"squeeze_expanded={squeeze_expanded})",
        )

    # --- creation -------------------------------------------------------------------------------
    def full(self, shape, fill_value, dtype):
        rec = self._fd._recorder_for("full")
        fill = rec.scalar(fill_value, "full", "fill_value")
        dtype = _dtype(dtype, "full")
        vec, text = rec.shape(shape, "full")
        out = ir_ops.full(vec, fill, dtype)
        return rec.emit(
            out, f"fd.ops.full(shape={text}, fill_value={fill_value.name}, dtype={dtype!r})"
        )

    def iota(self, length, start=None, step=None, dtype=DataType.Int):
        rec = self._fd._recorder_for("iota")
        n = rec.scalar(length, "iota", "length")
        st = None if start is None else rec.scalar(start, "iota", "start")
        sp = None if step is None else rec.scalar(step, "iota", "step")
        dtype = _dtype(dtype, "iota")
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
        dim = int_arg(dim, "size", "dim")
        return rec.emit(ir_scalars.size(x, dim), f"fd.ops.size({arg.name}, dim={dim})")

    def at(self, arg, index) -> Scalar:
        rec = self._fd._recorder_for("at")
        vec = rec.vector(arg, "at", "arg")
        index = int_arg(index, "at", "index")
        n = vec.size
        if not -n <= index < n:
            raise DefinitionError(f"at: index {index} is out of range for a Vector of size {n}")
        return rec.emit(vec.elements[index], f"fd.ops.at({arg.name}, index={index})")

    def tensor_sizes(self, arg) -> list[Scalar]:
        rec = self._fd._recorder_for("tensor_sizes")
        x = rec.tensor(arg, "tensor_sizes")
        outs = [rec.new(Scalar, ir_scalars.size(x, d)) for d in range(x.ndim)]
        rec.record(outs, f"fd.ops.tensor_sizes({arg.name})", trailing_comma=True)
        return outs


for _name, _row in ROW_BY_NAME.items():
    setattr(Operators, _name, _pointwise_op(_name, _name, _row.arity, _row.scalar_operands))
for _alias, _target in ALIASES.items():
    setattr(Operators, _alias, _pointwise_op(_alias, _target, ROW_BY_NAME[_target].arity))
for _name, _doc in REDUCTIONS.items():
    setattr(Operators, _name, _reduction_op(_name, _doc))
for _method in (Operators.var, Operators.var_mean, Operators.welford):
    _method.__doc__ = f"{_method.__doc__}\n\n{REDUCTION_DIMS_RULE}"
for _name, _op in RANDOM_OPERATORS.items():  # uniform, normal, rand_like, randn_like
    setattr(Operators, _name, _op)

# --- library ops and batch_norm (frontend/nvfuser/library_ops.py) ------------------------------
from .library_ops import OPERATORS as _LIBRARY_OPERATORS  # noqa: E402

for _name, _fn in _LIBRARY_OPERATORS.items():
    setattr(Operators, _name, _fn)

# data movement (slice, pad, cat, select): their methods live in movement_ops.py
from .movement_ops import METHODS as _MOVEMENT_METHODS  # noqa: E402

for _name, _fn in _MOVEMENT_METHODS.items():
    setattr(Operators, _name, _fn)

# the per-row ops (cumsum, argsort, topk) and triu: ``ops_scan``
from .ops_scan import OPERATORS as _SCAN_OPERATORS  # noqa: E402

for _name, _op in _SCAN_OPERATORS.items():
    setattr(Operators, _name, _op)
