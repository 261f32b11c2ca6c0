"""Every op of the IR, one row each, and the builders that apply them.

``elementwise``: pointwise rows; ``reductions``: sum/max/min/prod and Welford;
``shape``: views and layout ops; ``creation``: full and iota; ``scalars``: size queries;
``random``: uniform and normal (Philox at each element's linear index).
"""

from . import creation, elementwise, random, reductions, scalars, shape
from .creation import full, iota
from .elementwise import ROW_BY_NAME as POINTWISE_ROWS
from .elementwise import cast, pointwise
from .random import normal, rand_like, randn_like, uniform
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
    # random ops
    "COORDINATE_OPS",
    "normal",
    "rand_like",
    "randn_like",
    "random",
    "uniform",
]

COORDINATE_OPS = frozenset({"iota"}) | random.NAMES
"""Creation ops whose values are a function of each element's linear index (a coordinate
access of the kernel: ``segmenter.specs``)."""
