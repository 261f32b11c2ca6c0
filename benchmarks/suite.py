"""``python -m benchmarks suite SUITE [--quick] [--out PATH] [--filter SUBSTR] [--tuning T]``
runs a suite (reduction, pointwise, normalization, seed) on layoutfuse, eager
PyTorch and torch.compile, prints a line per case and a summary, and writes the
result JSON (schema in :mod:`benchmarks.report`; ``env`` records the command, the
date, the commit, the torch and Triton versions and the device). The summary ends
with the cases where layoutfuse is more than 2% behind the faster peer, worst first,
with its schedule (``behind`` in the JSON).

``python -m benchmarks suite random [--seed N] [--cases K]`` draws K problems (default
120) from the distribution of :mod:`benchmarks.random_cases`; without ``--seed`` it
picks a new seed and prints it. On the CPU the shapes are tiny and the run checks
numerics and pinned strides as every suite does.

``python -m benchmarks chart RESULT.json --png OUT.png`` draws it.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from benchmarks import report
from benchmarks.cases import SUITES, Case
from benchmarks.harness import Harness, System, environment, measure_ceilings, repo_root
from benchmarks.layoutfuse_runner import LayoutfuseRunner
from benchmarks.peers import CompilePeer, EagerPeer
from benchmarks.random_cases import draw_cases
from benchmarks.tune import parse_tuning

SYSTEMS = {"layoutfuse": LayoutfuseRunner, "eager": EagerPeer, "compile": CompilePeer}
# --quick divides element counts by this: a smoke run on a GPU, tiny shapes on a CPU.
QUICK_SHRINK = {"cuda": 16, "cpu": 1024}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks suite",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("suite", choices=sorted([*SUITES, "random"]))
    p.add_argument("--seed", type=int, help="random: the seed (default: a new one, printed)")
    p.add_argument("--cases", type=int, default=120, help="random: how many cases (120)")
    p.add_argument("--quick", action="store_true", help="shapes shrunk for a smoke run")
    p.add_argument("--out", type=Path, help="result file (default benchmarks/results/...)")
    p.add_argument("--filter", default="", help="only cases whose name contains this (a,b: both)")
    p.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help="comma-separated subset of " + ",".join(SYSTEMS),
    )
    p.add_argument(
        "--tuning",
        default="",
        help="scheduler.field=value,...: layoutfuse's heuristics under these tuning fields "
        "(benchmarks.tune's syntax)",
    )
    p.add_argument("--device", help="default: cuda when available, else cpu")
    p.add_argument("--list", action="store_true", help="print the cases and stop")
    return p.parse_args(argv)


def select_cases(
    suite: str, device: str, quick: bool, substr: str, seed: int | None = None, count: int = 120
) -> list[Case]:
    parts = [s for s in substr.split(",") if s]  # every part must match
    drawn = draw_cases(seed or 0, count, device) if suite == "random" else SUITES[suite]()
    cases = [c for c in drawn if all(s in c.name for s in parts)]
    if quick:
        factor = QUICK_SHRINK["cuda" if device.startswith("cuda") else "cpu"]
        cases = [c.shrunk(factor) for c in cases]
    return cases


def run(args: argparse.Namespace, command: str | None = None) -> int:
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.suite == "random" and args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1_000_000)
        command = f"{command} --seed {args.seed}" if command else command
    if args.suite == "random":
        print(f"random suite: seed {args.seed}, {args.cases} cases", flush=True)
    cases = select_cases(args.suite, device, args.quick, args.filter, args.seed, args.cases)
    if args.list:
        for c in cases:
            print(f"{c.name:<48} {c.dtype:<9} shape={list(c.shape)} bytes={c.bytes_moved}")
        return 0
    if not cases:
        print(f"no case of suite {args.suite!r} matches --filter {args.filter!r}")
        return 2
    try:
        tuning = parse_tuning(args.tuning) if args.tuning else None
    except ValueError as e:
        print(f"--tuning: {e}")
        return 2
    table = dict(SYSTEMS, layoutfuse=lambda: LayoutfuseRunner(tuning=tuning))
    systems = pick_systems(args.systems, table)
    if isinstance(systems, str):
        print(systems)
        return 2
    measure(args.suite, cases, systems, device, command, args.out, args.quick, args.seed)
    return 0


def pick_systems(spec: str, table: dict[str, Callable[[], System]]) -> list[System] | str:
    """The systems a comma-separated ``spec`` names, made from ``table``; or the error."""
    names = [s for s in spec.split(",") if s]
    unknown = sorted(set(names) - set(table))
    if unknown:
        return f"unknown systems {unknown}; choose from {sorted(table)}"
    return [table[s]() for s in names]


def measure(
    suite: str,
    cases: list,
    systems: list[System],
    device: str,
    command: str | None,
    out: Path | None = None,
    quick: bool = False,
    seed: int | None = None,
    harness_kw: dict | None = None,
    finish: Callable[[dict], list[str]] | None = None,
) -> dict:
    """Measure ``cases`` on ``systems`` with the ceilings of this process, printing a line
    per case and the summary, and write the result JSON to ``out`` (default: under
    ``benchmarks/results``) after each case. ``finish(doc)`` may add to the finished
    document and return lines to print; ``harness_kw`` goes to :class:`Harness` (a
    timer, another case kind)."""
    names = [s.name for s in systems]
    env = environment(device, command)
    ceilings = measure_ceilings(device)
    out = out or report.default_out_path(suite, env["git_commit"], repo_root())
    print(
        f"{env['device_name']} torch {env['torch']} triton {env['triton']} "
        f"commit {env['git_commit'] or '-'}",
        flush=True,
    )
    print(
        f"read ceiling {ceilings['read_gbps']:.0f} GB/s, device copy "
        f"{ceilings['copy_gbps']:.0f} GB/s; {len(cases)} cases -> {out}",
        flush=True,
    )

    harness = Harness(systems, device, ceilings["read_gbps"], **(harness_kw or {}))
    doc = {
        "schema": report.SCHEMA,
        "suite": suite,
        "seed": seed,
        "quick": quick,
        "partial": True,
        "env": env,
        "ceilings": ceilings,
        "systems": names,
        "rows": [],
        "summary": {},
    }
    for i, case in enumerate(cases, 1):
        row = harness.run_case(case, suite)
        doc["rows"].append(row)
        print(report.progress_line(i, len(cases), row, names), flush=True)
        report.write_json(out, doc)

    doc["partial"] = False
    doc["summary"] = report.summarize(doc["rows"], names)
    doc["memory"] = memory_after_cases(doc["rows"])
    doc["behind"] = report.behind(doc["rows"], names)
    if suite == "random":
        doc["targets"] = report.targets(doc["rows"], names)
    lines = finish(doc) if finish else []
    report.write_json(out, doc)
    print("\n".join(report.summary_lines(doc["summary"])))
    print("\n".join(report.behind_lines(doc["behind"])))
    if "targets" in doc:
        print("\n".join(report.target_lines(doc["targets"])))
    if doc["memory"]:
        print(
            "CUDA memory allocated after each case (bytes): first {first}, max {max}, "
            "last {last}".format(**doc["memory"])
        )
    if lines:
        print("\n".join(lines))
    print(f"wrote {out}")
    return doc


def memory_after_cases(rows: list[dict]) -> dict:
    """The CUDA memory still allocated after each case (inputs, outputs and every system's
    results dropped): flat when nothing of a case outlives it. Empty off CUDA."""
    after = [r["cuda_allocated_after"] for r in rows if "cuda_allocated_after" in r]
    if not after:
        return {}
    return {"first": after[0], "max": max(after), "last": after[-1]}


def suite_command(argv: list[str]) -> str:
    """The command line that runs the suite with ``argv``, as a shell takes it."""
    return shlex.join(["python", "-m", "benchmarks", "suite", *argv])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return run(parse_args(argv), suite_command(argv))


if __name__ == "__main__":
    sys.exit(main())
