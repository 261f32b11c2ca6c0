"""``python -m benchmarks chart``'s Thunder form: each system's time over torch.compile's
per program, the issue's nvFuser figure beside the wall times."""

from benchmarks.chart import time_ratios

DOC = {
    "suite": "thunder",
    "systems": ["eager", "compile", "thunder"],
    "reference": {"thunder_nvfuser_0.2.36_ms": {"a-fp32-fwd": 3.0}},
    "rows": [
        {
            "case": "a-fp32-fwd",
            "eager": {"ms": 4.0, "device_ms": 1.0},
            "compile": {"ms": 2.0, "device_ms": 0.5},
            "thunder": {"ms": 1.0, "device_ms": 0.25},
        },
        {
            "case": "b-bf16-fwd",
            "eager": {"ms": 1.0, "device_ms": 1.0},
            "compile": {"ms": None, "error": "failed"},
            "thunder": {"ms": 0.5, "device_ms": None},
        },
    ],
}


def test_device_times_over_torch_compiles():
    names, ratios = time_ratios(DOC, "device_ms")
    assert names == ["a-fp32-fwd", "b-bf16-fwd"]
    assert ratios == {"eager": [2.0, None], "compile": [1.0, None], "thunder": [0.5, None]}


def test_wall_times_with_the_issues_nvfuser_figure():
    _, ratios = time_ratios(DOC, "ms")
    assert ratios["thunder"] == [0.5, None] and ratios["nvfuser"] == [1.5, None]
