"""Index arithmetic shared by the kernel templates."""

from __future__ import annotations

from ..intmath import next_pow2

__all__ = ["decompose", "next_pow2", "offset_expr", "one_write_per_element"]


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


def one_write_per_element(
    w, mask: str, zero_stride_indices: list[str], guard: str | None = None
) -> str:
    """A store's mask: ``mask`` narrowed to index 0 along the groups where the store's
    stride is 0 (an expanded output dim), so every memory element is written once.
    ``guard`` is a further condition (a store that walks its chain, see generic_index)."""
    conds = [f"({i} == 0)" for i in zero_stride_indices] + ([guard] if guard else [])
    if not conds:
        return mask
    return w.assign("smask", " & ".join([mask] + conds))
