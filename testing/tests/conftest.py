"""Markers of the cross-package tests, and this folder on sys.path for the helpers the
distributed tests share (_dist_programs.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# pypto.torch.init would load (or first build) the native describe_call path on a background
# thread; the suites test that path through explicit build_native() calls and the start itself
# with a stand-in, so their many init() calls do not start it (tests may set it back).
os.environ.setdefault("PYPTO_NATIVE_DESCRIBE", "0")

HERE = Path(__file__).resolve().parent

# Test modules import shared helpers by name (``from _dist_programs import config``); with
# --import-mode=importlib this folder is not on sys.path, so conftest (loaded before any test
# module) puts it there.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: starts its own rank processes (> 20 s on a 2-core machine)")
