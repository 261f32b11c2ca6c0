"""``python -m benchmarks chart RESULT.json [--png OUT.png] [--metric pct_copy]``: a
grouped bar chart of each system's percent of the read ceiling (or, ``pct_copy``, of the
copy bandwidth: the ops suite records it) per case, an x where a system failed. A Thunder
result (``python -m benchmarks thunder``) is drawn as times instead: per program, each
system's device time and its time per call (wall) over torch.compile's (below 1: faster),
the issue's Thunder + nvFuser figure beside the wall times where it has one.
Needs matplotlib, which is not a dependency: without it the command says so and
exits 0."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

COLORS = {
    "layoutfuse": "tab:green",
    "thunder": "tab:green",
    "eager": "tab:gray",
    "compile": "tab:blue",
    "nvfuser": "tab:olive",
}
METRICS = {"pct": ("read ceiling", "read_gbps"), "pct_copy": ("copy bandwidth", "copy_gbps")}


def bars(doc: dict, metric: str = "pct") -> tuple[list[str], dict[str, list[float | None]]]:
    """Case names and, per system, percent of the read ceiling (``metric="pct_copy"``: of
    the copy bandwidth), None where it failed."""
    rows = doc["rows"]
    names = [r["case"] for r in rows]
    pct = {s: [(r.get(s) or {}).get(metric) for r in rows] for s in doc["systems"]}
    return names, pct


def time_ratios(doc: dict, key: str) -> tuple[list[str], dict[str, list[float | None]]]:
    """A Thunder result's case names and, per system, its ``key`` time (``device_ms`` or
    ``ms``) over torch.compile's, None where either is missing; with ``key="ms"`` also the
    issue's Thunder + nvFuser figure (``nvfuser``) over torch.compile's wall time."""
    rows = doc["rows"]
    names = [r["case"] for r in rows]

    def ratio(t: float | None, base: float | None) -> float | None:
        return t / base if t and base else None

    out = {
        s: [ratio((r.get(s) or {}).get(key), (r.get("compile") or {}).get(key)) for r in rows]
        for s in doc["systems"]
    }
    reference = (doc.get("reference") or {}).get("thunder_nvfuser_0.2.36_ms") or {}
    if key == "ms" and reference:
        out["nvfuser"] = [
            ratio(reference.get(r["case"]), (r.get("compile") or {}).get("ms")) for r in rows
        ]
    return names, out


def _thunder_chart(doc: dict, plt, out: Path) -> None:
    fig, axes = plt.subplots(2, 1, figsize=(max(10.0, 0.6 * len(doc["rows"])), 10))
    for ax, (key, label) in zip(axes, (("device_ms", "device time"), ("ms", "time per call"))):
        names, ratios = time_ratios(doc, key)
        width = 0.8 / max(1, len(ratios))
        for k, (system, values) in enumerate(ratios.items()):
            xs = [i + (k - (len(ratios) - 1) / 2) * width for i in range(len(names))]
            name = "Thunder + nvFuser (issue's, H200)" if system == "nvfuser" else system
            ax.bar(xs, [v or 0.0 for v in values], width, label=name, color=COLORS.get(system))
        ax.axhline(1.0, color="tab:red", linewidth=0.6, linestyle="--")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=90, fontsize=7)
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_ylabel(f"{label} / torch.compile's")
        ax.legend()
    env = doc.get("env", {})
    axes[0].set_title(
        f"thunder on {env.get('device_name')} (commit {(env.get('git_commit') or '-')[:8]}): "
        "below 1 is faster than torch.compile"
    )
    fig.tight_layout()
    fig.savefig(out, dpi=120)


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
    out = args.png or args.result.with_suffix(".png")
    if doc.get("suite") == "thunder":
        _thunder_chart(doc, plt, out)
        print(f"wrote {out}")
        return 0
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
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")
    return 0
