"""``fd.ops`` for the library ops (matmul, linear, grouped_mm, scaled_mm,
cutlass_nvfp4_grouped_mm, sdpfa_fwd, sdpfa_bwd) and batch_norm, in nvFuser's argument forms
(``python_bindings.cpp`` at fe9addc91).

Each checks its handles, builds the IR (``ir/ops/matmul.py``, ``ir/ops/attention.py``,
``ir/ops/batch_norm.py``) and records the line nvFuser prints. The optional scalar
operands of the attention ops take a Scalar handle, a Python number or None.
"""

from __future__ import annotations

from typing import Any

from ...dtypes import DataType
from ...errors import DefinitionError, UnsupportedError
from ...ir import ops as ir_ops
from ...ir.ops.batch_norm import batch_norm as ir_batch_norm
from .arguments import bool_arg, dtype_arg, int_arg, type_error
from .handles import Scalar, Tensor


def _name(x: Any) -> str:
    if x is None:
        return "None"
    if isinstance(x, Tensor | Scalar):
        return x.name
    return repr(x)


def _optional_tensor(rec, x, op: str, arg: str):
    return None if x is None else rec.tensor(x, op, arg)


def _optional_scalar(rec, x, op: str, arg: str):
    """A Scalar handle's value, a Python number (a bool for ``is_causal``, else an int or
    float), or None."""
    if x is None:
        return x
    if isinstance(x, Scalar):
        return rec.scalar(x, op, arg)
    flag = arg == "is_causal"
    if isinstance(x, bool) == flag and isinstance(x, bool | int | float):
        return x
    what = "a bool" if flag else "a float"
    raise type_error(op, arg, f"a Scalar, {what} or None", x)


def matmul(self, arg1, arg2):
    rec = self._fd._recorder_for("matmul")
    a, b = rec.tensor(arg1, "matmul", "arg1"), rec.tensor(arg2, "matmul", "arg2")
    return rec.emit(ir_ops.matmul(a, b), f"fd.ops.matmul({arg1.name}, {arg2.name})")


def linear(self, arg1, arg2, bias=None):
    rec = self._fd._recorder_for("linear")
    a, w = rec.tensor(arg1, "linear", "arg1"), rec.tensor(arg2, "linear", "arg2")
    b = _optional_tensor(rec, bias, "linear", "bias")
    text = f"fd.ops.linear({arg1.name}, {arg2.name}" + (f", bias={bias.name})" if b else ")")
    return rec.emit(ir_ops.linear(a, w, b), text)


def grouped_mm(
    self,
    mat1,
    mat2,
    offsets,
    scale1=None,
    scale2=None,
    alpha=None,
    bias=None,
    beta=None,
    dtype=DataType.BFloat16,
    output_block_scale_size=0,
    output_block_scale_dtype=DataType.BFloat16,
    output_gamma=False,
):
    """``grouped_mm(mat1, mat2, offsets) -> Tensor``, or the scaled form (scale1 and
    scale2 given) ``-> (out, None, None)``."""
    if scale1 is not None or scale2 is not None:
        return _scaled_grouped_mm(
            self, mat1, mat2, offsets, scale1, scale2, alpha, bias, beta, dtype,
            output_block_scale_size, output_gamma,
        )  # fmt: skip
    rec = self._fd._recorder_for("grouped_mm")
    a = rec.tensor(mat1, "grouped_mm", "mat1")
    b = rec.tensor(mat2, "grouped_mm", "mat2")
    offs = rec.tensor(offsets, "grouped_mm", "offsets")
    return rec.emit(
        ir_ops.grouped_mm(a, b, offs),
        f"fd.ops.grouped_mm({mat1.name}, {mat2.name}, {offsets.name})",
    )


