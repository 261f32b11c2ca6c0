"""Registers, spills, resident programs and PTX vector widths of every kernel that random
cases would launch, compiled for sm_90 on the CPU (nothing runs):
``PYTHONPATH=src:. python tools/dev/register_scan.py r1_013,r2_106,... [TUNING]`` or
``... all`` (the 360 cases of seeds 1-3); TUNING in ``benchmarks.tune.parse_tuning``'s
syntax. A line per kernel; programs a multiprocessor from the registers and warps. Finds
tiles whose loads cannot be vectors and keep many elements a thread (250 registers for
r1_013 at session 24). A diagnosis tool, not part of the product."""

from __future__ import annotations

import contextlib
import io
import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks import tune
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.random_cases import draw_cases
from benchmarks.reference import _inputs
from layoutfuse.codegen.hopper_check import compile_launch

REGISTERS_PER_SM, THREADS_PER_SM = 65536, 2048


def scan(case, tuning) -> list[str]:
    nvf.FusionCache.reset()
    fd = define_fusion(nvf, case)
    ex = fd.executor()
    if tuning is not None:
        ex.configure(tuning=tuning)
    meta = _inputs(case, lambda shape: torch.empty(shape, dtype=case.torch_dtype, device="meta"))
    with contextlib.redirect_stdout(io.StringIO()):
        rec = ex.plan(meta)
    lines = []
    for params, launch in zip(rec.params, rec.launches):
        art = compile_launch(launch.loaded, list(launch.args), launch.meta)
        regs, warps = art.resources.get("REG", 0), launch.meta.get("num_warps", 4)
        threads = 32 * warps
        per_sm = min(THREADS_PER_SM // threads, REGISTERS_PER_SM // max(1, threads * regs))
        lines.append(
            f"{case.name[:64]:64s} {params.scheduler[:5]} w={warps} regs={regs} "
            f"local={art.local_bytes} programs/SM={per_sm} {dict(art.vector_widths)}"
        )
    return lines


def main(argv: list[str]) -> int:
    tuning = tune.parse_tuning(argv[1]) if len(argv) > 1 else None
    if argv[0] == "all":
        cases = [c for seed in (1, 2, 3) for c in draw_cases(seed, 120, "cuda")]
    else:
        found = tune.random_case_names(argv[0].split(","))
        cases = [found[n] for n in argv[0].split(",")]
    for case in cases:
        try:
            lines = scan(case, tuning)
        except Exception as e:  # noqa: BLE001 - a case that fails is reported, not fatal
            lines = [f"{case.name[:64]:64s} failed {e!r}"[:200]]
        print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
