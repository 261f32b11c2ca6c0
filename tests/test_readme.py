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


def test_the_readmes_links_resolve_in_a_plain_clone():
    """Every relative link points into the repository (nothing beside a clone, such as
    ../shared); web links are left to the reader."""
    root = README.parent
    links = re.findall(r"\]\(([^)#\s]+)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert local, "the README links to nothing in the repository"
    for link in local:
        path = (root / link).resolve()
        assert path.is_relative_to(root.resolve()) and path.exists(), link


def test_the_quick_start_pins_the_toolchain():
    install = next(
        line for line in README.read_text().splitlines() if line.startswith("pip install")
    )
    for pin in ("torch==", "triton==", "numpy<"):
        assert pin in install, f"the quick start's install line does not pin {pin}"
