"""Definitions written the way Thunder writes them, for ``benchmarks overhead``.

Thunder 0.2.6 (``thunder/executors/nvfuserex_impl.py``) defines every input with
``define_tensor(shape=..., contiguity=..., dtype=..., is_cpu=..., stride_order=...)``
(static sizes by default, -1 for symbolic ones, ``None`` contiguity for size-1 dims),
constants with ``define_scalar(value, dtype=...)``, runtime numbers with
``define_scalar(dtype)``, and calls ``execute(args_tuple, device=fd._selected_device,
save_repro_inputs=..., _enable_options=[...], _disable_options=[...])`` on every call.
Besides Thunder's regions (add, bias+GELU, layer norm forward), two fusions of several
kernels: column and row sums (2), chained sums (3). Each case has a hand-written twin (the same computation as a user would write it),
timed in the same run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

ROWS, COLS = 8, 256


@dataclass(frozen=True)
class Case:
    name: str
    thunder: Callable[[Any], None]  # fd -> None, Thunder's way
    hand: Callable[[Any], None]  # fd -> None, by hand
    inputs: Callable[[str], list[Any]]  # device -> inputs (tensors, numbers)


def _thunder_tensor(fd, shape, contiguity=None):
    from layoutfuse.nvfuser import DataType

    contiguity = [None if n == 1 else True for n in shape] if contiguity is None else contiguity
    return fd.define_tensor(
        shape=list(shape),
        contiguity=contiguity,
        dtype=DataType.Float,
        is_cpu=False,
        stride_order=list(range(len(shape)))[::-1],
    )


def _hand_tensor(fd, rank):
    from layoutfuse.nvfuser import DataType

    return fd.define_tensor(shape=[-1] * rank, contiguity=[True] * rank, dtype=DataType.Float)


def _double(fd, value):
    from layoutfuse.nvfuser import DataType

    return fd.define_scalar(value, dtype=DataType.Double)


def _add_thunder(fd):
    from layoutfuse.nvfuser import DataType

    t0 = _thunder_tensor(fd, [ROWS, COLS])
    alpha = fd.define_scalar(DataType.Double)  # a runtime number
    fd.add_output(fd.ops.add(t0, alpha))


def _add_hand(fd):
    from layoutfuse.nvfuser import DataType

    t0 = _hand_tensor(fd, 2)
    fd.add_output(fd.ops.add(t0, fd.define_scalar(DataType.Double)))


def _bias_gelu_thunder(fd):
    t0, t1 = _thunder_tensor(fd, [ROWS, COLS]), _thunder_tensor(fd, [COLS])
    t2 = fd.ops.broadcast_in_dim(t1, shape=[ROWS, COLS], broadcast_dims=[1])
    t3 = fd.ops.add(t0, t2)
    t4 = fd.ops.erf(fd.ops.mul(t3, _double(fd, 0.7071067811865476)))
    t5 = fd.ops.mul(t3, fd.ops.add(_double(fd, 1.0), t4))
    fd.add_output(t3)
    fd.add_output(fd.ops.mul(_double(fd, 0.5), t5))


def _bias_gelu_hand(fd):
    t0, t1 = _hand_tensor(fd, 2), _hand_tensor(fd, 1)
    t3 = fd.ops.add(t0, fd.ops.broadcast_in_dim(t1, shape=fd.ops.shape(t0), broadcast_dims=[1]))
    t4 = fd.ops.erf(fd.ops.mul(t3, _double(fd, 0.7071067811865476)))
    fd.add_output(t3)
    fd.add_output(fd.ops.mul(_double(fd, 0.5), fd.ops.mul(t3, fd.ops.add(_double(fd, 1.0), t4))))


def _layer_norm_thunder(fd):
    """Thunder's layer norm forward region: mean and rstd kept for the backward."""
    t0, w, b = (_thunder_tensor(fd, s) for s in ([ROWS, COLS], [COLS], [COLS]))
    var, mean = fd.ops.var_mean(t0, dims=[1], correction=0, keepdim=False)
    var_b = fd.ops.broadcast_in_dim(var, shape=[ROWS, 1], broadcast_dims=[0])
    mean_b = fd.ops.broadcast_in_dim(mean, shape=[ROWS, 1], broadcast_dims=[0])
    rstd = fd.ops.rsqrt(fd.ops.add(var_b, _double(fd, 1e-5)))
    xc = fd.ops.sub(t0, fd.ops.broadcast_in_dim(mean_b, shape=[ROWS, COLS], broadcast_dims=[0, 1]))
    y = fd.ops.mul(xc, fd.ops.broadcast_in_dim(rstd, shape=[ROWS, COLS], broadcast_dims=[0, 1]))
    y = fd.ops.mul(y, fd.ops.broadcast_in_dim(w, shape=[ROWS, COLS], broadcast_dims=[1]))
    y = fd.ops.add(y, fd.ops.broadcast_in_dim(b, shape=[ROWS, COLS], broadcast_dims=[1]))
    fd.add_output(mean)
    fd.add_output(rstd)
    fd.add_output(y)


