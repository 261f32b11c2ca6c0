"""A generated kernel as a value: what codegen hands the runtime."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kernel:
    """One Triton kernel: its source, the names of its runtime arguments in declaration
    order (the runtime binds values to them by name), its constexpr values and warps, and
    the scheduler params the source was generated from (every field of which shapes it)."""

    name: str
    source: str
    arg_names: tuple[str, ...]
    constexprs: tuple[tuple[str, int], ...]
    num_warps: int
    params: Any

    def meta(self) -> dict[str, int]:
        """The launch's keyword arguments: the constexprs and ``num_warps``."""
        return {**dict(self.constexprs), "num_warps": self.num_warps}
