"""``python -m benchmarks probe sass``: a case's kernels at their real size, compiled for
sm_90 on the CPU, and the instructions per byte of their main loops."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import probe_sass, tune  # noqa: E402
from layoutfuse.schedulers.tuning import DEFAULT  # noqa: E402


def test_the_fold_shows_as_16_byte_loads_in_fewer_instructions():
    """r3_048 (fp16 column sums over rows of 127, 620 MB, planned on meta tensors): the
    folded main loop moves 16-byte vectors, the unfolded one 2-byte elements, at over
    twice the instructions per byte."""
    (case,) = tune.find_cases(["r3_048"], [])
    found = {}
    for fold in (1, 0):
        tuning = DEFAULT.with_fields(reduction=dict(fold_rows=fold))
        params, regions = probe_sass.regions(case, tuning)
        assert params[0].fold == (8 if fold else 0), params
        main = regions[0]
        assert main.looped, main
        found[fold] = main
    assert found[1].loads.get("LDG.E.128", 0) > 0 and "LDG.E.U16" not in found[1].loads
    assert found[0].loads.get("LDG.E.U16", 0) > 0 and "LDG.E.128" not in found[0].loads
    assert found[0].per_byte > 2 * found[1].per_byte, found


def test_the_cli_lists_each_case_and_the_worst(capsys):
    assert probe_sass.main(["r2_035", "--worst", "1"]) == 0
    out = capsys.readouterr().out
    assert "r2_035" in out and "reduction_kernel loop" in out
    assert "highest instructions per byte" in out
