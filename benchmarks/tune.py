"""Try params variants on chosen cases: ``python -m benchmarks tune CASE... [options]``.

Cases are named as ``python -m benchmarks suite reduction|pointwise --list`` prints them,
or picked with ``--filter`` (every given substring must be in the name). Each variant
overrides fields of the params the heuristics choose (``dict()`` is the heuristics'
own choice): for a reduction the ReductionParams of its template (``outer``, ``inner``),
for a pointwise case the PointwiseParams of its kind (``transpose``, ``pointwise``),
for a normalization (softmax, layer norm) its NormalizationParams (``mode=looped``,
``block_x``, ``block_r``, ``num_warps``: no table, give ``--variant``).
``--variant block_x=128,block_y=64,num_warps=8`` replaces the table with given variants.
``--tuning normalization.max_tile=64,reduction.ticket_steps=0`` (repeatable; ``""``: the
defaults) runs the heuristics with those fields of ``schedulers.tuning.Tuning`` replaced
instead (each tuning times the ``--variant``s given, else the heuristics' own params):
how the tuning's defaults are measured, over a suite's cases with ``--filter``.

Each variant's result is checked against the fp32 reference before it is timed. The
kernel time is the median of ``do_bench`` over ``fd.execute`` (the replay path),
against the read ceiling (reductions, normalizations) or the device copy bandwidth
(pointwise), both
measured in the run. On the GPU each line also shows the registers and spills of the
kernel that ran. A tool for deriving the heuristics from measurements, not part of the
product.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable

from benchmarks.cases import REDUCING_OPS, SUITES, Case
from benchmarks.harness import flush_read, measure_ceilings, time_kernel
from benchmarks.layoutfuse_runner import define_fusion
from benchmarks.random_cases import draw_cases
from benchmarks.reference import check_result, make_inputs, reference
from layoutfuse.schedulers import normalization as nm
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.tuning import DEFAULT, Tuning

NORMALIZING = ("softmax", "log_softmax", "layernorm", "rmsnorm")  # rows used again
# kind -> variants (field overrides of the heuristics' params); dict() is the heuristics
VARIANTS = {
    # reductions (schedulers/reduction_tiles.py): the heuristics; the tiles before the
    # 2-byte rule ([16, 512] / [8, 1024] bf16: 32 fp32 accumulators per thread, ptxas 54-64
    # registers, 4 programs per SM); narrower accumulators (unroll 2: 40 registers and 6
    # programs; unroll 4: 32 registers and 8 programs), for bf16 and fp32; the finishing kernel
    "outer": [
        dict(),
        dict(block_x=512, block_r=16, unroll=1),
        dict(block_x=512, block_r=8, unroll=2),
        dict(block_x=256, block_r=16, unroll=2),
        dict(block_x=256, block_r=8, unroll=4),
        dict(block_x=256, block_r=16, unroll=1),
        dict(block_x=256, block_r=8, unroll=2),
        dict(block_x=256, block_r=4, unroll=4),
        dict(block_x=256, block_r=32, unroll=1),
        dict(block_x=128, block_r=32, unroll=1, num_warps=4),
        dict(finish="kernel"),
    ],
    "inner": [
        dict(),
        dict(block_x=8, block_r=1024, unroll=1),
        dict(block_x=4, block_r=1024, unroll=2),
        dict(block_x=2, block_r=1024, unroll=4),
        dict(block_x=4, block_r=1024, unroll=1),
        dict(block_x=2, block_r=1024, unroll=2),
        dict(block_x=2, block_r=512, unroll=4),
        dict(block_x=16, block_r=256, unroll=1),
        dict(block_x=32, block_r=256, unroll=1, num_warps=16),
        dict(block_x=8, block_r=512, unroll=2),
        dict(finish="kernel"),
    ],
    # the outer template storing along the output's stride-1 group ([BLOCK_Y, BLOCK_R,
    # BLOCK_X]): sector x line (the heuristics), wider rows or columns, and the strided store
    "transposed": [
        dict(),
        dict(block_x=64, block_r=8),
        dict(block_x=128, block_r=4),
        dict(block_y=16, block_r=8),
        dict(block_y=32, block_x=64, block_r=2),
        dict(y_group=None, block_y=1, block_x=256, block_r=16, unroll=1),
    ],
    # transpose tiles: the fp32 tile (64x64, 8 warps); for 2-byte dtypes its tile bytes
    # (128x64, 64x128), its edge bytes (128x128), each at 64 or 32 bytes per thread
    "transpose": [
        dict(),
        dict(block_x=64, block_y=64, num_warps=8),
        dict(block_x=128, block_y=64, num_warps=8),
        dict(block_x=64, block_y=128, num_warps=8),
        dict(block_x=128, block_y=64, num_warps=16),
        dict(block_x=128, block_y=128, num_warps=8),
        dict(block_x=128, block_y=128, num_warps=16),
        dict(block_x=128, block_y=128, num_warps=32),
    ],
    "pointwise": [dict(), dict(num_warps=4), dict(num_warps=16)],
    "normalization": [dict()],
}
SCHEDULERS = {"reduction": rd, "pointwise": pw, "normalization": nm}


def random_case_names(names: list[str]) -> dict[str, Case]:
    """The random suite's cases among ``names`` (``r<seed>_<index>_...``, or only
    ``r<seed>_<index>``), drawn again: a seed's draws do not depend on how many are drawn."""
    found: dict[str, Case] = {}
    for name in names:
        m = re.match(r"r(\d+)_(\d+)(_|$)", name)
        if m:
            seed, index = int(m.group(1)), int(m.group(2))
            case = draw_cases(seed, index + 1)[index]
            found[case.name] = found[name] = case
    return found


