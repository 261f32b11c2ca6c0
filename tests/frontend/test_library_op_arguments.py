"""Bad arguments of the library ops and batch_norm (``frontend/nvfuser/library_ops.py``):
each tensor parameter given a Python float, a torch tensor or a Scalar handle, each flag a
non-bool, each dtype a torch dtype; the error names the operator and the parameter and
shows no tensor's values. Every good call (the one each bad call differs from) succeeds."""

import pytest
import torch

from layoutfuse.errors import LayoutfuseError
from layoutfuse.frontend.nvfuser.library_ops import OPERATORS
from layoutfuse.nvfuser import DataType, FusionDefinition


def _t(fd, rank, dtype=DataType.Float):
    return fd.define_tensor(shape=[-1] * rank, contiguity=True, dtype=dtype)


def _good(fd, op):
    """(positional names, keyword arguments) of a good call of ``op``."""
    s = lambda v: fd.define_scalar(v, dtype=DataType.Double)  # noqa: E731
    if op == "matmul":
        return {"arg1": _t(fd, 2), "arg2": _t(fd, 2)}
    if op == "linear":
        return {"arg1": _t(fd, 2), "arg2": _t(fd, 2), "bias": _t(fd, 1)}
    if op == "grouped_mm":
        return {"mat1": _t(fd, 2), "mat2": _t(fd, 3), "offsets": _t(fd, 1, DataType.Int32)}
    if op == "scaled_mm":
        return {n: _t(fd, 2) for n in ("mat1", "mat2", "scale1", "scale2")} | {
            "dtype": DataType.Float
        }
    if op == "cutlass_nvfp4_grouped_mm":
        fp4 = DataType.Float4_e2m1fn
        return {
            "mat1": _t(fd, 2, fp4),
            "mat2": _t(fd, 3, fp4),
            "scale1": _t(fd, 2, DataType.Float8_e4m3fn),
            "scale2": _t(fd, 3, DataType.Float8_e4m3fn),
            "alpha": _t(fd, 1),
            "problem_sizes": _t(fd, 2, DataType.Int32),
            "expert_offsets": _t(fd, 1, DataType.Int32),
            "sf_offsets": _t(fd, 1, DataType.Int32),
            "dtype": DataType.BFloat16,
        }
    if op == "sdpfa_fwd":
        tensors = {"query": _t(fd, 4), "key": _t(fd, 4), "value": _t(fd, 4)}
        return tensors | {"is_causal": True, "dropout_p": 0.0, "scale": 0.5}
    if op == "sdpfa_bwd":
        names = ("grad_output", "query", "key", "value", "output")
        return {n: _t(fd, 4) for n in names} | {
            "logsumexp": _t(fd, 3),
            "philox_seed": _t(fd, 1, DataType.UInt64),
            "philox_offset": _t(fd, 0, DataType.UInt64),
        }
    assert op == "batch_norm"
    return {
        "arg": _t(fd, 4),
        **{n: _t(fd, 1) for n in ("weight", "bias", "running_mean", "running_var")},
        "momentum": s(0.1),
        "eps": s(1e-5),
        "training": True,
        "channels_last": False,
    }


TENSOR_PARAMS = {
    "arg1", "arg2", "bias", "mat1", "mat2", "offsets", "scale1", "scale2", "alpha",
    "problem_sizes", "expert_offsets", "sf_offsets", "query", "key", "value", "grad_output",
    "output", "logsumexp", "philox_seed", "philox_offset", "arg", "weight", "running_mean",
    "running_var",
}  # fmt: skip
OPTIONAL_TENSORS = {("linear", "bias"), ("batch_norm", "weight"), ("batch_norm", "bias")}
OPTIONAL_TENSORS |= {("batch_norm", "running_mean"), ("batch_norm", "running_var")}


def _cases():
    for op in sorted(OPERATORS):
        with FusionDefinition() as fd:
            good = _good(fd, op)
        for name, value in good.items():
            if name in TENSOR_PARAMS:
                bads = ["a Python float", "a torch tensor", "a Scalar handle"]
                if (op, name) not in OPTIONAL_TENSORS:
                    bads.append("None")
                for bad in bads:
                    yield op, name, bad
            elif isinstance(value, bool):
                yield op, name, "an int for a bool"
                yield op, name, "a Python float"
            elif isinstance(value, DataType):
                yield op, name, "a torch dtype"
            elif isinstance(value, float):  # an optional scalar operand
                yield op, name, "a bool for a number"
                yield op, name, "a torch tensor"


CASES = list(_cases())


def _bad_value(fd, label):
    return {
        "a Python float": 1.5,
        "a torch tensor": torch.ones(2, 2),
        "a Scalar handle": fd.define_scalar(2.0),
        "None": None,
        "an int for a bool": 1,
        "a bool for a number": True,
        "a torch dtype": torch.float32,
    }[label]


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_good_call(op):
    with FusionDefinition() as fd:
        out = getattr(fd.ops, op)(**_good(fd, op))
    assert out is not None


@pytest.mark.parametrize("op,param,label", CASES, ids=["-".join(c) for c in CASES])
def test_bad_argument(op, param, label):
    with FusionDefinition() as fd:
        kwargs = _good(fd, op)
        kwargs[param] = _bad_value(fd, label)
        with pytest.raises(LayoutfuseError) as info:
            getattr(fd.ops, op)(**kwargs)
    message = str(info.value)
    assert op in message and param in message, message
    assert "tensor(" not in message
