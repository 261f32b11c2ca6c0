"""One Philox call per run of elements: the numbering, and the two forms of the kernel.

An element of a random op takes ``W`` of the four words of the call at counter
``i // E``, ``E = 4 // W`` (``ir.ops.random``). A pointwise kernel whose tile walks the
op's linear index with unit stride along X, in runs of ``E`` aligned to multiples of
``E`` (``PointwiseParams.coordinate_runs``), calls Philox once per run and interleaves
the values (``tl.join``); any other kernel calls it per element and selects the
element's words. Checked here: the reference's Philox against Random123's known answers
and its numbering against calls at explicit counters; both forms (the second forced with
``philox_run=0``) against the reference and each other, in 1-D to 4-D shapes of odd and
even extents and in every memory order of input and output; and the benchmark's dropout
(bf16 and fp32 [8192, 8192], planned on meta tensors) compiled for sm_90: a quarter of
the Philox multiplies per element, 16-byte vectors, no shared memory.
"""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest
import torch

from benchmarks.op_rows import Dropout
from layoutfuse.codegen.backend import ptx_vector_widths
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.ir.ops.random import _normal_ref, _uniform_ref, elements_per_call, philox
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules
from support.random_ops import DTYPES, NORMAL_TOL, OFFSET, SEED, dropout, random_fd, reference

