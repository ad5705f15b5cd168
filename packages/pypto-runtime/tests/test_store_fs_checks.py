"""The artifact store's filesystem checks, one function at a time (``_fs`` and the key check):
the exact errors (argument, problem, fix), the modes of what the store creates, and the branches
the end-to-end store tests do not reach (a kernel without ``renameat2(RENAME_NOREPLACE)``, keys at
their length limits). Written against the mutants that survived ``nox -s mutation``
(docs/mutation.md); ownership tests chown to uid 65534 (nobody), which needs root.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from store_test_helpers import (
    FIX,
    KEY,
    OTHER_UID,
    _open_fds,
    _tree,
    needs_root,
)

from pypto.runtime import _fs
from pypto.runtime._fs import open_regular, publish_dir
from pypto.runtime.store import check_key
from pypto.runtime.trust import UnsafeStoreError, check_dir, ownership_problem

# ---------------------------------------------------------------- ownership_problem, check_dir


def test_ownership_problem_names_owner_and_mode(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    uid = os.geteuid()
    assert ownership_problem(os.lstat(d), frozenset({uid})) is None
    assert ownership_problem(os.lstat(d), frozenset({OTHER_UID + 1, OTHER_UID})) == (
        f"owned by uid {uid}, not by uid {OTHER_UID} or uid {OTHER_UID + 1}"
    )
    for mode in (0o720, 0o702, 0o722, 0o777):
        os.chmod(d, mode)
        assert ownership_problem(os.lstat(d), frozenset({uid})) == (
            f"writable by group or others (mode {mode:04o})"
        )
    for mode in (0o750, 0o705, 0o755, 0o500):
        os.chmod(d, mode)
        assert ownership_problem(os.lstat(d), frozenset({uid})) is None


def test_check_dir_returns_the_lstat_of_a_trusted_directory(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o755)
    st = check_dir(d, frozenset({os.geteuid()}), fix=FIX)
    assert (st.st_ino, st.st_dev) == (os.lstat(d).st_ino, os.lstat(d).st_dev)


def test_check_dir_refuses_a_symlink_with_path_problem_and_fix(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(UnsafeStoreError) as info:
        check_dir(link, frozenset({os.geteuid()}), fix=FIX)
    exc = info.value
    assert exc.path == link
    assert exc.problem == f"is a symlink (to {str(real)!r}) where a directory is expected"
    assert exc.fix == f"replace it with a real directory (`rm {link} && mkdir -m 700 {link}`), or {FIX}"
    assert str(exc) == f"{link}: {exc.problem}; to fix: {exc.fix}"


def test_check_dir_refuses_a_file_as_not_a_directory(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"")
    with pytest.raises(NotADirectoryError) as info:
        check_dir(f, frozenset({os.geteuid()}), fix=FIX)
    assert info.value.errno == errno.ENOTDIR
    assert info.value.strerror == "expected a directory"
    assert info.value.filename == str(f)
    with pytest.raises(FileNotFoundError):
        check_dir(tmp_path / "absent", frozenset({os.geteuid()}), fix=FIX)


def test_check_dir_refuses_a_writable_directory_with_a_chmod_fix(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    os.chmod(d, 0o772)
    with pytest.raises(UnsafeStoreError) as info:
        check_dir(d, frozenset({os.geteuid()}), fix=FIX)
    assert info.value.problem == "writable by group or others (mode 0772)"
    assert info.value.fix == f"`chmod 700 {d}` (or `chmod -R go-w {d}`), or {FIX}"


@needs_root
def test_check_dir_refuses_another_owner_with_a_remove_fix(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    os.chown(d, OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafeStoreError) as info:
        check_dir(d, frozenset({os.geteuid()}), fix=FIX)
    assert info.value.problem == f"owned by uid {OTHER_UID}, not by uid {os.geteuid()}"
    assert info.value.fix == f"remove it as its owner, or {FIX}"
    assert check_dir(d, frozenset({OTHER_UID}), fix=FIX).st_uid == OTHER_UID


# ---------------------------------------------------------------- open_regular, read_regular


def test_open_regular_creates_files_0600_and_close_on_exec(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        fd = open_regular(tmp_path / "new", os.O_RDWR | os.O_CREAT)
        try:
            assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600
            assert not os.get_inheritable(fd)
            assert os.get_blocking(fd)
            os.write(fd, b"abc")
            assert os.pread(fd, 3, 0) == b"abc"
        finally:
            os.close(fd)
        fd = open_regular(tmp_path / "lock", os.O_RDWR | os.O_CREAT, 0o640)
        os.close(fd)
        assert stat.S_IMODE(os.lstat(tmp_path / "lock").st_mode) == 0o640
    finally:
        os.umask(old)
    fd = open_regular(tmp_path / "new")
    try:
        assert os.read(fd, 10) == b"abc"
        with pytest.raises(OSError, match="Bad file descriptor") as info:
            os.write(fd, b"x")  # opened read-only by default
        assert info.value.errno == errno.EBADF
    finally:
        os.close(fd)


def test_open_regular_refuses_a_symlink_without_following_it(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"secret")
    link = tmp_path / "link"
    link.symlink_to(target)
    before = _open_fds()
    with pytest.raises(OSError, match="symbolic links") as info:
        open_regular(link)
    assert info.value.errno == errno.ELOOP
    with pytest.raises(OSError, match="symbolic links") as info:
        open_regular(link, os.O_RDWR | os.O_CREAT)
    assert info.value.errno == errno.ELOOP
    assert _open_fds() == before


def test_open_regular_refuses_a_fifo_and_a_directory_without_blocking_or_leaking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    before = _open_fds()
    with pytest.raises(OSError, match="not a regular file") as info:
        open_regular(fifo)  # without O_NONBLOCK this open would wait for a writer forever
    assert (info.value.errno, info.value.strerror, info.value.filename) == (
        errno.EINVAL,
        "not a regular file",
        str(fifo),
    )
    with pytest.raises(OSError, match="not a regular file") as info:
        open_regular(tmp_path)
    assert (info.value.errno, info.value.filename) == (errno.EINVAL, str(tmp_path))
    assert _open_fds() == before
    with pytest.raises(OSError, match="not a regular file") as info:
        _fs.read_regular(fifo)
    assert info.value.errno == errno.EINVAL


def test_open_regular_fd_is_not_inherited_by_a_child(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    fd = open_regular(tmp_path / "f")
    try:
        probe = f"import os,sys; os.fstat({fd})"
        r = subprocess.run([sys.executable, "-c", probe], close_fds=False, capture_output=True, check=False)
        assert r.returncode != 0  # the fd is closed in the child
    finally:
        os.close(fd)


# ---------------------------------------------------------------- check_key


def test_check_key_lengths_case_and_trailing_characters() -> None:
    for n in (16, 17, 64, 127, 128):
        key = ("0123456789abcdef" * 8)[:n]
        assert check_key(key) == key
    for bad in (
        "0123456789abcde",  # 15 digits
        "a" * 129,
        "0123456789ABCDEF",
        "0123456789abcdeg",
        "0123456789abcdef\n",  # a path component with a newline
        " 0123456789abcdef",
        "0123456789abcdef ",
        "",
    ):
        with pytest.raises(ValueError, match="artifact key") as info:
            check_key(bad)
        assert (
            str(info.value) == f"artifact key: expected a lowercase hex digest (16..128 digits), got {bad!r}"
        )


def test_check_key_accepts_key_objects() -> None:
    class Hex:
        def hexdigest(self) -> str:
            return KEY

    class Attr:
        digest = KEY

    class Both:
        digest = "f" * 64

        def hexdigest(self) -> str:
            return KEY

    class BytesDigest:  # like hashlib: digest() is bytes, hexdigest() the text
        def digest(self) -> bytes:
            return b"\x00" * 32

        def hexdigest(self) -> str:
            return KEY

    class NonStrHex:
        hexdigest = 5
        digest = KEY

    for obj in (Hex(), Attr(), Both(), BytesDigest(), NonStrHex(), hashlib.sha256(b"mutants")):
        assert check_key(obj) == KEY
    for obj in (object(), 5, None, b"0123456789abcdef"):
        with pytest.raises(ValueError, match="artifact key") as info:
            check_key(obj)
        assert (
            str(info.value) == f"artifact key: expected a lowercase hex digest (16..128 digits), got {obj!r}"
        )

    class Upper:
        def hexdigest(self) -> str:
            return KEY.upper()

    with pytest.raises(ValueError, match="artifact key") as info:
        check_key(Upper())
    assert str(info.value).endswith(f"got {KEY.upper()!r}")


# ---------------------------------------------------------------- publish_dir


def _fake_renameat2(err: int, calls: list[tuple[object, ...]]):  # type: ignore[no-untyped-def]
    def fake(*args: object) -> int:
        calls.append(args)
        ctypes.set_errno(err)
        return -1

    return fake


@pytest.mark.parametrize("err", [errno.ENOSYS, errno.EINVAL, errno.ENOTSUP])
def test_publish_falls_back_to_rename_where_renameat2_is_unsupported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    calls: list[tuple[object, ...]] = []
    monkeypatch.setattr(_fs, "_renameat2", _fake_renameat2(err, calls))
    src = _tree(tmp_path / "src", {"a": b"1"})
    assert publish_dir(src, tmp_path / "dst") is True
    assert (tmp_path / "dst" / "a").read_bytes() == b"1"
    assert not src.exists()
    assert len(calls) == 1
    # The fallback is no-replace for a non-empty target: src stays where it was.
    src2 = _tree(tmp_path / "src2", {"b": b"2"})
    assert publish_dir(src2, tmp_path / "dst") is False
    assert (src2 / "b").exists()
    assert not (tmp_path / "dst" / "b").exists()
    # An empty staged directory is refused (rename would replace an empty target).
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OSError, match="refusing to publish") as info:
        publish_dir(empty, tmp_path / "other")
    assert (info.value.errno, info.value.strerror, info.value.filename) == (
        errno.EINVAL,
        "refusing to publish an empty directory",
        str(empty),
    )
    # Other rename failures are raised.
    src3 = _tree(tmp_path / "src3", {"c": b"3"})
    with pytest.raises(FileNotFoundError):
        publish_dir(src3, tmp_path / "missing" / "dst")


def test_publish_without_renameat2_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fs, "_renameat2", None)
    src = _tree(tmp_path / "src", {"a": b"1"})
    assert publish_dir(src, tmp_path / "dst") is True
    src2 = _tree(tmp_path / "src2", {"a": b"2"})
    assert publish_dir(src2, tmp_path / "dst") is False
    assert (tmp_path / "dst" / "a").read_bytes() == b"1"


@pytest.mark.parametrize("err", [errno.EPERM, errno.EXDEV, errno.EIO])
def test_publish_raises_other_renameat2_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    monkeypatch.setattr(_fs, "_renameat2", _fake_renameat2(err, []))
    src = _tree(tmp_path / "src", {"a": b"1"})
    dst = tmp_path / "dst"
    with pytest.raises(OSError, match=os.strerror(err)) as info:
        publish_dir(src, dst)
    assert (info.value.errno, info.value.strerror, info.value.filename) == (err, os.strerror(err), str(dst))
    assert src.exists()
    assert not dst.exists()


def test_publish_eexist_from_renameat2_is_a_lost_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_fs, "_renameat2", _fake_renameat2(errno.EEXIST, []))
    src = _tree(tmp_path / "src", {"a": b"1"})
    assert publish_dir(src, tmp_path / "dst") is False
    assert src.exists()
    assert not (tmp_path / "dst").exists()


@pytest.mark.skipif(_fs._renameat2 is None, reason="libc without renameat2")
def test_renameat2_never_replaces_even_an_empty_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # relative paths: resolved against AT_FDCWD
    _tree(Path("src"), {"a": b"1"})
    Path("dst").mkdir()
    assert publish_dir(Path("src"), Path("dst")) is False  # rename(2) would replace it
    assert Path("src/a").exists()
    assert not any(Path("dst").iterdir())
    assert publish_dir(Path("src"), Path("new")) is True
    assert Path("new/a").read_bytes() == b"1"
    assert not Path("src").exists()


# ---------------------------------------------------------------- remove_tree


def test_remove_tree_never_follows_a_symlink(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside", {"keep": b"k"})
    tree = _tree(tmp_path / "tree", {"sub/f": b"f"})
    (tree / "sub" / "out").symlink_to(outside)
    _fs.remove_tree(tree)
    assert not os.path.lexists(tree)
    assert (outside / "keep").read_bytes() == b"k"
    link = tmp_path / "link"
    link.symlink_to(outside)
    _fs.remove_tree(link)
    assert not os.path.lexists(link)
    assert (outside / "keep").exists()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    _fs.remove_tree(dangling)
    assert not os.path.lexists(dangling)
    f = tmp_path / "file"
    f.write_bytes(b"")
    _fs.remove_tree(f)
    assert not f.exists()
    _fs.remove_tree(tmp_path / "absent")  # nothing to do, no error


def test_remove_tree_ignores_errors_below_the_top(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "tree", {"stuck": b"s", "sub/gone": b"g"})
    real_unlink = os.unlink

    def unlink(path: object, *args: object, **kw: object) -> None:
        if os.fsdecode(path).endswith("stuck"):  # type: ignore[call-overload]
            raise PermissionError(errno.EPERM, "Operation not permitted", path)
        real_unlink(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink)
    _fs.remove_tree(tree)  # the file it could not remove is left, without an error
    assert (tree / "stuck").exists()
    assert not (tree / "sub").exists()


def test_remove_tree_of_a_file_that_vanishes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"")

    def unlink(path: object, *args: object, **kw: object) -> None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)

    monkeypatch.setattr(os, "unlink", unlink)
    _fs.remove_tree(f)  # removed by someone else between the lstat and the unlink: fine
