"""Regions as Thunder 0.2.6 emits them for norms' forward: the normalized output and the
per-row values kept for the backward (layer norm: mean ``[B, S]`` and rstd ``[B, S, 1]``;
RMS norm: rstd ``[B, S, 1]``). The per-row values are stored by the normalization
kernel of the full-shape output (one kernel when the rows are innermost), not by a group
of their own (it was 4 kernels: a welford, two pointwise kernels and the normalization
kernel again). Every memory order of the input, against torch."""

from __future__ import annotations

import itertools

import pytest
import torch

from layoutfuse.nvfuser import DataType, FusionDefinition
from support.tensors import with_order

SHAPE = (2, 3, 16)


def _bcast(fd, t, shape, dims):
    return fd.ops.broadcast_in_dim(t, shape=list(shape), broadcast_dims=dims)


def layer_norm_forward(fd, x, w, b):
    var, mean = fd.ops.var_mean(x, dims=[2], correction=0, keepdim=False)
    rstd = fd.ops.rsqrt(
        fd.ops.add(_bcast(fd, var, SHAPE[:2] + (1,), [0, 1]), fd.define_scalar(1e-5))
    )
    mean_b = _bcast(fd, _bcast(fd, mean, SHAPE[:2] + (1,), [0, 1]), SHAPE, [0, 1, 2])
    y = fd.ops.mul(fd.ops.sub(x, mean_b), _bcast(fd, rstd, SHAPE, [0, 1, 2]))
    y = fd.ops.add(fd.ops.mul(y, _bcast(fd, w, SHAPE, [2])), _bcast(fd, b, SHAPE, [2]))
    return [mean, rstd, y]


def layer_norm_ref(x, w, b):
    var, mean = torch.var_mean(x, dim=2, correction=0)
    rstd = torch.rsqrt(var + 1e-5)[..., None]
    return [mean, rstd, (x - mean[..., None]) * rstd * w + b]


def rms_norm_forward(fd, x, w):
    ss = fd.ops.sum(fd.ops.mul(x, x), dims=[2], keepdim=False, dtype=DataType.Null)
    ms = fd.ops.div(_bcast(fd, ss, SHAPE[:2] + (1,), [0, 1]), fd.define_scalar(float(SHAPE[2])))
    rstd = fd.ops.rsqrt(fd.ops.add(ms, fd.define_scalar(1e-6)))
    y = fd.ops.mul(fd.ops.mul(x, _bcast(fd, rstd, SHAPE, [0, 1, 2])), _bcast(fd, w, SHAPE, [2]))
    return [rstd, y]


def rms_norm_ref(x, w):
    rstd = torch.rsqrt(x.pow(2).mean(2, keepdim=True) + 1e-6)
    return [rstd, x * rstd * w]


PROGRAMS = {
    "layer_norm": (layer_norm_forward, layer_norm_ref, 2),
    "rms_norm": (rms_norm_forward, rms_norm_ref, 1),
}


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
@pytest.mark.parametrize("name", PROGRAMS)
def test_norm_forward_stores_per_row_values_from_one_kernel(name, order):
    define, reference, n_params = PROGRAMS[name]
    x = with_order(SHAPE, order, torch.float32, seed=1)
    params = [torch.randn(SHAPE[2]) for _ in range(n_params)]
    with FusionDefinition() as fd:
        outs = define(fd, fd.from_pytorch(x), *(fd.from_pytorch(p) for p in params))
        for o in outs:
            fd.add_output(o)
    got = fd.execute([x, *params])
    for g, w in zip(got, reference(x, *params)):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    kernels = len(fd.executor().last_run.launches)
    if order[-1] == 2:  # the rows are innermost: one normalization kernel
        assert kernels == 1 and fd.last_schedule()[0].__class__.__name__ == "NormalizationParams"
    else:
        assert kernels <= 3
