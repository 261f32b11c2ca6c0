"""Generic indexing and expanded outputs, end to end (issue: non-affine accesses).

An access whose real strides cannot move along its chain (a reshape that is not a
view of the actual strides) makes its kernel run in generic mode: coordinates are
not merged and that access walks the shape ops' index maps per element. Stores into
outputs with expanded (stride-0) dims write index 0 only along those dims.

Every case runs (Triton's interpreter on the CPU), is compared with torch, checks the
schedule's ``generic`` flag, and compiles for sm_90 through ``compile_last_run``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from layoutfuse.analysis.accesses import Access, load_strides
from layoutfuse.analysis.index_walk import local_strides
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.ir import Fusion, FusionGuard, IterDomain, TensorView, ops
from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import schedules

NV = {
    torch.float32: DataType.Float,
    torch.float16: DataType.Half,
    torch.bfloat16: DataType.BFloat16,
    torch.float64: DataType.Double,
}


# each module's kernels are cached in a fresh directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


def col_major(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*reversed(shape)).to(dtype).permute(*reversed(range(len(shape))))


def define(fd: FusionDefinition, x: torch.Tensor, static: bool = False):
    """An input with ``x``'s layout (symbolic extents unless ``static``)."""
    return fd.define_tensor(
        sizes=list(x.shape), strides=list(x.stride()), dtype=NV[x.dtype], static_sizes=static
    )


def scalar(fd, v):
    return fd.define_scalar(v)


@dataclass(frozen=True)
class Case:
    """Inputs, the fusion body (inputs' handles -> outputs), the torch reference."""

    inputs: Callable[[torch.dtype], list[torch.Tensor]]
    body: Callable
    reference: Callable
    generic: bool = True  # some kernel of the run is in generic mode


def run_case(case: Case, dtype=torch.float32, static=False):
    """Run, compare with torch (in float64), compile every kernel for sm_90. Returns
    (outputs, schedules, code)."""
    xs = case.inputs(dtype)
    with FusionDefinition() as fd:
        handles = [define(fd, x, static) for x in xs]
        for out in case.body(fd, *handles):
            fd.add_output(out)
    outs = fd.execute(xs)
    refs = case.reference(*[x.double() for x in xs])
    tol = 1e-5 if dtype in (torch.float32, torch.float64) else 2e-2
    for got, ref in zip(outs, refs, strict=True):
        assert got.shape == ref.shape
        torch.testing.assert_close(got.double(), ref, rtol=tol, atol=tol)
    found = schedules(fd)
    assert any(getattr(p, "generic", False) for p in found) == case.generic, found
    for art in compile_last_run(fd.executor()):
        assert ".entry" in art.ptx, f"{art.name}: no kernel entry in its PTX"
        assert art.vector_widths, f"{art.name}: no global memory access in its PTX"
    return outs, found, fd.last_triton_code()


# --- pointwise kernels through reshapes that are not views ----------------------------------------
def _bcast_row(fd, t, shape):
    return fd.ops.broadcast_in_dim(t, shape=shape, broadcast_dims=[1])


POINTWISE = {
    "colmajor-merge": Case(
        lambda dt: [col_major(6, 4, dtype=dt)],
        lambda fd, t: [fd.ops.add(fd.ops.reshape(t, [24]), scalar(fd, 1.0))],
        lambda x: [x.reshape(24) + 1],
    ),
    "colmajor-split-merge": Case(
        lambda dt: [col_major(4, 6, dtype=dt)],
        lambda fd, t: [fd.ops.mul(fd.ops.reshape(t, [8, 3]), scalar(fd, 2.0))],
        lambda x: [x.reshape(8, 3) * 2],
    ),
    "permute-reshape": Case(
        lambda dt: [torch.randn(4, 6, 8).to(dt)],
        lambda fd, t: [
            fd.ops.mul(fd.ops.reshape(fd.ops.permute(t, [0, 2, 1]), [4, 48]), scalar(fd, 2.0))
        ],
        lambda x: [x.permute(0, 2, 1).reshape(4, 48) * 2],
    ),
    "channels-last": Case(
        lambda dt: [torch.randn(2, 3, 4, 5).to(dt).to(memory_format=torch.channels_last)],
        lambda fd, t: [fd.ops.neg(fd.ops.reshape(t, [2, 60]))],
        lambda x: [-x.reshape(2, 60)],
    ),
    "sliced-rows": Case(
        lambda dt: [torch.randn(6, 10).to(dt)[:, :8]],
        lambda fd, t: [fd.ops.abs(fd.ops.reshape(t, [48]))],
        lambda x: [x.reshape(48).abs()],
    ),
    "with-affine-broadcast": Case(
        lambda dt: [col_major(6, 4, dtype=dt), torch.randn(6).to(dt)],
        lambda fd, t, b: [fd.ops.add(fd.ops.reshape(t, [4, 6]), _bcast_row(fd, b, [4, 6]))],
        lambda x, b: [x.reshape(4, 6) + b],
    ),
    "intermediate-store": Case(  # y is stored by z's kernel, through the reshape
        lambda dt: [col_major(6, 4, dtype=dt)],
        lambda fd, t: (lambda y: [fd.ops.add(fd.ops.reshape(y, [4, 6]), scalar(fd, 1.0)), y])(
            fd.ops.mul(t, scalar(fd, 2.0))
        ),
        lambda x: [(x * 2).reshape(4, 6) + 1, x * 2],
    ),
    "iota-coordinate": Case(  # a coordinate read through a reshape of a broadcast
        lambda dt: [torch.randn(12).to(dt)],
        lambda fd, x: [
            fd.ops.add(
                fd.ops.reshape(
                    fd.ops.broadcast_in_dim(
                        fd.ops.iota(fd.define_scalar(3), dtype=DataType.Float),
                        shape=[4, 3],
                        broadcast_dims=[1],
                    ),
                    [12],
                ),
                x,
            )
        ],
        lambda x: [torch.arange(3.0).double().expand(4, 3).reshape(12) + x],
    ),
}


