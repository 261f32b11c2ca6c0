"""Host overhead of ``fd.execute`` against one eager torch op, and first-execute time.

``python -m layoutfuse.bench.overhead [--out PATH]``: on a tiny tensor (so device
time is negligible) times N back-to-back calls of eager ``x + 1`` and of a
layoutfuse add fusion (the replay path), synchronizing once at the end; and times
the first execute of a fresh fusion (code generation plus Triton compilation).
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def _per_call_us(fn, n: int, sync) -> float:
    for _ in range(20):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def main(argv=None) -> int:
    from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition

    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("-n", type=int, default=2000)
    args = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    n = args.n if device == "cuda" else 50
    x = torch.randn(1024, device=device)
    FusionCache.reset()

    def define(kind: str):
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
            if kind == "add":
                one = fd.define_scalar(1.0, dtype=DataType.Double)
                fd.add_output(fd.ops.add(t0, one))
            else:
                fd.add_output(fd.ops.sum(t0, dims=[0]))
        return fd

    rows = {}
    for kind, eager in (("add", lambda: x + 1), ("sum", lambda: x.sum(0))):
        fd = define(kind)
        sync()
        t0 = time.perf_counter()
        fd.execute([x])
        sync()
        first_ms = (time.perf_counter() - t0) * 1e3
        rows[kind] = dict(
            eager_us=_per_call_us(eager, n, sync),
            layoutfuse_us=_per_call_us(lambda fd=fd: fd.execute([x]), n, sync),
            first_execute_ms=first_ms,
        )
        print(f"{kind}: eager {rows[kind]['eager_us']:.1f} us/call, layoutfuse "
              f"{rows[kind]['layoutfuse_us']:.1f} us/call, first execute {first_ms:.0f} ms",
              flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(device=device, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
