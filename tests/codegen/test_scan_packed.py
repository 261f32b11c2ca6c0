"""argsort and topk over packed keys (``codegen.packed_keys``, ``codegen.scan_packed``).

Keys of at most 32 bits (Float, Int32) are packed with their index in one int64, keys of
at most 16 bits (Half, BFloat16, fp8, Bool) in one int32 (in one int64 with the tuning's
``narrow_keys=False``). Rows of the values a transform of the bits could get wrong
(NaNs of both signs, infinities, -0.0 beside 0.0, the smallest subnormal, the largest
finite values, int32's extremes, ties among all of them), through every mode (block,
rank, merge, select in a tile, in chunks, split across programs), both directions, against
torch's stable sort: the indices exactly, the values bit for bit (-0.0 stays -0.0) but a
NaN's payload. Keys of 64 bits keep the (key, index) pairs, as does the tuning's
``packed_keys=False``.
"""

from __future__ import annotations

import re

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

F32, BF16, F16, I32, I64, F64 = (
    torch.float32,
    torch.bfloat16,
    torch.float16,
    torch.int32,
    torch.int64,
    torch.float64,
)
PACKED = (F32, BF16, F16, I32)
WIDTH = {F32: 64, I32: 64, BF16: 32, F16: 32, torch.bool: 32}  # of the packed key

# the scan tuning that makes rows of 45 take each mode (topk's k at most 16; rank: a merge
# compare weighed as 16 of rank's, the default)
MODES = {
    "block": dict(select_max_k=0),
    "rank": dict(max_sort_block=16, rank_block=16, select_max_k_long=0),
    # three chunks of 16 a row sorted, then two merge passes (of 8 keys a program)
    "merge": dict(max_sort_block=16, merge_compare_cost=1, merge_block=8, select_max_k_long=0),
    "select": {},
    "chunks": dict(max_sort_block=16, select_chunk=16),
    # three chunks of 16 a row across programs, their candidates merged in one tile ...
    "split": dict(max_sort_block=16, split_min_chunk=16, split_max_chunk=16, split_chunk_per_k=1),
    # ... or walked in blocks of 16 a pass
    "split-walk": dict(
        max_sort_block=16,
        split_min_chunk=16,
        split_max_chunk=16,
        split_chunk_per_k=1,
        split_merge_block=16,
    ),
}


def _mode_of(p) -> str:
    """The key of ``MODES`` that gave params ``p``."""
    if p.mode == "select" and not p.in_tile:
        return "chunks"
    return p.mode if p.in_tile else "split-walk"


def special_rows(dtype: torch.dtype, n: int = 45, seed: int = 0) -> torch.Tensor:
    """Three rows of ``n`` drawn from the values an order transform could get wrong, with
    ties; the first row starts with a NaN (the largest key at index 0)."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        nan = float("nan")
        pool = [nan, -nan, float("inf"), -float("inf"), 0.0, -0.0, 0.0, -0.0, 1.5, -1.5]
        pool += [info.smallest_normal / 4, -info.smallest_normal / 4, info.max, -info.max]
        values = torch.tensor(pool, dtype=torch.float32).to(dtype)
    else:
        info = torch.iinfo(dtype)
        values = torch.tensor([info.min, info.max, -1, 0, 0, 1, 7, 7, info.min + 1], dtype=dtype)
    x = values[torch.randint(0, len(values), (3, n), generator=g)]
    x[1, :8] = values[4:6].repeat(4)  # zeros of both signs, side by side
    x[0, 0] = values[0]
    return x


def stable_order(x: torch.Tensor, descending: bool) -> torch.Tensor:
    """torch's stable argsort of ``x``'s rows, computed on the CPU: there a NaN of either
    sign is the largest key, as in torch's topk on every device. torch's CUDA sort (a radix
    order of the bits) puts a NaN whose sign bit is set below -inf; layoutfuse orders NaNs as
    the CPU sort and topk do, on every device."""
    return torch.argsort(x.cpu(), dim=1, descending=descending, stable=True).to(x.device)


def _bits(v: torch.Tensor) -> torch.Tensor:
    """``v``'s bits (NaNs as one NaN), to compare values with their sign of zero."""
    if not v.dtype.is_floating_point:
        return v
    v = torch.where(v.isnan(), torch.tensor(float("nan"), dtype=v.dtype), v)
    return v.view({4: torch.int32, 2: torch.int16}[v.element_size()])


