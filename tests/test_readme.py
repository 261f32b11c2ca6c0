"""The README's Python examples run as written (CPU tensors: Triton's interpreter)."""

import re
from pathlib import Path

import pytest

from support.execution import schedules

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index):
    namespace: dict = {}
    exec(compile(BLOCKS[index], f"README.md example {index}", "exec"), namespace)


def test_the_nvfuser_example_chooses_outer_from_the_input_layout():
    namespace: dict = {}
    exec(compile(BLOCKS[0], "README.md example 0", "exec"), namespace)
    x, out, fd = namespace["x"], namespace["out"], namespace["fd"]
    (params,) = schedules(fd)
    assert params.family == "outer"
    assert (out - x.sum(1)).abs().max() < 1e-3
