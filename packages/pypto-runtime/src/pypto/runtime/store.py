"""The on-disk artifact store: layout, per-key locks, staging and no-replace publishing.

Layout under the root (``settings.cache_dir()``)::

    v1/ready/<key>/       READY entries: sources, compiled_meta.json, prebuilt binaries, manifest
    v1/generated/<key>/   GENERATED entries: sources and compiled_meta.json, manifest
    v1/staging/<key>.<pid>.<rand>/   entries being written (never read as entries)
    v1/trash/             invalid entries moved aside before deletion
    v1/locks/<key>.lock   per-key fcntl.flock locks

``STORE_VERSION`` is the one integer that invalidates every entry when bumped. A lock file is
only a handle for ``flock``; its existence means nothing, and the OS releases the lock when
its holder dies; the holder writes its pid into it, so that a waiter that gives up
(``PYPTO_CACHE_LOCK_TIMEOUT``) can say who holds it. Looking an entry up never writes. Only
:mod:`pypto.runtime.artifact_runtime` decides when to promote; this module provides the steps.

Trust: the root and every directory from it down to an entry must be a real directory (not a
symlink), owned by the current user and not writable by group or others; the store creates
its directories 0700 and its files 0600, and refuses (:class:`UnsafeStoreError`) a root that
breaks the rule. A *shared* store (``ArtifactStore(root, shared=True)``, configured with
``PYPTO_CACHE_SHARED_DIR``) may also be owned by root, and is only ever read. Files are opened
without following symlinks; deletion never follows a symlink and removes only names the store
itself creates.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import signal
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pypto.ir import atomic_write
from pypto.runtime import progress, settings
from pypto.runtime._fs import (
    copy_file,
    fsync_dir,
    fsync_file,
    make_dir,
    open_regular,
    publish_dir,
    remove_tree,
)
from pypto.runtime.errors import PyptoRuntimeError
from pypto.runtime.manifest import (
    MANIFEST_NAME,
    EntryState,
    InvalidEntry,
    Manifest,
    scan_dir,
    validate_entry,
)
from pypto.runtime.trust import UnsafeStoreError, check_dir

__all__ = [
    "STORE_VERSION",
    "ArtifactStore",
    "EntryInfo",
    "StoreLockTimeout",
    "UnsafeStoreError",
    "check_key",
    "inject_fault",
]

STORE_VERSION = 1
# \Z, not $: "$" also matches before a trailing newline, which would let "<key>\n" through.
_KEY_RE = re.compile(r"^[0-9a-f]{16,128}\Z")
# What the store itself puts in staging/ and trash/: <key>.<pid>.<8 hex digits>.
_ASIDE_RE = re.compile(r"^[0-9a-f]{16,128}\.[0-9]+\.[0-9a-f]{8}\Z")
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


class StoreLockTimeout(PyptoRuntimeError, TimeoutError):
    """Waited ``PYPTO_CACHE_LOCK_TIMEOUT`` seconds for a per-key lock that another process
    holds (``holder`` is its pid, or None when unknown; ``path`` is the lock file)."""

    def __init__(self, path: Path, holder: int | None, waited: float) -> None:
        who = f"process {holder}" if holder is not None else "another process"
        alive = "" if holder is None else f" (if it is stopped, `kill -CONT {holder}`; if it hangs, end it)"
        super().__init__(
            errno.ETIMEDOUT,
            f"waited {waited:.0f} s for the store lock {path}, held by {who}{alive}; "
            "or raise PYPTO_CACHE_LOCK_TIMEOUT",
        )
        self.path = path
        self.holder = holder


def _read_holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@dataclass(frozen=True)
class EntryInfo:
    key: str
    state: str
    path: Path
    size: int
    mtime: float


class ArtifactStore:
    """One store root. Thread- and process-safe through per-key flock locks.

    Args:
        root: The root directory (default: ``settings.cache_dir()``).
        shared: A shared read-only store: it may be owned by root as well as by the current
            user, and nothing ever writes to it (no locks, no publish, no prune).
    """

    def __init__(self, root: Path | str | None = None, *, shared: bool = False) -> None:
        self.root = Path(root) if root is not None else settings.cache_dir()
        self.base = self.root / f"v{STORE_VERSION}"
        self.shared = shared
        uid = os.geteuid()
        self.owners = frozenset({uid, 0}) if shared else frozenset({uid})

    def __repr__(self) -> str:
        return f"ArtifactStore({str(self.root)!r}{', shared=True' if self.shared else ''})"

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

    # -- trust ---------------------------------------------------------------------------
    def _fix(self) -> str:
        if self.shared:
            return "unset PYPTO_CACHE_SHARED_DIR"
        return "set PYPTO_CACHE_DIR to a directory you own"

    def _chain(self, folder: Path) -> list[Path]:
        rel = folder.relative_to(self.root)
        return [self.root, *(self.root / Path(*rel.parts[: i + 1]) for i in range(len(rel.parts)))]

    def check(self, folder: Path | None = None) -> bool:
        """Check the root and every directory down to ``folder`` (default: the root).
        False when one of them does not exist; UnsafeStoreError when one is untrusted."""
        try:
            for path in self._chain(self.root if folder is None else folder):
                check_dir(path, self.owners, fix=self._fix())
        except FileNotFoundError:
            return False
        return True

    def _ensure(self, folder: Path) -> None:
        """Create (0700) and check the root and every directory down to ``folder``."""
        self._writable()
        if not self.root.parent.is_dir():
            self.root.parent.mkdir(parents=True, exist_ok=True)
        for path in self._chain(folder):
            make_dir(path)
            check_dir(path, self.owners, fix=self._fix())

    def _writable(self) -> None:
        if self.shared:
            raise PermissionError(
                errno.EROFS, "a shared store is read-only; nothing writes to it", str(self.root)
            )

    # -- reading (never writes) ----------------------------------------------------------
    def lookup(self, key: str, state: str = EntryState.READY) -> tuple[Path, Manifest] | None:
        """A valid entry for ``key`` in ``state``, or None. Raises InvalidEntry when an entry
        exists but fails validation, UnsafeStoreError when a directory above it is not
        trusted. Writes nothing."""
        path = self.entry_dir(key, state)
        try:
            if not self.check(path.parent):
                return None
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(st.st_mode):
            raise InvalidEntry(f"{path} is a symlink")
        if not stat.S_ISDIR(st.st_mode):
            raise InvalidEntry(f"{path} is not a directory")
        check_dir(path, self.owners, fix=self._fix())
        manifest = validate_entry(path, key=key, owners=self.owners)
        if manifest.state != state:
            raise InvalidEntry(f"manifest state {manifest.state} in the {state} directory")
        return path, manifest

    def entries(self) -> Iterator[EntryInfo]:
        for state, sub in _STATE_DIR.items():
            folder = self.base / sub
            try:
                if not self.check(folder):
                    continue
            except NotADirectoryError:
                continue
            with os.scandir(folder) as it:
                found = sorted(it, key=lambda e: e.name)
            for item in found:
                if not _KEY_RE.match(item.name):
                    continue
                path = Path(item.path)
                try:
                    mtime = os.lstat(path).st_mtime
                except OSError:
                    continue
                yield EntryInfo(item.name, state, path, _tree_size(path), mtime)

    # -- locking -------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, key: str, *, blocking: bool = True, timeout: float | None = None) -> Iterator[bool]:
        """Hold the per-key flock; yields False (without holding) if non-blocking and busy.

        A blocking wait gives up after ``timeout`` seconds (default
        ``PYPTO_CACHE_LOCK_TIMEOUT``) with :class:`StoreLockTimeout`, naming the holder's pid
        and the lock file; on a terminal it shows that it is waiting."""
        key = check_key(key)
        self._ensure(self.locks)
        path = self.locks / f"{key}.lock"
        fd = self._open_lock(path)
        try:
            if not self._acquire(fd, path, blocking, settings.lock_timeout() if timeout is None else timeout):
                yield False
                return
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _open_lock(self, path: Path) -> int:
        try:
            fd = open_regular(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EINVAL):
                raise UnsafeStoreError(
                    path, "the lock file is a symlink or not a regular file", f"remove it (`rm {path}`)"
                ) from None
            raise
        st = os.fstat(fd)
        if st.st_uid not in self.owners:
            os.close(fd)
            raise UnsafeStoreError(
                path, f"the lock file is owned by uid {st.st_uid}", f"remove it (`rm {path}`)"
            )
        return fd

    @staticmethod
    def _acquire(fd: int, path: Path, blocking: bool, timeout: float) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if not blocking:
                return False
        start = time.monotonic()
        delay = 0.005
        holder = _read_holder(fd)
        with progress.waiting(f"waiting for the store lock {path.name} (held by pid {holder})") as tick:
            while True:
                waited = time.monotonic() - start
                if waited >= timeout:
                    raise StoreLockTimeout(path, _read_holder(fd), waited)
                time.sleep(min(delay, timeout - waited))
                delay = min(delay * 2, 0.25)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return True
                except BlockingIOError:
                    tick(time.monotonic() - start)

    # -- writing (call with the key's lock held) -----------------------------------------
    def stage(self, key: str, src: Path, state: str) -> Path:
        """Copy ``src`` into a fresh staging dir inside the root, fsync every file, then
        write and fsync the manifest last. Returns the staging dir.

        On any failure (a full disk, an I/O error, a source that changed) the partial staging
        dir is removed before the error propagates, so a failed promotion leaves no copy
        filling the disk; an OSError names the step's cause and the staging dir. Only a
        process killed mid-copy leaves one (removed by the next promotion of the key or
        ``cache prune``)."""
        key = check_key(key)
        self._ensure(self.staging)
        dst = self.staging / f"{key}.{os.getpid()}.{secrets.token_hex(4)}"
        os.mkdir(dst, 0o700)
        try:
            self._fill(key, src, dst, state)
        except OSError as exc:
            remove_tree(dst)
            raise OSError(
                exc.errno,
                f"{exc.strerror or exc} while staging {src} into {dst} (the partial copy was removed)",
            ) from exc
        except BaseException:
            remove_tree(dst)
            raise
        return dst

    def _fill(self, key: str, src: Path, dst: Path, state: str) -> None:
        manifest = scan_dir(src, key=key, state=state)  # rejects symlinks/special files in src
        copied: list[Path] = []
        for i, record in enumerate(manifest.files):
            target = dst / record.path
            for folder in reversed(target.relative_to(dst).parents[:-1]):
                make_dir(dst / folder)
            copy_file(src / record.path, target)
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
        atomic_write(dst / MANIFEST_NAME, manifest.dumps())
        fsync_dir(dst)
        inject_fault("manifest")

    def publish(self, key: str, staged: Path, state: str) -> bool:
        """Rename a staged entry into place unless one exists. Returns True if published;
        False when an entry was already there (it is kept; the staged copy is removed). When
        the rename itself fails the staged copy is removed too."""
        target = self.entry_dir(key, state)
        try:
            self._ensure(target.parent)
            published = publish_dir(staged, target)
        except BaseException:
            remove_tree(staged)
            raise
        if published:
            inject_fault("publish")
            fsync_dir(target.parent)
        else:
            remove_tree(staged)
        return published

    def discard(self, key: str, state: str) -> None:
        """Move an entry aside (atomically) and delete it. Call with the key's lock held."""
        path = self.entry_dir(key, state)
        self._writable()
        try:
            if not self.check(path.parent):
                return
            os.lstat(path)
        except FileNotFoundError:
            return
        self._ensure(self.trash)
        aside = self.trash / f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
        os.rename(path, aside)
        inject_fault("discard")
        remove_tree(aside)

    def clean_staging(self, key: str) -> int:
        """Remove leftover staging dirs of ``key`` (call with its lock held). Returns count."""
        key = check_key(key)
        count = 0
        for path in self._created_by_store(self.staging):
            if path.name.split(".", 1)[0] == key:
                remove_tree(path)
                count += 1
        return count

    def _created_by_store(self, folder: Path) -> list[Path]:
        """What the store itself created in staging/ or trash/: names it gives, owned by an
        allowed owner. Anything else is left alone."""
        try:
            if not self.check(folder):
                return []
        except NotADirectoryError:
            return []
        found = []
        with os.scandir(folder) as it:
            for item in it:
                if not _ASIDE_RE.match(item.name):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_uid in self.owners:
                    found.append(Path(item.path))
        return sorted(found)

    # -- maintenance ---------------------------------------------------------------------
    def staging_leftovers(self) -> list[Path]:
        try:
            if not self.check(self.staging):
                return []
        except NotADirectoryError:
            return []
        return sorted(self.staging.iterdir())

    def prune(self, *, older_than: float | None = None, invalid: bool = True) -> dict[str, int]:
        """Remove abandoned staging dirs and trash, invalid entries, and entries whose
        mtime is older than ``older_than`` seconds. Entries busy under a lock are skipped.
        Only what the store created is deleted, and no symlink is ever followed."""
        self._writable()
        removed = {"staging": 0, "trash": 0, "invalid": 0, "expired": 0}
        if not self.check():
            return removed
        for path in self._created_by_store(self.staging):
            key = path.name.split(".", 1)[0]
            with self.lock(key, blocking=False) as held:
                if held and os.path.lexists(path):
                    remove_tree(path)
                    removed["staging"] += 1
        for path in self._created_by_store(self.trash):
            remove_tree(path)
            removed["trash"] += 1
        now = time.time()
        for info in list(self.entries()):
            reason = None
            if older_than is not None and now - info.mtime > older_than:
                reason = "expired"
            elif invalid:
                try:
                    self.lookup(info.key, info.state)
                except (InvalidEntry, UnsafeStoreError):
                    reason = "invalid"
            if reason is None:
                continue
            with self.lock(info.key, blocking=False) as held:
                if held:
                    self.discard(info.key, info.state)
                    removed[reason] += 1
        return removed

    def clear(self) -> int:
        """Remove every entry (each under its lock) and the store's staging/trash leftovers.
        Returns the entry count."""
        self._writable()
        count = 0
        if not self.check():
            return count
        for info in list(self.entries()):
            with self.lock(info.key):
                self.discard(info.key, info.state)
                count += 1
        for folder in (self.staging, self.trash):
            for path in self._created_by_store(folder):
                remove_tree(path)
        return count


def _tree_size(path: Path) -> int:
    """Total size of the regular files under ``path``, never following a symlink."""
    total = 0
    stack = [path]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for item in it:
                    st = item.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(Path(item.path))
                    elif stat.S_ISREG(st.st_mode):
                        total += st.st_size
        except OSError:
            continue
    return total
