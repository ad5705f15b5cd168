"""The native describe_call build: trusted directories only, no process outlives its parent,
and no two builds share a directory.

A second user who can write the build root (or owns it) could plant a ``.so`` that the victim's
process loads: every such root, published build and lock file is refused, naming the path and
the fix, and nothing is built or loaded. The process tests use a stand-in ``ninja`` on PATH
that starts a long-running "compiler" in its own session (as ninja does) and then waits, so the
real 25 s compile is not needed: the asking process exits or is killed mid-build, and neither
the stand-in ninja nor its compiler may survive it, nor may a private build directory remain.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pypto.torch import _native_describe
from pypto.torch._trust import UnsafeBuildDirectory, ensure_private_dir


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """A process with no native build yet, whose builder and loader only record their calls."""
    calls: dict[str, list[Any]] = {"build": [], "load": []}

    def build(name: str, directory: Path, lock_fd: int, verbose: bool) -> None:
        calls["build"].append(directory)
        (directory / f"{name}.so").write_bytes(b"built")

    monkeypatch.setattr(_native_describe, "_state", _native_describe._State())
    monkeypatch.setattr(_native_describe, "_waiting", type(_native_describe._waiting)())
    monkeypatch.setattr(_native_describe, "_run_builder", build)
    monkeypatch.setattr(_native_describe, "_load_module", lambda *a: calls["load"].append(a))
    return calls


def _plant(root: Path) -> Path:
    """A 'published build' with a planted .so in ``root`` (as another user would leave it)."""
    name = _native_describe._extension_name()
    build = root / f"{name}-{_native_describe._digest()}"
    build.mkdir(parents=True, mode=0o700)
    (build / f"{name}.so").write_bytes(b"\x7fELF planted")
    return build


def _refused(calls: dict[str, list[Any]], path: Path) -> None:
    assert not _native_describe.build_native()
    error = _native_describe.native_error()
    assert error is not None
    assert error.startswith("UnsafeBuildDirectory: ")
    assert str(path) in error
    assert "to fix:" in error
    assert calls == {"build": [], "load": []}  # nothing built, nothing loaded
    assert _native_describe._state.module is None


def test_a_world_writable_root_is_refused(tmp_path, monkeypatch, fresh) -> None:
    root = tmp_path / "ext"
    _plant(root)
    root.chmod(0o777)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(root))
    _refused(fresh, root)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a path another user's needs root")
@pytest.mark.parametrize("owned", ["root", "published_build", "planted_library"])
def test_a_path_owned_by_another_user_is_refused(tmp_path, monkeypatch, fresh, owned) -> None:
    root = tmp_path / "ext"
    build = _plant(root)
    path = {"root": root, "published_build": build, "planted_library": next(build.iterdir())}[owned]
    os.chown(path, 65534, 65534)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(root))
    _refused(fresh, path)


def test_a_world_writable_published_build_is_refused(tmp_path, monkeypatch, fresh) -> None:
    root = tmp_path / "ext"
    build = _plant(root)
    build.chmod(0o777)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(root))
    _refused(fresh, build)


def test_a_symlinked_root_is_refused(tmp_path, monkeypatch, fresh) -> None:
    real = tmp_path / "elsewhere"
    _plant(real)
    (tmp_path / "ext").symlink_to(real)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    _refused(fresh, tmp_path / "ext")


def test_a_symlinked_lock_file_is_refused(tmp_path, monkeypatch, fresh) -> None:
    root = tmp_path / "ext"
    root.mkdir(mode=0o700)
    build = f"{_native_describe._extension_name()}-{_native_describe._digest()}"
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (root / f"{build}.lock").symlink_to(victim)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(root))
    _refused(fresh, root / f"{build}.lock")
    assert victim.read_text() == "untouched"


def test_a_group_writable_parent_without_the_sticky_bit_is_refused(tmp_path, monkeypatch, fresh) -> None:
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(0o777)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(parent / "ext"))
    _refused(fresh, parent)
    parent.chmod(0o777 | stat.S_ISVTX)  # like /tmp: others cannot rename what is ours
    assert _native_describe.build_native()
    assert len(fresh["build"]) == 1
    assert len(fresh["load"]) == 1


def test_the_root_and_its_new_parents_are_private(tmp_path, monkeypatch, fresh) -> None:
    root = tmp_path / "a" / "b" / "ext"
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(root))
    assert _native_describe._build_root() == root
    ensure_private_dir(root, fix="none")
    for path in (tmp_path / "a", tmp_path / "a" / "b", root):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_a_build_is_published_complete_by_rename(tmp_path, monkeypatch, fresh) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    name = _native_describe._extension_name()

    def build(name_: str, directory: Path, lock_fd: int, verbose: bool) -> None:
        assert directory.parent == tmp_path
        assert directory.name.startswith(".")
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        (directory / f"{name_}.so").write_bytes(b"built")
        fresh["build"].append(directory)

    monkeypatch.setattr(_native_describe, "_run_builder", build)
    stale = tmp_path / f".{name}-{_native_describe._digest()}.killed"
    stale.mkdir()  # a private directory left by a build that was killed
    assert _native_describe.build_native()
    published = tmp_path / f"{name}-{_native_describe._digest()}"
    assert fresh["load"] == [(name, published / f"{name}.so")]
    assert not stale.exists()
    assert not fresh["build"][0].exists()  # renamed into place
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([published.name, f"{published.name}.lock"])


def test_a_failed_build_leaves_no_directory(tmp_path, monkeypatch, fresh) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))

    def broken(name: str, directory: Path, lock_fd: int, verbose: bool) -> None:
        (directory / "half.o").write_bytes(b"")
        raise RuntimeError("compiler died")

    monkeypatch.setattr(_native_describe, "_run_builder", broken)
    assert not _native_describe.build_native()
    assert _native_describe.native_error() == "RuntimeError: compiler died"
    assert [p.suffix for p in tmp_path.iterdir()] == [".lock"]


def test_unsafe_paths_raise_a_specific_error() -> None:
    err = UnsafeBuildDirectory("/x", "is a symlink", "remove it")
    assert str(err) == "/x: is a symlink; to fix: remove it"
    assert isinstance(err, RuntimeError)


# -- processes -------------------------------------------------------------------------------

_FAKE_NINJA = """\
#!{python}
# A stand-in for ninja: a "compiler" in its own session (as ninja starts its jobs), then wait.
import os, subprocess, sys, time
if sys.argv[1:] == ["--version"]:
    print("1.11.1")
    sys.exit(0)