pytestmark = [
    pytest.mark.usefixtures("kernel_cache_in_tmp"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # masked lanes' 0/0
]

PER_ELEMENT = DEFAULT.with_fields(pointwise=dict(philox_run=0))
M32 = 0xFFFFFFFF


# --- the numbering ------------------------------------------------------------------------------
# Random123's known answers for Philox4x32-10: (counter, key) -> the four words
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32,) * 4, (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("counter, key, words", KNOWN_ANSWERS, ids=str)
def test_the_reference_philox_gives_the_known_answers(counter, key, words):
    got = philox(key[0] | key[1] << 32, [torch.tensor([c], dtype=torch.int64) for c in counter])
    assert tuple(int(w) for w in got) == words


def calls(n: int, per_call: int, seed: int = SEED, offset: int = OFFSET) -> torch.Tensor:
    """Philox at counters 0, 1, ... (enough for ``n`` elements): [calls, 4] words."""
    c = torch.arange(-(-n // per_call), dtype=torch.int64)
    zero = torch.zeros_like(c)
    counter = [c & M32, c >> 32, zero + (offset & M32), zero + (offset >> 32 & M32)]
    return torch.stack(philox(seed, counter), -1)


def uniforms_of(words: list[torch.Tensor], dtype: DataType) -> list[torch.Tensor]:
    """The module docstring's uniform numbers of an element's words."""
    if dtype is DataType.Double:
        return [
            ((a << 21) | (b >> 11)).double() * 2.0**-53 for a, b in zip(words[0::2], words[1::2])
        ]
    bits = {DataType.Float: 24, DataType.Half: 11, DataType.BFloat16: 8}[dtype]
    return [(w >> (32 - bits)).float() * 2.0**-bits for w in words]


@pytest.mark.parametrize("op", ["uniform", "normal"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
def test_an_element_takes_its_words_of_the_call_at_i_over_e(op, dtype):
    """Element ``i``: words ``W * (i % E)`` .. ``W * (i % E) + W - 1`` of the call at
    ``i // E``; 4 uniform Float, Half or BFloat16 elements per call, 2 normal or Double
    ones, 1 normal Double."""
    n = 23
    per_call = elements_per_call(op, dtype)
    assert per_call == {("uniform", True): 2, ("normal", True): 1}.get(
        (op, dtype is DataType.Double), 4 if op == "uniform" else 2
    )
    width = 4 // per_call
    i = torch.arange(n)
    table = calls(n, per_call)
    words = [table[i // per_call, width * (i % per_call) + k] for k in range(width)]
    if op == "uniform":
        (want,) = uniforms_of(words, dtype)
        got = _uniform_ref(0.0, 1.0, SEED, OFFSET, n, dtype=dtype, device=i.device)
    else:
        fine = DataType.Double if dtype is DataType.Double else DataType.Float
        u1, u2 = uniforms_of(words, fine)
        want = torch.sqrt(-2.0 * torch.log(1.0 - u1)) * torch.cos(6.283185307179586 * u2)
        got = _normal_ref(0.0, 1.0, SEED, OFFSET, n, dtype=dtype, device=i.device)
    assert torch.equal(got, want.to(DTYPES[dtype]))


# --- the two forms ------------------------------------------------------------------------------
def like_fd(x: torch.Tensor, op: str) -> FusionDefinition:
    """``op(x)`` (rand_like or randn_like) and ``x * op(x)``: the random tensor stored and
    used with a load of ``x``, whose layout decides the tile."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        r = getattr(fd.ops, op)(t, rng_seed=s, rng_offset=o)
        fd.add_output(r)
        fd.add_output(fd.ops.mul(t, r))
    return fd


def grouped(fd) -> bool:
    """Whether the last run's kernel took the grouped form (one call per run)."""
    return "tl.join(" in (fd.last_triton_code() or "")


# (shape, the input's last dim in memory (None: dense), the run the scheduler records)
RUNS = [
    ((37,), None, 4),  # 1-D of an odd extent: the last run partly masked
    ((5, 7, 3), None, 4),  # 3-D, one group of 105
    ((3, 4, 5, 8), None, 4),  # 4-D, one group
    ((6, 12), 16, 4),  # a 2-D tile (the input's rows 16 apart), the random rows 12
    ((6, 10), 16, 2),  # rows 10 apart: runs of 2 hold a normal's call, not a uniform's
    ((6, 9), 16, 1),  # rows 9 apart: a call per element
    ((2, 3, 20), 24, 4),
    ((2, 3, 4, 6), 8, 2),
]


@pytest.mark.parametrize("op", ["rand_like", "randn_like"])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=str)
@pytest.mark.parametrize("shape, row, run", RUNS, ids=str)
def test_both_forms_give_the_reference_numbers(op, dtype, shape, row, run):
    """The grouped form where the runs hold whole calls, else a call per element; with
    ``philox_run=0`` a call per element everywhere: the same numbers, the reference's."""
    g = torch.Generator().manual_seed(8)
    wide = torch.randn(*shape[:-1], row or shape[-1], generator=g).to(DTYPES[dtype])
    x = wide[..., : shape[-1]]
    kind = "uniform" if op == "rand_like" else "normal"
    ref = reference(kind, shape, dtype)
    results = []
    for tuning in (DEFAULT, PER_ELEMENT):
        fd = configured(like_fd(x, op), tuning=tuning)
        r, y = fd.execute([x, SEED, OFFSET])
        (params,) = schedules(fd)
        if tuning is DEFAULT:
            assert max(params.coordinate_runs, default=1) == run, params
            assert grouped(fd) is (run % elements_per_call(kind, dtype) == 0)
        else:
            assert params.coordinate_runs == () and not grouped(fd)
        if kind == "uniform":
            assert torch.equal(r, ref)
        else:
            torch.testing.assert_close(r, ref, **NORMAL_TOL[dtype])
        torch.testing.assert_close(y, (x.float() * r.float()).to(x.dtype))
        results.append(r)
    assert torch.equal(*results)


def test_every_memory_order_gives_the_same_numbers():
    """A [4, 8, 12] input in every memory order, its random tensor stored in the reversed
    order and with a dropout: the reference's numbers at every logical position, through
    the grouped form (the input's innermost dim is the op's) and a call per element."""
    shape = (4, 8, 12)
    ref = reference("uniform", shape, DataType.Float)
    base = torch.randn(shape, generator=torch.Generator().manual_seed(9))
    forms = set()
    orders = list(itertools.permutations(range(3)))
    for order, out_order in zip(orders, reversed(orders)):
        x = base.permute(order).contiguous().permute([order.index(d) for d in range(3)])
        with FusionDefinition() as fd:
            t = fd.from_pytorch(x)
            s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
            fd.add_output(fd.ops.rand_like(t, rng_seed=s, rng_offset=o), stride_order=out_order)
            fd.add_output(dropout(fd, t, s, o, 0.25))
        r, y = configured(fd).execute([x, SEED, OFFSET])
        assert torch.equal(r, ref), (order, out_order)
        torch.testing.assert_close(y, torch.where(ref < 0.75, x / 0.75, 0.0))
        forms.add(grouped(fd))
    assert forms == {True, False}


def test_64_bit_indices_take_the_grouped_form_too():
    """The index in int64 (tensors past 2**31 elements): the same numbers, one call per run,
    a kernel that compiles for sm_90."""

    def index64(scheduler, problem, info, tuning):
        params = scheduler.heuristics(problem, info, tuning)
        return dataclasses.replace(params, index64=True)

    fd = configured(random_fd("normal", (6, 40), DataType.Half), heuristics=index64)
    (out,) = fd.execute([SEED, OFFSET])
    (params,) = schedules(fd)
    assert params.index64 and grouped(fd)
    ref = reference("normal", (6, 40), DataType.Half)
    torch.testing.assert_close(out, ref, **NORMAL_TOL[DataType.Half])
    (art,) = compile_last_run(fd.executor())
    assert ".target sm_90" in art.ptx


# --- on Hopper ----------------------------------------------------------------------------------
def planned_dropout(x: torch.Tensor, tuning) -> FusionDefinition:
    """``benchmarks``' dropout of ``x`` (a meta tensor), planned: no run."""
    row = Dropout(0.1)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s, o = (fd.define_scalar(dtype=DataType.Int) for _ in range(2))
        for out in row.define(fd, [t, s, o]):
            fd.add_output(out)
    configured(fd, tuning=tuning).executor().plan([x, row.SEED, row.OFFSET])
    return fd


def multiplies_per_element(fd) -> float:
    """Philox's ``mul.hi.u32`` in the kernel's PTX per element a thread computes (in one
    body: a ``full_blocks`` kernel has two)."""
    (params,) = schedules(fd)
    (art,) = compile_last_run(fd.executor())
    per_thread = params.block_x * params.block_y // (32 * params.num_warps)
    bodies = 2 if params.full_blocks else 1
    return len(re.findall(r"\bmul\.hi\.u32\b", art.ptx)) / per_thread / bodies


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_the_benchmark_dropout_makes_a_quarter_of_the_multiplies(dtype):
    """bf16 and fp32 [8192, 8192]: one call per run of 4 (a thread's 16-byte vector holds
    2 runs of bf16, 1 of fp32), about 4.7 multiplies per element (a call per element made
    16.1 before runs, at 22f5122); the loads and stores still 16-byte vectors, and the
    runs' values in the loads' layout (no shared memory)."""
    fd = planned_dropout(torch.empty(8192, 8192, dtype=dtype, device="meta"), DEFAULT)
    (params,) = schedules(fd)
    assert params.coordinate_runs == (1, 1, 4) and not params.full_blocks, params
    code = fd.last_triton_code() or ""
    assert code.count("tl.philox(") == (2 if dtype is torch.bfloat16 else 1)
    assert multiplies_per_element(fd) <= 5
    (art,) = compile_last_run(fd.executor())
    assert set(ptx_vector_widths(art.ptx)) == {"ld.global.v4", "st.global.v4"}
    assert "st.shared" not in art.ptx and "bar.sync" not in art.ptx


def test_runs_the_compiler_cannot_prove_aligned_share_their_call():
    """Random rows 1028 apart (a multiple of 4, not of 16, which is all Triton's launcher
    marks): a call per element selecting its words makes every element's call (19
    multiplies per element), the grouped form one per run (under 5). (Rows 16-aligned,
    the compiler shares the per-element calls itself: both make 4.6-4.8.)"""
    x = torch.empty_strided((256, 1028), (1040, 1), dtype=torch.float32, device="meta")
    grouped_muls = multiplies_per_element(planned_dropout(x, DEFAULT))
    per_element_muls = multiplies_per_element(planned_dropout(x, PER_ELEMENT))
    assert grouped_muls <= 5 and per_element_muls >= 3 * grouped_muls