def find_cases(names: list[str], filters: list[str]) -> list[Case]:
    """The reduction, pointwise and normalization cases named (and random-suite cases by
    their names), then those matching every filter."""
    known = {c.name: c for suite in SCHEDULERS for c in SUITES[suite]()}
    known.update(random_case_names(names))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(
            f"unknown cases {unknown}: see python -m benchmarks suite "
            "reduction|pointwise|normalization --list"
        )
    chosen = [known[n] for n in names]
    if filters:
        chosen += [
            c for c in known.values() if all(f in c.name for f in filters) and c not in chosen
        ]
    return chosen


def tuned(schedule):
    """The params a variant overrides: the schedule's, or the reduction kernel's of a list
    (sibling reductions' fallback: the split reduction kernel, then pointwise kernels)."""
    if isinstance(schedule, list) and len(schedule) > 1:
        return next(p for p in schedule if p.scheduler == "reduction")
    if isinstance(schedule, list):
        (schedule,) = schedule
    if schedule.scheduler not in SCHEDULERS:
        raise SystemExit(
            f"a {schedule.scheduler} kernel ran (no reduction or pointwise "
            f"params to override): {schedule}"
        )
    return schedule


def scheduler_of(case: Case):
    """The scheduler module ``case``'s op is for (its ceiling: the copy bandwidth for the
    pointwise scheduler's, else the read ceiling); a variant overrides the params of the
    scheduler that planned the case (``planned_scheduler``), which may be another (a
    var_mean whose rows fit: the normalization scheduler's)."""
    if case.op in REDUCING_OPS:
        return rd
    return nm if case.op in NORMALIZING else pw


def planned_scheduler(schedule) -> str:
    """The scheduler whose params a variant overrides: the first kernel's that is not
    pointwise (a layer norm's statistics before its pointwise kernel), else pointwise."""
    names = [p.scheduler for p in (schedule if isinstance(schedule, list) else [schedule])]
    return next((n for n in names if n != pw.NAME), pw.NAME)


def kind_of(params) -> str:
    """The variant table of a schedule: the reduction template, the pointwise kind, or
    ``normalization``."""
    params = tuned(params)
    if params.scheduler == "normalization":
        return "normalization"
    if params.scheduler == "pointwise":
        return "transpose" if params.transpose else "pointwise"
    return "transposed" if params.y_group is not None else params.template


def describe(params) -> str:
    params = tuned(params)
    if params.scheduler == "normalization":
        return (
            f"{params.template} {params.mode} bx={params.block_x} br={params.block_r} "
            f"w={params.num_warps}"
        )
    if params.scheduler == "pointwise":
        order = " y-first" if params.y_first else " rest-first" if params.rest_first else ""
        return (
            f"{kind_of(params)} bx={params.block_x} by={params.block_y} w={params.num_warps}{order}"
        )
    return (
        f"{params.template} bx={params.block_x} br={params.block_r} u={params.unroll} "
        f"w={params.num_warps} split={params.split} {params.finish}"
    )


