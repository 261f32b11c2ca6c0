"""Every op of the IR, one row each, and the builders that apply them.

``elementwise``: pointwise rows; ``reductions``: sum/max/min/prod and Welford;
``shape``: views and layout ops; ``creation``: full and iota; ``scalars``: size queries;
``random``: uniform and normal (Philox at each element's linear index).
``library``, ``matmul`` (as ``matmul_rows``), ``attention``, ``nvfp4``, ``scaled_mm`` (as
``scaled_mm_rows``): matmul-family ops that run as segments of their own, through torch.
``scans``: per-row ops along one dim (cumsum, argsort, topk) and triu.
``complex``: how ops act on the two real parts of complex values.
"""

from . import (
    attention,
    creation,
    elementwise,
    library,
    movement,
    nvfp4,
    random,
    reductions,
    scalars,
    scans,
    shape,
)
from . import complex as complex_rules  # complex values as two real parts: their op rules
from . import matmul as matmul_rows
from . import scaled_mm as scaled_mm_rows
from .attention import sdpfa_bwd, sdpfa_fwd
from .creation import full, iota
from .elementwise import ROW_BY_NAME as POINTWISE_ROWS
from .elementwise import cast, pointwise
from .matmul import grouped_mm, linear, matmul
from .movement import cat, pad, select, slice_
from .nvfp4 import cutlass_nvfp4_grouped_mm
from .random import normal, rand_like, randn_like, uniform
from .reductions import reduction, var, var_mean, welford
from .scalars import size
from .scaled_mm import scaled_grouped_mm, scaled_mm
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
    "cat",
    "movement",
    "pad",
    "select",
    "slice_",
    "POINTWISE_ROWS",
    "broadcast",
    "broadcast_in_dim",
    "cast",
    "complex_rules",
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
    # library rows
    "attention",
    "grouped_mm",
    "library",
    "linear",
    "matmul",
    "matmul_rows",
    "nvfp4",
    "cutlass_nvfp4_grouped_mm",
    "scaled_grouped_mm",
    "scaled_mm",
    "scaled_mm_rows",
    "sdpfa_bwd",
    "sdpfa_fwd",
    "scans",
    "cumsum",
    "argsort",
    "topk",
    "triu",
]

COORDINATE_OPS = frozenset({"iota"}) | random.NAMES
"""Creation ops whose values are a function of each element's linear index (a coordinate
access of the kernel: ``segmenter.specs``)."""
