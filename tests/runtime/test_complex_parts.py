"""Complex arguments as views of their parts (``runtime/complex_parts.py``), and the replay
plans of fusions with complex values: a later call with the same signature replays the
launches on the parts of its own tensors (no copy, no new planning)."""

from __future__ import annotations

import pytest
import torch

from layoutfuse.errors import InputLayoutError
from layoutfuse.nvfuser import DataType, FusionDefinition
from layoutfuse.runtime.complex_parts import tensor_parts
from support.execution import INTERPRETER_WARNINGS

pytestmark = [*INTERPRETER_WARNINGS, pytest.mark.usefixtures("kernel_cache_in_tmp")]


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_parts_are_views_with_doubled_strides(dtype):
    x = torch.randn(6, 10, dtype=dtype).t()[1:, ::2]
    re, im = tensor_parts(x, "x")
    assert re.stride() == im.stride() == tuple(2 * s for s in x.stride())
    assert im.data_ptr() - re.data_ptr() == re.element_size()
    assert torch.equal(re, x.real) and torch.equal(im, x.imag)
    with pytest.raises(InputLayoutError, match="conjugate"):
        tensor_parts(x.conj(), "x")


def definition(x, y):
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        s = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.mul(fd.ops.add(a, b), s))
        fd.add_output(fd.ops.abs(a))
        fd.add_output(fd.ops.sum(a, dims=[0]))
    return fd


def test_replay_binds_the_parts_of_each_call():
    def draw(seed):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(6, 10, dtype=torch.complex64, generator=g).t()
        return x, torch.randn(10, 6, dtype=torch.complex64, generator=g)

    fd = definition(*draw(0))
    for k in range(3):
        x, y = draw(k)
        prod, mag, total = fd.execute([x, y, float(k + 1)])
        torch.testing.assert_close(prod, (x + y) * (k + 1))
        torch.testing.assert_close(mag, x.abs())
        torch.testing.assert_close(total, x.sum(0))
        assert mag.stride() == (1, 10)  # the column-major input's order
    assert fd.executor().planned_runs == 1  # the second and third calls replayed
    with pytest.raises(InputLayoutError, match="conjugate"):
        fd.execute([x.conj(), y, 1.0])


def test_complex_scalar_input_is_planned_each_call():
    """A complex scalar is two real kernel arguments the plan cannot read: no plan."""
    x = torch.randn(4, 5, dtype=torch.complex128)
    with FusionDefinition() as fd:
        fd.add_output(
            fd.ops.mul(fd.from_pytorch(x), fd.define_scalar(dtype=DataType.ComplexDouble))
        )
    for k in range(2):
        (out,) = fd.execute([x, 1j * (k + 1)])
        torch.testing.assert_close(out, x * 1j * (k + 1))
    assert fd.executor().planned_runs == 2
