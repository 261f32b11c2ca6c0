"""Every error layoutfuse raises on purpose derives from :class:`LayoutfuseError`.

Messages name the thing that is wrong (the input's position or the op), the dim,
and the expected and actual values, so that a user can fix the call without
reading layoutfuse's source. A message describes a tensor or an array by its type,
shape, dtype, strides and device (:func:`describe`), never by its values.
"""

import sys


class LayoutfuseError(Exception):
    """Base class of every deliberate layoutfuse error."""


class DefinitionError(LayoutfuseError, ValueError):
    """A fusion definition is malformed: bad dim, permutation, shape, dtype or argument."""


class ArgumentTypeError(DefinitionError, TypeError):
    """A definition call got an argument of the wrong type (a string where a tensor goes, a
    float where an int goes, a tensor where a dims list goes); the message names the call,
    the argument, what it takes and what it got."""


class InputError(LayoutfuseError, ValueError):
    """An argument passed to ``execute`` does not match the fusion's declared inputs."""


class InputListError(InputError, TypeError):
    """``execute`` was given something other than a list or tuple of inputs."""


class InputCountError(InputError):
    """Wrong number of inputs."""


class InputRankError(InputError):
    """An input tensor has the wrong rank."""


class InputDtypeError(InputError, TypeError):
    """An input tensor or scalar has the wrong dtype."""


class InputDeviceError(InputError):
    """An input tensor lives on the wrong device."""


class InputShapeError(InputError):
    """An input tensor's size disagrees with a static extent or a broadcast dim."""


class InputLayoutError(InputError):
    """An input tensor's strides contradict its declared allocation domain or contiguity."""


class UnsupportedError(LayoutfuseError, NotImplementedError):
    """The fusion uses something layoutfuse does not support (yet); the message says what."""


class SchedulingError(LayoutfuseError, RuntimeError):
    """No scheduler accepted a segment; the message lists every scheduler's reason."""


class KernelCacheError(LayoutfuseError, PermissionError):
    """The kernel cache directory, or a kernel file in it, is not private to the user: group
    or others may write it, or another user owns it. Code from it is never run."""


class KernelCacheWarning(UserWarning):
    """A kernel cache entry was damaged or foreign and was rewritten, or the cache directory
    could not be written and a private temporary directory is used instead."""


_MAX_REPR = 60  # characters of a value's repr that a message shows
_MAX_ITEMS = 8  # elements of a list or tuple that a message shows


def describe(x: object) -> str:
    """``x`` as an error message shows it: a tensor or an array by type, shape, dtype, strides
    and device, never its values; a list or tuple element by element (the first few); any
    other value by type and a short repr (``int 1``, ``str 'yes'``)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _describe_tensor(x)
    if _is_array(x) and x.shape != ():  # numpy scalars print as numbers
        strides = getattr(x, "strides", None)
        text = f"shape={list(x.shape)}, dtype={x.dtype}"
        return f"{type(x).__module__}.{type(x).__name__}({text}" + (
            f", strides={list(strides)} bytes)" if strides is not None else ")"
        )
    if isinstance(x, list | tuple):
        items = [_item(v) for v in x[:_MAX_ITEMS]] + (["..."] if len(x) > _MAX_ITEMS else [])
        body = ", ".join(items) + ("," if isinstance(x, tuple) and len(x) == 1 else "")
        return f"{type(x).__name__} " + ("[{}]" if isinstance(x, list) else "({})").format(body)
    text = _short_repr(x)
    if text.startswith(type(x).__name__):
        return text  # Scalar(index=3), DataType.Float
    module = type(x).__module__
    own = module == "builtins" or module.split(".")[0] == "layoutfuse"
    name = type(x).__name__ if own else f"{module}.{type(x).__qualname__}"
    return f"{name} {text}"  # int 1, str 'yes', torch.dtype ...


def _describe_tensor(x) -> str:
    try:
        strides = list(x.stride())
    except RuntimeError:  # sparse and other layouts without strides
        strides = None
    return (
        f"torch.Tensor(shape={list(x.shape)}, dtype={x.dtype}, strides={strides}, "
        f"device={x.device})"
    )


def _is_array(x: object) -> bool:
    """An array of another library (numpy, ...): a tuple ``shape`` and a ``dtype``."""
    return isinstance(getattr(x, "shape", None), tuple) and hasattr(x, "dtype")


def _item(x: object) -> str:
    """One element of a described list: numbers and strings as their repr."""
    if isinstance(x, bool | int | float | complex | str) or x is None:
        return _short_repr(x)
    return describe(x)


def _short_repr(x: object) -> str:
    text = repr(x)
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."
