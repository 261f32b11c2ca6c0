"""Builds each case as a fusion through ``layoutfuse.nvfuser``, the nvFuser-compatible
frontend, exactly as an nvFuser user would write it.

Inputs are declared with symbolic sizes (``-1``), full contiguity and the input's
``stride_order`` (nvFuser semantics: ``stride_order[i]`` is the rank of logical dim
``i`` by stride, 0 = innermost); a sliced or expanded input is declared as nvFuser's
``compute_tensor_descriptor`` describes its strides (what Thunder does). A pinned output layout is requested with
``fd.add_output(out, stride_order=...)``. Normalizations are written as the anchors
wrote them for nvFuser (static shapes, ``broadcast_in_dim``, fp32 compute).

``layoutfuse.nvfuser`` is imported on first use: when it is missing every case
records the import error instead of stopping the run.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from types import ModuleType

import torch

from benchmarks.cases import Case
from benchmarks.harness import SystemUnavailable
from benchmarks.reference import LAYERNORM_EPS, input_strides

NVF_DTYPES = {"float32": "Float", "bfloat16": "BFloat16", "float16": "Half"}


def stride_order(order: tuple[int, ...]) -> list[int]:
    """nvFuser ``stride_order`` of a memory order given outermost first:
    ``(0, 1, 2)`` (row-major) -> ``[2, 1, 0]``."""
    rank = len(order)
    return [rank - 1 - order.index(d) for d in range(rank)]


def _sum(fd, dt, case: Case, inputs):
    t = inputs[0]
    if case.view is not None:
        perm, shape = case.view
        t = fd.ops.permute(t, dims=list(perm))
        t = fd.ops.reshape(t, new_shape=list(shape))
    return fd.ops.sum(t, dims=list(case.dims), keepdim=False)


def _operand(fd, case: Case, t):
    if case.view is not None:
        perm, shape = case.view
        t = fd.ops.reshape(fd.ops.permute(t, dims=list(perm)), new_shape=list(shape))
    return t


def _max(fd, dt, case: Case, inputs):
    return fd.ops.max(_operand(fd, case, inputs[0]), dims=list(case.dims), keepdim=False)


def _var_mean(fd, dt, case: Case, inputs):
    x = _operand(fd, case, inputs[0])
    return fd.ops.var_mean(x, dims=list(case.dims), correction=1, keepdim=False)


def _chain(fd, dt, case: Case, inputs):
    x = inputs[0]
    half = fd.define_scalar(0.5, dtype=dt.Double)
    one = fd.define_scalar(1.0, dtype=dt.Double)
    return fd.ops.add(fd.ops.mul(fd.ops.tanh(fd.ops.mul(x, half)), x), one)


def _copy(fd, dt, case: Case, inputs):
    return fd.ops.set(inputs[0])


def _add(fd, dt, case: Case, inputs):
    return fd.ops.add(inputs[0], inputs[1])


def _broadcast_back(fd, t, case: Case):
    """Broadcast a tensor reduced over ``case.dims[0]`` back to the input's shape."""
    kept = [i for i in range(len(case.shape)) if i != case.dims[0]]
    return fd.ops.broadcast_in_dim(t, shape=list(case.shape), broadcast_dims=kept)


def _softmax(fd, dt, case: Case, inputs):
    x = inputs[0]
    dim = [case.dims[0]]
    x_max = _broadcast_back(fd, fd.ops.max(x, dims=dim, keepdim=False), case)
    e = fd.ops.exp(fd.ops.sub(x, x_max))
    total = _broadcast_back(fd, fd.ops.sum(e, dims=dim, keepdim=False), case)
    return fd.ops.div(e, total)


def _log_softmax(fd, dt, case: Case, inputs):
    x = inputs[0]
    dim = [case.dims[0]]
    shifted = fd.ops.sub(x, _broadcast_back(fd, fd.ops.max(x, dims=dim, keepdim=False), case))
    total = fd.ops.sum(fd.ops.exp(shifted), dims=dim, keepdim=False)
    return fd.ops.sub(shifted, _broadcast_back(fd, fd.ops.log(total), case))


def _rmsnorm(fd, dt, case: Case, inputs):
    x = inputs[0]
    n = fd.define_scalar(float(case.shape[case.dims[0]]), dtype=dt.Double)
    mean_sq = fd.ops.div(fd.ops.sum(fd.ops.mul(x, x), dims=[case.dims[0]], keepdim=False), n)
    eps = fd.define_scalar(LAYERNORM_EPS, dtype=dt.Double)
    rstd = fd.ops.rsqrt(fd.ops.add(mean_sq, eps))
    return fd.ops.mul(x, _broadcast_back(fd, rstd, case))


