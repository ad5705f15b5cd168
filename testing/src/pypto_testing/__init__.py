"""Test support shared by the PyPTO packages' test suites."""

from pypto_testing.optional_runtime import (
    DEFAULT_BLOCKED,
    IsolatedRun,
    run_without_optional_runtime,
)

__all__ = ["DEFAULT_BLOCKED", "IsolatedRun", "run_without_optional_runtime"]
