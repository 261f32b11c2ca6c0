"""The PTX of pointwise kernels, compiled for sm_90 without a GPU.

Each test runs a fusion on CPU tensors (Triton's interpreter), then compiles the kernels
of that run for sm_90 with the specialization Triton's launcher makes for the real
arguments (``compile_last_run``), and asserts on what matters for bandwidth: 16-byte
vector loads and stores (``ld.global.v4`` / ``st.global.v4``), on both sides of a
transpose, and a transpose tile sized in bytes that fits in registers (ptxas, no
spills). A seeded sample of the layout sweep (``tests/support/pointwise_sweep.py``) must
compile too.
"""

from __future__ import annotations

import random

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.pointwise import DEFAULT_TUNING, transpose_tile
from layoutfuse.schedulers.tuning import DEFAULT
from support import pointwise_sweep as sweep
from support.execution import configured, schedules

V4_LOAD, V4_STORE = "ld.global.v4", "st.global.v4"


# each module's kernels are cached in a fresh directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


def run_add(x: torch.Tensor, y: torch.Tensor, stride_order=None):
    """(fd, out) of ``x + y`` run through kernels, the output pinned to ``stride_order``."""
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.from_pytorch(x), fd.from_pytorch(y)), stride_order=stride_order)
    # the small shapes stand in for large ones: no ``transpose_fill``
    configured(fd, tuning=DEFAULT.with_fields(pointwise=dict(transpose_fill=0)))
    (out,) = fd.execute([x, y])
    torch.testing.assert_close(out, (x.float() + y.float()).to(x.dtype))
    return fd, out


def only_artifact(fd: FusionDefinition):
    arts = compile_last_run(fd.executor())
    assert len(arts) == 1, f"expected one kernel, got {len(arts)}"
    assert ".target sm_90" in arts[0].ptx
    return arts[0]


def assert_vectorized(widths: dict[str, int]) -> None:
    assert widths.get(V4_LOAD, 0) > 0, f"no 16-byte loads: {widths}"
    assert widths.get(V4_STORE, 0) > 0, f"no 16-byte stores: {widths}"
    scalar = {k: n for k, n in widths.items() if k.endswith(".v1") or k.endswith(".v2")}
    assert not scalar, f"narrower accesses besides the v4 ones: {widths}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_contiguous_add_is_vectorized(dtype):
    g = torch.Generator().manual_seed(0)
    x, y = (torch.randn(256, 1024, generator=g).to(dtype) for _ in range(2))
    fd, out = run_add(x, y)
    assert out.is_contiguous()
    assert_vectorized(only_artifact(fd).vector_widths)


# dtype -> (BLOCK_X, BLOCK_Y, num_warps): edges of 256 bytes, 64 bytes per thread and access
TRANSPOSE_TILES = {
    torch.float32: (64, 64, 8),
    torch.bfloat16: (128, 128, 16),
    torch.float16: (128, 128, 16),
}


@pytest.mark.parametrize("dtype", list(TRANSPOSE_TILES), ids=str)
def test_transpose_is_vectorized_on_both_sides(dtype):
    """Column-major inputs, a row-major pinned output: the kernel tiles both stride-1 dims
    and transposes the tile on chip, so loads and stores are both 16 bytes wide. The tile
    has the fp32 tile's bytes per edge and per thread: a 2-byte tile has twice the
    elements per edge (4 times in all) and twice the warps, not half the bytes in flight."""
    g = torch.Generator().manual_seed(1)
    x, y = (torch.randn(512, 256, generator=g).to(dtype).t() for _ in range(2))  # [256, 512]
    fd, out = run_add(x, y, stride_order=[1, 0])
    assert out.stride() == (512, 1)
    (params,) = schedules(fd)
    assert params.transpose
    assert (params.block_x, params.block_y, params.num_warps) == TRANSPOSE_TILES[dtype]
    art = only_artifact(fd)
    assert art.num_warps == params.num_warps
    assert_vectorized(art.vector_widths)
    per_thread = params.block_x * params.block_y * dtype.itemsize // (32 * params.num_warps)
    assert per_thread == 64, "bytes per thread and access"
    # 16-byte vectors: each thread loads its 64 bytes of each input in 4, stores in 4
    assert art.vector_widths[V4_LOAD] == 2 * 4 and art.vector_widths[V4_STORE] == 4
    usage = art.resources
    assert usage["LOCAL"] == 0 and usage["STACK"] == 0, f"register spills: {usage}"
    # 65536 registers per SM: at most 40 per thread keeps 48 warps (3 programs of 16) on it
    assert usage["REG"] <= 40, f"{usage['REG']} registers/thread"


@pytest.mark.parametrize(
    "elem_bytes,tile",
    [
        (1, (128, 128, 16)),
        (2, (128, 128, 16)),
        (4, (64, 64, 8)),
        (8, (32, 32, 4)),
    ],
)
def test_transpose_tile_is_sized_in_bytes(elem_bytes, tile):
    """Edges of 256 bytes (at most 128 elements), 64 bytes per thread (at most 32
    elements), 4 to 16 warps; small extents shrink the tile, never below 4 warps."""
    assert transpose_tile(4096, 4096, elem_bytes, DEFAULT_TUNING) == tile
    assert transpose_tile(4096, 16, elem_bytes, DEFAULT_TUNING)[1] == 16
    assert transpose_tile(8, 8, elem_bytes, DEFAULT_TUNING) == (8, 8, 4)


