"""Buffers between segments are laid out as outputs are: dense, their expanded broadcast
dims stride 0 (``runtime.pipeline._intermediate``)."""

from __future__ import annotations

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

NVF = {torch.float32: DataType.Float, torch.float16: DataType.Half}


@pytest.mark.parametrize("dt", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("also", ["squeeze", "abs"])
def test_a_select_of_an_expanded_input_feeds_a_matmul(dt, also):
    """A select of an input expanded along two dims keeps one expanded dim; stored beside
    its squeeze, the kernel iterates over the squeeze's shape and writes that dim once.
    The matmul reads the select from a buffer whose expanded dim is stride 0, so it sees
    every element (a dense buffer left half of it unwritten: generated program 108707)."""
    x = torch.randn(2, dtype=dt).as_strided((2, 2, 7), (1, 0, 0))
    w = torch.randn(2, 1, dtype=dt)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[-1, -1, -1], contiguity=[True, None, None], dtype=NVF[dt], is_cpu=False
        )
        t1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=NVF[dt], is_cpu=False)
        s = fd.ops.select(t0, 6, dim=2)
        fd.add_output(fd.ops.matmul(s, t1))
        if also == "squeeze":
            fd.add_output(fd.ops.squeeze(s, dims=[1], squeeze_expanded=True))
        else:
            fd.add_output(fd.ops.abs(s))
    for _ in range(2):  # the planned call, then the replay
        out, other = fd.execute([x, w])
        ref = x.select(2, 6)
        torch.testing.assert_close(out.float(), ref.float() @ w.float(), rtol=2e-3, atol=2e-3)
        want = ref[:, 0] if also == "squeeze" else ref.abs()
        torch.testing.assert_close(other, want)
    (launch,) = fd.executor().last_run.launches
    buffers = [a for a in launch.args if getattr(a, "shape", None) == (2, 2)]
    assert any(b.stride == (1, 0) for b in buffers), buffers
