"""The state of one definition in progress: the IR being built, the printed records,
and the numbering of handles.

nvFuser numbers every state (tensor, scalar, vector) with one counter, in the
order they are created; states defined inline (the ints of a shape list passed
to ``reshape``) take a number but print inside the record that uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...dtypes import DataType
from ...errors import DefinitionError
from ...ir import Fusion, FusionGuard, TensorView
from ...ir import Scalar as IrScalar
from ...ir import Vector as IrVector
from .handles import Scalar, Tensor, Vector, _Handle
from .printer import format_list, record_line

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition

_MISSING = object()


def bind_arguments(op: str, names: tuple[str, ...], args: tuple, kwargs: dict,
                   defaults: dict[str, Any]) -> dict[str, Any]:
    """Python's argument binding for an overload given as parameter names and defaults."""
    if len(args) > len(names):
        raise TypeError(f"{op}() takes at most {len(names)} arguments ({len(args)} given)")
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise TypeError(f"{op}() got an unexpected keyword argument {k!r}")
        if k in bound:
            raise TypeError(f"{op}() got multiple values for argument {k!r}")
        bound[k] = v
    for k in names:
        if k not in bound:
            if k not in defaults:
                raise TypeError(f"{op}() missing required argument {k!r}")
            bound[k] = defaults[k]
    return bound


def int_list(x, op: str, arg: str) -> list[int]:
    if not isinstance(x, list | tuple) or any(
        not isinstance(v, int) or isinstance(v, bool) for v in x
    ):
        raise TypeError(f"{op}: {arg} must be a list of ints, got {x!r}")
    return list(x)


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
            raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__} {x!r}")
        self._own(x, op, arg)
        return x._val

    def scalar(self, x, op: str, arg: str) -> IrScalar:
        if not isinstance(x, Scalar):
            raise TypeError(f"{op}: {arg} must be a Scalar (define Python numbers with "
                            f"fd.define_scalar), got {type(x).__name__} {x!r}")
        self._own(x, op, arg)
        return x._val

    def operand(self, x, op: str, arg: str):
        if not isinstance(x, Tensor | Scalar):
            raise TypeError(f"{op}: {arg} must be a Tensor or Scalar, got {type(x).__name__} "
                            f"{x!r}; Python numbers are not accepted, define them with "
                            f"fd.define_scalar")
        self._own(x, op, arg)
        return x._val

    def vector_of(self, values, op: str, arg: str) -> tuple[Vector, str]:
        """A Vector from a list/tuple of ints and Scalars, and its printed list.

        Each int becomes an inline constant state (numbered, printed in place).
        """
        if not isinstance(values, list | tuple):
            raise TypeError(f"{op}: {arg} must be a Vector, list or tuple, got "
                            f"{type(values).__name__} {values!r}")
        elements, printed = [], []
        for k, v in enumerate(values):
            if isinstance(v, Scalar):
                self._own(v, op, arg)
                elements.append(v._val)
                printed.append(v)
            elif isinstance(v, int) and not isinstance(v, bool):
                if v < -1:
                    raise DefinitionError(
                        f"{op}: the value {v} at index {k} of {arg} was neither symbolic(-1), "
                        f"zero_element(0), broadcast(1), or static(>1)")
                const = IrScalar(self.fusion, DataType.Int, v)
                self.new(Scalar, const)  # an inline state: numbered, never printed alone
                elements.append(const)
                printed.append(v)
            else:
                raise TypeError(f"{op}: {arg}[{k}] must be an int or a Scalar, got "
                                f"{type(v).__name__} {v!r}")
        vec = self.new(Vector, IrVector(self.fusion, elements))
        return vec, format_list(printed)

    def shape(self, x, op: str, arg: str = "shape") -> tuple[IrVector, str]:
        """A shape argument (Vector, list or tuple) as an IR Vector and its printed form."""
        if isinstance(x, Vector):
            self._own(x, op, arg)
            return x._val, x.name
        vec, text = self.vector_of(x, op, arg)  # an inline Vector state
        return vec._val, text
