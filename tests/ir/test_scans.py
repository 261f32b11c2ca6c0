"""cumsum, argsort, topk and triu (``layoutfuse.ir.ops.scans``) through generated kernels.

Every memory order of 2-D and 3-D inputs, sliced and expanded dims, every dim, the
dtypes float32, bfloat16, float16, int32 and int64, against torch: cumsum in fp32 with a
tolerance scaled by the row's length (exact for integers, which give int64); argsort
exactly as torch's stable sort (NaN the largest, ties in index order); topk's values as
torch's, its indices pointing at them (and, among ties, the lower index first). Rows that
fit a tile and rows that do not (cumsum's ``loop`` and ``split`` modes; argsort's and
topk's ``rank`` and ``merge``; cumsum's ``chain``; at small sizes through the scan tuning); the schedule
chosen, the output's strides, what ``fd.segment`` says. The default run takes a seeded
sample of each sweep; ``--full`` runs all of it.
"""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.scan import ScanParams
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured, schedules, small_gpu

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

F32, BF16, F16, I32, I64 = torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64
DTYPES = (F32, BF16, F16, I32, I64)
SHAPES = {2: (6, 37), 3: (3, 5, 19)}
VARIANTS = ("dense", "sliced", "expanded")


def _cases(dtypes=DTYPES):
    out = []
    for rank, variant, dtype in itertools.product(SHAPES, VARIANTS, dtypes):
        for order in itertools.permutations(range(rank)):
            for dim in range(rank):
                out.append((rank, order, dim, variant, dtype))
    return out


def _params(cases, per_stratum: int = 1, seed: int = 14):
    """Every case, the sample of the default run unmarked and the rest marked ``full``:
    ``per_stratum`` per (rank, variant, dtype), order and dim drawn with a fixed seed."""
    rng = random.Random(seed)
    strata: dict[tuple, list] = {}
    for c in cases:
        strata.setdefault((c[0], c[3], c[4]), []).append(c)
    chosen = {
        c for _, group in sorted(strata.items(), key=str) for c in rng.sample(group, per_stratum)
    }
    return [
        pytest.param(*c, id="-".join(map(str, c)), marks=() if c in chosen else pytest.mark.full)
        for c in cases
    ]


def laid_out(shape, order, dtype, seed: int = 0, values: str = "randn") -> torch.Tensor:
    """A dense tensor of logical ``shape`` whose dims lie in memory in ``order`` (outermost
    first); ``values``: ``randn``, or ``ties`` (few distinct values) with NaNs for floats."""
    g = torch.Generator().manual_seed(seed)
    phys_shape = [shape[d] for d in order]
    if not dtype.is_floating_point:
        hi = 4 if values == "ties" else 10
        phys = torch.randint(-hi, hi, phys_shape, generator=g).to(dtype)
    elif values == "ties":
        phys = torch.randint(-3, 3, phys_shape, generator=g).to(torch.float32) / 2
        nan = torch.rand(phys_shape, generator=g) < 0.1
        phys = torch.where(nan, float("nan"), phys).to(dtype)
        phys[(torch.rand(phys_shape, generator=g) < 0.1) & ~nan] = -0.0
    else:
        phys = torch.randn(phys_shape, generator=g).to(dtype)
    return phys.permute([list(order).index(d) for d in range(len(shape))])


def make_input(rank, order, dim, variant, dtype, values="randn", shape=None) -> torch.Tensor:
    """``variant``: dense in ``order``; ``sliced`` (every other element of a dim, from the
    second); ``expanded`` (a size-1 dim broadcast to its extent). The special dim is one
    other than the scanned ``dim`` when there is one, so the scanned row stays varied."""
    shape = list(shape or SHAPES[rank])
    special = (dim + 1) % rank
    if variant == "dense":
        return laid_out(shape, order, dtype, values=values)
    if variant == "expanded":
        one = list(shape)
        one[special] = 1
        return laid_out(one, order, dtype, values=values).expand(shape)
    big = list(shape)
    big[special] *= 2
    index = [slice(None)] * rank
    index[special] = slice(1, None, 2)
    return laid_out(big, order, dtype, values=values)[tuple(index)]


def dense_strides_like(x: torch.Tensor, shape=None) -> tuple[int, ...]:
    """The strides of a dense tensor of ``shape`` (``x``'s by default) in ``x``'s memory
    order (stride descending; an expanded dim where it lies among the others)."""
    shape = list(shape or x.shape)
    order = sorted(range(x.dim()), key=lambda d: (-x.stride(d), d))
    strides = [0] * x.dim()
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def run(build, inputs, **settings):
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(x) for x in inputs]
        outs = build(fd, *handles)
        for o in outs if isinstance(outs, tuple) else (outs,):
            fd.add_output(o)
    if settings:
        fd = configured(fd, **settings)
    return fd, fd.execute(inputs)


def expected_cumsum(x: torch.Tensor, dim: int) -> torch.Tensor:
    if x.dtype in (BF16, F16):
        return torch.cumsum(x.float(), dim).to(x.dtype)
    return torch.cumsum(x, dim)


def check_cumsum(out: torch.Tensor, x: torch.Tensor, dim: int) -> None:
    want = expected_cumsum(x, dim)
    assert out.dtype == want.dtype
    n = x.shape[dim]
    if not x.dtype.is_floating_point:
        assert torch.equal(out, want)
    elif x.dtype == F32:
        torch.testing.assert_close(out, want, rtol=1e-5, atol=2e-6 * n)
    else:  # one rounding of nearly equal fp32 sums: at most one ulp of the output dtype
        torch.testing.assert_close(out.float(), want.float(), rtol=8e-3, atol=1e-5 * n)


