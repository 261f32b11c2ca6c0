"""Integer helpers shared by every stage (a leaf module: it imports nothing of layoutfuse)."""

from __future__ import annotations

from collections.abc import Iterable


def next_pow2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    p = 1
    while p < n:
        p *= 2
    return p


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for non-negative ``a`` and positive ``b``."""
    return -(-a // b)


def prod(values: Iterable[int]) -> int:
    """The product of ``values`` (1 when empty)."""
    p = 1
    for v in values:
        p *= v
    return p
