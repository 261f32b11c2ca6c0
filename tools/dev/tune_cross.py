"""Time the norm backwards of the ops suite (``NormBackward`` rows) under tunings of the
normalization scheduler, on layoutfuse (and with ``--peers`` eager and torch.compile), with
the read ceiling of the same run and each kernel's device time (``harness.kernel_times``):
``PYTHONPATH=src:. python tools/dev/tune_cross.py [OUT.json] [--peers] [--filter S]
[FIELD=V[,FIELD=V...] ...]`` (each argument with ``=`` one tuning of
``NormalizationTuning``; none: the defaults). Run with ``LAYOUTFUSE_MEASURE=0`` so that the
measured choice does not replace the tuning's plan. A measurement tool for the tuning's
defaults, not part of the product."""

from __future__ import annotations

import json
import sys

import torch

from benchmarks.harness import gbps, kernel_times, measure_ceilings, time_kernel
from benchmarks.op_cases import FULL, QUICK, backward_cases
from benchmarks.op_rows import Draw, declare
from benchmarks.reference import as_outputs
from layoutfuse.nvfuser import FusionCache, FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT


def _layoutfuse(op, xs, fields: dict[str, int]):
    FusionCache.reset()
    fd = FusionDefinition()
    with fd:
        for o in op.define(fd, declare(fd, xs)):
            fd.add_output(o)
    fd.executor().configure(tuning=DEFAULT.with_fields(normalization=fields))
    op.checker(xs)(tuple(fd.execute(xs)))
    return lambda: fd.execute(xs), [repr(s.params) for s in fd.executor().last_run.segments]


def _peer(op, xs, compiled: bool):
    fn = op.function()
    if compiled:
        fn = torch.compile(fn)
    return lambda: fn(*xs)


def main(argv: list[str]) -> int:
    out = next((a for a in argv if a.endswith(".json")), None)
    peers = "--peers" in argv
    only = argv[argv.index("--filter") + 1] if "--filter" in argv else ""
    tunings = [a for a in argv if "=" in a] or [""]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ceil = measure_ceilings(device)
    rows = []
    sizes = FULL if device == "cuda" else QUICK["cpu"]  # the interpreter: a smoke run
    for name, op, shapes, _ in backward_cases(sizes):
        for dtype in (torch.float32, torch.bfloat16):
            case = f"{name}_{str(dtype).removeprefix('torch.')}"
            if only not in case:
                continue
            xs = op.inputs(shapes, dtype, Draw.seeded(device, 0))
            outs = as_outputs(op.function()(*xs))
            nbytes = op.read_bytes(xs) + sum(o.numel() * o.element_size() for o in outs)
            runs = [(f"peer={p}", None) for p in (("eager", "compile") if peers else ())]
            runs += [
                (t, {k: int(v) for k, v in (kv.split("=") for kv in t.split(",") if kv)})
                for t in tunings
            ]
            for label, fields in runs:
                params = []
                if fields is None:
                    fn = _peer(op, xs, label.endswith("compile"))
                else:
                    fn, params = _layoutfuse(op, xs, fields)
                ms = time_kernel(fn, device)
                each = kernel_times(fn, device) if device == "cuda" else {}
                row = dict(
                    case=case,
                    tuning=label or "default",
                    ms=ms,
                    gbps=gbps(nbytes, ms),
                    pct_read=100 * gbps(nbytes, ms) / ceil["read_gbps"],
                    kernel_ms=each,
                    params=params,
                )
                rows.append(row)
                kernels = " ".join(f"{k[:24]}={v:.4f}" for k, v in each.items())
                print(
                    f"{case:<28} {row['tuning']:<44} {ms:8.4f} ms {row['gbps']:7.0f} GB/s "
                    f"{row['pct_read']:5.1f}%  {kernels}",
                    flush=True,
                )
    if out:
        json.dump(dict(ceilings=ceil, rows=rows), open(out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
