"""Every error layoutfuse raises on purpose derives from :class:`LayoutfuseError`.

Messages name the thing that is wrong (the input's position or the op), the dim,
and the expected and actual values, so that a user can fix the call without
reading layoutfuse's source.
"""


class LayoutfuseError(Exception):
    """Base class of every deliberate layoutfuse error."""


class DefinitionError(LayoutfuseError, ValueError):
    """A fusion definition is malformed: bad dim, permutation, shape, dtype or argument."""


class InputError(LayoutfuseError, ValueError):
    """An argument passed to ``execute`` does not match the fusion's declared inputs."""


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
