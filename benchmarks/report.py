"""Progress lines, the summary, and the result file.

Result JSON (``SCHEMA`` 1)::

    {"schema": 1, "suite": str, "quick": bool, "partial": bool, "env": {...},
     "ceilings": {"read_gbps", "read_ms", "read_bytes", "copy_gbps", "copy_ms", "copy_bytes"},
     "systems": [str], "rows": [row], "summary": {group: {system: stats}}}

    row = {"case", "suite", "group", "op", "shape", "dtype", "order", "dims", "pinned",
           "view", "timing", "bytes", <system>: {"ms", "gbps", "pct", "error", "schedule"}}

    env = {"command" (``python -m benchmarks suite ...``), "argv" (the process's
           ``sys.argv``), "date", "git_commit" (``LAYOUTFUSE_BENCH_COMMIT`` or git),
           "git_dirty", "python", "torch", "triton", "cuda", "device", "device_name",
           "flush", and on CUDA "sm_count", "l2_bytes", "memory_bytes"}
"""

from __future__ import annotations

import datetime
import json
import math
import os
import statistics
from pathlib import Path

SCHEMA = 1
THRESHOLDS = (80, 85)


def rate(gbps: float) -> str:
    """GB/s in 7 columns: whole numbers, or 2 decimals below 10 (CPU smoke runs)."""
    return f"{gbps:7.0f}" if gbps >= 10 else f"{gbps:7.2f}"


def system_cell(res: dict) -> str:
    if res.get("error"):
        return "ERR " + res["error"][:40]
    return f"{rate(res['gbps'])} GB/s {res['pct']:5.1f}%"


def progress_line(index: int, total: int, row: dict, systems: list[str]) -> str:
    cells = " | ".join(f"{s} {system_cell(row[s])}" for s in systems)
    return f"[{index:>3}/{total}] {row['case']:<48} {cells}"


def stats(values: list[float], pcts: list[float], errors: int) -> dict:
    out = {"n": len(values), "errors": errors}
    if values:
        out.update(
            min_gbps=min(values),
            median_gbps=statistics.median(values),
            geomean_gbps=math.exp(statistics.fmean(math.log(v) for v in values)),
        )
    for t in THRESHOLDS:
        out[f"at_least_{t}pct"] = sum(p >= t for p in pcts)
    return out


def summarize(rows: list[dict], systems: list[str]) -> dict:
    """Per group (and ``all``), per system: count, errors, min/median/geomean GB/s and
    how many cases reach 80% and 85% of the read ceiling."""
    groups: dict[str, list[dict]] = {"all": rows}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    summary = {}
    for group, members in groups.items():
        summary[group] = {}
        for s in systems:
            ok = [r[s] for r in members if s in r and not r[s]["error"]]
            errors = sum(1 for r in members if s in r and r[s]["error"])
            summary[group][s] = stats([r["gbps"] for r in ok], [r["pct"] for r in ok], errors)
    return summary


def summary_lines(summary: dict) -> list[str]:
    lines = [
        f"{'group':<12} {'system':<11} {'n':>4} {'err':>4} {'min':>7} {'median':>7} "
        f"{'geomean':>7} {'>=80%':>6} {'>=85%':>6}"
    ]
    for group, per_system in summary.items():
        for s, st in per_system.items():
            figures = (
                f"{rate(st['min_gbps'])} {rate(st['median_gbps'])} {rate(st['geomean_gbps'])}"
                if st["n"]
                else f"{'-':>7} {'-':>7} {'-':>7}"
            )
            lines.append(
                f"{group:<12} {s:<11} {st['n']:>4} {st['errors']:>4} {figures} "
                f"{st['at_least_80pct']:>6} {st['at_least_85pct']:>6}"
            )
    return lines


BEHIND_MARGIN = 0.02  # layoutfuse slower than the faster peer by more than this


def behind(rows: list[dict], systems: list[str], subject: str = "layoutfuse") -> list[dict]:
    """The cases where ``subject`` is more than 2% slower than the faster of the other
    systems (or fails where a peer runs), by time, worst first, with its schedule."""
    peers = [s for s in systems if s != subject]
    if subject not in systems or not peers:
        return []
    found = []
    for row in rows:
        runs = {s: row[s] for s in peers if s in row and not row[s]["error"]}
        if not runs:
            continue
        # by time: a system that left an expanded output unwritten counts fewer bytes
        timed = all(r.get("ms") for r in runs.values())
        best = (
            min(runs, key=lambda s: runs[s]["ms"])
            if timed
            else max(runs, key=lambda s: runs[s]["gbps"])
        )
        mine = row.get(subject) or {}
        if mine.get("error"):
            ratio = 0.0
        elif timed and mine.get("ms"):
            ratio = runs[best]["ms"] / mine["ms"]
        else:
            ratio = mine["gbps"] / runs[best]["gbps"]
        if ratio < 1 - BEHIND_MARGIN:
            found.append(
                {
                    "case": row["case"],
                    "ratio": ratio,
                    "gbps": None if mine.get("error") else mine["gbps"],
                    "pct": None if mine.get("error") else mine["pct"],
                    "peer": best,
                    "peer_gbps": runs[best]["gbps"],
                    "error": mine.get("error"),
                    "schedule": mine.get("schedule"),
                }
            )
    return sorted(found, key=lambda b: b["ratio"])


def behind_lines(found: list[dict], limit: int = 15) -> list[str]:
    if not found:
        return ["layoutfuse is within 2% of the faster peer (or faster) on every case"]
    lines = [f"{len(found)} cases where layoutfuse is more than 2% behind the faster peer:"]
    for b in found[:limit]:
        mine = f"ERR {b['error'][:60]}" if b["error"] else f"{rate(b['gbps'])} GB/s"
        lines.append(
            f"  {b['ratio']:5.3f} {b['case']:<56} {mine} vs {b['peer']} "
            f"{rate(b['peer_gbps'])}  {(b['schedule'] or '')[:160]}"
        )
    return lines


def default_out_path(suite: str, commit: str | None, root: str | None) -> Path:
    """``benchmarks/results/<suite>-<YYYYMMDD-HHMM>-<shortcommit>.json`` under the repo root
    (or the working directory outside a git checkout)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
    short = commit[:8] if commit else "nogit"
    return Path(root or ".") / "benchmarks" / "results" / f"{suite}-{stamp}-{short}.json"


def write_json(path: Path, doc: dict) -> None:
    """Write ``doc`` atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)
