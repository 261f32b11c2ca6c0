"""``python -m benchmarks thunder [--quick] [--out PATH] [--filter S] [--systems ...]``:
Lightning Thunder with layoutfuse as its nvFuser against eager and torch.compile.

For each program of :mod:`benchmarks.thunder_programs` (bias+GELU, RMS norm, layer norm,
softmax, add+sum, a nanoGPT block), dtype and mode (``fwd``: forward under
``torch.no_grad``; ``fwd_bwd``: forward, then ``torch.autograd.grad`` of the output
against a fixed ``grad_out`` for every input and parameter), in one process on the same
inputs, it times milliseconds per call on each system:

- ``eager``: the program as written;
- ``compile``: ``torch.compile`` of it (Inductor);
- ``thunder``: ``thunder.jit`` of it with Thunder's default executors and the nvFuser
  executor, which ``layoutfuse.use_as_nvfuser()`` makes run on layoutfuse
  (:mod:`benchmarks.thunder_setup`: the shim the tests use, a no-op on torch <= 2.12
  with CUDA).

Timing: ``warmup`` calls (compilation), then ``harness.time_loop``: the median over
``samples`` (20) synchronized loops of back-to-back calls, each loop about 10 ms (on
CUDA every sample is taken; off CUDA fewer, 3 at least, where a budget would be passed:
Triton's interpreter). Each system's first call is checked against eager (the output
and every gradient: max abs difference within the dtype's tolerance, relative to the
reference's largest magnitude). On CUDA each system's call is also profiled
(``device_times``): its device milliseconds, those of layoutfuse's kernels, and the
longest kernels by name. For Thunder it also records the nvFuser regions of the
forward and backward traces, the kernels and schedulers each took on layoutfuse,
whether every region ran on layoutfuse, the ops outside regions (and any not expected
there), and whether the timed calls replayed recorded plans.

The result JSON records ``env`` (``harness.environment``), the rows, and a ``reference``
block: the issue's Thunder + nvFuser 0.2.36 figures, quoted and not measured here.
Without Thunder installed the run records why and times eager and compile only.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from benchmarks import report, thunder_census, thunder_setup
from benchmarks.harness import (
    environment,
    format_error,
    kernel_times,
    repo_root,
    synchronize,
    time_loop,
)
from benchmarks.thunder_programs import (
    DTYPES,
    FULL,
    PROGRAMS,
    QUICK,
    REFERENCE,
    Built,
    Program,
    Sizes,
    case_name,
)

SYSTEMS = ("eager", "compile", "thunder")
SCHEMA = 1
NO_BUDGET_S = 1e9
# (rtol, atol): |got - eager| <= atol + rtol * max|eager|, per tensor (output, gradients)
TOLERANCES = {"fp32": (1e-4, 1e-5), "bf16": (3e-2, 1e-2)}


@dataclass(frozen=True)
class Timing:
    samples: int = 20
    warmup: int = 3
    sample_s: float = 0.01
    budget_s: float | None = None  # seconds; past it fewer samples, 3 at least (None: all)

    def ms_per_call(self, call: Callable[[], object], device: str) -> float:
        """``harness.time_loop`` of ``call`` (warmed up already) with these settings."""
        # time_loop takes int(budget_s / loop time): a finite stand-in for "no budget"
        budget = NO_BUDGET_S if self.budget_s is None else self.budget_s
        return time_loop(call, device, self.samples, self.sample_s, budget)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks thunder",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="small shapes (tiny on the CPU)")
    p.add_argument("--out", type=Path, help="result file (default benchmarks/results/...)")
    p.add_argument("--filter", default="", help="only cases whose name contains this (a,b: both)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="subset of " + ",".join(SYSTEMS))
    p.add_argument("--device", help="default: cuda when available, else cpu")
    p.add_argument("--samples", type=int, default=Timing.samples, help="timed loops (median)")
    p.add_argument("--warmup", type=int, default=Timing.warmup, help="untimed calls first")
    p.add_argument("--list", action="store_true", help="print the cases and stop")
    return p.parse_args(argv)


@dataclass(frozen=True)
class Row:
    program: Program
    dtype: str
    mode: str

    @property
    def name(self) -> str:
        return case_name(self.program.name, self.dtype, self.mode)


def select_rows(substr: str) -> list[Row]:
    parts = [s for s in substr.split(",") if s]
    rows = [Row(p, d, m) for p in PROGRAMS for d in p.dtypes for m in p.modes]
    return [r for r in rows if all(s in r.name for s in parts)]


def step(fn: Callable, built: Built, mode: str, grad_out: torch.Tensor | None) -> Callable:
    """One timed call: the forward (no autograd graph), or the forward and the gradients
    of every input and parameter."""
    if mode == "fwd":

        def forward():
            with torch.no_grad():
                return fn(*built.args), ()

        return forward
    wrt = differentiable(built) + built.params

    def forward_backward():
        out = fn(*built.args)
        return out, torch.autograd.grad(out, wrt, grad_out)

    return forward_backward


def compare(got, want, dtype: str, names: list[str]) -> dict:
    """Max abs difference of the output and each gradient against eager's (``diffs``), the
    worst of them, and whether each is within the dtype's tolerance (relative to that
    tensor's largest magnitude in eager's result)."""
    rtol, atol = TOLERANCES[dtype]
    doc: dict = dict(close=True, max_abs_diff=0.0, ref_max_abs=0.0, worst_tensor=None, diffs={})
    for name, g, w in zip(names, [got[0], *got[1]], [want[0], *want[1]]):
        diff = (g.float() - w.float()).abs().max().item()
        scale = w.float().abs().max().item()
        doc["diffs"][name] = diff
        if not diff <= atol + rtol * scale:  # NaN is not close
            doc["close"] = False
        if doc["worst_tensor"] is None or not diff <= doc["max_abs_diff"]:
            doc.update(max_abs_diff=diff, ref_max_abs=scale, worst_tensor=name)
    doc.update(rtol=rtol, atol=atol)
    return doc


def differentiable(built: Built) -> list[torch.Tensor]:
    """The arguments gradients are taken for (not a cross-entropy's integer target)."""
    return [a for a in built.args if a.requires_grad]


def tensor_names(built: Built, mode: str) -> list[str]:
    names = ["out"]
    if mode == "fwd_bwd":
        names += [f"grad_arg{i}" for i, a in enumerate(built.args) if a.requires_grad]
        if isinstance(built.fn, torch.nn.Module):
            names += [f"grad_{n}" for n, _ in built.fn.named_parameters()]
    return names


class Systems:
    """Makes each system's callable for a program (``thunder`` once Thunder loaded)."""

    def __init__(self, names: list[str]):
        self.names = names
        self.thunder = self.impl = None
        self.thunder_info: dict = {"requested": "thunder" in names}
        if "thunder" in names:
            self._load_thunder()

    def _load_thunder(self) -> None:
        try:
            self.thunder, self.impl = thunder_setup.load()
        except Exception as e:  # not installed, or it does not import here
            self.thunder_info.update(available=False, error=format_error(e))
            return
        executors = [e for e in self.thunder.get_default_executors() if e.name != "nvfuser"]
        self.executors = [*executors, self.impl.ex]
        import nvfuser

        self.thunder_info.update(
            available=True,
            version=getattr(self.thunder, "__version__", None),
            nvfuser_module=nvfuser.__name__,
            nvfuser_version=str(nvfuser.version()),
            executors=[e.name for e in self.executors],
        )

    def unavailable(self, system: str) -> str | None:
        if system == "thunder" and self.thunder is None:
            return self.thunder_info.get("error", "thunder not loaded")
        return None

    def make(
        self,
        system: str,
        fn: Callable,
        without: tuple[str, ...] = (),
        options: tuple[tuple[str, object], ...] = (),
    ) -> Callable:
        if system == "eager":
            return fn
        if system == "compile":
            torch._dynamo.reset()
            return torch.compile(fn)
        executors = [e for e in self.executors if e.name not in without]
        return self.thunder.jit(fn, executors=executors, **dict(options))


def measure(systems: Systems, system: str, row: Row, built: Built, grad_out, want, timing, device):
    """One system on one row: check against eager, warm up, (Thunder) count regions and
    kernels, time."""
    res: dict = {"ms": None, "error": None}
    skipped = systems.unavailable(system)
    if skipped:
        res["error"] = f"unavailable: {skipped}"
        return res
    try:
        program = row.program
        fn = systems.make(system, built.fn, program.thunder_without, program.thunder_options)
        call = step(fn, built, row.mode, grad_out)
        got = call()
        synchronize(device)
        if system != "eager":
            res["check"] = compare(got, want, row.dtype, tensor_names(built, row.mode))
        del got
        for _ in range(max(0, timing.warmup - 1)):
            call()
        if system == "thunder":
            res["thunder"] = thunder_census.census(systems.thunder, fn, row.mode == "fwd_bwd")
            before = thunder_census.planned_runs(res["thunder"])
        res["ms"] = timing.ms_per_call(call, device)
        if system == "thunder":
            after = thunder_census.planned_runs_now(systems.thunder, fn, row.mode == "fwd_bwd")
            res["thunder"]["timed_calls_replayed"] = after == before
        if device.startswith("cuda"):
            res.update(device_times(call, device))
    except Exception as e:
        res["error"] = format_error(e)
    return res


def ours(kernel: str) -> bool:
    """A kernel layoutfuse generated (``pointwise_kernel``, ``normalization_kernel``, ...;
    Inductor's are ``triton_*``, torch's and the libraries' C++ names)."""
    return kernel.endswith("_kernel") and kernel.isidentifier() and not kernel.startswith("triton_")


def device_times(call: Callable[[], object], device: str) -> dict:
    """Device milliseconds of one call, L2 emptied first (``harness.kernel_times``): in all
    (``device_ms``), in layoutfuse's kernels (``layoutfuse_device_ms``), and the 25 longest
    kernels by name (``kernels_ms``)."""
    times = kernel_times(call, device, reps=5)
    longest = sorted(times.items(), key=lambda kv: -kv[1])[:25]
    return dict(
        device_ms=sum(times.values()),
        layoutfuse_device_ms=sum(v for k, v in times.items() if ours(k)),
        kernels_ms={k[:100]: v for k, v in longest},
    )


def run_row(systems: Systems, row: Row, sizes: Sizes, device: str, timing: Timing) -> dict:
    dtype = DTYPES[row.dtype]
    gen = torch.Generator().manual_seed(0)
    built = row.program.build(sizes, dtype, device, gen)
    doc: dict = dict(
        case=row.name,
        program=row.program.name,
        dtype=row.dtype,
        mode=row.mode,
        shapes=[list(a.shape) for a in built.args],
        thunder_without=list(row.program.thunder_without),
        thunder_options=dict(row.program.thunder_options),
        params=sum(p.numel() for p in built.params),
    )
    grad_out = None
    with torch.no_grad():
        out = built.fn(*built.args)  # its dtype: a loss in fp32 of bf16 logits
    if row.mode == "fwd_bwd":
        grad_out = torch.randn(out.shape, generator=gen).to(device=device, dtype=out.dtype)
    want = step(built.fn, built, row.mode, grad_out)()
    for system in systems.names:
        doc[system] = measure(systems, system, row, built, grad_out, want, timing, device)
    del built, want
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return doc


def progress_line(i: int, n: int, row: dict, names: list[str]) -> str:
    cells = []
    for s in names:
        r = row[s]
        if r["error"]:
            cells.append(f"{s} ERR {r['error'][:60]}")
            continue
        cell = f"{s} {r['ms']:8.3f} ms"
        if "device_ms" in r:
            cell += f" (device {r['device_ms']:.3f}"
            cell += f", ours {r['layoutfuse_device_ms']:.3f})" if s == "thunder" else ")"
        if "check" in r and not r["check"]["close"]:
            cell += f" (DIFF {r['check']['max_abs_diff']:.2e} in {r['check']['worst_tensor']})"
        if "thunder" in r:
            t = r["thunder"]
            on = "all on layoutfuse" if t["all_on_layoutfuse"] else "NOT all on layoutfuse"
            cell += f" [{t['region_count']} regions, kernels {t['kernels_per_region']}, {on}"
            cell += "]" if not t["unexpected_outside"] else f", outside {t['unexpected_outside']}]"
        cells.append(cell)
    ref = REFERENCE["thunder_nvfuser_0.2.36_ms"].get(row["case"])
    cells.append(f"issue's nvFuser {ref:.3f} ms" if ref is not None else "")
    return f"[{i:>2}/{n}] {row['case']:<26} " + " | ".join(c for c in cells if c)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    rows = select_rows(args.filter)
    if args.list:
        print("\n".join(r.name for r in rows))
        return 0
    if not rows:
        print(f"no case matches --filter {args.filter!r}")
        return 2
    names = [s for s in args.systems.split(",") if s]
    if not names or set(names) - set(SYSTEMS):
        print(f"--systems: choose from {','.join(SYSTEMS)}")
        return 2
    sizes = QUICK["cuda" if device.startswith("cuda") else "cpu"] if args.quick else FULL
    cuda = device.startswith("cuda")
    timing = Timing(args.samples, args.warmup, budget_s=None if cuda else 1.0)
    systems = Systems(names)  # before anything imports thunder
    env = environment(device, shlex.join(["python", "-m", "benchmarks", "thunder", *argv]))
    out = args.out or report.default_out_path("thunder", env["git_commit"], repo_root())
    print(f"{env['device_name']} torch {env['torch']} thunder {systems.thunder_info}", flush=True)
    print(f"{len(rows)} cases, sizes {sizes} -> {out}", flush=True)
    doc = dict(
        schema=SCHEMA,
        suite="thunder",
        quick=args.quick,
        partial=True,
        env=env,
        sizes=asdict(sizes),
        timing=dict(asdict(timing), method="benchmarks.harness.time_loop after warm-up"),
        tolerances=TOLERANCES,
        systems=names,
        thunder=systems.thunder_info,
        reference=REFERENCE,
        rows=[],
    )
    for i, row in enumerate(rows, 1):
        doc["rows"].append(run_row(systems, row, sizes, device, timing))
        print(progress_line(i, len(rows), doc["rows"][-1], names), flush=True)
        report.write_json(out, doc)
    doc["partial"] = False
    report.write_json(out, doc)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
