"""Trust checks for directories whose contents are loaded as code: the artifact store's and
pypto-torch's build directories (like ssh's StrictModes and git's safe.directory).

A trusted directory is a real directory (not a symlink), owned by an allowed user and not
writable by group or others; otherwise whoever can write to it could plant code that this
process then loads.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pypto.runtime.errors import PyptoRuntimeError

__all__ = ["UnsafeStoreError", "check_dir", "ownership_problem"]


class UnsafeStoreError(PyptoRuntimeError):
    """A path the store would use could be written by someone else: refused.

    Attributes: ``path``, ``problem`` and ``fix`` (what to do about it).
    """

    def __init__(self, path: Path | str, problem: str, fix: str) -> None:
        super().__init__(f"{path}: {problem}; to fix: {fix}")
        self.path = Path(path)
        self.problem = problem
        self.fix = fix


def ownership_problem(st: os.stat_result, owners: frozenset[int]) -> str | None:
    """Why a file or directory with status ``st`` is not trusted, or None when it is."""
    if st.st_uid not in owners:
        allowed = " or ".join(f"uid {u}" for u in sorted(owners))
        return f"owned by uid {st.st_uid}, not by {allowed}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def check_dir(path: Path, owners: frozenset[int], *, fix: str) -> os.stat_result:
    """lstat ``path`` and require a trusted directory; raises FileNotFoundError when absent,
    UnsafeStoreError when it is a symlink, owned by someone else or writable by others, and
    NotADirectoryError when it is another kind of file (an accident, not an attack)."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeStoreError(
            path,
            f"is a symlink (to {os.readlink(path)!r}) where a directory is expected",
            f"replace it with a real directory (`rm {path} && mkdir -m 700 {path}`), or {fix}",
        )
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "expected a directory", str(path))
    problem = ownership_problem(st, owners)
    if problem is not None:
        if st.st_uid not in owners:
            remedy = f"remove it as its owner, or {fix}"
        else:
            remedy = f"`chmod 700 {path}` (or `chmod -R go-w {path}`), or {fix}"
        raise UnsafeStoreError(path, problem, remedy)
    return st