def scan_params(fd) -> list[ScanParams]:
    return [p for p in schedules(fd) if isinstance(p, ScanParams)]


# --- cumsum ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rank, order, dim, variant, dtype", _params(_cases()))
def test_cumsum_layouts(rank, order, dim, variant, dtype):
    x = make_input(rank, order, dim, variant, dtype)
    fd, (out,) = run(lambda fd, t: fd.ops.cumsum(t, dim), [x])
    check_cumsum(out, x, dim)
    if variant != "expanded":
        assert out.stride() == dense_strides_like(x)
    (p,) = scan_params(fd)
    assert (p.op, p.mode) == ("cumsum", "block")
    assert len(schedules(fd)) == 1


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_of_ints_and_bools_is_int64(dim):
    g = torch.Generator().manual_seed(1)
    for x in (torch.randint(-5, 5, (4, 9), generator=g, dtype=I32), torch.rand(4, 9) > 0.5):
        _, (out,) = run(lambda fd, t: fd.ops.cumsum(t, dim), [x])
        assert out.dtype == torch.int64
        assert torch.equal(out, torch.cumsum(x, dim))


@pytest.mark.parametrize("op", ["cumsum", "argsort", "topk"])
@pytest.mark.parametrize(
    "base, shape, dim",
    [
        ((4, 1), (4, 6), 1),  # along an expanded dim (stride 0)
        ((1, 6), (5, 6), 0),
        ((4, 1), (4, 1), 1),  # along a size-1 dim: no scanned group
    ],
    ids=["expanded-inner", "expanded-outer", "size1"],
)
def test_along_an_expanded_or_size_one_dim(op, base, shape, dim):
    x = torch.randn(base, generator=torch.Generator().manual_seed(9)).expand(shape)
    if op == "topk":
        fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, 1, dim), [x])
        check_topk(v, i, x, 1, dim, True)
        return
    fd, (out,) = run(lambda fd, t: getattr(fd.ops, op)(t, dim), [x])
    if op == "cumsum":
        check_cumsum(out, x, dim)
    else:
        assert torch.equal(out, torch.argsort(x, dim=dim, stable=True))
    assert 0 not in out.stride()


