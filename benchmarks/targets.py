"""``python -m benchmarks targets FILE.json...``: issue 16's targets over random-suite
results already written (``report.targets``): per group, the geomean and least % of the
ceiling of the cases that move 64 MB or more, and the cases more than 2% behind the faster
peer. Reads the files only; nothing runs."""

from __future__ import annotations

import argparse
import json

from benchmarks import report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks targets", description=__doc__)
    p.add_argument("files", nargs="+", help="random-suite result JSON files")
    args = p.parse_args(argv)
    for path in args.files:
        with open(path) as f:
            doc = json.load(f)
        if doc.get("suite") != "random":
            print(f"{path}: suite {doc.get('suite')!r}, not random: skipped")
            continue
        print(f"{path} (seed {doc.get('seed')}, {len(doc['rows'])} cases)")
        t = report.targets(doc["rows"], doc["systems"])
        print("\n".join(report.target_lines(t)))
    return 0
