"""pypto_testing.passed_record: a run records the tests that passed; a later run with the same key
deselects them, and runs everything when the record is stale, missing or damaged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = """
import pytest

def test_passes():
    pass

def test_fails():
    assert False

@pytest.mark.skip(reason="not here")
def test_skipped():
    pass

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")

def test_passes_but_its_teardown_fails(broken_teardown):
    pass
"""


def run_suite(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest on the suite above in a fresh interpreter (hypothesis's plugin, a second of start-up
    here, left out), each test's outcome listed (-rA)."""
    plugins = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    cmd = [sys.executable, "-m", "pytest", *plugins, "-rA", "test_suite.py", *args]
    return subprocess.run(cmd, check=False, cwd=folder, capture_output=True, text=True, timeout=120)


def summary(proc: subprocess.CompletedProcess[str]) -> str:
    """pytest's last line: the counts of each outcome."""
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """The suite in its own folder, which its pytest.ini makes the rootdir of its node ids (not a
    project folder above it, as the nox sessions' scratch folders have)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_suite.py").write_text(SUITE)
    return tmp_path


def recorded(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    assert data["key"] == "k1"
    return list(data["passed"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_the_record_holds_only_what_passed_every_phase(suite: Path, workers: list[str]) -> None:
    record = suite / "records" / "suite.json"
    proc = run_suite(suite, "--record-passed", str(record), "--record-key", "k1", *workers)
    assert proc.returncode == 1, proc.stdout  # test_fails fails
    assert recorded(record) == ["test_suite.py::test_passes"]
    assert [p.name for p in record.parent.iterdir()] == ["suite.json"]  # no temporary file left


def test_a_valid_record_deselects_what_passed(suite: Path) -> None:
    record = suite / "suite.json"
    run_suite(suite, "--record-passed", str(record), "--record-key", "k1")
    proc = run_suite(suite, "--skip-passed", str(record), "--record-key", "k1", "-q")  # -q: no header
    assert "1 tests passed in the run recorded at" in proc.stdout, proc.stdout
    assert "1 failed, 1 passed, 1 skipped, 1 deselected, 1 error" in summary(proc), proc.stdout
    assert "PASSED test_suite.py::test_passes\n" not in proc.stdout
    assert "FAILED test_suite.py::test_fails" in proc.stdout


@pytest.mark.parametrize("damage", ["other key", "missing", "not json", "other format", "bad ids"])
def test_an_invalid_record_deselects_nothing(suite: Path, damage: str) -> None:
    record = suite / "suite.json"
    run_suite(suite, "--record-passed", str(record), "--record-key", "k1")
    key = "k2" if damage == "other key" else "k1"
    if damage == "missing":
        record.unlink()
    elif damage == "not json":
        record.write_text('{"format": 1, "key": "k1", "passed": [')
    elif damage == "other format":
        record.write_text(json.dumps({"format": 0, "key": "k1", "passed": ["test_suite.py::test_passes"]}))
    elif damage == "bad ids":
        record.write_text(json.dumps({"format": 1, "key": "k1", "passed": "test_suite.py::test_passes"}))
    proc = run_suite(suite, "--skip-passed", str(record), "--record-key", key)
    assert "no valid record" in proc.stdout, proc.stdout
    assert "1 failed, 2 passed, 1 skipped, 1 error" in summary(proc), proc.stdout
    assert "deselected" not in summary(proc)
    assert "PASSED test_suite.py::test_passes\n" in proc.stdout