@pytest.mark.parametrize("op", ["cumsum", "argsort", "topk"])
@pytest.mark.parametrize("source", ["keepdim_sum", "size1_input"])
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("wide", ["sliced", "column_major"])
def test_along_a_broadcast_dim_the_result_still_broadcasts(op, source, dtype, wide):
    """A scan along a broadcast dim (a keepdim sum's, a size-1 input dim; topk's k is 1
    there) gives a dim of extent 1, which a [4, 3] operand (sliced, or column-major: the
    output takes its order) broadcasts as torch's size-1 dim does
    (``shape.made_ones_as_broadcasts``; generated program 502601, a cumsum of a keepdim
    sum in an addcmul with a [3] tensor, was refused: "operands disagree on the extent of
    dim 0")."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(4, 7 if source == "keepdim_sum" else 1, generator=g).to(dtype)
    y = torch.randn(4, 6, generator=g)[:, ::2] if wide == "sliced" else torch.randn(3, 4).t()
    y = y.to(dtype)

    def scanned(fd, t):
        if op == "topk":
            return fd.ops.topk(t, 1, 1)[0]
        out = getattr(fd.ops, op)(t, 1)
        return fd.ops.cast(out, DataType.Float) if op == "argsort" else out

    def build(fd, tx, ty):
        t = fd.ops.sum(tx, [1], keepdim=True) if source == "keepdim_sum" else tx
        return fd.ops.add(scanned(fd, t), ty)

    _, (out,) = run(build, [x, y])
    t = x.float().sum(1, keepdim=True) if source == "keepdim_sum" else x.float()
    want = {"cumsum": t.cumsum(1), "argsort": t.argsort(1).float(), "topk": t.topk(1, 1)[0]}[op]
    tol = 0 if dtype == F32 and source == "size1_input" else 2e-2
    torch.testing.assert_close(out.float(), want + y.float(), rtol=tol, atol=tol)
    assert out.shape == (4, 3) and out.stride() == (want + y.float()).stride()


def test_the_generated_program_502601():
    """A cumsum of a keepdim sum, in an addcmul with a sliced [3] tensor, and an fmod by it."""
    g = torch.Generator().manual_seed(502601)
    x, y = torch.randn(7, generator=g), torch.randn(6, generator=g)[::2]

    def build(fd, tx, ty):
        s = fd.ops.sum(tx, [0], keepdim=True)
        c = fd.ops.cumsum(s, 0)
        return fd.ops.addcmul(s, c, ty, fd.define_scalar(0.5)), fd.ops.fmod(s, c)

    _, (out, rem) = run(build, [x, y])
    s = x.sum(0, keepdim=True)
    torch.testing.assert_close(out, torch.addcmul(s, s.cumsum(0), y, value=0.5))
    torch.testing.assert_close(rem, torch.fmod(s, s.cumsum(0)))


def test_float64_cumsum_and_argsort():
    x = laid_out((3, 50), (1, 0), torch.float64, values="ties")
    _, (c, a) = run(lambda fd, t: (fd.ops.cumsum(t, 1), fd.ops.argsort(t, 1)), [x])
    torch.testing.assert_close(c, torch.cumsum(x, 1), equal_nan=True)
    assert torch.equal(a, torch.argsort(x, dim=1, stable=True))


# the default tiles, the links carrying any bytes (the default wants 3 MB a link)
ANY_BYTES = DEFAULT.with_fields(scan=dict(chain_link_bytes=0))


@pytest.mark.parametrize(
    "dtype, link_bytes, mode, chunk",
    [(F32, 0, "chain", 4096), (F32, None, "split", 2048), (I32, 0, "split", 2048)],
)
def test_cumsum_longer_than_the_default_tile_splits_into_chunks(dtype, link_bytes, mode, chunk):
    """Two rows of 5000: two chunks of 4096 in one chained pass where the running sum is
    fp32 and the links may carry any bytes; at the default ``chain_link_bytes`` (80 KB
    moved is too little for two links), and for an int64 sum, the split's three launches
    over chunks of 2048."""
    x = laid_out((2, 5000), (0, 1), dtype, seed=7)
    tuning = DEFAULT if link_bytes is None else ANY_BYTES
    fd, (out,) = run(lambda fd, t: fd.ops.cumsum(t, 1), [x], tuning=tuning)
    check_cumsum(out, x, 1)
    (p,) = scan_params(fd)
    assert (p.mode, p.block_n) == (mode, chunk)
    why = {"chain": "handed the running sum", "split": "chunk sums"}[mode]
    assert why in fd.segment([x])[0]["reason"]
    launches = fd.executor().last_run.launches
    assert len(launches) == (1 if mode == "chain" else 3)


LONG = DEFAULT.with_fields(
    scan=dict(max_block=32, chunk=32, tile_elements=64, outer_rows=2, sums_block=4, chain_links=0)
)


@pytest.mark.parametrize("mode, sms", [("loop", 1), ("split", 64)])
@pytest.mark.parametrize(
    "shape, order, dim",
    [((5, 150), (0, 1), 1), ((150, 5), (0, 1), 0), ((3, 101, 4), (2, 0, 1), 1)],
)
@pytest.mark.parametrize("dtype", [F32, BF16, I64])
def test_cumsum_rows_longer_than_a_tile(mode, sms, shape, order, dim, dtype):
    x = laid_out(shape, order, dtype, seed=3)
    fd, (out,) = run(lambda fd, t: fd.ops.cumsum(t, dim), [x], target=small_gpu(sms), tuning=LONG)
    check_cumsum(out, x, dim)
    (p,) = scan_params(fd)
    assert p.mode == mode and p.block_n == 32
    kernels = fd.executor().last_run.launches
    assert len(kernels) == (3 if mode == "split" else 1)


NARROW = DEFAULT.with_fields(
    scan=dict(
        max_block=32, chunk=32, tile_elements=64, outer_rows=16, outer_min_bytes=8, chain_links=0
    )
)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_cumsum_over_a_strided_dim_in_narrowed_tiles(order, dtype):
    """Along the outer dim of [150, 40] (row-major: the stride-1 side is a row coordinate)
    on 4 multiprocessors: 3 tiles of 16 rows are too few for the loop, 5 of 8 are enough
    (``_outer_rows``); column-major, the scanned dim is the stride-1 side: no narrowing."""
    x = laid_out((150, 40), order, dtype, seed=5)
    fd, (out,) = run(lambda fd, t: fd.ops.cumsum(t, 0), [x], target=small_gpu(4), tuning=NARROW)
    check_cumsum(out, x, 0)
    (p,) = scan_params(fd)
    if order == (0, 1):
        assert (p.mode, p.block_r, p.block_n) == ("loop", 8, 8), p
    else:
        assert p.block_r != 8, p


CHAIN = DEFAULT.with_fields(
    scan=dict(
        max_block=64,
        chunk=16,
        chain_chunk=16,
        tile_elements=64,
        outer_rows=8,
        outer_min_bytes=4,
        chain_link_bytes=0,
    )
)


def _chain_cases():
    """Every memory order of 2-D and 3-D inputs, each dim, dense, sliced and expanded, the
    three float dtypes: rows of 150 (2-D) or 67 (3-D) in chunks of 16 or more."""
    shapes = {2: (9, 150), 3: (4, 67, 5)}
    cases = []
    for rank, variant, dtype in itertools.product(shapes, VARIANTS, (F32, BF16, F16)):
        for order in itertools.permutations(range(rank)):
            for dim in range(rank):
                if shapes[rank][dim] > 16:
                    cases.append((rank, order, dim, variant, dtype))
    return cases


@pytest.mark.parametrize("rank, order, dim, variant, dtype", _params(_chain_cases(), seed=29))
def test_cumsum_in_chained_chunks(rank, order, dim, variant, dtype):
    """Mode ``chain`` at small sizes (``CHAIN``): one launch, every chunk but the first
    handed its running sum by the chunk before; the result in torch's values and the
    input's layout (an expanded input's broadcast dim stays one in the output);
    run twice, so the kept workspace was left zeroed."""
    shape = {2: (9, 150), 3: (4, 67, 5)}[rank]
    x = make_input(rank, order, dim, variant, dtype, shape=shape)
    for _ in range(2):
        fd, (out,) = run(lambda fd, t: fd.ops.cumsum(t, dim), [x], tuning=CHAIN)
        check_cumsum(out, x, dim)
        if variant != "expanded":
            assert out.stride() == dense_strides_like(x)
        (p,) = scan_params(fd)
        assert p.mode == "chain" and p.block_n < shape[dim], p
        assert len(fd.executor().last_run.launches) == 1


def test_chained_cumsum_fuses_its_prologue_and_epilogue():
    """exp(a) * b scanned along the outer dim of a row-major [130, 6] in chunks, its result
    times b again in the same kernel; infinities and NaN pass through the published bits."""
    g = torch.Generator().manual_seed(29)
    a, b = torch.randn(130, 6, generator=g), torch.randn(130, 6, generator=g)
    a[70, 1], a[90, 2], b[100, 3] = float("inf"), float("nan"), float("-inf")
    fd, (c, out) = run(
        lambda fd, a, b: (c := fd.ops.cumsum(fd.ops.mul(fd.ops.exp(a), b), 0), fd.ops.mul(c, b)),
        [a, b],
        tuning=CHAIN,
    )
    want = torch.cumsum(torch.exp(a) * b, 0)
    torch.testing.assert_close(c, want, rtol=1e-5, atol=1e-4, equal_nan=True)
    torch.testing.assert_close(out, want * b, rtol=1e-5, atol=1e-4, equal_nan=True)
    (p,) = scan_params(fd)
    (seg,) = fd.segment([a, b])
    assert p.mode == "chain" and seg["ops"] == ["exp", "mul", "cumsum", "mul"]


@pytest.mark.parametrize(
    "shape, dim, tuning",
    [((24, 45), 0, CHAIN), ((2, 9000), 1, ANY_BYTES), ((2000, 300), 0, ANY_BYTES)],
)
def test_chained_cumsum_gives_the_same_bits_every_call(shape, dim, tuning):
    """Thirty calls of a chained cumsum give the same bits as the first, and torch's values:
    on the GPU the programs of a row's chunks run at once, each waiting for the running sum
    of the chunk before (a chunk that read it early, twice, or from another launch would
    give other sums now and then); on the CPU they run in order."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(31))
    fd, (first,) = run(lambda fd, t: fd.ops.cumsum(t, dim), [x], tuning=tuning)
    check_cumsum(first, x, dim)
    assert scan_params(fd)[0].mode == "chain"
    for _ in range(29 if x.is_cuda else 2):
        (out,) = fd.execute([x])
        assert torch.equal(out, first)


