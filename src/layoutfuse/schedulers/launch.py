"""What a scheduler hands the runtime besides its params: per kernel, the grid and the
launch-time integer arguments (``LaunchSpec``), and the scratch buffers it needs
(``Workspace``). Pure values: the runtime allocates, binds by name and launches."""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import DataType


@dataclass(frozen=True)
class LaunchSpec:
    """One launch of a scheduled segment's kernel number ``kernel``: its grid and the
    integer arguments that depend on the run's extents (``NUM_PX``, ``CHUNK``, ...)."""

    kernel: int
    grid: tuple[int, ...]
    values: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Workspace:
    """A scratch buffer named ``name`` in the kernels' arguments; ``zeroed``: allocated
    zeroed once and kept (the kernels leave it zeroed: split-reduction tickets, a chained
    scan's counter and handed-on words)."""

    name: str
    shape: tuple[int, ...]
    dtype: DataType
    zeroed: bool = False
