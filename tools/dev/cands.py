"""The measured choice's candidates of random-suite cases, planned on meta tensors for a
device description (default: H100): which segments would be timed under ``min_l2`` and
how their candidates differ from the rule's plan.
``python tools/dev/cands.py SEED [MIN_L2] [NAME,...]``"""

import dataclasses
import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.random_cases import draw_cases
from benchmarks.reference import _inputs
from layoutfuse.analysis.device import DeviceInfo
from layoutfuse.runtime.schedule import SCHEDULERS
from layoutfuse.schedulers import measure
from layoutfuse.schedulers.tuning import DEFAULT

H100 = DeviceInfo("cuda", 132, 2048, 50 * 1024 * 1024, 65536, 90)


def diff(a, b) -> str:
    return ", ".join(
        f"{f.name}={getattr(b, f.name)}"
        for f in dataclasses.fields(a)
        if getattr(a, f.name) != getattr(b, f.name)
    )


def main() -> None:
    seed = int(sys.argv[1])
    min_l2 = float(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT.measure.min_l2
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else [""]
    mt = dataclasses.replace(DEFAULT.measure, min_l2=min_l2)
    by_name = {s.name: s for s in SCHEDULERS}
    for case in draw_cases(seed, 120, "cuda"):
        if not any(n in case.name for n in names):
            continue
        nvf.FusionCache.reset()
        fd = define_fusion(nvf, case)
        ex = fd._entry.executor() if fd._entry is not None else fd.executor()
        ex.configure(target=H100)
        ins = _inputs(case, lambda p, dt=case.torch_dtype: torch.empty(p, dtype=dt, device="meta"))
        for run in ex.plan(ins).segments:
            if run.problem is None or run.scheduler not in by_name:
                continue
            why = measure.why_not_measured(run.problem, "cuda", H100, mt)
            tuning = DEFAULT.of(run.scheduler)
            cands = measure.candidates(
                by_name[run.scheduler].heuristics,
                run.problem,
                H100,
                tuning,
                tuning.alternatives,
                mt.max_candidates,
            )
            print(f"{case.name[:64]:64} {run.scheduler[:5]} {why or 'timed'}; {len(cands)} cands")
            for c in cands[1:]:
                print("      ", diff(cands[0], c))


if __name__ == "__main__":
    main()
