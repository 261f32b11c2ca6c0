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

    def readable(self) -> str:
        """The source with the kernel itself first (its header comment, then the
        ``@triton.jit`` function), followed by the imports and helpers it uses."""
        lines = self.source.splitlines(keepends=True)
        start = next(
            (i for i, line in enumerate(lines) if line.startswith("# ") and ("kernel" in line)),
            None,
        )
        if start is None:
            return self.source
        helpers = "".join(lines[:start]).rstrip() + "\n"
        return (
            "".join(lines[start:]).rstrip() + "\n\n\n# --- the imports and helpers "
            f"{self.name} uses ---\n" + helpers
        )

    def meta(self) -> dict[str, int]:
        """The launch's keyword arguments: the constexprs and ``num_warps``."""
        return {**dict(self.constexprs), "num_warps": self.num_warps}
