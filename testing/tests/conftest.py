"""Markers of the cross-package tests, and this folder on sys.path for the helpers the
distributed tests share (_dist_programs.py)."""

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
