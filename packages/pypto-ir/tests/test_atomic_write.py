"""atomic_write: the whole file or nothing, fsynced before the rename, no temporary left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pypto.ir import files as aw
from pypto.ir.files import atomic_write


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize(
    ("data", "want"),
    [("héllo\n", "héllo\n".encode()), (b"\x00\x01", b"\x00\x01"), (lambda f: f.write(b"cb"), b"cb")],
)
def test_writes_text_bytes_or_through_a_function(tmp_path: Path, data: Any, want: bytes) -> None:
    target = tmp_path / "f"
    atomic_write(target, data)
    assert target.read_bytes() == want
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert _leftovers(tmp_path) == []


def test_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("old")
    atomic_write(target, "new")
    assert target.read_text() == "new"


def test_mode_none_is_what_a_plain_creation_gives(tmp_path: Path) -> None:
    umask = os.umask(0o027)
    try:
        atomic_write(tmp_path / "f", "x", mode=None)
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o640


def test_fsyncs_the_data_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(aw.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(aw.os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    atomic_write(tmp_path / "f", "x")
    assert events == ["fsync", "replace"]
    events.clear()
    atomic_write(tmp_path / "g", "x", sync_dir=True)
    assert events == ["fsync", "replace", "fsync"]  # the directory after the rename


def test_replace_false_refuses_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("old")
    with pytest.raises(FileExistsError, match="replace=False"):
        atomic_write(target, "new", replace=False)
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_replace_false_refuses_a_file_that_appears_while_writing(tmp_path: Path) -> None:
    target = tmp_path / "f"

    def write(f: Any) -> None:
        f.write(b"new")
        target.write_text("someone else")

    with pytest.raises(FileExistsError, match="appeared while writing"):
        atomic_write(target, write, replace=False)
    assert target.read_text() == "someone else"
    assert _leftovers(tmp_path) == []


def test_replace_false_publishes_a_new_file(tmp_path: Path) -> None:
    atomic_write(tmp_path / "f", "new", replace=False)
    assert (tmp_path / "f").read_text() == "new"
    assert _leftovers(tmp_path) == []


def test_a_failed_write_leaves_the_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("old")

    def write(f: Any) -> None:
        f.write(b"half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        atomic_write(target, write)
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_never_writes_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("keep")
    d = tmp_path / "d"
    d.mkdir()
    (d / "f").symlink_to(outside)
    atomic_write(d / "f", "new")
    assert outside.read_text() == "keep"
    assert not (d / "f").is_symlink()
    assert (d / "f").read_text() == "new"


def test_a_missing_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "nope" / "f", "x")
