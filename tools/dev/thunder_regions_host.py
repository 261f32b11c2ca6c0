"""The host time layoutfuse spends in each region of a Thunder-jitted program, on the CPU
with every kernel launch stubbed (``benchmarks.overhead.stub_launches``: the launcher's
call without a kernel), beside the whole step's time: how much of Thunder's time per call
is ours. ``PYTHONPATH=src:. python tools/dev/thunder_regions_host.py [PROGRAM]``
(default nanogpt_block_sdpa, bf16, forward and backward, QUICK cpu sizes; library ops such
as matmul still run, at those sizes). A measurement tool, not the product."""

from __future__ import annotations

import sys
import time
from collections import defaultdict

import torch

import layoutfuse.nvfuser as nvf
from benchmarks import thunder_setup
from benchmarks.overhead import stub_launches
from benchmarks.thunder_bench import step
from benchmarks.thunder_programs import PROGRAMS, QUICK


def main(name: str) -> None:
    thunder, impl = thunder_setup.load()
    program = next(p for p in PROGRAMS if p.name == name)
    built = program.build(QUICK["cpu"], torch.bfloat16, "cpu", torch.Generator().manual_seed(0))
    executors = [e for e in thunder.get_default_executors() if e.name != "nvfuser"]
    executors = [e for e in executors if e.name not in program.thunder_without] + [impl.ex]
    fn = thunder.jit(built.fn, executors=executors, **dict(program.thunder_options))
    grad = torch.randn_like(built.fn(*built.args))
    call = step(fn, built, "fwd_bwd", grad)
    for _ in range(3):
        call()
    fds = []
    traces = (thunder.last_traces(fn)[-1], thunder.last_backward_traces(fn)[-1])
    for trace in traces:
        for b in trace.bound_symbols:
            if b.sym.name.startswith("nvFusion"):
                fd = b._call_ctx[b.sym.name].last_used
                stub_launches(fd.executor())
                fds.append((b.sym.name, fd))
    spent: dict[str, list[float]] = defaultdict(list)
    original = nvf.FusionDefinition.execute
    names = {id(fd): n for n, fd in fds}

    def timed(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent[names.get(id(self), "other")].append(time.perf_counter() - t0)

    nvf.FusionDefinition.execute = timed
    steps = 50
    t0 = time.perf_counter()
    for _ in range(steps):
        call()
    total = (time.perf_counter() - t0) / steps
    nvf.FusionDefinition.execute = original
    ours = sum(sum(v) for v in spent.values()) / steps
    print(f"{name}: {total * 1e3:.3f} ms a step on the CPU (launches stubbed), "
          f"{ours * 1e3:.3f} ms in layoutfuse's execute over {len(spent)} regions")  # fmt: skip
    for region, times in spent.items():
        times.sort()
        print(f"  {region:12} {len(times) // steps} calls a step, median "
              f"{times[len(times) // 2] * 1e6:7.1f} us")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "nanogpt_block_sdpa")
