"""Can Triton share a reduction across the CTAs of a cluster? ``python -m benchmarks
probe cluster`` (CPU only: compiles for sm_90, runs nothing).

Issue 5's strided rows (softmax over the strided dim of a column-major [8192, 8192])
need each column's statistics before its first output, and a column block with rows
of 64-128 bytes (1-2 MiB at 8192 rows) does not fit one SM. Reading it once needs the
block spread over several SMs with their partial statistics exchanged: on Hopper, a
cluster of CTAs and distributed shared memory. Plain Triton's ``num_ctas`` splits a
tile's columns, never the reduced axis. Gluon (``triton.experimental.gluon``) lets a
layout split any axis across the cluster (``cga_layout``). This probe compiles a
column softmax-like kernel ([R, W] tile, dim 0 split across 2 CTAs) three ways:

* ``reduce``: ``gl.sum`` over the split axis;
* ``convert``: the tile converted to a layout that is not split, then reduced;
* ``partials``: each CTA reduces its half ([2, R/2, W] -> [2, W], dim 0 split), the
  small partials converted to a replicated layout, then reduced.

It prints, for each, either the cluster instructions in the PTX or the compiler's
error. With Triton 3.6.0 all three fail (``benchmarks/NOTES.md``, session 6): the
reduction asserts that it stays within a CTA, the conversions stop at "Layout conversion
to be implemented" or at an invalid ``nvvm.mapa``. A tool for deciding what the code
generator can emit, not part of the product.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap

SOURCE = """
import re
import sys
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource


@gluon.jit
def whole(x_ptr, y_ptr, R: gl.constexpr, W: gl.constexpr, MODE: gl.constexpr,
          L: gl.constexpr, L1: gl.constexpr):
    rows = gl.arange(0, R, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, W, layout=gl.SliceLayout(0, L))
    offs = gl.expand_dims(rows, 1) * W + gl.expand_dims(cols, 0)
    x = gl.load(x_ptr + offs)
    if MODE == 0:
        y = x / gl.expand_dims(gl.sum(x, axis=0), 0)
    else:
        x1 = gl.convert_layout(x, L1)
        y = gl.convert_layout(x1 / gl.expand_dims(gl.sum(x1, axis=0), 0), L)
    gl.store(y_ptr + offs, y)


@gluon.jit
def halves(x_ptr, y_ptr, R: gl.constexpr, W: gl.constexpr, L: gl.constexpr,
           Q: gl.constexpr):
    h = gl.arange(0, 2, layout=gl.SliceLayout(1, gl.SliceLayout(2, L)))
    rows = gl.arange(0, R // 2, layout=gl.SliceLayout(0, gl.SliceLayout(2, L)))
    cols = gl.arange(0, W, layout=gl.SliceLayout(0, gl.SliceLayout(1, L)))
    offs = ((gl.expand_dims(gl.expand_dims(h, 1), 2) * (R // 2)
             + gl.expand_dims(gl.expand_dims(rows, 0), 2)) * W
            + gl.expand_dims(gl.expand_dims(cols, 0), 1))
    x = gl.load(x_ptr + offs)
    part = gl.sum(x, axis=1)
    total = gl.sum(gl.convert_layout(part, Q), axis=0)
    total = gl.convert_layout(total, gl.SliceLayout(0, gl.SliceLayout(1, L)))
    gl.store(y_ptr + offs, x / gl.expand_dims(gl.expand_dims(total, 0), 1))


mode = sys.argv[1]
split = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout=[[1, 0]])
whole_cta = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout=[[0, 0]])
if mode == "partials":
    L3 = gl.BlockedLayout([1, 1, 4], [1, 4, 8], [1, 4, 1], [2, 1, 0], cga_layout=[[1, 0, 0]])
    fn, consts = halves, {"R": 256, "W": 32, "L": L3, "Q": whole_cta}
else:
    fn, consts = whole, {"R": 256, "W": 32, "MODE": 0 if mode == "reduce" else 1,
                         "L": split, "L1": whole_cta}
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", **{k: "constexpr" for k in consts}}
compiled = triton.compile(GluonASTSource(fn=fn, signature=sig, constexprs=consts),
                          target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "num_ctas": 2})
ptx = compiled.asm["ptx"]
print("compiled:", {p: len(re.findall(re.escape(p), ptx))
                    for p in ("mapa", "shared::cluster", "barrier.cluster")})
"""

MODES = ("reduce", "convert", "partials")


def run(mode: str) -> str:
    """One line: the PTX's cluster instructions, or the compiler's first error line (the
    compiler may abort the process, so each mode runs in its own)."""
    with tempfile.TemporaryDirectory() as tmp:  # @gluon.jit needs a source file
        path = os.path.join(tmp, "cluster_probe.py")
        with open(path, "w") as f:
            f.write(SOURCE)
        proc = subprocess.run(
            [sys.executable, path, mode], capture_output=True, text=True, timeout=300
        )
    text = proc.stdout + proc.stderr
    if proc.returncode == 0:
        return text.strip().splitlines()[-1]
    errors = [
        ln.strip()
        for ln in text.splitlines()
        if re.search(r"error|Assertion|LLVM ERROR", ln) and "pipeline" not in ln
    ]
    return "failed: " + (errors[0] if errors else text.strip().splitlines()[-1])[:300]


def main(argv=None) -> int:
    import triton

    argparse.ArgumentParser(
        prog="python -m benchmarks probe cluster", description=__doc__.split("\n\n")[0]
    ).parse_args(argv)

    print(f"triton {triton.__version__}: a tile's reduced axis split across 2 CTAs (sm_90)")
    for mode in MODES:
        print(f"{mode:<9} " + textwrap.shorten(run(mode), 400), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
