"""Outer reductions whose loads cannot be 16-byte vectors
(``ReductionTuning.scalar_outer_item``).

A bf16 max over dims 0 and 1 of a [r, m, 25] view whose rows of 25 lie 50 elements
apart (every other block of a [r, m, 50] buffer): no load can read a 16-byte vector, so
the 2-byte outer tile's 128 bytes a thread a step are 64 loads of one element each. With
the field at 4, the tile is sized as for 4-byte elements. The tests check the tile each
way, the numbers against torch on the interpreter (bf16, fp16, sum and max), that
aligned rows keep the 2-byte tile, and the registers of both tiles compiled for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_launch
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

ON = DEFAULT.with_fields(reduction=dict(scalar_outer_item=4))
OFF = DEFAULT.with_fields(reduction=dict(scalar_outer_item=0))


def _strided(rows: int, m: int, width: int, pitch: int, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(rows + m + width)
    return torch.randn(rows, m, pitch, generator=g).to(dtype)[:, :, :width]


def _reduce(x: torch.Tensor, op: str, tuning):
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(getattr(fd.ops, op)(t, [0, 1]))
    configured(fd, tuning=tuning)
    (out,) = fd.execute([x])
    want = x.float().amax((0, 1)) if op == "max" else x.float().sum((0, 1))
    torch.testing.assert_close(out.float(), want, rtol=2e-2, atol=5e-2)
    (params,) = schedules(fd)
    return fd, params


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("op", ["max", "sum"])
def test_scalar_rows_take_the_4_byte_tile(op, dtype):
    x = _strided(37, 300, 25, 50, dtype)
    _, on = _reduce(x, op, ON)
    _, off = _reduce(x, op, OFF)
    assert on.template == off.template == "outer", (on, off)
    threads = 32
    per_thread_on = on.block_x * on.block_r * on.unroll // (threads * on.num_warps)
    per_thread_off = off.block_x * off.block_r * off.unroll // (threads * off.num_warps)
    assert per_thread_on < per_thread_off, (on, off)


def test_aligned_rows_keep_the_2_byte_tile():
    """Rows 64 elements apart (128 bytes) load 16-byte vectors: the field leaves them."""
    x = _strided(37, 300, 25, 64, torch.bfloat16)
    _, on = _reduce(x, "max", ON)
    _, off = _reduce(x, "max", OFF)
    assert on == off


def test_fewer_registers_on_sm90():
    """Planned on meta tensors (the numbers are the tests above'), compiled for sm_90."""
    x = torch.empty(64, 512, 50, dtype=torch.bfloat16, device="meta")[:, :, :25]
    regs = {}
    for name, tuning in (("on", ON), ("off", OFF)):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.max(fd.from_pytorch(x), [0, 1]))
        configured(fd, tuning=tuning)
        record = fd.executor().plan([x])
        arts = [compile_launch(r.loaded, list(r.args), r.meta) for r in record.launches]
        regs[name] = arts[0].resources["REG"]
        assert all(a.local_bytes == 0 for a in arts), [a.resources for a in arts]
    assert regs["on"] < regs["off"], regs
