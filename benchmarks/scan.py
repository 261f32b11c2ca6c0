"""Scan kernels (cumsum, argsort, topk) against eager torch.

``python -m benchmarks scan [--out PATH] [--quick]``: for each case, the device time of
``fd.execute`` (``harness.time_kernel``: L2 emptied before each call, median) and of the
eager op, the mode the scan scheduler chose, and the bytes moved per second (the input
read once, the outputs written once). Cases: row-major and column-major fp32 and bf16
inputs, the scanned dim stride-1 or not, rows that fit a tile and rows that do not
(cumsum ``loop`` and ``split``, sort ``rank``). ``--out`` writes a JSON with the
environment (commit, versions, device). Meant for CUDA; on the CPU it runs the
interpreter at the quick sizes.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

import torch

from benchmarks.harness import environment, gbps, time_kernel
from layoutfuse.nvfuser import FusionDefinition

# (op, shape, dim, column-major, dtype, k)
CASES = [
    ("cumsum", (8192, 4096), 1, False, torch.float32, 0),
    ("cumsum", (8192, 4096), 0, False, torch.float32, 0),
    ("cumsum", (4096, 8192), 1, True, torch.bfloat16, 0),
    ("cumsum", (1024, 65536), 1, False, torch.float32, 0),  # loop
    ("cumsum", (4, 1 << 24), 1, False, torch.float32, 0),  # split
    ("argsort", (65536, 256), 1, False, torch.float32, 0),
    ("argsort", (8192, 2048), 1, False, torch.bfloat16, 0),
    ("topk", (8192, 1024), 1, False, torch.float32, 8),
    ("topk", (64, 32768), 1, False, torch.bfloat16, 50),  # rank
]
QUICK = [
    ("cumsum", (64, 300), 1, False, torch.float32, 0),
    ("argsort", (64, 100), 0, True, torch.float32, 0),
    ("topk", (16, 100), 1, False, torch.bfloat16, 5),
]


def _fusion(op: str, x: torch.Tensor, dim: int, k: int) -> FusionDefinition:
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        if op == "topk":
            for o in fd.ops.topk(t, k, dim, largest=True):
                fd.add_output(o)
        elif op == "argsort":
            fd.add_output(fd.ops.argsort(t, dim))
        else:
            fd.add_output(fd.ops.cumsum(t, dim))
    return fd


def _eager(op: str, x: torch.Tensor, dim: int, k: int):
    if op == "topk":
        return lambda: torch.topk(x, k, dim)
    if op == "argsort":
        return lambda: torch.argsort(x, dim=dim)
    return lambda: torch.cumsum(x, dim)


def run_case(case, device: str) -> dict:
    op, shape, dim, column_major, dtype, k = case
    x = torch.randn(shape[::-1] if column_major else shape, device=device).to(dtype)
    x = x.t() if column_major else x
    fd = _fusion(op, x, dim, k)
    outs = fd.execute([x])
    params = fd.last_schedule()[0]
    out_bytes = sum(o.numel() * o.element_size() for o in outs)
    nbytes = x.numel() * x.element_size() + out_bytes
    ours = time_kernel(lambda: fd.execute([x]), device)
    eager = time_kernel(_eager(op, x, dim, k), device)
    return {
        "op": op,
        "shape": list(shape),
        "dim": dim,
        "column_major": column_major,
        "dtype": str(dtype).removeprefix("torch."),
        "k": k,
        "mode": params.mode,
        "layoutfuse_ms": ours,
        "eager_ms": eager,
        "layoutfuse_gbps": gbps(nbytes, ours),
        "eager_gbps": gbps(nbytes, eager),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks scan", description=__doc__)
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--quick", action="store_true", help="small sizes (the CPU's)")
    args = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    cases = QUICK if args.quick or device == "cpu" else CASES
    rows = []
    for case in cases:
        r = run_case(case, device)
        rows.append(r)
        print(
            f"{r['op']:8} {str(r['shape']):16} dim {r['dim']} "
            f"{'col' if r['column_major'] else 'row'} {r['dtype']:8} {r['mode']:6} "
            f"layoutfuse {r['layoutfuse_ms']:.3f} ms ({r['layoutfuse_gbps']:.0f} GB/s)  "
            f"eager {r['eager_ms']:.3f} ms ({r['eager_gbps']:.0f} GB/s)",
            flush=True,
        )
    if args.out:
        command = "python -m benchmarks scan " + shlex.join(argv or sys.argv[1:])
        with open(args.out, "w") as f:
            json.dump({"environment": environment(device, command), "results": rows}, f, indent=1)
    return 0
