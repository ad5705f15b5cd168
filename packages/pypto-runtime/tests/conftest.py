"""Shared fixtures: an isolated store root, and a reset process mode gate; this folder on
sys.path for the helpers of store_test_helpers.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pypto.runtime import mode_gate

HERE = Path(__file__).resolve().parent

# Test modules import shared helpers by name (``from store_test_helpers import entry_steps``);
# with --import-mode=importlib this folder is not on sys.path, so conftest (loaded before any
# test module) puts it there.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own store root and no inherited cache/fault settings."""
    for name in ("PYPTO_CACHE", "PYPTO_CACHE_READONLY", "PYPTO_CACHE_FAULT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))


@pytest.fixture
def fresh_gate() -> Iterator[None]:
    mode_gate._reset_for_tests()
    yield
    mode_gate._reset_for_tests()


@pytest.fixture(autouse=True, scope="module")
def _leave_the_process_unclaimed() -> Iterator[None]:
    """After each module: close the shared program Workers and unclaim the gate, so that test
    suites of other packages run in the same process (``nox -s tests``) start from scratch."""
    yield
    from pypto.runtime import worker

    worker.close_shared_workers()
    mode_gate._reset_for_tests()
