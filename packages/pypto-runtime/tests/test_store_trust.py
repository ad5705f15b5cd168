"""The artifact store as a trust boundary: what it refuses to use, read, follow or delete.

Each test plants what an attacker (or a careless user) with write access somewhere could
plant, and checks that the store refuses it with an error naming the path, the problem and
the fix. Ownership tests chown to uid 65534 (nobody), which needs root (the CI user).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from runtime_programs import add
from store_test_helpers import entry_steps

import pypto.runtime as rt
from pypto.runtime import _fs, settings
from pypto.runtime.artifact_runtime import (
    ArtifactRuntime,
    StoreDegradedWarning,
    _private_dir,
    default_runtime,
    prune_private_roots,
)
from pypto.runtime.cli import main as cli_main
from pypto.runtime.manifest import MANIFEST_NAME, EntryState, InvalidEntry, validate_entry
from pypto.runtime.store import ArtifactStore, StoreLockTimeout, UnsafeStoreError

KEY = hashlib.sha256(b"trust").hexdigest()
OTHER_UID = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")

# Every kind of file an entry holds: metadata, sources, prebuilt binaries, toolchain identity.
FILES = {
    "compiled_meta.json": b'{"schema": 3}',
    "kernels/add.cpp": b"// add kernel\n",
    "orchestration/main.cpp": b"// orchestration\n",
    "prebuilt/orchestration.so": b"\x7fELF" + bytes(range(256)) * 4,
    "prebuilt/kernels/add.so": b"\x7fELF" + bytes(range(255, -1, -1)) * 4,
    "prebuilt/toolchain.json": b'{"backend": "host_cpp"}',
}


_generate, _build = entry_steps(FILES)


def _runtime(root: Path | None = None) -> ArtifactRuntime:
    return ArtifactRuntime(ArtifactStore(root or settings.cache_dir()))


def _entry(root: Path | None = None, *, build: bool = True) -> Path:
    got = _runtime(root).obtain(KEY, generate=_generate, build=_build if build else None)
    assert got.origin == "built"
    return got.path


def _chown_tree(path: Path, uid: int) -> None:
    os.chown(path, uid, uid, follow_symlinks=False)
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(Path(folder) / name, uid, uid, follow_symlinks=False)


# -- planted entries and untrusted directories ---------------------------------------------


@needs_root
@pytest.mark.parametrize("state", [EntryState.READY, EntryState.GENERATED])
def test_planted_entry_of_another_user_is_refused(state: str) -> None:
    path = _entry(build=state == EntryState.READY)  # a perfectly valid entry, manifest and all
    _chown_tree(path, OTHER_UID)  # ... as someone else would plant it
    with pytest.raises(UnsafeStoreError) as info:
        _runtime().lookup(KEY, state)
    assert info.value.path == path
    assert f"owned by uid {OTHER_UID}" in str(info.value)
    assert "PYPTO_CACHE_DIR" in str(info.value)


@needs_root
def test_file_of_another_user_inside_an_entry_makes_it_invalid() -> None:
    path = _entry()
    os.chown(path / "prebuilt" / "orchestration.so", OTHER_UID, OTHER_UID)
    with pytest.raises(InvalidEntry, match=f"orchestration.so: owned by uid {OTHER_UID}"):
        validate_entry(path, key=KEY, owners=frozenset({os.geteuid()}))
    fresh = _runtime()
    assert fresh.lookup(KEY) is None
    assert "owned by uid" in fresh.last_invalid[KEY]


@pytest.mark.parametrize("where", ["root", "v1", "v1/ready", "entry"])
@pytest.mark.parametrize("bit", [stat.S_IWGRP, stat.S_IWOTH])
def test_directory_writable_by_group_or_others_is_refused(where: str, bit: int) -> None:
    path = _entry()
    store = ArtifactStore(settings.cache_dir())
    target = {"root": store.root, "v1": store.base, "v1/ready": path.parent, "entry": path}[where]
    target.chmod(0o700 | bit)
    with pytest.raises(UnsafeStoreError, match="writable by group or others") as info:
        _runtime().lookup(KEY)
    assert info.value.path == target
    assert f"chmod 700 {target}" in str(info.value)
    with pytest.raises(UnsafeStoreError):  # nor built into (the same key, or any when above it)
        _runtime().obtain(KEY if where == "entry" else hashlib.sha256(b"x").hexdigest(), generate=_generate)


@needs_root
def test_root_owned_by_another_user_is_refused() -> None:
    _entry()
    os.chown(settings.cache_dir(), OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafeStoreError, match=f"owned by uid {OTHER_UID}"):
        _runtime().lookup(KEY)


def test_symlinked_ready_directory_is_refused(tmp_path: Path) -> None:
    # Another store holds a valid entry; v1/ready of ours is replaced by a symlink to it.
    elsewhere = _entry(tmp_path / "elsewhere")
    store = ArtifactStore(settings.cache_dir())
    store.base.mkdir(parents=True, mode=0o700)
    (store.base / "ready").symlink_to(elsewhere.parent)
    with pytest.raises(UnsafeStoreError, match="is a symlink") as info:
        _runtime().lookup(KEY)
    assert info.value.path == store.base / "ready"
    assert "mkdir -m 700" in str(info.value)


def test_symlinked_root_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    _entry(real)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(UnsafeStoreError, match="symlink"):
        _runtime(link).lookup(KEY)


@pytest.mark.parametrize("where", ["entry", "file"])
def test_symlink_to_an_identical_valid_copy_is_refused(tmp_path: Path, where: str) -> None:
    path = _entry()
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    validate_entry(copy, key=KEY)  # the copy is valid: only the symlink is wrong
    if where == "entry":
        shutil.rmtree(path)
        path.symlink_to(copy)
    else:
        so = path / "prebuilt" / "orchestration.so"
        so.unlink()
        so.symlink_to(copy / "prebuilt" / "orchestration.so")
    fresh = _runtime()
    assert fresh.lookup(KEY) is None
    assert "symlink" in fresh.last_invalid[KEY]
    got = fresh.obtain(KEY, generate=_generate, build=_build)  # rebuilt, never used
    assert got.origin == "built"
    assert not got.path.is_symlink()
    assert (copy / "prebuilt" / "orchestration.so").read_bytes() == FILES["prebuilt/orchestration.so"]


def test_store_creates_private_directories_and_files() -> None:
    path = _entry()
    store = ArtifactStore(settings.cache_dir())
    for folder in (store.root, store.base, path.parent, path, path / "prebuilt", store.locks):
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700, folder
    for file in path.rglob("*"):
        if file.is_file():
            assert stat.S_IMODE(os.lstat(file).st_mode) == 0o600, file


# -- the SHA-256 comparison, every file kind -----------------------------------------------


@pytest.mark.parametrize("rel", sorted(FILES))
def test_same_size_change_of_every_file_kind_is_detected(rel: str) -> None:
    path = _entry()
    data = bytearray((path / rel).read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size: only the digest can notice
    (path / rel).write_bytes(bytes(data))
    with pytest.raises(InvalidEntry, match=f"{rel}: SHA-256 does not match"):
        validate_entry(path, key=KEY)
    assert _runtime().lookup(KEY) is None


# -- no-replace publish --------------------------------------------------------------------


@pytest.mark.parametrize("renameat2", [True, False])
def test_publishing_a_key_twice_keeps_the_first_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renameat2: bool
) -> None:
    if not renameat2:
        monkeypatch.setattr(_fs, "_renameat2", None)  # the rename(2) fallback
    store = ArtifactStore(settings.cache_dir())
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, text in ((first, "first"), (second, "second")):
        folder.mkdir()
        (folder / "compiled_meta.json").write_text(text)
    with store.lock(KEY):
        assert store.publish(KEY, store.stage(KEY, first, EntryState.GENERATED), EntryState.GENERATED)
        staged = store.stage(KEY, second, EntryState.GENERATED)
        assert store.publish(KEY, staged, EntryState.GENERATED) is False
    entry = store.entry_dir(KEY, EntryState.GENERATED)
    assert (entry / "compiled_meta.json").read_text() == "first"
    validate_entry(entry, key=KEY)
    assert not staged.exists()


def test_entry_published_by_a_lock_bypasser_is_kept_and_reported() -> None:
    root = settings.cache_dir()

    def generate_racing(path: Path) -> None:
        # Another process (that bypassed the lock) publishes the key first.
        other = ArtifactStore(root)
        (path.parent / "theirs").mkdir()
        (path.parent / "theirs" / "compiled_meta.json").write_text("theirs")
        other.publish(
            KEY, other.stage(KEY, path.parent / "theirs", EntryState.GENERATED), EntryState.GENERATED
        )
        (path / "compiled_meta.json").write_text("ours")

    got = _runtime().obtain(KEY, generate=generate_racing)
    assert got.origin == "hit"  # reported: not ours
    assert (got.path / "compiled_meta.json").read_text() == "theirs"
    assert got.manifest is not None
    assert got.manifest.sha256_of("compiled_meta.json") == hashlib.sha256(b"theirs").hexdigest()


# -- load-time re-check against the validated manifest -------------------------------------


def _compiled() -> rt.CompiledArtifact:
    a = np.ones((16, 16), np.float32)
    art = rt.compile(add, a, a, np.empty_like(a)).artifact
    assert art.manifest is not None
    assert (art.path / "prebuilt" / "orchestration.so").is_file()
    return art


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("remove_manifest", [False, True])
def test_binary_flipped_after_lookup_is_refused(remove_manifest: bool) -> None:
    art = _compiled()
    if remove_manifest:
        (art.path / MANIFEST_NAME).unlink()  # the old re-check then returned silently
    _flip(art.path / "prebuilt" / "orchestration.so")
    with pytest.raises(RuntimeError, match="binary changed after the entry was validated"):
        art.chip_callable()


def test_binary_swapped_for_a_symlink_after_lookup_is_refused(tmp_path: Path) -> None:
    art = _compiled()
    so = art.path / "prebuilt" / "orchestration.so"
    copy = tmp_path / "same.so"
    shutil.copyfile(so, copy)
    so.unlink()
    so.symlink_to(copy)  # identical bytes, but through a symlink
    with pytest.raises(RuntimeError, match="changed after the entry was validated"):
        art.chip_callable()


def test_toolchain_and_sources_are_checked_at_load() -> None:
    art = _compiled()
    (art.path / "prebuilt" / "toolchain.json").write_text('{"backend": "host_cpp", "x": 1}')
    with pytest.raises(RuntimeError, match="toolchain identity changed after the entry was validated"):
        art.chip_callable()


def test_metadata_is_checked_against_the_validated_manifest() -> None:
    art = _compiled()
    meta = art.path / "compiled_meta.json"
    meta.write_text(meta.read_text().replace('"add"', '"evil"'))
    with pytest.raises(RuntimeError, match="metadata changed after the entry was validated"):
        rt.CompiledArtifact.from_dir(art.path, key=art.key)


def test_validated_manifest_travels_with_the_lookup() -> None:
    art = _compiled()
    got = default_runtime().lookup(art.key)
    assert got is not None
    assert got.manifest is not None
    assert default_runtime().validated(art.key, got.path) is got.manifest
    assert art.manifest == got.manifest


# -- deletion never follows symlinks -------------------------------------------------------


def test_prune_refuses_a_symlinked_trash_and_deletes_nothing_there(tmp_path: Path) -> None:
    _entry()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    (victim / (KEY + ".1.deadbeef")).mkdir()  # even names the store would give
    store = ArtifactStore(settings.cache_dir())
    store.trash.symlink_to(victim)
    with pytest.raises(UnsafeStoreError, match="symlink"):
        store.prune()
    assert (victim / "precious.txt").read_text() == "keep me"
    assert (victim / (KEY + ".1.deadbeef")).is_dir()
    out = subprocess.run(
        [sys.executable, "-m", "pypto.runtime", "cache", "prune"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 2
    assert "refused" in out.stderr
    assert str(store.trash) in out.stderr
    assert (victim / "precious.txt").exists()


def test_prune_deletes_only_what_the_store_created(tmp_path: Path) -> None:
    _entry()
    store = ArtifactStore(settings.cache_dir())
    store.trash.mkdir(mode=0o700)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file").write_text("keep")
    (store.trash / "notes.txt").write_text("not the store's")  # a name the store never gives
    (store.trash / f"{KEY}.1.0badc0de").symlink_to(outside)  # a store name, but a symlink
    (store.trash / f"{KEY}.2.deadbeef").mkdir()
    assert store.prune()["trash"] == 2
    assert (store.trash / "notes.txt").exists()
    assert (outside / "file").read_text() == "keep"
    assert not os.path.lexists(store.trash / f"{KEY}.1.0badc0de")


def test_remove_tree_never_follows_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file").write_text("keep")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link").symlink_to(outside)
    _fs.remove_tree(tree / "link")
    assert (outside / "file").exists()
    assert not os.path.lexists(tree / "link")
    (tree / "link").symlink_to(outside)
    _fs.remove_tree(tree)
    assert (outside / "file").exists()
    assert not tree.exists()


# -- FIFOs and symlinked files -------------------------------------------------------------


def test_cache_ls_does_not_hang_on_a_fifo() -> None:
    path = _entry(build=False)
    (path / "compiled_meta.json").unlink()
    os.mkfifo(path / "compiled_meta.json")
    for command in ("ls", "verify", "stat"):
        out = subprocess.run(
            [sys.executable, "-m", "pypto.runtime", "cache", command],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert out.returncode in (0, 1), out.stderr
    with pytest.raises(InvalidEntry, match="special files"):
        validate_entry(path, key=KEY)


def test_read_regular_refuses_fifo_and_symlink(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        _fs.read_regular(tmp_path / "fifo")
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    with pytest.raises(OSError, match="symbolic links") as info:
        _fs.read_regular(tmp_path / "link")
    assert info.value.errno == errno.ELOOP


def test_symlinked_lock_file_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    _entry()
    store = ArtifactStore(settings.cache_dir())
    lock = store.locks / f"{KEY}.lock"
    lock.unlink()
    target = tmp_path / "created-elsewhere"
    lock.symlink_to(target)
    with pytest.raises(UnsafeStoreError, match="lock file is a symlink") as info, store.lock(KEY):
        pass
    assert info.value.path == lock
    assert not target.exists()


def test_symlinked_manifest_is_refused(tmp_path: Path) -> None:
    path = _entry()
    copy = tmp_path / MANIFEST_NAME
    shutil.copyfile(path / MANIFEST_NAME, copy)
    (path / MANIFEST_NAME).unlink()
    (path / MANIFEST_NAME).symlink_to(copy)
    with pytest.raises(InvalidEntry, match="not a regular file"):
        validate_entry(path, key=KEY)


# -- locks: a bounded wait that names the holder -------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pypto.runtime.store import ArtifactStore
    with ArtifactStore(sys.argv[1]).lock(sys.argv[2]):
        print("held", flush=True)
        time.sleep(120)
    """
)


