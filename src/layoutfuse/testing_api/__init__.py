"""nvFuser's C++ test API in Python, so that nvFuser's tests read almost line for line.

    fusion = Fusion()
    with FusionGuard(fusion):
        tv0 = make_contig_concrete_tensor([16, 12, 128, 192])
        tv0.set_allocation_domain([tv0.axis(0), tv0.axis(2), tv0.axis(1), tv0.axis(3)], True)
        tv1 = sum(permute(tv0, [0, 2, 1, 3]), [0, 1])
        fusion.add_input(tv0)
        fusion.add_output(tv1)
    fec = FusionExecutorCache(fusion)
    outputs = fec.run_fusion_with_inputs([t0])
    testing.validate(fec.fusion(), outputs, [t0])

Names: the tensor makers (:mod:`.tensors`), the ops (:mod:`.ops`, and one function per
pointwise row from :mod:`.pointwise`), ``IrBuilder``, ``FusionExecutorCache`` and
``testing.validate`` (also ``test_validate``). ``sum``, ``max``, ``min``, ``set``,
``abs``, ``pow`` and ``round`` shadow Python builtins where imported by name.
"""

from ..dtypes import DataType
from ..ir import Fusion, FusionGuard, TensorView
from . import validate as testing
from .executor_cache import FusionExecutorCache
from .ir_builder import IrBuilder
from .ops import *  # noqa: F403 - the op functions, listed in ops.__all__
from .ops import __all__ as _ops_all
from .pointwise import *  # noqa: F403 - one function per pointwise row
from .pointwise import __all__ as _pointwise_all
from .random import *  # noqa: F403 - rand, randn, uniform, normal, rand_like, randn_like
from .random import __all__ as _random_all
from .tensors import (
    make_concrete_tensor,
    make_contig_concrete_tensor,
    make_contig_tensor,
    make_symbolic_tensor,
)
from .validate import validate as test_validate

__all__ = [
    "DataType",
    "Fusion",
    "FusionExecutorCache",
    "FusionGuard",
    "IrBuilder",
    "TensorView",
    "make_concrete_tensor",
    "make_contig_concrete_tensor",
    "make_contig_tensor",
    "make_symbolic_tensor",
    "test_validate",
    "testing",
    *_ops_all,
    *_pointwise_all,
    *_random_all,
]