def _layer_norm_hand(fd):
    t0, w, b = _hand_tensor(fd, 2), _hand_tensor(fd, 1), _hand_tensor(fd, 1)
    var, mean = fd.ops.var_mean(t0, dims=[1], correction=0, keepdim=True)
    rstd = fd.ops.rsqrt(fd.ops.add(var, _double(fd, 1e-5)))
    y = fd.ops.mul(fd.ops.sub(t0, mean), rstd)
    shape = fd.ops.shape(t0)
    y = fd.ops.mul(y, fd.ops.broadcast_in_dim(w, shape=shape, broadcast_dims=[1]))
    fd.add_output(fd.ops.add(y, fd.ops.broadcast_in_dim(b, shape=shape, broadcast_dims=[1])))


def _sums_thunder(fd):
    """Two kernels: the column sums and the row sums of one input."""
    t0 = _thunder_tensor(fd, [ROWS, COLS])
    fd.add_output(fd.ops.sum(t0, dims=[0], keepdim=False))
    fd.add_output(fd.ops.sum(t0, dims=[1], keepdim=False))


def _sums_hand(fd):
    t0 = _hand_tensor(fd, 2)
    fd.add_output(fd.ops.sum(t0, dims=[0]))
    fd.add_output(fd.ops.sum(t0, dims=[1]))


def _chained_sums(fd, t0, shape):
    """Three kernels: column sums scale the input, its row sums scale it again, then the
    column sums of that (two intermediates between the kernels)."""
    s0 = fd.ops.sum(t0, dims=[0], keepdim=False)
    y = fd.ops.mul(t0, fd.ops.broadcast_in_dim(s0, shape=shape, broadcast_dims=[1]))
    r1 = fd.ops.sum(y, dims=[1], keepdim=False)
    z = fd.ops.mul(y, fd.ops.broadcast_in_dim(r1, shape=shape, broadcast_dims=[0]))
    fd.add_output(fd.ops.sum(z, dims=[0], keepdim=False))


def _chained_sums_thunder(fd):
    _chained_sums(fd, _thunder_tensor(fd, [ROWS, COLS]), [ROWS, COLS])


def _chained_sums_hand(fd):
    t0 = _hand_tensor(fd, 2)
    _chained_sums(fd, t0, fd.ops.shape(t0))


def _x(device, *shape):
    return torch.randn(*shape, device=device)


CASES = [
    Case("add", _add_thunder, _add_hand, lambda d: [_x(d, ROWS, COLS), 0.5]),
    Case(
        "bias_gelu", _bias_gelu_thunder, _bias_gelu_hand, lambda d: [_x(d, ROWS, COLS), _x(d, COLS)]
    ),
    Case(
        "layer_norm",
        _layer_norm_thunder,
        _layer_norm_hand,
        lambda d: [_x(d, ROWS, COLS), _x(d, COLS), _x(d, COLS)],
    ),
    Case("sums", _sums_thunder, _sums_hand, lambda d: [_x(d, ROWS, COLS)]),
    Case("chained_sums", _chained_sums_thunder, _chained_sums_hand, lambda d: [_x(d, ROWS, COLS)]),
]


def define(body: Callable[[Any], None]):
    from layoutfuse.nvfuser import FusionDefinition

    fd = FusionDefinition()
    fd._selected_device = None  # Thunder sets it before defining
    with fd:
        body(fd)
    return fd


def thunder_call(fd, inputs: list[Any]) -> Callable[[], Any]:
    """Thunder's ``FusionDefinitionWrapper.__call__`` minus Thunder's own work."""
    args = tuple(inputs)
    return lambda: fd.execute(
        args,
        device=fd._selected_device,
        save_repro_inputs=False,
        _enable_options=[],
        _disable_options=[],
    )


def target_us(kernels: int) -> float:
    """The issue's target for a cached execute: 15 us for one kernel, 15 + 4 k for k."""
    return 15.0 if kernels <= 1 else 15.0 + 4.0 * kernels
