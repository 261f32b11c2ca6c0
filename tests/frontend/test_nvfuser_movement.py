"""fd.ops.slice, pad, cat and select in nvFuser's argument forms: keyword names and
defaults, the printed definition (it re-executes to the same results), argument errors."""

import pytest
import torch

from layoutfuse.errors import (
    ArgumentTypeError,
    DefinitionError,
    InputShapeError,
    UnsupportedError,
)
from layoutfuse.nvfuser import DataType, FusionDefinition


def movement(fd):
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    i = fd.define_scalar(dtype=DataType.Int)
    s = fd.ops.slice(t0, start_indices=[1, 0], end_indices=[-1, 6], strides=[2, 3])
    p = fd.ops.pad(t1, [1, -1], fd.define_scalar(0.5))
    c = fd.ops.cat([s, fd.ops.slice(p, [0, 0], [3, 2])], dim=0)
    fd.add_output(c)
    fd.add_output(fd.ops.select(t0, i, dim=1))
    fd.add_output(fd.ops.select(t1, -1, 0))


def _reference(x, y, i):
    p = torch.nn.functional.pad(y, [1, -1], value=0.5)
    return [torch.cat([x[1:-1:2, 0:6:3], p[0:3, 0:2]], 0), x.select(1, i), y.select(0, -1)]


def test_movement_ops_execute_and_print_an_executable_definition():
    with FusionDefinition() as fd:
        movement(fd)
    text = repr(fd)
    for call in ("fd.ops.slice(", "fd.ops.pad(", "fd.ops.cat(", "fd.ops.select("):
        assert call in text
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace[f"nvfuser_fusion_id{fd.id()}"](again)
    assert repr(again) == text
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(7, 6, generator=g), torch.randn(5, 2, generator=g)
    for f in (fd, again):
        outs = f.execute([x, y, 2])
        for out, ref in zip(outs, _reference(x, y, 2)):
            torch.testing.assert_close(out, ref)


def test_slice_default_strides_and_manual_normalization():
    x = torch.randn(6, 4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.slice(t, [1, 1], [5, 3], manual_normalization=True))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x[1:5, 1:3])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda fd, t: fd.ops.slice(t, [0], [1, 1]), DefinitionError, "rank 2"),
        (lambda fd, t: fd.ops.slice(t, [0, 0], [1, 1], [0, 1]), DefinitionError, "positive"),
        (lambda fd, t: fd.ops.slice(t, 0, [1, 1]), ArgumentTypeError, "start_indices"),
        (
            lambda fd, t: fd.ops.pad(t, [fd.define_scalar(dtype=DataType.Double), 0]),
            ArgumentTypeError,
            "must be integral",
        ),
        (lambda fd, t: fd.ops.pad(t, [1, 1, 1]), DefinitionError, "even number"),
        (lambda fd, t: fd.ops.pad(t, [1, 1, 1, 1, 1, 1]), DefinitionError, "at most"),
        (lambda fd, t: fd.ops.cat([], 0), ArgumentTypeError, "non-empty"),
        (lambda fd, t: fd.ops.cat([t, t], 2), DefinitionError, "out of range"),
        (lambda fd, t: fd.ops.select(t, 0, 2), DefinitionError, "out of range"),
        (lambda fd, t: fd.ops.select(t, 1.5, 0), ArgumentTypeError, "index"),
    ],
)
def test_argument_errors(call, error, match):
    with pytest.raises(error, match=match):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
            call(fd, t)


def test_slice_with_runtime_bounds():
    """Runtime start and stop Scalars: normalized on the host for each run (negative counts
    from the end, clamped), the start a kernel argument."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s0 = fd.define_scalar(dtype=DataType.Int)
        e0 = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.mul(fd.ops.slice(t, [s0, 1], [e0, 5], [2, 1]), t.size(0)))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(9, 6, generator=g)
    for start, stop in [(1, 8), (-4, -1), (-20, 20), (6, 2), (0, 9)]:
        (out,) = fd.execute([x, start, stop])
        torch.testing.assert_close(out, x[start:stop:2, 1:5] * 9)


def test_pad_with_runtime_widths():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        lo = fd.define_scalar(dtype=DataType.Int)
        hi = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.pad(t, [lo, hi, 1, 0], fd.define_scalar(4.0)))
    x = torch.randn(3, 5)
    for a, b in [(2, 1), (-2, 3), (0, -4), (-1, -1)]:
        (out,) = fd.execute([x, a, b])
        torch.testing.assert_close(out, torch.nn.functional.pad(x, [a, b, 1, 0], value=4.0))
    with pytest.raises(InputShapeError, match="padded by"):
        fd.execute([x, -4, -3])


def test_runtime_slice_step_is_unsupported():
    with pytest.raises(UnsupportedError, match="steps must be static"):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
            fd.ops.slice(t, [0], [4], [fd.define_scalar(dtype=DataType.Int)])
