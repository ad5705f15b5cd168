"""Shared fixtures: an isolated store root (or, for a module that asks for ``module_store``, one
store shared by its tests), and a reset process mode gate; this folder on sys.path for the
helpers of store_test_helpers.py."""

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


def _isolate(monkeypatch: pytest.MonkeyPatch, store: Path) -> None:
    for name in ("PYPTO_CACHE", "PYPTO_CACHE_READONLY", "PYPTO_CACHE_FAULT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(store))


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own store root and no inherited cache/fault settings."""
    _isolate(monkeypatch, tmp_path / "store")


@pytest.fixture(scope="module")
def store_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store of a module that uses ``module_store``: one for all its tests."""
    return tmp_path_factory.mktemp("module-store")


@pytest.fixture(scope="module")
def module_settings(store_root: Path) -> Iterator[None]:
    """The isolation of ``_isolated_settings`` for a module-scoped fixture (which runs before any
    function-scoped one): the module's one store and no inherited cache/fault settings, while
    the module runs."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _isolate(monkeypatch, store_root)
        yield


@pytest.fixture
def module_store(store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PYPTO_CACHE_DIR at the module's one store (``pytestmark =
    pytest.mark.usefixtures("module_store")``): each program compiles once, later tests (and
    the child processes they start) hit it."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(store_root))


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
