"""Randomized benchmark cases: problems drawn from a documented distribution, so that the
heuristics are measured on shapes nobody tuned for.

``python -m benchmarks suite random --seed N --cases K`` draws K cases with
``random.Random(N)``; without ``--seed`` a new seed is drawn and printed. The same seed
and device class always give the same cases.

The distribution (each case independently):

- **kind**: reduction 35% (``sum``, ``max``, ``var_mean``), normalization 30%
  (``softmax``, ``log_softmax``, ``layernorm``, ``rmsnorm``), pointwise 35% (``copy``
  into another memory order, i.e. a transpose; ``add`` of two inputs, the second
  possibly broadcast; ``chain``, ``tanh(x / 2) * x + 1``).
- **shape family**: ``model`` 30% (tokens x hidden, ``[T, H]`` or ``[B, S, H]``, H from
  768 to 8192), ``vocab`` 15% (rows of 32000, 50257 or 128256), ``activation`` 15%
  (``[N, C, H, W]`` with C in 3..512 and H = W in 7..224, NCHW or NHWC in memory),
  ``free`` 40% (rank 2 to 4, each extent a prime, an odd size, a power of two, a size of
  1 or a large extent).
- **size**: the total input bytes (of the views) drawn log-uniform in ``[1 MB, 2 GB]`` on CUDA
  (``[1 KB, 64 KB]`` on the CPU, where the interpreter runs the kernels); the family's
  free dim (tokens, batch, rows; in ``free`` the largest dim) is scaled to reach it, then
  the largest dims are halved while the total is over the bound.
- **memory order**: a random permutation (``activation``: NCHW 40%, NHWC 40%, random 20%).
- **inputs**: sliced 15% (``x[start::step]`` along a random dim, step 1 to 3, start 0 to
  2), an expanded (broadcast) dim 10% (the last input's, for ``add`` the bias-like
  operand).
- **dtype**: fp32 40%, bf16 40%, fp16 20%.
- **dims**: reductions take a random non-empty subset of the dims (all of them
  included); normalizations one dim, the innermost in memory half of the time.
- **output**: reductions and ``add``/``chain`` leave the layout to the system (50%) or pin
  a random order; ``copy`` pins an order other than the input's.
"""

from __future__ import annotations

import math
import random

from benchmarks.cases import Case, dims_tag, order_tag

REDUCTIONS = ("sum", "max", "var_mean")
NORMALIZATIONS = ("softmax", "log_softmax", "layernorm", "rmsnorm")
POINTWISE = ("copy", "add", "chain")
HIDDEN = (768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192)
VOCAB = (32000, 50257, 128256)
CHANNELS = (3, 16, 64, 96, 128, 256, 512)
SPATIAL = (7, 14, 28, 56, 112, 224)
PRIMES = (3, 7, 13, 31, 61, 127, 251, 509, 1021, 2039, 4093, 8191, 16381, 65521)
DTYPES = (("float32", 0.4), ("bfloat16", 0.4), ("float16", 0.2))
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
# total input bytes, log-uniform between these
BYTES = {"cuda": (1 << 20, 2 << 30), "cpu": (1 << 10, 64 << 10)}


def draw_cases(seed: int, count: int, device: str = "cuda") -> list[Case]:
    rng = random.Random(seed)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    return [_draw(rng, seed, i, kind) for i in range(count)]


def _weighted(rng: random.Random, options):
    values, weights = zip(*options)
    return rng.choices(values, weights)[0]


