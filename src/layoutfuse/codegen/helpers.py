"""Helper jit functions that a generated module pastes after the prelude when its text
calls them: the op rows' (``ir.ops.pointwise_math.HELPERS``) and the fp8 conversions of
stores and casts. A kernel that calls none is unchanged.

fp8 results are converted as torch 2.13 converts them (``x.to(torch.float8_e4m3fn)``), on
the bits of the float32 value: to nearest even, the sign kept (NaN's too); float8_e4m3fn has
no infinity and saturates: magnitudes past 448 and inf give +-448, NaN gives NaN (0x7F);
float8_e5m2 does not: from 61440 on (rounding past 57344) and inf give inf, NaN gives NaN.
Triton's own casts differ: on sm_90 ``cvt.rn.satfinite`` saturates e5m2 too, and the
interpreter's conversion rounds half up without carrying into the exponent. Reading fp8 is
Triton's (exact on the GPU; the interpreter's is replaced in ``backend``).
"""

from __future__ import annotations

import re

from ..dtypes import DataType
from ..ir.ops.pointwise_math import HELPERS as ROW_HELPERS

FP8_HELPERS: dict[str, str] = {
    "_to_e4m3fn": '''
@triton.jit
def _to_e4m3fn(x):
    """float32 -> float8_e4m3fn as torch converts (see codegen/helpers.py)."""
    bits = x.to(tl.float32).to(tl.int32, bitcast=True)
    sign = (bits >> 24) & 0x80
    mag = bits & 0x7FFFFFFF
    # below 2**-6 (subnormal): add 2**14, whose ulp is the subnormal step 2**-9
    sub = (mag.to(tl.float32, bitcast=True) + 16384.0).to(tl.int32, bitcast=True) - 0x46800000
    nrm = (mag - 0x3C000000 + 0x7FFFF + ((mag >> 20) & 1)) >> 20
    r = tl.where(mag > 0x7F800000, 0x7F, tl.minimum(tl.where(mag < 0x3C800000, sub, nrm), 0x7E))
    return (r | sign).to(tl.uint8).to(tl.float8e4nv, bitcast=True)
''',
    "_to_e5m2": '''
@triton.jit
def _to_e5m2(x):
    """float32 -> float8_e5m2 as torch converts (see codegen/helpers.py)."""
    bits = x.to(tl.float32).to(tl.int32, bitcast=True)
    sign = (bits >> 24) & 0x80
    mag = bits & 0x7FFFFFFF
    # below 2**-14 (subnormal): add 2**7, whose ulp is the subnormal step 2**-16
    sub = (mag.to(tl.float32, bitcast=True) + 128.0).to(tl.int32, bitcast=True) - 0x43000000
    nrm = (mag - 0x38000000 + 0xFFFFF + ((mag >> 21) & 1)) >> 21
    big = tl.where(mag > 0x7F800000, 0x7F, 0x7C)
    r = tl.where(mag >= 0x47800000, big, tl.where(mag < 0x38800000, sub, nrm))
    return (r | sign).to(tl.uint8).to(tl.float8e5, bitcast=True)
''',
}

FP8_CONVERT = {DataType.Float8_e4m3fn: "_to_e4m3fn", DataType.Float8_e5m2: "_to_e5m2"}
"""The helper that converts a compute value to each fp8 dtype (stores and casts)."""

_ALL = {**ROW_HELPERS, **FP8_HELPERS}


def helpers_for(body: str) -> str:
    """The sources of the helpers that ``body`` calls, and of those they call, each once."""
    needed: set[str] = set()
    pending = [body]
    while pending:
        text = pending.pop()
        for name, source in _ALL.items():
            if name not in needed and re.search(rf"\b{name}\(", text):
                needed.add(name)
                pending.append(source)
    return "".join(source for name, source in _ALL.items() if name in needed)
