"""Inner reductions whose loads cannot be 16-byte vectors
(``ReductionTuning.scalar_inner_item``).

A bf16 or fp16 max or sum over dims 0 and 2 of [b, m, n] with n odd: the rows of n
elements start anywhere, and with two reduced groups the aligned loop (``align_rows``)
does not apply, so each load moves one element. With the field at 4 the inner tile is
sized as for 4-byte elements (half the elements a thread). The tests check the tile each
way, the numbers against torch on the interpreter, that aligned rows and fp32 keep their
tile, and the registers of both tiles compiled for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

ON = DEFAULT.with_fields(reduction=dict(scalar_inner_item=4))
OFF = DEFAULT.with_fields(reduction=dict(scalar_inner_item=0))


def _input(b: int, m: int, n: int, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(b * m + n)
    return torch.randn(b, m, n, generator=g).to(dtype)


def _reduce(x: torch.Tensor, op: str, tuning):
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(getattr(fd.ops, op)(t, [0, 2]))
    configured(fd, tuning=tuning)
    (out,) = fd.execute([x])
    want = x.float().amax((0, 2)) if op == "max" else x.float().sum((0, 2))
    torch.testing.assert_close(out.float(), want, rtol=2e-2, atol=5e-2)
    (params,) = schedules(fd)
    return fd, params


def _per_thread(params) -> int:
    return params.block_x * params.block_r * params.unroll // (32 * params.num_warps)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("op", ["max", "sum"])
@pytest.mark.parametrize("n", [4099, 333])
def test_scalar_rows_take_the_4_byte_tile(op, dtype, n):
    x = _input(3, 5, n, dtype)
    _, on = _reduce(x, op, ON)
    _, off = _reduce(x, op, OFF)
    assert on.template == off.template == "inner" and not on.align_rows, (on, off)
    assert _per_thread(on) < _per_thread(off), (on, off)


@pytest.mark.parametrize("n, dtype", [(4096, torch.bfloat16), (4099, torch.float32)], ids=str)
def test_aligned_rows_and_fp32_keep_their_tile(n, dtype):
    """Rows of 4096 bf16 (8 KB apart) load 16-byte vectors, and fp32 is sized as 4-byte
    elements already: the field leaves both."""
    x = _input(3, 5, n, dtype)
    _, on = _reduce(x, "max", ON)
    _, off = _reduce(x, "max", OFF)
    assert on == off


def test_a_sliced_view_matches_torch():
    """Rows of 1001 of a [4, 6, 2003] buffer, every other element: strided, one element a
    load either way."""
    x = _input(4, 6, 2003, torch.bfloat16)[:, :, ::2]
    _reduce(x, "sum", ON)


def test_fewer_registers_on_sm90():
    x = _input(2, 6, 20011, torch.float16)
    regs = {}
    for name, tuning in (("on", ON), ("off", OFF)):
        fd, _ = _reduce(x, "max", tuning)
        arts = compile_last_run(fd.executor())
        regs[name] = max(a.resources["REG"] for a in arts)
        assert all(a.local_bytes == 0 for a in arts), [a.resources for a in arts]
    assert regs["on"] < regs["off"], regs


QUARTER = DEFAULT.with_fields(reduction=dict(scalar_inner_item=16))  # the measured candidate


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("op", ["max", "sum", "var_mean"])
@pytest.mark.parametrize("layout", ["contiguous", "r3_093", "sliced"])
def test_the_16_byte_item_tile_matches_torch(layout, op, dtype):
    """The measured choice's candidate ``scalar_inner_item=16``: fp32 and bf16 max, sum and
    var_mean over rows of odd widths, contiguous, laid out as r3_093 ([b, 1, n, m] with n
    innermost, rows n elements apart) and sliced (every other element), against torch.
    Its tile holds fewer elements a thread than the rule's (fp32: half; bf16 keeps its
    scalar tile where that is already as small); var_mean of rows this short takes the
    normalization kernel either way (its values are checked all the same)."""
    if layout == "contiguous":
        x, dims = _input(3, 5, 255, dtype), [0, 2]
    elif layout == "r3_093":
        g = torch.Generator().manual_seed(93)
        x = torch.randn(1, 9, 37, 255, generator=g).to(dtype)
        x, dims = x.permute(2, 0, 3, 1), [1, 2]  # [37, 1, 255, 9], dim 2 innermost
    else:
        x, dims = _input(3, 4, 667, dtype)[:, :, ::2], [0, 2]
    outs = {}
    for name, tuning in (("quarter", QUARTER), ("rule", DEFAULT)):
        with FusionDefinition() as fd:
            t = fd.from_pytorch(x)
            if op == "var_mean":
                var, mean = fd.ops.var_mean(t, dims, correction=1)
                fd.add_output(var)
                fd.add_output(mean)
            else:
                fd.add_output(getattr(fd.ops, op)(t, dims))
        configured(fd, tuning=tuning)
        got = fd.execute([x])
        xf = x.float()
        if op == "var_mean":
            want = list(torch.var_mean(xf, dims, correction=1))
        else:
            want = [xf.amax(dims) if op == "max" else xf.sum(dims)]
        for g, w in zip(got, want):
            torch.testing.assert_close(g.float(), w, rtol=2e-2, atol=5e-2)
        (outs[name],) = schedules(fd)
    q, r = outs["quarter"], outs["rule"]
    if op == "var_mean":  # rows this short: the normalization kernel, either way
        assert q.scheduler == r.scheduler == "normalization", (q, r)
        return
    assert q.template == r.template == "inner", (q, r)
    assert _per_thread(q) <= _per_thread(r), (q, r)
    if dtype == torch.float32:
        assert _per_thread(q) < _per_thread(r), (q, r)