@pytest.mark.parametrize("name", POINTWISE)
@pytest.mark.parametrize("static", [False, True], ids=["symbolic", "static"])
def test_pointwise_through_a_reshape_that_is_not_a_view(name, static):
    run_case(POINTWISE[name], static=static)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name", ["permute-reshape", "with-affine-broadcast"])
def test_pointwise_generic_half_precision(name, dtype):
    run_case(POINTWISE[name], dtype=dtype)


def test_generic_mode_keeps_every_coordinate_its_own_group():
    _, (params,), code = run_case(POINTWISE["permute-reshape"])
    assert params.generic and params.affine == (False, True)
    assert sorted(params.group_dims) == [0, 1] and params.n_groups == 2
    assert "ext0" in code  # the input's symbolic extents are arguments


def test_static_extents_are_literals():
    _, (params,), code = run_case(POINTWISE["colmajor-merge"], static=True)
    assert params.generic and "ext0" not in code


# --- reduction kernels whose input is read through such a reshape ---------------------------------
def _permuted(fd, t, shape):
    return fd.ops.reshape(fd.ops.permute(t, [0, 2, 1]), shape)


def _var_mean(fd, t):
    return list(fd.ops.var_mean(_permuted(fd, t, [4, 48]), dims=[1], correction=1))


REDUCTIONS = {
    "sum-inner": Case(
        lambda dt: [torch.randn(4, 6, 8).to(dt)],
        lambda fd, t: [fd.ops.sum(_permuted(fd, t, [4, 48]), dims=[1])],
        lambda x: [x.permute(0, 2, 1).reshape(4, 48).sum(1)],
    ),
    "sum-outer": Case(
        lambda dt: [torch.randn(4, 6, 8).to(dt)],
        lambda fd, t: [fd.ops.sum(_permuted(fd, t, [4, 48]), dims=[0])],
        lambda x: [x.permute(0, 2, 1).reshape(4, 48).sum(0)],
    ),
    "sum-two-reduced-dims": Case(
        lambda dt: [torch.randn(4, 6, 8).to(dt)],
        lambda fd, t: [fd.ops.sum(_permuted(fd, t, [4, 6, 8]), dims=[1, 2])],
        lambda x: [x.permute(0, 2, 1).reshape(4, 6, 8).sum([1, 2])],
    ),
    "max-colmajor": Case(
        lambda dt: [col_major(8, 6, dtype=dt)],
        lambda fd, t: [fd.ops.max(fd.ops.reshape(t, [6, 8]), dims=[1])],
        lambda x: [x.reshape(6, 8).amax(1)],
    ),
    "var-mean": Case(
        lambda dt: [torch.randn(4, 6, 8).to(dt)],
        _var_mean,
        lambda x: list(torch.var_mean(x.permute(0, 2, 1).reshape(4, 48), [1], correction=1)),
    ),
    "prologue-mixed-loads": Case(
        lambda dt: [col_major(8, 6, dtype=dt), torch.randn(6, 8).to(dt)],
        lambda fd, t, y: [fd.ops.sum(fd.ops.mul(fd.ops.reshape(t, [6, 8]), y), dims=[1])],
        lambda x, y: [(x.reshape(6, 8) * y).sum(1)],
    ),
}


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_through_a_reshape_that_is_not_a_view(name):
    run_case(REDUCTIONS[name])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name", ["sum-inner", "sum-outer"])
