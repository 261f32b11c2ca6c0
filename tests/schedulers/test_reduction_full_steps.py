"""Whole R steps unmasked (issue 16): a flat inner R whose extent the launcher does not
specialize as a multiple of 16 (a column of 321230540, all of [509, 1487573]) kept
every load one element wide, since the mask ``r < NR`` is then not constant over a
vector. Such kernels (``ReductionParams.full_steps``) loop over the chunk's whole steps
without the R mask, then over the rest masked. So do flat walks over several reduced
groups at any extent: their loads are one element wide anyway, and the mask is an add
and a compare per element.

Checked: the choice (odd and 8 * odd extents, not multiples of 16 over one group, not the
nested walk);
numbers against torch for sum, max, var_mean and Welford (its counted steps) in fp32 and
bf16, rows unsplit and split (every chunk but the last whole); 16-byte loads for sm_90.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.analysis.device import DeviceInfo
from layoutfuse.codegen.backend import ptx_vector_widths
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import reduction as rd
from support.execution import INTERPRETER_WARNINGS, configured, schedules

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

# one SM and eight: one row's R is split into fewer or more chunks
ONE_SM = DeviceInfo("cpu", 1, 256, 1 << 20, 65536)
EIGHT_SM = DeviceInfo("cpu", 8, 256, 1 << 20, 65536)


def _run(x, op, dims, target):
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if op == "var_mean":
            var, mean = fd.ops.var_mean(t, dims=dims, correction=1)
            fd.add_output(var)
            fd.add_output(mean)
        elif op == "welford":  # a reduction kernel's Welford (var_mean: a normalization)
            avg, m2, _ = fd.ops.welford(t, dims=dims)
            fd.add_output(avg)
            fd.add_output(m2)
        else:
            fd.add_output(getattr(fd.ops, op)(t, dims=dims))
    configured(fd, target=target)
    outs = fd.execute([x])
    ref = x.double()
    if op == "var_mean":
        expect = list(torch.var_mean(ref, dim=dims, correction=1))
    elif op == "welford":
        mean = ref.mean(dims)
        expect = [mean, ((ref - mean.unsqueeze(dims[0])) ** 2).sum(dims)]
    elif op == "max":
        expect = [ref.amax(dims)]
    else:
        expect = [ref.sum(dims)]
    tol = 1e-2 if x.dtype == torch.bfloat16 else 1e-4
    for out, e in zip(outs, expect):
        torch.testing.assert_close(out.double(), e.to(out.dtype).double(), rtol=tol, atol=tol)
    return fd


def test_several_reduced_groups_take_whole_steps_at_any_extent():
    """dims 0 and 2 of [640, 3, 32] (a flat R of 20480, a multiple of 16): its loads are
    one element wide anyway (R jumps between its groups), and the mask would cost each
    element an add and a compare, so whole steps run unmasked; the values match torch's."""
    x = torch.randn(640, 3, 32)
    fd = _run(x, "sum", [0, 2], ONE_SM)
    (params,) = schedules(fd)
    assert len(params.r_groups) == 2 and not params.r_nest, params
    assert params.full_steps, params


@pytest.mark.parametrize("n, full", [(20001, True), (20008, True), (20000, False), (20480, False)])
def test_full_steps_chosen_by_extent(n, full):
    """Odd 20001 and 8 * odd 20008 get whole steps; 20000 and 20480 (multiples of 16,
    which the launcher specializes) keep one masked loop."""
    fd = _run(torch.randn(n), "sum", [0], ONE_SM)
    (params,) = schedules(fd)
    assert params.full_steps is full


# the interpreter combines a Welford one element at a time: one combination by default
NUMBER_CASES = [
    pytest.param(
        dtype,
        op,
        target,
        id=f"{op}-{dtype}-{name}",
        marks=[pytest.mark.full]
        if op == "welford" and (dtype, name) != (torch.float32, "split")
        else [],
    )
    for dtype in (torch.float32, torch.bfloat16)
    for op in ("sum", "max", "var_mean", "welford")
    for target, name in ((ONE_SM, "unsplit"), (EIGHT_SM, "split"))
]


@pytest.mark.parametrize("dtype, op, target", NUMBER_CASES)
def test_numbers(dtype, op, target):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 9001, generator=g).to(dtype)  # three odd rows
    fd = _run(x, op, [1], target)
    (params,) = schedules(fd)
    if op == "var_mean" and not isinstance(params, rd.ReductionParams):
        return  # the normalization scheduler took it whole: the numbers were checked
    assert params.template == "inner" and params.full_steps
    y = torch.randn(30011, generator=g).to(dtype)  # one odd row: split into chunks
    fd = _run(y, op, [0], target)
    (params,) = schedules(fd)
    assert params.full_steps and params.split > 1


def test_nested_walk_keeps_its_loop():
    x = torch.randn(64, 4, 1001)  # [R, X, R]: the nested walk tiles the odd stride-1 group
    fd = _run(x, "sum", [0, 2], ONE_SM)
    (params,) = schedules(fd)
    assert params.r_nest and not params.full_steps


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_whole_steps_load_16_byte_vectors(dtype):
    fd = _run(torch.randn(40961).to(dtype), "sum", [0], ONE_SM)
    (art,) = compile_last_run(fd.executor())
    assert ptx_vector_widths(art.ptx).get("ld.global.v4", 0) > 0
