"""No source file and no hand-written page of the docs grows past 800 lines: a file that does
is split by job (docs/README.md, "Where does X go")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT = 800
SUFFIXES = {".py", ".cpp", ".hpp", ".h", ".c", ".md"}
# Generated from the op table (`python -m pypto.ir.ops.reference`): its length is the table's.
GENERATED = {"docs/reference/ops.md"}


def _tracked() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z"], check=True, capture_output=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [p for p in out.decode().split("\0") if p]


def oversized(paths: list[str], root: Path = REPO) -> list[str]:
    found = []
    for rel in paths:
        path = root / rel
        if path.suffix not in SUFFIXES or rel in GENERATED or not path.is_file():
            continue
        with path.open("rb") as f:
            n = sum(1 for _ in f)
        if n > LIMIT:
            found.append(f"{rel}: {n} lines")
    return found


def test_no_tracked_file_is_over_the_limit() -> None:
    assert not oversized(_tracked())


def test_the_check_sees_a_long_file(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "short.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "data.json").write_text("1\n" * (LIMIT + 1))
    assert oversized(["long.py", "short.py", "data.json"], tmp_path) == [f"long.py: {LIMIT + 1} lines"]
