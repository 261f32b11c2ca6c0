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


def _nvfp4_case(seed=3, m=24, n=8, k=32, tokens=(5, 11, 8)):
    """Packed fp4 operands, swizzled scales and the offsets of ``tokens`` rows per expert;
    and the dequantized expected product (element by element, Float)."""
    gen = torch.Generator().manual_seed(seed)
    g = len(tokens)
    a_codes = torch.randint(0, 256, (m, k // 2), dtype=torch.uint8, generator=gen)
    b_codes = torch.randint(0, 256, (g, n, k // 2), dtype=torch.uint8, generator=gen)
    s1 = (torch.rand(m, k // 16, generator=gen) + 0.25).to(torch.float8_e4m3fn)
    s2 = (torch.rand(g, n, k // 16, generator=gen) + 0.25).to(torch.float8_e4m3fn)
    alpha = torch.rand(g, generator=gen) + 0.5
    starts = [sum(tokens[:i]) for i in range(g)]
    scale1 = torch.cat([_swizzle(s1[lo : lo + t].float()) for lo, t in zip(starts, tokens)])
    inputs = [
        a_codes.view(torch.float4_e2m1fn_x2),
        b_codes.view(torch.float4_e2m1fn_x2).transpose(-1, -2),  # [g, k/2, n]: k packed
        scale1.to(torch.float8_e4m3fn),
        torch.stack([_swizzle(s2[i].float()) for i in range(g)]).to(torch.float8_e4m3fn),
        alpha,
        torch.tensor([[t, n, k] for t in tokens], dtype=torch.int32),
        torch.tensor(starts, dtype=torch.int32),
        torch.tensor([128 * i for i in range(g)], dtype=torch.int32),
    ]
    table = torch.tensor([_e2m1(c) for c in range(16)])
    a = table[torch.stack([a_codes & 15, a_codes >> 4], -1).flatten(-2).long()]
    b = table[torch.stack([b_codes & 15, b_codes >> 4], -1).flatten(-2).long()]
    a, b = a * s1.float().repeat_interleave(16, -1), b * s2.float().repeat_interleave(16, -1)
    expected = torch.cat(
        [a[lo : lo + t] @ b[i].t() * alpha[i] for i, (lo, t) in enumerate(zip(starts, tokens))]
    )  # noqa: E501
    return inputs, expected


def test_cutlass_nvfp4_grouped_mm_through_a_fusion():
    """nvFuser's definition (its test's): fp4 inputs declared Float4_e2m1fn with their
    element extents, mat2 [g, k, n] with stride_order [2, 0, 1]; a pointwise op after."""
    from layoutfuse.nvfuser import FusionDefinition

    inputs, expected = _nvfp4_case()
    inputs = [t.to(torch.get_default_device()) for t in inputs]
    with FusionDefinition() as fd:
        mat1 = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float4_e2m1fn)
        mat2 = fd.define_tensor(
            shape=[-1, -1, -1],
            contiguity=True,
            dtype=DataType.Float4_e2m1fn,
            stride_order=[2, 0, 1],
        )
        scale1 = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float8_e4m3fn)
        scale2 = fd.define_tensor(shape=[-1, -1, -1], contiguity=True, dtype=DataType.Float8_e4m3fn)
        alpha = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        sizes, offs, sf = (
            fd.define_tensor(shape=[-1] * r, contiguity=True, dtype=DataType.Int32)
            for r in (2, 1, 1)
        )
        out = fd.ops.cutlass_nvfp4_grouped_mm(
            mat1, mat2, scale1, scale2, alpha, sizes, offs, sf, DataType.BFloat16
        )
        fd.add_output(fd.ops.mul(out, fd.define_scalar(2.0)))
    (got,) = fd.execute(inputs)
    torch.testing.assert_close(got.float().cpu(), 2 * expected.cpu(), rtol=2e-2, atol=5e-2)
    segs = fd.segment(inputs)
    assert [s["scheduler"] for s in segs] == ["library", "pointwise"]
    assert segs[0]["reason"].startswith("cutlass_nvfp4_grouped_mm: runs through torch")


def test_fp4_input_extents_are_elements_not_bytes():
    """A Float4_e2m1fn input's extents count elements: a static k of 32 takes a packed
    tensor of 16 bytes a row; a wrong dtype is refused."""
    from layoutfuse.errors import InputDtypeError, InputShapeError
    from layoutfuse.nvfuser import FusionDefinition

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[4, 32], contiguity=True, dtype=DataType.Float4_e2m1fn)
        w = fd.define_tensor(
            shape=[32, 8], contiguity=True, dtype=DataType.Float4_e2m1fn, stride_order=[0, 1]
        )  # noqa: E501
        s1, s2 = (fd.define_tensor(shape=[-1, -1], dtype=DataType.Float8_e4m3fn) for _ in range(2))
        out, _, _ = fd.ops.scaled_mm(a, w, s1, s2, dtype=DataType.Float)
        fd.add_output(out)
    packed = torch.zeros(4, 16, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    packed_w = torch.zeros(8, 16, dtype=torch.uint8).view(torch.float4_e2m1fn_x2).t()
    scales = torch.ones(128, 4).to(torch.float8_e4m3fn)
    (got,) = fd.execute([packed, packed_w, scales, scales])
    assert got.shape == (4, 8)
    with pytest.raises(InputShapeError, match="expected size 32"):
        fd.execute(
            [
                torch.zeros(4, 32, dtype=torch.uint8).view(torch.float4_e2m1fn_x2),
                packed_w,
                scales,
                scales,
            ]
        )  # noqa: E501
    with pytest.raises(InputDtypeError, match="float4_e2m1fn_x2"):
        fd.execute([torch.zeros(4, 16, dtype=torch.uint8), packed_w, scales, scales])


def test_scaled_mm_of_nvfp4_operands():
    """nvFuser's NVFP4 scaled_mm: mat1 [m, k] and mat2 [k, n] (a transposed packed
    [n, k / 2]) fp4, block scales swizzled over [m, k / 16] and [n, k / 16], alpha."""
    from layoutfuse.nvfuser import FusionDefinition

    gen = torch.Generator().manual_seed(7)
    m, n, k = 6, 5, 48
    a_codes = torch.randint(0, 256, (m, k // 2), dtype=torch.uint8, generator=gen)
    b_codes = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, generator=gen)
    s1 = (torch.rand(m, k // 16, generator=gen) + 0.25).to(torch.float8_e4m3fn)
    s2 = (torch.rand(n, k // 16, generator=gen) + 0.25).to(torch.float8_e4m3fn)
    alpha = torch.tensor(0.75)
    inputs = [
        a_codes.view(torch.float4_e2m1fn_x2),
        b_codes.view(torch.float4_e2m1fn_x2).t(),
        _swizzle(s1.float()).to(torch.float8_e4m3fn),
        _swizzle(s2.float()).to(torch.float8_e4m3fn),
        alpha,
    ]
    inputs = [t.to(torch.get_default_device()) for t in inputs]
    with FusionDefinition() as fd:
        ta = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float4_e2m1fn)
        tb = fd.define_tensor(
            shape=[-1, -1], contiguity=True, dtype=DataType.Float4_e2m1fn, stride_order=[0, 1]
        )
        ts1, ts2 = (
            fd.define_tensor(shape=[-1, -1], dtype=DataType.Float8_e4m3fn) for _ in range(2)
        )
        tal = fd.define_tensor(shape=[], dtype=DataType.Float)
        out, _, _ = fd.ops.scaled_mm(ta, tb, ts1, ts2, tal, dtype=DataType.Float)
        fd.add_output(out)
    (got,) = fd.execute(inputs)
    table = torch.tensor([_e2m1(c) for c in range(16)])
    a = table[torch.stack([a_codes & 15, a_codes >> 4], -1).flatten(-2).long()]
    b = table[torch.stack([b_codes & 15, b_codes >> 4], -1).flatten(-2).long()]
    a, b = a * s1.float().repeat_interleave(16, -1), b * s2.float().repeat_interleave(16, -1)
    torch.testing.assert_close(got.cpu(), ((a @ b.t()) * 0.75).cpu(), rtol=1e-5, atol=1e-4)
