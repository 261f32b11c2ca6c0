"""Transposes around a short stride-1 dim both sides share (``PointwiseParams.flat_runs``).

A bf16 [N, 16, 2] tensor written as [16, N, 2] keeps its pairs together on both sides:
the tile's X axis spans the pair and the 16 that continue it in the input (32 elements
in a row), Y the N. Offsetting X as ``i % 2 + (i // 2) * s`` with ``s`` = 2 known only at
run time hid the input's run from Triton, and every load moved one element; the input's
offset along X is now ``i`` itself (its groups continue one another), masked once as
``i < 2 * n``. The tests run such transposes on the interpreter against torch (short
dims of 1 to 4, pinned and inferred outputs, several dtypes, an input whose outer group
does not continue the short one), and compile them for sm_90: 16-byte loads, and 16-byte
stores where the output's pairs continue along Y (``inner_runs``: the tile regrouped as
[BLOCK_X / 2, BLOCK_Y * 2]).
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")
# the small shapes stand in for large ones: their tiles without ``transpose_fill``
NO_FILL = DEFAULT.with_fields(pointwise=dict(transpose_fill=0))


def _run(x: torch.Tensor, order: list[int]):
    """``x * 2 + 1`` with the output pinned to nvFuser's ``stride_order`` ``order``."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        two = fd.define_scalar(2.0)
        fd.add_output(fd.ops.add(fd.ops.mul(t, two), fd.define_scalar(1.0)), stride_order=order)
    configured(fd, tuning=NO_FILL)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, (x.float() * 2 + 1).to(x.dtype))
    (params,) = schedules(fd)
    return fd, out, params


def _pairs(n: int, k: int, c: int, dtype) -> torch.Tensor:
    """A contiguous [n, k, c] tensor as the [k, n, c] view the output keeps in order."""
    g = torch.Generator().manual_seed(n * k + c)
    return torch.randn(n, k, c, generator=g).to(dtype).permute(1, 0, 2)


# the output [k, n, c] in row-major order: nvFuser's stride_order lists dim 2 innermost
ROW_MAJOR = [2, 1, 0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("c", [2, 4])
@pytest.mark.parametrize("n,k", [(1000, 16), (77, 24), (5, 3)])
def test_short_shared_dim_transposes_match_torch(n, k, c, dtype):
    x = _pairs(n, k, c, dtype)
    _, out, params = _run(x, ROW_MAJOR)
    assert out.is_contiguous()
    assert params.transpose and params.gx2 is not None, params
    assert params.whole_splits == "x" and "x" in params.flat_runs[0], params
    assert params.inner_runs == (1,), params  # the output's pairs continue along Y


def test_a_short_dim_of_3_splits_at_4_and_keeps_its_groups():
    """A short dim of 3 tiles as 4: the split is not its extent, so each group keeps its
    own index and mask."""
    x = _pairs(300, 16, 3, torch.bfloat16)
    _, out, params = _run(x, ROW_MAJOR)
    assert out.is_contiguous()
    assert (params.gx2, params.split_x, params.whole_splits) == (1, 4, ""), params


def test_an_input_whose_pairs_are_padded_keeps_both_indices():
    """Pairs sliced out of rows of 4 (a stride of 4 along the 16, not 2): nothing continues
    the short dim in the input's memory, so X is not one run of it."""
    x = torch.randn(500, 16, 4).to(torch.bfloat16)[:, :, :2].permute(1, 0, 2)
    _, out, params = _run(x, ROW_MAJOR)
    assert out.is_contiguous()
    assert params.whole_splits == "" and params.flat_runs == (), params


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_both_sides_move_16_byte_vectors(dtype):
    """sm_90 PTX of [4096, 16, 2] -> [16, 4096, 2]: 16-byte loads along the input's run of
    32 elements, 16-byte stores along the output's runs of pairs (``inner_runs``); without
    them (``pointwise.interleave=0``) the stores move a pair at a time."""
    x = _pairs(4096, 16, 2, dtype)
    fd, _, params = _run(x, ROW_MAJOR)
    assert "x" in params.flat_runs[0] and params.inner_runs == (1,), params
    (art,) = compile_last_run(fd.executor())
    assert art.vector_widths.get("ld.global.v4", 0) > 0, art.vector_widths
    assert art.vector_widths.get("st.global.v4", 0) > 0, art.vector_widths
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(
            fd.ops.add(fd.ops.mul(t, fd.define_scalar(2.0)), fd.define_scalar(1.0)),
            stride_order=ROW_MAJOR,
        )
    configured(fd, tuning=NO_FILL.with_fields(pointwise=dict(interleave=0, transpose_fill=0)))
    fd.execute([x])
    (art,) = compile_last_run(fd.executor())
    assert art.vector_widths.get("st.global.v4", 0) == 0, art.vector_widths


@pytest.mark.parametrize("c", [2, 4, 16])
@pytest.mark.parametrize(
    "order,runs",
    [([1, 0, 3, 2], (1,)), ([2, 0, 1, 3], (1,)), ([3, 0, 2, 1], ()), ([1, 0, 2, 3], ())],
)
def test_channels_last_inputs_to_channel_inner_orders_match_torch(c, order, runs):
    """NHWC inputs [N, C, H, W] (C innermost) stored with C innermost and the other dims in
    another order (nvFuser's ``stride_order``: 0 innermost): C continues with a different
    dim on each side; values and the output's memory order match torch's. Where the
    output continues C with the tile's Y (N first, then W or H), the stores run along Y."""
    n, h, wd = 3, 5, 7
    x = torch.randn(n, h, wd, c).to(torch.bfloat16).permute(0, 3, 1, 2)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(
            fd.ops.add(fd.ops.mul(t, fd.define_scalar(2.0)), fd.define_scalar(1.0)),
            stride_order=order,
        )
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, (x.float() * 2 + 1).to(x.dtype))
    ranks = sorted(range(4), key=lambda d: out.stride(d))
    assert [order[d] for d in ranks] == [0, 1, 2, 3], (out.stride(), order)
    (params,) = schedules(fd)
    assert params.inner_runs == runs, params
