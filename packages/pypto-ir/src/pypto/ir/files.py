"""Writing a file whole or not at all: the one atomic, durable file write of the stack.

pypto-ir writes artifact sources and ``compiled_meta.json`` with it; pypto-runtime (which
imports pypto-ir, never the reverse) writes store manifests, entry indexes and CLI outputs
with it. A reader never sees a half-written file, and after a crash the file is either the
old one or the complete new one: the data is written to a fresh temporary sibling, flushed
and fsynced before it is renamed over the target.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write"]

# errno values of a filesystem without hard links (the no-replace publish then checks and renames)
_NO_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})

_TEMP_FLAGS = (
    os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
) | getattr(os, "O_BINARY", 0)
_TEMP_ATTEMPTS = 100  # tempfile.mkstemp's bound on name collisions


def atomic_write(
    path: str | os.PathLike[str],
    data: str | bytes | Callable[[BinaryIO], object],
    *,
    mode: int | None = 0o600,
    replace: bool = True,
    sync_dir: bool = False,
) -> None:
    """Write ``data`` to ``path`` atomically and durably.

    The temporary sibling (``.<name>.*.tmp`` in the same directory) is created exclusively and
    never through a symlink; on any failure it is removed and ``path`` is untouched.

    Args:
        path: The file to write; its directory must exist.
        data: Text (written as UTF-8), bytes, or a function that writes into the open binary
            file (e.g. ``lambda f: numpy.save(f, a)``).
        mode: Permission bits of the new file; None gives what a plain ``open(path, "w")``
            would (0o666 less the umask).
        replace: False refuses to replace an existing ``path`` (FileExistsError), also when
            it appears while writing.
        sync_dir: Also fsync the directory, so the rename itself survives a crash.

    Raises:
        FileExistsError: ``replace`` is False and ``path`` exists.
        OSError: the directory cannot be written, or the write failed.
    """
    target = Path(path)
    if not replace and os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, "exists and replace=False", str(target))
    fd, tmp = _create_sibling(target)
    try:
        if isinstance(data, str | bytes | bytearray | memoryview):
            # the bytes straight to the descriptor: no buffered file object for one write
            try:
                _write_all(fd, data.encode("utf-8") if isinstance(data, str) else data)
                _finish(fd, mode)
            finally:
                os.close(fd)
        else:
            with os.fdopen(fd, "wb") as f:
                data(f)
                f.flush()
                _finish(f.fileno(), mode)
        if replace:
            os.replace(tmp, target)
        else:
            _publish_new(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_dir:
        dfd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _create_sibling(target: Path) -> tuple[int, str]:
    """Create ``.<name>.<random>.tmp`` beside ``target``, exclusively, never through a symlink,
    mode 0600 (what ``tempfile.mkstemp`` does, without its per-call Python overhead)."""
    for _ in range(_TEMP_ATTEMPTS):
        tmp = os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(target.parent))


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view) :]


def _finish(fd: int, mode: int | None) -> None:
    """Set the new file's permission bits (it was created 0600), then fsync it."""
    if mode is None:
        umask = os.umask(0o022)
        os.umask(umask)
        mode = 0o666 & ~umask
    if mode != 0o600:
        os.fchmod(fd, mode)
    os.fsync(fd)


def _publish_new(tmp: str, target: Path) -> None:
    """Rename ``tmp`` to ``target`` unless ``target`` exists: a hard link is created only
    when the name is free (atomically); without hard links, check, then rename."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "appeared while writing and replace=False", str(target)) from None
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        if os.path.lexists(target):
            raise FileExistsError(
                errno.EEXIST, "appeared while writing and replace=False", str(target)
            ) from None
        os.replace(tmp, target)
    else:
        os.unlink(tmp)