def test_cumsum_fuses_its_pointwise_prologue():
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(4, 33, generator=g), torch.randn(4, 33, generator=g)
    fd, (out,) = run(lambda fd, a, b: fd.ops.cumsum(fd.ops.mul(fd.ops.exp(a), b), 1), [x, y])
    torch.testing.assert_close(out, torch.cumsum(torch.exp(x) * y, 1), rtol=1e-5, atol=1e-4)
    (seg,) = fd.segment([x, y])
    assert seg["scheduler"] == "scan" and seg["ops"] == ["exp", "mul", "cumsum"]
    assert "cumsum along dim 1" in seg["reason"]


@pytest.mark.parametrize("mode, sms", [("block", 1), ("loop", 1), ("split", 64)])
def test_cumsum_epilogue_joins_the_scan_kernel(mode, sms):
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(4, 150, generator=g).to(BF16), torch.randn(4, 150, generator=g)
    settings = {} if mode == "block" else dict(target=small_gpu(sms), tuning=LONG)
    fd, (c, out) = run(
        lambda fd, a, b: (c := fd.ops.cumsum(a, 1), fd.ops.mul(fd.ops.exp(c), b)),
        [x, y],
        **settings,
    )
    check_cumsum(c, x, 1)
    # exp of the bf16 cumsum is bf16 (rounded, as torch rounds it), then times fp32 y
    torch.testing.assert_close(out, torch.exp(c) * y, rtol=8e-3, atol=1e-5)
    (seg,) = fd.segment([x, y])
    assert seg["scheduler"] == "scan" and seg["ops"] == ["cumsum", "exp", "mul"]
    assert "epilogue" in seg["reason"] and scan_params(fd)[0].mode == mode


def test_consumers_in_other_coordinates_read_the_result_from_memory():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(5, 7, generator=g)
    fd, (out, vsum) = run(
        lambda fd, a: (
            fd.ops.permute(fd.ops.cumsum(a, 0), [1, 0]),
            fd.ops.neg(fd.ops.topk(a, 2, 1)[0]),
        ),
        [x],
    )
    torch.testing.assert_close(out, torch.cumsum(x, 0).t(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(vsum, -torch.topk(x, 2, 1).values)
    kinds = sorted(s["scheduler"] for s in fd.segment([x]))
    assert kinds == ["pointwise", "pointwise", "scan", "scan"], kinds


# --- argsort ----------------------------------------------------------------------------------
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("rank, order, dim, variant, dtype", _params(_cases()))
def test_argsort_layouts_nan_and_ties(rank, order, dim, variant, dtype, descending):
    x = make_input(rank, order, dim, variant, dtype, values="ties")
    fd, (out,) = run(lambda fd, t: fd.ops.argsort(t, dim, descending=descending), [x])
    want = torch.argsort(x, dim=dim, descending=descending, stable=True)
    assert out.dtype == torch.int64
    assert torch.equal(out, want)
    if variant != "expanded":
        assert out.stride() == dense_strides_like(x)
    (p,) = scan_params(fd)
    assert p.op == "argsort" and p.mode == "block"


def test_argsort_of_bools_and_size_one_rows():
    x = torch.rand(3, 17, generator=torch.Generator().manual_seed(4)) > 0.5
    _, (out,) = run(lambda fd, t: fd.ops.argsort(t, 1, descending=True, stable=True), [x])
    assert torch.equal(out, torch.argsort(x, dim=1, descending=True, stable=True))
    y = torch.randn(5, 1)
    _, (out,) = run(lambda fd, t: fd.ops.argsort(t, 1), [y])
    assert torch.equal(out, torch.zeros(5, 1, dtype=torch.int64))


RANKED = DEFAULT.with_fields(scan=dict(max_sort_block=16, rank_block=16, select_max_k_long=0))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize(
    "shape, order, dim, dtype",
    [((3, 45), (0, 1), 1, F32), ((45, 3), (0, 1), 0, BF16), ((2, 40, 3), (2, 0, 1), 1, I32)],
)
def test_argsort_rows_longer_than_a_sort_tile_are_ranked(shape, order, dim, dtype, descending):
    x = laid_out(shape, order, dtype, values="ties")
    fd, (out,) = run(
        lambda fd, t: fd.ops.argsort(t, dim, descending=descending), [x], tuning=RANKED
    )
    assert torch.equal(out, torch.argsort(x, dim=dim, descending=descending, stable=True))
    (p,) = scan_params(fd)
    assert p.mode == "rank" and p.block_n == 16
    assert "mode rank" in fd.segment([x])[0]["reason"]


@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_rows_longer_than_a_sort_tile(largest):
    x = laid_out((3, 45), (1, 0), F32, values="ties")
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, 5, 1, largest=largest), [x], tuning=RANKED)
    check_topk(v, i, x, 5, 1, largest)
    assert scan_params(fd)[0].mode == "rank"


