"""The package's imports go one way: a module imports its own layer or lower ones.

Layers, lowest first (``LAYERS``): the leaves (dtypes, errors, integer helpers), the IR,
the analyses and passes over it, the schedulers, codegen, the runtime, the frontends.
Every import counts, function-level (lazy) ones included: the whole AST of each module
under src/layoutfuse is walked, relative imports resolved. A module that no entry of
``LAYERS`` covers fails, so a new package must be placed. Benchmarks, tuning and probes
live in the top-level ``benchmarks`` package, outside the wheel: nothing in the package
imports them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "layoutfuse"

# Module prefixes by layer, lowest first. ``layoutfuse`` itself is its __init__.py alone.
LAYERS: dict[str, int] = {
    "layoutfuse.dtypes": 0,
    "layoutfuse.errors": 0,
    "layoutfuse.intmath": 0,
    "layoutfuse.ir": 1,
    "layoutfuse.analysis": 2,
    "layoutfuse.segmenter": 2,
    "layoutfuse.passes": 2,
    "layoutfuse.reference": 2,
    "layoutfuse.schedulers": 3,
    "layoutfuse.codegen": 4,
    "layoutfuse.runtime": 5,
    "layoutfuse.frontend": 6,
    "layoutfuse.nvfuser": 6,
    "layoutfuse.testing_api": 6,
    "layoutfuse.demo": 6,
    "layoutfuse": 6,
}

# (importer, imported module) pairs tolerated against the direction: none since the
# schedulers' integer helpers moved to the leaf module layoutfuse.intmath. Keep it empty;
# test_known_violations_still_occur fails on an entry that no longer occurs.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    target: str  # the absolute module name imported
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def layer_of(name: str) -> int | None:
    """The layer of the longest prefix of ``name`` in ``LAYERS`` (None: not placed); the
    package's own entry covers its __init__.py only, not every module under it."""
    if name == PACKAGE:
        return LAYERS[PACKAGE]
    parts = name.split(".")
    for n in range(len(parts), 1, -1):
        layer = LAYERS.get(".".join(parts[:n]))
        if layer is not None:
            return layer
    return None


def resolve(importer: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative levels resolved)."""
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[importer].name == "__init__.py"
    base = importer.split(".")
    if not is_package:
        base.pop()
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(importer: str) -> list[Import]:
    """Every import of the package by ``importer``, at any depth of its AST. ``from m import
    x`` imports ``m.x`` where that is a module of the package, else ``m``."""
    tree = ast.parse(MODULES[importer].read_text(), str(MODULES[importer]))
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(importer, node)
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append(Import(sub if sub in MODULES else base, node.lineno))
    ours = [i for i in found if i.target == PACKAGE or i.target.startswith(PACKAGE + ".")]
    return list(dict.fromkeys(ours))  # ``from m import a, b``: once


def violations(importer: str) -> list[str]:
    """What is wrong with ``importer``'s imports, one line each (known violations left out)."""
    where = MODULES[importer].relative_to(SRC)
    mine = layer_of(importer)
    if mine is None:
        return [f"{importer} ({where}) is in no layer: place it in LAYERS"]
    problems = []
    for imp in imports_of(importer):
        theirs = layer_of(imp.target)
        if theirs is None:
            problems.append(f"{where}:{imp.line}: {importer} imports {imp.target}, in no layer")
        elif theirs > mine and (importer, imp.target) not in KNOWN_VIOLATIONS:
            problems.append(
                f"{where}:{imp.line}: {importer} (layer {mine}) imports "
                f"{imp.target} (layer {theirs}), a higher layer"
            )
    return problems


@pytest.mark.parametrize("importer", list(MODULES))
def test_imports_go_one_way(importer):
    problems = violations(importer)
    assert not problems, "\n".join(problems)


def test_known_violations_still_occur():
    stale = [
        (a, b)
        for a, b in sorted(KNOWN_VIOLATIONS)
        if a not in MODULES or all(i.target != b for i in imports_of(a))
    ]
    assert not stale, f"KNOWN_VIOLATIONS entries that no longer occur, remove them: {stale}"


def test_known_violations_are_violations():
    """An entry must go upward; one that does not would tolerate nothing."""
    wrong = [
        (a, b) for a, b in sorted(KNOWN_VIOLATIONS) if not (layer_of(b) or 0) > (layer_of(a) or 0)
    ]
    assert not wrong, f"KNOWN_VIOLATIONS entries that do not go to a higher layer: {wrong}"


# --- the checker itself, on a made-up package ----------------------------------------------------
@pytest.fixture
def made_up(tmp_path, monkeypatch):
    """A package of three modules; the checker's globals pointed at it."""
    pkg = tmp_path / PACKAGE
    for d in ("ir", "newpkg"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "runtime.py").write_text("")
    (pkg / "newpkg" / "thing.py").write_text("")
    (pkg / "ir" / "fusion.py").write_text(
        "from ..dtypes import DataType\n"
        "def f():\n"
        "    from .. import runtime\n"
        "    import layoutfuse.bench.x\n"
    )
    monkeypatch.setitem(globals(), "SRC", tmp_path)
    monkeypatch.setitem(globals(), "MODULES", {module_name(p): p for p in pkg.rglob("*.py")})


def test_the_walk_finds_lazy_and_relative_imports(made_up):
    targets = sorted(i.target for i in imports_of("layoutfuse.ir.fusion"))
    assert targets == ["layoutfuse.bench.x", "layoutfuse.dtypes", "layoutfuse.runtime"]
    problems = violations("layoutfuse.ir.fusion")
    assert len(problems) == 2, problems
    assert any(
        "layoutfuse.ir.fusion (layer 1) imports layoutfuse.runtime (layer 5)" in p for p in problems
    ), problems
    assert any("imports layoutfuse.bench.x, in no layer" in p for p in problems), problems


def test_a_module_in_no_layer_fails(made_up):
    (problem,) = violations("layoutfuse.newpkg.thing")
    assert "layoutfuse.newpkg.thing" in problem and "in no layer" in problem


def test_research_lives_outside_the_package():
    """Benchmarks, tuners and probes are the top-level ``benchmarks`` package."""
    assert not list((SRC / PACKAGE / "bench").glob("**/*.py"))
    assert (SRC.parent / "benchmarks" / "__main__.py").exists()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            assert not any(n.split(".")[0] == "benchmarks" for n in names), (
                f"{name} imports the benchmarks package"
            )
