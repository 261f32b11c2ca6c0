"""Random-suite cases (seeds 1-3, 120 each) whose plans differ between two tunings, planned
on meta tensors (nothing runs): ``PYTHONPATH=src:. python tools/dev/plan_diff.py ""
normalization.align_persistent=1 [--all]`` (the tune tool's tuning syntax; ``""``: the
defaults). Pointwise cases are left out unless ``--all``. A planning tool, not part of the
product: which cases an A/B of a tuning field has to time."""

import sys

from benchmarks.random_cases import draw_cases
from tools.dev.compile_probe import planned


def plans(case, tuning: str) -> list[str]:
    return [str(p) for p in planned(case, tuning).params]


if __name__ == "__main__":
    a, b = sys.argv[1:3]
    every = "--all" in sys.argv[3:]
    for seed in (1, 2, 3):
        for case in draw_cases(seed, 120, "cuda"):
            if case.group == "pointwise" and not every:
                continue
            if plans(case, a) != plans(case, b):
                print(case.name, flush=True)