# --- merge sort of long rows ------------------------------------------------------------------
# a sort tile of 16, a merge compare weighed as one of rank's: rows of 18 and longer merge
MERGED = DEFAULT.with_fields(
    scan=dict(max_sort_block=16, merge_compare_cost=1, merge_block=8, select_max_k_long=0)
)
# a tile of 4 and merge whenever the chunks' networks cost less than rank: the layout
# sweep's rows of 5, 6, 19 and 37 merge (2 to 10 chunks)
TINY_TILE = DEFAULT.with_fields(
    scan=dict(max_sort_block=4, merge_compare_cost=0, select_max_k_long=0)
)


def check_merge(fd, x, n: int, tile: int) -> None:
    """The run merge sorted rows of ``n``: chunks of ``tile``, 1 + passes + 1 launches, a
    program per chunk of each row first (``x``'s rows; None: not checked)."""
    (p,) = scan_params(fd)
    assert (p.mode, p.block_r, p.block_n) == ("merge", 1, tile)
    chunks = -(-n // tile)
    passes = (chunks - 1).bit_length()
    launches = fd.executor().last_run.launches
    assert len(launches) == 1 + passes + 1
    assert [launch.kernel.name.split("_", 1)[1] for launch in launches] == [
        "runs_kernel",
        *["merge_pass_kernel"] * passes,
        "merged_kernel",
    ]
    assert x is None or launches[0].grid == (x.numel() // n * chunks,)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize(
    "shape, order, dim, dtype",
    [
        ((3, 18), (0, 1), 1, F32),  # just over the tile: one pass
        ((2, 64), (1, 0), 1, BF16),  # four tiles: two passes
        ((45, 3), (0, 1), 0, F16),  # three chunks: an odd run out
        ((2, 100, 3), (2, 0, 1), 1, I32),  # seven chunks, three passes
        ((3, 33), (1, 0), 1, torch.bool),
    ],
)
def test_argsort_of_long_rows_merge_sorts(shape, order, dim, dtype, descending):
    base = F32 if dtype is torch.bool else dtype
    x = laid_out(shape, order, base, values="ties")
    x = x > 0 if dtype is torch.bool else x
    fd, (out,) = run(
        lambda fd, t: fd.ops.argsort(t, dim, descending=descending), [x], tuning=MERGED
    )
    assert torch.equal(out, torch.argsort(x, dim=dim, descending=descending, stable=True))
    assert out.stride() == dense_strides_like(x)
    check_merge(fd, x, x.shape[dim], 16)
    assert "mode merge" in fd.segment([x])[0]["reason"]


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k, dtype", [(1, F32), (17, BF16), (45, F32), (30, I32)])
def test_topk_of_long_rows_merge_sorts(k, dtype, largest):
    """k above select_max_k_long (here 0): the rows merge sorted, the first k stored (a
    program per chunk of them); k of the whole row too."""
    x = laid_out((3, 45), (1, 0), dtype, values="ties")
    fd, (v, i) = run(
        lambda fd, t: fd.ops.topk(t, k, 1, largest=largest, sorted=True), [x], tuning=MERGED
    )
    check_topk(v, i, x, k, 1, largest)
    check_merge(fd, x, 45, 16)
    assert fd.executor().last_run.launches[-1].grid == (3 * -(-k // 16),)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("rank, order, dim, variant, dtype", _params(_cases((F32, BF16, I32))))
def test_argsort_merge_layouts_nan_and_ties(rank, order, dim, variant, dtype, descending):
    """Every memory order, sliced and expanded inputs, through the merge sort of rows
    longer than a tile of 4 (rows of 3 fit it)."""
    x = make_input(rank, order, dim, variant, dtype, values="ties")
    fd, (out,) = run(
        lambda fd, t: fd.ops.argsort(t, dim, descending=descending), [x], tuning=TINY_TILE
    )
    assert torch.equal(out, torch.argsort(x, dim=dim, descending=descending, stable=True))
    if variant != "expanded":
        assert out.stride() == dense_strides_like(x)
    if x.shape[dim] > 4:  # (an expanded input's rows are sorted once)
        check_merge(fd, None if variant == "expanded" else x, x.shape[dim], 4)
    else:
        assert scan_params(fd)[0].mode == "block"


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("rank, order, dim, variant, dtype", _params(_cases((F32, BF16, I32))))
def test_topk_merge_layouts_nan_and_ties(rank, order, dim, variant, dtype, largest):
    x = make_input(rank, order, dim, variant, dtype, values="ties")
    k = min(5, x.shape[dim])
    fd, (v, i) = run(
        lambda fd, t: fd.ops.topk(t, k, dim, largest=largest, sorted=False),
        [x],
        tuning=TINY_TILE,
    )
    check_topk(v, i, x, k, dim, largest)
    if variant == "dense":
        assert v.stride() == i.stride() == dense_strides_like(x, v.shape)
    assert scan_params(fd)[0].mode == ("merge" if x.shape[dim] > 4 else "select")


@pytest.mark.parametrize("n", [2049, 5000])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_rows_past_the_default_tile_merge_sort(n, dtype):
    """At the default tuning (chunks of 2048): 2049 (one pass) and 5000 (three chunks, two
    passes), argsort descending and a topk of 300 (above select_max_k_long)."""
    x = laid_out((2, n), (0, 1), dtype, seed=n, values="ties")
    fd, (out,) = run(lambda fd, t: fd.ops.argsort(t, 1, descending=True), [x])
    assert torch.equal(out, torch.argsort(x, dim=1, descending=True, stable=True))
    check_merge(fd, x, n, 2048)
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, 300, 1, largest=False), [x])
    check_topk(v, i, x, 300, 1, False)
    check_merge(fd, x, n, 2048)


def test_rows_just_over_the_tile_stay_ranked_where_cheaper():
    """Rows of 17 at a tile of 16 (289 rank compares against 160 + 160), and keys that
    do not pack (int64, fp64: pairs)."""
    for dtype in (F32, I64, torch.float64):
        n = 17 if dtype is F32 else 45
        x = laid_out((3, n), (0, 1), dtype, values="ties")
        fd, (out,) = run(lambda fd, t: fd.ops.argsort(t, 1), [x], tuning=MERGED)
        assert torch.equal(out, torch.argsort(x, dim=1, stable=True))
        assert scan_params(fd)[0].mode == "rank", dtype


def test_merge_sorted_calls_replay():
    """Calls of the same signature replay the planned launches (each pass its own)."""
    x = laid_out((3, 70), (1, 0), F32, values="ties")
    fd, (out,) = run(lambda fd, t: fd.ops.argsort(t, 1, descending=True), [x], tuning=MERGED)
    for seed in (1, 2):
        y = laid_out((3, 70), (1, 0), F32, seed=seed, values="ties")
        (out,) = fd.execute([y])
        assert torch.equal(out, torch.argsort(y, dim=1, descending=True, stable=True))
    assert fd.executor().planned_runs == 1


@pytest.mark.parametrize("mode", ["rank", "merge"])
def test_argsort_epilogue_of_rows_longer_than_a_sort_tile(mode):
    """argsort(a) * b in the scan kernel's epilogue, whether the long rows are ranked or
    merge sorted (its last launch stores the epilogue)."""
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(2, 40, generator=g), torch.randn(2, 40, generator=g)
    tuning = RANKED if mode == "rank" else MERGED
    fd, (out,) = run(lambda fd, a, b: fd.ops.mul(fd.ops.argsort(a, 1), b), [x, y], tuning=tuning)
    torch.testing.assert_close(out, torch.argsort(x, dim=1, stable=True) * y)
    assert [s["scheduler"] for s in fd.segment([x, y])] == ["scan"]
    assert scan_params(fd)[0].mode == mode


# --- topk ------------------------------------------------------------------------------------------
def check_topk(values, indices, x, k, dim, largest):
    want_v, _ = torch.topk(x, k, dim, largest=largest)
    assert values.dtype == x.dtype and indices.dtype == torch.int64
    assert values.shape == want_v.shape == indices.shape
    assert torch.equal(values.isnan(), want_v.isnan())
    assert torch.equal(values.nan_to_num(7), want_v.nan_to_num(7))  # -0.0 == 0.0 here
    picked = torch.gather(x, dim, indices)
    assert torch.equal(picked.nan_to_num(7), values.nan_to_num(7))
    # ties come lowest index first: the stable sort's first k
    stable = torch.argsort(x, dim=dim, descending=largest, stable=True).narrow(dim, 0, k)
    assert torch.equal(indices, stable)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("rank, order, dim, variant, dtype", _params(_cases()))
def test_topk_layouts_nan_and_ties(rank, order, dim, variant, dtype, largest):
    x = make_input(rank, order, dim, variant, dtype, values="ties")
    k = min(3, x.shape[dim])
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, k, dim, largest=largest, sorted=True), [x])
    check_topk(v, i, x, k, dim, largest)
    if variant == "dense":  # the outputs keep the input's memory order
        assert v.stride() == i.stride() == dense_strides_like(x, v.shape)
    (p,) = scan_params(fd)
    assert (p.op, p.mode) == ("topk", "select")


