"""NaN propagates through min/max-like pointwise ops as in torch, on the GPU too: Triton's
``tl.minimum``/``tl.maximum`` drop a NaN operand unless told otherwise (the CPU interpreter
computes with NumPy, which keeps it, so the emitted text is checked as well as values).
Found by the generated programs on the H200: clamp(var of one element, 2, -3)."""

from __future__ import annotations

import pytest
import torch

from layoutfuse.ir import REGISTRY
from layoutfuse.nvfuser import DataType, FusionDefinition

NAN_OPS = {"clamp": 3, "minimum": 2, "maximum": 2}


@pytest.mark.parametrize("name", NAN_OPS)
def test_the_emission_propagates_nan(name):
    text = REGISTRY[name].triton(*[f"a{i}" for i in range(NAN_OPS[name])])
    calls = text.count("tl.minimum(") + text.count("tl.maximum(")
    assert calls and text.count("PropagateNan.ALL") == calls, text


def test_clamp_of_nan_is_nan():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        lo = fd.define_scalar(2.0, dtype=DataType.Double)
        hi = fd.define_scalar(-3.0, dtype=DataType.Double)
        fd.add_output(fd.ops.clamp(t, lo, hi))
    x = torch.tensor([float("nan"), 1.0, 5.0, -7.0])
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.clamp(x, 2.0, -3.0), equal_nan=True)
