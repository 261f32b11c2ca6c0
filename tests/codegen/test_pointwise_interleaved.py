"""Transposes onto a short stride-1 dim (``PointwiseParams.interleaved``).

A [c, n] input written as [n, c] with c of 2 to 8: the tile's Y is the whole short dim,
its X the n that continue it in the output's memory. Stored along Y, each thread wrote
one element of c; the [c, BLOCK_X] tile transposed and flattened is one run of
``BLOCK_X * c`` elements, stored as 16-byte vectors. The tests run such transposes on the
interpreter against torch (c of 2, 4 and 8, a batch dim, partial tiles, several dtypes; c
of 3 keeps the element-wise store), and compile them for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


def _run(x: torch.Tensor, tuning=DEFAULT):
    """``x * 2 + 1`` stored row-major (nvFuser's stride_order: the last dim innermost)."""
    order = list(range(x.dim()))[::-1]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(
            fd.ops.add(fd.ops.mul(t, fd.define_scalar(2.0)), fd.define_scalar(1.0)),
            stride_order=order,
        )
    configured(fd, tuning=tuning)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, (x.float() * 2 + 1).to(x.dtype))
    assert out.is_contiguous()
    (params,) = schedules(fd)
    return fd, params


def _columns(shape: tuple[int, ...], dtype) -> torch.Tensor:
    """A tensor of ``shape`` whose last two dims are transposed in memory (dim -2 stride 1)."""
    g = torch.Generator().manual_seed(sum(shape))
    return torch.randn(*shape[:-2], shape[-1], shape[-2], generator=g).to(dtype).transpose(-1, -2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(1000, 2), (333, 4), (77, 8), (3, 130, 4)])
def test_short_output_rows_match_torch(shape, dtype):
    x = _columns(shape, dtype)
    _, params = _run(x)
    assert params.transpose and params.block_y == shape[-1], params
    assert params.interleaved == (1,), params


def test_a_short_dim_of_3_stores_element_by_element():
    """Y of 3 tiles as 4: not whole, so the store stays element-wise along Y."""
    _, params = _run(_columns((500, 3), torch.bfloat16))
    assert params.interleaved == (), params


def test_the_tuning_field_turns_it_off():
    off = DEFAULT.with_fields(pointwise=dict(interleave=0))
    _, params = _run(_columns((1000, 4), torch.bfloat16), off)
    assert params.interleaved == ()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_the_run_stores_16_byte_vectors(dtype):
    """sm_90 PTX of [4, 8192] -> [8192, 4]: 16-byte stores, where the element-wise store
    along Y has none."""
    x = _columns((8192, 4), dtype)
    fd, params = _run(x)
    assert params.interleaved == (1,)
    (art,) = compile_last_run(fd.executor())
    assert art.vector_widths.get("st.global.v4", 0) > 0, art.vector_widths
    fd, _ = _run(x, DEFAULT.with_fields(pointwise=dict(interleave=0)))
    (art,) = compile_last_run(fd.executor())
    assert art.vector_widths.get("st.global.v4", 0) == 0, art.vector_widths
