"""Full tiles unmasked (issue 16): an extent that Triton's launcher does not specialize
as a multiple of 16 (odd, or 8 * odd) left every masked access of a pointwise kernel one
element wide, since ``i < n`` is then not constant over a vector. Such kernels
(``PointwiseParams.full_blocks``) run the body unmasked for the programs whose tile lies
inside the tensor, masked for the edge programs.

Only where some access could then move vectors: stride 1 along X and a multiple of 16
elements along every other dim. Rows of another stride start unaligned, and a second body
only doubles the code (a fp32 transpose of [10526, 509] with tanh: 104 registers a thread
for both bodies, 48 for one).

Checked: the choice (odd and 8 * odd extents get it, multiples of 16 and extents within
one tile do not, nor a transpose's unaligned rows); numbers and strides against torch over dtypes,
1-D, 2-D, transposed, sliced and expanded layouts (edge programs included); the PTX for
sm_90: 16-byte loads and stores for odd extents, 16-byte loads from padded rows of odd
width, one body for unaligned rows.
"""

from __future__ import annotations

import pytest
import torch

from layoutfuse.codegen.backend import ptx_vector_widths
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured, schedules

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _add(x, y, stride_order=None):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.from_pytorch(x), fd.from_pytorch(y)), stride_order=stride_order)
    outs = [fd.execute([x, y])[0] for _ in range(2)]  # planned, then replayed
    for out in outs:
        torch.testing.assert_close(out, (x.float() + y.float()).to(x.dtype))
    (params,) = schedules(fd)
    return fd, outs[0], params


def _randn(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


@pytest.mark.parametrize("n, full", [(4097, True), (8200, True), (4096, False), (1000, False)])
def test_full_blocks_chosen_by_extent(n, full):
    """A 1-D add: odd 4097 and 8 * odd 8200 (tiles of 4096) get full blocks; 4096 (a
    multiple of 16) and 1000 (one tile, no full one) do not."""
    _, _, params = _add(_randn(n), _randn(n, seed=1))
    assert params.full_blocks is full


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape, layout",
    [
        ((9001,), "dense"),
        ((3, 4099), "dense"),
        ((4099, 3), "column"),  # column-major: X is dim 0
        ((37, 131), "transpose"),  # row-major in, column-major out: odd X and Y, rows unaligned
        ((3, 8210), "sliced"),  # every other column of [3, 16420]: strided X
        ((5, 4101), "expanded"),  # y broadcast along dim 0 (stride 0)
    ],
)
def test_numbers_and_strides(dtype, shape, layout):
    x = _randn(*shape, dtype=dtype)
    y = _randn(*shape, dtype=dtype, seed=1)
    order = None
    if layout == "column":
        x, y = x.t().contiguous().t(), y.t().contiguous().t()
    elif layout == "transpose":
        order = [0, 1]  # nvFuser stride_order: dim 0 innermost
    elif layout == "sliced":
        x = _randn(shape[0], 2 * shape[1], dtype=dtype)[:, ::2]
    elif layout == "expanded":
        y = _randn(1, shape[1], dtype=dtype, seed=1).expand(*shape)
    _, out, params = _add(x, y, order)
    if layout == "transpose":
        assert out.stride() == (1, shape[0])
        assert params.transpose
    elif layout == "column":
        assert out.stride() == (1, shape[0])
    # every one has full blocks: the transpose's rows (131 apart) move no vectors, but the
    # add is a short body (``unaligned_full_blocks_ops``)
    assert params.full_blocks, params


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_odd_extent_compiles_to_16_byte_vectors(dtype):
    fd, _, params = _add(_randn(3 * 4099, dtype=dtype), _randn(3 * 4099, dtype=dtype, seed=1))
    assert params.full_blocks
    (art,) = compile_last_run(fd.executor())
    widths = ptx_vector_widths(art.ptx)
    assert widths.get("ld.global.v4", 0) > 0 and widths.get("st.global.v4", 0) > 0, widths


def test_padded_rows_of_odd_width_load_16_byte_vectors():
    """Rows of 4099 elements 4112 apart (a slice of a padded buffer): each row starts
    16-byte aligned, so the loads vectorize; the dense output's rows (4099 apart) cannot."""
    x, y = (_randn(3, 4112, seed=s)[:, :4099] for s in (0, 1))
    fd, out, params = _add(x, y)
    assert params.full_blocks and not params.transpose
    (art,) = compile_last_run(fd.executor())
    widths = ptx_vector_widths(art.ptx)
    assert widths.get("ld.global.v4", 0) > 0, widths


def _tanh_chain_transposed(tuning=None):
    """``tanh(x / 2) * x + 1`` (4 math ops) of a row-major [300, 509] stored column-major:
    rows 509 apart, so no access moves vectors along X. Returns the fusion and its params."""
    x = _randn(300, 509)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        y = fd.ops.add(
            fd.ops.mul(fd.ops.tanh(fd.ops.mul(t, fd.define_scalar(0.5))), t), fd.define_scalar(1.0)
        )
        fd.add_output(y, stride_order=[0, 1])
    if tuning is not None:
        configured(fd, tuning=tuning)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.tanh(x * 0.5) * x + 1)
    assert out.stride() == (1, 300)
    (params,) = schedules(fd)
    assert params.transpose, params
    return fd, params


def test_unaligned_rows_keep_one_body():
    """The tanh chain's transpose: no vector rows and 4 math ops, so the kernel has one
    (masked) body, and sm_90 keeps it under 64 registers a thread (two bodies took 104 at
    the same tile)."""
    fd, params = _tanh_chain_transposed()
    assert not params.full_blocks, params
    (art,) = compile_last_run(fd.executor())
    assert art.resources["REG"] <= 64, art.resources


def test_a_short_body_keeps_two_bodies():
    """An add (one math op, at most ``unaligned_full_blocks_ops``) transposed with rows 131
    apart: no access moves vectors along X, but the unmasked body saves the masks, so the
    kernel keeps both bodies; at ``unaligned_full_blocks_ops=-1`` it has one."""
    x, y = _randn(37, 131), _randn(37, 131, seed=1)
    for ops, full in ((DEFAULT.pointwise.unaligned_full_blocks_ops, True), (-1, False)):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.add(fd.from_pytorch(x), fd.from_pytorch(y)), stride_order=[0, 1])
        configured(fd, tuning=DEFAULT.with_fields(pointwise=dict(unaligned_full_blocks_ops=ops)))
        (out,) = fd.execute([x, y])
        torch.testing.assert_close(out, x + y)
        assert out.stride() == (1, 37)
        (params,) = schedules(fd)
        assert params.transpose and params.full_blocks is full, (ops, params)


def test_a_long_body_takes_two_bodies_when_allowed():
    """The tanh chain (4 math ops) gets both bodies when the field allows 4."""
    tuning = DEFAULT.with_fields(pointwise=dict(unaligned_full_blocks_ops=4))
    _, params = _tanh_chain_transposed(tuning)
    assert params.full_blocks, params
