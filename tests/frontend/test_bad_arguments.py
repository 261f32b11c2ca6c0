"""A sweep of bad arguments over every ``fd.ops`` operator.

The operators come from ``Operators`` itself and their parameters from their signatures;
each parameter has a kind (what nvFuser's frontend takes there), each kind a good value,
and each row below makes one bad value for the kinds it applies to. Every generated call
differs from an operator's good call (which must succeed) in one argument, and must raise
a ``LayoutfuseError`` whose message names the operator and the argument (the input's rank,
for a tensor of the wrong rank) and shows no tensor's values. Definitions only: nothing
runs.
"""

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from layoutfuse.errors import LayoutfuseError
from layoutfuse.frontend.nvfuser.library_ops import OPERATORS as LIBRARY_OPERATORS
from layoutfuse.frontend.nvfuser.ops_namespace import ALIASES, Operators
from layoutfuse.ir.ops.elementwise import ROW_BY_NAME
from layoutfuse.nvfuser import DataType, FusionDefinition

# the library ops and batch_norm take tensors of op-specific ranks and dtypes: their bad
# arguments are swept in test_library_op_arguments.py
SWEPT_ELSEWHERE = set(LIBRARY_OPERATORS)
OPS = sorted(n for n in dir(Operators) if not n.startswith("_") and n not in SWEPT_ELSEWHERE)
POINTWISE = set(ROW_BY_NAME) | set(ALIASES)
INTEGER_OPERANDS = {"bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "gcd"}
INTEGER_OPERANDS |= {"bitwise_left_shift", "bitwise_right_shift", "logical_right_shift"}
# Pointwise operands where nvFuser's binding takes a Scalar only (an alpha, a threshold).
SCALAR_OPERANDS = {
    (name, f"arg{k + 1}") for name, row in ROW_BY_NAME.items() for k in row.scalar_operands
}
COMPLEX_OPERANDS = {"imag"}  # defined for complex operands only

# Parameter kinds.
TENSOR, OPERAND, SCALAR, LENGTH, VECTOR = "Tensor", "Tensor or Scalar", "Scalar", "length", "Vector"
DIMS, PERMUTATION, BROADCAST_DIMS = "dims", "permutation", "broadcast dims"
DIM, INDEX, INT, BOOL, BOOL_LIST, DTYPE = "dim", "index", "int", "bool", "bools", "DataType"
SHAPE, INPUT_SHAPE = "shape", "shape of the input's rank"
BOUNDS, PAD_WIDTHS, TENSORS = "bounds of the input's rank", "pad widths", "Tensors"
INDEX_TENSOR, INDEX_VECTOR = "index Tensor", "rank-1 index Tensor"  # indexed reads, writes
OPTIONAL_SCALAR = "Scalar or None"  # embedding_fwd's options
DIM_LISTS = {DIMS, PERMUTATION, BROADCAST_DIMS}
INT_LISTS = {BOUNDS, PAD_WIDTHS}  # slice's starts, ends and steps; pad's widths
# Kinds whose good value fits only a tensor of the good tensor's rank (2).
RANK_BOUND = DIM_LISTS | {DIM, BOOL_LIST, INPUT_SHAPE, BOUNDS}

PARAM_KINDS = {
    "arg": TENSOR,
    "dims": DIMS,
    "keepdim": BOOL,
    "dtype": DTYPE,
    "correction": INT,
    "stride_order": PERMUTATION,
    "new_shape": SHAPE,
    "shape": SHAPE,
    "broadcast_dims": BROADCAST_DIMS,
    "is_broadcast_dim": BOOL_LIST,
    "squeeze_expanded": BOOL,
    "fill_value": SCALAR,
    "length": LENGTH,
    "start": SCALAR,
    "step": SCALAR,
    "dim": DIM,
    "index": INDEX,
    # data movement
    "start_indices": BOUNDS,
    "end_indices": BOUNDS,
    "strides": BOUNDS,
    "manual_normalization": BOOL,
    "pad_widths": PAD_WIDTHS,
    "value": SCALAR,
    "tensors": TENSORS,
    "manual_padding": BOOL,
    # random ops
    "minval": SCALAR,
    "maxval": SCALAR,
    "mean": SCALAR,
    "std": SCALAR,
    "rng_seed": SCALAR,
    "rng_offset": SCALAR,
    # cumsum, argsort, topk, triu
    "descending": BOOL,
    "stable": BOOL,
    "largest": BOOL,
    "sorted": BOOL,
    "diagonal": INT,
    "input": TENSOR,
    "k": INDEX,  # topk's; good: 0 (dim 1 of the good tensor has extent 1)
    # indexed reads and writes (the Tensor "index" of each is an override below)
    "arg1": TENSOR,
    "src": OPERAND,
    "acc": TENSOR,
    "weight": TENSOR,
    "padding_idx": OPTIONAL_SCALAR,
    "max_norm": OPTIONAL_SCALAR,
    "norm_type": OPTIONAL_SCALAR,
    "scale_grad_by_freq": OPTIONAL_SCALAR,
    "sparse": OPTIONAL_SCALAR,
}
KIND_OVERRIDES = {
    ("cast", "arg"): OPERAND,
    ("set", "arg"): OPERAND,
    ("segment_set", "arg"): OPERAND,
    ("at", "arg"): VECTOR,
    ("permute", "dims"): PERMUTATION,
    ("expand", "shape"): INPUT_SHAPE,
    ("index_select", "index"): INDEX_VECTOR,
    ("index_put_accumulate", "index"): INDEX_VECTOR,
    ("index_put_accumulate", "value"): TENSOR,
    ("gather", "index"): INDEX_TENSOR,
    ("take_along_axis", "index"): INDEX_TENSOR,
    ("scatter", "index"): INDEX_TENSOR,
    ("embedding_fwd", "input"): INDEX_TENSOR,
}
GOOD_SHAPES = {"full": [2, 3], "reshape": [2], "broadcast_in_dim": [2, 1, 3], "expand": [2, 3]}
GOOD_SHAPES |= {"uniform": [2, 3], "normal": [2, 3]}  # random ops
GOOD_BOUNDS = {"start_indices": [0, 0], "end_indices": [2, 1], "strides": [1, 1]}  # slice
# Where nvFuser gives a -1 extent a meaning, the result's static shape for the -1 row.
MINUS_ONE_MEANS = {"reshape": (2,), "expand": (2, 3), "broadcast_in_dim": (2, 1, 3)}


class Env:
    """The handles of one definition: T [2, 1] Float (and Int), a rank-1 tensor, scalars and
    a vector."""

    def __init__(self, fd):
        self.t = fd.define_tensor(shape=[2, 1], contiguity=True)
        self.t_int = fd.define_tensor(shape=[2, 1], contiguity=True, dtype=DataType.Int)
        self.t_complex = fd.define_tensor(
            shape=[2, 1], contiguity=True, dtype=DataType.ComplexFloat
        )
        self.t_rank1 = fd.define_tensor(shape=[3], contiguity=True)
        self.t_index1 = fd.define_tensor(shape=[2], contiguity=True, dtype=DataType.Int)
        self.s_float = fd.define_scalar(2.0)
        self.s_int = fd.define_scalar(3)
        self.s_negative = fd.define_scalar(-1)
        self.vec = fd.define_vector([2, 3])


def kind_of(op: str, param: str) -> str:
    if (op, param) in SCALAR_OPERANDS:
        return SCALAR
    if op in POINTWISE:
        return OPERAND
    return KIND_OVERRIDES.get((op, param), PARAM_KINDS[param])


def good_value(op: str, param: str, env: Env):
    kind = kind_of(op, param)
    return {
        TENSOR: lambda: env.t,
        OPERAND: lambda: (
            env.t_int
            if op in INTEGER_OPERANDS
            else env.t_complex
            if op in COMPLEX_OPERANDS
            else env.t
        ),
        SCALAR: lambda: env.s_float if param == "fill_value" else env.s_int,
        LENGTH: lambda: env.s_int,
        VECTOR: lambda: env.vec,
        DIMS: lambda: [1],
        PERMUTATION: lambda: [1, 0],
        BROADCAST_DIMS: lambda: [0, 1],
        DIM: lambda: 1,
        INDEX: lambda: 0,
        INT: lambda: 1,
        BOOL: lambda: False,
        BOOL_LIST: lambda: [False, False, True],
        DTYPE: lambda: DataType.Int if op == "iota" else DataType.Float,
        SHAPE: lambda: list(GOOD_SHAPES[op]),
        INPUT_SHAPE: lambda: list(GOOD_SHAPES[op]),
        BOUNDS: lambda: list(GOOD_BOUNDS[param]),
        PAD_WIDTHS: lambda: [1, 1],
        TENSORS: lambda: [env.t, env.t],
        INDEX_TENSOR: lambda: env.t_int,
        INDEX_VECTOR: lambda: env.t_index1,
        OPTIONAL_SCALAR: lambda: None,
    }[kind]()


def _repeated(good: list[int]) -> list[int]:
    return good + good[:1] if len(good) == 1 else [good[0]] * len(good)


def _first(good, value):
    """``good`` with its first entry replaced by ``value`` (a list), or ``value`` (an int)."""
    return [value, *good[1:]] if isinstance(good, list) else value


@dataclass(frozen=True)
class Row:
    """One kind of bad argument: the parameter kinds it applies to and its value, made from
    the definition's handles and the parameter's good value."""

    label: str
    kinds: frozenset[str]
    make: Callable[[Env, object], object]


INDEX_TENSORS = frozenset({INDEX_TENSOR, INDEX_VECTOR})
ALL = frozenset(set(PARAM_KINDS.values()) | {OPERAND, VECTOR, PERMUTATION, INPUT_SHAPE})
ALL |= INDEX_TENSORS
LISTS = frozenset({*DIM_LISTS, BOOL_LIST, *INT_LISTS, TENSORS})
SHAPES = frozenset({SHAPE, INPUT_SHAPE})
ROWS = [
    Row("a string", ALL, lambda env, good: "1"),
    Row("a Python float", ALL, lambda env, good: 1.5),
    Row(
        "a torch tensor",
        frozenset(
            {TENSOR, OPERAND, SCALAR, VECTOR, *DIM_LISTS, *SHAPES, *INT_LISTS, TENSORS}
            | INDEX_TENSORS
            | {OPTIONAL_SCALAR}
        ),
        lambda env, good: torch.ones(2, 1),
    ),
    Row("a Tensor handle", ALL - {TENSOR, OPERAND} - INDEX_TENSORS, lambda env, good: env.t),
    Row(
        "a Scalar handle",
        frozenset({TENSOR, VECTOR, TENSORS}) | INDEX_TENSORS,
        lambda env, good: env.s_float,
    ),
    # a Float index is taken as nvFuser takes it (its values truncated: Thunder sends one)
    Row("a complex tensor for an index", INDEX_TENSORS, lambda env, good: env.t_complex),
    Row("a Vector handle", frozenset({OPERAND}), lambda env, good: env.vec),
    Row("an int for a list", LISTS | SHAPES, lambda env, good: 1),
    Row(
        "a float entry",
        frozenset({*DIM_LISTS, *SHAPES, *INT_LISTS, TENSORS}),
        lambda env, good: _first(good, 1.5),
    ),
    Row("an int entry for a bool", frozenset({BOOL_LIST}), lambda env, good: _first(good, 0)),
    Row(
        "a dim out of range", frozenset({*DIM_LISTS, DIM, INDEX}), lambda env, good: _first(good, 7)
    ),
    Row(
        "a negative dim out of range",
        frozenset({*DIM_LISTS, DIM, INDEX}),
        lambda env, good: _first(good, -7),
    ),
    Row("a repeated dim", frozenset(DIM_LISTS), lambda env, good: _repeated(good)),
    Row(
        "a wrong count", frozenset({BOOL_LIST, INPUT_SHAPE, *INT_LISTS}), lambda env, good: good[:1]
    ),
    Row("an extent below -1", SHAPES, lambda env, good: _first(good, -2)),
    Row("a -1 extent", SHAPES, lambda env, good: _first(good, -1)),
    Row("a negative length", frozenset({LENGTH}), lambda env, good: env.s_negative),
    Row("a torch dtype", frozenset({DTYPE}), lambda env, good: torch.float32),
]
WRONG_RANK = "a tensor of the wrong rank"


def parameters(op: str) -> list[inspect.Parameter]:
    sig = inspect.signature(getattr(Operators, op))
    return [p for p in sig.parameters.values() if p.name != "self"]


def call(fd, op: str, env: Env, bad: dict[str, object] | None = None):
    """``fd.ops.<op>`` with every parameter given its good value, except those in ``bad``."""
    bad = bad or {}
    args, kwargs = [], {}
    for p in parameters(op):
        value = bad[p.name] if p.name in bad else good_value(op, p.name, env)
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            args.append(value)
        else:
            kwargs[p.name] = value
    return getattr(fd.ops, op)(*args, **kwargs)


def _cases():
    for op in OPS:
        params = parameters(op)
        kinds = {p.name: kind_of(op, p.name) for p in params}
        for p in params:
            for row in ROWS:
                if kinds[p.name] in row.kinds:
                    yield op, p.name, row.label
        tensors = [p.name for p in params if kinds[p.name] == TENSOR]
        if tensors and RANK_BOUND & set(kinds.values()):
            yield op, tensors[0], WRONG_RANK


CASES = list(_cases())
ROW_BY_LABEL = {r.label: r for r in ROWS}


def test_every_operator_is_swept():
    swept = {op for op, _, _ in CASES}
    assert swept == set(OPS) and len(OPS) > 70  # every pointwise row and alias too
    assert {"sum", "var_mean", "welford", "broadcast_in_dim", "iota", "at"} <= swept


@pytest.mark.parametrize("op", OPS, ids=[f"fd.ops.{op}" for op in OPS])
def test_good_call(op):
    """The call every bad call differs from in one argument is accepted."""
    with FusionDefinition() as fd:
        env = Env(fd)
        out = call(fd, op, env)
        fd.add_output(env.t)
    assert out is not None


@pytest.mark.parametrize("op, param, label", CASES, ids=["-".join(c) for c in CASES])
def test_bad_argument(op, param, label):
    fd = FusionDefinition()
    with fd:
        env = Env(fd)
        if label == WRONG_RANK:
            bad = env.t_rank1
        else:
            bad = ROW_BY_LABEL[label].make(env, good_value(op, param, env))
        if label == "a -1 extent" and op in MINUS_ONE_MEANS:
            out = call(fd, op, env, {param: bad})
            assert out._val.static_shape == MINUS_ONE_MEANS[op]
            return
        with pytest.raises(LayoutfuseError) as info:
            call(fd, op, env, {param: bad})
        fd.add_output(env.t)
    message = str(info.value)
    assert op in message
    assert ("rank" if label == WRONG_RANK else param) in message, message
    assert "tensor(" not in message  # a torch tensor is described, never printed
