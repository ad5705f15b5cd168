"""Markers of the cross-package tests."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: starts its own rank processes (> 20 s on a 2-core machine)")
