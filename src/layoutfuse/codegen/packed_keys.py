"""Sort keys packed with their index in one integer: the jit helpers that argsort and topk
kernels paste after their imports when the key has at most 32 bits (``ScanParams.packed``:
the packed key's width, 64 or 32).

A packed key orders (value, index) pairs by one signed compare:

* the high half: the value's order ``s``, a signed integer whose order is the value's
  (``_float_order``: a float's bits, the negative ones' magnitude bits flipped; every
  NaN the largest, as torch sorts it; -0.0 and 0.0 one key, so they tie and keep their
  index order, as torch's stable sort does; ints and bools as they are), complemented
  for a descending sort or a largest topk (``~s`` reverses the order and keeps it
  exact), so the result's order is always ascending;
* the low half (``LOW_BITS``): the element's index in its row, shifted left once, with
  the lowest bit set for a -0.0 (it never decides an order: indices differ), so ties
  come out lower index first in both directions and the value comes back exactly
  (``_float_of``; a NaN as the canonical NaN).

An int64 holds the order of any value of at most 32 bits (an fp32's in 32 bits) and an
index below 2**31. An int32 holds that of a value of at most 16 bits (Half, BFloat16,
fp8 through Half, Bool: ``_half_order``, in 16 bits) and an index below 2**15: half the
registers and shuffles of a sort, and a compare-exchange is a native 32-bit min and max.

Lanes that do not take part (padding past the row, a topk's earlier picks) hold
``PACKED_LAST``, after every real key. The bitonic network (``_sort_packed``) then
sorts one tensor with a min and a max per compare-exchange, and a topk pass is one
``tl.min``.
"""

# the low half's bits and the key past every real one, by the packed key's width
_LAYOUT = {64: (32, 0x7FFFFFFFFFFFFFFF), 32: (16, 0x7FFFFFFF)}

_HELPERS = '''

@triton.jit
def _float_order(x):
    """An int32 whose signed order is fp32 ``x``'s: -0.0 and 0.0 one key, NaN the largest
    (zeros and NaNs told by their bits: no float compare that might flush a denormal)."""
    b = x.to(tl.int32, bitcast=True)
    magnitude = b & 0x7FFFFFFF
    s = b ^ ((b >> 31) & 0x7FFFFFFF)
    s = tl.where(magnitude == 0, 0, s)
    return tl.where(magnitude > 0x7F800000, 0x7FFFFFFF, s)


@triton.jit
def _float_of(s, negative_zero):
    """The fp32 of order ``s`` (``_float_order``'s inverse), -0.0 where ``negative_zero``."""
    b = s ^ ((s >> 31) & 0x7FFFFFFF)
    b = b | (negative_zero.to(tl.int32) << 31)
    return b.to(tl.float32, bitcast=True)


@triton.jit
def _half_order(x, HALF: tl.constexpr):
    """An int32 in 16 bits whose signed order is ``x``'s (fp32, a value of the 16-bit float
    ``HALF``: tl.float16 or tl.bfloat16), as ``_float_order`` orders an fp32."""
    b = x.to(HALF).to(tl.int16, bitcast=True).to(tl.int32)
    magnitude = b & 0x7FFF
    s = b ^ ((b >> 15) & 0x7FFF)
    s = tl.where(magnitude == 0, 0, s)
    infinity: tl.constexpr = 0x7F80 if HALF == tl.bfloat16 else 0x7C00
    return tl.where(magnitude > infinity, 0x7FFF, s)


@triton.jit
def _half_of(s, negative_zero, HALF: tl.constexpr):
    """The value (fp32) of ``_half_order``'s order ``s``, -0.0 where ``negative_zero``."""
    b = s ^ ((s >> 15) & 0x7FFF)
    b = b | (negative_zero.to(tl.int32) << 15)
    return b.to(tl.int16).to(HALF, bitcast=True).to(tl.float32)


@triton.jit
def _negative_zero(x):
    """Whether fp32 ``x`` is -0.0 (its key is 0.0's)."""
    return x.to(tl.int32, bitcast=True) == -2147483648


@triton.jit
def _pack(s, low, real, DESCENDING: tl.constexpr):
    """The key of order ``s`` (int32) and low half ``low`` (index * 2 + the -0.0 bit);
    ``PACKED_LAST`` where not ``real``."""
    if DESCENDING:
        s = ~s
    if LOW_BITS == 32:
        key = (s.to(tl.int64) << 32) | low.to(tl.int64)
    else:
        key = (s << LOW_BITS) | low.to(tl.int32)
    return tl.where(real, key, PACKED_LAST)


@triton.jit
def _order_of(key, DESCENDING: tl.constexpr):
    """The order ``s`` (int32) a key was packed from."""
    s = (key >> LOW_BITS).to(tl.int32)
    if DESCENDING:
        s = ~s
    return s


@triton.jit
def _index_of(key):
    """The index in its row a key was packed from."""
    return (key >> 1) & INDEX_MASK


@triton.jit
def _exchange_packed(key, R: tl.constexpr, N: tl.constexpr, DIST: tl.constexpr,
                     RUN: tl.constexpr):
    """One compare-exchange step along the last dim of the [R, N] keys: elements DIST apart
    swap where out of order; runs of RUN elements alternate ascending and descending."""
    M: tl.constexpr = N // (2 * DIST)
    ka, kb = tl.split(tl.permute(tl.reshape(key, [R, M, 2, DIST]), [0, 1, 3, 2]))
    flip = ((((tl.arange(0, M) * (2 * DIST)) // RUN) % 2) == 1)[None, :, None]
    lo = tl.minimum(ka, kb)
    hi = tl.maximum(ka, kb)
    key = tl.join(tl.where(flip, hi, lo), tl.where(flip, lo, hi))
    return tl.reshape(tl.permute(key, [0, 1, 3, 2]), [R, N])


@triton.jit
def _sort_packed(key, R: tl.constexpr, N: tl.constexpr, LOG_N: tl.constexpr):
    """Each row of the [R, N] keys in ascending order."""
    for stage in tl.static_range(1, LOG_N + 1):
        for step in tl.static_range(stage):
            key = _exchange_packed(key, R, N, 1 << (stage - 1 - step), 1 << stage)
    return key
'''


def packed_prelude(bits: int) -> str:
    """The helpers of keys packed in ``bits`` (64 or 32), after the layout's constants."""
    low, last = _LAYOUT[bits]
    constants = {"LOW_BITS": low, "INDEX_MASK": (1 << (low - 1)) - 1, "PACKED_LAST": last}
    lines = [f"{name} = tl.constexpr({hex(value)})" for name, value in constants.items()]
    return "\n" + "\n".join(lines) + "\n" + _HELPERS