def test_stopped_lock_holder_times_out_with_its_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    root = settings.cache_dir()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(root), KEY], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGSTOP)  # alive but stopped: the lock stays held
        store = ArtifactStore(root)
        assert (store.locks / f"{KEY}.lock").read_text().strip() == str(holder.pid)
        start = time.monotonic()
        with pytest.raises(StoreLockTimeout) as info, store.lock(KEY, timeout=0.3):
            pass
        assert time.monotonic() - start < 5
        assert info.value.holder == holder.pid
        assert str(holder.pid) in str(info.value)
        assert str(store.locks / f"{KEY}.lock") in str(info.value)
        # Promotion gives up after PYPTO_CACHE_LOCK_TIMEOUT and builds privately, saying why.
        monkeypatch.setenv("PYPTO_CACHE_LOCK_TIMEOUT", "0.3")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = _runtime().obtain(KEY, generate=_generate, build=_build)
        assert got.origin == "private"
        assert any(str(holder.pid) in str(w.message) for w in caught if w.category is StoreDegradedWarning)
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        holder.kill()
        holder.wait()


def test_lock_wait_succeeds_when_the_holder_releases() -> None:
    store = ArtifactStore(settings.cache_dir())
    held = threading.Event()

    def hold() -> None:
        with store.lock(KEY):
            held.set()
            time.sleep(0.3)

    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    with store.lock(KEY, timeout=30) as got:
        assert got is True
    t.join()


