"""ArtifactRuntime: the only code that promotes, validates and loads cached artifacts.

Obtaining an artifact for a key:

1. Look the key up (READY first). Lookup validates the entry against its manifest and never
   writes. A valid READY entry is returned as is.
   Then the shared read-only store (``PYPTO_CACHE_SHARED_DIR``), when one is configured.
2. Otherwise, with ``PYPTO_CACHE=0`` or ``PYPTO_CACHE_READONLY=1``, build in a private
   directory and return that.
3. Otherwise take the key's flock and look again (another process may have published while we
   waited): N racing processes build once. An invalid entry is moved aside, never used.
   A valid GENERATED entry saves the compiler step. Build in a private directory, copy it into
   a staging directory inside the root, fsync the files and then the manifest, and publish
   with an atomic no-replace rename.
4. Any storage failure (unwritable root, full disk, a lock held too long, ...) falls back to
   the private build and warns once per process; compile and build errors are never
   swallowed, and neither is an untrusted root (:class:`UnsafeStoreError`).

Every :class:`Obtained` carries the :class:`Manifest` that was validated (or, for a private
build, scanned) for its directory: the loader checks the bytes it reads against that object
(``Manifest.check``), never against a manifest re-read from disk.

Loading (:meth:`ArtifactRuntime.load`) is serialised per key and memoised; a result is
published only after the loader has fully assembled it, and a failed load is not memoised.
Nothing here initialises, registers with or runs a Worker.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import stat
import tempfile
import threading
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pypto.runtime import settings
from pypto.runtime._fs import copy_file, make_dir, pid_alive, read_regular, remove_tree
from pypto.runtime.errors import BuildUnavailable, PyptoRuntimeError
from pypto.runtime.manifest import EntryState, InvalidEntry, Manifest, scan_dir
from pypto.runtime.store import ArtifactStore, check_key, inject_fault

__all__ = [
    "ArtifactRuntime",
    "BuildUnavailable",
    "Obtained",
    "StoreDegradedWarning",
    "default_runtime",
    "prune_private_roots",
]

T = TypeVar("T")


class StoreDegradedWarning(UserWarning):
    """The artifact store could not be used; artifacts are built privately instead."""


@dataclass(frozen=True)
class Obtained:
    """Where an artifact's directory is and how it was obtained.

    ``origin`` is ``"hit"`` (valid store entry), ``"shared"`` (valid entry of the shared
    read-only store), ``"built"`` (built and published by this call), ``"private"`` (built
    outside the store: disabled, read-only or degraded). ``manifest`` is what was validated
    (or scanned, for a private build): what a loader reads must match it.
    """

    key: str
    path: Path
    state: str
    origin: str
    manifest: Manifest | None = None


_instances: weakref.WeakSet[ArtifactRuntime] = weakref.WeakSet()
_private_roots: list[Path] = []  # at most one: this process's private build root


class _Locks:
    """Module-level locks, replaced in a forked child (see _after_fork_in_child)."""

    def __init__(self) -> None:
        self.private = threading.Lock()
        self.default = threading.Lock()


_locks = _Locks()


def _remove_private_root(root: Path, owner: int) -> None:
    # A forked child inherits atexit handlers; only the creating process removes its builds.
    if os.getpid() == owner:
        shutil.rmtree(root, ignore_errors=True)


_PRIVATE_PREFIX = "pypto-private-"
_PRIVATE_RE = re.compile(rf"^{_PRIVATE_PREFIX}([0-9]+)-[A-Za-z0-9_]+$")


def _private_dir(key: str) -> Path:
    """A fresh directory outside the store, removed when the process exits. The process
    root is ``<tmp>/pypto-private-<pid>-<random>`` (0700), so that :func:`prune_private_roots`
    can remove the roots of processes that were killed."""
    with _locks.private:
        if not _private_roots:
            root = Path(tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-"))
            atexit.register(_remove_private_root, root, os.getpid())
            _private_roots.append(root)
    return Path(tempfile.mkdtemp(prefix=f"{key[:16]}-", dir=_private_roots[0]))


def prune_private_roots(tmpdir: Path | str | None = None) -> int:
    """Remove the private build roots (``pypto-private-<pid>-*`` in the temp directory)
    of dead processes that belong to the current user; never follows a symlink. Returns
    the count."""
    folder = Path(tmpdir) if tmpdir is not None else Path(tempfile.gettempdir())
    uid, count = os.geteuid(), 0
    try:
        items = list(os.scandir(folder))
    except OSError:
        return 0
    for item in items:
        match = _PRIVATE_RE.match(item.name)
        if match is None:
            continue
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or pid_alive(int(match.group(1))):
            continue
        remove_tree(Path(item.path))
        count += 1
    return count


class ArtifactRuntime:
    """Promotes and loads artifacts of one store.

    Args:
        store: The store; default: one at ``settings.cache_dir()``.
        enabled: Use the store at all (default: ``PYPTO_CACHE``).
        readonly: Never write to the store (default: ``PYPTO_CACHE_READONLY``).
        shared: A shared read-only store consulted after ``store`` (default: one at
            ``PYPTO_CACHE_SHARED_DIR`` when set).
    """

    def __init__(
        self,
        store: ArtifactStore | None = None,
        *,
        enabled: bool | None = None,
        readonly: bool | None = None,
        shared: ArtifactStore | None = None,
    ) -> None:
        self.store = store if store is not None else ArtifactStore()
        if shared is None and settings.cache_shared_dir() is not None:
            shared = ArtifactStore(settings.cache_shared_dir(), shared=True)
        if shared is not None and not shared.shared:
            raise ValueError(
                f"ArtifactRuntime(shared=...): {shared!r} must be ArtifactStore(..., shared=True)"
            )
        self.shared = shared
        self.enabled = settings.cache_enabled() if enabled is None else enabled
        self.readonly = settings.cache_readonly() if readonly is None else readonly
        self._degraded_warned = False
        self._loads: dict[str, Any] = {}
        self._load_locks: dict[str, threading.Lock] = {}
        self._meta_lock = threading.Lock()
        self.last_invalid: dict[str, str] = {}  # key -> why its entry was rejected (diagnostics)
        self._validated: dict[tuple[str, Path], Manifest] = {}  # (key, dir) -> its manifest
        _instances.add(self)

    def _reset_locks_after_fork(self) -> None:
        # Another parent thread may have held one of these at fork(); memoised loads stay.
        self._meta_lock = threading.Lock()
        self._load_locks = {}

    # -- lookup --------------------------------------------------------------------------
    def lookup(self, key: object, state: str = EntryState.READY) -> Obtained | None:
        """A valid store entry for ``key`` (this store first, then the shared one) or None.
        Never writes; invalid entries are misses; an untrusted root raises UnsafeStoreError."""
        key = check_key(key)
        if not self.enabled:
            return None
        for store, origin in ((self.store, "hit"), (self.shared, "shared")):
            if store is None:
                continue
            try:
                found = store.lookup(key, state)
            except InvalidEntry as exc:
                self.last_invalid[key] = str(exc)
                continue
            except OSError:
                continue
            if found is not None:
                return self._record(Obtained(key, found[0], state, origin, found[1]))
        return None

    def _record(self, got: Obtained) -> Obtained:
        if got.manifest is not None:
            with self._meta_lock:
                self._validated[(got.key, got.path)] = got.manifest
        return got

    def validated(self, key: object, path: Path | str) -> Manifest:
        """The manifest validated for directory ``path`` of ``key`` by this runtime; a store
        entry not seen yet is validated now. Raises InvalidEntry when there is none."""
        key, path = check_key(key), Path(path)
        with self._meta_lock:
            manifest = self._validated.get((key, path))
        if manifest is not None:
            return manifest
        for state in EntryState.ALL:
            for store in (self.store, self.shared):
                if store is not None and store.entry_dir(key, state) == path:
                    found = store.lookup(key, state)
                    if found is not None:
                        self._record(Obtained(key, path, state, "hit", found[1]))
                        return found[1]
        raise InvalidEntry(
            f"{path}: not a valid store entry of key {key[:16]}... and not built by this process"
        )

    # -- obtain --------------------------------------------------------------------------
    def obtain(
        self,
        key: object,
        *,
        generate: Callable[[Path], None],
        build: Callable[[Path], None] | None = None,
    ) -> Obtained:
        """The artifact directory for ``key``, from the store or freshly built.

        Args:
            key: ArtifactKey (or its hex digest).
            generate: Writes sources and compiled_meta.json into an empty directory.
            build: Adds prebuilt binaries to a generated directory; raises
                :class:`BuildUnavailable` when binaries cannot be built here (the entry stays
                GENERATED). None: the artifact is GENERATED only.
        """
        key = check_key(key)
        hit = self.lookup(key)
        if hit is not None:
            return hit
        if not self.enabled or self.readonly:
            sources = self.lookup(key, EntryState.GENERATED)  # read-only may still reuse sources
            return self._private(key, generate, build, generated=sources)
        try:
            return self._promote(key, generate, build)
        except _StorageFailure as failure:
            self._warn_degraded(failure.cause)
            if failure.private is not None:
                return failure.private
            return self._private(key, generate, build)

    def _private(
        self,
        key: str,
        generate: Callable[[Path], None],
        build: Callable[[Path], None] | None,
        *,
        generated: Obtained | None = None,
    ) -> Obtained:
        path = _private_dir(key)
        if generated is not None:
            _copy_validated(generated, path)
        else:
            generate(path)
        state = EntryState.GENERATED
        if build is not None:
            try:
                build(path)
                state = EntryState.READY
            except BuildUnavailable:
                pass
        return self._record(Obtained(key, path, state, "private", scan_dir(path, key=key, state=state)))

    def _promote(
        self, key: str, generate: Callable[[Path], None], build: Callable[[Path], None] | None
    ) -> Obtained:
        store = self.store
        with contextlib.ExitStack() as stack:
            with _storage("lock"):
                stack.enter_context(store.lock(key))
                inject_fault("lock")
            hit = self.lookup(key)
            if hit is not None:
                return hit
            with _storage("clean"):
                store.clean_staging(key)
                if store.entry_dir(key).exists() or store.entry_dir(key).is_symlink():
                    store.discard(key, EntryState.READY)  # present but invalid: never used
            generated = self.lookup(key, EntryState.GENERATED)
            if generated is None and (
                store.entry_dir(key, EntryState.GENERATED).exists()
                or store.entry_dir(key, EntryState.GENERATED).is_symlink()
            ):
                with _storage("clean"):
                    store.discard(key, EntryState.GENERATED)
            private = self._private(key, generate, build, generated=generated)
            try:
                staged = store.stage(key, private.path, private.state)
                published = store.publish(key, staged, private.state)
            except OSError as exc:
                raise _StorageFailure(exc, private) from exc
            # Use what is in place only once validated: ours, or (the lock was bypassed) the
            # entry another process published first, which the no-replace publish kept.
            final = self.lookup(key, private.state)
            if final is None:
                return private
            shutil.rmtree(private.path, ignore_errors=True)
            return final if not published else Obtained(key, final.path, final.state, "built", final.manifest)

    def _warn_degraded(self, cause: BaseException) -> None:
        if self._degraded_warned:
            return
        self._degraded_warned = True
        warnings.warn(
            f"pypto artifact store at {self.store.root} is unusable ({cause}); building artifacts "
            "in private directories for the rest of this process (set PYPTO_CACHE_DIR to a "
            "writable directory, or PYPTO_CACHE=0 to silence this)",
            StoreDegradedWarning,
            stacklevel=3,
        )

    # -- loading -------------------------------------------------------------------------
    def load(self, key: object, loader: Callable[[], T]) -> T:
        """Run ``loader`` once per key (serialised, memoised after success)."""
        key = check_key(key)
        with self._meta_lock:
            lock = self._load_locks.setdefault(key, threading.Lock())
        with lock:
            if key in self._loads:
                return self._loads[key]  # type: ignore[no-any-return]
            value = loader()
            self._loads[key] = value
            return value

    def forget(self, key: object) -> None:
        """Drop a memoised load (tests; after an entry was found invalid)."""
        key = check_key(key)
        with self._meta_lock:
            self._loads.pop(key, None)


def _copy_validated(entry: Obtained, dst: Path) -> None:
    """Copy the files of a validated entry into ``dst``, each checked against its manifest."""
    assert entry.manifest is not None
    for record in entry.manifest.files:
        target = dst / record.path
        for folder in reversed(Path(record.path).parents[:-1]):
            make_dir(dst / folder)
        copy_file(entry.path / record.path, target)
        try:
            entry.manifest.check(record.path, read_regular(target))
        except InvalidEntry as exc:
            raise OSError(f"{entry.path / record.path}: {exc}") from None


class _StorageFailure(PyptoRuntimeError):
    def __init__(self, cause: BaseException, private: Obtained | None = None) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.private = private


class _storage:
    """Turn OSError inside a store step into _StorageFailure."""

    def __init__(self, step: str) -> None:
        self.step = step

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, OSError):
            raise _StorageFailure(exc) from exc


_defaults: dict[tuple[Path, bool, bool, Path | None], ArtifactRuntime] = {}


def default_runtime() -> ArtifactRuntime:
    """The process-wide runtime for the current settings (one per root/enabled/readonly/shared)."""
    with _locks.default:
        wanted = (
            settings.cache_dir(),
            settings.cache_enabled(),
            settings.cache_readonly(),
            settings.cache_shared_dir(),
        )
        rt = _defaults.get(wanted)
        if rt is None:
            shared = None if wanted[3] is None else ArtifactStore(wanted[3], shared=True)
            rt = _defaults[wanted] = ArtifactRuntime(
                ArtifactStore(wanted[0]), enabled=wanted[1], readonly=wanted[2], shared=shared
            )
        return rt


def _after_fork_in_child() -> None:
    _locks.private = threading.Lock()
    _locks.default = threading.Lock()
    for rt in list(_instances):
        rt._reset_locks_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