def kernel_resources(fd) -> str:
    """Registers and spills of each kernel the last run launched (CUDA only: empty on the CPU)."""
    record = fd.executor().last_run
    launches = record.launches if record is not None else []
    kernels = [r.compiled for r in launches if getattr(r.compiled, "n_regs", None) is not None]
    if not kernels:
        return ""
    return (
        f" regs={'/'.join(str(k.n_regs) for k in kernels)}"
        f" spills={'/'.join(str(k.n_spills) for k in kernels)}"
    )


def run_variant(
    nvf,
    case: Case,
    inputs,
    var: dict,
    timer: Callable,
    ref=None,
    profiled: bool = False,
    tuning: Tuning | None = None,
    scheduler: str | None = None,
) -> tuple:
    """(params, ms, resources) of ``case`` with ``var`` overriding the params of
    ``scheduler`` (None: ``scheduler_of(case)``'s), chosen under ``tuning`` (None: the
    defaults); the result (every output) is checked against ``ref`` (the fp32 reference)
    first, when given; ``profiled``: the resources also list each kernel's device time
    (CUDA)."""
    nvf.FusionCache.reset()  # a fresh executor: no cached plan of another variant
    fd = define_fusion(nvf, case)
    name = scheduler or scheduler_of(case).NAME
    fd.executor().configure(heuristics=variant_heuristics(name, var), tuning=tuning)
    outs = fd.execute(inputs)
    out = outs[0] if case.n_outputs == 1 else list(outs)
    if ref is not None:
        check_result(case, out, ref)
    del out
    ms = timer(lambda: fd.execute(inputs))
    res = kernel_resources(fd)
    if profiled:
        try:
            res += " | " + kernel_times(lambda: fd.execute(inputs), inputs[0].device.type)
        except Exception as e:  # noqa: BLE001 - a profiler failure is reported, not fatal
            res += f" | profiler failed: {e!r}"[:200]
    return tuned(fd.last_schedule()), ms, res


def variant_heuristics(name: str, var: dict):
    """Heuristics that override the fields ``var`` of scheduler ``name``'s params (a
    reduction re-derives its split for the problem), and leave the others' params alone."""

    def heuristics(scheduler, problem, device, tuning):
        params = scheduler.heuristics(problem, device, tuning)
        if scheduler.name != name or not var:
            return params
        if scheduler.name == "reduction":
            return rd.override(params, problem.sizes, **var)
        if scheduler.name == "pointwise":
            return pw.override(params, **var)
        return dataclasses.replace(params, **var)

    return heuristics


