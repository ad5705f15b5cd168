"""Markers of the cross-package tests."""

from __future__ import annotations

import os

# pypto.torch.init would load (or first build) the native describe_call path on a background
# thread; the suites test that path through explicit build_native() calls and the start itself
# with a stand-in, so their many init() calls do not start it (tests may set it back).
os.environ.setdefault("PYPTO_NATIVE_DESCRIBE", "0")

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: starts its own rank processes (> 20 s on a 2-core machine)")
