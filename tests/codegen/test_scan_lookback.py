"""cumsum's one-pass look-back (mode ``lookback``, ``codegen.scan``): the walk over
published words, and the kernel compiled for sm_90.

On the CPU interpreter the programs run in ticket order, so every predecessor has
published its running sum before a program looks back. The walk over chunk sums
(kind AGGREGATE) is tested by launching one program of a real kernel over flag words
set by hand: the words of another launch's epoch, chunk sums to add, a running sum to
stop at.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen import backend
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.codegen.scan import AGGREGATE, INCLUSIVE
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules, small_gpu

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

# rows of 48 in 6 chunks of 8, a tile of 2 rows, 2 predecessors a look-back step
SMALL = DEFAULT.with_fields(scan=dict(max_block=8, chunk=8, tile_elements=16, lookback_window=2))


def _cumsum(x: torch.Tensor, dim: int, **settings) -> FusionDefinition:
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), dim))
    return configured(fd, **settings) if settings else fd


def _word(tag: int, value: float) -> int:
    bits = torch.tensor([value], dtype=torch.float32).view(torch.int32).item() & 0xFFFFFFFF
    return (tag << 32) | bits


def _value(word: int) -> float:
    low = torch.tensor([word & 0xFFFFFFFF], dtype=torch.int64).to(torch.int32)
    return low.view(torch.float32).item()


def _one_program(fd, x, out, ticket: int, epoch: int, words: dict[int, list[int]]):
    """Launch the last run's look-back kernel for the one program that draws ``ticket`` of
    launch ``epoch``, over flag words ``words`` (chunk: a word per row; the other words
    zero); returns the flags and the ticket counter after it."""
    (launch,) = fd.executor().last_run.launches
    names = launch.kernel.arg_names
    kept = {t.data_ptr(): t for t in fd.executor()._compiled._tickets.values()}
    tickets = kept[launch.args[names.index("tickets")].data_ptr()]
    flags = kept[launch.args[names.index("flags")].data_ptr()]
    rows = x.numel() // x.shape[-1]
    flags.zero_()
    for chunk, ws in words.items():
        flags[chunk * rows : (chunk + 1) * rows] = torch.tensor(ws, dtype=torch.int64)
    tickets.fill_((epoch << 32) | ticket)
    tensors = {x.data_ptr(): x, out.data_ptr(): out, tickets.data_ptr(): tickets}
    tensors[flags.data_ptr()] = flags
    args = [tensors[a.data_ptr()] if hasattr(a, "data_ptr") else a for a in launch.args]
    backend.launch(launch.loaded, (1,), *args, device_type=x.device.type, **launch.meta)
    return flags, tickets


@pytest.mark.parametrize("stop", [None, 3])
def test_a_program_adds_its_predecessors_sums_back_to_a_running_sum(stop):
    """The last chunk (5) of two rows looks back 2 words a step. Without a running sum
    before it (``stop`` None) it adds the chunk sums of chunks 4 to 1 and chunk 0's
    running sum (three steps); with chunk 3's running sum published it adds that and
    chunk 4's sum and stops, whatever chunks 0 to 2 hold. It publishes its running sum
    through chunk 5, scans its chunk from its prefix, and, holding the launch's last
    ticket, leaves the counter at the next epoch with no ticket drawn."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 48, generator=g)
    fd = _cumsum(x, 1, target=small_gpu(1024), tuning=SMALL)
    (out,) = fd.execute([x])
    assert (schedules(fd)[0].mode, schedules(fd)[0].results_block) == ("lookback", 2)
    sums = x.reshape(2, 6, 8).sum(-1)  # [row, chunk]
    running = sums.cumsum(-1)
    epoch = 7
    tag = (epoch + 1) * 4
    words = {c: [_word(tag + AGGREGATE, float(sums[r, c])) for r in range(2)] for c in range(1, 5)}
    words[0] = [_word(tag + INCLUSIVE, float(sums[r, 0])) for r in range(2)]
    if stop is not None:
        words[stop] = [_word(tag + INCLUSIVE, float(running[r, stop])) for r in range(2)]
        for c in range(stop):  # never read: a running sum after them
            words[c] = [_word(tag + AGGREGATE, 1e6)] * 2
    # another launch's words where none is published (its epoch's tag is another)
    words[5] = [_word(tag - 4 + INCLUSIVE, -1e6)] * 2
    out.zero_()
    flags, tickets = _one_program(fd, x, out, ticket=5, epoch=epoch, words=words)
    torch.testing.assert_close(out[:, 40:], torch.cumsum(x, 1)[:, 40:], rtol=1e-5, atol=1e-5)
    assert torch.count_nonzero(out[:, :40]) == 0  # one program, one chunk
    for r in range(2):
        word = int(flags[5 * 2 + r])
        assert word >> 32 == tag + INCLUSIVE
        assert _value(word) == pytest.approx(float(running[r, 5]), rel=1e-5, abs=1e-5)
    assert tickets.tolist() == [(epoch + 1) << 32]


def test_a_program_that_does_not_draw_the_last_ticket_leaves_the_epoch():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 48, generator=g)
    fd = _cumsum(x, 1, target=small_gpu(1024), tuning=SMALL)
    (out,) = fd.execute([x])
    tag = (3 + 1) * 4
    words = {0: [_word(tag + INCLUSIVE, float(v)) for v in x[:, :8].sum(-1)]}
    flags, tickets = _one_program(fd, x, out, ticket=1, epoch=3, words=words)
    assert tickets.tolist() == [(3 << 32) | 2]
    torch.testing.assert_close(out[:, 8:16], torch.cumsum(x, 1)[:, 8:16], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shape, dim, block_r, vectors",
    [
        ((2048, 512), 0, 64, "v4"),  # the stride-1 side is a row coordinate: 64 rows a tile
        ((4, 20000), 1, 2, "v4"),  # long rows along the stride-1 dim: chunks of 2048
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_the_look_back_kernel_compiles_for_sm90(shape, dim, block_r, vectors, dtype):
    """At the default tuning on 132 multiprocessors: one launch that compiles for sm_90
    without spills, loading and storing 16-byte vectors of fp32 (8-byte of bf16 where a
    thread holds 4 of a row)."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(2)).to(dtype)
    fd = _cumsum(x, dim, target=small_gpu(132))
    (out,) = fd.execute([x])
    want = torch.cumsum(x.float(), dim)
    torch.testing.assert_close(out.float(), want, rtol=1e-2, atol=1e-3 * shape[dim] ** 0.5)
    (params,) = schedules(fd)
    assert (params.mode, params.block_r) == ("lookback", block_r), params
    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx and art.local_bytes == 0, art.resources
    widths = art.vector_widths
    assert widths.get("ld.global.v4", 0) + widths.get("ld.global.v2", 0) > 0, widths
    assert "atom.global" in art.ptx and "ld.volatile.global" in art.ptx
