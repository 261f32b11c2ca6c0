"""Time cases of the ops suite under tunings, on layoutfuse (and with ``--peers`` eager and
torch.compile), with the read ceiling of the same run and each kernel's device time
(``harness.kernel_times``): ``PYTHONPATH=src:. python tools/dev/tune_ops.py [OUT.json]
[--peers] [--filter S[,S...][|S...]] [SCHED.FIELD=V[,SCHED.FIELD=V...] ...]`` (each argument with
``=`` one tuning, ``benchmarks.tune.parse_tuning``'s syntax; a field without a scheduler
is ``NormalizationTuning``'s; none: the defaults). A filter's ``,`` joins substrings
that must all be in a case's name, ``|`` alternatives. Run with ``LAYOUTFUSE_MEASURE=0`` so
that the measured choice does not replace the tuning's plan. A measurement tool for the
tuning's defaults, not part of the product."""

from __future__ import annotations

import json
import sys

import torch

from benchmarks.harness import gbps, kernel_times, measure_ceilings, time_kernel
from benchmarks.op_rows import Draw, declare
from benchmarks.ops import select_cases
from benchmarks.reference import as_outputs
from benchmarks.tune import parse_tuning
from layoutfuse.nvfuser import FusionCache, FusionDefinition


def _layoutfuse(op, xs, text: str):
    FusionCache.reset()
    fd = FusionDefinition()
    with fd:
        for o in op.define(fd, declare(fd, xs)):
            fd.add_output(o)
    fields = ",".join(
        kv if "." in kv.split("=")[0] else "normalization." + kv for kv in text.split(",") if kv
    )
    fd.executor().configure(tuning=parse_tuning(fields))
    outs = fd.execute(xs)
    op.checker(xs)(outs[0] if len(outs) == 1 else tuple(outs))  # as the harness's call
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
    chosen = {c.name: c for f in only.split("|") for c in select_cases(device, False, f)}
    for c in chosen.values():  # CPU sizes off CUDA: a smoke run
        if True:
            op, case = c.op, c.name
            xs = op.inputs(c.shapes, c.torch_dtype, Draw.seeded(device, 0))
            outs = as_outputs(op.function()(*xs))
            nbytes = op.read_bytes(xs) + sum(o.numel() * o.element_size() for o in outs)
            runs = [(f"peer={p}", None) for p in (("eager", "compile") if peers else ())]
            runs += [(t, t) for t in tunings]
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
