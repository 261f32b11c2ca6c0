"""nvFuser's pointwise functions (``add``, ``neg``, ``exp``, ``where``, ...), one per table row.

The functions are generated from ``layoutfuse.ir.ops.elementwise.ROW_BY_NAME``, so a row
added there is a function here with no further change. Each takes the row's
operands (TensorViews, Scalars or Python numbers) and calls the IR builder
``pointwise(name, *operands)``. ``abs``, ``pow`` and ``round`` shadow the builtins.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.ops.elementwise import ROW_BY_NAME, pointwise


def _function_for(name: str, arity: int) -> Callable:
    def op(*operands):
        return pointwise(name, *operands)

    op.__name__ = op.__qualname__ = name
    op.__module__ = __name__
    op.__doc__ = f"nvFuser's ``{name}`` ({arity} operand{'s' if arity > 1 else ''})."
    return op


FUNCTIONS: dict[str, Callable] = {
    name: _function_for(name, row.arity) for name, row in ROW_BY_NAME.items()
}
globals().update(FUNCTIONS)

__all__ = sorted(FUNCTIONS)
