"""Row lengths and row strides passed divided by their power-of-two factor
(``normalization.size_factors``, ``NormalizationParams.factors``).

Triton specializes an integer argument only as 1 or a multiple of 16. A row of 276
elements (a multiple of 4) told as ``NR = NR_q * 4`` keeps the mask ``r < NR`` constant
over 4 lanes, and rows 276 apart start on 4-element boundaries: 4-element vectors where
the plain arguments give one element per store. The tests check the factors found,
values against torch over row lengths and layouts of every factor (contiguous, padded,
sliced with a start, expanded rows; fp32 and bf16), and the sm_90 PTX of each kernel
against the same kernel without factors.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.intmath import int32_factor, power_of_two_factor
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules, small_gpu

pytestmark = [
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # masked lanes in the interpreter
]
OFF = DEFAULT.with_fields(normalization=dict(size_factors=0))
DT = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}


def _softmax_and_rms(x: torch.Tensor) -> FusionDefinition:
    """softmax of the rows, and their RMS norm with a weight (a load in place along rows)."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DT[x.dtype])
        xf = fd.ops.cast(t, DataType.Float)

        def bc(v):
            return fd.ops.broadcast_in_dim(v, shape=t.shape(), broadcast_dims=[0])

        e = fd.ops.exp(fd.ops.sub(xf, bc(fd.ops.max(xf, dims=[1]))))
        fd.add_output(fd.ops.cast(fd.ops.div(e, bc(fd.ops.sum(e, dims=[1]))), DT[x.dtype]))
        ms = fd.ops.div(fd.ops.sum(fd.ops.mul(xf, xf), dims=[1]), fd.ops.size(t, 1))
        r = fd.ops.rsqrt(fd.ops.add(ms, fd.define_scalar(1e-5, dtype=DataType.Double)))
        wb = fd.ops.broadcast_in_dim(w, shape=t.shape(), broadcast_dims=[1])
        fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.mul(xf, bc(r)), wb), DT[x.dtype]))
    return fd


def _run(x: torch.Tensor, tuning=DEFAULT):
    w = (torch.rand(x.shape[1], generator=torch.Generator().manual_seed(2)) + 0.5).to(x.dtype)
    fd = _softmax_and_rms(x)
    configured(fd, tuning=tuning, target=small_gpu(4))
    soft, rms = fd.execute([x, w])
    xf = x.float()
    tol = dict(atol=2e-5, rtol=2e-5) if x.dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(soft.float(), torch.softmax(xf, 1), **tol)
    want = xf * torch.rsqrt((xf * xf).mean(1, keepdim=True) + 1e-5) * w.float()
    torch.testing.assert_close(rms.float(), want, **tol)
    params = [p for p in schedules(fd) if p.scheduler == "normalization"]
    assert params, schedules(fd)
    return fd, params


def test_the_factor_is_the_power_of_two_below_16():
    got = {n: power_of_two_factor(n) for n in (0, 1, 3, 2, 6, 276, 164, 1000, 1024, 3939, 48)}
    assert got == {0: 1, 1: 1, 3: 1, 2: 2, 6: 2, 276: 4, 164: 4, 1000: 8, 1024: 1, 3939: 1, 48: 1}
    # a quotient Triton may pass as an int32 whose product would overflow it: no factor
    assert int32_factor(2**31 - 4) == 4 and int32_factor(2**31 + 4) == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "padded", "sliced", "expanded"])
@pytest.mark.parametrize("n", [276, 164, 1000, 6, 3939])
def test_values_over_row_lengths_and_layouts(n, kind, dtype):
    g = torch.Generator().manual_seed(n)
    if kind == "contiguous":
        x = torch.randn(24, n, generator=g)
    elif kind == "padded":  # rows n + 4 apart: the stride's factor differs from NR's
        x = torch.randn(24, n + 4, generator=g)[:, :n]
    elif kind == "sliced":  # a start of 2 (a base offset): no factor for it
        x = torch.randn(24, n + 2, generator=g)[:, 2:]
    else:
        x = torch.randn(1, n, generator=g).expand(24, n)
    x = x.to(dtype)
    _, params = _run(x)
    for p in params:
        assert p.template == "inner"
        assert dict(p.factors).get("NR", 1) == power_of_two_factor(n)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("n", [276, 1000])
