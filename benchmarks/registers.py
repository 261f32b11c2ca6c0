"""Registers and spills of reduction variants, compiled for sm_90 without a GPU:
``python -m benchmarks probe registers CASE... [--filter S] [--variant f=v,...] [--table]``.

Each case (named as ``python -m benchmarks suite reduction --list`` prints them) is
planned at its real size on ``meta`` tensors (nothing runs, nothing is allocated), with
the heuristics' params or a variant of them (``--table``: every variant of
``benchmarks.tune``'s table for the case's template), and each kernel it would launch is
compiled for sm_90 with the launcher's specialization. A line per variant: the tile,
fp32 accumulators and bytes loaded per thread and step, ptxas's registers and local
(spill) bytes per thread, programs per SM that the registers allow, and the 16-byte
vector loads in the PTX. How the tile knobs of ``schedulers/reduction_tiles.py``
(``ReductionTuning``) were derived; the GPU measures the same variants with
``python -m benchmarks tune``.
"""

from __future__ import annotations

import argparse
import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks import tune
from benchmarks.cases import Case
from benchmarks.layoutfuse_runner import define_fusion
from layoutfuse.codegen.hopper_check import compile_launch
from layoutfuse.schedulers import reduction as rd

REGISTERS_PER_SM = 65536
THREADS_PER_SM = 2048


def meta_inputs(case: Case) -> list[torch.Tensor]:
    physical = [case.shape[d] for d in case.order]
    inverse = [case.order.index(d) for d in range(len(case.order))]
    return [
        torch.empty(physical, dtype=case.torch_dtype, device="meta").permute(*inverse)
        for _ in range(case.n_inputs)
    ]


def compile_variant(case: Case, var: dict):
    """(the reduction's params, the compiled kernels) of ``case`` under ``var``, planned on
    meta tensors (nothing launched)."""
    nvf.FusionCache.reset()
    fd = define_fusion(nvf, case)
    executor = fd.executor()
    executor.configure(heuristics=tune.variant_heuristics("reduction", var))
    record = executor.plan(meta_inputs(case))
    params = next(p for p in record.params if isinstance(p, rd.ReductionParams))
    return params, [compile_launch(r.loaded, list(r.args), r.meta) for r in record.launches]


def describe(case: Case, params, arts) -> str:
    threads = 32 * params.num_warps
    acc = params.block_x * params.block_r * params.block_y // threads
    loaded = acc * params.unroll * case.torch_dtype.itemsize
    parts = []
    for art in arts:
        res = art.resources
        regs = res.get("REG", 0)
        per_sm = min(THREADS_PER_SM // threads, REGISTERS_PER_SM // max(1, threads * regs))
        v4 = art.vector_widths.get("ld.global.v4", 0)
        parts.append(
            f"{art.name}: {regs} regs, {art.local_bytes} B spilled, "
            f"{per_sm} programs/SM, {v4} v4 loads"
        )
    rows = (
        f"{params.block_y} of group {params.y_group}, {params.block_r}"
        if params.y_group is not None
        else params.block_r
    )
    return (
        f"{case.name:<26} {params.template} [{rows}, {params.block_x}] "
        f"u={params.unroll} w={params.num_warps} "
        f"split={params.split} {params.finish}: {acc} acc/thread, {loaded} B/thread/step; "
        + "; ".join(parts)
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks probe registers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--filter", action="append", default=[])
    ap.add_argument("--variant", action="append", type=tune.parse_variant, default=[])
    ap.add_argument("--table", action="store_true", help="every variant of benchmarks.tune's table")
    args = ap.parse_args(argv)
    cases = [c for c in tune.find_cases(args.cases, args.filter) if c.op == "sum"]
    if not cases:
        ap.error("no reduction case given or matched")
    for case in cases:
        variants = args.variant or [dict()]
        if args.table:
            params, _ = compile_variant(case, {})
            variants = tune.VARIANTS[tune.kind_of(params)]
        for var in variants:
            try:
                params, arts = compile_variant(case, var)
                line = describe(case, params, arts)
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported
                line = f"{case.name:<26} {var}: failed {e!r}"[:240]
            print(f"{line} {var or ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
