"""The state of one definition in progress: the IR being built, the printed records,
and the numbering of handles.

nvFuser numbers every state (tensor, scalar, vector) with one counter, in the
order they are created; states defined inline (the ints of a shape list passed
to ``reshape``) take a number but print inside the record that uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ...dtypes import DataType
from ...errors import DefinitionError
from ...ir import Fusion, FusionGuard, TensorView
from ...ir import Scalar as IrScalar
from ...ir import Vector as IrVector
from .arguments import is_int, type_error
from .handles import Scalar, Tensor, Vector, _Handle
from .printer import format_list, record_line

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition

_MISSING = object()


def _hint(x) -> str:
    """What to do instead, for the usual mistakes: a torch tensor or a Python number where a
    handle goes."""
    if isinstance(x, torch.Tensor):
        return (
            "; define a fusion input with fd.define_tensor or fd.from_pytorch and pass "
            "the torch tensor to execute"
        )
    if isinstance(x, bool | int | float | complex):
        return "; Python numbers are not accepted, define them with fd.define_scalar"
    return ""


class Recorder:
    def __init__(self, fd: FusionDefinition):
        self.fd = fd
        self.fusion = Fusion()
        self.lines: list[str] = []
        self.num_states = 0
        self.input_states: list[int] = []
        self.output_states: list[int] = []
        self.guard = FusionGuard(self.fusion)

    # --- states and records ------------------------------------------------------------
    def new(self, cls: type[_Handle], val) -> Any:
        handle = cls(self.fd, self.num_states, val)
        self.num_states += 1
        return handle

    def record(self, outputs: list, call: str, trailing_comma: bool = False) -> None:
        self.lines.append(record_line(outputs, call, trailing_comma))

    def emit(self, val, call: str):
        """A handle for the IR value ``val`` (Tensor or Scalar), recorded as ``call``."""
        handle = self.new(Tensor if isinstance(val, TensorView) else Scalar, val)
        self.record([handle], call)
        return handle

    # --- arguments ---------------------------------------------------------------------------
    def _own(self, x: _Handle, op: str, arg: str) -> None:
        if x._fd is not self.fd:
            raise DefinitionError(f"{op}: {arg} {x.name} belongs to another FusionDefinition")

    def tensor(self, x, op: str, arg: str = "arg") -> TensorView:
        if not isinstance(x, Tensor):
            raise type_error(op, arg, "a Tensor", x, _hint(x))
        self._own(x, op, arg)
        return x._val

    def scalar(self, x, op: str, arg: str) -> IrScalar:
        if not isinstance(x, Scalar):
            raise type_error(op, arg, "a Scalar", x, _hint(x))
        self._own(x, op, arg)
        return x._val

    def operand(self, x, op: str, arg: str):
        if not isinstance(x, Tensor | Scalar):
            raise type_error(op, arg, "a Tensor or Scalar", x, _hint(x))
        self._own(x, op, arg)
        return x._val

    def vector(self, x, op: str, arg: str) -> IrVector:
        if not isinstance(x, Vector):
            raise type_error(op, arg, "a Vector", x)
        self._own(x, op, arg)
        return x._val

    def vector_of(self, values, op: str, arg: str) -> tuple[Vector, str]:
        """A Vector from a list/tuple of ints and Scalars, and its printed list.

        Each int becomes an inline constant state (numbered, printed in place).
        """
        if not isinstance(values, list | tuple):
            raise type_error(op, arg, "a Vector, list or tuple of ints and Scalars", values)
        elements, printed = [], []
        for k, v in enumerate(values):
            if isinstance(v, Scalar):
                self._own(v, op, arg)
                elements.append(v._val)
                printed.append(v)
            elif is_int(v):
                if v < -1:
                    raise DefinitionError(
                        f"{op}: the value {v} at index {k} of {arg} was neither symbolic(-1), "
                        f"zero_element(0), broadcast(1), or static(>1)"
                    )
                const = IrScalar(self.fusion, DataType.Int, v)
                self.new(Scalar, const)  # an inline state: numbered, never printed alone
                elements.append(const)
                printed.append(v)
            else:
                raise type_error(op, f"{arg}[{k}]", "an int or a Scalar", v)
        vec = self.new(Vector, IrVector(self.fusion, elements))
        return vec, format_list(printed)

    def shape(self, x, op: str, arg: str = "shape") -> tuple[IrVector, str]:
        """A shape argument (Vector, list or tuple) as an IR Vector and its printed form."""
        if isinstance(x, Vector):
            self._own(x, op, arg)
            return x._val, x.name
        vec, text = self.vector_of(x, op, arg)  # an inline Vector state
        return vec._val, text
