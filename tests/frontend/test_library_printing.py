"""The printed definition of library ops and batch_norm is nvFuser's Python: executing it
rebuilds the same definition (the same printed text, the same results)."""

import torch

from layoutfuse.nvfuser import DataType, FusionDefinition


def _build(fd):
    t = [
        fd.define_tensor(shape=[-1] * r, contiguity=True, dtype=DataType.Float)
        for r in (2, 2, 4, 4, 4, 1)
    ]  # noqa: E501
    mm = fd.ops.matmul(t[0], t[1])
    lin = fd.ops.linear(mm, t[1], bias=t[5])
    out, lse, seed, offset = fd.ops.sdpfa_fwd(t[2], t[3], t[4], is_causal=True, scale=0.5)
    smm, _, _ = fd.ops.scaled_mm(lin, t[1], t[5], t[5], dtype=DataType.Float)
    y, mean, invstd = fd.ops.batch_norm(
        t[2], None, None, None, None, fd.define_scalar(0.1), fd.define_scalar(1e-5), True
    )
    for x in (smm, out, lse, y, mean):
        fd.add_output(x)


def test_printed_definition_rebuilds_the_same_definition():
    with FusionDefinition() as fd:
        _build(fd)
    text = repr(fd)
    assert "fd.ops.sdpfa_fwd(" in text and ", _, _ = fd.ops.scaled_mm(" in text
    namespace = {"DataType": DataType, "FusionDefinition": FusionDefinition}
    exec(text, namespace)
    (fn,) = [v for k, v in namespace.items() if k.startswith("nvfuser_fusion")]
    with FusionDefinition() as again:
        fn(again)
    assert repr(again).splitlines()[1:] == text.splitlines()[1:]
    g = torch.Generator().manual_seed(0)
    inputs = [
        torch.randn(s, generator=g)
        for s in [(4, 4), (4, 4), (2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), (4,)]
    ]  # noqa: E501
    for a, b in zip(fd.execute(inputs), again.execute(inputs)):
        torch.testing.assert_close(a, b)
