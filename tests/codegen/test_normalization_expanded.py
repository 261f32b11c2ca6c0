"""A normalization kernel's access of stride 0 along its first x group keeps the tile's
shape (found by the generated programs).

The outer template takes its first x group's index as a tile and the others' from the
program id: an output expanded along that group (stride 0 there: the group is an
expanded dim of the input, carried through an argsort) got a pointer of the R tile's
shape alone, which ``tl.store`` refuses for a value of the whole tile. Since buffers
between segments keep their expanded dims stride 0 (``runtime.pipeline._intermediate``),
the argsort's result is expanded there too, and the normalization reads the unique rows
(the inner template); the test keeps the values, the output's stride 0 and the sm_90
compile.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS, schedules

pytestmark = [pytest.mark.usefixtures("kernel_cache_in_tmp"), *INTERPRETER_WARNINGS]


def test_an_output_expanded_along_the_first_x_group():
    x = (torch.arange(42.0).reshape(1, 6, 7, 1) % 5).expand(1, 6, 7, 3)
    with FusionDefinition() as fd:
        order = fd.ops.argsort(fd.from_pytorch(x), dim=2, stable=True)  # keeps dim 3 expanded
        t = fd.ops.cast(order, DataType.Float)
        fd.add_output(fd.ops.exp(fd.ops.sub(t, fd.ops.max(t, dims=[2], keepdim=True))))
    (out,) = fd.execute([x])
    r = torch.argsort(x, dim=2, stable=True).float()
    torch.testing.assert_close(out, torch.exp(r - r.amax(2, keepdim=True)))
    assert out.stride(3) == 0
    params = schedules(fd)[-1]
    assert params.scheduler == "normalization"
    (scan_launch, *_) = fd.executor().last_run.launches
    (sorted_ix,) = [a for a in scan_launch.args if getattr(a, "shape", None) == (1, 6, 7, 3)][1:]
    assert sorted_ix.stride[3] == 0  # the argsort's result, between the two segments
    arts = compile_last_run(fd.executor())
    assert arts and all(".target sm_90" in a.ptx for a in arts)
