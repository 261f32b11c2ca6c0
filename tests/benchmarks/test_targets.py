"""Issue 16's targets over a random suite's rows (``report.targets``, ``python -m
benchmarks targets``): the groups (normalizations by the plan that held their rows), the
cases counted (64 MB or more, no expanded dim), the geomean and least % of the ceiling,
the cases behind the faster peer; and the command over a written result file."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import report
from benchmarks import targets as targets_cli

SYSTEMS = ["layoutfuse", "eager", "compile"]
MB = 1 << 20


def _row(case, group, mb, pcts, schedule="", ms=None):
    """A row of ``mb`` MB whose systems reach ``pcts`` % of the ceiling (times inverse)."""
    ms = ms or {s: 1.0 / p for s, p in zip(SYSTEMS, pcts)}
    return {
        "case": case,
        "group": group,
        "bytes": mb * MB,
        **{
            s: {"ms": ms[s], "gbps": p * 30, "pct": p, "error": None, "schedule": schedule}
            for s, p in zip(SYSTEMS, pcts)
        },
    }


ROWS = [
    _row("r9_000_sum_float32_a", "reduction", 64, (90.0, 50.0, 60.0)),
    _row("r9_001_sum_float32_b", "reduction", 200, (40.0, 50.0, 60.0)),  # behind both
    _row("r9_002_sum_float32_c", "reduction", 63, (10.0, 90.0, 90.0)),  # too small
    _row("r9_003_add_bfloat16_d_e1", "pointwise", 500, (0.1, 20.0, 30.0)),  # expanded
    _row("r9_004_add_bfloat16_e", "pointwise", 500, (95.0, 20.0, 30.0)),
    _row(
        "r9_005_softmax_f",
        "norm",
        100,
        (90.0, 10.0, 50.0),
        "NormalizationParams(mode='persistent')",
    ),
    _row("r9_006_softmax_g", "norm", 100, (60.0, 10.0, 50.0), "NormalizationParams(mode='looped')"),
]


def test_groups_counted_cases_and_figures():
    t = report.targets(ROWS, SYSTEMS)
    red = t["groups"]["reduction"]["systems"]
    assert red["layoutfuse"]["n"] == 2  # not the 63 MB case
    assert red["layoutfuse"]["geomean_pct"] == pytest.approx(math.sqrt(90.0 * 40.0))
    assert red["layoutfuse"]["min_pct"] == 40.0 and red["layoutfuse"]["under_80"] == 1
    assert red["compile"]["geomean_pct"] == pytest.approx(60.0)
    point = t["groups"]["pointwise"]["systems"]["layoutfuse"]
    assert point["n"] == 1 and point["geomean_pct"] == pytest.approx(95.0)  # not expanded
    assert t["groups"]["norm_on_chip"]["systems"]["layoutfuse"]["min_pct"] == 90.0
    assert t["groups"]["norm_wide"]["systems"]["layoutfuse"]["min_pct"] == 60.0
    # behind the faster peer over every case, small and expanded ones included
    assert t["behind"] == len(report.behind(ROWS, SYSTEMS)) == 3


def test_lines_say_which_targets_are_met():
    lines = report.target_lines(report.targets(ROWS, SYSTEMS))
    by_group = {line.split()[0]: line for line in lines[1:-1]}
    assert "not met" in by_group["reduction"] and "88% met" not in by_group["reduction"]
    assert "target 88% met" in by_group["pointwise"]
    assert "target 85% met" in by_group["norm_on_chip"]
    assert "not met" in by_group["norm_wide"]
    assert lines[-1].endswith("3 (target 0)")


def test_the_command_reads_result_files(tmp_path, capsys):
    path = tmp_path / "random.json"
    path.write_text(json.dumps({"suite": "random", "seed": 9, "systems": SYSTEMS, "rows": ROWS}))
    other = tmp_path / "reduction.json"
    other.write_text(json.dumps({"suite": "reduction", "systems": SYSTEMS, "rows": []}))
    assert targets_cli.main([str(path), str(other)]) == 0
    out = capsys.readouterr().out
    assert "(seed 9, 7 cases)" in out and "not random: skipped" in out
    assert "cases more than 2% behind the faster peer: 3" in out
