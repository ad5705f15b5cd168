"""pytest plugin: exposes the shared fixtures to every package's tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pypto_testing.optional_runtime import IsolatedRun
from pypto_testing.optional_runtime import run_without_optional_runtime as _run


@pytest.fixture
def run_without_optional_runtime() -> Callable[..., IsolatedRun]:
    """Run code in a fresh interpreter where optional runtime modules cannot be imported.

    Returns :func:`pypto_testing.run_without_optional_runtime`; see its docstring.
    """
    return _run
