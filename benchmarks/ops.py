"""``python -m benchmarks ops [--quick] [--out PATH] [--filter S] [--tuning T] [--list]``:
the ops suite (issue 14, item 8) on layoutfuse, eager PyTorch and torch.compile in one run.

cat of 2-4 inputs along the inner and the outer dim, slice + pointwise, pad,
index_select and embedding gathers of vocabulary rows, take_along_axis, cumsum over the
inner and the outer dim, topk and argsort of rows, and dropout (uniform + where + mul),
each in fp32 and bf16 (cases: :mod:`benchmarks.op_cases`; ops: :mod:`benchmarks.op_rows`).
Every system's result is checked against eager before it is timed (dropout: the kept
fraction and the kept values, since each system has its own RNG). The result JSON is
:mod:`benchmarks.report`'s, with the read and copy ceilings of this process; each
system's entry has ``pct`` (of the read ceiling) and ``pct_copy`` (of the copy
bandwidth); ``summary`` has a ``memory_bound`` group, and ``target`` lists the
memory-bound cases where layoutfuse is under 85% of the copy bandwidth or more than 2%
behind the faster peer.

``--tuning scan.split_max_chunk=2048`` runs layoutfuse's heuristics with those fields of
``schedulers.tuning.Tuning`` replaced (``benchmarks.tune``'s syntax): an A/B of a knob is
two runs, one without it. On the CPU (no CUDA, or ``--device cpu``) the sizes are tiny and the kernels run in
Triton's interpreter: a numerics run, each call timed once, torch.compile left out unless
``--systems`` names it. ``--quick`` on a GPU is a smoke run at smaller sizes.
``python -m benchmarks chart RESULT.json`` draws the result.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from benchmarks import report
from benchmarks.harness import synchronize
from benchmarks.layoutfuse_runner import LayoutfuseRunner
from benchmarks.op_cases import FULL, OP_CASES, QUICK, OpCase, op_cases
from benchmarks.op_rows import declare
from benchmarks.peers import CompilePeer
from benchmarks.suite import measure, pick_systems
from benchmarks.tune import parse_tuning
from layoutfuse.schedulers.tuning import Tuning

COPY_TARGET_PCT = 85.0


class OpsLayoutfuse(LayoutfuseRunner):
    """The case's fusion through ``layoutfuse.nvfuser`` (planned under ``tuning``, None:
    the defaults); ``schedule()`` is ``str(fd.last_schedule())``."""

    def __init__(self, tuning: Tuning | None = None) -> None:
        super().__init__()
        self.tuning = tuning

    def prepare(self, case: OpCase, inputs: list) -> Callable:
        self._fd = None
        nvf = self._frontend()
        with nvf.FusionDefinition() as fd:
            outs = case.op.define(fd, declare(fd, inputs))
            for out in outs:
                fd.add_output(out)
        if self.tuning is not None:
            fd.executor().configure(tuning=self.tuning)
            nvf.FusionCache.reset()  # a later case's fusion gets an executor of its own
        self._fd = fd
        single = len(outs) == 1

        def run(*xs):
            results = fd.execute(list(xs))
            return results[0] if single else tuple(results)

        return run


class OpsEager:
    name = "eager"

    def prepare(self, case: OpCase, inputs: list) -> Callable:
        return case.op.function()


SYSTEMS: dict[str, Callable] = {
    "layoutfuse": OpsLayoutfuse,
    "eager": OpsEager,
    "compile": lambda: CompilePeer(lambda case: case.op.function()),
}


def time_once(device: str) -> Callable:
    """One synchronized call (the interpreter's time says nothing of a kernel's)."""

    def timer(fn: Callable[[], object], case: OpCase) -> float:
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        return max(time.perf_counter() - start, 1e-9) * 1e3

    return timer


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks ops",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    p.add_argument("--out", type=Path, help="result file (default benchmarks/results/...)")
    p.add_argument("--filter", default="", help="only cases whose name contains this (a,b: both)")
    p.add_argument(
        "--systems",
        help="comma-separated subset of layoutfuse,eager,compile (default: all three on "
        "CUDA, layoutfuse,eager on the CPU)",
    )
    p.add_argument("--device", help="default: cuda when available, else cpu")
    p.add_argument(
        "--tuning",
        default="",
        help="scheduler.field=int,...: layoutfuse's heuristics under these tuning fields",
    )
    p.add_argument("--list", action="store_true", help="print the cases and stop")
    return p.parse_args(argv)


def select_cases(device: str, quick: bool, substr: str) -> list[OpCase]:
    on_cpu = not device.startswith("cuda")
    sizes = QUICK["cpu"] if on_cpu else QUICK["cuda"] if quick else FULL
    parts = [s for s in substr.split(",") if s]
    return [c for c in op_cases(sizes) if all(s in c.name for s in parts)]


def add_copy_pct(doc: dict) -> None:
    """Each system's GB/s as a percentage of the copy bandwidth (read + write bytes)."""
    copy = doc["ceilings"]["copy_gbps"]
    for row in doc["rows"]:
        for s in doc["systems"]:
            res = row[s]
            res["pct_copy"] = 100 * res["gbps"] / copy if res["gbps"] is not None else None


