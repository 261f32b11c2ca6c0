"""Shared pytest options: ``--full`` runs the tests marked ``full`` (large sizes, whole sweeps).

Without it, CI runs a fixed, seeded sample; with it, the full sets (meant for the GPU).
"""

import pytest


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="run the tests marked full (seed sizes, whole sweeps)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--full"):
        return
    skip = pytest.mark.skip(reason="marked full: run with --full")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip)
