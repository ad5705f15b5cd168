"""The manifest of a store entry: size and SHA-256 of every file, written last.

A manifest's presence means its entry was completely written; validation re-reads every file
and compares. Symlinks, special files (FIFOs, sockets, devices), paths that leave the entry and
files the manifest does not list all make an entry invalid; so do files and directories owned
by someone other than the allowed owners, or writable by group or others.

What a loader reads from a validated entry is checked against the *validated* manifest object
(:meth:`Manifest.check`), never against a manifest re-read from disk.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pypto.runtime._fs import open_regular, read_regular
from pypto.runtime.errors import PyptoRuntimeError
from pypto.runtime.trust import ownership_problem

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "EntryState",
    "FileRecord",
    "InvalidEntry",
    "Manifest",
    "scan_dir",
    "validate_entry",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1


class EntryState:
    GENERATED = "GENERATED"  # sources + compiled_meta.json
    READY = "READY"  # ... plus prebuilt binaries

    ALL = (GENERATED, READY)


class InvalidEntry(PyptoRuntimeError):
    """A store entry (or a directory to be stored) breaks the manifest rules."""


@dataclass(frozen=True)
class FileRecord:
    path: str  # POSIX, relative to the entry
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    key: str
    state: str
    files: tuple[FileRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "key": self.key,
            "state": self.state,
            "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files],
        }

    def dumps(self) -> bytes:
        return json.dumps(self.to_json(), indent=1, sort_keys=True).encode()

    def sha256_of(self, rel: str) -> str | None:
        """The SHA-256 recorded for ``rel``, or None when the manifest does not list it."""
        for f in self.files:
            if f.path == rel:
                return f.sha256
        return None

    def check(self, rel: str, data: bytes) -> None:
        """Require ``data`` (the bytes just read of file ``rel``) to be what was validated."""
        expected = self.sha256_of(rel)
        if expected is None:
            raise InvalidEntry(f"{rel}: not listed in the validated manifest")
        if hashlib.sha256(data).hexdigest() != expected:
            raise InvalidEntry(f"{rel}: changed after the entry was validated")

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @classmethod
    def loads(cls, data: bytes) -> Manifest:
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidEntry(f"manifest is not JSON: {exc}") from None
        if not isinstance(raw, dict) or raw.get("format") != MANIFEST_FORMAT:
            raise InvalidEntry(f"manifest format: expected {MANIFEST_FORMAT}, got {raw!r:.80}")
        key, state, files = raw.get("key"), raw.get("state"), raw.get("files")
        if not isinstance(key, str) or state not in EntryState.ALL or not isinstance(files, list):
            raise InvalidEntry("manifest: key, state or files missing or of the wrong type")
        records = []
        for item in files:
            if not isinstance(item, dict):
                raise InvalidEntry(f"manifest files: expected objects, got {item!r:.80}")
            path, size, digest = item.get("path"), item.get("size"), item.get("sha256")
            if not isinstance(path, str) or not _safe_relpath(path):
                raise InvalidEntry(f"manifest: path {path!r} leaves the entry or is not normalised")
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise InvalidEntry(f"manifest: size of {path!r} must be an int >= 0, got {size!r}")
            if not isinstance(digest, str) or len(digest) != 64:
                raise InvalidEntry(f"manifest: sha256 of {path!r} must be 64 hex digits")
            records.append(FileRecord(path, size, digest))
        return cls(key, state, tuple(records))


def _safe_relpath(path: str) -> bool:
    p = PurePosixPath(path)
    return (
        bool(p.parts)  # not "" or ".", which name the entry itself
        and not p.is_absolute()
        and ".." not in p.parts
        and str(p) == path
        and path != MANIFEST_NAME
        and "\\" not in path
    )


def _walk(root: Path, owners: frozenset[int] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """Every regular file under ``root`` (relative POSIX path, lstat); anything else raises.
    With ``owners``, every file and directory must also be owned by one of them and not be
    writable by group or others."""
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            for entry in it:
                st = entry.stat(follow_symlinks=False)
                rel = Path(entry.path).relative_to(root).as_posix()
                if stat.S_ISLNK(st.st_mode):
                    raise InvalidEntry(f"{rel}: symlinks are not allowed in an entry")
                if owners is not None:
                    problem = ownership_problem(st, owners)
                    if problem is not None:
                        raise InvalidEntry(f"{rel}: {problem}")
                if stat.S_ISDIR(st.st_mode):
                    stack.append(Path(entry.path))
                elif stat.S_ISREG(st.st_mode):
                    yield rel, st
                else:
                    raise InvalidEntry(f"{rel}: special files are not allowed in an entry")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with os.fdopen(open_regular(path), "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def scan_dir(root: Path, *, key: str, state: str) -> Manifest:
    """Manifest of every file under ``root`` (its manifest, if any, excluded)."""
    files = [
        FileRecord(rel, st.st_size, _sha256(root / rel))
        for rel, st in sorted(_walk(root))
        if rel != MANIFEST_NAME
    ]
    return Manifest(key, state, tuple(files))


def _read_entry_file(root: Path, rel: str) -> bytes:
    try:
        return read_regular(root / rel)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EINVAL):
            raise InvalidEntry(f"{rel}: not a regular file (symlink or special file)") from None
        raise


def _entry_sha256(root: Path, rel: str) -> str:
    try:
        return _sha256(root / rel)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EINVAL):
            raise InvalidEntry(f"{rel}: not a regular file (symlink or special file)") from None
        raise


def validate_entry(root: Path, *, key: str, owners: frozenset[int] | None = None) -> Manifest:
    """Check ``root`` against its manifest; return the manifest or raise InvalidEntry.
    ``owners``: also require every file and directory to be owned by one of these uids and
    not writable by group or others (the store passes its trusted owners)."""
    try:
        manifest = Manifest.loads(_read_entry_file(root, MANIFEST_NAME))
    except FileNotFoundError:
        raise InvalidEntry("no manifest (incomplete entry)") from None
    if manifest.key != key:
        raise InvalidEntry(f"manifest key {manifest.key!r} does not match the entry's key {key!r}")
    expected = {f.path: f for f in manifest.files}
    seen = set()
    for rel, fst in _walk(root, owners):
        if rel == MANIFEST_NAME:
            continue
        record = expected.get(rel)
        if record is None:
            raise InvalidEntry(f"{rel}: not listed in the manifest")
        if fst.st_size != record.size:
            raise InvalidEntry(f"{rel}: size {fst.st_size}, manifest says {record.size} (truncated?)")
        if _entry_sha256(root, rel) != record.sha256:
            raise InvalidEntry(f"{rel}: SHA-256 does not match the manifest (corrupted)")
        seen.add(rel)
    missing = expected.keys() - seen
    if missing:
        raise InvalidEntry(f"files missing from the entry: {sorted(missing)}")
    return manifest
