"""Inputs and outputs of a definition: ``define_tensor``, ``define_scalar``,
``define_vector``, ``from_pytorch`` and ``add_output``, with nvFuser's overloads."""

from __future__ import annotations

import numbers
import warnings

import torch

from ...dtypes import COMPLEX, FLOATING, INTEGRAL, DataType, from_torch
from ...errors import DefinitionError, UnsupportedError, describe
from ...ir import Scalar as IrScalar
from ...ir import TensorView
from ...ir import ops as ir_ops
from ...ir.ops.shape import stride_order_to_allocation
from . import descriptors as desc
from .arguments import bind_arguments, bool_arg, dtype_arg, int_list, type_error
from .handles import Scalar, Tensor, Vector
from .printer import format_list, format_value
from .recording import _MISSING

_CANONICAL = ("shape", "contiguity", "dtype", "is_cpu", "stride_order")
_FROM_STRIDES = ("sizes", "strides", "dtype", "static_sizes", "is_cpu")


def _is_strides_form(args: tuple, kwargs: dict) -> bool:
    """The (sizes, strides) overload: named so, or a non-empty list of ints second."""
    if {"sizes", "strides", "static_sizes"} & set(kwargs):
        return True
    if {"shape", "contiguity", "stride_order"} & set(kwargs) or len(args) < 2:
        return False
    second = args[1]
    return (
        isinstance(second, list | tuple)
        and len(second) > 0
        and all(isinstance(v, int) and not isinstance(v, bool) for v in second)
    )


def constant_value(value, dtype: DataType | None):
    """``value`` converted to ``dtype`` (nvFuser's castToDtype), and the dtype."""
    if isinstance(value, bool):
        inferred = DataType.Bool
    elif isinstance(value, numbers.Integral):
        inferred = DataType.Int
    elif isinstance(value, numbers.Real):
        inferred = DataType.Double
    elif isinstance(value, numbers.Complex):
        inferred = DataType.ComplexDouble
    else:
        raise type_error("define_scalar", "value", "a bool, int, float or complex", value)
    dtype = inferred if dtype is None else dtype
    if dtype is DataType.Bool:
        return bool(value), dtype
    if inferred is DataType.ComplexDouble and dtype not in COMPLEX:
        raise DefinitionError(f"define_scalar: complex value {value!r} cannot have dtype {dtype!r}")
    if dtype in INTEGRAL:
        return int(value), dtype
    if dtype in FLOATING:
        return float(value), dtype
    if dtype in COMPLEX:
        return complex(value), dtype
    raise DefinitionError(f"define_scalar: invalid dtype {dtype!r}")


