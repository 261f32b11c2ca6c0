"""``python -m benchmarks COMMAND ...``: one entry point for the benchmark tools.

Each command is a module of this package whose ``main(argv)`` takes the rest of the
command line (``python -m benchmarks COMMAND --help`` shows its options); the module is
imported only when its command runs.
"""

from __future__ import annotations

import importlib
import sys

PROG = "python -m benchmarks"
# command -> (module, what it does)
COMMANDS = {
    "suite": (
        "suite",
        "run a suite (reduction, pointwise, normalization, seed) against "
        "eager and torch.compile; write its result JSON",
    ),
    "chart": ("chart", "draw a result JSON as a bar chart (needs matplotlib)"),
    "targets": ("targets", "issue 16's targets over random-suite result JSONs"),
    "tune": ("tune", "time params or tuning variants of the heuristics on chosen cases"),
    "profile": ("profile", "each kernel's device time for chosen cases (CUDA)"),
    "overhead": ("overhead", "host time of fd.execute against one eager op"),
    "thunder": (
        "thunder_bench",
        "thunder.jit with layoutfuse as nvFuser against eager and torch.compile: norms, "
        "softmax, GELU, a nanoGPT block, forward and backward; regions and kernels",
    ),
    "ops": (
        "ops",
        "cat, slice, pad, gathers, take_along_axis, cumsum, topk, argsort and dropout "
        "against eager and torch.compile; write its result JSON",
    ),
}
PROBES = {
    "outer": ("probe_outer", "hand-written outer reduction kernels with every knob (CUDA)"),
    "cluster": (
        "probe_cluster",
        "whether Triton compiles a reduction shared by a cluster's CTAs (sm_90, no GPU)",
    ),
    "registers": ("registers", "registers and spills of reduction variants (sm_90, no GPU)"),
    "sass": ("probe_sass", "SASS instructions per byte of each kernel's main loop (sm_90, no GPU)"),
}


def usage(prog: str, table: dict[str, tuple[str, str]], extra: str = "") -> str:
    width = max(len(name) for name in table)
    lines = [f"usage: {prog} COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in table.items()]
    return "\n".join(lines + ([extra] if extra else []))


def top_usage() -> str:
    width = max(len(name) for name in COMMANDS)
    probes = f"  {'probe':<{width}}  {' | '.join(PROBES)}: research probes ({PROG} probe --help)"
    return usage(PROG, COMMANDS, probes)


def resolve(argv: list[str]) -> tuple[str | None, list[str], str]:
    """(module to run or None, its argv, the text to print when there is none)."""
    if argv[:1] == ["probe"]:
        table, prog, argv, text = PROBES, f"{PROG} probe", argv[1:], usage(f"{PROG} probe", PROBES)
    else:
        table, prog, text = COMMANDS, PROG, top_usage()
    if not argv or argv[0] in ("-h", "--help"):
        return None, argv, text
    if argv[0] not in table:
        return None, argv, f"{prog}: unknown command {argv[0]!r}\n\n{text}"
    return table[argv[0]][0], argv[1:], text


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    module, rest, text = resolve(argv)
    if module is None:
        asked = bool(rest) and rest[0] in ("-h", "--help")
        print(text, file=sys.stdout if asked else sys.stderr)
        return 0 if asked else 2
    return importlib.import_module(f".{module}", __package__).main(rest)


if __name__ == "__main__":
    sys.exit(main())
