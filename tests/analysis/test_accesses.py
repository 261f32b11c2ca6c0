"""The access walk expands each (tensor, chain) once: shared subexpressions stay linear
(a walk over paths would not finish on the fusion below: 2**40 paths)."""

import torch

from layoutfuse.nvfuser import DataType, FusionDefinition


def test_a_deep_diamond_fusion_is_planned_and_computed():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        x = t
        for _ in range(40):  # 2**40 paths from the output to the input
            x = fd.ops.mul(fd.ops.add(x, x), fd.define_scalar(0.5, dtype=DataType.Double))
        fd.add_output(x)
    inp = torch.randn(8, 16)
    (out,) = fd.execute([inp])
    torch.testing.assert_close(out, inp)
    assert len(fd.segment([inp])) == 1