def _draw(rng: random.Random, seed: int, index: int, device: str) -> Case:
    op = _weighted(rng, [(REDUCTIONS, 0.35), (NORMALIZATIONS, 0.30), (POINTWISE, 0.35)])
    op = rng.choice(op)
    dtype = _weighted(rng, DTYPES)
    family = _weighted(rng, [("model", 0.3), ("vocab", 0.15), ("activation", 0.15), ("free", 0.4)])
    shape, free_dim, order = _family_shape(rng, family)
    n_inputs = 2 if op == "add" else 1
    lo, hi = BYTES[device]
    target = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    per_elem = n_inputs * ITEMSIZE[dtype]
    shape = _scaled(shape, free_dim, target / per_elem, hi / per_elem)
    rank = len(shape)
    if order is None:
        order = tuple(rng.sample(range(rank), rank))
    dims = _dims(rng, op, rank, order)
    out_order = _out_order(rng, op, rank, dims, order)
    slice_ = None
    if rng.random() < 0.15:
        d = rng.randrange(rank)
        slice_ = (d, rng.randrange(3), rng.randint(1, 3))
        if slice_[1:] == (0, 1):
            slice_ = (d, 1, 1)  # a plain offset: still a strided view of a larger tensor
    expand = rng.randrange(rank) if rng.random() < 0.10 and op != "copy" else None
    group = {**dict.fromkeys(REDUCTIONS, "reduction"), **dict.fromkeys(NORMALIZATIONS, "norm")}
    name = "_".join(
        [
            f"r{seed}",
            f"{index:03d}",
            op,
            dtype,
            "x".join(map(str, shape)),
            order_tag(order),
            *([f"d{dims_tag(dims)}"] if dims else []),
            *([f"to{order_tag(out_order)}"] if out_order is not None else []),
            *([f"s{'.'.join(map(str, slice_))}"] if slice_ else []),
            *([f"e{expand}"] if expand is not None else []),
        ]
    )
    return Case(
        name,
        group.get(op, "pointwise"),
        op,
        tuple(shape),
        order,
        dtype,
        dims,
        out_order,
        slice=slice_,
        expand=expand,
    )


def _family_shape(rng: random.Random, family: str):
    """(shape, the dim to scale, the memory order or None for a random one)."""
    if family == "model":
        hidden = rng.choice(HIDDEN)
        if rng.random() < 0.5:
            return [4096, hidden], 0, None
        return [rng.choice((1, 2, 4, 8, 16)), 1024, hidden], 1, None
    if family == "vocab":
        vocab = rng.choice(VOCAB)
        if rng.random() < 0.6:
            return [2048, vocab], 0, None
        return [rng.choice((1, 2, 4, 8)), 512, vocab], 1, None
    if family == "activation":
        side = rng.choice(SPATIAL)
        shape = [32, rng.choice(CHANNELS), side, side]
        order = _weighted(rng, [((0, 1, 2, 3), 0.4), ((0, 2, 3, 1), 0.4), (None, 0.2)])
        return shape, 0, order
    rank = rng.randint(2, 4)
    shape = [_free_extent(rng) for _ in range(rank)]
    return shape, max(range(rank), key=lambda d: shape[d]), None


def _free_extent(rng: random.Random) -> int:
    pick = rng.random()
    if pick < 0.3:
        return rng.choice(PRIMES)
    if pick < 0.5:
        return 2 * rng.randint(1, 2000) + 1  # odd
    if pick < 0.75:
        return 2 ** rng.randint(1, 14)
    if pick < 0.85:
        return 1
    return rng.randint(100_000, 4_000_000)


def _scaled(shape: list[int], free_dim: int, elems: float, max_elems: float) -> list[int]:
    """``shape`` with ``free_dim`` set so that the total is about ``elems``; then the
    largest dims halved while the total passes the bound (the CPU's tiny sizes)."""
    shape = list(shape)
    rest = math.prod(s for d, s in enumerate(shape) if d != free_dim) or 1
    shape[free_dim] = max(1, round(elems / rest))
    bound = min(elems * 2, max_elems)
    while math.prod(shape) > bound and max(shape) > 1:
        d = max(range(len(shape)), key=lambda i: shape[i])
        shape[d] = (shape[d] + 1) // 2
    return shape


def _dims(rng: random.Random, op: str, rank: int, order) -> tuple[int, ...]:
    if op in REDUCTIONS:
        size = rng.randint(1, rank)
        return tuple(sorted(rng.sample(range(rank), size)))
    if op in NORMALIZATIONS:
        return (order[-1],) if rng.random() < 0.5 else (rng.randrange(rank),)
    return ()


def _out_order(rng: random.Random, op: str, rank: int, dims, order):
    out_rank = rank - len(dims) if op in REDUCTIONS else rank
    if op in NORMALIZATIONS or out_rank < 2:
        return None
    if op == "copy":
        choices = [p for p in _orders(out_rank, rng) if p != tuple(order)]
        return choices[0]
    return None if rng.random() < 0.5 else tuple(rng.sample(range(out_rank), out_rank))


def _orders(rank: int, rng: random.Random) -> list[tuple[int, ...]]:
    orders = [tuple(rng.sample(range(rank), rank)) for _ in range(8)]
    return orders + [tuple(reversed(range(rank))), tuple(range(rank))]
