"""Run a benchmark suite once per setting of a scheduler module's constants.

``python -m benchmarks tune-constants normalization layoutfuse.schedulers.normalization
"" ROW_BYTES=128 LOOP_TILE=8192,THREAD_BYTES=32 [--filter F] [--out DIR]``

Each variant (``""`` is the module as it is) sets the named module-level constants,
runs the suite with layoutfuse alone (same harness, same ceilings), and prints one
summary line per variant. A tool for deriving heuristics from measurements.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

from benchmarks.suite import main as bench_main
from layoutfuse.nvfuser import FusionCache


def parse_variant(text: str) -> dict[str, int]:
    out = {}
    for part in filter(None, text.split(",")):
        name, value = part.split("=")
        out[name.strip()] = int(value)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks tune-constants")
    ap.add_argument("suite")
    ap.add_argument("module")
    ap.add_argument("variants", nargs="+", help='NAME=INT[,NAME=INT]; "" = as is')
    ap.add_argument("--filter", default="")
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    mod = importlib.import_module(args.module)
    base = {k: getattr(mod, k) for v in args.variants for k in parse_variant(v)}
    rows = []
    for i, text in enumerate(args.variants):
        for k, v in base.items():
            setattr(mod, k, v)
        for k, v in parse_variant(text).items():
            setattr(mod, k, v)
        out = args.out / f"tune-{args.suite}-{i}.json"
        print(f"== variant {i}: {text or 'as is'}", flush=True)
        FusionCache.reset()               # new params must compile, not replay
        bench_main([args.suite, "--systems", "layoutfuse", "--filter", args.filter,
                    "--out", str(out)] + (["--quick"] if args.quick else []))
        res = json.loads(out.read_text())
        rows.append((text or "as is", {r["case"]: round(r["layoutfuse"]["gbps"] or 0)
                                       for r in res["rows"]}))
    print("\ncase" + "".join(f" | v{i}" for i in range(len(rows))))
    for case in rows[0][1]:
        print(case + "".join(f" | {r[1].get(case)}" for r in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
