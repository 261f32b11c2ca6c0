"""cumsum's ``chain`` mode (``ScanTuning.chain_tiles_per_sm``): one pass, a chunk a program,
each chunk adding the sums of the chunks before it (decoupled look-back over flags).

In the interpreter the programs run one after another in ticket order, so every flag a
program reads is already set: these tests check the values, the layouts, the flags and
tickets left zeroed for the next call (each fusion runs twice), the plan, and that the
kernel compiles for sm_90 with its atomics (the waiting itself only happens on the GPU).
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.scan import ScanParams
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

CHAIN = DEFAULT.with_fields(scan=dict(chain_tiles_per_sm=8))


def _run(x: torch.Tensor, dim: int, tuning=CHAIN, epilogue: bool = False):
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        c = fd.ops.cumsum(t, dim)
        fd.add_output(c)
        if epilogue:
            fd.add_output(fd.ops.mul(c, c))
    fd = configured(fd, tuning=tuning)
    first = fd.execute([x])
    again = fd.execute([x])  # the flags and tickets the first call left zeroed
    for a, b in zip(first, again):
        assert torch.equal(a, b)
    (params,) = [
        s.params for s in fd.executor().last_run.segments if isinstance(s.params, ScanParams)
    ]
    return fd, first, params


def _reference(x: torch.Tensor, dim: int) -> torch.Tensor:
    if x.dtype.is_floating_point:
        return torch.cumsum(x.double(), dim)
    return torch.cumsum(x, dim)


def _layout(shape, order, kind, dtype, gen):
    phys = [shape[d] for d in order]
    if kind == "sliced":
        phys[-1] *= 2
    if dtype.is_floating_point:
        base = torch.randn(phys, generator=gen).to(dtype)
    else:
        base = torch.randint(-50, 50, phys, generator=gen).to(dtype)
    if kind == "sliced":
        base = base[..., ::2]
    return base.permute(*[order.index(d) for d in range(len(shape))])


CASES = [
    ((300, 70), 0),  # the scanned dim outer: tiles of stride-1 rows
    ((70, 300), 1),  # the scanned dim inner: tiles along it
    ((3, 200, 5), 1),
    ((2, 5, 4100), 2),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
@pytest.mark.parametrize("kind", ["dense", "sliced"])
@pytest.mark.parametrize("shape, dim", CASES, ids=str)
def test_chained_cumsum_in_every_memory_order(shape, dim, kind, dtype):
    gen = torch.Generator().manual_seed(len(shape) * 10 + dim)
    for order in itertools.permutations(range(len(shape))):
        x = _layout(shape, order, kind, dtype, gen)
        fd, (out,), params = _run(x, dim)
        ref = _reference(x, dim)
        if dtype.is_floating_point:
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
            scale = ref.abs().max().item() + 1
            torch.testing.assert_close(out.double() / scale, ref / scale, rtol=tol, atol=tol)
        else:
            assert out.dtype == torch.int64 and torch.equal(out, ref)
        if params.mode != "block":  # a scanned dim longer than one tile
            assert params.mode == "chain", (order, params)


def test_an_expanded_input_and_an_epilogue():
    """An input expanded along the rows (stride 0) and an output computed from the scan."""
    x = torch.randn(1, 5000).expand(40, 5000)
    fd, (out, sq), params = _run(x, 1, epilogue=True)
    assert params.mode == "chain"
    ref = torch.cumsum(x.double(), 1)
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(sq.double(), ref * ref, rtol=1e-4, atol=1e-3)


def test_the_plan_takes_whole_row_segments_and_a_chunk_a_program():
    """The strided cumsum of [8192, 4096] (loop: 256 tiles of 16 columns) chains 64 tiles
    of 64 columns over chunks of 64 rows: 128 chunks, 8192 programs; its workspaces are
    each chunk's sums and prefixes, a flag a program and two tickets, those kept zeroed."""
    from layoutfuse.schedulers import scan as sc

    x = torch.empty(8192, 4096, dtype=torch.bfloat16, device="meta")
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), 0))
    fd = configured(fd, tuning=CHAIN)
    record = fd.executor().plan([x])
    (run,) = record.segments
    params = run.params
    assert isinstance(params, ScanParams)
    assert (params.mode, params.block_r, params.block_n) == ("chain", 64, 64)
    assert [launch.grid for launch in record.launches] == [(8192,)]
    assert "decoupled look-back" in run.reason
    spaces = {w.name: w for w in sc.workspaces(run.segment, run.problem, params)}
    assert spaces["ws0"].shape == spaces["ws1"].shape == (4096 * 128,)
    assert spaces["flags"].shape == (8192,) and spaces["flags"].zeroed
    assert spaces["tickets"].shape == (2,) and spaces["tickets"].zeroed
    off = (
        configured(_plan_fd(x), tuning=DEFAULT.with_fields(scan=dict(chain_tiles_per_sm=0)))
        .executor()
        .plan([x])
    )
    assert off.params[0].mode == "loop"


def _plan_fd(x):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), 0))
    return fd


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_the_chain_kernel_compiles_for_sm90(dtype):
    """Its flags are GPU-scope release stores and acquire loads, its last ticket an acq_rel
    add and another program's sums L2 loads, in the PTX."""
    x = torch.randn(300, 70).to(dtype)
    fd, _, params = _run(x, 0)
    assert params.mode == "chain"
    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx
    assert "atom.global.gpu.release.exch" in art.ptx  # publishing a flag
    assert "ld.global.gpu.acquire" in art.ptx  # reading one (the add of 0, as a load)
    assert "atom.global.gpu.acq_rel.add" in art.ptx  # the ticket of the last to finish
    assert "ld.global.cg" in art.ptx  # another program's sums, from L2
