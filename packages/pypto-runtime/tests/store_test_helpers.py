"""Helpers shared by the store's test files: an entry's generate and build steps from one table
of files (``relative path -> bytes``; ``prebuilt/`` files are what the build step writes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path


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
