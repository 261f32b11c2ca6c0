"""The bitonic sort of (key, index) pairs that argsort and topk kernels paste after their
imports, where the keys do not pack in one int64 with their index (fp64, int64; see
``packed_keys`` for the keys that do).

Triton 3.6's ``tl.sort`` and ``tl.topk`` sort values alone (no indices, ascending or
descending only, NaN placed by plain comparison): argsort needs the index that goes with
each key, topk its indices and torch's NaN order. So the kernels carry both through a
bitonic network written here: ``log2(N) * (log2(N) + 1) / 2`` compare-exchange steps
over a row padded to ``N`` (a power of two), each step a reshape that puts the two
elements of every compared pair side by side (``tl.split``), a swap, and the way back
(``tl.join``).

The order is total: real elements (index < n) before padding, then by key (NaN the
largest, as torch sorts it; -0.0 equal to 0.0), then by index, so the sort is stable
(ties keep their index order also when descending, as torch's stable sort does).

topk's ``select`` mode reduces a row to its first pair by that order (``_first_desc`` /
``_first_asc``, ``tl.reduce`` combine functions over (key, index) pairs): lanes that do
not take part (padding, earlier picks) carry the index ``SKIP``, which loses to every
other lane.
"""

SORT_PRELUDE = '''
SKIP = tl.constexpr(2147483647)


@triton.jit
def _first(ka, ia, kb, ib, DESCENDING: tl.constexpr):
    """The first of the pairs (ka, ia) and (kb, ib): lanes of index SKIP last, then by key
    (NaN the largest), ties by index."""
    nan_a = ka != ka
    nan_b = kb != kb
    if DESCENDING:
        first = (ka > kb) | (nan_a & (kb == kb))
    else:
        first = (ka < kb) | (nan_b & (ka == ka))
    tie = (ka == kb) | (nan_a & nan_b)
    skip_a = ia == SKIP
    skip_b = ib == SKIP
    a = (skip_b & ~skip_a) | ((skip_a == skip_b) & (first | (tie & (ia < ib))))
    return tl.where(a, ka, kb), tl.where(a, ia, ib)


@triton.jit
def _first_desc(ka, ia, kb, ib):
    return _first(ka, ia, kb, ib, True)


@triton.jit
def _first_asc(ka, ia, kb, ib):
    return _first(ka, ia, kb, ib, False)


@triton.jit
def _sorts_before(ka, ia, kb, ib, n, DESCENDING: tl.constexpr):
    """Whether (ka, ia) comes before (kb, ib): real lanes (index < n) before padding, then
    by key (NaN the largest), ties by index."""
    nan_a = ka != ka
    nan_b = kb != kb
    if DESCENDING:
        first = (ka > kb) | (nan_a & (kb == kb))
    else:
        first = (ka < kb) | (nan_b & (ka == ka))
    tie = (ka == kb) | (nan_a & nan_b)
    real_a = ia < n
    real_b = ib < n
    return (real_a & (ib >= n)) | ((real_a == real_b) & (first | (tie & (ia < ib))))


@triton.jit
def _exchange(key, idx, n, R: tl.constexpr, N: tl.constexpr, DIST: tl.constexpr,
              RUN: tl.constexpr, DESCENDING: tl.constexpr):
    """One compare-exchange step along the last dim of [R, N] tiles: elements DIST apart
    swap where out of order; runs of RUN elements alternate ascending and descending."""
    M: tl.constexpr = N // (2 * DIST)
    ka, kb = tl.split(tl.permute(tl.reshape(key, [R, M, 2, DIST]), [0, 1, 3, 2]))
    ia, ib = tl.split(tl.permute(tl.reshape(idx, [R, M, 2, DIST]), [0, 1, 3, 2]))
    flip = ((((tl.arange(0, M) * (2 * DIST)) // RUN) % 2) == 1)[None, :, None]
    swap = tl.where(
        flip,
        _sorts_before(ka, ia, kb, ib, n, DESCENDING),
        _sorts_before(kb, ib, ka, ia, n, DESCENDING),
    )
    key2 = tl.join(tl.where(swap, kb, ka), tl.where(swap, ka, kb))
    idx2 = tl.join(tl.where(swap, ib, ia), tl.where(swap, ia, ib))
    key = tl.reshape(tl.permute(key2, [0, 1, 3, 2]), [R, N])
    idx = tl.reshape(tl.permute(idx2, [0, 1, 3, 2]), [R, N])
    return key, idx


@triton.jit
def _sort_rows(key, idx, n, R: tl.constexpr, N: tl.constexpr, LOG_N: tl.constexpr,
               DESCENDING: tl.constexpr):
    """Sort each row of the [R, N] tiles ``key`` (with ``idx``) by ``_sorts_before``."""
    for stage in tl.static_range(1, LOG_N + 1):
        for step in tl.static_range(stage):
            key, idx = _exchange(
                key, idx, n, R, N, 1 << (stage - 1 - step), 1 << stage, DESCENDING
            )
    return key, idx
'''
