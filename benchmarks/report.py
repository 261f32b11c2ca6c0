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
import re
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


LARGE_BYTES = 64 << 20  # issue 16's targets count the cases that move at least this much
TARGETS = {"reduction": 88.0, "pointwise": 88.0, "norm_on_chip": 85.0, "norm_wide": 80.0}
_EXPANDED = re.compile(r"_e\d+(_|$)")  # a random case with an expanded (stride-0) input dim


def target_group(row: dict, subject: str = "layoutfuse") -> str:
    """A random case's group for issue 16's targets: reductions, pointwise, and
    normalizations by the plan that held their rows (``norm_on_chip``: the persistent tile;
    ``norm_wide``: looped or segmented)."""
    if row["group"] != "norm":
        return row["group"]
    schedule = (row.get(subject) or {}).get("schedule") or ""
    return "norm_on_chip" if "mode='persistent'" in schedule else "norm_wide"


def targets(rows: list[dict], systems: list[str], subject: str = "layoutfuse") -> dict:
    """Issue 16's targets over a random suite's rows: per ``target_group``, the cases that
    move at least ``LARGE_BYTES`` and have no expanded input dim (whose % of the ceiling
    counts bytes a system need not move): their count, the geomean and least % of the
    ceiling of ``subject`` and of each system, and the target; over every case, how many
    ``subject`` is more than 2% behind the faster peer on (``behind``)."""
    out: dict = {"groups": {}, "behind": len(behind(rows, systems, subject))}
    large = [
        r for r in rows if r.get("bytes", 0) >= LARGE_BYTES and not _EXPANDED.search(r["case"])
    ]
    for group in TARGETS:
        members = [r for r in large if target_group(r, subject) == group]
        per_system = {}
        for s in systems:
            pcts = [r[s]["pct"] for r in members if s in r and not r[s]["error"] and r[s]["pct"]]
            per_system[s] = {
                "n": len(pcts),
                "geomean_pct": math.exp(statistics.fmean(math.log(p) for p in pcts))
                if pcts
                else None,
                "min_pct": min(pcts, default=None),
                "under_80": sum(p < 80 for p in pcts),
            }
        out["groups"][group] = {"target_pct": TARGETS[group], "systems": per_system}
    return out


def target_lines(t: dict, subject: str = "layoutfuse") -> list[str]:
    lines = [
        f"issue 16's targets (cases of {LARGE_BYTES >> 20} MB or more, no expanded dim; "
        "geomean % of the ceiling, least, under 80%):"
    ]
    for group, g in t["groups"].items():
        cells = []
        for s, st in g["systems"].items():
            if not st["n"]:
                cells.append(f"{s} -")
                continue
            cells.append(
                f"{s} {st['geomean_pct']:.1f} (min {st['min_pct']:.1f}, {st['under_80']} < 80)"
            )
        mine = g["systems"].get(subject, {})
        met = mine.get("n") and mine["geomean_pct"] >= g["target_pct"]
        lines.append(
            f"  {group:<13} n={mine.get('n', 0):<3} target {g['target_pct']:.0f}% "
            f"{'met' if met else 'not met'}: " + " | ".join(cells)
        )
    lines.append(f"  cases more than 2% behind the faster peer: {t['behind']} (target 0)")
    return lines


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
