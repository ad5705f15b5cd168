"""ArtifactRuntime: the only code that promotes, validates and loads cached artifacts.

Obtaining an artifact for a key:

1. Look the key up (READY first). Lookup validates the entry against its manifest and never
   writes. A valid READY entry is returned as is.
2. Otherwise, with ``PYPTO_CACHE=0`` or ``PYPTO_CACHE_READONLY=1``, build in a private
   directory and return that.
3. Otherwise take the key's flock and look again (another process may have published while we
   waited): N racing processes build once. An invalid entry is moved aside, never used.
   A valid GENERATED entry saves the compiler step. Build in a private directory, copy it into
   a staging directory inside the root, fsync the files and then the manifest, and publish
   with an atomic no-replace rename.
4. Any storage failure (unwritable root, full disk, ...) falls back to the private build and
   warns once per process; compile and build errors are never swallowed.

Loading (:meth:`ArtifactRuntime.load`) is serialised per key and memoised; a result is
published only after the loader has fully assembled it, and a failed load is not memoised.
Nothing here initialises, registers with or runs a Worker.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pypto.runtime import settings
from pypto.runtime.manifest import EntryState, InvalidEntry
from pypto.runtime.store import ArtifactStore, check_key, inject_fault

__all__ = [
    "ArtifactRuntime",
    "BuildUnavailable",
    "Obtained",
    "StoreDegradedWarning",
    "default_runtime",
]

T = TypeVar("T")


class StoreDegradedWarning(UserWarning):
    """The artifact store could not be used; artifacts are built privately instead."""


class BuildUnavailable(Exception):
    """The binaries cannot be built here (no toolchain for the platform): keep GENERATED."""


@dataclass(frozen=True)
class Obtained:
    """Where an artifact's directory is and how it was obtained.

    ``origin`` is ``"hit"`` (valid store entry), ``"built"`` (built and published by this
    call), ``"private"`` (built outside the store: disabled, read-only or degraded).
    """

    key: str
    path: Path
    state: str
    origin: str


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


def _private_dir(key: str) -> Path:
    """A fresh directory outside the store, removed when the process exits."""
    with _locks.private:
        if not _private_roots:
            root = Path(tempfile.mkdtemp(prefix="pypto-private-"))
            atexit.register(_remove_private_root, root, os.getpid())
            _private_roots.append(root)
    return Path(tempfile.mkdtemp(prefix=f"{key[:16]}-", dir=_private_roots[0]))


class ArtifactRuntime:
    """Promotes and loads artifacts of one store.

    Args:
        store: The store; default: one at ``settings.cache_dir()``.
        enabled: Use the store at all (default: ``PYPTO_CACHE``).
        readonly: Never write to the store (default: ``PYPTO_CACHE_READONLY``).
    """

    def __init__(
        self,
        store: ArtifactStore | None = None,
        *,
        enabled: bool | None = None,
        readonly: bool | None = None,
    ) -> None:
        self.store = store if store is not None else ArtifactStore()
        self.enabled = settings.cache_enabled() if enabled is None else enabled
        self.readonly = settings.cache_readonly() if readonly is None else readonly
        self._degraded_warned = False
        self._loads: dict[str, Any] = {}
        self._load_locks: dict[str, threading.Lock] = {}
        self._meta_lock = threading.Lock()
        self.last_invalid: dict[str, str] = {}  # key -> why its entry was rejected (diagnostics)
        _instances.add(self)

    def _reset_locks_after_fork(self) -> None:
        # Another parent thread may have held one of these at fork(); memoised loads stay.
        self._meta_lock = threading.Lock()
        self._load_locks = {}

    # -- lookup --------------------------------------------------------------------------
    def lookup(self, key: object, state: str = EntryState.READY) -> Obtained | None:
        """A valid store entry for ``key`` or None. Never writes; invalid entries are misses."""
        key = check_key(key)
        if not self.enabled:
            return None
        try:
            found = self.store.lookup(key, state)
        except InvalidEntry as exc:
            self.last_invalid[key] = str(exc)
            return None
        except OSError:
            return None
        return None if found is None else Obtained(key, found[0], state, "hit")

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
            return self._private(key, generate, build, generated=sources.path if sources else None)
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
        generated: Path | None = None,
    ) -> Obtained:
        path = _private_dir(key)
        if generated is not None:
            shutil.copytree(
                generated, path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("manifest.json")
            )
        else:
            generate(path)
        state = EntryState.GENERATED
        if build is not None:
            try:
                build(path)
                state = EntryState.READY
            except BuildUnavailable:
                pass
        return Obtained(key, path, state, "private")

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
            private = self._private(key, generate, build, generated=generated.path if generated else None)
            try:
                staged = store.stage(key, private.path, private.state)
                store.publish(key, staged, private.state)
            except OSError as exc:
                raise _StorageFailure(exc, private) from exc
            shutil.rmtree(private.path, ignore_errors=True)
            final = store.entry_dir(key, private.state)
            return Obtained(key, final, private.state, "built")

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


class _StorageFailure(Exception):
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


_defaults: dict[tuple[Path, bool, bool], ArtifactRuntime] = {}


def default_runtime() -> ArtifactRuntime:
    """The process-wide runtime for the current settings (one per root/enabled/readonly)."""
    with _locks.default:
        wanted = (settings.cache_dir(), settings.cache_enabled(), settings.cache_readonly())
        rt = _defaults.get(wanted)
        if rt is None:
            rt = _defaults[wanted] = ArtifactRuntime(
                ArtifactStore(wanted[0]), enabled=wanted[1], readonly=wanted[2]
            )
        return rt


def _after_fork_in_child() -> None:
    _locks.private = threading.Lock()
    _locks.default = threading.Lock()
    for rt in list(_instances):
        rt._reset_locks_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
