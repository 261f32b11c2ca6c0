"""layoutfuse.errors: the hierarchy callers catch, and how messages describe values (a tensor
by shape, dtype, strides and device, never its values)."""

import numpy as np
import pytest
import torch

from layoutfuse.dtypes import DataType
from layoutfuse.errors import (
    ArgumentTypeError,
    DefinitionError,
    InputError,
    InputListError,
    LayoutfuseError,
    describe,
)


@pytest.mark.parametrize(
    "cls, bases",
    [
        (ArgumentTypeError, (DefinitionError, LayoutfuseError, ValueError, TypeError)),
        (InputListError, (InputError, LayoutfuseError, ValueError, TypeError)),
    ],
)
def test_hierarchy(cls, bases):
    assert all(issubclass(cls, b) for b in bases)


def test_a_tensor_is_described_not_printed():
    x = torch.arange(12.0).reshape(3, 4).t()
    assert describe(x) == (
        f"torch.Tensor(shape=[4, 3], dtype=torch.float32, strides=[1, 4], device={x.device})"
    )


def test_an_array_is_described_not_printed():
    a = np.arange(1000, dtype=np.int32).reshape(10, 100)
    assert describe(a) == "numpy.ndarray(shape=[10, 100], dtype=int32, strides=[400, 4] bytes)"
    assert describe(np.float32(1.5)) == "numpy.float32 np.float32(1.5)"


@pytest.mark.parametrize(
    "value, text",
    [
        (1, "int 1"),
        ("yes", "str 'yes'"),
        (None, "NoneType None"),
        (DataType.Float, "DataType.Float"),
        (torch.float16, "torch.dtype torch.float16"),
        ([0, 2.5, "a"], "list [0, 2.5, 'a']"),
        ((1,), "tuple (1,)"),
        (list(range(20)), "list [0, 1, 2, 3, 4, 5, 6, 7, ...]"),
        ("x" * 100, "str '" + "x" * 56 + "..."),
    ],
)
def test_other_values(value, text):
    assert describe(value) == text


def test_a_list_holding_a_tensor_describes_the_tensor():
    x = torch.ones(500)
    assert describe([1, x]) == (
        f"list [1, torch.Tensor(shape=[500], dtype=torch.float32, strides=[1], device={x.device})]"
    )
