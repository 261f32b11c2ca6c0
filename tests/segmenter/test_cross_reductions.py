"""Cross reductions (issue 15 item 4): a normalization kernel also reduces over its kept
dims (a layer norm backward's dw and db beside its row sums): each program adds its rows
into partial column results, a finishing kernel combines them in program order and
stores them with their epilogue (a cast to bf16). One read of dy and x for all of dx,
dw and db: two kernels where there were three or four.

Checked: the plan (one normalization segment, two kernels, the reason), numbers and
output strides against torch for layer norm and RMS norm backwards in fp32, bf16 and
fp16, inputs in every memory order of a 3-D tensor, sliced and expanded; a max over the
kept dims; a cross result another kernel reads (stored, then loaded); rows too long for
one tile (the group's kernel without them, then one reduction kernel for all of them);
one-element rows; an empty kept extent; integer sums, mins and products; two reduced dims
with a cross result pinned column-major; a NaN through a cross max; the dominant load is
the one that moves the most elements (a broadcast mean first does not decide the order);
one load per tensor through copies; the measured choice's alternatives; sm_90 compiles
both kernels, plain and with a pipelined row loop; the prefetching row loop (the weight
loaded once, each block's loads one iteration ahead, masked past the last block, inner
and outer templates); the rule's programs fit the register file with no spills.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.analysis.canonical import dim_order
from layoutfuse.analysis.device import DeviceInfo
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import INTERPRETER_WARNINGS, configured

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]

NVF = {
    torch.float32: DataType.Float,
    torch.bfloat16: DataType.BFloat16,
    torch.float16: DataType.Half,
}
TOL = {torch.float32: 2e-5, torch.bfloat16: 3e-2, torch.float16: 5e-3}


def _layer_norm_backward(inputs, dt, rms=False):
    """dx, dw, db of a layer norm over the last dim of [B, S, H] (RMS norm: dx, dw), as
    Thunder writes them: mean [B, S] and rstd [B, S, 1] saved in fp32, every output cast
    back to ``dt``; each input defined from its tensor (its layout)."""
    fd = FusionDefinition()
    with fd:
        mean, w, dy, x, rstd = (fd.from_pytorch(t) for t in inputs)
        B, S, H = fd.ops.size(x, 0), fd.ops.size(x, 1), fd.ops.size(x, 2)
        shape = [B, S, H]
        dyf, xf, wf = (fd.ops.cast(t, DataType.Float) for t in (dy, x, w))
        rb = fd.ops.broadcast_in_dim(rstd, shape=shape, broadcast_dims=[0, 1, 2])
        if rms:
            xhat = fd.ops.mul(xf, rb)
        else:
            mb = fd.ops.broadcast_in_dim(mean, shape=[B, S, 1], broadcast_dims=[0, 1])
            mb = fd.ops.broadcast_in_dim(mb, shape=shape, broadcast_dims=[0, 1, 2])
            xhat = fd.ops.mul(fd.ops.sub(xf, mb), rb)
        g = fd.ops.mul(dyf, fd.ops.broadcast_in_dim(wf, shape=shape, broadcast_dims=[2]))
        b = fd.ops.sum(fd.ops.mul(g, xhat), dims=[2], keepdim=True)
        hf = fd.ops.cast(H, DataType.Float)
        t = fd.ops.mul(g, hf)
        if not rms:
            a = fd.ops.sum(g, dims=[2], keepdim=True)
            t = fd.ops.sub(t, fd.ops.broadcast_in_dim(a, shape=shape, broadcast_dims=[0, 1, 2]))
        bb = fd.ops.broadcast_in_dim(b, shape=shape, broadcast_dims=[0, 1, 2])
        dx = fd.ops.mul(fd.ops.div(rb, hf), fd.ops.sub(t, fd.ops.mul(xhat, bb)))
        fd.add_output(fd.ops.cast(dx, NVF[dt]))
        fd.add_output(fd.ops.cast(fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[0, 1]), NVF[dt]))
        if not rms:
            fd.add_output(fd.ops.cast(fd.ops.sum(dyf, dims=[0, 1]), NVF[dt]))
    return fd


def _inputs(dt, shape, order=(0, 1, 2), layout="dense", gen=None, rms=False):
    gen = gen or torch.Generator().manual_seed(0)
    B, S, H = shape

    def tensor():
        if layout == "sliced":  # every other element of the innermost physical dim
            phys = [shape[d] for d in order]
            phys[-1] *= 2
            t = torch.randn(phys, generator=gen)[..., ::2]
        else:
            t = torch.randn([shape[d] for d in order], generator=gen)
        return t.permute(*[order.index(d) for d in range(3)]).to(dt)

    x, dy = tensor(), tensor()
    if layout == "expanded":  # dy repeated along S
        dy = torch.randn(B, 1, H, generator=gen).to(dt).expand(B, S, H)
    w = torch.randn(H, generator=gen).to(dt)
    xf = x.float()
    mean = xf.mean(-1)
    var = (xf * xf).mean(-1) if rms else xf.var(-1, unbiased=False)
    rstd = (var + 1e-5).rsqrt().unsqueeze(-1)
    return [mean, w, dy, x, rstd]


def _reference(inputs, rms=False):
    mean, w, dy, x, rstd = (t.double() for t in inputs)
    H = x.shape[-1]
    xhat = x * rstd if rms else (x - mean[..., None]) * rstd
    g = dy * w
    t = g * H - (0 if rms else g.sum(-1, keepdim=True)) - xhat * (g * xhat).sum(-1, keepdim=True)
    out = [rstd / H * t, (dy * xhat).sum((0, 1))]
    return out if rms else out + [dy.sum((0, 1))]


def _check(fd, inputs, dt, rms=False):
    outs = fd.execute(inputs)
    for o, r in zip(outs, _reference(inputs, rms)):
        assert o.dtype == dt and o.shape == r.shape
        scale = max(1.0, r.abs().max().item())
        torch.testing.assert_close(o.double() / scale, r / scale, rtol=TOL[dt], atol=TOL[dt])
    for o in outs[1:]:
        assert o.stride() == (1,)  # dw, db: dense 1-D
    return outs


def _runs(fd):
    return fd.executor().last_run.segments


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_layer_norm_backward_is_one_segment_of_two_kernels(dt, order):
    inputs = _inputs(dt, (3, 5, 48), order)
    fd = _layer_norm_backward(inputs, dt)
    for _ in range(2):  # planned, then replayed
        _check(fd, inputs, dt)
    (run,) = _runs(fd)
    assert run.scheduler == "normalization" and len(run.kernels) == 2, run.reason
    assert "over the kept dims" in run.reason and run.params.row_programs >= 1
    assert [k.name for k in run.kernels] == ["normalization_kernel", "cross_finish_kernel"]


@pytest.mark.parametrize("layout", ["sliced", "expanded"])
@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=str)
def test_sliced_and_expanded_inputs(dt, layout):
    """An expanded dy (repeated along S) has no leaf that proves its extents the rows':
    dw (dy * xhat reaches x) joins the kernel, db = sum(dy) gets a reduction kernel."""
    inputs = _inputs(dt, (2, 7, 40), layout=layout)
    fd = _layer_norm_backward(inputs, dt)
    _check(fd, inputs, dt)
    runs = _runs(fd)
    assert len(runs) == (1 if layout == "sliced" else 2), [r.reason for r in runs]
    (cross,) = [r for r in runs if "over the kept dims" in r.reason]
    assert cross.scheduler == "normalization" and len(cross.kernels) == 2
    assert sum(len(r.kernels) for r in runs) == len(runs) + 1


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=str)
def test_rms_norm_backward(dt):
    inputs = _inputs(dt, (4, 9, 72), rms=True)
    fd = _layer_norm_backward(inputs, dt, rms=True)
    _check(fd, inputs, dt, rms=True)
    (run,) = _runs(fd)
    assert run.scheduler == "normalization" and len(run.kernels) == 2


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1)], ids=["rows", "columns"])
@pytest.mark.parametrize("prefetch", [0, 1], ids=["plain", "prefetch"])
@pytest.mark.parametrize("cross_tile", [0, 1], ids=["rows-per-block", "tile"])
def test_many_row_blocks_per_program(cross_tile, prefetch, order):
    """Fewer programs than row blocks (one SM's worth): each walks several blocks and
    adds them into its partials, the last program's walk ragged (65 rows); the finish
    combines more partials than one step holds. With the prefetch, each program's last
    iteration loads a block past the last, masked (inner and outer templates)."""
    inputs = _inputs(torch.float32, (5, 13, 24), order)
    fd = _layer_norm_backward(inputs, torch.float32)
    fields = dict(cross_finish_tile=8, cross_warps_per_sm=2, cross_tile=cross_tile)
    fields.update(cross_prefetch=prefetch, cross_tile_bytes=128, row_bytes=8)
    tuning = DEFAULT.with_fields(normalization=fields)
    configured(fd, tuning=tuning, target=DeviceInfo("cpu", 3, 2048, 1 << 20, 65536))
    _check(fd, inputs, torch.float32)
    (run,) = _runs(fd)
    assert run.params.template == ("inner" if order[-1] == 2 else "outer"), run.params
    blocks = -(-65 // run.params.block_x) if order[-1] == 2 else None
    assert blocks is None or run.params.row_programs < blocks, run.params
    assert run.params.cross_tile is bool(cross_tile) and run.params.finish_rows == 1
    assert run.params.prefetch is bool(prefetch)


def test_the_prefetch_loads_the_weight_once_and_each_block_one_iteration_ahead():
    """The row loop's loads: the weight (the same for every row block) once before the
    loop; dy and x of the program's first block before it, then of the next block
    inside it (masked past the last); the saved mean and rstd over the rows alone."""
    inputs = _inputs(torch.float32, (3, 5, 48))
    fd = _layer_norm_backward(inputs, torch.float32)
    _check(fd, inputs, torch.float32)
    (run,) = _runs(fd)
    assert run.params.prefetch
    src = run.kernels[0].source
    before, inside = src.split("for blk in")[0], src.split("for blk in")[1].split("cr = ")[0]
    loads_before = [ln for ln in before.splitlines() if "tl.load(" in ln]
    loads_inside = [ln for ln in inside.splitlines() if "tl.load(" in ln]
    assert len(loads_before) == 5 and len(loads_inside) == 4, src  # mean, w, dy, x, rstd
    assert "xmask = xmask & (pid < NBLK)" in inside
    assert sum("mask=r < NR" in ln for ln in loads_before) == 1  # w: the reduced dim alone
    assert sum("mask=xmask" in ln for ln in loads_inside) == 2  # mean and rstd: rows alone


@pytest.mark.parametrize(
    ("kind", "shape", "dt"),
    [
        ("layer_norm", (8192, 2048), torch.float32),
        ("layer_norm", (32768, 768), torch.bfloat16),
        ("rms_norm", (8192, 4096), torch.float32),
    ],
    ids=str,
)
def test_the_programs_of_a_cross_kernel_fit_the_register_file(kind, shape, dt):
    """The rule's programs per multiprocessor (``cross_warps_per_sm`` over the kernel's
    warps) must all be resident at once, with the prefetched block in registers and no
    spills: a persistent grid larger than the resident programs runs in two waves (as the
    187-register fp32 layer norm backward kernel did at 8 warps, two programs an SM)."""
    n, h = shape
    rms = kind == "rms_norm"
    meta = [t.to("meta") for t in _inputs(dt, (2, 4, h), rms=rms)]
    b, s = 2, n // 2
    big = [
        torch.empty(b, s, device="meta"),
        meta[1],
        torch.empty(b, s, h, dtype=dt, device="meta"),
        torch.empty(b, s, h, dtype=dt, device="meta"),
        torch.empty(b, s, 1, device="meta"),
    ]
    fd = _layer_norm_backward(meta, dt, rms=rms)
    record = fd.executor().plan(big)
    params = record.params[0]
    assert params.row_programs and params.prefetch, params
    art = compile_last_run(fd.executor())[0]
    regs = art.resources["REG"]
    per_sm = DEFAULT.normalization.cross_warps_per_sm // params.num_warps
    assert art.local_bytes == 0, art.resources
    assert regs * params.num_warps * 32 * per_sm <= 65536, (regs, params)


def test_cross_max_and_a_result_another_kernel_reads():
    """amax over the kept dims beside a softmax; its result also feeds an output with
    another input, whose pointwise kernel reads it from memory after the finish."""
    x, z = torch.randn(6, 33), torch.randn(33)
    with FusionDefinition() as fd:
        t, tz = fd.from_pytorch(x), fd.from_pytorch(z)
        m = fd.ops.max(t, dims=[1], keepdim=True)
        full = dict(shape=[6, 33], broadcast_dims=[0, 1])
        e = fd.ops.exp(fd.ops.sub(t, fd.ops.broadcast_in_dim(m, **full)))
        s = fd.ops.sum(e, dims=[1], keepdim=True)
        fd.add_output(fd.ops.div(e, fd.ops.broadcast_in_dim(s, **full)))
        col = fd.ops.max(fd.ops.mul(t, t), dims=[0])
        fd.add_output(fd.ops.add(col, tz))
    sm, y = fd.execute([x, z])
    torch.testing.assert_close(sm, torch.softmax(x, 1))
    torch.testing.assert_close(y, (x * x).amax(0) + z)
    runs = _runs(fd)
    assert [r.scheduler for r in runs] == ["normalization", "pointwise"], [r.reason for r in runs]
    assert len(runs[0].kernels) == 2 and "max[0] over the kept dims" in runs[0].reason


def test_a_reduction_of_other_extents_is_not_a_cross_one():
    """A sum over the kept dims of a tensor wider along the rows (Thunder's bias grads
    beside a layer norm backward: [2, 8, 96] next to rows of 32) runs in its own kernel."""
    x, g, b = torch.randn(2, 8, 32), torch.randn(2, 8, 32), torch.randn(2, 8, 96)
    with FusionDefinition() as fd:
        tx, tg, tb = (fd.from_pytorch(t) for t in (x, g, b))
        s = fd.ops.sum(tx, dims=[2], keepdim=True)
        fd.add_output(
            fd.ops.sub(tg, fd.ops.broadcast_in_dim(s, shape=[2, 8, 32], broadcast_dims=[0, 1, 2]))
        )
        fd.add_output(fd.ops.sum(tg, dims=[0, 1]))
        fd.add_output(fd.ops.sum(tb, dims=[0, 1]))
    out, dg, db = fd.execute([x, g, b])
    torch.testing.assert_close(out, g - x.sum(2, keepdim=True))
    torch.testing.assert_close(dg, g.sum((0, 1)))
    torch.testing.assert_close(db, b.sum((0, 1)))
    runs = _runs(fd)
    assert sorted(r.scheduler for r in runs) == ["normalization", "reduction"]
    (norm,) = [r for r in runs if r.scheduler == "normalization"]
    assert "sum[0, 1] over the kept dims" in norm.reason


def test_rows_too_long_for_a_tile_run_the_cross_reductions_apart():
    inputs = _inputs(torch.float32, (2, 3, 100))
    fd = configured(  # rows of 100 past a 32-element tile, and 6 rows fill 2 SMs: looped
        _layer_norm_backward(inputs, torch.float32),
        tuning=DEFAULT.with_fields(normalization=dict(max_tile=32)),
        target=DeviceInfo("cpu", 2, 2048, 1 << 20, 65536),
    )
    _check(fd, inputs, torch.float32)
    runs = _runs(fd)
    assert "cross reductions need whole rows" in runs[0].reason, runs[0].reason
    assert runs[-1].scheduler == "reduction" and "epilogue" in runs[-1].reason
    assert all(len(r.kernels) <= 2 for r in runs)


def test_one_element_rows_and_an_empty_kept_extent():
    inputs = _inputs(torch.float32, (3, 2, 1))
    _check(_layer_norm_backward(inputs, torch.float32), inputs, torch.float32)
    empty = _inputs(torch.float32, (0, 2, 8))
    outs = _layer_norm_backward(empty, torch.float32).execute(empty)
    assert outs[0].shape == (0, 2, 8)
    assert torch.equal(outs[1], torch.zeros(8)) and torch.equal(outs[2], torch.zeros(8))


@pytest.mark.parametrize("stages", [1, 2])
@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=str)
def test_both_kernels_compile_for_sm90(dt, stages):
    """The row loop plain (16-byte vector loads) or pipelined (``cross_stages``: Triton's
    asynchronous copies, no plain global loads left in the loop's kernel)."""
    inputs = _inputs(dt, (2, 4, 256))
    fd = configured(
        _layer_norm_backward(inputs, dt),
        tuning=DEFAULT.with_fields(normalization=dict(cross_stages=stages)),
    )
    _check(fd, inputs, dt)
    arts = compile_last_run(fd.executor())
    assert len(arts) == 2 and all(".target sm_90" in a.ptx for a in arts)
    if stages == 1:  # the row tile's dy and x are read 16 bytes per thread
        assert "ld.global.v4" in arts[0].ptx or "ld.global.nc.v4" in arts[0].ptx
    else:
        assert "cp.async" in arts[0].ptx and "ld.global" not in arts[0].ptx


def test_the_load_that_moves_most_elements_decides_the_order():
    """A mean broadcast along the rows' dim (stride 0 there) listed first does not make the
    kept dims innermost: dy of [8, 16, 64] row-major is the dominant load."""
    extents = (8, 16, 64)
    mean = (16, 1, 0)  # [8, 16] broadcast along dim 2
    dy = (1024, 64, 1)
    assert dim_order(extents, [mean, dy], 2) == [2, 1, 0]
    assert dim_order(extents, [mean], 1) == [1, 0, 2]


def test_cross_reductions_off_run_them_apart():
    """``NormalizationTuning.cross=0``: the group's kernel without them, then one reduction
    kernel for dw and db (the plan before cross reductions)."""
    inputs = _inputs(torch.float32, (2, 3, 40))
    fd = configured(
        _layer_norm_backward(inputs, torch.float32),
        tuning=DEFAULT.with_fields(normalization=dict(cross=0)),
    )
    _check(fd, inputs, torch.float32)
    runs = _runs(fd)
    assert "cross reductions are off" in runs[0].reason
    assert [r.scheduler for r in runs] == ["normalization", "reduction"]


def test_the_measured_choice_times_other_warps_for_cross_kernels():
    """The alternatives of ``NormalizationTuning`` run the cross kernels at 24 warps per SM,
    and at half the tile and a thread's bytes with 32 warps per SM: a fp32 [32768, 768]
    layer norm backward's candidates are three persistent cross plans (2 rows of 32 bytes
    a thread at 16 warps per SM; the same at 24; 1 row of 16 bytes at 32)."""
    from layoutfuse.analysis.device import H200
    from layoutfuse.schedulers import measure
    from layoutfuse.schedulers import normalization as nm

    meta = dict(device="meta")
    dy, x = (torch.empty(4, 8192, 768, **meta) for _ in range(2))
    inputs = [torch.empty(4, 8192, **meta), torch.empty(768, **meta), dy, x]
    inputs.append(torch.empty(4, 8192, 1, **meta))
    fd = configured(_layer_norm_backward(inputs, torch.float32), target=H200)
    (run,) = fd.executor().plan(inputs).segments
    t = nm.DEFAULT_TUNING
    cands = measure.candidates(nm.heuristics, run.problem, H200, t, t.alternatives, 3)
    assert cands[0] == run.params and len(cands) == 3
    assert all(c.mode == "persistent" and c.row_programs > 0 and c.prefetch for c in cands)
    per_thread = [c.block_x * c.block_r * 4 // (32 * c.num_warps) for c in cands]
    assert per_thread == [32, 32, 16], [(c.block_x, c.num_warps) for c in cands]
    assert [c.block_x for c in cands] == [2, 2, 1]
    per_sm = [c.row_programs * c.num_warps // H200.sm_count for c in cands]
    assert per_sm == [16, 24, 32], cands


@pytest.mark.parametrize("k", [0, 1])
def test_the_measured_alternatives_compile_for_sm90(k):
    """Each alternative of the measured choice, applied to a cross kernel of rows of 768
    (the tiles of the full size: [64, 768] holds the widest), runs and compiles for sm_90."""
    from layoutfuse.schedulers import normalization as nm

    inputs = _inputs(torch.float32, (4, 16, 768))
    overrides = dict(nm.DEFAULT_TUNING.alternatives[k])
    fd = configured(
        _layer_norm_backward(inputs, torch.float32),
        tuning=DEFAULT.with_fields(normalization=overrides),
    )
    _check(fd, inputs, torch.float32)
    (run,) = _runs(fd)
    assert run.params.row_programs > 0
    arts = compile_last_run(fd.executor())
    assert len(arts) == 2 and all(".target sm_90" in a.ptx for a in arts)


def test_one_load_per_tensor_through_copies():
    """fp32 -> fp32 casts are copies (``set``): the fp32 backward's kernel reaches dy, x,
    w, mean and rstd along paths with and without the root's copy; each is one load."""
    inputs = _inputs(torch.float32, (2, 3, 40))
    fd = _layer_norm_backward(inputs, torch.float32)
    _check(fd, inputs, torch.float32)
    (run,) = _runs(fd)
    spec = run.segment
    loads = spec.accesses[: spec.n_loads]
    assert len(loads) == 5 and len({id(a.tv) for a in loads}) == 5
    assert not any(e.op.name == "set" for a in spec.accesses for e in a.chain)


def test_integer_cross_reductions_sum_min_prod():
    """Integer rows (x - max over the row) beside a sum, a min and a product over the
    rows: exact, in torch's result dtypes (int64 for the sum and the product)."""
    x = torch.randint(-3, 4, (9, 13), dtype=torch.int32, generator=torch.Generator().manual_seed(3))
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        m = fd.ops.max(t, dims=[1], keepdim=True)
        fd.add_output(
            fd.ops.sub(t, fd.ops.broadcast_in_dim(m, shape=[9, 13], broadcast_dims=[0, 1]))
        )
        fd.add_output(fd.ops.sum(t, dims=[0]))
        fd.add_output(fd.ops.min(t, dims=[0]))
        fd.add_output(fd.ops.prod(fd.ops.abs(t), dims=[0]))
    a, s, mn, p = fd.execute([x])
    assert torch.equal(a, x - x.amax(1, keepdim=True))
    assert torch.equal(s, x.sum(0)) and torch.equal(mn, x.amin(0))
    assert torch.equal(p, x.abs().prod(0))
    (run,) = _runs(fd)
    assert "sum[0], min[0], prod[0] over the kept dims" in run.reason


def test_two_reduced_dims_and_a_cross_result_pinned_column_major():
    """Rows over dims (2, 3) of [3, 5, 6, 7]; the column sum over (0, 1) is a [6, 7]
    pinned column-major: the finish stores through its strides over both reduced groups."""
    x = torch.randn(3, 5, 6, 7, generator=torch.Generator().manual_seed(4))
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s = fd.ops.sum(t, dims=[2, 3], keepdim=True)
        full = dict(shape=[3, 5, 6, 7], broadcast_dims=[0, 1, 2, 3])
        fd.add_output(fd.ops.sub(t, fd.ops.broadcast_in_dim(s, **full)))
        fd.add_output(fd.ops.stride_order(fd.ops.sum(fd.ops.mul(t, t), dims=[0, 1]), [0, 1]))
    y, c = fd.execute([x])
    torch.testing.assert_close(y, x - x.sum((2, 3), keepdim=True))
    torch.testing.assert_close(c, (x * x).sum((0, 1)))
    assert c.stride() == (1, 6)
    (run,) = _runs(fd)
    assert len(run.kernels) == 2


def test_a_nan_propagates_through_a_cross_max():
    x = torch.randn(6, 10, generator=torch.Generator().manual_seed(5))
    x[2, 3] = float("nan")
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        s = fd.ops.sum(t, dims=[1], keepdim=True)
        fd.add_output(
            fd.ops.mul(t, fd.ops.broadcast_in_dim(s, shape=[6, 10], broadcast_dims=[0, 1]))
        )
        fd.add_output(fd.ops.max(t, dims=[0]))
    y, mx = fd.execute([x])
    torch.testing.assert_close(y, x * x.sum(1, keepdim=True), equal_nan=True)
    torch.testing.assert_close(mx, x.amax(0), equal_nan=True)
    assert torch.isnan(mx[3]) and len(_runs(fd)[0].kernels) == 2


@pytest.mark.parametrize("pdl", [1, 0])
def test_the_finish_is_a_programmatic_dependent_launch_on_hopper(pdl):
    """Planned for an sm_90 device with ``cross_pdl`` (off by default: it was not faster),
    the finish launches as a programmatic dependent of the row kernel: the row kernel
    lets it start at once
    (``griddepcontrol.launch_dependents``), the finish waits for its partials
    (``griddepcontrol.wait``), and only the finish's launch asks for it (``launch_pdl``).
    The same plan runs in the interpreter (the grid controls are no-ops there) and gives
    torch's values; with ``cross_pdl=0`` neither kernel has them."""
    from layoutfuse.analysis.device import H200
    from layoutfuse.codegen.hopper_check import compile_launch

    inputs = _inputs(torch.bfloat16, (2, 4, 256))
    fd = configured(
        _layer_norm_backward(inputs, torch.bfloat16),
        target=H200,
        tuning=DEFAULT.with_fields(normalization=dict(cross_pdl=pdl)),
    )
    _check(fd, inputs, torch.bfloat16)
    record = fd.executor().last_run
    (run,) = record.segments
    assert run.params.row_programs > 0 and run.params.finish_pdl == bool(pdl)
    assert [bool(r.meta.get("launch_pdl")) for r in record.launches] == [False, bool(pdl)]
    main, finish = (compile_launch(r.loaded, list(r.args), r.meta) for r in record.launches)
    assert ("griddepcontrol.launch_dependents" in main.ptx) == bool(pdl)
    assert ("griddepcontrol.wait" in finish.ptx) == bool(pdl)
    assert "griddepcontrol" not in main.ptx.replace("griddepcontrol.launch_dependents", "")


def test_an_interpreted_device_plans_no_dependent_launch():
    """The CPU's own device (the interpreter) gets no ``finish_pdl``, even with
    ``cross_pdl`` on: its plans are the GPU's but for launch options that mean nothing
    there. (With CUDA tensors: a device of sm_90 or later gets it.)"""
    inputs = _inputs(torch.float32, (2, 4, 256))
    fd = configured(
        _layer_norm_backward(inputs, torch.float32),
        tuning=DEFAULT.with_fields(normalization=dict(cross_pdl=1)),
    )
    _check(fd, inputs, torch.float32)
    (run,) = _runs(fd)
    on_gpu = torch.get_default_device().type == "cuda"
    hopper = on_gpu and torch.cuda.get_device_capability()[0] >= 9
    assert run.params.row_programs > 0 and run.params.finish_pdl == hopper
