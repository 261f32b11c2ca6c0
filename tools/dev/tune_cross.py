"""Time the norm backwards of the ops suite (``NormBackward`` rows) under tunings of the
normalization scheduler's cross reductions, on layoutfuse alone, with the read ceiling of
the same run: ``PYTHONPATH=src:. python tools/dev/tune_cross.py [OUT.json] [FIELD=V ...]``
(each FIELD=V a tuning; none: cross_warps_per_sm 16, 32, 64). A measurement tool for the
tuning's defaults, not part of the product."""

from __future__ import annotations

import json
import sys

import torch

from benchmarks.harness import gbps, measure_ceilings, time_kernel
from benchmarks.op_cases import FULL, QUICK, backward_cases
from benchmarks.op_rows import Draw, declare
from benchmarks.reference import as_outputs
from layoutfuse.nvfuser import FusionCache, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT


def main(argv: list[str]) -> int:
    out = argv[0] if argv and argv[0].endswith(".json") else None
    fields = [a for a in argv if "=" in a] or [f"cross_warps_per_sm={n}" for n in (16, 32, 64)]
    # each a tuning: FIELD=V[,FIELD=V...]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ceil = measure_ceilings(device)
    rows = []
    sizes = FULL if device == "cuda" else QUICK["cpu"]  # the interpreter: a smoke run
    for name, op, shapes, _ in backward_cases(sizes):
        for dtype in (torch.float32, torch.bfloat16):
            xs = op.inputs(shapes, dtype, Draw.seeded(device, 0))
            outs = as_outputs(op.function()(*xs))
            nbytes = op.read_bytes(xs) + sum(o.numel() * o.element_size() for o in outs)
            for f in fields:
                fields_of = {k: int(v) for k, v in (kv.split("=") for kv in f.split(","))}
                FusionCache.reset()
                fd = FusionDefinition()
                with fd:
                    for o in op.define(fd, declare(fd, xs)):
                        fd.add_output(o)
                fd.executor().configure(tuning=DEFAULT.with_fields(normalization=fields_of))
                outs = fd.execute(xs)
                op.checker(xs)(tuple(outs))
                ms = time_kernel(lambda fd=fd, xs=xs: fd.execute(xs), device)
                fd.execute(xs, profile=True)
                rec = fd.executor().last_run
                each = [r.time_ms for r in rec.launches]
                row = dict(
                    case=f"{name}_{dtype}",
                    tuning=f,
                    ms=ms,
                    gbps=gbps(nbytes, ms),
                    pct_read=100 * gbps(nbytes, ms) / ceil["read_gbps"],
                    kernels=len(rec.launches),
                    kernel_ms=each,
                    params=[repr(s.params) for s in rec.segments],
                )
                rows.append(row)
                print(
                    f"{row['case']:<36} {f:<24} {ms:8.4f} ms {row['gbps']:8.1f} GB/s "
                    f"{row['pct_read']:5.1f}% read  kernels (ms) {each}",
                    flush=True,
                )
    if out:
        json.dump(dict(ceilings=ceil, rows=rows), open(out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
