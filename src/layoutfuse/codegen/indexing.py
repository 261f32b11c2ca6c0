"""Index arithmetic shared by the kernel templates."""

from __future__ import annotations


def offset_expr(terms: list[tuple[str, int | str]], zero: str = "0") -> str:
    """``sum(index * stride)``; ``stride`` is 1 (no multiply) or a kernel argument name.
    ``zero`` is what an access with no term gets (a zero tile, so pointers keep a shape)."""
    parts = [idx if s == 1 else f"{idx} * {s}" for idx, s in terms]
    return " + ".join(parts) if parts else zero


def decompose(w, flat: str, sizes: list[str], prefix: str) -> list[str]:
    """Split the flat index ``flat`` over ``sizes`` (fastest first) into per-group indices."""
    if len(sizes) == 1:
        return [flat]
    out = []
    rest = flat
    for k, n in enumerate(sizes):
        if k == len(sizes) - 1:
            out.append(w.assign(prefix, rest))
        else:
            out.append(w.assign(prefix, f"{rest} % {n}"))
            rest = w.assign(prefix, f"{rest} // {n}")
    return out


def next_pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p
