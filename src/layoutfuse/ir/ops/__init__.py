"""Every op of the IR, one row each, and the builders that apply them.

``elementwise``: pointwise rows; ``reductions``: sum/max/min/prod and Welford;
``shape``: views and layout ops; ``creation``: full and iota; ``scalars``: size queries.
"""

from . import creation, elementwise, movement, reductions, scalars, shape
from .creation import full, iota
from .elementwise import ROW_BY_NAME as POINTWISE_ROWS
from .elementwise import cast, pointwise
from .movement import cat, pad, select, slice_
from .reductions import reduction, var, var_mean, welford
from .scalars import size
from .shape import (
    broadcast,
    broadcast_in_dim,
    expand,
    permute,
    reshape,
    set_,
    squeeze,
    stride_order,
)

__all__ = [
    "cat",
    "movement",
    "pad",
    "select",
    "slice_",
    "POINTWISE_ROWS",
    "broadcast",
    "broadcast_in_dim",
    "cast",
    "creation",
    "elementwise",
    "expand",
    "full",
    "iota",
    "permute",
    "pointwise",
    "reduction",
    "reductions",
    "reshape",
    "scalars",
    "set_",
    "shape",
    "size",
    "squeeze",
    "stride_order",
    "var",
    "var_mean",
    "welford",
]
