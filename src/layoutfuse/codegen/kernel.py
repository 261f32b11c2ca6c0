"""A generated kernel as a value: what codegen hands the runtime."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kernel:
    """One Triton kernel: its source, the names of its runtime arguments in declaration
    order (the runtime binds values to them by name), its constexpr values and warps, and
    the scheduler params the source was generated from (every field of which shapes it);
    ``launch_pdl``: launched as a programmatic dependent of the launch before it (Triton's
    compile option of that name; the kernel waits for that launch in ``gdc_wait``)."""

    name: str
    source: str
    arg_names: tuple[str, ...]
    constexprs: tuple[tuple[str, int], ...]
    num_warps: int
    params: Any
    launch_pdl: bool = False

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
        """The launch's keyword arguments: the constexprs, ``num_warps`` (and
        ``launch_pdl`` where set)."""
        pdl = {"launch_pdl": True} if self.launch_pdl else {}
        return {**dict(self.constexprs), "num_warps": self.num_warps, **pdl}