def test_reduction_generic_half_precision(name, dtype):
    run_case(REDUCTIONS[name], dtype=dtype)


def test_the_reshaped_input_decides_the_template():
    """x row-major [4, 6, 8], permuted (0, 2, 1) and reshaped [4, 48]: the 48 axis walks
    memory with stride 8 and 1, the 4 axis with 48, so summing the 48 axis is inner."""
    _, schedules, _ = run_case(REDUCTIONS["sum-inner"])
    red = [p for p in schedules if p.scheduler == "reduction"]
    assert red[0].generic and red[0].template == "inner"


def test_split_generic_reduction():
    case = Case(
        lambda dt: [torch.randn(2, 64, 128).to(dt)],
        lambda fd, t: [fd.ops.sum(_permuted(fd, t, [2, 8192]), dims=[1])],
        lambda x: [x.permute(0, 2, 1).reshape(2, 8192).sum(1)],
    )
    _, schedules, _ = run_case(case)
    assert schedules[0].generic and schedules[0].split > 1


@pytest.mark.parametrize(
    "name", ["pointwise:permute-reshape", "reduction:sum-two-reduced-dims", "reduction:sum-outer"]
)
def test_generic_kernels_with_64_bit_indices(name, monkeypatch):
    """Forced 64-bit indexing (the real trigger is 2**31 elements): values and sm_90. In
    float64, so that no cached fusion of the other tests replays instead."""
    from layoutfuse.schedulers.problem import Problem

    monkeypatch.setattr(Problem, "needs_int64", property(lambda self: True))
    table, key = name.split(":")
    _, schedules, code = run_case(
        (POINTWISE if table == "pointwise" else REDUCTIONS)[key], dtype=torch.float64
    )
    assert all(p.index64 for p in schedules) and "tl.int64" in code


# --- outputs with expanded (stride-0) dims --------------------------------------------------------
def _expand(fd, t, flags, shape):
    return fd.ops.expand(fd.ops.broadcast(t, flags), shape)


EXPANDED = {  # case, strides of the expanded output
    "outer-dim": (
        Case(
            lambda dt: [torch.randn(3).to(dt)],
            lambda fd, t: [_expand(fd, fd.ops.add(t, scalar(fd, 1.0)), [True, False], [4, 3])],
            lambda x: [(x + 1).expand(4, 3)],
            generic=False,
        ),
        (0, 1),
    ),
    "inner-dim": (
        Case(
            lambda dt: [torch.randn(3).to(dt)],
            lambda fd, t: [_expand(fd, fd.ops.exp(t), [False, True], [3, 4])],
            lambda x: [x.exp()[:, None].expand(3, 4)],
            generic=False,
        ),
        (1, 0),
    ),
    "grid-dim": (
        Case(  # three groups: the expanded one runs along the grid
            lambda dt: [torch.randn(5, 4).to(dt)[:, :3]],
            lambda fd, t: [_expand(fd, fd.ops.neg(t), [True, False, False], [2, 5, 3])],
            lambda x: [(-x).expand(2, 5, 3)],
            generic=False,
        ),
        (0, 3, 1),
    ),
    "reduction-output": (
        Case(
            lambda dt: [torch.randn(3).to(dt)],
            lambda fd, t: [fd.ops.sum(_expand(fd, t, [True, False], [4, 3]), dims=[1])],
            lambda x: [x.expand(4, 3).sum(1)],
            generic=False,
        ),
        (0,),
    ),
    "generic-intermediate": (
        Case(  # y expanded, stored through a reshape of it
            lambda dt: [torch.randn(3).to(dt)],
            lambda fd, t: (lambda y: [y, fd.ops.mul(fd.ops.reshape(y, [3, 4]), scalar(fd, 2.0))])(
                _expand(fd, fd.ops.add(t, scalar(fd, 1.0)), [True, False], [4, 3])
            ),
            lambda x: [(x + 1).expand(4, 3), (x + 1).expand(4, 3).reshape(3, 4) * 2],
        ),
        (0, 1),
    ),
}


@pytest.mark.parametrize("name", EXPANDED)
def test_expanded_output_is_written_once_per_element(name):
    case, strides = EXPANDED[name]
    outs, scheds, code = run_case(case)
    assert outs[0].stride() == strides
    # the store along the expanded dim is masked to index 0 (or guarded by its stride),
    # or, where no access moves along that dim, the kernel does not walk it at all
    # (analysis.canonical drops it): either way each element is written once
    kept = sum(n > 1 for n in outs[0].shape)
    dropped = any(p.n_groups - len(getattr(p, "r_groups", ())) < kept for p in scheds)
    assert ("smask" in code and "== 0)" in code) or dropped, code