SORTED = DEFAULT.with_fields(scan=dict(select_max_k=0))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("rank, order, dim, variant, dtype", _params(_cases((F32, I32))))
def test_topk_by_the_bitonic_sort(rank, order, dim, variant, dtype, largest):
    """A k above ``select_max_k`` sorts the row (mode ``block``)."""
    x = make_input(rank, order, dim, variant, dtype, values="ties")
    k = min(3, x.shape[dim])
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, k, dim, largest=largest), [x], tuning=SORTED)
    check_topk(v, i, x, k, dim, largest)
    assert scan_params(fd)[0].mode == "block"


# --- topk by selection (k passes) ------------------------------------------------------------------
SELECT_DTYPES = (F32, BF16, F16, I32, I64)


def select_input(shape, order, dtype, seed=0):
    """Ties (few distinct values) and, for floats, NaNs and -0.0 in every row."""
    return laid_out(shape, order, dtype, seed=seed, values="ties")


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 8, 16])
@pytest.mark.parametrize("dtype", SELECT_DTYPES)
def test_topk_select_in_a_tile(dtype, k, largest):
    x = select_input((2, 40), (0, 1), dtype, seed=k)
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, k, 1, largest=largest, sorted=False), [x])
    check_topk(v, i, x, k, 1, largest)
    (p,) = scan_params(fd)
    assert (p.mode, p.in_tile, p.block_n) == ("select", True, 64)
    assert "mode select" in fd.segment([x])[0]["reason"]


