"""Reductions of one input to different shapes, combined (Thunder emits such fusions:
``a.amax(1) + a.amin(0).sum() + a.prod(1)``): one normalization group can read another
group's results, which the other group then stores. Every memory order, a slice and an
expanded dim; fp32 and bf16."""

from __future__ import annotations

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition

LAYOUTS = {
    "row": lambda: torch.randn(6, 5),
    "col": lambda: torch.randn(5, 6).t(),
    "sliced": lambda: torch.randn(6, 11)[:, 1:11:2],
    "expanded": lambda: torch.randn(6, 1).expand(6, 5),
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def define(x: torch.Tensor) -> FusionDefinition:
    """The fusion, its input declared from ``x`` as Thunder declares it (``from_pytorch``:
    sizes, contiguity and stride order of the tensor)."""
    with FusionDefinition() as fd:
        a = fd.ops.cast(fd.from_pytorch(x), DataType.Float)
        row_max = fd.ops.max(a, dims=[1])
        total_of_col_min = fd.ops.sum(fd.ops.min(a, dims=[0]), dims=[0])
        row_prod = fd.ops.prod(a, dims=[1])
        fd.add_output(fd.ops.add(fd.ops.add(row_max, total_of_col_min), row_prod))
        fd.add_output(fd.ops.sum(fd.ops.mul(a, a), dims=[0]))
    return fd


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_to_different_shapes_combined(layout, dtype):
    FusionCache.reset()
    x = LAYOUTS[layout]().to(DTYPES[dtype])
    fd = define(x)
    for _ in range(2):  # planned, then replayed
        combined, col_squares = fd.execute([x])
        xf = x.float()
        torch.testing.assert_close(
            combined, xf.amax(1) + xf.amin(0).sum() + xf.prod(1), rtol=1e-5, atol=1e-5
        )
        torch.testing.assert_close(col_squares, (xf * xf).sum(0), rtol=1e-5, atol=1e-5)
    assert len(fd.segment([x])) >= 2
