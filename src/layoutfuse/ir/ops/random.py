"""Random ops: uniform and normal (rand_like, randn_like), counter-based (Philox4x32-10).

Each element's numbers are a pure function of ``(seed, offset, i)``, ``i`` being the
element's row-major linear index in the op's own logical shape: Philox's 128-bit counter
is ``(i low, i high, offset low, offset high)`` and its key is the 64-bit seed. So a
(seed, offset) pair gives the same tensor on every call, in the CPU interpreter and on
the GPU, whatever the kernel's tiles, vector width or the output's memory order; two
offsets give independent streams (not shifted copies of one).

From the four 32-bit words of an element: ``uniform`` takes the top ``d`` bits of the
first word, ``d`` the dtype's significand (24 Float, 11 Half, 8 BFloat16), so
``u = top / 2**d`` is exact in the dtype and lies in [0, 1); a Double takes 53 bits of
the first two words. ``normal`` is Box-Muller, ``sqrt(-2 log(1 - u1)) * cos(2 pi u2)``,
with u1 and u2 from the first two words (Double: from the four), in Float for the
16-bit dtypes. Then ``minval + (maxval - minval) * u`` and ``mean + std * z`` in the
compute dtype.

Without ``rng_seed``/``rng_offset`` an op takes a seed that the ``philox_seed`` scalar op
draws from torch's default CPU generator on every call (nvFuser takes the CUDA
generator's seed and advances its offset instead: the same numbers as nvFuser are not a
goal), and offset 0: consecutive calls differ, ``torch.manual_seed`` makes them
reproducible. Each such op draws its own seed, so two of them differ. Drawn seeds are
odd and in [2**62, 2**63): always an int64 launch argument, never specialized as 1 or as
a multiple of 16, so every call reuses one compiled kernel (and a replay plan stays
right for every seed it draws, ``runtime.replay``).

The torch reference (``philox``) computes the same words with int64 arithmetic, so a
kernel's uniform numbers equal the reference's bit for bit (normal ones up to the
log/cos of the backend).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import torch

from ...dtypes import DataType, is_floating, to_torch
from ...errors import ArgumentTypeError, DefinitionError, UnsupportedError, describe
from ..domain import IterDomain
from ..fusion import Fusion
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView, Vector
from .common import Operand, Shape, as_shape, as_val, check_tensor, emit, fusion_of, static_value
from .scalars import size

RANDOM_DTYPES = (DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16)
# bits of a uniform number per dtype: the significand, so ``top / 2**d`` is exact
UNIFORM_BITS = {DataType.Float: 24, DataType.Half: 11, DataType.BFloat16: 8, DataType.Double: 53}
N_PARAMS = 4  # an op's inputs: (a, b, seed, offset), then its shape

_M32 = 0xFFFFFFFF
_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57  # Philox4x32 multipliers
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85  # Philox4x32 key increments (Weyl sequence)
_TWO_PI = 6.283185307179586


# --- the torch reference ---------------------------------------------------------------------
def _mul_hi_lo(a: torch.Tensor, b: int) -> tuple[torch.Tensor, torch.Tensor]:
    """High and low 32 bits of ``a * b`` (``a`` an int64 tensor of 32-bit values, ``b`` a
    32-bit constant) without overflowing int64: ``b`` in two 16-bit halves."""
    t, u = a * (b & 0xFFFF), a * (b >> 16)  # each < 2**48
    return (u + (t >> 16)) >> 16, ((u << 16) + t) & _M32  # (u << 16) wraps: low bits exact


def philox(seed: int, counter: list[torch.Tensor], rounds: int = 10) -> list[torch.Tensor]:
    """Philox4x32 of four int64 tensors of 32-bit words under the 64-bit ``seed`` (Triton's
    ``tl.philox``, word for word)."""
    c0, c1, c2, c3 = counter
    k0, k1 = seed & _M32, (seed >> 32) & _M32
    for _ in range(rounds):
        hi_b, lo_b = _mul_hi_lo(c2, _ROUND_B)
        hi_a, lo_a = _mul_hi_lo(c0, _ROUND_A)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0, k1 = (k0 + _KEY_A) & _M32, (k1 + _KEY_B) & _M32
    return [c0, c1, c2, c3]


def _words(seed: int, offset: int, shape: tuple[int, ...], device: Any) -> list[torch.Tensor]:
    i = torch.arange(math.prod(shape), dtype=torch.int64, device=device)
    hi = torch.zeros_like(i)
    return philox(
        int(seed), [i & _M32, i >> 32, hi + (offset & _M32), hi + ((offset >> 32) & _M32)]
    )


def _uniforms(words: list[torch.Tensor], dtype: DataType) -> list[torch.Tensor]:
    """Uniform numbers in [0, 1), exact in ``dtype``'s compute dtype: one per word, or for
    a Double one per pair of words."""
    if dtype is DataType.Double:
        pairs = zip(words[0::2], words[1::2])
        return [((a << 21) | (b >> 11)).to(torch.float64) * 2.0**-53 for a, b in pairs]
    d = UNIFORM_BITS[dtype]
    return [(w >> (32 - d)).to(torch.float32) * 2.0**-d for w in words]


def _compute(dtype: DataType) -> torch.dtype:
    return torch.float64 if dtype is DataType.Double else torch.float32


def _uniform_ref(
    a: Any, b: Any, seed: Any, offset: Any, *shape: Any, dtype: DataType, device: Any
) -> torch.Tensor:
    shape = tuple(int(s) for s in shape)
    (u, *_) = _uniforms(_words(seed, int(offset), shape, device), dtype)
    lo, hi = (torch.tensor(float(v), dtype=_compute(dtype), device=device) for v in (a, b))
    return (lo + (hi - lo) * u).reshape(shape).to(to_torch(dtype))


def _normal_ref(
    mean: Any, std: Any, seed: Any, offset: Any, *shape: Any, dtype: DataType, device: Any
) -> torch.Tensor:
    shape = tuple(int(s) for s in shape)
    fine = DataType.Double if dtype is DataType.Double else DataType.Float
    u1, u2, *_ = _uniforms(_words(seed, int(offset), shape, device), fine)
    z = torch.sqrt(-2.0 * torch.log(1.0 - u1)) * torch.cos(_TWO_PI * u2)
    m, s = (torch.tensor(float(v), dtype=_compute(dtype), device=device) for v in (mean, std))
    return (m + s * z).reshape(shape).to(to_torch(dtype))


def draw_seed() -> int:
    """A fresh seed from torch's default CPU generator (also when torch's default device is
    another): odd, in [2**62, 2**63)."""
    drawn = torch.randint(0, 2**62, (), dtype=torch.int64, device="cpu")
    return int(drawn.item()) | (1 << 62) | 1


# --- the Triton emission ----------------------------------------------------------------------
class LineWriter(Protocol):
    """What the emission writes with (``codegen.writer.Writer``)."""

    def fresh(self, prefix: str) -> str: ...
    def line(self, text: str = "") -> None: ...
    def assign(self, prefix: str, expr: str) -> str: ...


def _emit_words(w: LineWriter, idx: str, seed: str, offset: str, zeros: str) -> list[str]:
    """Lines computing an element's four Philox words at linear index ``idx`` into ``w``;
    returns their names."""
    i = w.assign("rng_i", f"({idx} + {zeros}).to(tl.int64)")
    off = w.assign("rng_off", f"tl.full([], {offset}, tl.int64)")
    z = w.assign("rng_z", f"({zeros}).to(tl.uint32)")
    names = [w.fresh("rng_w") for _ in range(4)]
    w.line(
        f"{', '.join(names)} = tl.philox(tl.full([], {seed}, tl.int64), {i}.to(tl.uint32), "
        f"({i} >> 32).to(tl.uint32), {z} + {off}.to(tl.uint32), "
        f"{z} + ({off} >> 32).to(tl.uint32))"
    )
    return names


def _emit_uniforms(w: LineWriter, words: list[str], dtype: DataType, count: int) -> list[str]:
    if dtype is DataType.Double:
        return [
            w.assign(
                "rng_u",
                f"((({a}.to(tl.uint64) << 21) | ({b} >> 11).to(tl.uint64)).to(tl.float64)"
                f" * {2.0**-53!r})",
            )
            for a, b in list(zip(words[0::2], words[1::2]))[:count]
        ]
    d = UNIFORM_BITS[dtype]
    return [
        w.assign("rng_u", f"(({x} >> {32 - d}).to(tl.float32) * {2.0**-d!r})")
        for x in words[:count]
    ]


def emit_random(w: LineWriter, name: str, dtype: DataType, args: dict[str, str]) -> str:
    """Lines for op ``name``'s values into ``w``; returns the name of the value (in the
    compute dtype). ``args``: ``idx`` (the linear index), ``zeros`` (an int32 tile of
    the kernel's shape), ``seed``, ``offset``, ``a``, ``b`` (expressions)."""
    ct = "tl.float64" if dtype is DataType.Double else "tl.float32"
    words = _emit_words(w, args["idx"], args["seed"], args["offset"], args["zeros"])
    a = w.assign("rng_a", f"tl.full([], {args['a']}, {ct})")
    b = w.assign("rng_b", f"tl.full([], {args['b']}, {ct})")
    if name == "uniform":
        (u,) = _emit_uniforms(w, words, dtype, 1)
        return w.assign("t", f"{a} + ({b} - {a}) * {u}")
    fine = DataType.Double if dtype is DataType.Double else DataType.Float
    u1, u2 = _emit_uniforms(w, words, fine, 2)
    z = w.assign("rng_n", f"tl.sqrt(-2.0 * tl.log(1.0 - {u1})) * tl.cos({_TWO_PI!r} * {u2})")
    return w.assign("t", f"{a} + {b} * {z}")


UNIFORM = register(
    OpDef(
        "uniform",
        OpKind.CREATION,
        reference=_uniform_ref,
        triton=emit_random,
        doc="uniform numbers in [minval, maxval): Philox at the element's linear index",
    )
)
NORMAL = register(
    OpDef(
        "normal",
        OpKind.CREATION,
        reference=_normal_ref,
        triton=emit_random,
        doc="normal numbers of mean and std: Box-Muller of Philox uniforms",
    )
)
PHILOX_SEED = register(
    OpDef(
        "philox_seed",
        OpKind.SCALAR,
        reference=draw_seed,
        doc="a seed drawn from torch's default generator on every call",
    )
)
NAMES = frozenset({"uniform", "normal"})


# --- builders ---------------------------------------------------------------------------------
def _seed_and_offset(
    f: Fusion, seed: Operand | None, offset: Operand | None, op: str
) -> list[Scalar]:
    if (seed is None) != (offset is None):
        raise DefinitionError(f"{op}: rng_seed and rng_offset must be provided together")
    if seed is None:
        drawn = Scalar(f, DataType.Int)
        emit(f, PHILOX_SEED, [], [drawn])
        return [drawn, Scalar(f, DataType.Int, 0)]
    out = []
    for v, arg in ((seed, "rng_seed"), (offset, "rng_offset")):
        s = as_val(f, v, op)
        if not isinstance(s, Scalar) or s.dtype not in (DataType.Int, DataType.Int32):
            raise ArgumentTypeError(f"{op}: {arg} must be an integer Scalar, got {describe(s)}")
        out.append(s)
    return out


def _random(
    row: OpDef,
    a: Operand,
    b: Operand,
    shape: Shape,
    dtype: DataType,
    seed: Operand | None,
    offset: Operand | None,
) -> TensorView:
    f = fusion_of(a, b, shape, seed, offset)
    if dtype not in RANDOM_DTYPES:
        kind = "floating point" if not is_floating(dtype) else "Float, Double, Half or BFloat16"
        err = DefinitionError if not is_floating(dtype) else UnsupportedError
        raise err(f"{row.name}: random numbers are created as {kind}, not {dtype!r}")
    params = []
    for v, arg in ((a, "arg1"), (b, "arg2")):
        s = as_val(f, v, row.name)
        if not isinstance(s, Scalar):
            raise ArgumentTypeError(f"{row.name}: {arg} must be a Scalar, got {describe(s)}")
        params.append(s)
    shape_s = as_shape(f, shape, row.name)
    out = TensorView(f, [IterDomain(static_value(s)) for s in shape_s], dtype)
    inputs = [*params, *_seed_and_offset(f, seed, offset, row.name), *shape_s]
    emit(f, row, inputs, [out], dtype=dtype)
    return out


def uniform(
    minval: Operand,
    maxval: Operand,
    shape: Shape,
    dtype: DataType = DataType.Float,
    seed: Operand | None = None,
    offset: Operand | None = None,
) -> TensorView:
    """Uniform numbers in [minval, maxval) of ``shape``; ``seed`` and ``offset`` together
    make them deterministic (else a seed is drawn per call)."""
    return _random(UNIFORM, minval, maxval, shape, dtype, seed, offset)


def normal(
    mean: Operand,
    std: Operand,
    shape: Shape,
    dtype: DataType = DataType.Float,
    seed: Operand | None = None,
    offset: Operand | None = None,
) -> TensorView:
    """Normal numbers of ``mean`` and ``std`` of ``shape`` (see ``uniform``)."""
    return _random(NORMAL, mean, std, shape, dtype, seed, offset)


def _like(x: TensorView, op: str) -> list[Scalar]:
    x = check_tensor(x, op)
    if not is_floating(x.dtype):
        raise DefinitionError(f"{op}: the input must be floating point, got {x.dtype!r}")
    return [size(x, d) for d in range(x.ndim)]


def rand_like(
    x: TensorView, seed: Operand | None = None, offset: Operand | None = None
) -> TensorView:
    """Uniform numbers in [0, 1) of ``x``'s shape and dtype."""
    return uniform(0.0, 1.0, _like(x, "rand_like"), x.dtype, seed, offset)


def randn_like(
    x: TensorView, seed: Operand | None = None, offset: Operand | None = None
) -> TensorView:
    """Standard normal numbers of ``x``'s shape and dtype."""
    return normal(0.0, 1.0, _like(x, "randn_like"), x.dtype, seed, offset)


def seed_inputs(fusion: Fusion) -> frozenset[int]:
    """Positions of the fusion's scalar inputs used only as random ops' ``rng_seed`` or
    ``rng_offset``: their values decide no shape, layout or plan (only the numbers), so a
    replay plan may serve every value of them (``runtime.replay.signature``)."""
    uses: dict[int, bool] = {}  # id of a scalar input -> used only as a seed or an offset
    for e in fusion.exprs:
        for k, v in enumerate(e.inputs):
            seed_use = e.op.name in NAMES and k in (2, 3)
            for u in v.elements if isinstance(v, Vector) else [v]:  # a shape's entries too
                uses[id(u)] = uses.get(id(u), True) and seed_use
    outputs = {id(o.value) for o in fusion.outputs}
    return frozenset(
        i
        for i, v in enumerate(fusion.inputs)
        if isinstance(v, Scalar) and uses.get(id(v), False) and id(v) not in outputs
    )