ROW_A_PROGRAM = DEFAULT.with_fields(scan=dict(split_rows_per_sm=0))


@pytest.mark.parametrize("largest", [True, False])
def test_topk_select_of_rows_longer_than_a_tile(largest):
    """A row of 3000 (> max_sort_block): split in chunks of 1024 across programs (a row
    cannot fill the device), each selecting its candidates, then merged; or, where the
    rows fill it, walked by a program in 1024-element chunks a pass."""
    x = select_input((1, 3000), (0, 1), F32, seed=1)
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, 2, 1, largest=largest), [x])
    check_topk(v, i, x, 2, 1, largest)
    (p,) = scan_params(fd)
    assert (p.mode, p.block_r, p.block_n, p.in_tile) == ("split", 1, 1024, True)
    assert [launch.grid for launch in fd.executor().last_run.launches] == [(3,), (1,)]
    assert "3 chunks of 1024" in fd.segment([x])[0]["reason"]
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, 2, 1, largest=largest), [x], tuning=ROW_A_PROGRAM)
    check_topk(v, i, x, 2, 1, largest)
    (p,) = scan_params(fd)
    assert (p.mode, p.in_tile, p.block_r, p.block_n) == ("select", False, 1, 1024)
    assert "chunks of 1024" in fd.segment([x])[0]["reason"]


SMALL_CHUNKS = DEFAULT.with_fields(scan=dict(max_sort_block=16, select_chunk=16))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 8, 16])
@pytest.mark.parametrize("dtype", SELECT_DTYPES)
def test_topk_select_in_chunks(dtype, k, largest):
    """The chunked passes at a sort tile and chunk of 16 (rows of 70: five chunks)."""
    x = select_input((2, 70), (0, 1), dtype, seed=k)
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, k, 1, largest=largest), [x], tuning=SMALL_CHUNKS)
    check_topk(v, i, x, k, 1, largest)
    (p,) = scan_params(fd)
    assert (p.mode, p.in_tile, p.block_n) == ("select", False, 16)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize(
    "shape, order, dim, dtype",
    [
        ((5, 37), (1, 0), 1, F32),
        ((37, 5), (0, 1), 0, BF16),
        ((3, 37, 2), (2, 0, 1), 1, F16),
        ((2, 3, 37), (2, 1, 0), 2, I32),
        ((37, 2, 3), (1, 2, 0), 0, I64),
    ],
)
def test_topk_select_layouts_with_the_dim_not_innermost(shape, order, dim, dtype, largest):
    """Memory orders where the topk dim is not stride-1: in a tile, in chunks of 16 a
    pass, and (keys that pack) split in chunks of 16 across programs."""
    x = select_input(shape, order, dtype, seed=3)
    modes = [(DEFAULT, "select", True), (SMALL_CHUNKS, "select", False)]
    modes += [(SPLIT, "split", True)] if dtype != I64 else []
    for tuning, mode, in_tile in modes:
        fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, 3, dim, largest=largest), [x], tuning=tuning)
        check_topk(v, i, x, 3, dim, largest)
        assert v.stride() == i.stride() == dense_strides_like(x, v.shape)
        (p,) = scan_params(fd)
        assert (p.mode, p.in_tile) == (mode, in_tile)
        if mode == "split":
            rows = x.numel() // x.shape[dim]
            assert [r.grid for r in fd.executor().last_run.launches] == [(rows * 3,), (rows,)]


SPLIT = DEFAULT.with_fields(
    scan=dict(max_sort_block=16, split_min_chunk=16, split_max_chunk=16, split_chunk_per_k=1)
)


@pytest.mark.parametrize("sms, mode", [(1, "select"), (64, "split")])
def test_topk_splits_rows_while_they_do_not_fill_the_device(sms, mode):
    """Six rows of 70 (k=4, a sort tile of 16): split across programs on 64
    multiprocessors, a program a row on one (six rows reach split_rows_per_sm 4 a
    multiprocessor)."""
    x = select_input((6, 70), (0, 1), F32, seed=5)
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, 4, 1), [x], target=small_gpu(sms), tuning=SPLIT)
    check_topk(v, i, x, 4, 1, True)
    assert scan_params(fd)[0].mode == mode


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_topk_select_every_memory_order_of_3d(order):
    x = select_input((4, 19, 3), order, F32, seed=4)
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, 3, 1), [x])
    check_topk(v, i, x, 3, 1, True)
    assert scan_params(fd)[0].mode == "select"


@pytest.mark.parametrize(
    "n, k, mode", [(20, 16, "select"), (20, 17, "block"), (40, 8, "select"), (40, 9, "rank")]
)
def test_topk_mode_by_k(n, k, mode):
    """select up to select_max_k in a tile (else block), up to select_max_k_long beyond it
    (else rank; here a sort tile of 16 and select_max_k_long 8)."""
    tuning = (
        DEFAULT
        if n == 20
        else DEFAULT.with_fields(scan=dict(max_sort_block=16, rank_block=16, select_max_k_long=8))
    )
    x = select_input((2, n), (0, 1), F32, seed=n + k)
    fd, (v, i) = run(lambda fd, t: fd.ops.topk(t, k, 1), [x], tuning=tuning)
    check_topk(v, i, x, k, 1, True)
    assert scan_params(fd)[0].mode == mode
    assert f"mode {mode}" in fd.segment([x])[0]["reason"]