class DefineMixin:
    """The input and output methods of FusionDefinition."""

    def define_tensor(self, *args, **kwargs) -> Tensor:
        """``define_tensor(shape, contiguity, dtype=Float, is_cpu=False, stride_order=[])``,
        with contiguity a list (allocation order) or a bool, or
        ``define_tensor(sizes, strides, dtype=Float, static_sizes=False, is_cpu=False)``."""
        rec = self._recorder_for("define_tensor")
        if _is_strides_form(args, kwargs):
            b = bind_arguments(
                "define_tensor",
                _FROM_STRIDES,
                args,
                kwargs,
                {"dtype": DataType.Float, "static_sizes": False, "is_cpu": False},
            )
            sizes = int_list(b["sizes"], "define_tensor", "sizes")
            strides = int_list(b["strides"], "define_tensor", "strides")
            if len(sizes) != len(strides):
                raise DefinitionError(
                    f"define_tensor: {len(sizes)} sizes but {len(strides)} strides"
                )
            contiguity, stride_order = desc.compute_tensor_descriptor(sizes, strides)
            shape = desc.builder_sizes(sizes, b["static_sizes"])
        else:
            b = bind_arguments(
                "define_tensor",
                _CANONICAL,
                args,
                kwargs,
                {"contiguity": False, "dtype": DataType.Float, "is_cpu": False, "stride_order": ()},
            )
            if not isinstance(b["shape"], list | tuple):
                raise type_error("define_tensor", "shape", "a list of ints", b["shape"])
            shape = list(b["shape"])
            contiguity = b["contiguity"]
            stride_order = int_list(b["stride_order"], "define_tensor", "stride_order")
        shape = desc.check_shape(shape)
        so = desc.normalize_stride_order(stride_order, len(shape))
        if isinstance(contiguity, bool):
            contiguity = desc.contiguity_from_bool(shape, so, contiguity)
        elif not isinstance(contiguity, list | tuple):
            raise type_error("define_tensor", "contiguity", "a list or a bool", contiguity)
        contiguity = desc.check_contiguity(contiguity, shape, so)
        dtype = dtype_arg(b["dtype"], "define_tensor")
        if dtype is DataType.Null:
            raise DefinitionError("define_tensor: dtype DataType.Null is not a tensor dtype")
        is_cpu = bool_arg(b["is_cpu"], "define_tensor", "is_cpu")
        if is_cpu and shape:
            raise DefinitionError(
                "define_tensor: CPU non-scalar tensor is not supported! "
                f"(is_cpu=True with shape {shape})"
            )
        tv = desc.build_input_tensor(rec.fusion, shape, contiguity, dtype, so)
        rec.fusion.add_input(tv)
        out = rec.new(Tensor, tv)
        rec.input_states.append(out.index)
        order_text = f", stride_order={format_list(stride_order)}" if stride_order else ""
        rec.record(
            [out],
            f"fd.define_tensor(shape={format_list(shape)}, "
            f"contiguity={format_list(contiguity)}, dtype={dtype!r}, "
            f"is_cpu={is_cpu}{order_text})",
        )
        return out

    def from_pytorch(self, tensor: torch.Tensor, static_sizes: bool = False) -> Tensor:
        """An input like ``tensor``: its dtype, its sizes (-1 unless 1, or static) and
        its strides' contiguity and order.

        Unlike nvFuser, CPU tensors are accepted (layoutfuse can run on the CPU);
        only a 0-dim CPU tensor is defined with ``is_cpu=True``.
        """
        if not isinstance(tensor, torch.Tensor):
            raise type_error("from_pytorch", "tensor", "a torch.Tensor", tensor)
        try:
            dtype = from_torch(tensor.dtype)
        except ValueError:
            raise UnsupportedError(
                f"from_pytorch: tensor has dtype {tensor.dtype}, which has "
                f"no DataType ({describe(tensor)})"
            ) from None
        return self.define_tensor(
            sizes=tuple(tensor.size()),
            strides=tuple(tensor.stride()),
            dtype=dtype,
            static_sizes=static_sizes,
            is_cpu=tensor.is_cpu and tensor.dim() == 0,
        )

    def define_scalar(self, *args, **kwargs) -> Scalar:
        """``define_scalar(dtype=Double)``: a scalar input; ``define_scalar(value, dtype=None)``:
        a constant (dtype inferred: bool Bool, int Int, float Double, complex ComplexDouble),
        or an input when ``value`` is None."""
        rec = self._recorder_for("define_scalar")
        b = bind_arguments(
            "define_scalar", ("value", "dtype"), args, kwargs, {"value": _MISSING, "dtype": None}
        )
        value, dtype = b["value"], b["dtype"]
        if isinstance(value, DataType) and dtype is None:
            value, dtype = _MISSING, value
        if dtype is not None:
            dtype = dtype_arg(dtype, "define_scalar")
        if value is _MISSING or value is None:
            dtype = DataType.Double if dtype is None else dtype
            if dtype is DataType.Null:
                raise DefinitionError("define_scalar: dtype DataType.Null is not a scalar dtype")
            val = IrScalar(rec.fusion, dtype)
            rec.fusion.add_input(val)
            out = rec.new(Scalar, val)
            rec.input_states.append(out.index)
            rec.record([out], f"fd.define_scalar(None, dtype={dtype!r})")
            return out
        value, dtype = constant_value(value, dtype)
        out = rec.new(Scalar, IrScalar(rec.fusion, dtype, value))
        rec.record([out], f"fd.define_scalar({format_value(value)}, dtype={dtype!r})")
        return out

    def define_constant(self, value, dtype: DataType | None = None) -> Scalar:
        """Deprecated in nvFuser in favor of ``define_scalar(value, dtype)``."""
        warnings.warn(
            "Deprecating define_constant functions in favor of define_scalar for constants.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.define_scalar(value, dtype)

    def define_vector(self, *args, **kwargs) -> Vector:
        """``define_vector(size)``: ``size`` Int inputs, passed to ``execute`` as one list;
        ``define_vector(values, dtype=Int)``: a vector of ints (>= -1) and Scalars."""
        rec = self._recorder_for("define_vector")
        first = args[0] if args else kwargs.get("size", kwargs.get("values"))
        if isinstance(first, int) and not isinstance(first, bool):
            size = bind_arguments("define_vector", ("size",), args, kwargs, {})["size"]
            if size < 0:
                raise DefinitionError(f"define_vector: size must be >= 0, got {size}")
            elements = []
            for _ in range(size):
                val = IrScalar(rec.fusion, DataType.Int)
                rec.fusion.add_input(val)
                s = rec.new(Scalar, val)
                rec.input_states.append(s.index)
                rec.record([s], "fd.define_scalar(None, dtype=DataType.Int)")
                elements.append(s)
            values = elements
        else:
            b = bind_arguments(
                "define_vector", ("values", "dtype"), args, kwargs, {"dtype": DataType.Int}
            )
            if b["dtype"] is not DataType.Int:
                raise DefinitionError(
                    f"define_vector: only DataType.Int vectors are supported, got {b['dtype']!r}"
                )
            values = b["values"]
        vec, text = rec.vector_of(values, "define_vector", "values")
        rec.record([vec], f"fd.define_vector({text}, dtype=DataType.Int)")
        return vec

    def add_output(self, output, alias_input=None, stride_order=None) -> None:
        """Mark ``output`` as a fusion output.

        ``alias_input``: the result is written into that input and not returned.
        ``stride_order``: pins the output's layout (same mapping as define_tensor's),
        by giving the output tensor that allocation domain.
        """
        rec = self._recorder_for("add_output")
        if isinstance(alias_input, list | tuple) and stride_order is None:
            alias_input, stride_order = None, alias_input  # add_output(T, [1, 0])
        order = [] if stride_order is None else int_list(stride_order, "add_output", "stride_order")
        if isinstance(output, Scalar):
            if alias_input is not None or order:
                raise DefinitionError(
                    "add_output: a Scalar output cannot alias an input or have a stride_order"
                )
            rec.fusion.add_output(rec.scalar(output, "add_output", "output"))
            rec.output_states.append(output.index)
            rec.record([], f"fd.add_output({output.name})")
            return
        tv = rec.tensor(output, "add_output", "output")
        if alias_input is not None:
            if order:
                raise DefinitionError(
                    "add_output: stride_order can't be dictated for aliased outputs"
                )
            target = rec.tensor(alias_input, "add_output", "alias_input")
            if not any(v is target for v in rec.fusion.inputs):
                raise DefinitionError(
                    f"add_output: alias_input {alias_input.name} is not a fusion input"
                )
            rec.fusion.add_output(tv, alias_input=target)
            rec.record([], f"fd.add_output({output.name}, {alias_input.name})")
            return
        if order:
            tv = self._pin_layout(rec, tv, order)
        rec.fusion.add_output(tv)
        rec.output_states.append(output.index)
        order_text = f", stride_order={format_list(order)}" if order else ""
        rec.record([], f"fd.add_output({output.name}{order_text})")

    @staticmethod
    def _pin_layout(rec, tv: TensorView, order: list[int]) -> TensorView:
        """Give ``tv`` the allocation domain of ``order``; its reduction axes stay in the
        allocation domain, unallocated. An input, or a tensor that is already an output,
        keeps its own layout: the output is then a copy (``set``) of it."""
        n = tv.ndim
        if len(order) != n or sorted(order) != list(range(n)):
            raise DefinitionError(
                f"add_output: stride_order {order} must be a permutation of "
                f"range({n}) (the output's rank)"
            )
        fusion = tv.fusion
        if any(v is tv for v in fusion.inputs) or any(v is tv for v in fusion.output_vals):
            tv = ir_ops.set_(tv)
        alloc = stride_order_to_allocation(list(tv.shape_domain), order, "add_output")
        tv.set_allocation_domain(alloc, True)
        return tv