def _run(build, x, tuning):
    with FusionDefinition() as fd:
        outs = build(fd, fd.from_pytorch(x))
        for o in outs if isinstance(outs, tuple) else (outs,):
            fd.add_output(o)
    fd = configured(fd, tuning=DEFAULT.with_fields(scan=tuning))
    return fd, fd.execute([x])


def _topk(x, k, largest, tuning):
    """``fd.ops.topk`` of ``x``'s rows under ``tuning``, checked against torch's stable
    order: the indices exactly, the values bit for bit (the sign of zero) but a NaN's
    payload. Returns the definition (its schedule, its code) and (values, indices)."""
    fd, (v, i) = _run(lambda fd, t: fd.ops.topk(t, k, 1, largest=largest), x, tuning)
    want_i = stable_order(x, largest)[:, :k]
    assert torch.equal(i, want_i)
    assert v.dtype == x.dtype
    assert torch.equal(_bits(v), _bits(torch.gather(x, 1, want_i)))
    return fd, (v, i)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("mode", ["block", "rank", "merge"])
@pytest.mark.parametrize("dtype", [*PACKED, torch.bool])
def test_argsort_of_special_values(dtype, mode, descending):
    x = special_rows(F32, seed=1) > 0 if dtype is torch.bool else special_rows(dtype, seed=1)
    fd, (out,) = _run(lambda fd, t: fd.ops.argsort(t, 1, descending=descending), x, MODES[mode])
    assert torch.equal(out, stable_order(x, descending))
    (p,) = schedules(fd)
    assert (p.mode, p.packed) == (mode, WIDTH[dtype])


@pytest.mark.parametrize("k", [1, 13])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dtype", PACKED)
def test_topk_of_special_values(dtype, mode, largest, k):
    fd, _ = _topk(special_rows(dtype, seed=2), k, largest, MODES[mode])
    (p,) = schedules(fd)
    # (k=1 of split-walk: the three candidates fit the merge's tile)
    want = "split" if (mode, k) == ("split-walk", 1) else mode
    assert (_mode_of(p), p.packed) == (want, WIDTH[dtype])


def test_the_zeros_of_a_topk_keep_their_signs():
    """-0.0 and 0.0 tie (lower index first) and come back as they were."""
    x = torch.tensor([[0.0, -0.0, 0.0, -0.0, -1.0], [-0.0, 0.0, -0.0, 0.0, 1.0]])
    for mode in MODES:
        _, (v, i) = _run(lambda fd, t: fd.ops.topk(t, 4, 1), x, MODES[mode])
        assert i.tolist() == [[0, 1, 2, 3], [4, 0, 1, 2]], mode
        assert torch.equal(v.signbit(), torch.gather(x, 1, i).signbit()), mode


@pytest.mark.parametrize(
    "dtype, packed",
    [(F32, 64), (BF16, 32), (F16, 32), (I32, 64), (torch.bool, 32), (F64, 0), (I64, 0)],
)
def test_keys_pack_up_to_32_bits(dtype, packed):
    x = special_rows(F32, seed=3) > 0 if dtype is torch.bool else special_rows(dtype, seed=3)
    fd, (out,) = _run(lambda fd, t: fd.ops.argsort(t, 1), x, {})
    assert torch.equal(out, stable_order(x, False))
    assert schedules(fd)[0].packed == packed


@pytest.mark.parametrize("mode", ["block", "select", "split", "merge"])
@pytest.mark.parametrize("dtype", [BF16, F16])
def test_narrow_keys_in_an_int64_give_the_same(dtype, mode):
    """``narrow_keys=False``: 16-bit keys packed in an int64, as an fp32's."""
    x = special_rows(dtype, seed=6)
    fd, _ = _topk(x, 5, True, {**MODES[mode], "narrow_keys": False})
    assert (schedules(fd)[0].mode, schedules(fd)[0].packed) == (mode, 64)


