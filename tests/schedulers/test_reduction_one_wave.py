"""An unsplit outer grid a few programs past one wave (``reduction._past_one_wave``, tuning
``reduction.wave_tail``): its last wave is a few whole walks of R on a few
multiprocessors, so the tile of half the accumulators a thread is taken where its
programs then fit one wave.

Softmax's online max and sum over the rows of a row-major bf16 [64, C] (the segmented
plan: an outer reduction kernel of two accumulator tiles, then a pointwise kernel) on one
multiprocessor: [512, 8] x 2 tiles hold 32 accumulators a thread, 96 registers by the
estimate, 5 programs resident. C = 3072 makes 6 programs: [512, 4] x 4 (80 registers, 6
resident) makes one wave. C = 4096 makes 8, past the tail: the tile stays. Values against
torch; the kernels compile for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, small_gpu

pytestmark = INTERPRETER_WARNINGS + [pytest.mark.filterwarnings("ignore::RuntimeWarning")]

# segmented softmax: rows do not fit a tile, and the column blocks in flight pass L2
SEGMENTED = DEFAULT.with_fields(normalization=dict(max_tile=64, loop_online_narrow=0))
ONE_SM = small_gpu(1, l2_bytes=1024)


def _softmax_dim0(x: torch.Tensor, tail: float) -> FusionDefinition:
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        tf = fd.ops.cast(t, DataType.Float)
        bc = lambda v: fd.ops.broadcast_in_dim(v, shape=t.shape(), broadcast_dims=[1])  # noqa: E731
        e = fd.ops.exp(fd.ops.sub(tf, bc(fd.ops.max(tf, dims=[0]))))
        fd.add_output(fd.ops.cast(fd.ops.div(e, bc(fd.ops.sum(e, dims=[0]))), DataType.BFloat16))
    return configured(
        fd, tuning=SEGMENTED.with_fields(reduction=dict(wave_tail=tail)), target=ONE_SM
    )


def _tile(columns: int, tail: float, compile_sm90: bool = False) -> tuple[int, int, int, int]:
    x = torch.randn(64, columns, generator=torch.Generator().manual_seed(columns)).to(
        torch.bfloat16
    )
    fd = _softmax_dim0(x, tail)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out.float(), torch.softmax(x.float(), 0), atol=2e-2, rtol=2e-2)
    red, pointwise = fd.last_schedule()
    assert (red.scheduler, red.template, pointwise.scheduler) == ("reduction", "outer", "pointwise")
    if compile_sm90:
        for art in compile_last_run(fd.executor()):
            assert art.local_bytes == 0, (art.name, art.resources)
    return red.block_x, red.block_r, red.unroll, red.split


def test_a_few_programs_past_one_wave_take_half_the_accumulators():
    assert _tile(3072, 0.0) == (512, 8, 2, 1)
    assert _tile(3072, 0.5, compile_sm90=True) == (512, 4, 4, 1)


def test_a_grid_past_the_tail_keeps_its_tile():
    """8 programs against 5 resident: past 1.5 waves (and half the accumulators would not
    make one)."""
    assert _tile(4096, 0.5) == _tile(4096, 0.0) == (512, 8, 2, 1)


def test_a_grid_of_one_wave_keeps_its_tile():
    """5 programs, 5 resident: one wave already."""
    assert _tile(2560, 0.5) == _tile(2560, 0.0) == (512, 8, 2, 1)
