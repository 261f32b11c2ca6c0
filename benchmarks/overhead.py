"""Host overhead of ``fd.execute`` against one eager torch op, and first-execute time.

``python -m benchmarks overhead [--out PATH] [-n N] [--stub-launch]``: on a tiny
tensor (so device time is negligible) times N back-to-back calls of eager ``x + 1``
(``x.sum(0)``) and of a layoutfuse add (sum) fusion on the replay path, synchronizing
once at the end; times the first execute of a fresh fusion (code generation plus
Triton compilation); and splits a replayed call into its stages, each timed on its
own in the same loop:

- ``frontend``: ``fd.execute``'s own work (execute minus ``FusionExecutor.replay``);
- ``key``: finding the plan (``FusionExecutor.replay`` minus the plan's replay: the guard
  of the plan replayed last, ``runtime/guard.py``);
- ``alloc``: the outputs' ``torch.empty_strided``;
- ``launch``: the rest of the plan's replay (stream, launch calls).

Then the same for Thunder-style definitions (``benchmarks/thunder_style.py``: add,
bias+GELU, layer norm forward as Thunder writes and calls them) beside their
hand-written twins and one eager ``torch.add`` (result ``rows["thunder_style"]``: kernels,
cached execute us, the issue's target of 15 us + 4 us per kernel past the first,
whether the calls replayed).

``--stub-launch`` replaces every launch by a no-op call in the form a compiled kernel's
launch takes on the GPU (the current stream, then the launcher's C entry with the grid,
the kernel and its arguments): the Python work around the launches is what remains.
Meant for the CPU, where a real launch would go through Triton's interpreter.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shlex
import sys
import time

import torch

from benchmarks.harness import environment


def _per_call_us(fn, n: int, sync) -> float:
    for _ in range(20):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def _best_us(fn, n: int, sync, rounds: int) -> float:
    """The least per-call time of ``rounds`` loops (the host is shared: the least is the
    one least disturbed)."""
    return min(_per_call_us(fn, n, sync) for _ in range(rounds))


class _NoLaunch:
    """Stands in for a kernel: ``fn[grid](*args, **meta)`` does nothing."""

    def __getitem__(self, grid):
        return self

    def __call__(self, *args, **meta):
        return None


class _NoLauncher:
    """Stands in for Triton's CudaLauncher: its C entry ``launch(*args)`` does nothing."""

    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid = launch_pdl = False

    @staticmethod
    def launch(*args):
        return None


class _StubCompiled:
    """Stands in for a compiled CUDA kernel: what a plan's direct launch reads."""

    function, packed_metadata, run = 0, (4, 1, 0), _NoLauncher()


@contextlib.contextmanager
def _stub_stream():
    """Without CUDA, torch's current-stream calls as no-ops while plans are compiled."""
    names = ("_cuda_getCurrentRawStream", "_cuda_getDevice")
    missing = [n for n in names if not hasattr(torch._C, n)]
    stubs = {"_cuda_getCurrentRawStream": lambda device: 0, "_cuda_getDevice": lambda: 0}
    for n in missing:
        setattr(torch._C, n, stubs[n])
    try:
        yield
    finally:
        for n in missing:
            delattr(torch._C, n)


def stub_launches(executor) -> None:
    """Recompile every plan of ``executor`` with its kernels' launches replaced by no-op
    calls of the form a compiled kernel's launch takes on the GPU (the launcher's C entry,
    after the current stream), so the Python work around them is what a GPU call does."""
    from layoutfuse.runtime.replay import PlannedLaunch

    for plan in executor._plans.values():
        plan.launches = [
            dataclasses.replace(launch, fn=_NoLaunch(), compiled=_StubCompiled())
            if isinstance(launch, PlannedLaunch)
            else launch
            for launch in plan.launches
        ]
        plan.direct = True
        with _stub_stream():
            plan._compile()


def breakdown(fd, inputs: list, n: int, sync, rounds: int) -> dict[str, float]:
    """Microseconds per replayed call, in all and per stage (see the module's docstring)."""
    from layoutfuse.runtime.replay import signature

    executor = fd.executor()
    plan = executor._plans[signature(inputs)]
    shape, stride, dtype, device = plan.outputs[0]
    times = dict(
        execute=_best_us(lambda: fd.execute(inputs), n, sync, rounds),
        executor=_best_us(lambda: executor.replay(inputs), n, sync, rounds),
        plan=_best_us(lambda: plan.replay(inputs), n, sync, rounds),
        alloc=_best_us(
            lambda: torch.empty_strided(shape, stride, dtype=dtype, device=device), n, sync, rounds
        )
        * len(plan.outputs),
    )
    return dict(
        execute=times["execute"],
        frontend=times["execute"] - times["executor"],
        key=times["executor"] - times["plan"],
        alloc=times["alloc"],
        launch=times["plan"] - times["alloc"],
    )


