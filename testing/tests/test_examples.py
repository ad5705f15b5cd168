"""The programs of examples/ run as ordinary files with the packages installed (nothing from the
test-only pypto_testing), print what they computed and pass their own check."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pypto_testing.scripts import run_python_file

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


def test_examples_import_only_the_packages() -> None:
    assert EXAMPLES, "examples/ has no programs"
    for example in EXAMPLES:
        tree = ast.parse(example.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not [n for n in names if n.split(".")[0] == "pypto_testing"], f"{example.name} imports {names}"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_example_runs_and_matches(example: Path, tmp_path: Path) -> None:
    pytest.importorskip("pypto.runtime", reason="the whole stack is installed only in the `tests` session")
    proc = run_python_file(example, tmp_path, tmp_path / "cache")
    assert proc.returncode == 0, f"{example.name} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert "MATCH" in proc.stdout, proc.stdout
    assert "MISMATCH" not in proc.stdout, proc.stdout
