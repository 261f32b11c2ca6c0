"""Every op of the IR, one row each, and the builders that apply them.

``elementwise``: pointwise rows; ``reductions``: sum/max/min/prod and Welford;
``shape``: views and layout ops; ``creation``: full and iota; ``scalars``: size queries;
``indexing``: indexed reads (gather_dim); ``writes``: indexed writes (scatter_dim).
"""

from . import creation, elementwise, indexing, reductions, scalars, shape, writes
from .creation import full, iota
from .elementwise import ROW_BY_NAME as POINTWISE_ROWS
from .elementwise import cast, pointwise
from .indexing import embedding, gather, index_select, take_along_axis
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
from .writes import index_put_accumulate, scatter

__all__ = [
    "POINTWISE_ROWS",
    "broadcast",
    "broadcast_in_dim",
    "cast",
    "creation",
    "elementwise",
    "embedding",
    "expand",
    "full",
    "gather",
    "index_put_accumulate",
    "index_select",
    "indexing",
    "iota",
    "permute",
    "pointwise",
    "reduction",
    "reductions",
    "reshape",
    "scalars",
    "scatter",
    "set_",
    "shape",
    "size",
    "squeeze",
    "stride_order",
    "take_along_axis",
    "var",
    "var_mean",
    "welford",
    "writes",
]