def _layernorm(fd, dt, case: Case, inputs):
    x = inputs[0]
    var, mean = fd.ops.var_mean(x, dims=[case.dims[0]], correction=0, keepdim=False)
    eps = fd.define_scalar(LAYERNORM_EPS, dtype=dt.Double)
    rstd = fd.ops.rsqrt(fd.ops.add(var, eps))
    centered = fd.ops.sub(x, _broadcast_back(fd, mean, case))
    return fd.ops.mul(centered, _broadcast_back(fd, rstd, case))


def _var_sums(fd, dt, case: Case, inputs):
    x = inputs[0]
    n = fd.define_scalar(float(math.prod(case.shape[d] for d in case.dims)), dtype=dt.Double)
    mean = fd.ops.div(fd.ops.sum(x, dims=list(case.dims), keepdim=False), n)
    mean_sq = fd.ops.div(fd.ops.sum(fd.ops.mul(x, x), dims=list(case.dims), keepdim=False), n)
    return fd.ops.sub(mean_sq, fd.ops.mul(mean, mean))


# op -> (builder, static input shapes, computes in fp32)
BUILDERS: dict[str, tuple[Callable, bool, bool]] = {
    "sum": (_sum, False, False),
    "copy": (_copy, False, False),
    "add": (_add, False, False),
    "softmax": (_softmax, True, True),
    "layernorm": (_layernorm, True, True),
    "var_sums": (_var_sums, False, True),
    "max": (_max, False, False),
    "var_mean": (_var_mean, False, True),
    "log_softmax": (_log_softmax, True, True),
    "rmsnorm": (_rmsnorm, True, True),
    "chain": (_chain, False, False),
}


def _declare(fd, nvf: ModuleType, case: Case, dtype, static: bool, strides) -> object:
    """An input as an nvFuser user declares it: a dense one by its ``stride_order``, a
    sliced or expanded one, or one with size-1 dims (broadcasts to nvFuser), by
    ``compute_tensor_descriptor`` of its strides."""
    rank = len(case.shape)
    if case.slice is None and case.expand is None and 1 not in case.shape:
        contiguity, order = [True] * rank, stride_order(case.order)
    else:
        contiguity, order = nvf.compute_tensor_descriptor(list(case.shape), list(strides))
    return fd.define_tensor(
        shape=list(case.shape) if static else [-1] * rank,
        contiguity=list(contiguity),
        dtype=dtype,
        stride_order=list(order),
    )


def define_fusion(nvf: ModuleType, case: Case):
    """The case as a ``FusionDefinition`` of ``nvf`` (``layoutfuse.nvfuser``)."""
    FusionDefinition, DataType = nvf.FusionDefinition, nvf.DataType
    build, static, upcast = BUILDERS[case.op]
    io_dtype = getattr(DataType, NVF_DTYPES[case.dtype])
    with FusionDefinition() as fd:
        inputs = [
            _declare(fd, nvf, case, io_dtype, static, strides) for strides in input_strides(case)
        ]
        if upcast and io_dtype != DataType.Float:
            inputs = [fd.ops.cast(t, DataType.Float) for t in inputs]
        outs = build(fd, DataType, case, inputs)
        for out in outs if isinstance(outs, (tuple, list)) else (outs,):
            if upcast and io_dtype != DataType.Float:
                out = fd.ops.cast(out, io_dtype)
            if case.out_order is None:
                fd.add_output(out)
            else:
                fd.add_output(out, stride_order=stride_order(case.out_order))
    return fd


class LayoutfuseRunner:
    """The system under test. ``schedule()`` is ``str(fd.last_schedule())`` of the
    last fusion run, when the frontend has it."""

    name = "layoutfuse"

    def __init__(self, module: str = "layoutfuse.nvfuser", tuning=None) -> None:
        self.module = module
        self.tuning = tuning  # a ``schedulers.tuning.Tuning`` (None: the default)
        self._fd = None

    def _frontend(self) -> ModuleType:
        try:
            return importlib.import_module(self.module)
        except Exception as e:
            raise SystemUnavailable(f"{self.module} is not importable: {e!r}") from e

    def prepare(self, case: Case, inputs: list[torch.Tensor]) -> Callable[..., torch.Tensor]:
        self._fd = None
        fd = define_fusion(self._frontend(), case)
        self._fd = fd
        if self.tuning is not None:
            fd.executor().configure(tuning=self.tuning)

        def run(*xs: torch.Tensor):
            outs = fd.execute(list(xs))
            return outs[0] if case.n_outputs == 1 else tuple(outs)

        return run

    def measured(self) -> list[str]:
        """The measured choices of the last run (``runtime/measure.py``), one per segment
        whose params were timed against others."""
        ex = getattr(self._fd, "executor", None)
        run = getattr(ex(), "last_run", None) if ex else None
        if run is None:
            return []
        return [s.measured.describe() for s in run.segments if s.measured is not None]

    def schedule(self) -> str | None:
        last = getattr(self._fd, "last_schedule", None)
        if last is None:
            return None
        try:
            return str(last())
        except Exception as e:
            return f"last_schedule() raised {type(e).__name__}: {e}"
