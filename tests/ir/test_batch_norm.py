"""batch_norm (``ir/ops/batch_norm.py``) against ``torch.nn.functional.batch_norm``:
NCHW and NHWC (channels_last) inputs, training and inference, with and without weight,
bias and running stats (updated in place in training, as nvFuser does), Float and
BFloat16; the kernels it runs, and that they compile for sm_90."""

import pytest
import torch

from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import DataType, FusionDefinition

DTYPES = [(torch.float32, DataType.Float), (torch.bfloat16, DataType.BFloat16)]


def _randn(shape, seed, dtype=torch.float32):
    return torch.randn(tuple(shape), generator=torch.Generator().manual_seed(seed)).to(dtype)


def _bn_fd(x, dtype, training, channels_last, affine, stats):
    with FusionDefinition() as fd:
        tx = fd.from_pytorch(x)
        w = fd.define_tensor(shape=[-1], dtype=DataType.Float) if affine else None
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float) if affine else None
        rm = fd.define_tensor(shape=[-1], dtype=DataType.Float) if stats else None
        rv = fd.define_tensor(shape=[-1], dtype=DataType.Float) if stats else None
        momentum = fd.define_scalar(0.1, dtype=DataType.Double)
        eps = fd.define_scalar(1e-5, dtype=DataType.Double)
        y, mean, invstd = fd.ops.batch_norm(
            tx, w, b, rm, rv, momentum, eps, training, channels_last=channels_last
        )
        fd.add_output(y)
        fd.add_output(mean)
        fd.add_output(invstd)
    return fd


LAYOUTS = [
    ("nchw", (4, 3, 5, 6), False),
    ("nhwc", (4, 5, 6, 3), True),  # channels last: the channel is the last logical dim
    ("nchw_strided_as_nhwc", (4, 3, 5, 6), False),  # NCHW logical, NHWC memory
    ("nc", (7, 3), False),
]


@pytest.mark.parametrize("tdtype,dtype", DTYPES)
@pytest.mark.parametrize("name,shape,channels_last", LAYOUTS)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_against_torch(tdtype, dtype, name, shape, channels_last, training, affine):
    x = _randn(shape, 0, tdtype)
    if name == "nchw_strided_as_nhwc":
        x = x.contiguous(memory_format=torch.channels_last)
    c = shape[-1] if channels_last else shape[1]
    w, b = _randn((c,), 1), _randn((c,), 2)
    rm, rv = _randn((c,), 3), _randn((c,), 4).abs() + 0.5
    rm_ref, rv_ref = rm.clone(), rv.clone()
    fd = _bn_fd(x, dtype, training, channels_last, affine, stats=True)
    inputs = [x] + ([w, b] if affine else []) + [rm, rv]
    y, mean, invstd = fd.execute(inputs)
    # torch's batch_norm wants the channel at dim 1
    xt = x.movedim(-1, 1) if channels_last else x
    ref = torch.nn.functional.batch_norm(
        xt.float(),
        rm_ref,
        rv_ref,
        w if affine else None,
        b if affine else None,
        training=training,
        momentum=0.1,
        eps=1e-5,
    )
    ref = ref.movedim(1, -1) if channels_last else ref
    torch.testing.assert_close(y.float(), ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(rm, rm_ref, rtol=1e-5, atol=1e-6)  # updated in place
    torch.testing.assert_close(rv, rv_ref, rtol=1e-5, atol=1e-6)
    dims = [d for d in range(x.ndim) if d != (x.ndim - 1 if channels_last else 1)]
    if training:
        var, m = torch.var_mean(x.float(), dim=dims, correction=0)
        torch.testing.assert_close(mean, m, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(invstd, torch.rsqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    else:
        torch.testing.assert_close(mean, rm)
        torch.testing.assert_close(invstd, torch.rsqrt(rv + 1e-5))
    if name == "nchw_strided_as_nhwc":
        assert y.stride() == x.stride()  # the output keeps the input's memory order


@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_training_without_running_stats(channels_last):
    shape = (3, 6, 4, 2) if channels_last else (3, 2, 4, 6)
    x = _randn(shape, 5)
    fd = _bn_fd(x, DataType.Float, True, channels_last, affine=False, stats=False)
    y, mean, invstd = fd.execute([x])
    xt = x.movedim(-1, 1) if channels_last else x
    ref = torch.nn.functional.batch_norm(xt, None, None, training=True, eps=1e-5)
    torch.testing.assert_close(
        y, ref.movedim(1, -1) if channels_last else ref, rtol=1e-4, atol=1e-4
    )
    assert mean.shape == invstd.shape == (2,)


def test_batch_norm_runs_one_normalization_kernel_that_compiles_for_hopper():
    x = _randn((4, 3, 5, 6), 6)
    fd = _bn_fd(x, DataType.Float, True, False, affine=True, stats=True)
    c = (3,)
    inputs = [x, _randn(c, 1), _randn(c, 2), _randn(c, 3), _randn(c, 4).abs()]
    segs = fd.segment(inputs)
    assert [s["scheduler"] for s in segs][0] == "normalization"
    assert "welford" in segs[0]["ops"]
    artifacts = compile_last_run(fd.executor())
    assert artifacts and all(a.ptx for a in artifacts)


def test_batch_norm_records_the_nvfuser_line():
    x = _randn((2, 3, 4), 7)
    fd = _bn_fd(x, DataType.Float, True, False, affine=True, stats=True)
    assert "fd.ops.batch_norm(T0, T1, T2, T3, T4, S5, S6, True, channels_last=False)" in repr(fd)
