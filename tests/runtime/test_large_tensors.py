"""Tensors past 2**31 elements, or read past 2**31 elements of offset, for every scheduler.

Each scheduler's params carry ``index64`` (``Problem.needs_int64``); the kernels then index
from 64-bit program ids. The CPU part plans every case on meta tensors (nothing is
allocated) in three regimes: well under 2**31 elements (``small``), just past 2**31
elements (``numel``), and under 2**31 elements of a view whose largest offset passes 2**31
(``offset``: a slice of a larger allocation). It asserts that ``index64`` and the 64-bit
program ids appear exactly in the last two, and compiles every planned kernel for sm_90:
where 64-bit indexing is chosen, no address offset is computed from a 32-bit product (an
R index times a stride, in the TTIR); where it is not, every address offset is 32-bit.
The kernels that widen more than their program ids also run, forced to 64 bits, on small
inputs against torch. The GPU part (``--device cuda`` with 40 GiB free) runs real bf16
tensors past 2**31 elements against torch, comparing samples or reductions.
"""

from __future__ import annotations

import dataclasses
import gc
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from layoutfuse.analysis.device import device_info
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition
from layoutfuse.schedulers.problem import Problem
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, small_gpu

pytestmark = INTERPRETER_WARNINGS + [pytest.mark.filterwarnings("ignore::RuntimeWarning")]

INT32_LIMIT = 2**31
BF16 = torch.bfloat16


# --- fusions (each takes its meta or real inputs) -----------------------------------------


def _add(x: torch.Tensor, y: torch.Tensor) -> FusionDefinition:
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.add(a, b))
    return fd


def _transpose_copy(x: torch.Tensor) -> FusionDefinition:
    """A copy of ``x`` into a row-major output (a transpose where ``x`` is column-major)."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.set(t), stride_order=[1, 0])
    return fd


def _sum(*dims: int) -> Callable[..., FusionDefinition]:
    """The fp32 sum over ``dims`` of its inputs' sum."""

    def build(*xs: torch.Tensor) -> FusionDefinition:
        with FusionDefinition() as fd:
            ts = [fd.ops.cast(fd.from_pytorch(x), DataType.Float) for x in xs]
            total = ts[0]
            for t in ts[1:]:
                total = fd.ops.add(total, t)
            fd.add_output(fd.ops.sum(total, dims=list(dims)))
        return fd

    return build


def _broadcast_back(fd, t, like, dim: int):
    """A 2-D reduction's result over ``dim``, broadcast back to ``like``'s shape."""
    return fd.ops.broadcast_in_dim(t, shape=like.shape(), broadcast_dims=[1 - dim])


def _softmax(dim: int) -> Callable[[torch.Tensor], FusionDefinition]:
    """softmax of a 2-D input over ``dim`` in fp32, cast back to bf16."""

    def build(x: torch.Tensor) -> FusionDefinition:
        with FusionDefinition() as fd:
            t = fd.from_pytorch(x)
            tf = fd.ops.cast(t, DataType.Float)
            z = fd.ops.sub(tf, _broadcast_back(fd, fd.ops.max(tf, dims=[dim]), t, dim))
            e = fd.ops.exp(z)
            y = fd.ops.div(e, _broadcast_back(fd, fd.ops.sum(e, dims=[dim]), t, dim))
            fd.add_output(fd.ops.cast(y, DataType.BFloat16))
        return fd

    return build


def _layer_norm(x: torch.Tensor) -> FusionDefinition:
    """layer norm over dim 1 (no weight, no bias) in fp32, cast back; also the means."""
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        tf = fd.ops.cast(t, DataType.Float)
        var, mean = fd.ops.var_mean(tf, dims=[1], correction=0)
        rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))
        y = fd.ops.mul(
            fd.ops.sub(tf, _broadcast_back(fd, mean, t, 1)), _broadcast_back(fd, rstd, t, 1)
        )
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
        fd.add_output(mean)
    return fd