def kernel_times(fn: Callable[[], object], device: str, calls: int = 20) -> str:
    """Each kernel's mean device time over ``calls`` calls of ``fn`` (L2 emptied before each,
    as ``time_kernel`` does), from the profiler: which launch of a plan costs what."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush_read(device)
            fn()
        torch.cuda.synchronize()
    rows = [
        (e.key, e.device_time_total / calls, e.count // calls)
        for e in prof.key_averages()
        if e.device_time_total > 0 and e.count >= calls
    ]
    return " | ".join(
        f"{k[:28]} x{n} {us:.1f}us"
        for k, us, n in rows
        if "flush" not in k and not k.startswith("void at::native::reduce")
    )


def parse_variant(text: str) -> dict:
    """``block_x=128,block_y=64,num_warps=8`` -> a dict of fields: ints, true/false/none,
    or words (``finish=kernel``)."""
    words = {"true": True, "false": False, "none": None}
    return {
        k: int(v) if v.lstrip("-").isdigit() else words.get(v.lower(), v)
        for k, v in (item.split("=") for item in text.split(",") if item)
    }


def parse_tuning(text: str) -> Tuning:
    """``normalization.max_tile=64,reduction.ticket_steps=0`` -> ``DEFAULT`` with those
    fields replaced: integers, decimals (``measure.min_l2=0.1``), or warps steps as
    ``4096:8/1024:4/0:2``; ``""``: ``DEFAULT``.
    An unknown scheduler or field is a ValueError."""
    fields: dict[str, dict] = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        scheduler, name = key.strip().split(".")
        if scheduler not in {f.name for f in dataclasses.fields(Tuning)}:
            raise ValueError(f"no scheduler {scheduler!r} in {item!r}")
        if name not in {f.name for f in dataclasses.fields(DEFAULT.of(scheduler))}:
            raise ValueError(f"{scheduler} has no tuning field {name!r}")
        if ":" in value:
            parsed: object = tuple(
                tuple(int(v) for v in step.split(":")) for step in value.split("/")
            )
        else:
            parsed = float(value) if "." in value else int(value)
        fields.setdefault(scheduler, {})[name] = parsed
    return DEFAULT.with_fields(**fields)


def _tunings(ap: argparse.ArgumentParser, texts: list[str]) -> list[tuple[str, Tuning | None]]:
    """(text, tuning) of each ``--tuning`` (one unnamed default when none is given)."""
    try:
        return [(text, parse_tuning(text)) for text in texts] or [("", None)]
    except ValueError as e:
        ap.error(f"--tuning: {e}")


def time_case(
    nvf,
    case: Case,
    args: argparse.Namespace,
    ceilings: dict,
    tunings: list[tuple[str, Tuning | None]],
) -> list[dict]:
    """Time every variant of ``case`` (``--variant``s, else the table of its kind; under each
    ``--tuning``, the heuristics' own params unless variants are given), a line each."""
    inputs = make_inputs(case, args.device)
    ref = reference(case, inputs)
    ceiling = ceilings["copy_gbps" if scheduler_of(case) is pw else "read_gbps"]
    nvf.FusionCache.reset()
    probe = define_fusion(nvf, case)
    probe.execute(inputs)
    kind = kind_of(probe.last_schedule())
    variants = args.variant or ([dict()] if args.tuning else VARIANTS[kind])
    rows = []
    for text, tuning in tunings:
        label = f"[{text or 'defaults'}] " if args.tuning else ""
        for var in variants:
            try:
                params, ms, res = run_variant(
                    nvf,
                    case,
                    inputs,
                    var,
                    lambda fn: time_kernel(fn, args.device),
                    ref,
                    args.profile and args.device.startswith("cuda"),
                    tuning,
                    planned_scheduler(probe.last_schedule()),
                )
                gbs = case.bytes_moved / ms / 1e6
                line = (
                    f"{case.name:<40} {label}{describe(params)}: {gbs:6.0f} GB/s "
                    f"{100 * gbs / ceiling:5.1f}%{res}"
                )
                rows.append(
                    dict(
                        case=case.name,
                        kind=kind,
                        variant=var,
                        tuning=text,
                        gbps=gbs,
                        pct=100 * gbs / ceiling,
                        resources=res.strip(),
                        params=str(params),
                    )
                )
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported, not fatal
                line = f"{case.name:<40} {label}{var}: failed {e!r}"[:240]
            print(line, flush=True)
    return rows


def main(argv=None) -> int:
    import torch

    import layoutfuse.nvfuser as nvf

    ap = argparse.ArgumentParser(
        prog="python -m benchmarks tune",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("cases", nargs="*", help="case names (python -m benchmarks suite SUITE --list)")
    ap.add_argument(
        "--filter",
        action="append",
        default=[],
        help="also every case whose name contains this (repeat: all must match)",
    )
    ap.add_argument(
        "--variant",
        action="append",
        type=parse_variant,
        default=[],
        help="field=value,...: try these instead of the table (repeatable)",
    )
    ap.add_argument(
        "--tuning",
        action="append",
        default=[],
        help="scheduler.field=int,...: the heuristics under these tuning fields "
        '(repeatable; "": the defaults)',
    )
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shrink", type=int, default=1, help="divide element counts (smoke runs)")
    ap.add_argument("--out", help="write the rows as JSON")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="also each kernel's device time (torch.profiler; CUDA)",
    )
    args = ap.parse_args(argv)
    cases = [c.shrunk(args.shrink) for c in find_cases(args.cases, args.filter)]
    if not cases:
        ap.error("no case given or matched")
    tunings = _tunings(ap, args.tuning)
    ceilings = measure_ceilings(args.device)
    print(
        f"read ceiling {ceilings['read_gbps']:.0f} GB/s, copy {ceilings['copy_gbps']:.0f} GB/s",
        flush=True,
    )
    rows = []
    for case in cases:
        rows += time_case(nvf, case, args, ceilings, tunings)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(ceilings=ceilings, device=args.device, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
