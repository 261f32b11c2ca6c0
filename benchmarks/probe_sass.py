"""Instructions per byte of each kernel's main loop, compiled for sm_90 without a GPU:
``python -m benchmarks probe sass [CASE...] [--seed N --cases K] [--tuning f=v] [--worst W]``.

Each case (random-suite names such as ``r2_035``, or ``--seed``/``--cases`` to draw a
set; fixed-suite names as ``python -m benchmarks suite ... --list`` prints them) is
planned at its real size on ``meta`` tensors (nothing runs, nothing is allocated) and
each kernel it would launch is compiled for sm_90 with the launcher's specialization
and disassembled (Triton's bundled ``nvdisasm``). A kernel's main region is its longest
loop (from a backward branch's target to the branch), or the whole kernel where it has
no loop; the line gives its SASS instructions, its global loads and stores (``LDG``/
``STG``, with their widths) and the instructions per byte they move per thread.

Why: an H100 or H200 issues about 4 warp instructions per cycle per multiprocessor, so at
3.3-4.8 TB/s a kernel that streams memory has a budget of some 8 instructions per byte
per thread (``BUDGET``; a warp instruction serves 32 threads). A region above it is
issue-bound, whatever its tile: a 32-bit division by a runtime extent is some 25
instructions per element (``ReductionParams.carry_index``). This finds such kernels on
the CPU; only the GPU says what they cost (``python -m benchmarks tune``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

import layoutfuse.nvfuser as nvf
from benchmarks import tune
from benchmarks.cases import Case
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.random_cases import draw_cases
from benchmarks.reference import _inputs
from layoutfuse.codegen.hopper_check import compile_launch

# warp instructions a multiprocessor issues per cycle (4 schedulers) x 32 threads, over
# the bytes per cycle per multiprocessor at the read ceiling (H200: 4.8 TB/s, 132 SMs,
# 1.98 GHz: 18 B; H100: 3.35 TB/s at 1.98 GHz: 13 B): instructions per thread per byte
BUDGET = 4 * 32 / 16
WIDTHS = {"128": 16, "64": 8, "U16": 2, "S16": 2, "U8": 1, "S8": 1}


@dataclass(frozen=True)
class Region:
    """A kernel's main loop (or the whole kernel): its instructions and memory traffic."""

    kernel: str
    looped: bool
    instructions: int
    loads: dict[str, int]
    stores: dict[str, int]
    bytes: int

    @property
    def per_byte(self) -> float:
        return self.instructions / max(1, self.bytes)


def nvdisasm() -> Path:
    import triton

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"