def test_rows_with_a_factor_load_and_store_vectors(n, dtype):
    """sm_90 PTX: rows of 276 (factor 4) and 1000 (8) load and store 4 or 8 elements at
    once; the same kernel without factors one element per access."""
    x = torch.randn(64, n).to(dtype)
    fd, params = _run(x)
    want = min(power_of_two_factor(n) * x.element_size(), 16)  # bytes per vector
    assert all(dict(p.factors)["NR"] == power_of_two_factor(n) for p in params)
    vector = {8: "v2", 16: "v4"}[want]  # 32-bit words: 8 bytes are v2, 16 bytes v4
    for art in compile_last_run(fd.executor()):
        if "normalization" not in art.name:
            continue
        widths = art.vector_widths
        assert widths.get(f"ld.global.{vector}", 0) > 0, widths
        assert widths.get(f"st.global.{vector}", 0) > 0, widths
    assert "NR = NR_q *" in fd.last_triton_code()
    off, plain = _run(x, OFF)
    assert all(p.factors == () for p in plain)
    for art in compile_last_run(off.executor()):
        if "normalization" in art.name:
            stores = {k for k in art.vector_widths if k.startswith("st.global")}
            assert stores == {"st.global.v1"}, art.vector_widths  # one element each


def test_rows_of_16_and_odd_rows_have_none():
    for n in (1024, 3939):
        _, params = _run(torch.randn(24, n))
        assert all(p.factors == () for p in params)


# --- reductions (``reduction.size_factors``, ``ReductionParams.factors``) ------------------

# without factors (and without the aligned rows, which vectorize misaligned inner rows too)
R_OFF = DEFAULT.with_fields(reduction=dict(size_factors=0, align_row_bytes=0))


def _sum(x: torch.Tensor, dims: list[int], tuning=DEFAULT):
    """(fd, params) of ``x``'s sum over ``dims`` in fp32, checked against torch."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(fd.ops.cast(t, DataType.Float), dims=dims))
    configured(fd, tuning=tuning, target=small_gpu(8))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.float().sum(dims), atol=1e-2, rtol=1e-3)
    (params,) = schedules(fd)
    if all(x.stride(d) == 0 for d in dims):  # copies of one value: in place, scaled
        assert params.scheduler == "pointwise" and params.repeat, params
    else:
        assert params.scheduler == "reduction", params
    return fd, params


@pytest.mark.parametrize(
    "shape,dims,template,vector",
    [
        ((512, 164), [1], "inner", {torch.bfloat16: "v2", torch.float32: "v4"}),
        ((2048, 1000), [1], "inner", {torch.bfloat16: "v4", torch.float32: "v4"}),
        ((512, 276), [0], "outer", {torch.bfloat16: "v2", torch.float32: "v4"}),
        ((300, 1000), [0], "outer", {torch.bfloat16: "v4", torch.float32: "v4"}),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_reductions_with_a_factor_load_vectors(shape, dims, template, vector, dtype):
    """sm_90 PTX: row sums of 164 or 1000 elements and column sums of 276 or 1000 columns
    load vectors of the factor's elements (16 bytes at most); without factors, one
    element per load."""
    x = torch.randn(*shape).to(dtype)
    fd, params = _sum(x, dims)
    assert params.template == template and params.factors
    (art, *_) = compile_last_run(fd.executor())
    assert art.vector_widths.get(f"ld.global.{vector[dtype]}", 0) > 0, art.vector_widths
    off, plain = _sum(x, dims, R_OFF)
    assert plain.factors == ()
    (art, *_) = compile_last_run(off.executor())
    assert {k for k in art.vector_widths if k.startswith("ld.")} == {"ld.global.v1"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_reduction_values_over_layouts_and_factors(dtype):
    """Every dim subset of 3-D inputs whose extents give factors 2, 4 and 8 (6, 12, 20,
    24), in every memory order, sliced (a step, a start) and expanded."""
    g = torch.Generator().manual_seed(11)
    shape = (6, 20, 12)
    for order in [(0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1)]:
        phys = [shape[d] for d in order]
        base = torch.randn(phys[0], phys[1], 2 * phys[2] + 1, generator=g).to(dtype)
        for kind in ("dense", "sliced", "expanded"):
            y = base[:, :, : phys[2]] if kind != "sliced" else base[:, :, 1::2]
            x = y.permute(*[order.index(d) for d in range(3)])
            if kind == "expanded":
                x = x[:1].expand(shape)
            assert tuple(x.shape) == shape
            for dims in ([0], [1], [2], [0, 1], [1, 2], [0, 2]):
                _sum(x, dims)
