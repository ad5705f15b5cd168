"""The artifact store's entry checks, one function at a time (manifest, store, runtime): the
exact errors, and the branches the end-to-end store tests do not reach (a runtime that validates
an entry it did not obtain itself, private build roots of dead processes). Written against the
mutants that survived ``nox -s mutation`` (docs/mutation.md); ownership tests need root.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest
from store_test_helpers import (
    KEY,
    OTHER_UID,
    _entry,
    _store,
    _tree,
    _write_manifest,
    needs_root,
)

from pypto.runtime.artifact_runtime import ArtifactRuntime, Obtained, _copy_validated, prune_private_roots
from pypto.runtime.manifest import (
    MANIFEST_NAME,
    EntryState,
    FileRecord,
    InvalidEntry,
    Manifest,
    _entry_sha256,
    _read_entry_file,
    scan_dir,
    validate_entry,
)
from pypto.runtime.store import ArtifactStore
from pypto.runtime.trust import UnsafeStoreError

# ---------------------------------------------------------------- manifest


def test_manifest_check_messages() -> None:
    manifest = Manifest(KEY, EntryState.READY, (FileRecord("a", 1, hashlib.sha256(b"1").hexdigest()),))
    manifest.check("a", b"1")
    with pytest.raises(InvalidEntry) as info:
        manifest.check("a", b"2")
    assert str(info.value) == "a: changed after the entry was validated"
    with pytest.raises(InvalidEntry) as info:
        manifest.check("b", b"1")
    assert str(info.value) == "b: not listed in the validated manifest"
    assert manifest.sha256_of("a") == hashlib.sha256(b"1").hexdigest()
    assert manifest.sha256_of("b") is None


def _manifest_with_path(path: str) -> bytes:
    raw = Manifest(KEY, EntryState.READY, ()).to_json()
    raw["files"] = [{"path": path, "size": 0, "sha256": "0" * 64}]
    return json.dumps(raw).encode()


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        "a/..",
        "./a",
        "a/",
        "a//b",
        "a/./b",
        MANIFEST_NAME,
        "a\\b",
        "..",
        ".",
    ],
)
def test_manifest_refuses_paths_that_leave_the_entry_or_are_not_normalised(path: str) -> None:
    with pytest.raises(InvalidEntry) as info:
        Manifest.loads(_manifest_with_path(path))
    assert str(info.value) == f"manifest: path {path!r} leaves the entry or is not normalised"


@pytest.mark.parametrize("path", ["a", "sub/manifest.json", "a/b/c.so", "..a", "a..b", ".hidden"])
def test_manifest_accepts_normalised_relative_paths(path: str) -> None:
    manifest = Manifest.loads(_manifest_with_path(path))
    assert [f.path for f in manifest.files] == [path]


def test_walk_refuses_a_symlink_as_a_symlink(tmp_path: Path) -> None:
    root = _tree(tmp_path / "e", {"a": b"1"})
    (tmp_path / "outside").write_bytes(b"x")
    (root / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(InvalidEntry) as info:
        scan_dir(root, key=KEY, state=EntryState.READY)
    assert str(info.value) == "link: symlinks are not allowed in an entry"
    os.unlink(root / "link")
    (root / "dlink").symlink_to(tmp_path)  # a symlink to a directory is not walked into
    with pytest.raises(InvalidEntry) as info:
        scan_dir(root, key=KEY, state=EntryState.READY)
    assert str(info.value) == "dlink: symlinks are not allowed in an entry"


def test_validate_entry_messages(tmp_path: Path) -> None:
    root = _tree(tmp_path / "e", {"a": b"12", "sub/b": b"3"})
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY)
    assert str(info.value) == "no manifest (incomplete entry)"
    manifest = _write_manifest(root)
    assert validate_entry(root, key=KEY) == manifest
    assert validate_entry(root, key=KEY, owners=frozenset({os.geteuid()})) == manifest
    other = "f" * 64
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=other)
    assert str(info.value) == f"manifest key {KEY!r} does not match the entry's key {other!r}"
    (root / "extra").write_bytes(b"")
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY)
    assert str(info.value) == "extra: not listed in the manifest"
    os.unlink(root / "extra")
    (root / "a").write_bytes(b"1")
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY)
    assert str(info.value) == "a: size 1, manifest says 2 (truncated?)"
    (root / "a").write_bytes(b"21")
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY)
    assert str(info.value) == "a: SHA-256 does not match the manifest (corrupted)"
    (root / "a").write_bytes(b"12")
    os.unlink(root / "sub" / "b")
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY)
    assert str(info.value) == "files missing from the entry: ['sub/b']"


def test_validate_entry_checks_owners_and_modes_only_when_asked(tmp_path: Path) -> None:
    root = _tree(tmp_path / "e", {"a": b"1", "sub/b": b"2"})
    manifest = _write_manifest(root)
    os.chmod(root / "sub", 0o777)
    assert validate_entry(root, key=KEY) == manifest
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY, owners=frozenset({os.geteuid()}))
    assert str(info.value) == "sub: writable by group or others (mode 0777)"
    os.chmod(root / "sub", 0o700)
    os.chmod(root / "sub" / "b", 0o666)
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY, owners=frozenset({os.geteuid()}))
    assert str(info.value) == "sub/b: writable by group or others (mode 0666)"


@needs_root
def test_validate_entry_refuses_a_file_of_another_owner(tmp_path: Path) -> None:
    root = _tree(tmp_path / "e", {"a": b"1"})
    manifest = _write_manifest(root)
    os.chown(root / "a", OTHER_UID, OTHER_UID)
    assert validate_entry(root, key=KEY) == manifest
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY, owners=frozenset({os.geteuid()}))
    assert str(info.value) == f"a: owned by uid {OTHER_UID}, not by uid {os.geteuid()}"
    assert validate_entry(root, key=KEY, owners=frozenset({os.geteuid(), OTHER_UID})) == manifest


def test_entry_files_that_are_not_regular(tmp_path: Path) -> None:
    root = _tree(tmp_path / "e", {"a": b"1"})
    os.mkfifo(root / "fifo")
    (root / "link").symlink_to(root / "a")
    for read in (_entry_sha256, _read_entry_file):
        for rel in ("fifo", "link"):
            with pytest.raises(InvalidEntry) as info:
                read(root, rel)
            assert str(info.value) == f"{rel}: not a regular file (symlink or special file)"
        with pytest.raises(FileNotFoundError):
            read(root, "absent")
        with pytest.raises(NotADirectoryError):
            read(root, "a/below")  # other OSErrors pass through
    assert _entry_sha256(root, "a") == hashlib.sha256(b"1").hexdigest()
    assert _read_entry_file(root, "a") == b"1"


def test_validate_entry_refuses_a_symlinked_manifest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "e", {"a": b"1"})
    _write_manifest(root)
    os.rename(root / MANIFEST_NAME, tmp_path / "m.json")
    (root / MANIFEST_NAME).symlink_to(tmp_path / "m.json")
    with pytest.raises(InvalidEntry) as info:
        validate_entry(root, key=KEY)
    assert str(info.value) == f"{MANIFEST_NAME}: not a regular file (symlink or special file)"


# ---------------------------------------------------------------- ArtifactStore


def test_lookup_messages_for_a_symlink_a_file_and_a_wrong_state(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = _entry(store)
    ready = store.entry_dir(KEY)
    assert ready == path
    moved = tmp_path / "moved"
    os.rename(ready, moved)
    ready.symlink_to(moved)
    with pytest.raises(InvalidEntry) as info:
        store.lookup(KEY)
    assert str(info.value) == f"{ready} is a symlink"
    os.unlink(ready)
    ready.write_bytes(b"")
    with pytest.raises(InvalidEntry) as info:
        store.lookup(KEY)
    assert str(info.value) == f"{ready} is not a directory"
    os.unlink(ready)
    # A READY entry placed under generated/ is refused by its manifest's state.
    generated = store.entry_dir(KEY, EntryState.GENERATED)
    generated.parent.mkdir(mode=0o700, exist_ok=True)
    os.rename(moved, generated)
    with pytest.raises(InvalidEntry) as info:
        store.lookup(KEY, EntryState.GENERATED)
    assert str(info.value) == "manifest state READY in the GENERATED directory"
    assert store.lookup(KEY) is None


def test_lookup_of_an_entry_dir_writable_by_others(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = _entry(store)
    os.chmod(path, 0o777)
    with pytest.raises(UnsafeStoreError) as info:
        store.lookup(KEY)
    assert info.value.path == path
    assert info.value.problem == "writable by group or others (mode 0777)"


def test_lookup_when_a_directory_above_is_a_file(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.root.mkdir(mode=0o700)
    store.base.mkdir(mode=0o700)
    (store.base / "ready").write_bytes(b"")
    assert store.lookup(KEY) is None


def test_publish_keeps_the_first_entry_and_removes_the_staged_copy(tmp_path: Path) -> None:
    store = _store(tmp_path)
    src = _tree(tmp_path / "build", {"a": b"1"})
    with store.lock(KEY):
        staged = store.stage(KEY, src, EntryState.READY)
        assert store.publish(KEY, staged, EntryState.READY) is True
        assert not staged.exists()
        assert store.lookup(KEY) is not None
        (src / "a").write_bytes(b"2")
        staged2 = store.stage(KEY, src, EntryState.READY)
        assert store.publish(KEY, staged2, EntryState.READY) is False
        assert not os.path.lexists(staged2)
    found = store.lookup(KEY)
    assert found is not None
    assert (found[0] / "a").read_bytes() == b"1"


def test_publish_fault_hook_fails_after_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    src = _tree(tmp_path / "build", {"a": b"1"})
    with store.lock(KEY):
        staged = store.stage(KEY, src, EntryState.READY)
        monkeypatch.setenv("PYPTO_CACHE_FAULT", "enospc:publish")
        with pytest.raises(OSError, match="injected at publish") as info:
            store.publish(KEY, staged, EntryState.READY)
        assert info.value.errno == errno.ENOSPC
        assert "(injected at publish)" in str(info.value)
    assert store.lookup(KEY) is not None  # the rename happened before the fault point


def test_created_by_store_lists_only_store_names(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store._created_by_store(store.staging) == []  # no staging dir yet
    store._ensure(store.staging)
    names = [f"{KEY}.123.0123abcd", f"{KEY[:16]}.1.ffffffff"]
    for name in names:
        (store.staging / name).mkdir()
    (store.staging / f"{KEY}.7.89abcdef").symlink_to(tmp_path)  # a name the store gives: lstat'd
    for name in (f"{KEY}.123.0123abc", f"{KEY}.x.0123abcd", f"{KEY}.12", "foreign", f"{KEY}.1.0123ABCD"):
        (store.staging / name).mkdir()
    (store.staging / f"{KEY}.123.0123abcd\n").mkdir()
    expected = sorted(store.staging / n for n in [*names, f"{KEY}.7.89abcdef"])
    assert store._created_by_store(store.staging) == expected
    assert store.clean_staging(KEY[:16]) == 1
    assert store.clean_staging(KEY) == 2
    assert (tmp_path / "store").exists()
    assert tmp_path.exists()
    assert (store.staging / "foreign").exists()


def test_created_by_store_lstats_symlinks_and_skips_a_vanished_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    store._ensure(store.staging)
    dangling = store.staging / f"{KEY}.1.00000000"
    dangling.symlink_to(tmp_path / "nowhere")  # its own lstat is what counts: listed, unlinked
    real = store.staging / f"{KEY}.2.00000000"
    real.mkdir()

    def vanished_stat(*, follow_symlinks: bool = True) -> os.stat_result:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    vanished = types.SimpleNamespace(
        name=f"{KEY}.3.00000000", path=str(store.staging / f"{KEY}.3.00000000"), stat=vanished_stat
    )
    real_scandir = os.scandir

    class Listing:
        def __init__(self, folder: object) -> None:
            self.items = [vanished, *real_scandir(folder)]  # type: ignore[call-overload]

        def __enter__(self) -> list[object]:
            return self.items

        def __exit__(self, *exc: object) -> None:
            return None

    def scandir(folder: object = ".") -> object:
        return Listing(folder) if folder == store.staging else real_scandir(folder)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", scandir)
    assert store._created_by_store(store.staging) == [dangling, real]
    monkeypatch.setattr(os, "scandir", real_scandir)
    assert store.clean_staging(KEY) == 2
    assert not os.path.lexists(dangling)
    assert not real.exists()


def test_created_by_store_of_a_file_where_staging_should_be(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store._ensure(store.base)
    store.staging.write_bytes(b"")
    assert store._created_by_store(store.staging) == []


@needs_root
def test_created_by_store_skips_names_owned_by_others(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store._ensure(store.trash)
    mine = store.trash / f"{KEY}.1.00000000"
    theirs = store.trash / f"{KEY}.2.00000000"
    mine.mkdir()
    theirs.mkdir()
    os.chown(theirs, OTHER_UID, OTHER_UID)
    assert store._created_by_store(store.trash) == [mine]
    store.clear()
    assert not mine.exists()
    assert theirs.exists()


# ---------------------------------------------------------------- ArtifactRuntime


def test_validated_checks_an_entry_this_runtime_did_not_obtain(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = _entry(store)
    fresh = ArtifactRuntime(ArtifactStore(store.root))
    manifest = fresh.validated(KEY, str(path))
    assert manifest == validate_entry(path, key=KEY)
    assert fresh._validated[(KEY, path)] is manifest
    # Memoised: the store is not consulted again.
    fresh.store.lookup = None  # type: ignore[assignment,method-assign]
    assert fresh.validated(KEY, path) is manifest


def test_validated_checks_a_generated_entry(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = _entry(store, build=False)
    assert path == store.entry_dir(KEY, EntryState.GENERATED)
    manifest = ArtifactRuntime(ArtifactStore(store.root)).validated(KEY, path)
    assert manifest.state == EntryState.GENERATED
    assert manifest == validate_entry(path, key=KEY)


def test_validated_checks_an_entry_of_the_shared_store(tmp_path: Path) -> None:
    shared_root = tmp_path / "shared"
    path = _entry(ArtifactStore(shared_root))
    runtime = ArtifactRuntime(ArtifactStore(tmp_path / "own"), shared=ArtifactStore(shared_root, shared=True))
    assert runtime.validated(KEY, path) == validate_entry(path, key=KEY)


def test_validated_refuses_what_is_not_a_valid_entry(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = _entry(store)
    runtime = ArtifactRuntime(ArtifactStore(store.root))
    elsewhere = tmp_path / "elsewhere"
    with pytest.raises(InvalidEntry) as info:
        runtime.validated(KEY, elsewhere)
    assert (
        str(info.value)
        == f"{elsewhere}: not a valid store entry of key {KEY[:16]}... and not built by this process"
    )
    other = hashlib.sha256(b"other").hexdigest()
    with pytest.raises(InvalidEntry) as info:
        runtime.validated(other, path)  # the path of another key's entry
    assert str(info.value).startswith(f"{path}: not a valid store entry of key {other[:16]}...")
    (path / "kernels" / "add.cpp").write_bytes(b"// ADD\n")
    with pytest.raises(InvalidEntry, match="SHA-256 does not match"):
        runtime.validated(KEY, path)
    assert (KEY, path) not in runtime._validated
    shutil.rmtree(path)
    with pytest.raises(InvalidEntry, match="not a valid store entry"):
        runtime.validated(KEY, path)


def test_copy_validated_copies_nested_files_and_checks_each(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", {"a": b"1", "x/y/z": b"2"})
    manifest = scan_dir(src, key=KEY, state=EntryState.GENERATED)
    dst = tmp_path / "dst"
    dst.mkdir()
    _copy_validated(Obtained(KEY, src, EntryState.GENERATED, "hit", manifest), dst)
    assert (dst / "a").read_bytes() == b"1"
    assert (dst / "x" / "y" / "z").read_bytes() == b"2"
    assert stat.S_IMODE(os.lstat(dst / "x").st_mode) == 0o700
    (src / "x" / "y" / "z").write_bytes(b"3")
    dst2 = tmp_path / "dst2"
    dst2.mkdir()
    with pytest.raises(OSError, match="changed after") as info:
        _copy_validated(Obtained(KEY, src, EntryState.GENERATED, "hit", manifest), dst2)
    assert str(info.value) == f"{src / 'x/y/z'}: x/y/z: changed after the entry was validated"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_prune_private_roots_removes_only_dead_processes_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = _dead_pid()
    gone = _tree(tmp_path / f"pypto-private-{dead}-abc_1", {"k/f": b"1"})
    alive = _tree(tmp_path / f"pypto-private-{os.getpid()}-abc", {"f": b"1"})
    outside = _tree(tmp_path / "outside", {"keep": b"k"})
    link = tmp_path / f"pypto-private-{dead}-link"
    link.symlink_to(outside)
    as_file = tmp_path / f"pypto-private-{dead}-file"
    as_file.write_bytes(b"")
    odd = [
        _tree(tmp_path / name, {"f": b"1"})
        for name in (
            f"pypto-private-{dead}",
            f"pypto-private-{dead}-a.b",
            f"xpypto-private-{dead}-a",
            "pypto-private--a",
        )
    ]
    assert prune_private_roots(tmp_path) == 1
    assert not gone.exists()
    assert alive.exists()
    assert os.path.lexists(link)
    assert as_file.exists()
    assert (outside / "keep").exists()
    assert all(p.exists() for p in odd)
    assert prune_private_roots(str(tmp_path)) == 0
    assert prune_private_roots(tmp_path / "absent") == 0
    again = _tree(tmp_path / f"pypto-private-{dead}-again", {"f": b"1"})
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert prune_private_roots() == 1
    assert not again.exists()


def test_prune_private_roots_counts_each_and_skips_a_vanished_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = _dead_pid()
    roots = [_tree(tmp_path / f"pypto-private-{dead}-{n}", {"f": b"1"}) for n in ("one", "two")]

    def vanished_stat(*, follow_symlinks: bool = True) -> os.stat_result:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    # An entry that is gone by the time it is stat'ed (removed by another prune) comes first.
    vanished = types.SimpleNamespace(
        name=f"pypto-private-{dead}-gone", path=str(tmp_path / "gone"), stat=vanished_stat
    )
    real_scandir = os.scandir

    def scandir(folder: object = ".") -> object:
        if folder == tmp_path:  # prune's listing; shutil.rmtree's own scandir calls pass through
            return [vanished, *real_scandir(folder)]
        return real_scandir(folder)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", scandir)
    assert prune_private_roots(tmp_path) == 2
    assert not any(p.exists() for p in roots)


@needs_root
def test_prune_private_roots_leaves_other_users_dirs(tmp_path: Path) -> None:
    dead = _dead_pid()
    theirs = _tree(tmp_path / f"pypto-private-{dead}-theirs", {"f": b"1"})
    os.chown(theirs, OTHER_UID, OTHER_UID)
    assert prune_private_roots(tmp_path) == 0
    assert theirs.exists()