def sass(cubin: bytes) -> list[tuple[int, str]]:
    """(address, instruction) of each SASS instruction of ``cubin``."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        name = f.name
    try:
        text = subprocess.run(
            [str(nvdisasm()), "-c", name], capture_output=True, text=True, check=True
        ).stdout
    finally:
        os.unlink(name)
    out, labels, pending = [], {}, []
    for line in text.splitlines():
        m = re.match(r"^\s*(\.L_x_\d+):", line)
        if m:
            pending.append(m.group(1))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            addr = int(m.group(1), 16)
            for label in pending:
                labels[label] = addr
            pending = []
            out.append((addr, m.group(2)))
    # branch targets as addresses
    resolved = []
    for addr, ins in out:
        m = re.search(r"BRA\s+`\((\.L_x_\d+)\)", ins)
        if m and m.group(1) in labels:
            ins = f"{ins} ->{labels[m.group(1)]}"
        resolved.append((addr, ins))
    return resolved


def _width(ins: str) -> int:
    op = ins.split()[0] if not ins.startswith("@") else ins.split()[1]
    for suffix, width in WIDTHS.items():
        if f".{suffix}" in op:
            return width
    return 4


def _streamed(body: list[tuple[int, str]]) -> int:
    """Bytes a region loads from the input (not a finish's ``.STRONG`` partials)."""
    return sum(_width(i) for _, i in body if "LDG" in i and "STRONG" not in i)


def region(name: str, cubin: bytes) -> Region:
    """The loop that streams the most input bytes (the main loop, not a ticket finish's
    loop over partials), the longest among equals; else the whole kernel."""
    code = sass(cubin)
    body, looped = code, False
    for addr, ins in code:
        m = re.search(r"->(\d+)$", ins)
        if m and int(m.group(1)) < addr:
            loop = [(a, i) for a, i in code if int(m.group(1)) <= a <= addr]
            key = (_streamed(loop), len(loop))
            if not looped or key > (_streamed(body), len(body)):
                body, looped = loop, True
    loads: dict[str, int] = {}
    stores: dict[str, int] = {}
    moved = 0
    for _, ins in body:
        op = ins.split()[1] if ins.startswith("@") else ins.split()[0]
        if op.startswith(("LDG", "STG")):
            table = loads if op.startswith("LDG") else stores
            table[op] = table.get(op, 0) + 1
            moved += _width(ins)
    return Region(name, looped, len(body), loads, stores, moved)


def meta_inputs(case: Case) -> list[torch.Tensor]:
    return _inputs(
        case, lambda physical: torch.empty(physical, dtype=case.torch_dtype, device="meta")
    )


def regions(case: Case, tuning=None) -> tuple[list, list[Region]]:
    """(params, a Region per kernel) of ``case`` planned on meta tensors."""
    nvf.FusionCache.reset()
    fd = define_fusion(nvf, case)
    executor = fd.executor()
    if tuning is not None:
        executor.configure(tuning=tuning)
    record = executor.plan(meta_inputs(case))
    found = []
    for r in record.launches:
        art = compile_launch(r.loaded, list(r.args), r.meta)
        found.append(region(art.name, art.cubin))
    return list(record.params), found


def describe(case: Case, params: list, found: list[Region]) -> str:
    kinds = "+".join(type(p).__name__.replace("Params", "") for p in params)
    parts = []
    for reg in found:
        moves = ", ".join(f"{n} {k}" for k, n in sorted({**reg.loads, **reg.stores}.items()))
        where = "loop" if reg.looped else "kernel"
        flag = " ISSUE-BOUND" if reg.per_byte > BUDGET else ""
        parts.append(
            f"{reg.kernel} {where}: {reg.instructions} instr, {reg.bytes} B "
            f"({moves}): {reg.per_byte:.1f}/B{flag}"
        )
    return f"{case.name:<58} {kinds}: " + "; ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks probe sass",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--seed", type=int, help="draw the random suite's cases of this seed")
    ap.add_argument("--cases", dest="count", type=int, default=120)
    ap.add_argument("--filter", action="append", default=[])
    ap.add_argument("--tuning", action="append", default=[], help="f=v, as benchmarks tune")
    ap.add_argument("--worst", type=int, default=0, help="then list the W highest per byte")
    args = ap.parse_args(argv)
    cases = tune.find_cases(args.cases, args.filter) if args.cases or args.filter else []
    if args.seed is not None:
        cases += draw_cases(args.seed, args.count)
    if not cases:
        ap.error("no case given (names, --filter or --seed)")
    tuning = tune.parse_tuning(",".join(args.tuning)) if args.tuning else None
    ranked = []
    for k, case in enumerate(cases):
        try:
            params, found = regions(case, tuning)
            line = describe(case, params, found)
            ranked += [(reg.per_byte, case.name, reg.kernel) for reg in found]
        except Exception as e:  # noqa: BLE001 - a case that fails is reported
            line = f"{case.name:<58} failed: {e!r}"[:300]
        print(f"[{k + 1}/{len(cases)}] {line}", flush=True)
    if args.worst:
        print(f"\nthe {args.worst} highest instructions per byte (budget {BUDGET:.0f}):")
        for per_byte, name, kernel in sorted(ranked, reverse=True)[: args.worst]:
            print(f"  {per_byte:6.1f}  {name}  {kernel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
