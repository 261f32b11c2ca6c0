"""Registers, spills, shared memory and loads of random-suite cases' kernels, compiled for
sm_90 on the CPU: ``PYTHONPATH=src:. python tools/dev/compile_probe.py r2_050,r3_046
"" normalization.looped_stages=2 ...`` (case name prefixes from seeds 1-3, then tunings in
the tune tool's syntax; ``""``: the defaults). Each case is planned at its size on meta
tensors (nothing runs), and every kernel it would launch is compiled with the launcher's
specialization. A measurement tool, not part of the product."""

import sys

import torch

import layoutfuse.nvfuser as nvf
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.random_cases import draw_cases
from benchmarks.reference import _inputs
from benchmarks.tune import parse_tuning
from layoutfuse.codegen.hopper_check import compile_launch


def planned(case, tuning: str):
    """The run record of ``case`` planned under ``tuning`` on meta tensors (nothing runs)."""
    nvf.FusionCache.reset()
    fd = define_fusion(nvf, case)
    ex = fd.executor()
    ex.configure(tuning=parse_tuning(tuning))
    ins = _inputs(
        case, lambda physical: torch.empty(physical, dtype=case.torch_dtype, device="meta")
    )
    return ex.plan(ins)


def probe(case, tuning: str) -> None:
    for r in planned(case, tuning).launches:
        art = compile_launch(r.loaded, list(r.args), r.meta)
        cp_async = art.ptx.count("cp.async.cg") + art.ptx.count("cp.async.ca")
        print(
            f"{case.name[:44]:44s} {tuning or 'defaults':34s} warps {r.meta.get('num_warps')} "
            f"regs {art.resources.get('REG')} spilled {art.local_bytes} B "
            f"shared {art.shared_bytes} B v4 loads {art.vector_widths.get('ld.global.v4', 0)} "
            f"cp.async {cp_async}"
        )


if __name__ == "__main__":
    prefixes = sys.argv[1].split(",")
    tunings = sys.argv[2:] or [""]
    cases = [c for s in (1, 2, 3) for c in draw_cases(s, 120, "cuda")]
    for c in cases:
        if any(c.name.startswith(p) for p in prefixes):
            for t in tunings:
                probe(c, t)
