"""Thunder's regions of a benchmark program, planned at its real sizes on the CPU.

``PYTHONPATH=src:. python tools/dev/thunder_plans.py nanogpt_block bf16 [fwd_bwd] [batch]``:
runs ``thunder.jit`` of a program of ``benchmarks.thunder_programs`` on CPU tensors with
every layoutfuse execute replaced by (1) a plan on meta tensors of the inputs' shapes,
strides and dtypes, printed with each kernel's params and bytes, and (2) the fusion's
torch reference (``layoutfuse.reference``) for its outputs, so the program runs at full
size without Triton's interpreter."""

import dataclasses
import sys

import torch

from benchmarks import thunder_bench, thunder_programs, thunder_setup
from layoutfuse.frontend.nvfuser import fusion_definition
from layoutfuse.reference import run_reference


def _meta(x):
    if not torch.is_tensor(x):
        return x
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")


def patched_execute(self, inputs, **kwargs):
    if self._entry is None:
        self._define_from_subclass()
    ex = self._entry.executor() if self._entry is not None else self.executor()
    rec = ex.plan([_meta(x) for x in inputs])
    print(
        f"region: {len(rec.launches)} kernels; inputs",
        [(tuple(x.shape), x.stride(), str(x.dtype)[6:]) for x in inputs if torch.is_tensor(x)],
    )
    for p in rec.params:
        print("   ", p)
    for s in rec.segments:
        print("      seg:", s.scheduler, s.reason[:200])
    return run_reference(self._entry.fusion, list(inputs))


def main(argv):
    name, dtype = argv[0], argv[1]
    mode = argv[2] if len(argv) > 2 else "fwd_bwd"
    sizes = thunder_programs.FULL
    if len(argv) > 3:
        sizes = dataclasses.replace(sizes, batch=int(argv[3]), B=int(argv[3]))
    fusion_definition.FusionDefinition.execute = patched_execute
    thunder, impl = thunder_setup.load()
    (program,) = [p for p in thunder_programs.PROGRAMS if p.name == name]
    built = program.build(
        sizes, thunder_bench.DTYPES[dtype], "cpu", torch.Generator().manual_seed(0)
    )
    systems = thunder_bench.Systems(["thunder"])
    fn = systems.make("thunder", built.fn, program.thunder_without)
    out = None
    grad_out = None
    if mode == "fwd_bwd":
        with torch.no_grad():
            out = built.fn(*built.args)
        grad_out = torch.randn(out.shape).to(out.dtype)
    thunder_bench.step(fn, built, mode, grad_out)()


if __name__ == "__main__":
    main(sys.argv[1:])
