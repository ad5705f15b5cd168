"""The artifact store and ArtifactRuntime: promotion, races, crashes, corruption, modes."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pypto.runtime import settings
from pypto.runtime import store as store_module
from pypto.runtime.artifact_runtime import ArtifactRuntime, BuildUnavailable, StoreDegradedWarning
from pypto.runtime.manifest import MANIFEST_NAME, EntryState, InvalidEntry, validate_entry
from pypto.runtime.store import ArtifactStore, check_key

KEY = hashlib.sha256(b"artifact").hexdigest()


class Counter:
    """Fake compiler + toolchain: writes sources, metadata and a 'binary'; counts calls."""

    def __init__(self) -> None:
        self.generated = 0
        self.built = 0

    def generate(self, path: Path) -> None:
        self.generated += 1
        (path / "kernels").mkdir()
        (path / "kernels" / "add.cpp").write_text("// add kernel\n")
        (path / "compiled_meta.json").write_text('{"schema": 3}')

    def build(self, path: Path) -> None:
        self.built += 1
        (path / "prebuilt").mkdir()
        (path / "prebuilt" / "add.so").write_bytes(b"\x7fELF" + bytes(range(256)) * 8)


def _runtime(**kw: bool) -> ArtifactRuntime:
    return ArtifactRuntime(ArtifactStore(settings.cache_dir()), **kw)


def test_check_key() -> None:
    assert check_key(KEY) == KEY

    class Key:
        def hexdigest(self) -> str:
            return KEY

    assert check_key(Key()) == KEY
    for bad in ("XYZ", KEY.upper(), "ab", 5, "../" + KEY):
        with pytest.raises(ValueError, match="artifact key"):
            check_key(bad)


def test_settings_registry() -> None:
    assert settings.SETTINGS["PYPTO_CACHE_DIR"].effect is settings.Effect.NEUTRAL
    with pytest.raises(settings.SettingsError, match="not a declared setting"):
        settings.get("PYPTO_SOMETHING_ELSE")


def test_settings_values(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYPTO_CACHE", "0")
    assert settings.cache_enabled() is False
    monkeypatch.setenv("PYPTO_CACHE_READONLY", "maybe")
    with pytest.raises(settings.SettingsError, match="PYPTO_CACHE_READONLY"):
        settings.cache_readonly()
    monkeypatch.setenv("PYPTO_CACHE_DIR", "relative/dir")
    with pytest.raises(settings.SettingsError, match="absolute path"):
        settings.cache_dir()
    monkeypatch.delenv("PYPTO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert settings.cache_dir() == tmp_path / "xdg" / "pypto"


def test_miss_build_publish_then_hit() -> None:
    rt, c = _runtime(), Counter()
    assert rt.lookup(KEY) is None
    got = rt.obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "built"
    assert got.state == EntryState.READY
    assert got.path == rt.store.entry_dir(KEY)
    manifest = validate_entry(got.path, key=KEY)
    assert {f.path for f in manifest.files} == {"kernels/add.cpp", "compiled_meta.json", "prebuilt/add.so"}
    again = _runtime().obtain(KEY, generate=c.generate, build=c.build)
    assert again.origin == "hit"
    assert (c.generated, c.built) == (1, 1)
    assert rt.store.staging_leftovers() == []


def test_lookup_never_writes(tmp_path: Path) -> None:
    rt = _runtime()
    assert rt.lookup(KEY) is None
    assert not rt.store.root.exists()


def test_build_unavailable_keeps_generated_and_reuses_sources() -> None:
    rt, c = _runtime(), Counter()

    def no_build(path: Path) -> None:
        raise BuildUnavailable("no toolchain")

    got = rt.obtain(KEY, generate=c.generate, build=no_build)
    assert got.state == EntryState.GENERATED
    assert got.origin == "built"
    got = rt.obtain(KEY, generate=c.generate, build=c.build)
    assert got.state == EntryState.READY
    assert c.generated == 1
    assert c.built == 1


def test_compile_errors_propagate_and_leave_nothing() -> None:
    rt = _runtime()

    def broken(path: Path) -> None:
        (path / "half.cpp").write_text("x")
        raise SyntaxError("bad kernel")

    with pytest.raises(SyntaxError, match="bad kernel"):
        rt.obtain(KEY, generate=broken)
    assert rt.lookup(KEY) is None
    assert rt.lookup(KEY, EntryState.GENERATED) is None


@pytest.mark.parametrize(
    "damage",
    ["truncate", "flip", "delete", "extra", "symlink", "fifo", "manifest", "manifest-escape"],
)
def test_invalid_entry_detected_and_rebuilt(damage: str) -> None:
    rt, c = _runtime(), Counter()
    path = rt.obtain(KEY, generate=c.generate, build=c.build).path
    so = path / "prebuilt" / "add.so"
    if damage == "truncate":
        so.write_bytes(so.read_bytes()[:100])
    elif damage == "flip":
        data = bytearray(so.read_bytes())
        data[10] ^= 0xFF
        so.write_bytes(bytes(data))
    elif damage == "delete":
        so.unlink()
    elif damage == "extra":
        (path / "evil.so").write_bytes(b"x")
    elif damage == "symlink":
        so.unlink()
        so.symlink_to("/etc/passwd")
    elif damage == "fifo":
        os.mkfifo(path / "pipe")
    elif damage == "manifest":
        (path / MANIFEST_NAME).write_text("{not json")
    elif damage == "manifest-escape":
        text = (path / MANIFEST_NAME).read_text().replace('"prebuilt/add.so"', '"../../add.so"')
        (path / MANIFEST_NAME).write_text(text)
    with pytest.raises(InvalidEntry):
        validate_entry(path, key=KEY)
    fresh = _runtime()
    assert fresh.lookup(KEY) is None  # an invalid entry is a miss, never used
    got = fresh.obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "built"
    assert c.built == 2
    validate_entry(got.path, key=KEY)


def test_disabled_builds_privately(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_CACHE", "0")
    c = Counter()
    rt = ArtifactRuntime()
    got = rt.obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "private"
    assert got.state == EntryState.READY
    assert (got.path / "prebuilt" / "add.so").is_file()
    assert not settings.cache_dir().exists()


def test_readonly_uses_entries_but_never_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    c = Counter()
    monkeypatch.setenv("PYPTO_CACHE_READONLY", "1")
    ro = ArtifactRuntime()
    got = ro.obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "private"
    assert not settings.cache_dir().exists()  # not even a lock file
    monkeypatch.delenv("PYPTO_CACHE_READONLY")
    ArtifactRuntime().obtain(KEY, generate=c.generate, build=c.build)
    monkeypatch.setenv("PYPTO_CACHE_READONLY", "1")
    before = sorted(p.relative_to(settings.cache_dir()) for p in settings.cache_dir().rglob("*"))
    got = ArtifactRuntime().obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "hit"
    after = sorted(p.relative_to(settings.cache_dir()) for p in settings.cache_dir().rglob("*"))
    assert before == after


def test_readonly_reuses_generated_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    c = Counter()

    def no_build(path: Path) -> None:
        raise BuildUnavailable("no toolchain")

    ArtifactRuntime().obtain(KEY, generate=c.generate, build=no_build)
    monkeypatch.setenv("PYPTO_CACHE_READONLY", "1")
    got = ArtifactRuntime().obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "private"
    assert got.state == EntryState.READY
    assert (c.generated, c.built) == (1, 1)  # the compiler did not run again
    assert not (got.path / MANIFEST_NAME).exists()


def test_progress_track_yields_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.runtime import progress

    assert list(progress.track([1, 2, 3], "plain")) == [1, 2, 3]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert list(progress.track(list(range(5)), "building")) == list(range(5))
    assert list(progress.track([7], "one item: no bar")) == [7]


@pytest.mark.parametrize("how", ["file", "chmod"])
def test_unwritable_root_degrades_to_private_and_warns_once(tmp_path: Path, how: str) -> None:
    root = tmp_path / "ro"
    if how == "file":  # a root that is a regular file: unusable even for the superuser
        root.write_text("not a directory")
    else:
        if os.geteuid() == 0:
            pytest.skip("the superuser ignores directory permissions; the 'file' case covers this")
        root.mkdir()
        root.chmod(0o500)
    try:
        rt, c = ArtifactRuntime(ArtifactStore(root)), Counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = rt.obtain(KEY, generate=c.generate, build=c.build)
            second = rt.obtain(hashlib.sha256(b"other").hexdigest(), generate=c.generate, build=c.build)
        assert first.origin == second.origin == "private"
        assert (first.path / "prebuilt" / "add.so").is_file()
        degraded = [w for w in caught if issubclass(w.category, StoreDegradedWarning)]
        assert len(degraded) == 1
        assert str(root) in str(degraded[0].message)
    finally:
        if how == "chmod":
            root.chmod(0o700)


def test_full_disk_during_staging_degrades_without_rebuilding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_CACHE_FAULT", "enospc:stage-copy")
    rt, c = _runtime(), Counter()
    with pytest.warns(StoreDegradedWarning, match="No space left"):
        got = rt.obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "private"
    assert (c.generated, c.built) == (1, 1)
    assert (got.path / "prebuilt" / "add.so").is_file()
    assert rt.store.staging_leftovers() == []  # the partial copy was removed at once
    monkeypatch.delenv("PYPTO_CACHE_FAULT")
    assert _runtime().lookup(KEY) is None
    got = _runtime().obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "built"
    assert rt.store.staging_leftovers() == []


# The store's write steps: the name in pypto.runtime.store, the position of the written path.
_WRITES = {"copy_file": 1, "atomic_write": 0}


def _enospc(step: str, after: int) -> Callable[..., Any]:
    """The store's write step ``step``, failing with ENOSPC on each call after the first
    ``after``, once it has written a few bytes of that file: a disk that fills up in the
    middle of staging."""
    real = getattr(store_module, step)
    calls = [0]

    def write(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] > after:
            Path(args[_WRITES[step]]).write_bytes(b"partial")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, **kwargs)

    return write


@pytest.mark.parametrize("step", ["copy_file", "atomic_write"])
def test_disk_full_in_the_middle_of_staging_leaves_no_staging_dir(
    monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """ENOSPC while a file is copied (after the first) or while the manifest is written: the
    partial staging dir is removed, the error names the cause and the staging dir, and the
    promotion degrades to the private build with a warning that says why."""
    rt, c = _runtime(), Counter()
    src = Path(rt.obtain(hashlib.sha256(b"src").hexdigest(), generate=c.generate, build=c.build).path)
    assert len(list(src.rglob("*.*"))) >= 3  # so that the copy fails after its first file
    monkeypatch.setattr(store_module, step, _enospc(step, after=1 if step == "copy_file" else 0))
    with rt.store.lock(KEY), pytest.raises(OSError, match="No space left on device while staging") as info:
        rt.store.stage(KEY, src, EntryState.READY)
    assert info.value.errno == errno.ENOSPC
    message = str(info.value)
    assert "No space left on device while staging" in message
    assert str(rt.store.staging) in message
    assert "the partial copy was removed" in message
    assert list(rt.store.staging.iterdir()) == []

    with pytest.warns(StoreDegradedWarning, match="No space left on device while staging"):
        got = _runtime().obtain(KEY, generate=c.generate, build=c.build)
    assert got.origin == "private"
    assert (got.path / "prebuilt" / "add.so").is_file()
    assert list(rt.store.staging.iterdir()) == []
    assert _runtime().lookup(KEY) is None


def test_failed_publish_removes_the_staged_copy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rt, c = _runtime(), Counter()
    src = Path(rt.obtain(hashlib.sha256(b"src").hexdigest(), generate=c.generate, build=c.build).path)

    def failing(src: Path, dst: Path) -> bool:
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))

    monkeypatch.setattr(store_module, "publish_dir", failing)
    with rt.store.lock(KEY):
        staged = rt.store.stage(KEY, src, EntryState.READY)
        with pytest.raises(OSError, match="Input/output error"):
            rt.store.publish(KEY, staged, EntryState.READY)
    assert not os.path.lexists(staged)
    assert list(rt.store.staging.iterdir()) == []


def test_load_is_memoised_and_failures_are_not() -> None:
    rt = _runtime()
    calls: list[int] = []

    def failing() -> int:
        calls.append(0)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        rt.load(KEY, failing)
    assert rt.load(KEY, lambda: calls.append(1) or 42) == 42
    assert rt.load(KEY, lambda: calls.append(2) or 43) == 42
    assert calls == [0, 1]


def test_concurrent_loads_of_one_key_run_the_loader_once() -> None:
    import threading
    import time

    rt = _runtime()
    calls: list[int] = []
    barrier = threading.Barrier(8)
    results: list[object] = []

    def loader() -> object:
        calls.append(1)
        time.sleep(0.05)  # wide window: any unserialised second loader would overlap it
        return object()

    def worker() -> None:
        barrier.wait()
        results.append(rt.load(KEY, loader))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len({id(x) for x in results}) == 1


# -- multi-process ----------------------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from pypto.runtime.artifact_runtime import ArtifactRuntime

    key, log = sys.argv[1], sys.argv[2]

    def generate(path):
        with open(log, "a") as f:
            f.write(f"generate {os.getpid()}\\n")
        time.sleep(0.2)
        (path / "compiled_meta.json").write_text('{"schema": 3}')
        (path / "kernel.cpp").write_text("// k" * 1000)

    def build(path):
        (path / "kernel.so").write_bytes(os.urandom(0) + b"so" * 50000)

    got = ArtifactRuntime().obtain(key, generate=generate, build=build)
    assert (got.path / "kernel.so").read_bytes() == b"so" * 50000
    print(got.origin, got.path)
    """
)


