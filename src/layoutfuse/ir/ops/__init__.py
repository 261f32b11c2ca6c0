"""Every op of the IR, one row each, and the builders that apply them.

``elementwise``: pointwise rows; ``reductions``: sum/max/min/prod and Welford;
``shape``: views and layout ops; ``creation``: full and iota; ``scalars``: size queries;
``scans``: per-row ops along one dim (cumsum, argsort, topk) and triu.
"""

from . import creation, elementwise, reductions, scalars, scans, shape
from .creation import full, iota
from .elementwise import ROW_BY_NAME as POINTWISE_ROWS
from .elementwise import cast, pointwise
from .reductions import reduction, var, var_mean, welford
from .scalars import size
from .scans import argsort, cumsum, topk, triu
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
    "scans",
    "cumsum",
    "argsort",
    "topk",
    "triu",
]