def test_lock_timeout_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings.lock_timeout() == 600
    monkeypatch.setenv("PYPTO_CACHE_LOCK_TIMEOUT", "2.5")
    assert settings.lock_timeout() == 2.5
    for bad in ("0", "-1", "soon", "inf"):
        monkeypatch.setenv("PYPTO_CACHE_LOCK_TIMEOUT", bad)
        with pytest.raises(settings.SettingsError, match="PYPTO_CACHE_LOCK_TIMEOUT"):
            settings.lock_timeout()


def test_progress_waiting_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.runtime import progress

    with progress.waiting("plain") as tick:
        tick(5.0)  # not a terminal: nothing
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with progress.waiting("waiting for a lock", after=0.0) as tick:
        tick(0.1)
        tick(1.2)


# -- private build roots of killed processes ------------------------------------------------


def test_prune_removes_private_roots_of_dead_processes(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    dead_pid = int(dead.stdout)
    gone = tmp_path / f"pypto-private-{dead_pid}-abc123"
    alive = tmp_path / f"pypto-private-{os.getpid()}-def456"
    unrelated = tmp_path / "pypto-private-notapid"
    outside = tmp_path / "outside"
    for folder in (gone, alive, unrelated, outside):
        folder.mkdir()
        (folder / "x.so").write_bytes(b"x")
    link = tmp_path / f"pypto-private-{dead_pid}-link"
    link.symlink_to(outside)
    assert prune_private_roots(tmp_path) == 1
    assert not gone.exists()
    assert alive.exists()
    assert unrelated.exists()
    assert (outside / "x.so").exists()
    assert link.is_symlink()
    if os.geteuid() == 0:
        other = tmp_path / f"pypto-private-{dead_pid}-other1"
        other.mkdir()
        os.chown(other, OTHER_UID, OTHER_UID)
        assert prune_private_roots(tmp_path) == 0  # another user's
        assert other.exists()


def test_private_root_names_its_pid() -> None:
    path = _private_dir(KEY)
    assert path.parent.name.startswith(f"pypto-private-{os.getpid()}-")
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700


# -- the shared read-only store -------------------------------------------------------------


def test_shared_store_is_read_and_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    _entry(site)  # prebuilt by the site administrator
    before = sorted((p.relative_to(site), p.stat().st_mtime_ns) for p in site.rglob("*"))
    monkeypatch.setenv("PYPTO_CACHE_SHARED_DIR", str(site))
    runtime = ArtifactRuntime()
    assert runtime.shared is not None
    assert runtime.shared.shared
    got = runtime.obtain(KEY, generate=_generate, build=_build)
    assert got.origin == "shared"
    assert got.path == ArtifactStore(site).entry_dir(KEY)
    other = runtime.obtain(hashlib.sha256(b"miss").hexdigest(), generate=_generate, build=_build)
    assert other.origin == "built"  # a miss is built into the user's own store
    assert other.path.is_relative_to(settings.cache_dir())
    after = sorted((p.relative_to(site), p.stat().st_mtime_ns) for p in site.rglob("*"))
    assert before == after
    shared = ArtifactStore(site, shared=True)
    for write in (shared.prune, shared.clear, lambda: shared.discard(KEY, EntryState.READY)):
        with pytest.raises(PermissionError, match="read-only"):
            write()


def test_shared_store_may_be_owned_by_root_but_not_by_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _entry(site)
    owner = os.lstat(site).st_uid
    # Seen by another (non-root) user: a store they own is refused unless it is the shared
    # one and owned by root.
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1000)
    if owner == 0:
        assert ArtifactRuntime(
            ArtifactStore(tmp_path / "mine"), shared=ArtifactStore(site, shared=True)
        ).lookup(KEY)
    with pytest.raises(UnsafeStoreError, match="owned by uid"):
        ArtifactStore(site).lookup(KEY)
    monkeypatch.undo()
    site.chmod(0o770)
    with pytest.raises(UnsafeStoreError, match="writable by group"):
        ArtifactStore(site, shared=True).lookup(KEY)
    site.chmod(0o755)
    if os.geteuid() == 0:
        _chown_tree(site, OTHER_UID)
        monkeypatch.setenv("PYPTO_CACHE_SHARED_DIR", str(site))
        with pytest.raises(UnsafeStoreError, match="PYPTO_CACHE_SHARED_DIR"):
            ArtifactRuntime().lookup(KEY)


def test_cli_refuses_an_untrusted_root() -> None:
    _entry()
    settings.cache_dir().chmod(0o777)
    for command in ("ls", "stat", "prune", "clear", "verify"):
        assert cli_main(["cache", command]) == 2
    settings.cache_dir().chmod(0o700)
    assert ArtifactStore(settings.cache_dir()).lookup(KEY) is not None