def _spawn(key: str, log: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, key, str(log)],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_eight_processes_race_build_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    procs = [_spawn(KEY, log) for _ in range(8)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    origins = sorted(o[0].split()[0] for o in outs)
    assert origins == ["built"] + ["hit"] * 7
    assert log.read_text().count("generate") == 1
    assert len({o[0].split()[1] for o in outs}) == 1


@pytest.mark.parametrize(
    "step", ["lock", "stage-partial", "stage-copy", "stage-fsync", "manifest", "publish"]
)
def test_sigkill_during_promotion_leaves_no_bad_entry(tmp_path: Path, step: str) -> None:
    log = tmp_path / "log"
    proc = _spawn(KEY, log, PYPTO_CACHE_FAULT=step)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    store = ArtifactStore(settings.cache_dir())
    rt = ArtifactRuntime(store)
    hit = rt.lookup(KEY)
    if step == "publish":
        # Killed after the atomic rename: the entry is complete and valid.
        assert hit is not None
    else:
        assert hit is None
        assert not store.entry_dir(KEY).exists()
    # A fresh process recovers: it builds (or hits) and cleans what the dead one left.
    proc = _spawn(KEY, log)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.split()[0] == ("hit" if step == "publish" else "built")
    validate_entry(store.entry_dir(KEY), key=KEY)
    if step != "publish":
        assert store.staging_leftovers() == []


def test_sigkill_while_discarding_an_invalid_entry(tmp_path: Path) -> None:
    log = tmp_path / "log"
    proc = _spawn(KEY, log)
    proc.communicate(timeout=60)
    store = ArtifactStore(settings.cache_dir())
    (store.entry_dir(KEY) / "kernel.so").write_bytes(b"corrupt")
    proc = _spawn(KEY, log, PYPTO_CACHE_FAULT="discard")
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert ArtifactRuntime(store).lookup(KEY) is None  # moved aside, never used
    proc = _spawn(KEY, log)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.split()[0] == "built"
    validate_entry(store.entry_dir(KEY), key=KEY)
    assert store.prune()["trash"] == 1  # what the killed process left aside
