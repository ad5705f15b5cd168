"""Filesystem primitives for the artifact store: safe opens, durable writes,
deletion that never follows symlinks, and a no-replace publish. Files are written whole with
:func:`pypto.ir.files.atomic_write` (exported as `pypto.ir.atomic_write`), the one atomic file write of the stack.

Directory trust checks are :mod:`pypto.runtime.trust`'s. Files are opened with
``O_NOFOLLOW | O_NONBLOCK`` and checked to be regular files before they are read, so a symlink
is never followed and a FIFO never blocks a reader.

Publishing a directory uses ``renameat2(RENAME_NOREPLACE)`` (Linux >= 3.15, called through
ctypes). Where the kernel or filesystem does not offer it (``ENOSYS``/``EINVAL``), it falls back
to ``rename(2)``, which for directories is also no-replace *for non-empty targets*: POSIX
rename fails with ``ENOTEMPTY``/``EEXIST`` when the target directory has entries, and every
published entry contains at least its manifest. ``os.link`` cannot be used because it does not
link directories, and a mkdir-then-fill scheme would expose a half-filled directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import stat
from pathlib import Path

__all__ = [
    "copy_file",
    "fsync_dir",
    "fsync_file",
    "make_dir",
    "open_inside",
    "open_regular",
    "pid_alive",
    "publish_dir",
    "read_inside",
    "read_regular",
    "remove_tree",
]


def make_dir(path: Path) -> bool:
    """Create directory ``path`` with mode 0700 (its parent must exist). True if created."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return False
    return True


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """Open ``path`` without following a symlink or blocking on a FIFO; the fd of a regular
    file, else OSError (ELOOP for a symlink, EINVAL for any other kind of file)."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path) -> bytes:
    """The bytes of regular file ``path`` (see :func:`open_regular`)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def open_inside(root: Path, rel: str) -> int:
    """Open regular file ``rel`` (a relative POSIX path) below directory ``root`` for reading,
    following no symlink below ``root`` and never blocking on a FIFO: every directory on the
    way is opened relative to its parent's fd with ``O_NOFOLLOW``, so a symlinked or swapped
    component cannot lead outside ``root``. ``root`` itself is followed (the caller named it).

    The fd of a regular file, else OSError: ELOOP for a symlink (the file or a directory on
    the way), ENOTDIR for a component that is not a directory, EINVAL for a FIFO, socket or
    device. ValueError for a ``rel`` that is absolute, empty, not normalised or contains
    ``..``."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in rel:
        raise ValueError(f"{rel!r}: not a normalised relative path inside {root}")
    dirfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                fd = os.open(
                    part,
                    os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                    dir_fd=dirfd,
                )
            except NotADirectoryError:
                where = str(root.joinpath(*parts[: i + 1]))
                if stat.S_ISLNK(os.stat(part, dir_fd=dirfd, follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, "a symlink where a directory is expected", where) from None
                raise
            os.close(dirfd)
            dirfd = fd
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
        except OSError as exc:  # name the whole path, not the name relative to dir_fd
            raise OSError(exc.errno, exc.strerror, str(root / rel)) from None
    finally:
        os.close(dirfd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(root / rel))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_inside(root: Path, rel: str) -> bytes:
    """The bytes of regular file ``rel`` below ``root`` (see :func:`open_inside`)."""
    with os.fdopen(open_inside(root, rel), "rb") as f:
        return f.read()


def copy_file(src: Path, dst: Path) -> None:
    """Copy regular file ``src`` to a new file ``dst`` (mode 0600, never through a symlink)."""
    fd = open_regular(src)
    with os.fdopen(fd, "rb") as fin:
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(out, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)


def remove_tree(path: Path) -> None:
    """Delete ``path``: a symlink or file is unlinked (never followed); a directory is removed
    with everything in it, without following any symlink inside (``shutil.rmtree`` on Linux
    works through directory fds). Errors below the top are ignored; a missing path is fine."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (possibly another user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    fd = open_regular(path)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