def thunder_style_rows(n: int, sync, device: str, stub: bool, rounds: int) -> list[dict]:
    """Host time of a cached execute of Thunder-style definitions and their hand-written
    twins (``benchmarks/thunder_style.py``), beside one eager ``torch.add`` in this run;
    each with its kernel count, whether every timed call replayed, and the issue's target
    (the least of ``rounds`` loops, as the stages)."""
    from benchmarks import thunder_style

    x = torch.randn(thunder_style.ROWS, thunder_style.COLS, device=device)
    eager_add = _best_us(lambda: torch.add(x, 1.0), n, sync, rounds)
    rows = []
    for case in thunder_style.CASES:
        inputs = case.inputs(device)
        for style, body in (("thunder", case.thunder), ("hand", case.hand)):
            fd = thunder_style.define(body)
            call = (
                thunder_style.thunder_call(fd, inputs)
                if style == "thunder"
                else (lambda fd=fd, inputs=inputs: fd.execute(inputs))
            )
            call()
            kernels = len(fd.executor().last_run.launches)
            if stub:
                stub_launches(fd.executor())
            us = _best_us(call, n, sync, rounds)
            row = dict(
                case=case.name,
                style=style,
                kernels=kernels,
                execute_us=us,
                eager_add_us=eager_add,
                target_us=thunder_style.target_us(kernels),
                replayed=fd.executor().planned_runs == 1,
            )
            rows.append(row)
            print(
                f"{case.name} ({style}): {kernels} kernel(s), cached execute {us:.1f} us/call "
                f"(target {row['target_us']:.0f}; eager torch.add {eager_add:.1f}); "
                f"replayed: {row['replayed']}",
                flush=True,
            )
    return rows


def main(argv=None) -> int:
    from layoutfuse.nvfuser import DataType, FusionCache, FusionDefinition

    ap = argparse.ArgumentParser(prog="python -m benchmarks overhead")
    ap.add_argument("--out")
    ap.add_argument("-n", type=int, default=None, help="calls per timed loop")
    ap.add_argument("--rounds", type=int, default=5, help="loops per stage (the least counts)")
    ap.add_argument(
        "--stub-launch",
        action="store_true",
        help="replace the replayed launches by no-op calls (host work only)",
    )
    args = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    n = args.n or (2000 if device == "cuda" or args.stub_launch else 50)
    x = torch.randn(1024, device=device)
    FusionCache.reset()

    def define(kind: str):
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
            if kind == "add":
                one = fd.define_scalar(1.0, dtype=DataType.Double)
                fd.add_output(fd.ops.add(t0, one))
            else:
                fd.add_output(fd.ops.sum(t0, dims=[0]))
        return fd

    rows = {}
    for kind, eager in (("add", lambda: x + 1), ("sum", lambda: x.sum(0))):
        fd = define(kind)
        sync()
        t0 = time.perf_counter()
        fd.execute([x])
        sync()
        first_ms = (time.perf_counter() - t0) * 1e3
        if args.stub_launch:
            stub_launches(fd.executor())
        rows[kind] = dict(
            eager_us=_per_call_us(eager, n, sync),
            layoutfuse_us=_per_call_us(lambda fd=fd: fd.execute([x]), n, sync),
            first_execute_ms=first_ms,
            stages_us=breakdown(fd, [x], n, sync, args.rounds),
        )
        stages = ", ".join(f"{k} {v:.2f}" for k, v in rows[kind]["stages_us"].items())
        print(
            f"{kind}: eager {rows[kind]['eager_us']:.1f} us/call, layoutfuse "
            f"{rows[kind]['layoutfuse_us']:.1f} us/call, first execute {first_ms:.0f} ms; "
            f"least of {args.rounds} loops per stage (us): {stages}",
            flush=True,
        )
    rows["thunder_style"] = thunder_style_rows(n, sync, device, args.stub_launch, args.rounds)
    if args.out:
        with open(args.out, "w") as f:
            env = environment(
                device,
                shlex.join(
                    [
                        "python",
                        "-m",
                        "benchmarks",
                        "overhead",
                        *(sys.argv[1:] if argv is None else argv),
                    ]
                ),
            )
            json.dump(
                dict(env=env, device=device, stub_launch=args.stub_launch, rows=rows), f, indent=1
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
