"""Stride arguments passed divided by their power-of-two factor (``problem.stride_factors``).

Triton specializes an integer argument only as 1 or a multiple of 16. A pointwise
kernel whose output rows are 4 elements apart ([n, 4], row-major) is given that stride as
``q * 4`` (``q`` the argument): the offsets along the tile's other axis are then known
multiples of 4, and the accesses along the short axis can be vectors. The tests check
the factors found, the kernel's arguments, values against torch over strides of every
factor (odd, 2, 4, 8, 16 and its multiples, sliced and expanded inputs, every memory
order of a 3-D input), and the sm_90 PTX: vector accesses the plain arguments do not
get.
"""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.problem import _power_of_two_factor
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")
OFF = DEFAULT.with_fields(pointwise=dict(stride_factors=False))


def _twice(x: torch.Tensor, order=None, tuning=None):
    """(fd, out) of ``x + x``, the output pinned to ``order``; checked against torch."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.add(t, t), stride_order=order)
    if tuning is not None:
        configured(fd, tuning=tuning)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x + x)
    return fd, out


def test_the_factor_is_the_power_of_two_below_16():
    got = {s: _power_of_two_factor(s) for s in (0, 1, 2, 3, 4, 6, 12, 24, 40, 16, 48, 4098)}
    assert got == {0: 1, 1: 1, 2: 2, 3: 1, 4: 4, 6: 2, 12: 4, 24: 8, 40: 8, 16: 1, 48: 1, 4098: 2}


def test_a_short_output_row_stride_is_passed_divided():
    """A column-major [4098, 4] input stored row-major: the input's column stride 4098
    (factor 2) and the output's row stride 4 (factor 4) become ``q * 2`` and ``q * 4``."""
    x = torch.randn(4, 4098).t()
    fd, out = _twice(x, order=[1, 0])
    assert out.stride() == (4, 1)
    (params,) = schedules(fd)
    flat = {f for row in params.stride_factors for f in row}
    assert flat == {1, 2, 4}, params.stride_factors
    src = fd.last_triton_code()
    assert "* 4)" in src and "* 2)" in src
    off, _ = _twice(x, order=[1, 0], tuning=OFF)
    (plain,) = schedules(off)
    assert plain.stride_factors == () and "* 4)" not in off.last_triton_code()


def test_strides_of_16_and_odd_strides_keep_their_arguments():
    x = torch.randn(32, 48)[:, :17]  # rows 48 apart (Triton: a multiple of 16)
    fd, _ = _twice(x)
    assert schedules(fd)[0].stride_factors == ()
    y = torch.randn(5, 33).t()  # columns 33 apart, the output's too
    fd, out = _twice(y)
    assert out.stride() == (1, 33) and schedules(fd)[0].stride_factors == ()


def _layouts(seed: int, count: int):
    """3-D inputs over every memory order with extents giving strides of each factor,
    some sliced (a step along a dim, a start) or expanded; outputs pinned to an order."""
    rng = random.Random(seed)
    extents = [2, 3, 4, 6, 8, 12, 20, 24]
    for _ in range(count):
        shape = [rng.choice(extents) for _ in range(3)]
        order = rng.sample(range(3), 3)
        kind = rng.choice(["dense", "sliced", "expanded"])
        yield shape, order, kind, rng.choice([None, *itertools.permutations(range(3))])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_values_over_layouts_match_torch(dtype):
    g = torch.Generator().manual_seed(5)
    for shape, order, kind, out_order in _layouts(3, 24):
        phys = [shape[d] for d in order]
        if kind == "sliced":
            phys[-1] += 3
        base = torch.randn(phys, generator=g).to(dtype)
        if kind == "sliced":
            base = base[..., 1 : 1 + shape[order[-1]]]
        x = base.permute(*[order.index(d) for d in range(3)])
        if kind == "expanded":
            x = x[:, :1, :].expand(shape)
        assert list(x.shape) == shape
        _, out = _twice(x, order=list(out_order) if out_order else None)
        assert out.shape == x.shape


def test_sm90_vectors_along_the_short_axis():
    """fp32 [4098, 4] column-major to row-major: with the factors the kernel loads and
    stores 2-element vectors; with plain stride arguments one element each."""
    x = torch.randn(4, 4098).t()
    fd, _ = _twice(x, order=[1, 0])
    (art,) = compile_last_run(fd.executor())
    widths = art.vector_widths
    assert widths.get("ld.global.v2", 0) > 0 and widths.get("st.global.v2", 0) > 0, widths
    off, _ = _twice(x, order=[1, 0], tuning=OFF)
    (plain,) = compile_last_run(off.executor())
    assert set(plain.vector_widths) == {"ld.global.v1", "st.global.v1"}, plain.vector_widths