def test_double_scalar_is_passed_as_f64():
    """A Double scalar parameter is annotated f64 (Triton would specialize a Python float
    as f32 and x_f64 + 0.1 would add 0.1f on the GPU)."""
    x = torch.zeros(64, 64, dtype=torch.float64)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.from_pytorch(x), fd.define_scalar(DataType.Double)))
    fd.execute([x, 0.1])
    params = [line for line in only_artifact(fd).ptx.splitlines() if ".param" in line]
    assert not any(".f32" in line for line in params), params


# --- a sample of the layout sweep ----------------------------------------------------------
PTX_SAMPLE = sorted(
    random.Random(90).sample(sorted(sweep.SAMPLE, key=lambda c: c.id), 16), key=lambda c: c.id
)


@pytest.mark.parametrize("case", [sweep.case_param(c) for c in PTX_SAMPLE])
def test_sweep_sample_compiles_for_sm90(case):
    run = sweep.run_case(case)
    torch.testing.assert_close(run.out, run.tensors.expected)
    arts = compile_last_run(run.fd.executor())
    if not arts:
        assert run.tensors.view_of is not None and sweep.pin(case) is None, (
            "only a view of an input launches no kernel"
        )
    for art in arts:
        assert ".target sm_90" in art.ptx and art.vector_widths, art.name


@pytest.mark.parametrize("rows_major", [True, False], ids=["row-major", "col-major"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_row_statistics_are_loaded_and_computed_once_per_row(dtype, rows_major):
    """``(x - mean) * rsqrt(var + eps)`` with per-row statistics (a segmented layer
    norm's last kernel): the statistics are loaded with their tile axis's mask, in that
    axis's shape, so rsqrt runs per row and the tile only broadcasts it; x keeps the tile's
    mask and 16-byte vectors."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(37, 300, generator=g).to(dtype)
    if not rows_major:
        x = x.t().contiguous().t()
    mean, var = torch.randn(37, generator=g), torch.rand(37, generator=g) + 0.5
    with FusionDefinition() as fd:
        t, m, v = fd.from_pytorch(x), fd.from_pytorch(mean), fd.from_pytorch(var)
        rstd = fd.ops.rsqrt(fd.ops.add(v, fd.define_scalar(1e-5, dtype=DataType.Double)))
        centered = fd.ops.sub(
            fd.ops.cast(t, DataType.Float),
            fd.ops.broadcast_in_dim(m, shape=t.shape(), broadcast_dims=[0]),
        )
        y = fd.ops.mul(centered, fd.ops.broadcast_in_dim(rstd, shape=t.shape(), broadcast_dims=[0]))
        fd.add_output(
            fd.ops.cast(y, DataType.Float if dtype == torch.float32 else DataType.BFloat16)
        )
    (out,) = fd.execute([x, mean, var])
    want = (x.float() - mean[:, None]) * torch.rsqrt(var[:, None] + 1e-5)
    torch.testing.assert_close(
        out.float(),
        want,
        atol=2e-2 if dtype != torch.float32 else 1e-5,
        rtol=2e-2 if dtype != torch.float32 else 1e-5,
    )
    loads = [line for line in fd.last_triton_code().splitlines() if "tl.load(" in line]
    axis_masked = [line for line in loads if "mask=mask_x" in line or "mask=mask_y" in line]
    assert len(loads) == 3 and len(axis_masked) == 2, loads  # mean and var, not x
    art = only_artifact(fd)
    assert art.local_bytes == 0, art.resources


def test_every_load_is_issued_before_the_math():
    """A GELU backward (Thunder's decomposition: erf, exp, two inputs): every input's loads
    come before libdevice's ``erff``, whose branches end ptxas's basic blocks. Emitted where
    first used, the second input's loads came after the erf of every element."""
    import math

    g = torch.Generator().manual_seed(3)
    x, dy = (torch.randn(4, 4096, generator=g) for _ in range(2))
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(dy)
        s = fd.define_scalar(1 / math.sqrt(2))
        t4 = fd.ops.mul(t0, s)
        pdf = fd.ops.exp(fd.ops.neg(fd.ops.pow(t4, fd.define_scalar(2.0))))
        cdf = fd.ops.add(fd.define_scalar(0.5), fd.ops.mul(fd.define_scalar(0.5), fd.ops.erf(t4)))
        dpdf = fd.ops.mul(fd.ops.mul(fd.define_scalar(2 / math.sqrt(math.pi)), pdf), s)
        out = fd.ops.add(
            fd.ops.mul(cdf, t1),
            fd.ops.mul(dpdf, fd.ops.mul(fd.define_scalar(0.5), fd.ops.mul(t0, t1))),
        )
        fd.add_output(out)
    (got,) = fd.execute([x, dy])
    xd, dyd = x.double(), dy.double()
    want = dyd * (
        0.5 * (1 + torch.erf(xd / math.sqrt(2)))
        + xd * torch.exp(-xd * xd / 2) / math.sqrt(2 * math.pi)
    )
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)
    lines = only_artifact(fd).ptx.splitlines()
    loads = [i for i, line in enumerate(lines) if "ld.global" in line]
    first_branch = next(i for i, line in enumerate(lines) if " bra " in line or "\tbra" in line)
    assert len(loads) >= 2 and max(loads) < first_branch, (loads, first_branch)