# --- meta inputs ------------------------------------------------------------------------


def dense(*shape: int) -> torch.Tensor:
    return torch.empty(shape, dtype=BF16, device="meta")


def column_major(rows: int, cols: int) -> torch.Tensor:
    return torch.empty(cols, rows, dtype=BF16, device="meta").t()


def strided(shape: tuple[int, ...], strides: tuple[int, ...]) -> torch.Tensor:
    """A view of ``shape`` and ``strides`` into an allocation just large enough (a slice of a
    larger tensor): its largest offset is ``sum((n - 1) * stride)``."""
    last = sum((n - 1) * st for n, st in zip(shape, strides))
    return torch.empty(last + 1, dtype=BF16, device="meta").as_strided(shape, strides)


def rows_of(rows: int, cols: int, row_stride: int) -> torch.Tensor:
    """A [rows, cols] view whose rows lie ``row_stride`` elements apart."""
    return strided((rows, cols), (row_stride, 1))


# --- cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A fusion, its inputs in each regime, and what must schedule it: the scheduler of
    every segment, in order, and a condition on the params of its first segment; ``patch``
    gives the executor settings (``FusionExecutor.configure``) that steer the heuristics
    there."""

    name: str
    build: Callable[..., FusionDefinition]
    inputs: dict[str, Callable[[], tuple[torch.Tensor, ...]]]
    schedulers: tuple[str, ...]
    chosen: Callable[[object], bool]
    patch: Callable[[], dict] | None = None


def _family(family: str, split: bool | None = False) -> Callable[[object], bool]:
    """Reduction params of ``family``, split or not (None: either)."""
    return lambda p: p.family == family and split in (None, p.split > 1)


def _nested(p) -> bool:
    return p.family == "inner" and p.r_nest


def _outer_looped_past_l2() -> dict:
    """The outer looped plan for columns whose blocks in flight pass half of L2, as those
    of 2**31 elements do (on by default, ``loop_outer_l2`` plans them segmented)."""
    return {"tuning": DEFAULT.with_fields(normalization=dict(loop_outer_l2=0, loop_min_blocks=1))}


def _split_finished_by_a_kernel(p) -> bool:
    return p.family == "inner" and p.split > 1 and p.finish == "kernel"


def _no_ticket_steps() -> dict:
    """No partials combined by the last program: a split input larger than the L2 gets a
    finishing kernel."""
    return {"tuning": DEFAULT.with_fields(reduction=dict(ticket_steps=0))}


def _mode(mode: str, template: str = "inner") -> Callable[[object], bool]:
    return lambda p: p.mode == mode and p.template == template


def one(make: Callable[..., torch.Tensor], *args) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (make(*args),)


def twice(make: Callable[..., torch.Tensor], *args) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (make(*args),) * 2


def nested_pair(n: int, x_stride0: int, y_strides: tuple[int, int, int]):
    """[n, 64, 1000] inputs summed over dims 1 and 2, which do not merge: ``x``'s rows are
    padded to 1024 (the tile walks dim 2, a loop dim 1); ``y`` has strides ``y_strides``."""
    return lambda: (strided((n, 64, 1000), (x_stride0, 1024, 1)), strided((n, 64, 1000), y_strides))


PAST = INT32_LIMIT + 1024  # elements: just past 2**31
SOFTMAX_ROWS = INT32_LIMIT // 4096 + 8
LOOPED_ROWS = INT32_LIMIT // 65536 + 8
NESTED_ROWS = INT32_LIMIT // 64000 + 8

CASES = [
    Case(
        "pointwise add",
        _add,
        {
            "small": twice(dense, 1024, 1024),
            "numel": twice(dense, PAST),
            "offset": twice(rows_of, 1024, 1024, 2**22),
        },
        ("pointwise",),
        lambda p: not p.transpose,
    ),
    Case(
        "pointwise transpose",
        _transpose_copy,
        {
            "small": one(column_major, 1024, 1024),
            "numel": one(column_major, 65537, 32768),
            "offset": one(strided, (1024, 1024), (1, 2**22)),
        },
        ("pointwise",),
        lambda p: p.transpose,
    ),
    Case(
        "reduction inner",
        _sum(1),
        {
            "small": one(dense, 1024, 1024),
            "numel": one(dense, 65537, 32768),
            "offset": one(rows_of, 1024, 1024, 2**22),
        },
        ("reduction",),
        _family("inner"),
    ),
    Case(
        "reduction inner, nested R loop",
        _sum(1, 2),
        {
            "small": nested_pair(64, 65536, (64000, 1, 64)),
            "numel": nested_pair(NESTED_ROWS, 65536, (64000, 1, 64)),
            "offset": nested_pair(64, 65536, (64, 1, 2**22)),  # y: 999 * 2**22 along dim 2
        },
        ("reduction",),
        _nested,
    ),
    Case(
        "reduction outer",
        _sum(0),
        {
            "small": one(dense, 1024, 1024),
            "numel": one(dense, 65537, 32768),
            "offset": one(rows_of, 1024, 1024, 2**22),
        },
        ("reduction",),
        _family("outer", split=None),
    ),
    Case(
        "split reduction",
        _sum(1),
        {
            "small": one(dense, 2, 2**20),
            "numel": one(dense, 2, INT32_LIMIT // 2 + 1024),
            "offset": one(rows_of, 2, 2**20, INT32_LIMIT),
        },
        ("reduction",),
        _family("inner", split=True),
    ),
    Case(
        "split reduction, finishing kernel",
        _sum(1),
        {
            "small": one(dense, 2, 2**25),
            "numel": one(dense, 2, INT32_LIMIT // 2 + 1024),
            "offset": one(rows_of, 2, 2**25, INT32_LIMIT),
        },
        ("reduction",),
        _split_finished_by_a_kernel,
        _no_ticket_steps,
    ),
    Case(
        "softmax persistent",
        _softmax(1),
        {
            "small": one(dense, 1024, 4096),
            "numel": one(dense, SOFTMAX_ROWS, 4096),
            "offset": one(rows_of, 1024, 4096, 2**22),
        },
        ("normalization",),
        _mode("persistent"),
    ),
    Case(
        "layer norm persistent",
        _layer_norm,
        {
            "small": one(dense, 1024, 4096),
            "numel": one(dense, SOFTMAX_ROWS, 4096),
            "offset": one(rows_of, 1024, 4096, 2**22),
        },
        ("normalization",),
        _mode("persistent"),
    ),
    Case(
        "softmax looped",
        _softmax(1),
        {
            "small": one(dense, 256, 65536),
            "numel": one(dense, LOOPED_ROWS, 65536),
            "offset": one(rows_of, 256, 65536, 2**24),
        },
        ("normalization",),
        _mode("looped"),
    ),
    Case(
        "layer norm looped",
        _layer_norm,
        {
            "small": one(dense, 256, 65536),
            "numel": one(dense, LOOPED_ROWS, 65536),
            "offset": one(rows_of, 256, 65536, 2**24),
        },
        ("normalization",),
        _mode("looped"),
    ),
    Case(
        "softmax over columns, persistent",
        _softmax(0),
        {
            "small": one(dense, 1024, 1024),
            "numel": one(dense, 1024, INT32_LIMIT // 1024 + 64),
            "offset": one(rows_of, 1024, 1024, 2**22),  # 1023 * 2**22 along R
        },
        ("normalization",),
        _mode("persistent", "outer"),
    ),
    Case(
        "softmax over columns, looped",
        _softmax(0),
        {
            # columns of 16384: 256 blocks of a line (rows narrower than a line are not
            # looped, ``loop_min_row_bytes``)
            "small": one(dense, 65536, 16384),
            "numel": one(dense, 65536, 32832),  # 65535 * 32832 along R
            "offset": one(rows_of, 65536, 16384, 2**16),
        },
        ("normalization",),
        _mode("looped", "outer"),
        _outer_looped_past_l2,
    ),
    Case(
        "softmax segmented",
        _softmax(1),
        {
            "small": one(dense, 8, 2**20),
            "numel": one(dense, 8, INT32_LIMIT // 8 + 1024),
            "offset": one(rows_of, 8, 2**20, 2**29),
        },
        ("reduction", "pointwise"),
        _family("inner", split=True),
    ),
]

REGIMES = ("small", "numel", "offset")
PARAMS = [
    pytest.param(case, regime, id=f"{case.name.replace(',', '').replace(' ', '-')}-{regime}")
    for case in CASES
    for regime in REGIMES
]


def plan(case: Case, regime: str):
    """The planned run of ``case`` on its meta inputs in ``regime``, and its executor."""
    FusionCache.reset()  # an executor of its own, configured or not
    xs = case.inputs[regime]()
    executor = case.build(*xs).executor()
    if case.patch is not None:
        executor.configure(**case.patch())
    return executor.plan(list(xs)), executor


def assert_regime(problem, regime: str) -> None:
    """The case's input is what its regime says (the test's own premise)."""
    numel_past = problem.numel >= INT32_LIMIT
    offset_past = max(problem.max_offsets) >= INT32_LIMIT
    assert (numel_past, offset_past) == {
        "small": (False, False),
        "numel": (True, True),
        "offset": (False, True),
    }[regime], problem


@pytest.mark.parametrize("case,regime", PARAMS)
def test_index64_exactly_where_an_offset_passes_int32(case, regime, monkeypatch):
    record, _ = plan(case, regime)
    assert tuple(s.scheduler for s in record.segments) == case.schedulers, record.segments
    assert case.chosen(record.segments[0].params), record.segments[0].params
    wide = regime != "small"
    for seg in record.segments:
        assert_regime(seg.problem, regime)
        assert seg.params.index64 == wide, seg.params
    for launch in record.launches:
        src = launch.kernel.source
        assert ("tl.program_id(0).to(tl.int64)" in src) == wide, src
        assert (".to(tl.int64)" in src) == wide, src


# --- the compiled kernels' address arithmetic ---------------------------------------------

_DEF = re.compile(r"^\s*(%[\w.$-]+) = ([\w.]+) (.*?)(?: loc\(.*\))?$")
_VALUE = re.compile(r"%[\w.$-]+")


def address_offsets(ttir: str) -> list[tuple[str, str]]:
    """Every integer op that computes part of an address offset, as (op, result type):
    the backward slice of the offset operand of each ``tt.addptr``, through the ops
    defined in the kernel (a loop's induction variable ends it)."""
    defs: dict[str, tuple[str, list[str], str]] = {}
    offsets: list[str] = []
    for line in ttir.splitlines():
        m = _DEF.match(line)
        if m is None:
            continue
        name, op, rest = m.groups()
        operands, _, result_type = rest.rpartition(" : ")
        defs[name] = (op, _VALUE.findall(operands), result_type)
        if op == "tt.addptr":
            offsets.append(_VALUE.findall(operands)[1])
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    while offsets:
        v = offsets.pop()
        if v in seen or v not in defs:
            continue
        seen.add(v)
        op, operands, result_type = defs[v]
        if op.startswith("arith.") or op.startswith("tt."):
            found.append((op, result_type))
            offsets.extend(operands)
    return found


def is_i32(result_type: str) -> bool:
    return bool(re.search(r"(?:\bi32$|xi32>$)", result_type.strip()))


@pytest.mark.parametrize("case,regime", PARAMS)
def test_planned_kernels_compile_for_sm90_with_addresses_as_wide_as_needed(
    case, regime, monkeypatch
):
    record, executor = plan(case, regime)
    arts = compile_last_run(executor)
    assert [a.name for a in arts] == [r.kernel.name for r in record.launches]
    for art in arts:
        ops = address_offsets(art.ttir)
        assert ops, art.name
        if regime == "small":
            assert not any("xi64>" in t or t.strip() == "i64" for _, t in ops), (art.name, ops)
        else:
            narrow = [(op, t) for op, t in ops if op in ("arith.muli", "arith.shli") and is_i32(t)]
            assert not narrow, (art.name, narrow)


# --- the 64-bit kernels' values, on small inputs ------------------------------------------


def random_view(shape: tuple[int, ...], strides: tuple[int, ...], seed: int) -> torch.Tensor:
    """``strided``'s view with values (bf16), on the default device."""
    last = sum((n - 1) * st for n, st in zip(shape, strides))
    g = torch.Generator().manual_seed(seed)
    return torch.randn(last + 1, generator=g).to(BF16).as_strided(shape, strides)


def _split_finishing_kernel() -> dict:
    """No ticket steps, and no L2 to keep the input in: any split gets a finishing kernel."""
    device = device_info(torch.get_default_device())
    return {**_no_ticket_steps(), "target": dataclasses.replace(device, l2_bytes=0)}


def _columns_looped() -> dict:
    return {"tuning": DEFAULT.with_fields(normalization=dict(max_tile=64)), "target": small_gpu(2)}


def _softmax_reference(dim: int):
    return lambda x: (torch.softmax(x.float(), dim).to(BF16),)


SUM_TOL = dict(atol=1e-3, rtol=1e-4)
FORCED = {  # name: fusion, inputs, reference, condition on the first params, patch
    "nested R loop": (
        _sum(1, 2),
        lambda: (
            # a stride-1 R group long enough to nest (a short one walks R flat)
            random_view((4, 8, 512), (8 * 520, 520, 1), 0),
            random_view((4, 8, 512), (4096, 1, 8), 1),
        ),
        lambda x, y: (x.float().sum((1, 2)) + y.float().sum((1, 2)),),
        _nested,
        None,
    ),
    "split, ticket": (
        _sum(1),
        lambda: (random_view((2, 2**16), (2**16, 1), 2),),
        lambda x: (x.float().sum(1),),
        _family("inner", split=True),
        None,
    ),
    "split, finishing kernel": (
        _sum(1),
        lambda: (random_view((2, 2**16), (2**16, 1), 3),),
        lambda x: (x.float().sum(1),),
        _split_finished_by_a_kernel,
        _split_finishing_kernel,
    ),
    "columns, persistent": (
        _softmax(0),
        lambda: (random_view((48, 64), (64, 1), 4),),
        _softmax_reference(0),
        _mode("persistent", "outer"),
        None,
    ),
    "columns, looped": (
        _softmax(0),
        lambda: (random_view((40, 256), (256, 1), 5),),
        _softmax_reference(0),
        _mode("looped", "outer"),
        _columns_looped,
    ),
}


@pytest.mark.parametrize(
    "name", list(FORCED), ids=[n.replace(",", "").replace(" ", "-") for n in FORCED]
)
def test_forced_64_bit_kernels_match_torch(name, monkeypatch):
    """The kernels that widen more than their program ids (the combine's split index, the
    nested loop's R index, the outer template's R terms), forced to 64-bit indexing on
    small inputs (the interpreter on the CPU): the values stay torch's."""
    build, inputs, reference, chosen, patch = FORCED[name]
    monkeypatch.setattr(Problem, "needs_int64", property(lambda self: True))
    FusionCache.reset()
    xs = inputs()
    fd = build(*xs)
    if patch is not None:
        fd.executor().configure(**patch())
    outs = fd.execute(list(xs))
    (first, *_) = fd.last_schedule()
    assert chosen(first) and all(p.index64 for p in fd.last_schedule()), fd.last_schedule()
    for got, want in zip(outs, reference(*xs), strict=True):
        torch.testing.assert_close(got, want, **({} if got.dtype == BF16 else SUM_TOL))


# --- on the GPU ----------------------------------------------------------------------------

GPU_FREE_BYTES = 40 * 2**30


@pytest.fixture
def big_gpu():
    """Skip unless the default device is CUDA with 40 GiB free; free everything after."""
    if torch.get_default_device().type != "cuda":
        pytest.skip("runs on the GPU: pytest --device cuda")
    free, _ = torch.cuda.mem_get_info()
    if free < GPU_FREE_BYTES:
        pytest.skip(f"needs {GPU_FREE_BYTES >> 30} GiB of free GPU memory, {free >> 30} free")
    FusionCache.reset()
    yield
    FusionCache.reset()  # the cached executors' plans keep scratch buffers
    gc.collect()
    torch.cuda.empty_cache()


def uniform(*shape: int) -> torch.Tensor:
    """Values drawn on the GPU (a CPU generator would draw 2**31 values on the CPU)."""
    return torch.empty(shape, dtype=BF16).uniform_(-4, 4)


def sample_positions(n: int, k: int = 1 << 16) -> torch.Tensor:
    """The first and the last ``k`` positions of ``n`` (reaching past 2**31 elements here),
    and ``k`` positions in between."""
    g = torch.Generator(device=torch.get_default_device()).manual_seed(0)
    between = torch.randint(0, n, (k,), generator=g)
    return torch.cat([torch.arange(k), between, torch.arange(n - k, n)])


def assert_index64(fd) -> None:
    assert all(p.index64 for p in fd.last_schedule()), fd.last_schedule()


def test_gpu_add_past_int32_elements(big_gpu):
    x, y = uniform(PAST), uniform(PAST)
    fd = _add(x, y)
    (out,) = fd.execute([x, y])
    assert_index64(fd)
    pos = sample_positions(PAST)
    torch.testing.assert_close(out[pos], x[pos] + y[pos])
    del x, y, out


@pytest.mark.parametrize("dim", [0, 1])
def test_gpu_sum_past_int32_elements(big_gpu, dim):
    x = uniform(65537, 32768)
    fd = _sum(dim)(x)
    (out,) = fd.execute([x])
    assert_index64(fd)
    # sums of 32768 or 65537 values of [-4, 4]; a misplaced element is off by far more
    torch.testing.assert_close(out, x.sum(dim, dtype=torch.float32), atol=5e-2, rtol=1e-4)
    del x, out


def test_gpu_softmax_over_rows_past_int32_elements(big_gpu):
    x = uniform(SOFTMAX_ROWS, 4096)
    fd = _softmax(1)(x)
    (out,) = fd.execute([x])
    assert_index64(fd)
    rows = sample_positions(SOFTMAX_ROWS, 64)
    want = torch.softmax(x[rows].float(), dim=1).to(BF16)
    torch.testing.assert_close(out[rows], want)
    del x, out


def test_gpu_softmax_over_columns_past_int32_elements(big_gpu):
    """The outer template's R index times the row stride passes 2**31 (65535 * 32832)."""
    x = uniform(65536, 32832)
    fd = _softmax(0)(x)
    (out,) = fd.execute([x])
    assert_index64(fd)
    cols = sample_positions(32832, 64)
    want = torch.softmax(x[:, cols].float(), dim=0).to(BF16)
    torch.testing.assert_close(out[:, cols], want)
    del x, out


def test_gpu_transpose_whose_output_offset_passes_int32(big_gpu):
    x = torch.empty(32768, 65537, dtype=BF16).uniform_(-4, 4).t()  # column-major
    fd = _transpose_copy(x)
    (out,) = fd.execute([x])
    assert_index64(fd)
    assert out.stride() == (32768, 1)
    rows = sample_positions(65537, 256)
    assert torch.equal(out[rows], x[rows])
    del x, out