def missed_targets(rows: list[dict], systems: list[str]) -> list[dict]:
    """The memory-bound cases where layoutfuse is under 85% of the copy bandwidth or more
    than 2% behind the faster peer (or fails), worst ratio to the peer first."""
    peers = [s for s in systems if s != "layoutfuse"]
    missed = []
    for row in rows:
        if not row["memory_bound"] or "layoutfuse" not in row:
            continue
        mine = row["layoutfuse"]
        runs = [row[s]["gbps"] for s in peers if not row[s]["error"]]
        best = max(runs, default=None)
        ratio = None if mine["error"] or not best else mine["gbps"] / best
        low = mine["error"] is not None or mine["pct_copy"] < COPY_TARGET_PCT
        slow = ratio is not None and ratio < 1 - report.BEHIND_MARGIN
        if low or slow:
            missed.append(
                {
                    "case": row["case"],
                    "pct_copy": mine["pct_copy"],
                    "ratio_to_peer": ratio,
                    "under_85pct": low,
                    "behind_peer": slow,
                    "error": mine["error"],
                }
            )
    return sorted(missed, key=lambda m: m["ratio_to_peer"] or 0.0)


def target_lines(target: dict) -> list[str]:
    n, missed = target["memory_bound_cases"], target["missed"]
    lines = [
        f"target (memory-bound cases: >= {COPY_TARGET_PCT:.0f}% of copy and within 2% of the "
        f"faster peer): {n - len(missed)} of {n} met"
    ]
    for m in missed:
        figures = (
            f"ERR {m['error'][:60]}"
            if m["error"]
            else f"{m['pct_copy']:5.1f}% of copy, {m['ratio_to_peer'] or 0:.3f}x the peer"
        )
        lines.append(f"  {m['case']:<40} {figures}")
    return lines


def finish(doc: dict) -> list[str]:
    """The ops suite's additions to a finished result: copy percentages, the memory-bound
    summary, the target check and the behind list's memory-bound flags."""
    add_copy_pct(doc)
    names, rows = doc["systems"], doc["rows"]
    bound = [r for r in rows if r["memory_bound"]]
    doc["summary"]["memory_bound"] = report.summarize(bound, names)["all"]
    flags = {r["case"]: r["memory_bound"] for r in rows}
    for b in doc["behind"]:
        b["memory_bound"] = flags[b["case"]]
    checked = doc["env"]["device"].startswith("cuda") and "layoutfuse" in names
    doc["target"] = {
        "copy_pct": COPY_TARGET_PCT,
        "behind_margin": report.BEHIND_MARGIN,
        "memory_bound_cases": len(bound),
        "checked": checked,
        "missed": missed_targets(rows, names) if checked else [],
    }
    if not checked:
        return ["target not checked (it needs CUDA timings of layoutfuse)"]
    return target_lines(doc["target"])


def run(args: argparse.Namespace, command: str) -> int:
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    on_cuda = device.startswith("cuda")
    cases = select_cases(device, args.quick, args.filter)
    if args.list:
        for c in cases:
            bound = "memory-bound" if c.memory_bound else "not memory-bound: " + c.why
            shapes = " ".join(str(list(s)) for s in c.shapes)
            print(f"{c.name:<36} {shapes:<40} bytes={c.bytes_moved:<11} {bound}")
        return 0
    if not cases:
        print(f"no case of the ops suite matches --filter {args.filter!r}")
        return 2
    default = "layoutfuse,eager,compile" if on_cuda else "layoutfuse,eager"
    try:
        tuning = parse_tuning(args.tuning) if args.tuning else None
    except ValueError as e:
        print(f"--tuning: {e}")
        return 2
    table = dict(SYSTEMS, layoutfuse=lambda: OpsLayoutfuse(tuning))
    systems = pick_systems(args.systems or default, table)
    if isinstance(systems, str):
        print(systems)
        return 2
    timer = None if on_cuda else time_once(device)
    kw = {"timer": timer, "kind": OP_CASES}
    measure("ops", cases, systems, device, command, args.out, args.quick, None, kw, finish)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return run(parse_args(argv), shlex.join(["python", "-m", "benchmarks", "ops", *argv]))


if __name__ == "__main__":
    sys.exit(main())
