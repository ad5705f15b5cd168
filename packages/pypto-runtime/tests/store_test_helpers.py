"""Helpers shared by the store's test files: an entry's generate and build steps from one table
of files (``relative path -> bytes``; ``prebuilt/`` files are what the build step writes), and
:func:`no_hang`, which fails a test whose body blocks (on a FIFO planted where a file should be);
:func:`pypto_runtime`, the command line in a fresh process."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from pypto.runtime import settings
from pypto.runtime.artifact_runtime import ArtifactRuntime
from pypto.runtime.manifest import MANIFEST_NAME, EntryState, Manifest, scan_dir
from pypto.runtime.store import ArtifactStore
from pypto_testing.scripts import run_python


def _writer(files: Mapping[str, bytes], prebuilt: bool) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        for rel, data in files.items():
            if rel.startswith("prebuilt/") == prebuilt:
                (path / rel).parent.mkdir(parents=True, exist_ok=True)
                (path / rel).write_bytes(data)

    return write


def entry_steps(files: Mapping[str, bytes]) -> tuple[Callable[[Path], None], Callable[[Path], None]]:
    """(generate, build): write the sources, and the ``prebuilt/`` files, of ``files``."""
    return _writer(files, prebuilt=False), _writer(files, prebuilt=True)


# The entry the store-check tests build (test_store_fs_checks.py, test_store_entry_checks.py).

KEY = hashlib.sha256(b"mutants").hexdigest()
OTHER_UID = 65534
FIX = "do the documented thing"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")

FILES = {
    "compiled_meta.json": b'{"schema": 3}',
    "kernels/add.cpp": b"// add\n",
    "prebuilt/kernels/add.so": b"\x7fELF" + bytes(range(64)),
}


_generate, _build = entry_steps(FILES)


def _store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "store")


def _entry(store: ArtifactStore, *, build: bool = True) -> Path:
    got = ArtifactRuntime(store).obtain(KEY, generate=_generate, build=_build if build else None)
    assert got.origin == "built"
    return got.path


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(mode=0o700)
    for rel, data in files.items():
        (root / rel).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def _write_manifest(root: Path, key: str = KEY, state: str = EntryState.READY) -> Manifest:
    manifest = scan_dir(root, key=key, state=state)
    (root / MANIFEST_NAME).write_bytes(manifest.dumps())
    return manifest


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@contextlib.contextmanager
def no_hang(seconds: int) -> Iterator[None]:
    """Fail (TimeoutError, instead of hanging the suite) when the body blocks for ``seconds``."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def pypto_runtime(
    *args: str, store: Path | None = None, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``python -m pypto.runtime ARGS`` in a fresh process (store: PYPTO_CACHE_DIR, by default
    this process's store)."""
    cache = store if store is not None else settings.cache_dir()
    return run_python(
        ["-m", "pypto.runtime", *args],
        cache,
        cwd=cwd,
        timeout=timeout,
        env={"COLUMNS": "200"},
        cache_settings=False,
    )