def sdpfa_fwd(
    self, query, key, value, bias=None, mask=None, dropout_p=None, is_causal=None, scale=None
):
    """(output, logsumexp, philox_seed, philox_offset); bias and mask must be None.

    nvFuser before 0.2.35 had no bias and mask: ``sdpfa_fwd(q, k, v, dropout_p, is_causal,
    scale)``, the form Thunder 0.2.6 passes positionally. A fourth argument that is not a
    tensor handle (a Scalar, a number; a fifth, where the fourth is None) takes that form."""
    if any(x is not None and not isinstance(x, Tensor) for x in (bias, mask)):
        if is_causal is not None or scale is not None:
            raise DefinitionError(
                "sdpfa_fwd: the form without bias and mask takes (query, key, value, "
                "dropout_p, is_causal, scale); got more arguments"
            )
        dropout_p, is_causal, scale = bias, mask, dropout_p
        bias = mask = None
    rec = self._fd._recorder_for("sdpfa_fwd")
    q, k, v = (
        rec.tensor(x, "sdpfa_fwd", n) for x, n in ((query, "query"), (key, "key"), (value, "value"))
    )  # noqa: E501
    if bias is not None or mask is not None:
        raise UnsupportedError("sdpfa_fwd: bias and mask are not supported (flash attention)")
    opts = {
        n: _optional_scalar(rec, x, "sdpfa_fwd", n)
        for n, x in (("dropout_p", dropout_p), ("is_causal", is_causal), ("scale", scale))
    }
    vals = ir_ops.sdpfa_fwd(q, k, v, **opts)
    outs = [rec.new(Tensor, t) for t in vals]
    rec.record(
        outs,
        f"fd.ops.sdpfa_fwd({query.name}, {key.name}, {value.name}, bias=None, mask=None, "
        f"dropout_p={_name(dropout_p)}, is_causal={_name(is_causal)}, scale={_name(scale)})",
    )
    return tuple(outs)


def sdpfa_bwd(
    self,
    grad_output,
    query,
    key,
    value,
    output,
    logsumexp,
    dropout_p=None,
    is_causal=None,
    philox_seed=None,
    philox_offset=None,
    scale=None,
):
    """(grad_query, grad_key, grad_value)."""
    rec = self._fd._recorder_for("sdpfa_bwd")
    if philox_seed is None or philox_offset is None:
        raise DefinitionError("sdpfa_bwd: philox_seed and philox_offset are required")
    handles = (grad_output, query, key, value, output, logsumexp)
    names = ("grad_output", "query", "key", "value", "output", "logsumexp")
    tensors = [rec.tensor(x, "sdpfa_bwd", n) for x, n in zip(handles, names)]
    seed = rec.tensor(philox_seed, "sdpfa_bwd", "philox_seed")
    offset = rec.tensor(philox_offset, "sdpfa_bwd", "philox_offset")
    vals = ir_ops.sdpfa_bwd(
        *tensors,
        _optional_scalar(rec, dropout_p, "sdpfa_bwd", "dropout_p"),
        _optional_scalar(rec, is_causal, "sdpfa_bwd", "is_causal"),
        seed,
        offset,
        _optional_scalar(rec, scale, "sdpfa_bwd", "scale"),
    )
    outs = [rec.new(Tensor, t) for t in vals]
    args = ", ".join(h.name for h in handles)
    rec.record(
        outs,
        f"fd.ops.sdpfa_bwd({args}, {_name(dropout_p)}, {_name(is_causal)}, "
        f"{philox_seed.name}, {philox_offset.name}, {_name(scale)})",
    )
    return tuple(outs)


def batch_norm(
    self,
    arg,
    weight,
    bias,
    running_mean,
    running_var,
    momentum,
    eps,
    training,
    channels_last=False,
):
    """(output, mean, invstd); with running stats in training, their updates are written
    into ``running_mean`` and ``running_var`` (aliased outputs), as nvFuser does."""
    op = "batch_norm"
    rec = self._fd._recorder_for(op)
    x = rec.tensor(arg, op, "arg")
    w = _optional_tensor(rec, weight, op, "weight")
    b = _optional_tensor(rec, bias, op, "bias")
    rm = _optional_tensor(rec, running_mean, op, "running_mean")
    rv = _optional_tensor(rec, running_var, op, "running_var")
    training = bool_arg(training, op, "training")
    channels_last = bool_arg(channels_last, op, "channels_last")
    result = ir_batch_norm(
        x,
        w,
        b,
        rm,
        rv,
        rec.scalar(momentum, op, "momentum"),
        rec.scalar(eps, op, "eps"),
        training,
        channels_last,
    )
    for new, target in result.updates:
        if not any(v is target for v in rec.fusion.inputs):
            raise DefinitionError(f"{op}: running stats must be fusion inputs to be updated")
        rec.fusion.add_output(new, alias_input=target)
    outs = [rec.new(Tensor, t) for t in result[:3]]
    rec.record(
        outs,
        f"fd.ops.batch_norm({arg.name}, {_name(weight)}, {_name(bias)}, {_name(running_mean)}, "
        f"{_name(running_var)}, {momentum.name}, {eps.name}, {training}, "
        f"channels_last={channels_last})",
    )
    return tuple(outs)


