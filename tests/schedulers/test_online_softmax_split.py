"""Softmax's max and sum in one reduction kernel (``KernelSpec.online``): the segmented
plan of a softmax whose rows do not fit a tile and cannot fill the GPU looped. Each lane
keeps a running max and a running sum of ``exp(a - max)``; split partial pairs are
combined in split order by the ticket or by a finishing kernel. Values against torch
(-inf, NaN and +inf entries included), every memory order of 2-D and 3-D inputs, both
ends of the layout (inner and outer templates), fp32 and bf16; the kernels compile for
sm_90.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.runtime.pipeline import default_heuristics
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, small_gpu

pytestmark = INTERPRETER_WARNINGS + [pytest.mark.filterwarnings("ignore::RuntimeWarning")]

DT = {torch.float32: DataType.Float, torch.bfloat16: DataType.BFloat16}
TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.bfloat16: dict(atol=2e-2, rtol=2e-2)}


def segmented(fd: FusionDefinition, **settings) -> FusionDefinition:
    """``fd`` planned so that every softmax takes the segmented plan: rows of more than 64
    elements do not fit a tile, and 4096 multiprocessors are more than any grid here;
    ``settings``: more of the executor's configuration (``heuristics``)."""
    return configured(
        fd,
        tuning=DEFAULT.with_fields(normalization=dict(max_tile=64)),
        target=small_gpu(4096),
        **settings,
    )


def softmax(x: torch.Tensor, dim: int, log: bool = False) -> FusionDefinition:
    """softmax (or log_softmax) over ``dim`` in fp32, cast back; also the max and the sum."""
    kept = [d for d in range(x.dim()) if d != dim]
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        tf = fd.ops.cast(t, DataType.Float)
        m = fd.ops.max(tf, dims=[dim])
        z = fd.ops.sub(tf, fd.ops.broadcast_in_dim(m, shape=t.shape(), broadcast_dims=kept))
        e = fd.ops.exp(z)
        s = fd.ops.sum(e, dims=[dim])
        sb = fd.ops.broadcast_in_dim(s, shape=t.shape(), broadcast_dims=kept)
        y = fd.ops.sub(z, fd.ops.log(sb)) if log else fd.ops.div(e, sb)
        fd.add_output(fd.ops.cast(y, DT[x.dtype]))
        fd.add_output(m)
        fd.add_output(s)
    return fd


def check(fd, x: torch.Tensor, dim: int, log: bool = False) -> None:
    y, m, s = fd.execute([x])
    xf = x.float()
    want = (torch.log_softmax if log else torch.softmax)(xf, dim).to(x.dtype)
    torch.testing.assert_close(y.float(), want.float(), equal_nan=True, **TOL[x.dtype])
    torch.testing.assert_close(m, xf.amax(dim), equal_nan=True)
    ref_sum = torch.exp(xf - xf.amax(dim, keepdim=True)).sum(dim)
    torch.testing.assert_close(s, ref_sum, equal_nan=True, atol=1e-4, rtol=1e-5)
    scheds = fd.last_schedule()
    # a reduced dim that is expanded is copies of one value (``Problem.repeat``): the
    # max and the sum are computed in place, the sum times the copies
    first = "pointwise" if x.stride(dim) == 0 else "reduction"
    assert isinstance(scheds, list) and [p.scheduler for p in scheds] == [
        first,
        "pointwise",
    ], scheds
    assert first == "reduction" or scheds[0].repeat, scheds
    assert "softmax's max and sum in one pass" in fd.segment([x])[0]["reason"]


def ordered(shape, order, dtype, seed=0) -> torch.Tensor:
    """Random values in memory order ``order`` (outermost first)."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn([shape[d] for d in order], generator=g) * 3
    inv = [order.index(d) for d in range(len(shape))]
    return base.permute(inv).to(dtype)


CASES = [
    (shape, order, dim, dtype)
    for shape in [(70, 150), (80, 5, 90)]
    for order in itertools.permutations(range(len(shape)))
    for dim in (len(shape) - 1, 0)
    for dtype in (torch.float32, torch.bfloat16)
]


def _every_layout_params():
    """Every (shape, order, dim) in one dtype by default, alternating fp32 and bf16; the
    other dtype of each with --full."""
    for k, c in enumerate(CASES):
        layout, parity = divmod(k, 2)
        yield pytest.param(
            *c,
            id=f"{'x'.join(map(str, c[0]))}-mem{''.join(map(str, c[1]))}-dim{c[2]}"
            f"-{str(c[3]).split('.')[-1]}",
            marks=() if parity == layout % 2 else (pytest.mark.full,),
        )


@pytest.mark.parametrize("shape, order, dim, dtype", _every_layout_params())
def test_every_layout(shape, order, dim, dtype):
    x = ordered(shape, order, dtype)
    check(segmented(softmax(x, dim)), x, dim)


def with_specials(dtype) -> torch.Tensor:
    """[5, 3000]: row 0 -inf over its first half (whole split chunks of -inf), row 1 all
    -inf, row 2 a NaN, row 3 a +inf, row 4 -inf at its end."""
    x = ordered((5, 3000), (0, 1), torch.float32)
    x[0, :1600] = float("-inf")
    x[1] = float("-inf")
    x[2, 100] = float("nan")
    x[3, 2990] = float("inf")
    x[4, -7:] = float("-inf")
    return x.to(dtype)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("finish, split", [("ticket", 3), ("kernel", 6), (None, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_split_pairs_combine_like_torch(dtype, finish, split, log):
    forced = (
        dict(split=split, block_r=256)
        if finish is None
        else dict(split=split, finish=finish, block_r=256)
    )

    def heuristics(scheduler, problem, device, tuning):
        params = default_heuristics(scheduler, problem, device, tuning)
        return (
            rd.override(params, problem.sizes, **forced)
            if scheduler.name == "reduction"
            else params
        )

    x = with_specials(dtype)
    fd = segmented(softmax(x, 1, log), heuristics=heuristics)
    check(fd, x, 1, log)
    params = fd.last_schedule()[0]
    assert params.split == split and (split == 1 or params.finish == finish), params
    for art in compile_last_run(fd.executor()):
        assert art.local_bytes == 0, (art.name, art.resources)


def sliced(dtype, first: bool = False) -> torch.Tensor:
    """[6, 1, 150] (or [150, 1, 6]) sliced out of a larger tensor: strides that skip
    elements and a size-1 dim."""
    big = ordered((300, 3, 12) if first else (12, 3, 300), (2, 0, 1), dtype, seed=4)
    return big[::2, 1:2, ::2]


def expanded(dtype) -> torch.Tensor:
    """[4, 150, 70]: a [4, 1, 70] tensor expanded along dim 1 (stride 0)."""
    return ordered((4, 1, 70), (0, 1, 2), dtype, seed=5).expand(4, 150, 70)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize(
    "make, dim",
    [(lambda d: sliced(d), 2), (lambda d: sliced(d, first=True), 0), (expanded, 1), (expanded, 2)],
    ids=["sliced-last", "sliced-first", "expanded-dim", "expanded-other"],
)
def test_sliced_and_expanded_inputs(make, dim, dtype):
    """Non-contiguous inputs (a slice with a size-1 dim, an expanded dim) keep their strides
    through the online kernel; an expanded reduced dim repeats one value per row."""
    x = make(dtype)
    assert x.shape[dim] > 64 and not x.is_contiguous()  # rows too long for a tile
    check(segmented(softmax(x, dim)), x, dim)
