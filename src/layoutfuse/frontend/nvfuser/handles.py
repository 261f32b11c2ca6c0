"""Tensor, Scalar and Vector: the handles a FusionDefinition hands out.

A handle names one recorded state (``T3``, ``S5``, ``V10``: one counter for all
kinds, as in nvFuser) and wraps the IR value it stands for. Operators on handles
record ``fd.ops`` calls. As in nvFuser:

* operands must be handles: Python numbers raise ArgumentTypeError (a TypeError) (define them with
  ``fd.define_scalar``); there are no reflected operators, so ``1.0 + t`` fails;
* ``/`` is ``div`` (truncating for integers), ``%`` is ``mod``;
* ``==`` and ``!=`` between two handles of the same kind compare identity and
  return a bool (pybind's ``self == self`` binding comes first); between a Tensor
  and a Scalar they record ``eq`` / ``ne``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...dtypes import DataType
from ...errors import ArgumentTypeError, describe

if TYPE_CHECKING:
    from ...ir import Val
    from .fusion_definition import FusionDefinition


class _Handle:
    prefix = "?"

    def __init__(self, fd: FusionDefinition, index: int, val: Val):
        self._fd = fd
        self._index = index
        self._val = val

    @property
    def index(self) -> int:
        """The state index, as in ``T<index>`` when the definition is printed."""
        return self._index

    @property
    def name(self) -> str:
        return f"{self.prefix}{self._index}"

    def _get_fusion_definition(self) -> FusionDefinition:
        return self._fd

    def __hash__(self) -> int:
        return hash((id(self._fd), self._index))

    def _same(self, other) -> bool:
        return self._fd is other._fd and self._index == other._index


def _binary_operator(op_name: str, symbol: str):
    def method(self, other):
        if not isinstance(other, Tensor | Scalar):
            raise ArgumentTypeError(
                f"unsupported operand type for {symbol} (fd.ops.{op_name}): {type(self).__name__} "
                f"and {describe(other)}; operands must be Tensor or Scalar handles "
                f"(define Python numbers with fd.define_scalar)"
            )
        return getattr(self._fd.ops, op_name)(self, other)

    method.__name__ = f"__{op_name}__"
    return method


def _comparison(op_name: str):
    def method(self, other):
        if type(other) is type(self):
            same = self._same(other)
            return same if op_name == "eq" else not same
        if isinstance(other, Tensor | Scalar):
            return getattr(self._fd.ops, op_name)(self, other)
        return NotImplemented

    return method


_OPERATORS = {
    "__add__": ("add", "+"),
    "__sub__": ("sub", "-"),
    "__mul__": ("mul", "*"),
    "__truediv__": ("div", "/"),
    "__pow__": ("pow", "**"),
    "__mod__": ("mod", "%"),
    "__and__": ("bitwise_and", "&"),
    "__or__": ("bitwise_or", "|"),
    "__xor__": ("bitwise_xor", "^"),
    "__lshift__": ("bitwise_left_shift", "<<"),
    "__rshift__": ("bitwise_right_shift", ">>"),
    "__lt__": ("lt", "<"),
    "__le__": ("le", "<="),
    "__gt__": ("gt", ">"),
    "__ge__": ("ge", ">="),
}


class _Arithmetic(_Handle):
    """Operators shared by Tensor and Scalar."""

    @property
    def dtype(self) -> DataType:
        return self._val.dtype

    def __neg__(self):
        return self._fd.ops.neg(self)

    def __abs__(self):
        return self._fd.ops.abs(self)

    __eq__ = _comparison("eq")
    __ne__ = _comparison("ne")
    __hash__ = _Handle.__hash__


for _dunder, (_op, _sym) in _OPERATORS.items():
    setattr(_Arithmetic, _dunder, _binary_operator(_op, _sym))


class Tensor(_Arithmetic):
    prefix = "T"

    @property
    def ndim(self) -> int:
        """The rank of the tensor."""
        return self._val.ndim

    def shape(self) -> Vector:
        """Records ``fd.ops.shape``: a Vector of this tensor's extents."""
        return self._fd.ops.shape(self)

    def size(self, dim: int) -> Scalar:
        """Records ``fd.ops.size``: the extent of ``dim``."""
        return self._fd.ops.size(self, dim)

    def is_tensor(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"Tensor(index={self._index}, ndim={self.ndim})"


class Scalar(_Arithmetic):
    prefix = "S"

    def is_tensor(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Scalar(index={self._index})"


class Vector(_Handle):
    prefix = "V"

    @property
    def size(self) -> int:
        """The number of elements."""
        return self._val.size

    def at(self, index: int) -> Scalar:
        return self._fd.ops.at(self, index)

    def __getitem__(self, index: int) -> Scalar:
        if not isinstance(index, int) or not -self.size <= index < self.size:
            raise IndexError(f"Vector index {index!r} is out of range for size {self.size}")
        return self._fd.ops.at(self, index)

    def __eq__(self, other):
        if type(other) is Vector:
            return self._same(other)
        return NotImplemented

    __hash__ = _Handle.__hash__

    def is_tensor(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Vector(index={self._index}, size={self.size})"