def test_argsort_never_selects():
    x = select_input((2, 40), (0, 1), F32)
    fd, (out,) = run(lambda fd, t: fd.ops.argsort(t, 1), [x])
    assert torch.equal(out, torch.argsort(x, dim=1, stable=True))
    assert scan_params(fd)[0].mode == "block"


@pytest.mark.parametrize("k", [0, 1, 37])
def test_topk_k_bounds_and_scalar_k(k):
    x = laid_out((4, 37), (1, 0), F32, values="ties")
    _, (v, i) = run(lambda fd, t: fd.ops.topk(t, k, 1), [x])
    check_topk(v, i, x, k, 1, True)


def test_topk_with_a_scalar_input_k():
    x = laid_out((3, 21), (0, 1), F32, seed=5)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        k = fd.define_scalar(dtype=DataType.Int)
        v, i = fd.ops.topk(t, k, dim=1, largest=False)
        fd.add_output(v)
        fd.add_output(i)
    for kv in (2, 5, 2):
        v, i = fd.execute([x, kv])
        check_topk(v, i, x, kv, 1, False)


# --- triu ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
@pytest.mark.parametrize(
    "shape, order",
    [((5, 7), (0, 1)), ((7, 5), (1, 0)), ((2, 5, 6), (2, 0, 1)), ((2, 4, 3), (1, 2, 0))],
)
@pytest.mark.parametrize("dtype", [F32, BF16, I32, torch.bool])
def test_triu(shape, order, diagonal, dtype):
    x = laid_out(shape, order, F32 if dtype is torch.bool else dtype)
    x = x > 0 if dtype is torch.bool else x
    fd, (out,) = run(lambda fd, t: fd.ops.triu(t, diagonal), [x])
    assert out.dtype == dtype
    assert torch.equal(out, torch.triu(x, diagonal))
    assert [s["scheduler"] for s in fd.segment([x])] == ["pointwise"]


def test_triu_fuses_with_its_neighbours():
    g = torch.Generator().manual_seed(6)
    x, y = torch.randn(6, 6, generator=g), torch.randn(6, 6, generator=g)
    fd, (out,) = run(lambda fd, a, b: fd.ops.add(fd.ops.triu(fd.ops.exp(a), 1), b), [x, y])
    torch.testing.assert_close(out, torch.triu(torch.exp(x), 1) + y)
    assert len(fd.segment([x, y])) == 1


# --- with other kernels ------------------------------------------------------------------------
def _softmax(fd, a):
    m = fd.ops.max(a, [1], keepdim=False)
    e = fd.ops.exp(fd.ops.sub(a, fd.ops.broadcast_in_dim(m, [6, 9], [0])))
    return fd.ops.div(e, fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), [6, 9], [0]))


COMPOSED = {
    "sum-of-cumsum": (
        lambda fd, a: fd.ops.sum(fd.ops.cumsum(a, 1), [1]),
        lambda x: [x.cumsum(1).sum(1)],
        ["scan", "reduction"],
    ),
    "cumsum-of-sum": (
        lambda fd, a: fd.ops.cumsum(fd.ops.sum(a, [1]), 0),
        lambda x: [x.sum(1).cumsum(0)],
        ["reduction", "scan"],
    ),
    "topk-of-softmax": (
        lambda fd, a: fd.ops.topk(_softmax(fd, a), 3, 1),
        lambda x: list(torch.topk(torch.softmax(x, 1), 3, 1)),
        ["normalization", "scan"],  # the max and the sum: one log-sum-exp kernel
    ),
    "argsort-of-cumsum": (
        lambda fd, a: fd.ops.argsort(fd.ops.cumsum(a, 1), 1, descending=True),
        lambda x: [torch.argsort(x.cumsum(1), dim=1, descending=True, stable=True)],
        ["scan", "scan"],
    ),
}


@pytest.mark.parametrize("name", list(COMPOSED))
def test_scans_compose_with_reductions_and_each_other(name):
    build, reference, kernels = COMPOSED[name]
    x = laid_out((6, 9), (1, 0), F32, seed=10)
    fd, outs = run(build, [x])
    for out, want in zip(outs, reference(x), strict=True):
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert [s["scheduler"] for s in fd.segment([x])] == kernels


@pytest.mark.parametrize("op", ["cumsum", "argsort"])
def test_a_prologue_through_a_reshape_that_is_not_a_view_runs_the_finer_plan(op):
    """The scan kernel needs strides; a load through such a reshape has none: its input is
    stored by a pointwise kernel first (the scan segment's fallback), then scanned."""
    x = laid_out((4, 6), (1, 0), F32, seed=11)  # column-major: reshape(24) is not a view
    fd, (out,) = run(lambda fd, t: getattr(fd.ops, op)(fd.ops.reshape(fd.ops.exp(t), [24]), 0), [x])
    y = torch.exp(x).reshape(24)
    if op == "cumsum":
        torch.testing.assert_close(out, torch.cumsum(y, 0), rtol=1e-5, atol=1e-5)
    else:
        assert torch.equal(out, torch.argsort(y, dim=0, stable=True))
    segs = fd.segment([x])
    assert [s["scheduler"] for s in segs] == ["pointwise", "scan"]
    assert all("instead of one scan kernel: a load crosses a reshape" in s["reason"] for s in segs)