@pytest.mark.parametrize("mode", ["block", "merge"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_keys(dtype, descending, mode):
    """fp8 keys (ordered through Half's bits; torch sorts none: its reference is the
    fp32 sort of the same values), argsort and topk, in a tile (topk: selected) and
    merge sorted."""
    x = special_rows(F32, seed=7).to(dtype)
    want = stable_order(x.float(), descending)
    tuning = {} if mode == "block" else MODES[mode]
    fd, (out,) = _run(lambda fd, t: fd.ops.argsort(t, 1, descending=descending), x, tuning)
    assert torch.equal(out, want)
    assert (schedules(fd)[0].mode, schedules(fd)[0].packed) == (mode, 32)
    fd, (v, i) = _run(lambda fd, t: fd.ops.topk(t, 6, 1, largest=descending), x, tuning)
    assert torch.equal(i, want[:, :6])
    picked = torch.gather(x.view(torch.uint8), 1, want[:, :6]).view(dtype)  # (no fp8 gather)
    assert torch.equal(_bits(v.float()), _bits(picked.float()))


@pytest.mark.parametrize("mode", list(MODES))
def test_pairs_when_packing_is_off(mode):
    """``packed_keys=False``: the (key, index) kernels, with the same results."""
    x = special_rows(F32, seed=4)
    tuning = {**MODES[mode], "packed_keys": False}
    fd, (v, i) = _run(lambda fd, t: fd.ops.topk(t, 5, 1), x, tuning)
    assert torch.equal(i, stable_order(x, True)[:, :5])
    assert schedules(fd)[0].packed == 0
    assert "_first" in fd.last_triton_code() or "_sorts_before" in fd.last_triton_code()


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", [BF16, F16])
def test_split_chunks_of_16_bit_keys_pack_in_32_bits(dtype, largest):
    """A split row packed in 64 bits (``narrow_keys=False`` stands for a row past 2**15
    elements) takes each chunk's top-k on int32 keys of the 16-bit order and the index in
    the chunk (``chunk_packed``), then repacks its picks: the same indices and values
    (NaNs, zeros of both signs, ties) as the chunks packed in 64 bits."""
    x = special_rows(dtype, seed=4)
    tuning = {**MODES["split"], "narrow_keys": False}
    fd, (v, i) = _topk(x, 13, largest, tuning)
    (p,) = schedules(fd)
    assert (p.mode, p.packed, p.chunk_packed) == ("split", 64, 32)
    assert "(s << 16) | low" in fd.last_triton_code()
    fd64, (v64, i64) = _run(
        lambda fd, t: fd.ops.topk(t, 13, 1, largest=largest), x, {**tuning, "chunk_keys32": False}
    )
    assert schedules(fd64)[0].chunk_packed == 0
    assert torch.equal(i64, i) and torch.equal(_bits(v64), _bits(v))
    # sm_90: the chunk's top-k exchanges 32-bit keys (fewer shuffles and 64-bit operations)
    (ptx32,), (ptx64,) = (
        [a.ptx for a in compile_last_run(f.executor()) if a.name == "topk_candidates_kernel"]
        for f in (fd, fd64)
    )
    assert ptx32.count(".s64") < ptx64.count(".s64")
    assert ptx32.count("shfl") < ptx64.count("shfl")


def test_a_vocabulary_row_of_bf16_splits_in_int32_chunks():
    """bf16 rows of 40000 (their index needs the int64 key): chunks of int32 keys, the
    result as torch's topk."""
    g = torch.Generator().manual_seed(9)
    x = torch.randn(2, 40000, generator=g).to(BF16)
    fd, (v, i) = _run(lambda fd, t: fd.ops.topk(t, 5, 1), x, {})
    (p,) = schedules(fd)
    assert (p.mode, p.packed, p.chunk_packed) == ("split", 64, 32)
    want_i = stable_order(x, True)[:, :5]
    assert torch.equal(i, want_i) and torch.equal(v, torch.gather(x, 1, want_i))


# chunks of 256 (k=5: a top-k 8 wide, 16 strided groups of 16 keys): filtered candidates
FILTERED = dict(max_sort_block=16, split_min_chunk=256, split_max_chunk=256, split_chunk_per_k=1)


def _filter_rows(pattern: str, dtype: torch.dtype, n: int, largest: bool) -> torch.Tensor:
    """Rows whose chunks take each path of the filter: random keys (a few candidates a
    chunk), heavy ties (special values), keys whose least all fall in one strided group
    (more candidates than slots: the chunk's top-k), a sorted row."""
    g = torch.Generator().manual_seed(11)
    if pattern == "special":
        return special_rows(dtype, n=n, seed=12)
    x = torch.randn(3, n, generator=g)
    if pattern == "one_group":
        x[:, ::16] += 100.0 if largest else -100.0
    if pattern == "sorted":
        x = x.sort(dim=1, descending=not largest).values
    return x.to(dtype)


@pytest.mark.parametrize("n", [1000, 770])
@pytest.mark.parametrize("pattern", ["random", "special", "one_group", "sorted"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype, narrow", [(F32, True), (BF16, False), (F16, True), (I32, True)])
def test_split_chunks_filter_their_candidates(dtype, narrow, largest, pattern, n):
    """A split chunk of 256 keys stores the keys at most the k-th least of its 16 strided
    groups' least keys (``filter_groups``), compacted, where they fit its 16 slots, else its
    bitonic top-k: torch's topk either way (rows of 770 end in a chunk of 2 keys, fewer
    than k). bf16 with ``narrow_keys=False``: the chunks' int32 keys, widened."""
    if dtype is I32 and pattern == "special":
        x = special_rows(I32, n=n, seed=12)
    else:
        x = _filter_rows(pattern, F32 if dtype is I32 else dtype, n, largest)
        x = (x * 1000).to(I32) if dtype is I32 else x
    fd, _ = _topk(x, 5, largest, {**FILTERED, "narrow_keys": narrow})
    (p,) = schedules(fd)
    assert (p.mode, p.block_n, p.filter_groups) == ("split", 256, 16)
    assert "tl.cumsum" in fd.last_triton_code()


def test_filtered_candidates_compile_for_sm90():
    """The filter's reshape, group sort, prefix sum and its branch to the top-k compile for
    sm_90, for 64-bit keys and for a bf16 chunk's int32 keys."""
    x = torch.randn(2, 1000, generator=torch.Generator().manual_seed(3))
    for dtype, narrow in ((F32, True), (BF16, False)):
        tuning = {**FILTERED, "narrow_keys": narrow}
        fd, _ = _run(lambda fd, t: fd.ops.topk(t, 5, 1), x.to(dtype), tuning)
        ptx = {a.name: a.ptx for a in compile_last_run(fd.executor())}
        assert set(ptx) == {"topk_candidates_kernel", "topk_merge_kernel"}
        # the branch to the top-k, and the compacted stores (one key each) beside its
        assert re.search(r"@%p\d+ bra", ptx["topk_candidates_kernel"])
        assert "st.global.b64" in ptx["topk_candidates_kernel"]


def test_the_filter_is_off_for_short_chunks_and_by_tuning():
    x = torch.randn(2, 1000, generator=torch.Generator().manual_seed(4))
    fd, _ = _run(lambda fd, t: fd.ops.topk(t, 5, 1), x, {**FILTERED, "split_filter": 0})
    assert schedules(fd)[0].filter_groups == 0 and "tl.cumsum" not in fd.last_triton_code()
    # chunks of 64 hold 4 keys a group of 16: the top-k
    short = {**FILTERED, "split_min_chunk": 64, "split_max_chunk": 64}
    fd, (v, i) = _run(lambda fd, t: fd.ops.topk(t, 5, 1), x, short)
    assert schedules(fd)[0].filter_groups == 0
    assert torch.equal(i, stable_order(x, True)[:, :5])
