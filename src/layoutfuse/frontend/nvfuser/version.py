"""``version()``: the nvFuser API version this frontend matches, comparable like a version.

Thunder reads it with ``LooseVersion(nvfuser.version())``; it requires >= 0.2.23
for the legacy API and switches to ``nvfuser_direct`` at 0.2.28 (0.2.34 fully),
so a legacy-only drop-in reports a version in [0.2.23, 0.2.28).
"""

from __future__ import annotations

import re

NVFUSER_API_VERSION = "0.2.23"


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


def version() -> Version:
    return Version(NVFUSER_API_VERSION)
