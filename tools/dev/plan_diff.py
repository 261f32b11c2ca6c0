"""Random-suite cases (seeds 1-3, 120 each) whose plans differ between two tunings, planned
on meta tensors (nothing runs): ``PYTHONPATH=src:. python tools/dev/plan_diff.py ""
normalization.align_persistent=1 [--all]`` (the tune tool's tuning syntax; ``""``: the
defaults). Pointwise cases are left out unless ``--all``. A planning tool, not part of the
product: which cases an A/B of a tuning field has to time."""

import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.random_cases import draw_cases
from benchmarks.reference import _inputs
from benchmarks.tune import parse_tuning


def plans(case, tuning: str) -> list[str]:
    nvf.FusionCache.reset()
    fd = define_fusion(nvf, case)
    ex = fd.executor()
    ex.configure(tuning=parse_tuning(tuning))
    ins = _inputs(
        case, lambda physical: torch.empty(physical, dtype=case.torch_dtype, device="meta")
    )
    return [str(p) for p in ex.plan(ins).params]


if __name__ == "__main__":
    a, b = sys.argv[1:3]
    every = "--all" in sys.argv[3:]
    for seed in (1, 2, 3):
        for case in draw_cases(seed, 120, "cuda"):
            if case.group == "pointwise" and not every:
                continue
            if plans(case, a) != plans(case, b):
                print(case.name, flush=True)
