"""The torch references and Triton helpers of the math and predicate rows that need more
than one torch call or one Triton expression (their rows are in ``elementwise.ROWS``).

``HELPERS`` maps a helper's name to its ``@triton.jit`` source; a generated kernel gets
the helpers its text calls (``codegen.helpers.helpers_for``), so kernels that use none
are unchanged. Each helper is written for both of Triton's modes: the interpreter
evaluates shifts with NumPy (which masks the shift count: ``x << 64`` is ``x``) and the
compiler with LLVM (where a shift past the width is poison), so counts outside
``[0, width)`` are decided before shifting, as torch decides them.
"""

from __future__ import annotations

import math

import torch

# --- references (tensors of the compute dtype; scalar operands as 0-dim tensors) -------------


def erfcinv_ref(x: torch.Tensor) -> torch.Tensor:
    """The inverse of erfc (torch has none): ``erfc(y) = x`` iff ``y = -ndtri(x / 2) / sqrt(2)``,
    accurate for small ``x``; 0 gives inf, 2 gives -inf, outside [0, 2] NaN."""
    out: torch.Tensor = -torch.special.ndtri(x / 2) / math.sqrt(2)
    return out


def threshold_ref(x: torch.Tensor, threshold: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``torch.nn.functional.threshold``: ``value`` where ``x <= threshold``, else ``x`` (NaN
    stays); integer inputs truncate both scalars, Half/BFloat16 compare in Float."""
    return torch.nn.functional.threshold(x, threshold.item(), value.item())


def add_alpha_ref(a: torch.Tensor, b: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """``torch.add(a, b, alpha=alpha)``: torch refuses a float alpha for integer tensors and a
    non-Bool alpha for Bool tensors, so layoutfuse does too."""
    return torch.add(a, b, alpha=alpha.item())


def sub_alpha_ref(a: torch.Tensor, b: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    return torch.sub(a, b, alpha=alpha.item())


def logical_right_shift_ref(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """nvFuser's ``logical_right_shift`` (csrc/ops/arith.cpp), built from torch's shifts:
    ``r = x >> s``; where ``x < 0``, ``r ^ (mask << (w - s))`` with ``mask = -1`` if
    ``s >= w`` else ``2**s - 1`` (nvFuser's integer pow: 0 for ``s < 0``). So counts in
    ``[0, w]`` shift zeros in (``w`` gives 0); past ``w`` or below 0 a negative ``x`` gives
    -1, a non-negative one 0. ``w`` is the result's width; nvFuser takes 64 if ``x`` is
    Int, else 32, which differs where ``x``'s width is not the result's (an Int32 tensor
    shifted by an Int tensor, an Int scalar by an Int32 tensor)."""
    dtype = torch.result_type(x, shift)
    if dtype.is_floating_point or dtype.is_complex or dtype is torch.bool:
        raise RuntimeError(f"logical_right_shift: integer operands only, got {dtype}")
    x, s = x.to(dtype), shift.to(dtype)
    w = torch.iinfo(dtype).bits
    r = torch.bitwise_right_shift(x, s)
    one = torch.ones_like(s)
    mask = torch.where(s >= w, -one, torch.bitwise_left_shift(one, s) - 1)
    return torch.where(x < 0, torch.bitwise_left_shift(mask, w - s) ^ r, r)


# --- Triton helpers --------------------------------------------------------------------------

HELPERS: dict[str, str] = {
    "_lgamma": '''
@triton.jit
def _lgamma(x):
    """libdevice's lgamma; for fp32 subnormals -log|x| in fp64 (Triton compiles libdevice
    with ftz, which makes lgamma of a subnormal lgamma(0) = inf; torch gives ~88)."""
    if x.dtype == tl.float32:
        xd = x.to(tl.float64)
        tiny = tl.abs(xd) < 1.1754943508222875e-38
        return tl.where(tiny, -lib.log(tl.abs(xd)).to(tl.float32), lib.lgamma(x))
    else:
        return lib.lgamma(x)
''',
    "_erfcinv": '''
@triton.jit
def _erfcinv(x):
    """libdevice's erfcinv; for fp32 subnormals its fp64 version (ftz would make them 0,
    whose erfcinv is inf)."""
    if x.dtype == tl.float32:
        xd = x.to(tl.float64)
        tiny = tl.abs(xd) < 1.1754943508222875e-38
        return tl.where(tiny, lib.erfcinv(xd).to(tl.float32), lib.erfcinv(x))
    else:
        return lib.erfcinv(x)
''',
    "_axpy": '''
@triton.jit
def _axpy(a, b, v):
    """``a + v * b`` (add_alpha; sub_alpha with ``-1 * v``, as torch negates alpha): one
    rounding for floats, as torch computes it (``vec::fmadd`` on the CPU, a contracted
    ``fma`` on CUDA), so ``-inf + 2 * max`` is -inf, not NaN."""
    if a.dtype.is_floating():
        return lib.fma(b, v, a)
    else:
        return a + v * b
''',
    "_shl": '''
@triton.jit
def _shl(a, b):
    """torch.bitwise_left_shift: 0 for counts below 0 or past the width."""
    W: tl.constexpr = a.dtype.primitive_bitwidth
    ok = (b >= 0) & (b < W)
    return tl.where(ok, a << tl.where(ok, b, 0), 0)
''',
    "_shr": '''
@triton.jit
def _shr(a, b):
    """torch.bitwise_right_shift (arithmetic): counts below 0 or past the width fill with
    the sign bit."""
    W: tl.constexpr = a.dtype.primitive_bitwidth
    return a >> tl.where((b >= 0) & (b < W), b, W - 1)
''',
    "_logical_shr": '''
@triton.jit
def _logical_shr(x, s):
    """nvFuser's logical_right_shift (see ``logical_right_shift_ref``)."""
    x, s = tl.broadcast(x, s)
    W: tl.constexpr = x.dtype.primitive_bitwidth
    r = _shr(x, s)
    mask = tl.where(s >= W, -1, _shl(x * 0 + 1, s) - 1)
    return tl.where(x < 0, _shl(mask, W - s) ^ r, r)
