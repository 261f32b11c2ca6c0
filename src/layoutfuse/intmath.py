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


def power_of_two_factor(n: int) -> int:
    """The power of two (2, 4 or 8) dividing ``n``, where Triton does not know it: 1 for 0,
    1, odd numbers and multiples of 16 (an integer argument Triton specializes itself)."""
    if n in (0, 1) or n % 16 == 0:
        return 1
    f = 1
    while f < 8 and n % (2 * f) == 0:
        f *= 2
    return f


def int32_factor(n: int) -> int:
    """``power_of_two_factor`` of an integer a kernel receives divided by it and multiplies
    back: 1 from 2**31 up, where the quotient may be passed as an int32 (Triton types an
    integer argument by its value) while the product overflows it."""
    return power_of_two_factor(n) if n < 2**31 else 1
