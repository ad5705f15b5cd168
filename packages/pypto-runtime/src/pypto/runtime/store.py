"""The on-disk artifact store: layout, per-key locks, staging and no-replace publishing.

Layout under the root (``settings.cache_dir()``)::

    v1/ready/<key>/       READY entries: sources, compiled_meta.json, prebuilt binaries, manifest
    v1/generated/<key>/   GENERATED entries: sources and compiled_meta.json, manifest
    v1/staging/<key>.<pid>.<rand>/   entries being written (never read as entries)
    v1/trash/             invalid entries moved aside before deletion
    v1/locks/<key>.lock   per-key fcntl.flock locks

``STORE_VERSION`` is the one integer that invalidates every entry when bumped. A lock file is
only a handle for ``flock``; its existence means nothing, and the OS releases the lock when
its holder dies. Looking an entry up never writes. Only :mod:`pypto.runtime.artifact_runtime`
decides when to promote; this module provides the steps.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pypto.runtime import settings
from pypto.runtime._fs import fsync_dir, fsync_file, publish_dir, write_file_durably
from pypto.runtime.manifest import (
    MANIFEST_NAME,
    EntryState,
    InvalidEntry,
    Manifest,
    scan_dir,
    validate_entry,
)

__all__ = ["STORE_VERSION", "ArtifactStore", "EntryInfo", "check_key", "inject_fault"]

STORE_VERSION = 1
_KEY_RE = re.compile(r"^[0-9a-f]{16,128}$")
_STATE_DIR = {EntryState.READY: "ready", EntryState.GENERATED: "generated"}


def check_key(key: object) -> str:
    """Normalise an artifact key: an ArtifactKey-like object (``.hexdigest()`` / ``.digest``)
    or a lowercase hex digest string of 16..128 digits."""
    if not isinstance(key, str):
        for attr in ("hexdigest", "digest"):
            value = getattr(key, attr, None)
            value = value() if callable(value) else value
            if isinstance(value, str):
                key = value
                break
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise ValueError(f"artifact key: expected a lowercase hex digest (16..128 digits), got {key!r}")
    return key


def inject_fault(step: str) -> None:
    """Test hook (``PYPTO_CACHE_FAULT``): die by SIGKILL at ``step``, or fail it with ENOSPC."""
    point = settings.fault_point()
    if point is None:
        return
    if point == step:
        os.kill(os.getpid(), signal.SIGKILL)
    if point == f"enospc:{step}":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC) + f" (injected at {step})")


@dataclass(frozen=True)
class EntryInfo:
    key: str
    state: str
    path: Path
    size: int
    mtime: float


class ArtifactStore:
    """One store root. Thread- and process-safe through per-key flock locks."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else settings.cache_dir()
        self.base = self.root / f"v{STORE_VERSION}"

    def __repr__(self) -> str:
        return f"ArtifactStore({str(self.root)!r})"

    # -- paths ---------------------------------------------------------------------------
    def entry_dir(self, key: str, state: str = EntryState.READY) -> Path:
        return self.base / _STATE_DIR[state] / check_key(key)

    @property
    def staging(self) -> Path:
        return self.base / "staging"

    @property
    def locks(self) -> Path:
        return self.base / "locks"

    @property
    def trash(self) -> Path:
        return self.base / "trash"

    # -- reading (never writes) ----------------------------------------------------------
    def lookup(self, key: str, state: str = EntryState.READY) -> tuple[Path, Manifest] | None:
        """A valid entry for ``key`` in ``state``, or None. Raises InvalidEntry when an entry
        exists but fails validation. Writes nothing."""
        path = self.entry_dir(key, state)
        try:
            if not path.is_dir() or path.is_symlink():
                if path.is_symlink():
                    raise InvalidEntry(f"{path} is a symlink")
                return None
        except OSError:
            return None
        manifest = validate_entry(path, key=key)
        if manifest.state != state:
            raise InvalidEntry(f"manifest state {manifest.state} in the {state} directory")
        return path, manifest

    def entries(self) -> Iterator[EntryInfo]:
        for state, sub in _STATE_DIR.items():
            folder = self.base / sub
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                if not _KEY_RE.match(path.name):
                    continue
                size = 0
                with contextlib.suppress(OSError):
                    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
                try:
                    mtime = path.stat().st_mtime
                except OSError:
                    continue
                yield EntryInfo(path.name, state, path, size, mtime)

    # -- locking -------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, key: str, *, blocking: bool = True) -> Iterator[bool]:
        """Hold the per-key flock; yields False (without holding) if non-blocking and busy."""
        key = check_key(key)
        self.locks.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.locks / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- writing (call with the key's lock held) -----------------------------------------
    def stage(self, key: str, src: Path, state: str) -> Path:
        """Copy ``src`` into a fresh staging dir inside the root, fsync every file, then
        write and fsync the manifest last. Returns the staging dir."""
        key = check_key(key)
        self.staging.mkdir(parents=True, exist_ok=True)
        dst = self.staging / f"{key}.{os.getpid()}.{secrets.token_hex(4)}"
        dst.mkdir()
        manifest = scan_dir(src, key=key, state=state)  # rejects symlinks/special files in src
        copied: list[Path] = []
        for i, record in enumerate(manifest.files):
            target = dst / record.path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / record.path, target)
            copied.append(target)
            if i == 0:
                inject_fault("stage-partial")
        inject_fault("stage-copy")
        for target in copied:
            fsync_file(target)
        for folder in sorted({t.parent for t in copied} | {dst}, key=lambda p: len(p.parts), reverse=True):
            fsync_dir(folder)
        inject_fault("stage-fsync")
        # The copy must still match what was scanned: re-scan the staged files.
        staged = scan_dir(dst, key=key, state=state)
        if staged.files != manifest.files:
            raise OSError(errno.EIO, "staged copy differs from the private build", str(dst))
        write_file_durably(dst / MANIFEST_NAME, manifest.dumps())
        fsync_dir(dst)
        inject_fault("manifest")
        return dst

    def publish(self, key: str, staged: Path, state: str) -> bool:
        """Rename a staged entry into place unless one exists. Returns True if published."""
        target = self.entry_dir(key, state)
        target.parent.mkdir(parents=True, exist_ok=True)
        published = publish_dir(staged, target)
        if published:
            inject_fault("publish")
            fsync_dir(target.parent)
        else:
            shutil.rmtree(staged, ignore_errors=True)
        return published

    def discard(self, key: str, state: str) -> None:
        """Move an entry aside (atomically) and delete it. Call with the key's lock held."""
        path = self.entry_dir(key, state)
        if not path.exists() and not path.is_symlink():
            return
        self.trash.mkdir(parents=True, exist_ok=True)
        aside = self.trash / f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
        os.rename(path, aside)
        inject_fault("discard")
        if aside.is_symlink():
            aside.unlink()
        else:
            shutil.rmtree(aside, ignore_errors=True)

    def clean_staging(self, key: str) -> int:
        """Remove leftover staging dirs of ``key`` (call with its lock held). Returns count."""
        count = 0
        if self.staging.is_dir():
            for path in self.staging.glob(f"{check_key(key)}.*"):
                shutil.rmtree(path, ignore_errors=True)
                count += 1
        return count

    # -- maintenance ---------------------------------------------------------------------
    def staging_leftovers(self) -> list[Path]:
        return sorted(self.staging.iterdir()) if self.staging.is_dir() else []

    def prune(self, *, older_than: float | None = None, invalid: bool = True) -> dict[str, int]:
        """Remove abandoned staging dirs and trash, invalid entries, and entries whose
        mtime is older than ``older_than`` seconds. Entries busy under a lock are skipped."""
        removed = {"staging": 0, "trash": 0, "invalid": 0, "expired": 0}
        for path in self.staging_leftovers():
            key = path.name.split(".", 1)[0]
            if not _KEY_RE.match(key):
                continue
            with self.lock(key, blocking=False) as held:
                if held and path.exists():
                    shutil.rmtree(path, ignore_errors=True)
                    removed["staging"] += 1
        if self.trash.is_dir():
            for path in self.trash.iterdir():
                shutil.rmtree(path, ignore_errors=True)
                removed["trash"] += 1
        now = time.time()
        for info in list(self.entries()):
            reason = None
            if older_than is not None and now - info.mtime > older_than:
                reason = "expired"
            elif invalid:
                try:
                    self.lookup(info.key, info.state)
                except InvalidEntry:
                    reason = "invalid"
            if reason is None:
                continue
            with self.lock(info.key, blocking=False) as held:
                if held:
                    self.discard(info.key, info.state)
                    removed[reason] += 1
        return removed

    def clear(self) -> int:
        """Remove every entry (each under its lock) and all staging/trash. Returns entry count."""
        count = 0
        for info in list(self.entries()):
            with self.lock(info.key):
                self.discard(info.key, info.state)
                count += 1
        for folder in (self.staging, self.trash):
            shutil.rmtree(folder, ignore_errors=True)
        return count
