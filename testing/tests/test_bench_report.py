"""pypto_testing.bench: headline figures collected from the benchmark scripts into one table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pypto_testing import bench


def test_report_is_silent_without_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(bench.ENV, raising=False)
    bench.report("x", 1.0, 1.0, "b", "us")
    assert list(tmp_path.iterdir()) == []


def test_rows_and_verdicts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "report.jsonl"
    monkeypatch.setenv(bench.ENV, str(path))
    bench.report("fast op", 2.0, 1.0, "np.add", "us", bar=3.0, goal=2.0)
    bench.report("slow op", 40.0, 1.0, "np.add", "us", bar=25.0, goal=10.0)
    bench.report("per-task", 1.5, 0.1, "ctypes", "us", bar=2.0, goal=1.0, on="value")
    bench.report("unbounded", 5.0, 2.0, "noop", "us")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["ratio"] for r in rows] == [2.0, 40.0, 15.0, 2.5]
    assert bench.main([str(path)]) == 0
    out = capsys.readouterr().out
    lines = {
        name: next(ln for ln in out.splitlines() if name in ln)
        for name in ("fast op", "slow op", "per-task", "unbounded")
    }
    assert "goal met" in lines["fast op"]
    assert "NOT met" in lines["slow op"]
    assert "bar met" in lines["per-task"]  # bounded on its value (1.5 us <= 2 us), not its ratio
    assert "<= 2 us" in lines["per-task"]
    assert "met" not in lines["unbounded"]


def test_bad_baseline_and_missing_report(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(bench.ENV, str(tmp_path / "r.jsonl"))
    with pytest.raises(ValueError, match="positive baseline"):
        bench.report("x", 1.0, 0.0, "b", "us")
    assert bench.main([str(tmp_path / "absent.jsonl")]) == 1