''',
    "_gcd": '''
@triton.jit
def _gcd(a, b):
    """torch.gcd: Euclid's algorithm on |a| and |b| (|INT_MIN| stays INT_MIN, as in torch),
    in a fixed number of steps: 1.5 x the width covers the longest chain (consecutive
    Fibonacci numbers: 92 steps below 2**63, 45 below 2**31)."""
    x, y = tl.broadcast(a, b)
    x = tl.where(x < 0, -x, x)
    y = tl.where(y < 0, -y, y)
    STEPS: tl.constexpr = 3 * x.dtype.primitive_bitwidth // 2
    for _ in range(STEPS):
        done = x == 0
        r = y % tl.where(done, 1, x)
        y = tl.where(done, y, x)
        x = tl.where(done, 0, r)
    return y
''',
    "_signbit": '''
@triton.jit
def _signbit(x):
    """torch.signbit: the sign bit of a float (-0.0 and -NaN too), ``x < 0`` otherwise."""
    if x.dtype == tl.float64:
        return x.to(tl.int64, bitcast=True) < 0
    elif x.dtype == tl.float32:
        return x.to(tl.int32, bitcast=True) < 0
    elif (x.dtype == tl.float16) or (x.dtype == tl.bfloat16):
        return x.to(tl.int16, bitcast=True) < 0
    else:
        return x < 0
''',
    "_neg": '''
@triton.jit
def _neg(x):
    """torch.neg: Triton's ``-x`` is ``0 - x``, which keeps +0.0 (torch gives -0.0); a
    float has its sign bit flipped (a NaN's too, as torch's CPU neg; its CUDA neg keeps a
    NaN's sign, which nothing compares)."""
    if x.dtype == tl.float32:
        return (x.to(tl.int32, bitcast=True) ^ -2147483648).to(tl.float32, bitcast=True)
    elif x.dtype == tl.float64:
        return (x.to(tl.int64, bitcast=True) ^ -9223372036854775808).to(tl.float64, bitcast=True)
    elif x.dtype == tl.float16:
        return (x.to(tl.int16, bitcast=True) ^ -32768).to(tl.float16, bitcast=True)
    elif x.dtype == tl.bfloat16:
        return (x.to(tl.int16, bitcast=True) ^ -32768).to(tl.bfloat16, bitcast=True)
    elif x.dtype.is_floating():
        return x * -1.0
    else:
        return -x
''',
    "_nextafter": '''
@triton.jit
def _nextafter(x, y):
    """torch.nextafter on the bits: the neighbour of ``x`` toward ``y``; ``y`` when equal,
    NaN when either is; from +-0 the smallest subnormal of ``y``'s sign. (libdevice's
    nextafter flushes subnormals: Triton compiles libdevice with ftz.)"""
    x, y = tl.broadcast(x, y)
    if x.dtype == tl.float64:
        bits = x.to(tl.int64, bitcast=True)
        tiny = tl.full([], 1, tl.int64).to(tl.float64, bitcast=True)
    else:
        bits = x.to(tl.int32, bitcast=True)
        tiny = tl.full([], 1, tl.int32).to(tl.float32, bitcast=True)
    away = (y > x) == (x > 0)  # toward y is away from zero
    step = (bits + tl.where(away, 1, -1)).to(x.dtype, bitcast=True)
    r = tl.where(x == 0, tl.where(y > 0, tiny, -tiny), step)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)
''',
}
