"""The scan scheduler's kernels (cumsum's block, loop, chain and split modes; argsort and topk's
bitonic sort, rank, selection and merge sort) compiled for sm_90 without a GPU.

Each test runs a fusion on the default device (CPU: Triton's interpreter), then compiles
the kernels of that run with the specialization Triton's launcher makes for the real
arguments (``compile_last_run``): the interpreter accepts programs the compiler refuses
(a loop-carried value that changes type), so each kernel must compile too, and its
registers must not spill. A contiguous cumsum along the stride-1 dim reads and writes
16-byte vectors.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules, small_gpu

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

LONG = DEFAULT.with_fields(
    scan=dict(max_block=32, chunk=32, tile_elements=64, outer_rows=2, sums_block=4, chain_links=0)
)


def _fusion(op: str, x: torch.Tensor, dim: int) -> FusionDefinition:
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if op == "cumsum":
            fd.add_output(fd.ops.cumsum(fd.ops.abs(t), dim))
        elif op == "argsort":
            fd.add_output(fd.ops.argsort(t, dim, descending=True))
        else:
            values, indices = fd.ops.topk(t, 3, dim)
            fd.add_output(values)
            fd.add_output(indices)
    return fd


def compiled(fd) -> list:
    arts = compile_last_run(fd.executor())
    for a in arts:
        assert ".target sm_90" in a.ptx, a.name
    return arts


F32, BF16, I32, I64 = torch.float32, torch.bfloat16, torch.int32, torch.int64
ONE_TILE = [
    ("cumsum", 0, F32),
    ("cumsum", 1, BF16),
    ("cumsum", 1, I32),
    ("argsort", 1, F32),
    ("argsort", 0, I64),
    ("argsort", 1, BF16),
    ("topk", 1, F32),
    ("topk", 0, I32),
]
SORTED = DEFAULT.with_fields(scan=dict(select_max_k=0))


@pytest.mark.parametrize("op, dim, dtype", ONE_TILE)
def test_one_tile_kernels_compile_for_sm90(op, dim, dtype):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(8, 40, generator=g) * 4).to(dtype)
    fd = configured(_fusion(op, x, dim), tuning=SORTED)  # topk sorts (mode block)
    fd.execute([x])
    assert schedules(fd)[0].mode == "block"
    (art,) = compiled(fd)
    assert art.local_bytes == 0, art.resources  # no spills


def _topk(x: torch.Tensor, k: int, dim: int, largest: bool) -> FusionDefinition:
    with FusionDefinition() as fd:
        values, indices = fd.ops.topk(fd.from_pytorch(x), k, dim, largest=largest)
        fd.add_output(values)
        fd.add_output(indices)
    return fd


@pytest.mark.parametrize(
    "shape, k, dim, dtype, largest",
    [
        ((2, 1024), 8, 1, F32, True),  # 2 rows of 1024 a program
        ((2048, 2), 4, 0, BF16, False),  # one row of 2048 a program, the dim not stride-1
        ((4, 1000), 1, 1, I64, True),
    ],
)
def test_select_in_a_tile_compiles_for_sm90_without_spills(shape, k, dim, dtype, largest):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(7)).to(dtype)
    fd = _topk(x, k, dim, largest)
    v, i = fd.execute([x])
    assert torch.equal(v, torch.topk(x, k, dim, largest=largest).values)
    (params,) = schedules(fd)
    assert (params.mode, params.in_tile) == ("select", True)
    (art,) = compiled(fd)
    assert art.local_bytes == 0, art.resources


@pytest.mark.parametrize("split", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_select_of_long_rows_compiles_for_sm90(dtype, split):
    """A vocabulary-like row (5000 > max_sort_block): split across programs (chunks of
    1024, each's candidates in registers, then the merge), or where rows fill the device
    walked in chunks of 1024 a pass. Neither spills."""
    x = torch.randn(1, 5000, generator=torch.Generator().manual_seed(8)).mul(100).to(dtype)
    tuning = DEFAULT if split else DEFAULT.with_fields(scan=dict(split_rows_per_sm=0))
    fd = configured(_topk(x, 2, 1, True), tuning=tuning)
    v, i = fd.execute([x])
    assert torch.equal(v, torch.topk(x, 2, 1).values)
    (params,) = schedules(fd)
    want = ("split", True, 1024) if split else ("select", False, 1024)
    assert (params.mode, params.in_tile, params.block_n) == want
    arts = compiled(fd)
    assert len(arts) == (2 if split else 1)
    assert all(a.local_bytes == 0 for a in arts), [a.resources for a in arts]


@pytest.mark.parametrize("mode, sms, kernels", [("loop", 1, 1), ("split", 64, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_long_row_kernels_compile_for_sm90(mode, sms, kernels, dtype):
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(5, 150, generator=g) * 4).to(dtype)
    fd = configured(_fusion("cumsum", x, 1), target=small_gpu(sms), tuning=LONG)
    fd.execute([x])
    assert schedules(fd)[0].mode == mode
    assert len(compiled(fd)) == kernels


def test_contiguous_cumsum_moves_16_byte_vectors():
    x = torch.randn(64, 1024, generator=torch.Generator().manual_seed(2))
    fd = _fusion("cumsum", x, 1)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.cumsum(x.abs(), 1), rtol=1e-5, atol=1e-3)
    (art,) = compiled(fd)
    widths = art.vector_widths
    assert widths.get("ld.global.v4", 0) > 0 and widths.get("st.global.v4", 0) > 0, widths


@pytest.mark.parametrize("op, dtype", [("argsort", torch.float32), ("topk", torch.bfloat16)])
def test_ranked_sort_kernels_compile_for_sm90(op, dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 300, generator=g).to(dtype)
    tuning = DEFAULT.with_fields(scan=dict(max_sort_block=64, select_max_k_long=0))
    fd = configured(_fusion(op, x, 1), tuning=tuning)
    fd.execute([x])
    assert schedules(fd)[0].mode == "rank"
    (art,) = compiled(fd)
    assert art.local_bytes == 0, art.resources


def test_cumsum_along_a_strided_dim_moves_16_byte_vectors_across_rows():
    """The stride-1 dim is a row coordinate: the tile spans 64 rows of it (256 bytes of
    fp32) and walks the scanned dim, so loads and stores stay whole vectors."""
    x = torch.randn(1024, 64, generator=torch.Generator().manual_seed(4))
    fd = _fusion("cumsum", x, 0)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.cumsum(x.abs(), 0), rtol=1e-5, atol=1e-3)
    (params,) = schedules(fd)
    assert params.block_r == 64 and params.block_n == 64  # 4096 elements a tile
    widths = compiled(fd)[-1].vector_widths  # the scan (after a split's chunk sums)
    assert widths.get("ld.global.v4", 0) > 0 and widths.get("st.global.v4", 0) > 0, widths


@pytest.mark.parametrize(
    "shape, dim, sms, mode",
    [((5, 5000), 1, 132, "split"), ((5, 5000), 1, 1, "loop"), ((1024, 64), 0, 132, "split")],
)
def test_default_long_row_kernels_compile_for_sm90(shape, dim, sms, mode):
    """At the default tuning with mode ``chain`` off (2048-element chunks, the middle
    pass's [2, 1024] tile): Triton 3.6's OptimizeThreadLocality pass once asserted on the
    middle pass's loop."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(5))
    no_chain = DEFAULT.with_fields(scan=dict(chain_links=0))
    fd = configured(_fusion("cumsum", x, dim), target=small_gpu(sms), tuning=no_chain)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.cumsum(x.abs(), dim), rtol=1e-5, atol=1e-2)
    assert schedules(fd)[0].mode == mode
    compiled(fd)


def test_accesses_with_a_base_offset_add_it():
    """An access the problem gives a base offset (a slice's start: ``b<a>``, bound at
    launch) has it added to every offset, and takes it as an argument."""
    import dataclasses

    from layoutfuse.codegen import scan as scan_code

    x = torch.randn(4, 9, generator=torch.Generator().manual_seed(6))
    fd = _fusion("cumsum", x, 1)
    fd.execute([x])
    run = fd.executor().last_run.segments[0]
    params = dataclasses.replace(run.params, based=(0,))
    (kernel,) = scan_code.emit(run.segment, params)
    assert "b0" in kernel.arg_names and "b1" not in kernel.arg_names
    assert "roff0 = i1 * s0_1 + b0" in kernel.source


@pytest.mark.parametrize("op", ["cumsum", "argsort"])
def test_a_scan_kernel_pastes_the_row_helpers_its_prologue_calls(op):
    """gcd (a helper jit function of its row) in a scan's prologue: the scan kernel's module
    pastes the helper as the other kernels' do (it had none: a NameError)."""
    x = torch.tensor([[4, 6, 9, 10], [3, 12, 0, -8]], dtype=torch.int32)
    with FusionDefinition() as fd:
        g = fd.ops.gcd(fd.from_pytorch(x), fd.define_scalar(6))
        fd.add_output(fd.ops.cumsum(g, 1) if op == "cumsum" else fd.ops.argsort(g, 1))
    (out,) = fd.execute([x])
    g = torch.gcd(x, torch.tensor(6, dtype=torch.int32))
    want = torch.cumsum(g, 1) if op == "cumsum" else torch.argsort(g, dim=1, stable=True)
    assert torch.equal(out, want)
    compiled(fd)


@pytest.mark.parametrize(
    "op, shape, k, kernels",
    [
        ("argsort", (8192, 2048), None, ["argsort_kernel"]),
        ("argsort", (65536, 256), None, ["argsort_kernel"]),
        ("topk", (8192, 1024), 8, ["topk_select_kernel"]),
        ("topk", (64, 50257), 50, ["topk_candidates_kernel", "topk_merge_kernel"]),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_benchmark_sizes_compile_for_sm90_without_spills(op, shape, k, kernels, dtype):
    """The sort cases of ``benchmarks.op_cases`` at their sizes, planned on meta tensors
    (nothing runs): each kernel fits its registers (a row of 2048 packed keys spilled at
    4 warps)."""
    x = torch.empty(shape, dtype=dtype, device="meta")
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if op == "argsort":
            fd.add_output(fd.ops.argsort(t, 1))
        else:
            values, indices = fd.ops.topk(t, k, 1, largest=True, sorted=True)
            fd.add_output(values)
            fd.add_output(indices)
    fd.executor().plan([x])
    arts = compiled(fd)
    assert [a.name for a in arts] == kernels
    assert all(a.local_bytes == 0 for a in arts), [a.resources for a in arts]


@pytest.mark.parametrize(
    "op, shape, dtype, descending, passes, warps",
    [
        ("argsort", (8, 50257), torch.float32, True, 5, 8),  # a top-p step's vocabulary rows
        ("argsort", (8, 128256), torch.bfloat16, True, 6, 8),  # keys in an int64 (> 2**15)
        ("argsort", (8, 5000), torch.bfloat16, False, 2, 4),  # keys in an int32
        ("topk", (8, 50257), torch.float32, True, 5, 8),  # k=1000 > select_max_k_long
    ],
)
def test_merge_sort_kernels_compile_for_sm90_without_spills(
    op, shape, dtype, descending, passes, warps
):
    """A merge sort of long rows at its real sizes, planned on meta tensors (nothing
    runs): the chunks' bitonic sort (2048 packed keys, 64 bytes of them a thread), each
    merge pass (a binary search of 1024 keys a program) and the results compile and fit
    their registers."""
    x = torch.empty(shape, dtype=dtype, device="meta")
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if op == "argsort":
            fd.add_output(fd.ops.argsort(t, 1, descending=descending))
        else:
            values, indices = fd.ops.topk(t, 1000, 1, largest=descending, sorted=True)
            fd.add_output(values)
            fd.add_output(indices)
    record = fd.executor().plan([x])
    (params,) = record.params
    assert (params.mode, params.block_n, params.num_warps) == ("merge", 2048, warps)
    arts = compiled(fd)
    names = [f"{op}_runs_kernel", *[f"{op}_merge_pass_kernel"] * passes, f"{op}_merged_kernel"]
    assert [a.name for a in arts] == names
    assert all(a.local_bytes == 0 for a in arts), [a.resources for a in arts]


@pytest.mark.parametrize("fields", [{}, {"loop_stages": 2}], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_the_loop_walk_plain_or_pipelined(fields, dtype):
    """``loop`` (mode ``chain`` off), plain or with Triton's pipelining of the walk (``loop_stages``: its loads
    become asynchronous copies), over the strided dim of a [300, 512]
    on 4 multiprocessors (8 row tiles of 64: the loop), an epilogue reading another input
    beside it: torch's sums and epilogue, one kernel that compiles for sm_90 without
    spills and stores 16-byte vectors."""
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(300, 512, generator=g).to(dtype), torch.randn(300, 512, generator=g)
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        c = fd.ops.cumsum(fd.ops.abs(a), 0)
        fd.add_output(c)
        fd.add_output(fd.ops.mul(fd.ops.exp(fd.ops.neg(c)), b))
    tuning = DEFAULT.with_fields(scan=dict(fields, chain_links=0))
    fd = configured(fd, target=small_gpu(4), tuning=tuning)
    c, out = fd.execute([x, y])
    want = torch.cumsum(x.abs().float(), 0).to(dtype)
    torch.testing.assert_close(c, want, rtol=1e-2 if dtype == torch.bfloat16 else 1e-5, atol=1e-3)
    # exp of the bf16 sum is bf16 (rounded, as torch rounds it), then times fp32 y
    tol = dict(rtol=8e-3, atol=1e-5) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out, torch.exp(-c) * y, **tol)
    (params,) = schedules(fd)
    assert params.mode == "loop" and params.block_r == 64
    assert params.loop_stages == fields.get("loop_stages", 1)
    (art,) = compiled(fd)
    assert art.local_bytes == 0 and art.vector_widths.get("st.global.v4", 0) > 0, art.resources
    pipelined = "cp.async" in art.ptx
    assert pipelined == (params.loop_stages > 1), art.vector_widths


@pytest.mark.parametrize("shape, dim", [((3, 9000), 1), ((1500, 40), 0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_chained_cumsum_compiles_for_sm90(shape, dim, dtype):
    """Mode ``chain`` (rows of 9000 or 1500 in chunks: along the stride-1 dim, or across 40
    columns): one kernel, no spills; its ticket an atomic add, each running sum handed
    on by a release exchange and taken by an acquire exchange, all at gpu scope."""
    x = (torch.randn(*shape, generator=torch.Generator().manual_seed(3)) * 4).to(dtype)
    any_bytes = DEFAULT.with_fields(scan=dict(chain_link_bytes=0))  # small inputs
    fd = configured(_fusion("cumsum", x, dim), tuning=any_bytes)
    fd.execute([x])
    assert schedules(fd)[0].mode == "chain"
    (art,) = compiled(fd)
    assert art.local_bytes == 0, art.resources
    for op in (
        "atom.global.gpu.relaxed.add.u64",
        "atom.global.gpu.release.exch.b64",
        "atom.global.gpu.acquire.exch.b64",
    ):
        assert op in art.ptx, op
    # the taken word, read by the one thread that owns each row, reaches the row's other
    # threads through shared memory (Triton's lowering of a tensor atomic's result): every
    # replica sees the same word, so all leave the wait together
    after = art.ptx.split("atom.global.gpu.acquire.exch.b64", 1)[1].splitlines()[:6]
    assert any("st.shared" in line for line in after), after
