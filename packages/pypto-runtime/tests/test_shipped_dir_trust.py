"""A shipped artifact directory (``CompiledProgram.from_dir``, ``pypto-runtime run DIR`` and
``inspect DIR``) as a trust boundary: what its files may make the loader read or wait for.

Each test plants what the sender of a directory could plant (a FIFO, a symlink, an
``entries.json`` pointing elsewhere) and checks that loading is refused with
:class:`UnsafeArtifactError` naming the path, promptly: every call that could block runs
under an alarm, and the commands run as subprocesses with a timeout.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from runtime_programs import add
from store_test_helpers import no_hang, pypto_runtime

import pypto.runtime as rt
from pypto.runtime import _fs
from pypto.runtime.compiled import UnsafeArtifactError, entry_index

HANG_LIMIT = 20  # seconds; a refused file is refused in milliseconds


@pytest.fixture(scope="module")
def shipped_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``add`` compiled into a directory of its own (sources and metadata, no binaries)."""
    where = tmp_path_factory.mktemp("shipped") / "add"
    a = np.ones((16, 16), np.float32)
    rt.compile(add, a, a, np.empty_like(a), output_dir=where)
    assert (where / "compiled_meta.json").is_file()
    return where


@pytest.fixture
def shipped(shipped_once: Path, tmp_path: Path) -> Path:
    """A fresh copy of the shipped directory for one test to damage."""
    copy = tmp_path / "shipped"
    shutil.copytree(shipped_once, copy)
    return copy


def _refused_both_ways(root: Path, cwd: Path, message: str, *inspect_args: str) -> None:
    """Loading ``root`` and ``pypto-runtime inspect root`` both refuse it with ``message``,
    without hanging on a FIFO."""
    with no_hang(HANG_LIMIT), pytest.raises(UnsafeArtifactError, match=re.escape(message)):
        rt.CompiledProgram.from_dir(root)
    proc = pypto_runtime("inspect", str(root), *inspect_args, cwd=cwd, timeout=120)  # a FIFO would hang
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _symlink_to_copy(path: Path, elsewhere: Path) -> None:
    """Replace ``path`` with a symlink to an identical copy outside the directory."""
    shutil.copyfile(path, elsewhere)
    path.unlink()
    path.symlink_to(elsewhere)


def _multi(tmp_path: Path, shipped: Path, entries: list[str], default: str) -> Path:
    """A multi-entry program directory holding ``shipped`` as entry ``add``."""
    root = tmp_path / "multi"
    root.mkdir()
    shutil.copytree(shipped, root / "add")
    (root / "entries.json").write_text(json.dumps({"entries": entries, "default": default}))
    return root


# -- compiled_meta.json: a FIFO or a symlink -------------------------------------------------


