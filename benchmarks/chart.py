"""``python -m benchmarks chart RESULT.json [--png OUT.png] [--metric pct_copy]``: a
grouped bar chart of each system's percent of the read ceiling (or, ``pct_copy``, of the
copy bandwidth: the ops suite records it) per case, an x where a system failed.
Needs matplotlib, which is not a dependency: without it the command says so and
exits 0."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

COLORS = {"layoutfuse": "tab:green", "eager": "tab:gray", "compile": "tab:blue"}
METRICS = {"pct": ("read ceiling", "read_gbps"), "pct_copy": ("copy bandwidth", "copy_gbps")}


def bars(doc: dict, metric: str = "pct") -> tuple[list[str], dict[str, list[float | None]]]:
    """Case names and, per system, percent of the read ceiling (``metric="pct_copy"``: of
    the copy bandwidth), None where it failed."""
    rows = doc["rows"]
    names = [r["case"] for r in rows]
    pct = {s: [(r.get(s) or {}).get(metric) for r in rows] for s in doc["systems"]}
    return names, pct


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks chart")
    p.add_argument("result", type=Path)
    p.add_argument("--png", type=Path, help="default: RESULT with .png")
    p.add_argument("--metric", choices=sorted(METRICS), default="pct", help="default: pct")
    args = p.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed; no chart drawn (pip install matplotlib)")
        return 0

    doc = json.loads(args.result.read_text())
    names, pct = bars(doc, args.metric)
    ceiling, key = METRICS[args.metric]
    systems = list(pct)
    width = 0.8 / max(1, len(systems))
    fig, ax = plt.subplots(figsize=(max(10.0, 0.3 * len(names) * len(systems)), 6))
    for k, system in enumerate(systems):
        xs = [i + (k - (len(systems) - 1) / 2) * width for i in range(len(names))]
        heights = [p or 0.0 for p in pct[system]]
        ax.bar(xs, heights, width, label=system, color=COLORS.get(system))
        failed = [x for x, p in zip(xs, pct[system]) if p is None]
        ax.plot(failed, [1.0] * len(failed), "x", color=COLORS.get(system), markersize=4)
    for level in (80, 85):
        ax.axhline(level, color="tab:red", linewidth=0.6, linestyle="--")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylabel(f"% of {ceiling}")
    env, ceilings = doc.get("env", {}), doc.get("ceilings", {})
    ax.set_title(
        f"{doc.get('suite')} on {env.get('device_name')} ({ceiling} "
        f"{ceilings.get(key, 0):.0f} GB/s, commit "
        f"{(env.get('git_commit') or '-')[:8]})"
    )
    ax.legend()
    fig.tight_layout()
    out = args.png or args.result.with_suffix(".png")
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")
    return 0
