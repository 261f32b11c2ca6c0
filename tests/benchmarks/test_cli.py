"""``python -m benchmarks``: every command reaches its module's ``main`` with the rest of
the command line; ``--help`` lists them."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import __main__ as cli

ROOT = Path(__file__).resolve().parents[2]
ALL = [([name], module) for name, (module, _) in cli.COMMANDS.items()] + [
    (["probe", name], module) for name, (module, _) in cli.PROBES.items()
]


def test_help_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    for name in [*cli.COMMANDS, "probe", *cli.PROBES]:
        assert f" {name}" in text, name
    assert cli.main(["probe", "-h"]) == 0
    probes = capsys.readouterr().out
    assert all(f"  {name} " in probes for name in cli.PROBES)


@pytest.mark.parametrize(
    "argv",
    [[], ["bench"], ["probe"], ["probe", "inner"]],
    ids=["nothing", "unknown", "probe-nothing", "probe-unknown"],
)
def test_no_command_or_an_unknown_one_is_an_error(argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "commands:" in err
    assert ("unknown command" in err) == (argv[-1:] not in ([], ["probe"]))


@pytest.mark.parametrize("words,module", ALL, ids=[" ".join(w) for w, _ in ALL])
def test_each_command_runs_its_modules_main_with_the_rest(words, module, monkeypatch):
    mod = importlib.import_module(f"benchmarks.{module}")
    seen = []
    monkeypatch.setattr(mod, "main", lambda argv: seen.append(argv) or 7)
    assert cli.main([*words, "x", "--flag", "v"]) == 7
    assert seen == [["x", "--flag", "v"]]


@pytest.mark.parametrize("words,module", ALL, ids=[" ".join(w) for w, _ in ALL])
def test_each_commands_help_names_the_command(words, module, capsys):
    """The module's own parser takes the argv (``--help`` stops it before any work)."""
    with pytest.raises(SystemExit) as stop:
        cli.main([*words, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m benchmarks {' '.join(words)}")


def test_python_dash_m_benchmarks_from_the_checkout():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "tune" in done.stdout and "probe" in done.stdout
