"""Random ops: uniform and normal (rand_like, randn_like), counter-based (Philox4x32-10).

Each element's numbers are a pure function of ``(seed, offset, i)``, ``i`` being the
element's row-major linear index in the op's own logical shape. An element takes ``W``
of the four 32-bit words of one Philox call (``words_per_element``: a uniform Float,
Half or BFloat16 one, 1; a normal one or a uniform Double, 2; a normal Double, 4), so
one call serves ``E = 4 // W`` consecutive elements: element ``i`` takes words
``W * (i % E)`` .. ``W * (i % E) + W - 1`` of the call at counter ``c = i // E``.
Philox's 128-bit counter is ``(c low, c high, offset low, offset high)`` and its key
is the 64-bit seed. So a (seed, offset) pair gives the same tensor on every call, in
the CPU interpreter and on the GPU, whatever the kernel's tiles, vector width,
schedule or the output's memory order; two offsets give independent streams (not
shifted copies of one).

From an element's words: ``uniform`` takes the top ``d`` bits of its word, ``d`` the
dtype's significand (24 Float, 11 Half, 8 BFloat16), so ``u = top / 2**d`` is exact
in the dtype and lies in [0, 1); a Double takes 53 bits of its two words. ``normal``
is Box-Muller, ``sqrt(-2 log(1 - u1)) * cos(2 pi u2)``, with u1 and u2 from its two
words (Double: from its four), in Float for the 16-bit dtypes. Then
``minval + (maxval - minval) * u`` and ``mean + std * z`` in the compute dtype.

The emission has two forms of the same numbers. *Grouped*: where the kernel knows that
its tile walks ``i`` with unit stride along the tile's last axis in runs of ``E``
aligned to multiples of ``E`` (``run``: the pointwise scheduler's
``PointwiseParams.coordinate_runs``), it calls Philox once per run, on a tile of
``1/E`` the elements, and interleaves the runs' values back (``tl.join``, then
``tl.reshape``): a uniform dropout makes a quarter of the multiplies (sm_90 PTX: 4.6
``mul.hi`` per element, 16.1 with a call per element). *Per element* anywhere else
(normalization and reduction kernels, other layouts): Philox at ``i // E``, the
element's words selected by ``i % E``. (Where the compiler can prove a thread's
elements aligned, in a flat contiguous kernel, it shares those calls itself; rows of a
runtime stride it cannot.)

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
from ..fusion import Fusion
from ..opdef import OpDef, OpKind, register
from ..values import Scalar, TensorView, Vector
from .common import (
    Operand,
    Shape,
    as_shape,
    as_val,
    check_tensor,
    emit,
    factory_id,
    fusion_of,
    static_value,
)
from .scalars import size

RANDOM_DTYPES = (DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16)
# bits of a uniform number per dtype: the significand, so ``top / 2**d`` is exact
UNIFORM_BITS = {DataType.Float: 24, DataType.Half: 11, DataType.BFloat16: 8, DataType.Double: 53}
N_PARAMS = 4  # an op's inputs: (a, b, seed, offset), then its shape
WORDS = 4  # 32-bit words of one Philox call

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


def words_per_element(op: str, dtype: DataType) -> int:
    """The 32-bit words an element of random op ``op`` takes: a uniform number's (a
    Double's 53 bits: two), twice that for a normal one (Box-Muller's two uniforms)."""
    uniform = 2 if dtype is DataType.Double else 1
    return uniform if op == "uniform" else 2 * uniform


def elements_per_call(op: str, dtype: DataType) -> int:
    """Consecutive elements of ``op`` in ``dtype`` that one Philox call serves."""
    return WORDS // words_per_element(op, dtype)


def _words(seed: int, offset: int, numel: int, width: int, device: Any) -> list[torch.Tensor]:
    """The ``width`` words of each of ``numel`` elements, one tensor per word: element
    ``i`` takes words ``width * (i % E)`` .. of the call at counter ``i // E``,
    ``E = WORDS // width``."""
    per_call = WORDS // width
    c = torch.arange(-(-numel // per_call), dtype=torch.int64, device=device)
    hi = torch.zeros_like(c)
    words = philox(
        int(seed), [c & _M32, c >> 32, hi + (offset & _M32), hi + ((offset >> 32) & _M32)]
    )
    return list(torch.stack(words, -1).reshape(-1, width)[:numel].unbind(-1))


def _uniforms(words: list[torch.Tensor], dtype: DataType) -> list[torch.Tensor]:
    """Uniform numbers in [0, 1), exact in ``dtype``'s compute dtype: one per word of an
    element, or for a Double one per pair of words."""
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
    width = words_per_element("uniform", dtype)
    (u,) = _uniforms(_words(seed, int(offset), math.prod(shape), width, device), dtype)
    lo, hi = (torch.tensor(float(v), dtype=_compute(dtype), device=device) for v in (a, b))
    return (lo + (hi - lo) * u).reshape(shape).to(to_torch(dtype))


def _normal_ref(
    mean: Any, std: Any, seed: Any, offset: Any, *shape: Any, dtype: DataType, device: Any
) -> torch.Tensor:
    shape = tuple(int(s) for s in shape)
    fine = DataType.Double if dtype is DataType.Double else DataType.Float
    width = words_per_element("normal", dtype)
    u1, u2 = _uniforms(_words(seed, int(offset), math.prod(shape), width, device), fine)
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


def emit_random(w: LineWriter, name: str, dtype: DataType, args: dict[str, Any]) -> str:
    """Lines for op ``name``'s values into ``w``; returns the name of the value (in the
    compute dtype). ``args``: ``idx`` (the linear index), ``zeros`` (an int32 tile of
    the kernel's shape), ``seed``, ``offset``, ``a``, ``b`` (expressions); ``run`` (the
    elements of the aligned, unit-stride runs the index walks along the tile's last
    axis, 1 if not given), ``tile`` (the tile's shape, constexpr names) and ``vector``
    (elements of a thread's vector along its last axis, a power of two dividing it):
    where the runs hold whole calls, one Philox call serves each run (grouped)."""
    ct = "tl.float64" if dtype is DataType.Double else "tl.float32"
    per_call = elements_per_call(name, dtype)
    i = w.assign("rng_i", f"({args['idx']} + {args['zeros']}).to(tl.int64)")
    key = (args["seed"], w.assign("rng_off", f"tl.full([], {args['offset']}, tl.int64)"))
    if per_call > 1 and args.get("run", 1) % per_call == 0:
        tile, vector = tuple(args["tile"]), args.get("vector", per_call)
        unit = _emit_grouped(w, name, dtype, i, tile, vector, key)
    else:
        unit = _emit_per_element(w, name, dtype, i, key)
    a = w.assign("rng_a", f"tl.full([], {args['a']}, {ct})")
    b = w.assign("rng_b", f"tl.full([], {args['b']}, {ct})")
    if name == "uniform":
        return w.assign("t", f"{a} + ({b} - {a}) * {unit}")
    return w.assign("t", f"{a} + {b} * {unit}")


def _emit_per_element(
    w: LineWriter, name: str, dtype: DataType, i: str, key: tuple[str, str]
) -> str:
    """Each element's own call at ``i // E``, its words chosen by ``i % E``."""
    per_call = elements_per_call(name, dtype)
    if per_call == 1:
        return _emit_unit(w, name, dtype, _emit_philox(w, i, key))
    shift = per_call.bit_length() - 1
    words = _emit_philox(w, w.assign("rng_c", f"{i} >> {shift}"), key)
    member = w.assign("rng_j", f"{i} & {per_call - 1}")
    width = WORDS // per_call
    return _emit_unit(w, name, dtype, [_select(w, member, words[k::width]) for k in range(width)])


def _emit_grouped(
    w: LineWriter,
    name: str,
    dtype: DataType,
    i: str,
    tile: tuple[str, ...],
    vector: int,
    key: tuple[str, str],
) -> str:
    """One call per aligned run of ``E`` elements along the tile's last axis: the runs'
    first indices, a call on each such tile of ``1/E`` the elements, each member's value
    from its words, interleaved back (``_interleave``) and reshaped to the tile.

    The last axis is reshaped to ``[last // V, 2, .., 2]``, ``V`` the elements of a
    thread's vector there (``vector``, at least ``E``), and only ``tl.split`` and
    ``tl.join`` take the 2s apart and back: Triton keeps their axes in one thread, so a
    vector's runs stay in its thread and the values come back in the layout of the
    tile's loads (a free axis of 2 runs put a bf16 vector's two calls in two threads,
    converted through shared memory)."""
    per_call = elements_per_call(name, dtype)
    span = max(vector, per_call)
    levels, members = span.bit_length() - 1, per_call.bit_length() - 1
    *lead, last = tile
    shape = [*lead, f"{last} // {span}", *["2"] * levels]
    first = w.assign("rng_g", f"tl.reshape({i}, [{', '.join(shape)}])")
    for _ in range(members):  # the runs' first elements: the first halves of the inner 2s
        first = _split(w, first)[0]
    width = WORDS // per_call
    values = []
    for start in _split_all(w, first, levels - members):  # a vector's runs
        words = _emit_philox(w, w.assign("rng_c", f"{start} >> {members}"), key)
        values += [
            _emit_unit(w, name, dtype, words[width * j : width * (j + 1)]) for j in range(per_call)
        ]
    return w.assign("rng_u", f"tl.reshape({_interleave(values)}, [{', '.join(tile)}])")


def _split(w: LineWriter, x: str) -> tuple[str, str]:
    """``tl.split`` of ``x``: the halves of its last axis (of 2)."""
    halves = w.fresh("rng_g"), w.fresh("rng_g")
    w.line(f"{halves[0]}, {halves[1]} = tl.split({x})")
    return halves


def _split_all(w: LineWriter, x: str, levels: int) -> list[str]:
    """The tiles at each position of ``x``'s last ``levels`` axes (of 2), read row-major:
    ``_interleave``'s inverse."""
    if levels == 0:
        return [x]
    even, odd = (_split_all(w, h, levels - 1) for h in _split(w, x))
    return [t for pair in zip(even, odd) for t in pair]


def _interleave(values: list[str]) -> str:
    """``tl.join``s of tiles ``values`` (a power of two of them) whose new last axes, read
    row-major, hold ``values[0], values[1], ...`` in order: the last axis takes a value's
    lowest bit, so join(join(v0, v2), join(v1, v3)) reads v0, v1, v2, v3."""
    if len(values) == 1:
        return values[0]
    return f"tl.join({_interleave(values[0::2])}, {_interleave(values[1::2])})"


def _select(w: LineWriter, member: str, options: list[str]) -> str:
    """``options[member]`` per element."""
    expr = options[-1]
    for j in reversed(range(len(options) - 1)):
        expr = f"tl.where({member} == {j}, {options[j]}, {expr})"
    return w.assign("rng_w", expr)


def _emit_philox(w: LineWriter, counter: str, key: tuple[str, str]) -> list[str]:
    """Lines computing Philox's four words at ``counter`` (an int64 tile) under ``key``:
    the seed's expression and the name of the offset (an int64); returns their names."""
    seed, off = key
    z = w.assign("rng_z", f"tl.zeros_like({counter}).to(tl.uint32)")
    names = [w.fresh("rng_w") for _ in range(WORDS)]
    w.line(
        f"{', '.join(names)} = tl.philox(tl.full([], {seed}, tl.int64), {counter}.to(tl.uint32), "
        f"({counter} >> 32).to(tl.uint32), {z} + {off}.to(tl.uint32), "
        f"{z} + ({off} >> 32).to(tl.uint32))"
    )
    return names


def _emit_unit(w: LineWriter, name: str, dtype: DataType, words: list[str]) -> str:
    """An element's uniform number in [0, 1) (``uniform``) or standard normal one from its
    ``words``, in the compute dtype."""
    if name == "uniform":
        (u,) = _emit_uniforms(w, words, dtype)
        return u
    fine = DataType.Double if dtype is DataType.Double else DataType.Float
    u1, u2 = _emit_uniforms(w, words, fine)
    return w.assign("rng_n", f"tl.sqrt(-2.0 * tl.log(1.0 - {u1})) * tl.cos({_TWO_PI!r} * {u2})")


def _emit_uniforms(w: LineWriter, words: list[str], dtype: DataType) -> list[str]:
    """One uniform number per word (a Double: per pair of words), as ``_uniforms``."""
    if dtype is DataType.Double:
        return [
            w.assign(
                "rng_u",
                f"((({a}.to(tl.uint64) << 21) | ({b} >> 11).to(tl.uint64)).to(tl.float64)"
                f" * {2.0**-53!r})",
            )
            for a, b in zip(words[0::2], words[1::2])
        ]
    d = UNIFORM_BITS[dtype]
    return [w.assign("rng_u", f"(({x} >> {32 - d}).to(tl.float32) * {2.0**-d!r})") for x in words]


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
    out = TensorView(f, [factory_id(static_value(s)) for s in shape_s], dtype)
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
