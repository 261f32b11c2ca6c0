"""Pointwise fusions over layouts: values and output strides, through generated kernels.

The sweep crosses fusion kinds (copy, add, permute, permute + scalar, broadcast add) with
ranks 2-4, every allocation order of the input, three output modes (pinned row-major,
inferred, pinned reverse), float32 and bfloat16, and input variants: dense, a size-1
dim, an expanded (stride 0) dim, a sliced (strided, offset) dim. By default a fixed,
seeded sample runs; ``--full`` runs the whole product.

What is checked:

* values, against torch (BFloat16 computed in Float and cast back);
* an unpinned output that is a pure view of an input (copy, permute) is a view: the
  same storage, the input's strides carried through;
* an unpinned computed output follows nvFuser's allocation order inference
  (``expected_order``): the dominant input (most non-broadcast dims; tied inputs must
  agree, else row-major) is walked from its innermost dim outward;
* a pinned output is dense in the pinned order (expanded dims stride 0).

Strides are compared on dims of size > 1 only: a size-1 dim's stride is arbitrary.
Separate tests cover reshape chains (views, and reshapes the strides cannot express
as views), channels-last, ties between inputs and expanded inputs.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.nvfuser import FusionDefinition
from support.pointwise_sweep import (
    BF16,
    F32,
    KINDS,
    OUTPUTS,
    SAMPLE,
    SHAPES,
    VARIANTS,
    Case,
    assert_strides,
    check_case,
    same_storage,
    sweep_params,
)

# each module's kernels are cached in a fresh directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


# --- the sweep --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sweep_params())
def test_pointwise_layout(case: Case):
    check_case(case)


def test_sample_covers_every_kind_variant_and_output():
    seen = {(c.kind, c.variant, c.output, c.dtype) for c in SAMPLE}
    assert seen == set(itertools.product(KINDS, VARIANTS, OUTPUTS, (F32, BF16)))
    assert {c.rank for c in SAMPLE} == set(SHAPES)


# --- named cases -------------------------------------------------------------------------------------------
def execute(body, inputs, stride_order=None):
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(x) for x in inputs]
        out = body(fd, *handles)
        fd.add_output(out, stride_order=stride_order)
    (res,) = fd.execute(inputs)
    return fd, res


def test_permute_add_keeps_the_input_physical_layout():
    x = torch.randn(6, 10, 12)
    _, out = execute(
        lambda fd, t: fd.ops.add(fd.ops.permute(t, [2, 0, 1]), fd.define_scalar(1.0)), [x]
    )
    torch.testing.assert_close(out, x.permute(2, 0, 1) + 1)
    assert out.stride() == x.permute(2, 0, 1).stride() == (1, 120, 12)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_channels_last_in_channels_last_out(dtype):
    x = torch.randn(2, 8, 5, 6).to(dtype).contiguous(memory_format=torch.channels_last)
    bias = torch.randn(8).to(dtype)

    def body(fd, t, b):
        return fd.ops.relu(fd.ops.add(t, fd.ops.broadcast_in_dim(b, t.shape(), [1])))

    _, out = execute(body, [x, bias])
    torch.testing.assert_close(out, torch.relu(x.float() + bias.float().view(1, 8, 1, 1)).to(dtype))
    assert out.is_contiguous(memory_format=torch.channels_last) and not out.is_contiguous()


def test_tied_inputs_that_disagree_give_row_major():
    """Two inputs with as many non-broadcast dims and different layouts: nvFuser propagates
    neither."""
    x, y = torch.randn(9, 14), torch.randn(14, 9).t()
    _, out = execute(lambda fd, a, b: fd.ops.add(a, b), [x, y])
    torch.testing.assert_close(out, x + y)
    assert out.stride() == (14, 1)


def test_expanded_input_does_not_dominate():
    """The full input decides the layout, not the one with a stride-0 dim."""
    x = torch.randn(1, 11).expand(13, 11)
    y = torch.randn(11, 13).t()
    _, out = execute(lambda fd, a, b: fd.ops.add(a, b), [x, y])
    torch.testing.assert_close(out, x + y)
    assert out.stride() == (1, 13)


def test_expanded_dim_of_the_reference_is_skipped():
    """x (7, 11, 13) expanded along dim 1, plus a bias along dim 1: x is the reference (two
    non-broadcast dims); its expanded dim maps to nothing, so dim 1 goes outermost."""
    x = torch.randn(7, 1, 13).expand(7, 11, 13)
    bias = torch.randn(11)
    _, out = execute(
        lambda fd, t, b: fd.ops.add(t, fd.ops.broadcast_in_dim(b, t.shape(), [1])), [x, bias]
    )
    torch.testing.assert_close(out, x + bias.view(1, 11, 1))
    assert out.stride() == (13, 91, 1)


RESHAPE_VIEWS = {  # name -> (input, body, torch)
    "merge_inner": (
        lambda: torch.randn(6, 10, 7),
        lambda fd, t: fd.ops.reshape(t, [60, 7]),
        lambda x: x.reshape(60, 7),
    ),
    "split_inner": (
        lambda: torch.randn(12, 35),
        lambda fd, t: fd.ops.reshape(t, [3, 4, 5, 7]),
        lambda x: x.reshape(3, 4, 5, 7),
    ),
    "channels_last_to_rows": (  # NCHW channels-last -> NHWC -> (N*H*W, C)
        lambda: torch.randn(2, 8, 5, 6).contiguous(memory_format=torch.channels_last),
        lambda fd, t: fd.ops.reshape(fd.ops.permute(t, [0, 2, 3, 1]), [60, 8]),
        lambda x: x.permute(0, 2, 3, 1).reshape(60, 8),
    ),
    "sliced_split": (
        lambda: torch.randn(6, 16)[:, 4:12],
        lambda fd, t: fd.ops.reshape(t, [6, 2, 4]),
        lambda x: x.reshape(6, 2, 4),
    ),
    "split_permute_merge": (
        lambda: torch.randn(4, 6, 10),
        lambda fd, t: fd.ops.reshape(
            fd.ops.permute(fd.ops.reshape(t, [4, 60]), [1, 0]), [60, 2, 2]
        ),
        lambda x: x.reshape(4, 60).permute(1, 0).reshape(60, 2, 2),
    ),
}


@pytest.mark.parametrize("name", list(RESHAPE_VIEWS))
def test_reshape_chain_that_is_a_view(name):
    make, body, direct = RESHAPE_VIEWS[name]
    x = make()
    want = direct(x)
    assert same_storage(want, x), "the torch chain itself is a view"
    _, out = execute(body, [x])
    assert same_storage(out, x) and out.data_ptr() == want.data_ptr()
    assert_strides(out, want.stride(), "reshape view")
    torch.testing.assert_close(out, want)


RESHAPE_COPIES = {  # name -> (input, new shape): torch's reshape of these copies
    "merge_column_major": (lambda: torch.randn(9, 14).t(), [126]),
    "merge_channels_last": (
        lambda: torch.randn(2, 8, 5, 6).contiguous(memory_format=torch.channels_last),
        [2, 240],
    ),
    "merge_sliced": (lambda: torch.randn(6, 16)[:, :8], [48]),
}


@pytest.mark.parametrize("name", list(RESHAPE_COPIES))
def test_reshape_that_is_not_a_view(name):
    """The input's strides cannot express the reshape as a view: the kernel reads through the
    reshape into a new, row-major buffer (the merged dim maps to no input dim)."""
    make, shape = RESHAPE_COPIES[name]
    x = make()
    assert not same_storage(x.reshape(shape), x), "torch copies too"
    _, out = execute(lambda fd, t: fd.ops.reshape(t, shape), [x])
    assert not same_storage(out, x)
    torch.testing.assert_close(out, x.reshape(shape))
    assert out.is_contiguous()


@pytest.mark.parametrize("pinned", [None, [1, 0]], ids=["inferred", "pinned_row_major"])
def test_reshape_then_add(pinned):
    """A computed output read through a view reshape: the merged dim maps to no input dim,
    so the inferred layout is row-major."""
    x = torch.randn(6, 10, 7)
    _, out = execute(
        lambda fd, t: fd.ops.add(fd.ops.reshape(t, [60, 7]), fd.define_scalar(2.0)),
        [x],
        stride_order=pinned,
    )
    torch.testing.assert_close(out, x.reshape(60, 7) + 2)
    assert out.stride() == (7, 1) and not same_storage(out, x)
