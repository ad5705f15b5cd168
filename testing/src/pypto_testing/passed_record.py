"""pytest plugin: record the tests that passed, and deselect them in a later run.

A package suite runs twice in ``nox -t ci``: alone, with only the package's declared
dependencies (pypto-runtime's session has no torch, so its torch tests skip), and again with the
whole stack installed (``nox -s tests``). The second run only needs what the first did not
pass. ``--record-passed PATH`` writes the node ids of the tests that passed (setup, call and
teardown) to PATH; ``--skip-passed PATH`` deselects them. Both carry ``--record-key``, what the
record is valid for (the nox sessions pass a digest of every package's sources): a record whose
key differs, or that is missing or unreadable, deselects nothing, so the second run then runs
the whole suite. Under pytest-xdist the controller writes the record from its workers' reports.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

_RECORD_FORMAT = 1


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pypto-testing", "record and skip tests that passed in an earlier run")
    group.addoption(
        "--record-passed", metavar="PATH", help="write the node ids of the tests that passed to PATH"
    )
    group.addoption("--skip-passed", metavar="PATH", help="deselect the tests PATH records as passed")
    group.addoption("--record-key", default="", help="what the record is valid for (a digest of the sources)")


def read_record(path: Path, key: str) -> set[str] | None:
    """The node ids ``path`` records as passed under ``key``; None if it is missing, unreadable,
    of another format or key."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _RECORD_FORMAT or data.get("key") != key:
        return None
    passed = data.get("passed")
    if not isinstance(passed, list) or not all(isinstance(n, str) for n in passed):
        return None
    return set(passed)


def write_record(path: Path, key: str, passed: set[str]) -> None:
    """Write the record whole or not at all (a temporary file renamed over ``path``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"format": _RECORD_FORMAT, "key": key, "passed": sorted(passed)}, indent=0)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Recorder:
    """Collects the outcome of every test phase; writes the record when the session ends."""

    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key
        self.passed: set[str] = set()
        self.failed: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    def pytest_sessionfinish(self) -> None:
        write_record(self.path, self.key, self.passed - self.failed)


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("record_passed")
    if path and not hasattr(config, "workerinput"):  # a pytest-xdist worker: its controller records
        config.pluginmanager.register(_Recorder(Path(path), config.getoption("record_key")))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Say whether the record was used (also under -q, which hides the header)."""
    path = config.getoption("skip_passed")
    if not path:
        return
    passed = read_record(Path(path), config.getoption("record_key"))
    if passed is None:
        terminalreporter.write_line(f"skip-passed: no valid record at {path} for this key: ran every test")
    else:
        terminalreporter.write_line(
            f"skip-passed: {len(passed)} tests passed in the run recorded at {path}: deselected"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption("skip_passed")
    if not path:
        return
    passed = read_record(Path(path), config.getoption("record_key"))
    if not passed:
        return
    kept = [item for item in items if item.nodeid not in passed]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid in passed])
        items[:] = kept