def test_broadcast_operand_on_grid_groups_only():
    """An operand whose only non-zero stride is on a group along the grid: its pointer is
    made a tile so the tile's mask applies."""
    case = Case(
        lambda dt: [torch.randn(5, 6, 8).to(dt)[:, :, :7], torch.randn(5).to(dt)],
        lambda fd, y, x: [
            fd.ops.add(y, fd.ops.broadcast_in_dim(x, shape=[5, 6, 7], broadcast_dims=[0]))
        ],
        lambda y, x: [y + x[:, None, None]],
        generic=False,
    )
    run_case(case)


# --- the index walk itself ----------------------------------------------------------------------
def test_local_strides_are_the_strides_of_an_affine_access():
    """x row-major [4, 6, 8], permuted (2, 0, 1) and reshaped [8, 24]: a view, strides (1, 8)."""
    f = Fusion()
    with FusionGuard(f):
        x = TensorView(f, [IterDomain.iteration(None) for _ in range(3)], DataType.Float)
        f.add_input(x)
        t = ops.reshape(ops.permute(x, [2, 0, 1]), [8, 24])
    p = t.definition.inputs[0]
    extents = {}
    for tv, shape in ((x, (4, 6, 8)), (p, (8, 4, 6)), (t, (8, 24))):
        extents.update({d.uid: n for d, n in zip(tv.shape_domain, shape)})
    access = Access(x, (t.definition, p.definition))
    real = (48, 8, 1)
    assert load_strides(access, real, extents) == (1, 8)
    assert local_strides(access, real, extents, 2) == (1, 8)


# --- runtime scalars of index maps in the kernel's index width ---------------------------------
def _odd_cat(dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(3)
    a, b = (torch.randn(5, n, generator=g).to(dtype) for n in (37, 41))
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cat([fd.from_pytorch(a), fd.from_pytorch(b)], 1))
    (out,) = fd.execute([a, b])
    torch.testing.assert_close(out, torch.cat([a, b], 1))
    return fd


def test_index_map_scalars_take_32_bits_where_the_kernel_does():
    """A cat's offsets (Int arguments, 64-bit) enter a 32-bit index walk cast to 32 bits,
    so its arithmetic stays 32-bit (sm_90: 440 -> 392 SASS instructions a thread for a
    bf16 cat of [8192, 2047] and [8192, 2049]), and the kernel compiles for sm_90."""
    fd = _odd_cat()
    (params,) = schedules(fd)
    code = fd.last_triton_code()
    assert params.generic and not params.index64, params
    assert "tl.cast(c1, tl.int32)" in code, code
    (art,) = compile_last_run(fd.executor())
    assert art.local_bytes == 0


def test_pad_ranges_are_one_unsigned_compare_in_the_index_width():
    """A pad's ``0 <= i < n`` is one compare of ``i`` as unsigned (a negative ``i`` wraps
    past every extent): the odd cat's values are right (``_odd_cat`` compares them with
    torch), no two-sided check is left, and the kernel compiles for sm_90."""
    fd = _odd_cat(torch.float16)
    code = fd.last_triton_code()
    assert "tl.uint32) <" in code and ">= 0) &" not in code, code
    compile_last_run(fd.executor())


def test_index_map_scalars_stay_64_bit_in_a_64_bit_walk(monkeypatch):
    from layoutfuse.schedulers.problem import Problem

    monkeypatch.setattr(Problem, "needs_int64", property(lambda self: True))
    fd = _odd_cat(torch.float64)  # float64: no cached fusion of the other test replays
    (params,) = schedules(fd)
    code = fd.last_triton_code()
    assert params.index64 and "tl.cast(c1, tl.int32)" not in code, code
    assert "tl.uint64) <" in code and "tl.uint32" not in code, code
    compile_last_run(fd.executor())


def test_in_range_folds_literals_and_compares_unsigned_in_the_index_width():
    from layoutfuse.codegen.generic_index import TritonIndex

    ix = TritonIndex()
    assert (ix.in_range("-1", "1"), ix.in_range("0", "1"), ix.in_range("3", "3")) == (
        "False",
        "True",
        "False",
    )
    name = ix.in_range("dim0", "ext0")
    assert ix.lines == [f"{name} = tl.cast(dim0, tl.uint32) < ext0"]
    wide = TritonIndex(index64=True)
    wide.in_range("dim0", "7")
    assert wide.lines == ["gi0 = tl.cast(dim0, tl.uint64) < 7"]
