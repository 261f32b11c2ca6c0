"""``version()``: the nvFuser API version this frontend matches, comparable like a version.

Thunder reads it with ``LooseVersion(nvfuser.version())`` (in every op checker), requires
>= 0.2.23 for the legacy API and enables translations by version: a version is only
right to report once every op Thunder calls behind it exists in ``fd.ops``. ``GATES`` is
that table (read from Thunder 0.2.6's ``thunder/executors/nvfuserex_impl.py``), and
``version()`` is the highest gate whose requirements, and those of every gate below it,
layoutfuse meets, so it rises by itself as ops land. From 0.2.28 Thunder also imports
``nvfuser_direct`` (0.2.34: only that), which layoutfuse does not provide: the version
stays below 0.2.28 until it does.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache

MODULES_PROVIDED: frozenset[str] = frozenset()
"""Modules besides ``nvfuser`` that layoutfuse provides a drop-in for (none yet)."""


@dataclass(frozen=True)
class Gate:
    """What Thunder needs of a backend that reports ``version``: operators it may call
    (``fd.ops`` names), ``DataType`` members it reads when it imports, other modules it
    imports; ``uses``: the translations the version turns on."""

    version: str
    uses: str
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()


GATES: tuple[Gate, ...] = (
    Gate("0.2.23", "the legacy frontend and execute(_enable_options=...): Thunder's floor"),
    Gate("0.2.25", "embedding (index_select, embedding_fwd with padding_idx and the rest)",
         ops=("index_select", "embedding_fwd")),
    Gate("0.2.27", "SDPA with torch >= 2.7 (behind nv_enable_sdpa); uint64 tensors",
         ops=("sdpfa_fwd", "sdpfa_bwd"), dtypes=("UInt64",)),
    Gate("0.2.28", "grouped_mm; DTensor fusions through nvfuser_direct; fp4 (e2m1 x2) tensors",
         ops=("grouped_mm",), dtypes=("Float4_e2m1fn_x2",), modules=("nvfuser_direct",)),
    Gate("0.2.31", "scatter with a scalar source (below it, a full() workaround)",
         ops=("scatter",)),
    Gate("0.2.33", "cumsum of any rank (below it, 1-D cumsum as triu and matmul)",
         ops=("cumsum",)),
    Gate("0.2.34", "the direct bindings only (nvfuser_direct.FusionDefinition)",
         modules=("nvfuser_direct",)),
)  # fmt: skip


def missing(
    gate: Gate, ops: Collection[str], dtypes: Collection[str], modules: Collection[str]
) -> list[str]:
    """What ``gate`` needs that is not there (``fd.ops.X``, ``DataType.X``, ``module X``)."""
    return (
        [f"fd.ops.{n}" for n in gate.ops if n not in ops]
        + [f"DataType.{n}" for n in gate.dtypes if n not in dtypes]
        + [f"module {n}" for n in gate.modules if n not in modules]
    )


def supported_version(
    ops: Collection[str], dtypes: Collection[str], modules: Collection[str] = MODULES_PROVIDED
) -> str:
    """The highest gate's version whose needs, and every lower gate's, are met."""
    best = GATES[0].version
    for gate in GATES[1:]:
        if missing(gate, ops, dtypes, modules):
            break
        best = gate.version
    return best


def operator_names() -> frozenset[str]:
    """The names ``fd.ops`` answers (every public attribute of ``Operators``)."""
    from .ops_namespace import Operators

    return frozenset(n for n in dir(Operators) if not n.startswith("_"))


def _release(text: str) -> tuple[int, ...]:
    """The numeric release of ``m.n.p[+local]``; a trailing ``+git...`` is ignored."""
    base = str(text).split("+", 1)[0]
    parts = [int(m) for m in re.findall(r"\d+", base)]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


class Version(str):
    """A str whose comparisons compare release numbers: ``version() >= "0.2.8"``."""

    def _key(self, other) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        if not isinstance(other, str):
            return None
        return _release(self), _release(other)

    def __eq__(self, other):
        k = self._key(other)
        return NotImplemented if k is None else k[0] == k[1]

    def __ne__(self, other):
        k = self._key(other)
        return NotImplemented if k is None else k[0] != k[1]

    def __lt__(self, other):
        k = self._key(other)
        return NotImplemented if k is None else k[0] < k[1]

    def __le__(self, other):
        k = self._key(other)
        return NotImplemented if k is None else k[0] <= k[1]

    def __gt__(self, other):
        k = self._key(other)
        return NotImplemented if k is None else k[0] > k[1]

    def __ge__(self, other):
        k = self._key(other)
        return NotImplemented if k is None else k[0] >= k[1]

    def __hash__(self) -> int:
        return hash(_release(self))


@cache
def version() -> Version:
    """The version Thunder gates on: ``supported_version`` of this build's ``fd.ops`` and
    ``DataType`` (computed once; Thunder asks in every op checker)."""
    from ...dtypes import DataType

    return Version(supported_version(operator_names(), DataType.__members__))
