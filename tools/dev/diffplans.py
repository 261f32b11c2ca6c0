"""The random seeds' cases (1-3, 120 each) whose plans a tuning changes, planned on meta
tensors: ``PYTHONPATH=src:. python tools/dev/diffplans.py normalization.inner_tile_bytes=8192``.
Prints each changed case's plan under the defaults and under the tuning. A tool for
scoping an A/B, not part of the product."""

import contextlib
import io
import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.random_cases import draw_cases
from benchmarks.reference import _inputs
from benchmarks.tune import parse_tuning


def plans(case, tuning):
    nvf.FusionCache.reset()
    fd = define_fusion(nvf, case)
    ex = fd._entry.executor() if fd._entry is not None else fd.executor()
    if tuning is not None:
        ex.configure(tuning=tuning)
    ins = _inputs(case, lambda shape: torch.empty(shape, dtype=case.torch_dtype, device="meta"))
    with contextlib.redirect_stdout(io.StringIO()):
        rec = ex.plan(ins)
    return [repr(p) for p in rec.params]


def main(text: str) -> None:
    tuning = parse_tuning(text)
    changed = []
    for seed in (1, 2, 3):
        for case in draw_cases(seed, 120, "cuda"):
            try:
                a, b = plans(case, None), plans(case, tuning)
            except Exception as e:  # a case the planner refuses on meta tensors
                print(case.name, "ERR", repr(e)[:120])
                continue
            if a != b:
                changed.append(case.name)
                print(case.name, "\n  ", "\n   ".join(a), "\n ->", "\n   ".join(b))
    print(len(changed), "changed:", " ".join(changed))


if __name__ == "__main__":
    main(sys.argv[1])
