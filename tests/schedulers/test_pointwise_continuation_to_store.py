"""Transposes whose loads and store both have a short stride-1 group, continued by the same
group (``PointwiseTuning.continuation_to_store``).

A [4, 14, n] input whose dim 1 is innermost, stored with dim 0 innermost and dim 2 next:
the input's 14 and the output's 4 are both continued by n. By default X (the loads'
side) flattens 14 with n and Y is the output's 4, so a store runs 4 x (BLOCK_X / 16)
elements; with the field on, Y (the store's side) flattens 4 with n and X is the 14, so a
store runs BLOCK_Y elements, as Inductor's tile for this copy does. The tests check the
tile each way, numbers and strides against torch on the interpreter (several dtypes,
partial tiles, a chain of ops), and compile the new tile for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

ON = DEFAULT.with_fields(pointwise=dict(continuation_to_store=1))
OFF = DEFAULT.with_fields(pointwise=dict(continuation_to_store=0))
ORDER = [0, 2, 1]  # nvFuser's stride_order: dim 0 innermost, then dim 2, dim 1 outermost


def _input(batch: int, inner: int, n: int, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(batch * inner + n)
    return torch.randn(batch, n, inner, generator=g).to(dtype).permute(0, 2, 1)


def _run(x: torch.Tensor, tuning, chain: bool = False):
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        y = fd.ops.mul(fd.ops.tanh(t), t) if chain else fd.ops.add(t, fd.define_scalar(1.0))
        fd.add_output(y, stride_order=ORDER)
    configured(fd, tuning=tuning)
    (out,) = fd.execute([x])
    want = torch.tanh(x.float()) * x.float() if chain else x.float() + 1
    torch.testing.assert_close(out, want.to(x.dtype))
    b, _, n = x.shape
    assert out.stride() == (1, b * n, b), out.stride()
    (params,) = schedules(fd)
    return fd, params


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("n", [320, 333])
def test_the_store_side_flattens(n, dtype):
    x = _input(4, 14, n, dtype)
    _, on = _run(x, ON)
    _, off = _run(x, OFF)
    assert off.gx2 is not None and off.gy2 is None, off
    assert on.transpose and on.gx2 is None and on.gy2 == off.gx2, on
    assert on.split_y == 4 and on.block_x == 16 and on.block_y % 4 == 0, on
    assert "y" in on.whole_splits, on


@pytest.mark.parametrize("batch, inner", [(2, 30), (8, 5), (3, 14)])
def test_other_short_groups_match_torch(batch, inner):
    x = _input(batch, inner, 97, torch.float32)
    _, on = _run(x, ON, chain=True)
    assert on.transpose and on.gy2 is not None, on


def test_a_long_inner_group_keeps_the_loads_side():
    """The input's stride-1 group of 100 (over the fp32 edge of 64) is not short: the rule
    does not apply and X keeps its whole group."""
    x = _input(4, 100, 50, torch.float32)
    _, on = _run(x, ON)
    _, off = _run(x, OFF)
    assert on == off


def test_the_store_side_tile_stores_16_byte_vectors():
    """sm_90 PTX of fp32 [4, 14, 4096]: the store runs along Y as 16-byte vectors with the
    field on; stored element by element with it off."""
    fd, params = _run(_input(4, 14, 4096, torch.float32), ON)
    assert params.gy2 is not None
    (art,) = compile_last_run(fd.executor())
    assert art.local_bytes == 0, art.resources
    assert art.vector_widths.get("st.global.v4", 0) > 0, art.vector_widths
    fd, _ = _run(_input(4, 14, 4096, torch.float32), OFF)
    (art,) = compile_last_run(fd.executor())
    assert art.vector_widths.get("st.global.v4", 0) == 0, art.vector_widths
