"""A sum whose masked lanes are 0 without a select issues its loads first
(``ReductionParams.zero_selects``).

A reduction step reads its tile with masked loads (``other=0``) and then selected the
identity into masked lanes (``tl.where(mask, v, 0)``). The select keeps each load's
predicate live until its value is used; with more masked loads per thread than the 7
predicate registers, ptxas issued each load after the previous one's math: a DRAM round
trip each. A sliced fp32 RMS norm's sum of squares (random suite r3_015, 16 scalar loads
a step) took 21 us where torch.compile's kernels took 3.5 (H100, 9ed053e). A sum over
values that are 0 wherever their loads are masked (loads, casts, negations, absolute
values, sums, differences and products of such) now adds them as they are.

Checked: the sm_90 SASS of the step (every load before the first multiply) and values
against torch with R tails, for prologues that keep zeros and for ones that do not
(``exp``: the select stays).
"""

from __future__ import annotations

import pytest
import torch

from benchmarks.probe_sass import sass
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")


def strided_rows(rows: int, n: int, dtype=torch.float32) -> torch.Tensor:
    """[2, 6, n] whose reduced dim 2 has a stride of 12 (every other row of 6): scalar
    loads, as r3_015 reads them."""
    g = torch.Generator().manual_seed(n)
    parent = torch.randn(2, 2 * n, rows, generator=g).to(dtype)
    return parent[:, 1::2, :].permute(0, 2, 1)


def reduce_rows(x: torch.Tensor, prologue: str):
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        v = {
            "x": lambda: t,
            "square": lambda: fd.ops.mul(t, t),
            "neg_abs": lambda: fd.ops.neg(fd.ops.abs(t)),
            "sum_sq": lambda: fd.ops.add(fd.ops.mul(t, t), t),
            "exp": lambda: fd.ops.exp(t),
        }[prologue]()
        fd.add_output(fd.ops.sum(v, dims=[2]))
    return fd


REFERENCE = {
    "x": lambda d: d,
    "square": lambda d: d * d,
    "neg_abs": lambda d: -d.abs(),
    "sum_sq": lambda d: d * d + d,
    "exp": lambda d: d.exp(),
}


def opcode(ins: str) -> str:
    """The instruction's opcode, past a predicate (``@P2 FMUL R1, ...`` -> ``FMUL``)."""
    words = ins.split()
    return words[1] if words[0].startswith("@") else words[0]


def loads_before_math(cubin: bytes) -> tuple[int, int]:
    """(global loads before the first float multiply or add, global loads) of the
    kernel's main loop (its longest backward branch's body)."""
    code = sass(cubin)
    loops = []
    for addr, ins in code:
        if "BRA" in ins and "->" in ins:
            target = int(ins.rsplit("->", 1)[1])
            if target < addr:
                loops.append((addr - target, target, addr))
    assert loops, "no loop in the kernel"
    _, start, end = max(loops)
    body = [ins for addr, ins in code if start <= addr <= end]
    loads = [k for k, ins in enumerate(body) if "LDG" in ins]
    math = [k for k, ins in enumerate(body) if opcode(ins) in ("FMUL", "FADD", "FFMA")]
    first_math = min(math) if math else len(body)
    return sum(k < first_math for k in loads), len(loads)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("prologue", ["x", "square", "neg_abs", "sum_sq", "exp"])
@pytest.mark.parametrize("n", [3000, 2999])
def test_values_with_and_without_the_select(prologue, n, dtype):
    x = strided_rows(6, n, dtype)
    fd = reduce_rows(x, prologue)
    (out,) = fd.execute([x])
    want = REFERENCE[prologue](x.double()).sum(2)
    tol = 1e-5 if dtype == torch.float32 else 1e-2  # bf16: the output's rounding
    torch.testing.assert_close(out.double(), want, rtol=tol, atol=1e-3 + tol * 10)
    source = fd.last_triton_code() or ""
    selected = "v = tl.where(mask" in source
    assert selected == (prologue == "exp"), source


def test_the_strided_sum_of_squares_issues_its_loads_first():
    x = strided_rows(6, 32000)
    fd = reduce_rows(x, "square")
    fd.execute([x])
    (main, *_) = compile_last_run(fd.executor())
    first, loads = loads_before_math(main.cubin)
    assert loads >= 8 and first == loads, (first, loads)


def test_the_tuning_keeps_the_select():
    x = strided_rows(6, 2999)
    fd = configured(
        reduce_rows(x, "square"), tuning=DEFAULT.with_fields(reduction=dict(zero_selects=0))
    )
    (out,) = fd.execute([x])
    torch.testing.assert_close(out.double(), (x.double() ** 2).sum(2), rtol=1e-5, atol=1e-3)
    assert "v = tl.where(mask" in (fd.last_triton_code() or "")
