"""NVFP4 (``ir/ops/nvfp4.py``): fp4 e2m1 decoding against a table built from the format's
bits, CUTLASS's 128 x 4 swizzled block scales against an index-by-index swizzle, and
cutlass_nvfp4_grouped_mm's torch execution against a per-element dequantized reference."""

import pytest
import torch

from layoutfuse.dtypes import DataType
from layoutfuse.ir.ops.nvfp4 import nvfp4_grouped_mm, unpack_fp4, unswizzle_scales


def _e2m1(code: int) -> float:
    """An fp4 e2m1 code's value from its bits: sign, 2 exponent bits (bias 1), 1 mantissa."""
    sign = -1.0 if code & 8 else 1.0
    exponent, mantissa = (code >> 1) & 3, code & 1
    if exponent == 0:
        return sign * mantissa * 0.5  # subnormal: 0 or 0.5
    return sign * 2.0 ** (exponent - 1) * (1 + mantissa / 2)


def test_every_byte_decodes_to_two_e2m1_values_low_nibble_first():
    packed = torch.arange(256, dtype=torch.uint8).reshape(16, 16)
    values = unpack_fp4(packed)
    assert values.shape == (16, 32)
    for byte in range(256):
        r, c = divmod(byte, 16)
        assert values[r, 2 * c].item() == _e2m1(byte & 0x0F)
        assert values[r, 2 * c + 1].item() == _e2m1(byte >> 4)


def test_unpack_follows_the_contiguous_dim_and_the_fp4_dtype():
    """A transposed view of packed fp4 (the packed dim contiguous) unpacks along it."""
    codes = torch.randint(0, 256, (3, 4, 5), dtype=torch.uint8,
                          generator=torch.Generator().manual_seed(0))  # fmt: skip
    plain = unpack_fp4(codes)  # [3, 4, 10]
    moved = unpack_fp4(codes.view(torch.float4_e2m1fn_x2).transpose(-1, -2))  # [3, 10, 4]
    torch.testing.assert_close(moved, plain.transpose(-1, -2))


def _swizzle(linear: torch.Tensor) -> torch.Tensor:
    """CUTLASS's layout, written index by index: pad to [128 * mt, 4 * kt]; tile (i, j)'s
    block [32, 4, 4] holds at [a, b, c] row i*128 + b*32 + a, column j*4 + c."""
    rows, cols = linear.shape
    mt, kt = -(-rows // 128), -(-cols // 4)
    out = torch.zeros(mt * 128, kt * 4, dtype=linear.dtype)
    flat = out.view(mt, kt, 32, 4, 4)
    for i in range(mt):
        for j in range(kt):
            for a in range(32):
                for b in range(4):
                    for c in range(4):
                        r, col = i * 128 + b * 32 + a, j * 4 + c
                        if r < rows and col < cols:
                            flat[i, j, a, b, c] = linear[r, col]
    return out


@pytest.mark.parametrize("rows,cols", [(128, 4), (130, 6), (5, 3)])
def test_unswizzle_inverts_cutlass_layout(rows, cols):
    linear = torch.rand(rows, cols, generator=torch.Generator().manual_seed(1)) + 0.5
    torch.testing.assert_close(unswizzle_scales(_swizzle(linear), rows, cols), linear)


def test_nvfp4_grouped_mm_against_a_dequantized_reference():
    g_ = torch.Generator().manual_seed(2)
    m, n, k, tokens = 40, 8, 32, [7, 20, 13]
    g = len(tokens)
    a_codes = torch.randint(0, 256, (m, k // 2), dtype=torch.uint8, generator=g_)
    b_codes = torch.randint(0, 256, (g, n, k // 2), dtype=torch.uint8, generator=g_)
    s1_lin = (torch.rand(m, k // 16, generator=g_) + 0.25).to(torch.float8_e4m3fn)
    s2_lin = (torch.rand(g, n, k // 16, generator=g_) + 0.25).to(torch.float8_e4m3fn)
    alpha = torch.rand(g, generator=g_) + 0.5
    starts = [0, 7, 27]
    sf_starts = [0, 128, 256]
    scale1 = torch.zeros(384, 4, dtype=torch.float8_e4m3fn)
    for i, (lo, t) in enumerate(zip(starts, tokens)):
        sw = _swizzle(s1_lin[lo : lo + t].float()).to(torch.float8_e4m3fn)
        scale1[sf_starts[i] : sf_starts[i] + 128] = sw
    # per expert [n, k/16] swizzled (padded to [128, 4] here: n is 8)
    scale2 = torch.stack([_swizzle(s2_lin[i].float()) for i in range(g)]).to(torch.float8_e4m3fn)
    values = {
        "mat1": a_codes.view(torch.float4_e2m1fn_x2),
        "mat2": b_codes.view(torch.float4_e2m1fn_x2).transpose(-1, -2),  # [g, k/2, n]
        "scale1": scale1,
        "scale2": scale2,
        "alpha": alpha,
        "problem_sizes": torch.tensor([[t, n, k] for t in tokens], dtype=torch.int32),
        "expert_offsets": torch.tensor(starts, dtype=torch.int32),
        "sf_offsets": torch.tensor(sf_starts, dtype=torch.int32),
    }
    (got,) = nvfp4_grouped_mm(values, {"dtype": DataType.Float})
    # element by element: value(code) * its block's scale
    table = torch.tensor([_e2m1(c) for c in range(16)])
    a = torch.stack([a_codes & 15, a_codes >> 4], -1).flatten(-2).long()
    b = torch.stack([b_codes & 15, b_codes >> 4], -1).flatten(-2).long()  # [g, n, k]
    a_deq = table[a] * s1_lin.float().repeat_interleave(16, -1)
    b_deq = table[b] * s2_lin.float().repeat_interleave(16, -1)
    expected = torch.zeros(m, n)
    for i, (lo, t) in enumerate(zip(starts, tokens)):
        expected[lo : lo + t] = a_deq[lo : lo + t] @ b_deq[i].t() * alpha[i]
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
