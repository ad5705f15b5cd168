"""Filesystem primitives for the artifact store: durable writes and a no-replace publish.

Publishing a directory uses ``renameat2(RENAME_NOREPLACE)`` (Linux >= 3.15, called through
ctypes). Where the kernel or filesystem does not offer it (``ENOSYS``/``EINVAL``), it falls back
to ``rename(2)``, which for directories is also no-replace *for non-empty targets*: POSIX
rename fails with ``ENOTEMPTY``/``EEXIST`` when the target directory has entries, and every
published entry contains at least its manifest. ``os.link`` cannot be used because it does not
link directories, and a mkdir-then-fill scheme would expose a half-filled directory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from pathlib import Path

__all__ = ["fsync_dir", "fsync_file", "publish_dir", "write_file_durably"]

_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def _load_renameat2() -> object | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _load_renameat2()


def publish_dir(src: Path, dst: Path) -> bool:
    """Atomically rename directory ``src`` to ``dst`` unless ``dst`` exists.

    Returns True when published, False when ``dst`` already existed (``src`` is left in place).
    Other failures raise OSError.
    """
    if _renameat2 is not None:
        rc = _renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE)  # type: ignore[operator]
        if rc == 0:
            return True
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            return False
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), str(dst))
    if not any(src.iterdir()):
        raise OSError(errno.EINVAL, "refusing to publish an empty directory", str(src))
    try:
        os.rename(src, dst)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            return False
        raise
    return True


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_durably(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary sibling, fsync it, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
