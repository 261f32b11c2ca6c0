"""Plan every benchmark case on meta tensors and compare the kernels two trees generate.

    PYTHONPATH=src:. python tools/kernel_golden.py write OUT.json
    python tools/kernel_golden.py diff A.json B.json      # exit 1 when a case differs

A change that is not meant to alter existing kernels (a refactor, a new op) should
show 0 differing cases: each case's launches are compared by kernel source (comment
lines stripped), bound arguments and constexprs. Nothing is launched.
"""

from __future__ import annotations

import difflib
import json
import sys


def _meta_inputs(case):
    import torch

    physical = [case.shape[d] for d in case.order]
    inverse = [case.order.index(d) for d in range(len(case.order))]
    return [
        torch.empty(physical, dtype=case.torch_dtype, device="meta").permute(*inverse)
        for _ in range(case.n_inputs)
    ]


def _strip(src: str) -> str:
    return "\n".join(line for line in src.splitlines() if not line.lstrip().startswith("#"))


def write(path: str) -> None:
    import torch

    import layoutfuse.nvfuser as nvf
    from benchmarks.cases import SUITES
    from benchmarks.layoutfuse_runner import define_fusion

    result, seen = {}, set()
    for make_cases in SUITES.values():
        for case in make_cases():
            if case.name in seen:
                continue
            seen.add(case.name)
            nvf.FusionCache.reset()
            fd = define_fusion(nvf, case)
            executor = fd._entry.executor() if fd._entry is not None else fd.executor()
            record = executor.plan(_meta_inputs(case))
            launches = []
            for launch in record.launches:
                args = [
                    ("T", tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else a
                    for a in launch.args
                ]
                launches.append(
                    {
                        "src": _strip(launch.kernel.source),
                        "args": repr(args),
                        "meta": repr(sorted(launch.meta.items())),
                    }
                )
            result[case.name] = {"launches": launches, "schedule": repr(record.params)}
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print(f"{len(result)} cases planned into {path}")


def diff(path_a: str, path_b: str) -> int:
    with open(path_a) as fa, open(path_b) as fb:
        a, b = json.load(fa), json.load(fb)
    bad = 0
    for name in sorted(set(a) | set(b)):
        la, lb = a.get(name, {}).get("launches"), b.get(name, {}).get("launches")
        if la == lb:
            continue
        bad += 1
        if bad > 3:
            continue
        print("DIFF", name)
        if not (la and lb and len(la) == len(lb)):
            print("  launch counts", la and len(la), lb and len(lb))
            continue
        for x, y in zip(la, lb):
            for key in ("src", "args", "meta"):
                if x[key] != y[key]:
                    lines = difflib.unified_diff(
                        x[key].splitlines(), y[key].splitlines(), lineterm=""
                    )
                    print(" ", key)
                    print("\n".join(list(lines)[:30]))
    print(f"{bad} of {len(set(a) | set(b))} cases differ")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