def test_fifo_metadata_is_refused_without_hanging(shipped: Path) -> None:
    _fifo(shipped / "compiled_meta.json")
    for load in (rt.CompiledArtifact.from_dir, rt.CompiledProgram.from_dir):
        with (
            no_hang(HANG_LIMIT),
            pytest.raises(UnsafeArtifactError, match="metadata is not a regular file") as info,
        ):
            load(shipped)
        assert info.value.path == shipped / "compiled_meta.json"
    for command in ("inspect", "run"):
        proc = pypto_runtime(command, str(shipped), cwd=shipped.parent, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "refused:" in proc.stderr
        assert "compiled_meta.json: the metadata is not a regular file" in proc.stderr


def test_symlinked_metadata_is_refused(shipped: Path, tmp_path: Path) -> None:
    _symlink_to_copy(shipped / "compiled_meta.json", tmp_path / "meta-elsewhere.json")
    _refused_both_ways(shipped, tmp_path, "the metadata is a symlink")


def test_fifo_or_symlinked_manifest_of_a_shipped_directory_is_refused(shipped: Path, tmp_path: Path) -> None:
    (shipped / "manifest.json").write_text("{}")
    _fifo(shipped / "manifest.json")
    with no_hang(HANG_LIMIT), pytest.raises(UnsafeArtifactError, match="manifest is not a regular file"):
        rt.CompiledProgram.from_dir(shipped)
    (shipped / "manifest.json").unlink()
    (tmp_path / "m.json").write_text("{}")
    (shipped / "manifest.json").symlink_to(tmp_path / "m.json")
    with pytest.raises(UnsafeArtifactError, match="manifest is a symlink"):
        rt.CompiledProgram.from_dir(shipped)


# -- sources read at the first load ------------------------------------------------------------


def test_symlinked_source_directory_is_refused_at_load(shipped: Path, tmp_path: Path) -> None:
    """``kernels/`` swapped for a symlink to an identical copy elsewhere: the final file is
    regular, but the path leaves the directory on the way."""
    shutil.move(shipped / "kernels", tmp_path / "kernels-elsewhere")
    (shipped / "kernels").symlink_to(tmp_path / "kernels-elsewhere")
    prog = rt.CompiledProgram.from_dir(shipped)  # metadata only: fine
    with pytest.raises(UnsafeArtifactError, match="is a symlink, on the way to the source kernels/") as info:
        prog.artifact.chip_callable()
    assert info.value.path == shipped / "kernels"


def test_fifo_source_is_refused_at_load_without_hanging(shipped: Path) -> None:
    source = rt.CompiledProgram.from_dir(shipped).metadata.kernels[0].source
    _fifo(shipped / source)
    prog = rt.CompiledProgram.from_dir(shipped)
    with no_hang(HANG_LIMIT), pytest.raises(UnsafeArtifactError, match="source is not a regular file"):
        prog.artifact.chip_callable()


# -- entries.json: confined to the directory ---------------------------------------------------


def test_a_confined_multi_entry_directory_loads(shipped: Path, tmp_path: Path) -> None:
    root = _multi(tmp_path, shipped, ["add"], "add")
    assert entry_index(root) == (("add",), "add")
    prog = rt.CompiledProgram.from_dir(root)
    assert prog.path == root / "add"
    assert prog.entry_names == ("add",)


@pytest.mark.parametrize("outside", ["../elsewhere", "ABSOLUTE", "add/../../elsewhere", "..", ".", ""])
def test_entries_json_may_not_name_a_directory_outside(shipped: Path, tmp_path: Path, outside: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(shipped, elsewhere)
    name = str(elsewhere) if outside == "ABSOLUTE" else outside
    root = _multi(tmp_path, shipped, ["add", name], name)
    with pytest.raises(UnsafeArtifactError, match="is not the plain name of a subdirectory") as info:
        rt.CompiledProgram.from_dir(root)
    assert info.value.path == root / "entries.json"
    for command in ("inspect", "run"):
        proc = pypto_runtime(command, str(root), cwd=tmp_path, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "refused:" in proc.stderr
        assert "is not the plain name of a subdirectory" in proc.stderr


def test_entry_directory_that_is_a_symlink_is_refused(shipped: Path, tmp_path: Path) -> None:
    root = _multi(tmp_path, shipped, ["add", "other"], "other")
    (root / "other").symlink_to(shipped)  # a plain name, but it leads outside
    _refused_both_ways(root, tmp_path, "the directory of entry 'other' is a symlink", "--entry", "add")


def test_fifo_entries_json_is_refused_without_hanging(shipped: Path, tmp_path: Path) -> None:
    root = _multi(tmp_path, shipped, ["add"], "add")
    _fifo(root / "entries.json")
    _refused_both_ways(root, tmp_path, "entries index is not a regular file")


def test_malformed_entries_json_is_a_value_error(shipped: Path, tmp_path: Path) -> None:
    root = _multi(tmp_path, shipped, ["add"], "missing")
    with pytest.raises(ValueError, match="expected"):
        rt.CompiledProgram.from_dir(root)
    (root / "entries.json").write_text(json.dumps({"entries": ["add", "gone"], "default": "add"}))
    with pytest.raises(ValueError, match="entry 'gone' has no directory"):
        rt.CompiledProgram.from_dir(root)


# -- the primitive: open_inside -------------------------------------------------------------


def test_open_inside_follows_nothing_below_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f").write_text("inside")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f").write_text("outside")
    assert _fs.read_inside(root, "sub/f") == b"inside"
    (root / "link").symlink_to(tmp_path / "outside")
    (root / "flink").symlink_to(root / "sub" / "f")
    os.mkfifo(root / "fifo")
    cases = {
        "link/f": (errno.ELOOP, "a symlink where a directory is expected"),
        "flink": (errno.ELOOP, "symbolic links"),
        "fifo": (errno.EINVAL, "not a regular file"),
        "sub/f/x": (errno.ENOTDIR, "Not a directory"),
    }
    for rel, (code, message) in cases.items():
        with no_hang(HANG_LIMIT), pytest.raises(OSError, match=message) as info:
            _fs.read_inside(root, rel)
        assert info.value.errno == code, rel
    for rel in ("../outside/f", "/etc/passwd", "", "sub/../sub/f", "sub//f"):
        with pytest.raises(ValueError, match="not a normalised relative path inside"):
            _fs.read_inside(root, rel)
    # the root itself may be a symlink: the caller named it
    (tmp_path / "root-link").symlink_to(root)
    assert _fs.read_inside(tmp_path / "root-link", "sub/f") == b"inside"
