"""Cuts that the generated programs (``tests/test_generated_programs.py``) found wrong,
each reduced to its smallest fusion and run against torch.

* an output upstream of another output's slice, select, cropping pad or cat was stored
  by that output's kernel along the movement op: only the positions the op reads were
  written (a cat's wrote past the end); it gets a kernel of its own; so too where a
  reduction of it is compared with the moved tensor (a normalization group whose
  fallback's pointwise kernel stored it in the moved tensor's coordinates);
* a library op's operand stored by the kernel that reads the library op's result (as an
  upstream output, beside the root, in a normalization kernel): the segments waited on
  each other;
* per-row epilogue outputs of a normalization kernel that are not per row: an expand of
  the rows' size-1 dims, per-row values broadcast against each other out of alignment
  ([N] with [N, 1]), a squeeze of an expanded kept dim;
* a scan kernel with a random op in its prologue (no coordinate for it), and with an
  indexed read in its epilogue (refused, with no finer plan);
* kernels that read what is computed from what they compute: a scan's epilogue reading
  a reduction of the scan's result, a normalization kernel reading a scan of its own
  reduction's result, a normalization kernel storing beside its root an output that reads
  a reduction computed from the kernel's own (a softmax sum padded into the rows).
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.execution import INTERPRETER_WARNINGS

pytestmark = [pytest.mark.usefixtures("kernel_cache_in_tmp"), *INTERPRETER_WARNINGS]

MOVED = {
    "slice": (
        lambda fd, e: fd.ops.slice(e, start_indices=[1], end_indices=[6], strides=[2]),
        lambda e: e[1::2],
    ),
    "select": (lambda fd, e: fd.ops.select(e, 2, dim=0), lambda e: e[2]),
    "crop": (lambda fd, e: fd.ops.pad(e, [-1, 2]), lambda e: F.pad(e, [-1, 2])),
    "pad": (lambda fd, e: fd.ops.pad(e, [1, 2]), lambda e: F.pad(e, [1, 2])),
    "cat": (lambda fd, e: fd.ops.cat([e, fd.ops.neg(e)], dim=0), lambda e: torch.cat([e, -e])),
}


@pytest.mark.parametrize("op", MOVED)
def test_an_output_upstream_of_a_movement_op_is_stored_whole(op):
    build, ref = MOVED[op]
    x = torch.arange(1.0, 7.0)
    with FusionDefinition() as fd:
        e = fd.ops.neg(fd.from_pytorch(x))
        fd.add_output(build(fd, e))
        fd.add_output(e)
    moved, e = fd.execute([x])
    assert torch.equal(e, -x)
    assert torch.equal(moved, ref(-x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("op", MOVED)
def test_an_output_reduced_and_moved_is_stored_whole(op, dtype):
    """Generated program 606640: ``e`` stored, and compared after a movement op with its
    own reduction (a normalization group of mismatched extents, run by its fallback)."""
    build, ref = MOVED[op]
    x = torch.arange(12, dtype=dtype)[::2] - 2  # sliced: stride 2
    with FusionDefinition() as fd:
        e = fd.ops.abs(fd.from_pytorch(x))
        red = fd.ops.sum(e, [0])
        fd.add_output(fd.ops.ge(red, build(fd, e)))
        fd.add_output(e)
    out, e = fd.execute([x])
    assert torch.equal(e, x.abs())
    assert torch.equal(out, x.abs().sum() >= ref(x.abs()))


@pytest.mark.parametrize("where", ["beside", "upstream", "normalization"])
def test_a_library_operand_is_not_stored_by_a_kernel_that_reads_its_result(where):
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(3, 4, generator=g), torch.randn(4, 4, generator=g)
    with FusionDefinition() as fd:
        t, tw = fd.from_pytorch(x), fd.from_pytorch(w)
        a = fd.ops.mul(t, fd.define_scalar(-3.0))
        y = fd.ops.add(fd.ops.matmul(a, tw), t if where == "beside" else a)
        if where == "normalization":
            y = fd.ops.sub(y, fd.ops.max(y, dims=[1], keepdim=True))
        fd.add_output(y)
    (out,) = fd.execute([x, w])
    want = (x * -3) @ w + (x if where == "beside" else x * -3)
    if where == "normalization":
        want = want - want.amax(1, keepdim=True)
    torch.testing.assert_close(out, want)


def test_an_expand_of_a_per_row_value_is_not_stored_per_row():
    x = torch.arange(18.0).reshape(1, 1, 6, 3) % 7 - 3
    with FusionDefinition() as fd:
        m = fd.ops.sum(fd.from_pytorch(x), dims=[0, 1, 3], keepdim=True)
        fd.add_output(fd.ops.expand(m, shape=[5, -1, -1, 3]))
    (out,) = fd.execute([x])
    assert torch.equal(out, x.sum([0, 1, 3], keepdim=True).expand(5, 1, 6, 3))


def test_per_row_values_broadcast_out_of_alignment_are_not_stored_per_row():
    x = torch.arange(7 * 4 * 2.0).reshape(7, 1, 4, 2) % 5
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.from_pytorch(x), dims=[2, 3], correction=1)
        fd.add_output(fd.ops.div(fd.ops.squeeze(var, dims=[1]), mean))  # [7] / [7, 1]
    (out,) = fd.execute([x])
    var, mean = torch.var_mean(x, [2, 3])
    torch.testing.assert_close(out, var.squeeze(1) / mean)


def test_a_squeeze_of_an_expanded_kept_dim_is_not_stored_per_row():
    x = torch.arange(3.0).expand(5, 3)
    with FusionDefinition() as fd:
        s = fd.ops.sum(fd.from_pytorch(x), dims=[1])
        fd.add_output(fd.ops.squeeze(s, dims=[0], squeeze_expanded=True))
    (out,) = fd.execute([x])
    assert out.shape == () and out.item() == 3.0


def test_a_random_op_in_a_scan_prologue():
    x = torch.zeros(3, 4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        r = fd.ops.rand_like(t, rng_seed=fd.define_scalar(7), rng_offset=fd.define_scalar(1))
        fd.add_output(fd.ops.cumsum(r, dim=1))
        fd.add_output(r)
    scanned, r = fd.execute([x])
    torch.testing.assert_close(scanned, torch.cumsum(r, 1))
    assert bool(((r >= 0) & (r < 1)).all()) and len(set(r.flatten().tolist())) == r.numel()


def test_an_indexed_read_in_a_scan_epilogue_runs_the_finer_plan():
    x = torch.arange(12.0).reshape(3, 4)
    i = torch.tensor([[1], [0], [3]])
    with FusionDefinition() as fd:
        t, ti = fd.from_pytorch(x), fd.from_pytorch(i)
        scanned = fd.ops.cumsum(t, dim=1)
        fd.add_output(fd.ops.add(scanned, fd.ops.take_along_axis(t, ti, dim=1)))
    (out,) = fd.execute([x, i])
    assert torch.equal(out, x.cumsum(1) + torch.take_along_dim(x, i, 1))
    assert [s["scheduler"] for s in fd.segment([x, i])] == ["scan", "pointwise"]


def test_a_scan_epilogue_does_not_read_a_reduction_of_the_scan():
    x = torch.arange(16.0).reshape(4, 4) % 5
    with FusionDefinition() as fd:
        c = fd.ops.cumsum(fd.from_pytorch(x), dim=0)
        low = fd.ops.min(c, dims=[1])  # computed after the scan, from its result
        fd.add_output(fd.ops.add(low, c))  # [4] against [4, 4]: along the columns
        fd.add_output(low)
    out, low = fd.execute([x])
    c = x.cumsum(0)
    assert torch.equal(low, c.amin(1)) and torch.equal(out, c.amin(1) + c)


def test_a_normalization_kernel_does_not_read_a_scan_of_its_own_reduction():
    x = torch.arange(24, dtype=torch.int32).reshape(6, 4) % 3 + 1
    with FusionDefinition() as fd:
        p = fd.ops.prod(fd.from_pytorch(x), dims=[1], keepdim=True)
        order = fd.ops.argsort(p, dim=1)  # a scan of the reduction's result
        fd.add_output(fd.ops.add(order, p))
    (out,) = fd.execute([x])
    p = x.prod(1, keepdim=True)
    assert torch.equal(out, torch.argsort(p, dim=1, stable=True) + p)


@pytest.mark.parametrize("rows", [2, 7])
def test_a_kernel_does_not_store_what_reads_a_reduction_of_its_own_results(rows):
    """The max's kernel (rooted at ``exp(x - max)``) must not also store ``y``: ``y`` reads
    the log-sum-exp padded into the rows (a cat), whose sum is computed from the max
    (program 398846: the two kernels waited on each other)."""
    x = torch.linspace(1.75, 4.0, rows).half()
    tail = torch.full((rows - 1,), 4.0).half()
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(tail)
        m = fd.ops.max(t0, dims=[0], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(t0, m))
        lse = fd.ops.log(fd.ops.sum(e, dims=[0], keepdim=True))
        fd.add_output(fd.ops.mul(fd.ops.cat([lse, t1], dim=0), t0))
        fd.add_output(e)
    y, e = fd.execute([x, tail])
    ref_e = torch.exp(x.float() - x.float().max()).half()
    lse = torch.log(ref_e.float().sum(0, keepdim=True)).half()
    torch.testing.assert_close(e, ref_e)
    torch.testing.assert_close(y, torch.cat([lse, tail]) * x, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("order", [(0, 1, 2), (0, 2, 1)], ids=["row", "mem021"])
def test_the_finer_plan_stores_an_output_its_root_reaches_through_an_expand(order):
    """A max over every dim of a gather's output, combined with it and expanded to 3
    rows; the gather's output returned too. The normalization kernel's finer plan (a
    reduction kernel, then a pointwise kernel rooted at the expand that also stores the
    gather's output in its coordinates) loaded the gather's arg only along the expand's
    path, not where the gather's output is stored (program 67447: "T0 is neither loaded
    nor computed in this kernel")."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randn([(2, 2, 6)[d] for d in order], generator=gen)
    x = x.permute([order.index(d) for d in range(3)])
    index = torch.randint(0, 6, (1, 2, 1), generator=gen, dtype=torch.int32).expand(1, 2, 4)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(index)
        g = fd.ops.gather(t0, t1, dim=2)
        top = fd.ops.tanh(fd.ops.max(g, dims=[0, 1, 2], keepdim=False))
        both = fd.ops.minimum(top, fd.ops.minimum(g, g))
        fd.add_output(fd.ops.expand(both, shape=[3, -1, -1]))
        fd.add_output(g)
    for _ in range(2):
        wide, out_g = fd.execute([x, index])
        ref_g = torch.gather(x, 2, index)
        torch.testing.assert_close(out_g, ref_g)
        torch.testing.assert_close(
            wide, torch.minimum(torch.tanh(ref_g.max()), ref_g).expand(3, -1, -1)
        )
    kinds = [r.scheduler for r in fd.executor().last_run.segments]
    assert "pointwise" in kinds, kinds


def _count_at_max(fd, t, dim: int, epilogue: bool):
    """How many elements of each row equal its max (``ge(x, max)`` summed): a reduction of
    a value that reads the other's result on the rows, with only per-row results stored;
    ``epilogue``: the count's log, a per-row output of the results."""
    m = fd.ops.max(t, dims=[dim])
    shape = [t.size(k) for k in range(3)]
    keep = [k for k in range(3) if k != dim]
    count = fd.ops.sum(fd.ops.ge(t, fd.ops.broadcast_in_dim(m, shape, keep)), dims=[dim])
    return fd.ops.log(fd.ops.cast(count, DataType.Float)) if epilogue else count


@pytest.mark.parametrize("epilogue", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("pinned", [None, [0, 1], [1, 0]], ids=str)
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_a_reduction_of_the_rows_compared_with_their_max_reads_it_after_it_is_stored(
    order, pinned, dtype, epilogue
):
    """Generated program 699880: the max and the count of the elements at it (whose input
    reads the max on the rows), only per-row results stored, in a transposed layout whose
    group the normalization kernel declines. The finer plan ran both in one reduction
    kernel as siblings: the count read the max from memory before it was stored. Every
    memory order of [6, 5, 7], each dim reduced, outputs inferred or pinned either way."""
    g = torch.Generator().manual_seed(699880)
    base = torch.randint(-3, 4, [(6, 5, 7)[d] for d in order], generator=g).to(dtype)
    x = base.permute(*[order.index(d) for d in range(3)])
    for dim in range(3):
        with FusionDefinition() as fd:
            t = fd.from_pytorch(x)
            fd.add_output(_count_at_max(fd, t, dim, epilogue), stride_order=pinned)
        (got,) = fd.execute([x])
        want = (x >= x.amax(dim, keepdim=True)).sum(dim)
        want = want.float().log() if epilogue else want
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=lambda m, d=dim: f"dim {d}: {m}")


def test_the_count_at_the_max_of_an_expanded_input():
    """Program 699880 as drawn: a permuted fp16 input with an expanded dim."""
    x = torch.randn(60, generator=torch.Generator().manual_seed(0)).half()
    x = x.as_strided((5, 2, 6, 2), (6, 0, 1, 30))
    with FusionDefinition() as fd:
        t = fd.ops.permute(fd.from_pytorch(x), dims=[3, 2, 1, 0])
        m = fd.ops.max(t, dims=[0])
        count = fd.ops.sum(fd.ops.ge(t, m), dims=[0])
        fd.add_output(count, stride_order=[2, 0, 1])
    (got,) = fd.execute([x])
    x1 = x.permute(3, 2, 1, 0)
    assert torch.equal(got, (x1 >= x1.amax(0)).sum(0))


@pytest.mark.parametrize("with_lse", [True, False], ids=["lse_out", "lse_inside"])
@pytest.mark.parametrize("pinned", [None, [0, 1], [1, 0]], ids=str)
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_a_log_sum_exp_and_a_reduction_of_its_result(order, pinned, with_lse):
    """A log-sum-exp (softmax's max and sum, one online pass) and the row sum of ``x - lse``
    (the next pass, reading the first's result on the rows), only per-row results stored:
    in the finer plan the pair runs as one online kernel and the sum after it (where lse
    is no output, the three are one group; a transposed layout declines its kernel)."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn([(6, 5, 7)[d] for d in order], generator=g).permute(
        *[order.index(d) for d in range(3)]
    )
    for dim in range(3):
        keep = [k for k in range(3) if k != dim]
        with FusionDefinition() as fd:
            t = fd.from_pytorch(x)

            def bc(v, keep=keep):
                return fd.ops.broadcast_in_dim(v, [x.shape[k] for k in range(3)], keep)

            m = fd.ops.max(t, dims=[dim])
            s = fd.ops.sum(fd.ops.exp(fd.ops.sub(t, bc(m))), dims=[dim])
            lse = fd.ops.add(fd.ops.log(s), m)
            if with_lse:
                fd.add_output(lse, stride_order=pinned)
            fd.add_output(fd.ops.sum(fd.ops.sub(t, bc(lse)), dims=[dim]), stride_order=pinned)
        *got_lse, got_sum = fd.execute([x])
        want = torch.logsumexp(x, dim)
        if with_lse:
            torch.testing.assert_close(got_lse[0], want)
        torch.testing.assert_close(got_sum, (x - want.unsqueeze(dim)).sum(dim))
