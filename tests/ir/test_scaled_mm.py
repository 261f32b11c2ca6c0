"""scaled_mm (``ir/ops/scaled_mm.py``): fp8, bf16 and NVFP4 operands with per-tensor,
per-row / per-column and block scales, alpha, bias and beta, against the dequantized
product computed here."""

import pytest
import torch

from layoutfuse.errors import UnsupportedError
from layoutfuse.nvfuser import DataType, FusionDefinition

OPERANDS = [
    (torch.float8_e4m3fn, DataType.Float8_e4m3fn),
    (torch.float8_e5m2, DataType.Float8_e5m2),
    (torch.bfloat16, DataType.BFloat16),
]
SCALES = ["tensor", "rows"]
OUT = [(torch.bfloat16, DataType.BFloat16), (torch.float32, DataType.Float)]


def _rand(shape, seed):
    return torch.rand(tuple(shape), generator=torch.Generator().manual_seed(seed)) + 0.5


@pytest.mark.parametrize("tdtype,dtype", OPERANDS)
@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("out_t,out_dtype", OUT)
@pytest.mark.parametrize("epilogue", [None, "alpha", "bias", "alpha_bias_beta"])
def test_scaled_mm_forms(tdtype, dtype, scales, out_t, out_dtype, epilogue):
    m, k, n = 6, 16, 5
    a = (_rand((m, k), 0) - 1.0).to(tdtype)
    b = (_rand((n, k), 1) - 1.0).to(tdtype).t()  # [k, n], column-major as cuBLAS wants it
    s1 = _rand((1,) if scales == "tensor" else (m, 1), 2)
    s2 = _rand((1,) if scales == "tensor" else (1, n), 3)
    alpha, bias, beta = _rand((), 4), _rand((n,), 5), _rand((), 6)
    with FusionDefinition() as fd:
        ta, tb, ts1, ts2 = (fd.from_pytorch(t) for t in (a, b, s1, s2))
        extra = {}
        if epilogue in ("alpha", "alpha_bias_beta"):
            extra["alpha"] = fd.from_pytorch(alpha)
        if epilogue in ("bias", "alpha_bias_beta"):
            extra["bias"] = fd.from_pytorch(bias)
        if epilogue == "alpha_bias_beta":
            extra["beta"] = fd.from_pytorch(beta)
        out, none1, none2 = fd.ops.scaled_mm(ta, tb, ts1, ts2, **extra, dtype=out_dtype)
        assert none1 is None and none2 is None
        fd.add_output(out)
    inputs = [a, b, s1, s2] + [{"alpha": alpha, "bias": bias, "beta": beta}[n_] for n_ in extra]
    (got,) = fd.execute(inputs)
    ref = (a.float() * s1) @ (b.float() * s2)
    if "alpha" in extra:
        ref = ref * alpha
    if "bias" in extra:
        ref = ref + (beta * bias if "beta" in extra else bias)
    assert got.dtype == out_t and got.shape == (m, n)
    torch.testing.assert_close(got.float(), ref.to(out_t).float(), rtol=2e-2, atol=2e-2)


def test_scaled_mm_refuses_output_quantization():
    with FusionDefinition() as fd:
        a, b, s1, s2 = (fd.define_tensor(shape=[-1, -1], dtype=DataType.Float) for _ in range(4))
        with pytest.raises(UnsupportedError, match="quantizing the output"):
            fd.ops.scaled_mm(a, b, s1, s2, output_block_scale_size=16)


def _grouped_reference(a, b, ends, s1, s2, alpha, bias):
    """The scaled grouped product, group by group, written out."""
    starts = [0] + ends[:-1]
    if b.ndim == 3:  # groups of rows
        out = torch.zeros(a.shape[0], b.shape[2])
        for i, (lo, hi) in enumerate(zip(starts, ends)):
            prod = (a[lo:hi].float() * s1[lo:hi, None]) @ (b[i].float() * s2[i][None, :])
            out[lo:hi] = prod * alpha[i] + bias[i]
        return out
    out = torch.zeros(a.shape[1], b.shape[1])  # groups of columns
    for i, (lo, hi) in enumerate(zip(starts, ends)):
        prod = (a[i].float() * s1[i][:, None]) @ (b[:, lo:hi].float() * s2[None, lo:hi])
        out[:, lo:hi] = prod * alpha[i] + bias[i, lo:hi]
    return out


@pytest.mark.parametrize("tdtype,dtype", OPERANDS)
@pytest.mark.parametrize("form", ["rows", "columns"])
def test_scaled_grouped_mm(tdtype, dtype, form):
    gen = torch.Generator().manual_seed(11)
    g, m, k, n, ends = 3, 10, 16, 6, [2, 7, 10]
    if form == "rows":
        a = (torch.rand(m, k, generator=gen) - 0.5).to(tdtype)
        b = (torch.rand(g, k, n, generator=gen) - 0.5).to(tdtype)
        s1, s2 = _rand((m,), 1), _rand((g, n), 2)
        bias = _rand((g, n), 3)
    else:
        ends = [1, 4, 6]
        a = (torch.rand(g, m, k, generator=gen) - 0.5).to(tdtype)
        b = (torch.rand(k, n, generator=gen) - 0.5).to(tdtype)
        s1, s2 = _rand((g, m), 1), _rand((n,), 2)
        bias = _rand((g, n), 3)
    alpha = _rand((g,), 4)
    offsets = torch.tensor(ends, dtype=torch.int32)
    with FusionDefinition() as fd:
        ta, tb, to, ts1, ts2, tal, tbi = (
            fd.from_pytorch(t) for t in (a, b, offsets, s1, s2, alpha, bias)
        )
        out, none1, none2 = fd.ops.grouped_mm(
            ta, tb, to, ts1, ts2, alpha=tal, bias=tbi, dtype=DataType.Float
        )
        assert none1 is None and none2 is None
        fd.add_output(out)
    (got,) = fd.execute([a, b, offsets, s1, s2, alpha, bias])
    ref = _grouped_reference(a, b, ends, s1, s2, alpha, bias)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