def scaled_mm(
    self,
    mat1,
    mat2,
    scale1,
    scale2,
    alpha=None,
    bias=None,
    beta=None,
    dtype=DataType.BFloat16,
    output_block_scale_size=0,
    output_block_scale_dtype=DataType.BFloat16,
    output_gamma=False,
):
    """(out, None, None): the output quantization (block scales, gamma) is not supported."""
    op = "scaled_mm"
    rec = self._fd._recorder_for(op)
    required = (("mat1", mat1), ("mat2", mat2), ("scale1", scale1), ("scale2", scale2))
    tensors = [rec.tensor(x, op, n) for n, x in required]
    optional = [
        _optional_tensor(rec, x, op, n)
        for n, x in (("alpha", alpha), ("bias", bias), ("beta", beta))
    ]
    out = ir_ops.scaled_mm(
        *tensors,
        *optional,
        dtype=dtype_arg(dtype, op),
        output_block_scale_size=int_arg(output_block_scale_size, op, "output_block_scale_size"),
        output_gamma=bool_arg(output_gamma, op, "output_gamma"),
    )
    handle = rec.new(Tensor, out)
    names = ", ".join(_name(x) for _, x in required)
    rec.lines.append(  # it returns three values, two of them None
        f"{handle.name}, _, _ = fd.ops.scaled_mm({names}, alpha={_name(alpha)}, "
        f"bias={_name(bias)}, beta={_name(beta)}, dtype={dtype!r})"
    )
    return handle, None, None


def _scaled_grouped_mm(
    self, mat1, mat2, offsets, scale1, scale2, alpha, bias, beta, dtype, block_size, gamma
):
    op = "grouped_mm"
    rec = self._fd._recorder_for(op)
    required = (("mat1", mat1), ("mat2", mat2), ("offsets", offsets))
    required += (("scale1", scale1), ("scale2", scale2))
    tensors = [rec.tensor(x, op, n) for n, x in required]
    optional = [
        _optional_tensor(rec, x, op, n)
        for n, x in (("alpha", alpha), ("bias", bias), ("beta", beta))
    ]
    out = ir_ops.scaled_grouped_mm(
        *tensors,
        *optional,
        dtype=dtype_arg(dtype, op),
        output_block_scale_size=int_arg(block_size, op, "output_block_scale_size"),
        output_gamma=bool_arg(gamma, op, "output_gamma"),
    )
    handle = rec.new(Tensor, out)
    names = ", ".join(_name(x) for _, x in required)
    rec.lines.append(
        f"{handle.name}, _, _ = fd.ops.grouped_mm({names}, alpha={_name(alpha)}, "
        f"bias={_name(bias)}, beta={_name(beta)}, dtype={dtype!r})"
    )
    return handle, None, None


_NVFP4_OPERANDS = (
    "mat1",
    "mat2",
    "scale1",
    "scale2",
    "alpha",
    "problem_sizes",
    "expert_offsets",
    "sf_offsets",
)


def cutlass_nvfp4_grouped_mm(
    self,
    mat1,
    mat2,
    scale1,
    scale2,
    alpha,
    problem_sizes,
    expert_offsets,
    sf_offsets,
    dtype=DataType.BFloat16,
):
    op = "cutlass_nvfp4_grouped_mm"
    rec = self._fd._recorder_for(op)
    handles = (mat1, mat2, scale1, scale2, alpha, problem_sizes, expert_offsets, sf_offsets)
    tensors = [rec.tensor(x, op, n) for x, n in zip(handles, _NVFP4_OPERANDS)]
    out = ir_ops.cutlass_nvfp4_grouped_mm(*tensors, dtype=dtype_arg(dtype, op))
    return rec.emit(out, f"fd.ops.{op}({', '.join(h.name for h in handles)}, dtype={dtype!r})")


OPERATORS = {
    f.__name__: f
    for f in (
        matmul,
        linear,
        grouped_mm,
        scaled_mm,
        cutlass_nvfp4_grouped_mm,
        sdpfa_fwd,
        sdpfa_bwd,
        batch_norm,
    )
}
"""The operators ``fd.ops`` takes from this module (set on ``Operators`` by name)."""
