"""The multi-chip runtime's tests: the ``slow`` marker, this folder on sys.path for what they
share (_dist_programs.py), and the package's per-test store isolation turned off.

These tests need torch (``pypto-runtime[distributed]``) and skip without it, so pypto-runtime's
own nox session (no torch) skips them and ``nox -s tests`` runs them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# Test modules import shared helpers by name (``from _dist_programs import config``); with
# --import-mode=importlib this folder is not on sys.path, so conftest (loaded before any test
# module) puts it there.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: starts its own rank processes (> 20 s on a 2-core machine)")


@pytest.fixture(autouse=True)
def _isolated_settings() -> None:
    """Overrides the package conftest's per-test store: a module's fixtures compile a program once
    and its tests then run it (the rank processes load it from the store the compile used), so
    these tests keep the store of the session; the store tests set their own per test."""