compiler = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)", "{marker}-compiler"], start_new_session=True
)
with open(os.path.join("{started}", str(os.getpid())), "w") as f:
    f.write(os.getcwd())
time.sleep(600)
"""


def _processes(marker: str) -> list[int]:
    """Pids whose command line mentions ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                if marker.encode() in cmdline:
                    state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                    if state != b"Z":
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """An environment whose ninja is the stand-in; kills whatever it left, whatever happens."""
    marker = f"pypto-stand-in-{os.getpid()}-{tmp_path.name}"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    started = tmp_path / "started"
    started.mkdir()
    ninja = bindir / "ninja"
    ninja.write_text(_FAKE_NINJA.format(python=sys.executable, marker=marker, started=started))
    ninja.chmod(0o755)
    root = tmp_path / "ext"
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "TORCH_EXTENSIONS_DIR": str(root),
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
        "PYPTO_NATIVE_DESCRIBE": "1",  # conftest turns it off for this process, not for these
    }
    info = {"marker": marker, "started": started, "root": root, "env": env, "dir": tmp_path}
    try:
        yield info
    finally:
        for pid in _processes(marker) + _processes(str(bindir)) + _processes(str(root)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _script(info: dict[str, Any], body: str) -> Path:
    script = info["dir"] / f"asker{len(list(info['dir'].glob('asker*')))}.py"
    script.write_text(
        "import sys, time\nfrom pypto.torch import _native_describe as nd\n" + textwrap.dedent(body)
    )
    return script


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _start(info: dict[str, Any], body: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(_script(info, body))],
        env=info["env"],
        cwd=info["dir"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _no_survivors(info: dict[str, Any], timeout: float) -> None:
    # The stand-in ninja (its path), its compiler (the marker), the build child (the root).
    names = (info["marker"], str(info["dir"] / "bin"), str(info["root"]))
    _wait_for(lambda: not any(_processes(n) for n in names), timeout, "the build's processes to end")
    assert not list(info["root"].glob(".*")), "a private build directory was left behind"
    assert not [p for p in info["root"].iterdir() if p.is_dir()], "an interrupted build was published"


def test_a_kernel_mode_script_that_exits_mid_build_leaves_no_process(stand_in) -> None:
    proc = _start(
        stand_in,
        f"""
        import pypto.torch as pt
        pt.init()  # on a simulator: starts the native build in the background
        started = {str(stand_in["started"])!r}
        import os
        while not os.listdir(started):
            time.sleep(0.05)
        print("exiting mid-build", flush=True)
        """,
    )
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "exiting mid-build" in out
    assert len(os.listdir(stand_in["started"])) == 1
    # The exit waited for the build to stop: nothing is left, without a grace period.
    assert not _processes(stand_in["marker"])
    _no_survivors(stand_in, 0.5)


def test_a_killed_script_leaves_no_process(stand_in) -> None:
    proc = _start(stand_in, "nd.build_native()\n")
    try:
        _wait_for(lambda: os.listdir(stand_in["started"]), 120, "the stand-in ninja to start")
        assert _processes(stand_in["marker"])  # the compiler runs
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    _no_survivors(stand_in, 30)


def test_a_second_build_waits_for_the_first_instead_of_sharing_its_directory(stand_in) -> None:
    first = _start(stand_in, "nd.build_native()\n")
    second = None
    try:
        _wait_for(lambda: os.listdir(stand_in["started"]), 120, "the first build to start")
        second = _start(stand_in, "print(nd.build_native(), nd.native_error(), flush=True)\n")
        time.sleep(3)  # time enough to start a second build, were it not waiting
        assert second.poll() is None
        assert len(os.listdir(stand_in["started"])) == 1  # one ninja: the second waits on the lock
        first_dir = Path((stand_in["started"] / os.listdir(stand_in["started"])[0]).read_text())
        first.kill()
        first.communicate(timeout=60)
        # The lock passes to the second process, which builds in a directory of its own.
        _wait_for(lambda: len(os.listdir(stand_in["started"])) == 2, 120, "the second build to start")
        dirs = {Path((stand_in["started"] / p).read_text()) for p in os.listdir(stand_in["started"])}
        assert len(dirs) == 2
        assert not first_dir.exists()  # the killed build's directory was removed
    finally:
        first.kill()
        first.communicate(timeout=60)
        if second is not None:
            second.kill()
            second.communicate(timeout=60)
    _no_survivors(stand_in, 30)
