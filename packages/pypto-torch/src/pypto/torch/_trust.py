"""Trust checks for the directories pypto-torch writes and loads code from.

The rules are the artifact store's (:mod:`pypto.runtime.trust`; like ssh's StrictModes): a
directory whose contents are loaded as code must be a real directory (not a symlink), owned by
the current user and not writable by group or others, or whoever can write to it could plant
code that this process then runs. Every directory above it must be owned by the current user
or by root and not writable by others, unless it has the sticky bit (``/tmp``): otherwise the
directory could be renamed away and replaced. Files are opened with ``O_NOFOLLOW |
O_NONBLOCK`` and must be regular files owned by the current user.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pypto.runtime.trust import UnsafeStoreError, check_dir, ownership_problem

__all__ = ["UnsafeBuildDirectory", "check_file", "check_private_dir", "ensure_private_dir", "open_private"]


class UnsafeBuildDirectory(UnsafeStoreError, RuntimeError):
    """A path pypto-torch would build in or load code from could be written by someone else.

    Attributes: ``path``, ``problem`` and ``fix`` (what to do about it).
    """


def check_private_dir(path: Path, *, fix: str) -> None:
    """Require ``path`` to be a real directory owned by the current user and writable by no one
    else (:func:`pypto.runtime.trust.check_dir`). Raises FileNotFoundError when absent,
    UnsafeBuildDirectory otherwise."""
    try:
        check_dir(path, frozenset({os.geteuid()}), fix=fix)
    except UnsafeStoreError as exc:
        raise UnsafeBuildDirectory(exc.path, exc.problem, exc.fix) from None
    except NotADirectoryError:
        raise UnsafeBuildDirectory(path, "is not a directory", f"remove it (`rm {path}`), or {fix}") from None


def _check_ancestor(path: Path, *, fix: str) -> None:
    st = os.stat(path)  # a symlink above the private tree is judged by what it points to
    uid = os.geteuid()
    if st.st_uid not in (uid, 0):
        raise UnsafeBuildDirectory(path, f"owned by uid {st.st_uid}, not by the current user or root", fix)
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise UnsafeBuildDirectory(
            path,
            f"writable by group or others without the sticky bit (mode {stat.S_IMODE(st.st_mode):04o})",
            fix,
        )


def ensure_private_dir(path: Path, *, fix: str) -> None:
    """Create ``path`` and any missing parent with mode 0700, then check the chain: ``path``
    and every directory created here must pass :func:`check_private_dir`, and every existing
    directory above them must be owned by the current user or root and not writable by others
    unless sticky. Raises UnsafeBuildDirectory naming the first directory that fails."""
    path = Path(os.path.abspath(path))
    chain = [*reversed(path.parents), path]
    created: set[Path] = set()
    for directory in chain:
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            continue
        except PermissionError:
            if not directory.exists():
                raise
            continue
        created.add(directory)
    for directory in chain:
        if directory in created or directory == path:
            check_private_dir(directory, fix=fix)
        else:
            _check_ancestor(directory, fix=fix)


def open_private(path: Path, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """Open ``path`` without following a symlink or blocking on a FIFO and require a regular
    file owned by the current user and writable by no one else; its fd, else
    UnsafeBuildDirectory (FileNotFoundError when absent)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeBuildDirectory(path, "is a symlink", f"remove it (`rm {path}`)") from None
        raise
    try:
        check_file(path, os.fstat(fd))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_file(path: Path, st: os.stat_result | None = None) -> None:
    """Require ``path`` (lstat'ed unless ``st`` is given) to be a regular file owned by the
    current user and writable by no one else; UnsafeBuildDirectory otherwise."""
    st = os.lstat(path) if st is None else st
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeBuildDirectory(path, "is not a regular file", f"remove it (`rm {path}`)")
    problem = ownership_problem(st, frozenset({os.geteuid()}))
    if problem is not None:
        raise UnsafeBuildDirectory(path, problem, f"remove it (`rm {path}`)")
