"""The native fast path of ``CallSignature.describe_call``, built on request against this torch.

``_native_describe.cpp`` makes the checks of the generated Python fast path
(:mod:`pypto.torch._fast_describe`) on the ``at::Tensor`` fields directly and builds the frame's
records in C, for platforms whose device memory is CPU memory (the simulators). Like the Python
fast path it takes the common call only and answers None for anything else, which then goes to
the general path; so the general path alone decides errors and their messages. The same
extension pins a launch's borrowed storages (``pin``/``unpin``, used by
:mod:`pypto.torch._kernel.pins`) with c10's ``StorageImpl::set_resizable``.

Where it is built (the build root): ``$TORCH_EXTENSIONS_DIR``, else ``<user cache
dir>/pypto-torch``. A build is the directory ``<root>/<name>-<digest>``, where the name carries
the torch version and the digest covers the source, torch, Python and the compiler flags; it is
published once, complete, and never written again. :func:`build_native` builds or loads it,
once per process. ``pypto.torch.init`` on a simulator starts :func:`build_native` on a
background thread (:func:`build_native_in_background`) unless ``PYPTO_NATIVE_DESCRIBE=0``;
until it is done, or if it fails, every signature keeps the Python fast path.

Trust (:mod:`pypto.torch._trust`, the artifact store's rules): the root, every directory created
for it and the published build must be real directories owned by the current user and writable
by no one else, the directories above the root must not be writable by others (unless sticky),
and the lock file and the loaded ``.so`` must be regular files owned by the current user; the
lock file is opened with ``O_NOFOLLOW``. Anything else is refused (nothing is built or loaded)
with an error naming the path and the fix, and the Python fast path stays in use.

Processes: the compile runs in a child process (:mod:`pypto.torch._native_build`) in its own
session, in a private directory (``<root>/.<build>.<random>``) published by rename only when
complete. The child dies with its parent (``PR_SET_PDEATHSIG``) and kills every compiler it
started before it exits; at interpreter exit the parent stops a running build and waits for it.
So nothing the build starts outlives the process that asked for it, and an interrupted build
leaves no published directory. A per-build ``fcntl`` lock (held by the parent and the child)
serialises builds of one digest across processes: a second process waits, then loads the
published build. A private directory found while holding the lock was left by a process killed
mid-build and is removed. The first build takes about 25 s of CPU (30 s wall on a quiet 2-core
machine); loading a published build takes well under a second. A process that exits before
its build finishes stops it, and the next one starts over: run ``pypto.torch.build_native()``
once in a process that waits for it to build ahead of short scripts.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from pypto.torch._trust import (
    UnsafeBuildDirectory,
    check_file,
    check_private_dir,
    ensure_private_dir,
    open_private,
)

__all__ = [
    "UnsafeBuildDirectory",
    "build_native",
    "build_native_in_background",
    "loaded_module",
    "native_describe",
    "native_error",
]

_SOURCE = Path(__file__).with_name("_native_describe.cpp")
_BUILDER = Path(__file__).with_name("_native_build.py")
_CFLAGS = ("-O2",)
_STOP_TIMEOUT = 10.0  # seconds a stopped build may take to kill its compilers and exit


class _State:
    """The loaded extension module (None until built) and the last build failure."""

    module: Any = None
    error: str | None = None
    background: threading.Thread | None = None


_lock = threading.Lock()
_start_lock = threading.Lock()
_state = _State()
# Signatures to switch to the native path once it is built (weak: they live with their callers).
_waiting: weakref.WeakSet[Any] = weakref.WeakSet()
# Build processes running now (stopped at interpreter exit).
_builders: set[subprocess.Popen[bytes]] = set()
_builders_lock = threading.Lock()


def _extension_name() -> str:
    return "pypto_torch_describe_" + re.sub(r"\W", "_", torch.__version__)


def _build_root() -> Path:
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root:
        return Path(os.path.abspath(root))
    import platformdirs

    return Path(platformdirs.user_cache_dir("pypto-torch", appauthor=False))


def _fix() -> str:
    return "set TORCH_EXTENSIONS_DIR to a directory only you can write"


def _digest() -> str:
    facts = hashlib.sha256(_SOURCE.read_bytes())
    for fact in (torch.__version__, sys.version, sysconfig.get_config_var("EXT_SUFFIX") or "", *_CFLAGS):
        facts.update(b"\0" + str(fact).encode())
    return facts.hexdigest()[:16]


@contextlib.contextmanager
def _build_lock(root: Path, build: str) -> Iterator[int]:
    """Hold the build's fcntl lock (``<root>/<build>.lock``, never through a symlink); yields
    its fd (a build child inherits it, so the lock lasts while either process lives)."""
    fd = open_private(root / f"{build}.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _load_module(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the native describe_call extension from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _published(root: Path, build: str, name: str) -> Path | None:
    """The published build's ``.so`` after checking it, or None when there is none."""
    directory = root / build
    try:
        check_private_dir(directory, fix=f"remove it (`rm -r {directory}`)")
    except FileNotFoundError:
        return None
    library = directory / f"{name}.so"  # torch's extension builder names it so on Linux
    try:
        check_file(library)
    except FileNotFoundError:
        raise UnsafeBuildDirectory(
            directory, f"has no {library.name}", f"remove it (`rm -r {directory}`)"
        ) from None
    return library


def _run_builder(name: str, directory: Path, lock_fd: int, verbose: bool) -> None:
    """Compile into ``directory`` in a child process (see :mod:`pypto.torch._native_build`);
    raises RuntimeError with the end of its output when it fails."""
    code = f"import runpy; runpy.run_path({str(_BUILDER)!r}, run_name='__main__')"
    args = [str(os.getpid()), str(lock_fd), str(directory), name, str(_SOURCE), "1" if verbose else "0"]
    with _builders_lock:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            cwd=directory,
            pass_fds=(lock_fd,),
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=None if verbose else subprocess.PIPE,
            stderr=None if verbose else subprocess.STDOUT,
        )
        _builders.add(proc)
    try:
        output, _ = proc.communicate()
    finally:
        with _builders_lock:
            _builders.discard(proc)
    if proc.returncode != 0:
        tail = (output or b"").decode(errors="replace")[-2000:]
        raise RuntimeError(
            f"building the native describe_call extension failed (exit {proc.returncode}): {tail}"
        )


def _stop_builders() -> None:
    """Stop every running build and wait for it (at interpreter exit): the child kills its
    compilers and removes its private directory."""
    with _builders_lock:
        running = list(_builders)
    for proc in running:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
    for proc in running:
        _wait_or_kill(proc)


def _wait_or_kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


atexit.register(_stop_builders)


def _obtain(verbose: bool) -> Any:
    """Load the published build, building and publishing it first if there is none."""
    root = _build_root()
    ensure_private_dir(root, fix=_fix())
    name = _extension_name()
    build = f"{name}-{_digest()}"
    library = _published(root, build, name)
    if library is None:
        with _build_lock(root, build) as lock_fd:
            library = _published(root, build, name)  # another process may have finished it
            if library is None:
                for stale in root.glob(f".{build}.*"):  # left by a build killed mid-way
                    shutil.rmtree(stale, ignore_errors=True)
                staging = Path(tempfile.mkdtemp(prefix=f".{build}.", dir=root))
                try:
                    _run_builder(name, staging, lock_fd, verbose)
                    if not (staging / f"{name}.so").is_file():
                        raise RuntimeError(f"the native describe_call build made no {name}.so")
                    os.rename(staging, root / build)
                except BaseException:
                    shutil.rmtree(staging, ignore_errors=True)
                    raise
                library = _published(root, build, name)
                if library is None:
                    raise RuntimeError(f"the native describe_call build vanished from {root / build}")
    return _load_module(name, library)


def build_native(*, verbose: bool = False) -> bool:
    """Build (or load a published build of) the native ``describe_call`` fast path.

    Every :class:`~pypto.torch.CallSignature` on a simulator platform, existing or made later,
    then describes its common calls natively. The first build takes about 25 s of CPU and
    needs a C++ compiler and ninja; later processes load the published build in well under a
    second. ``pypto.torch.init`` calls it on a background thread (see the module docstring).

    Args:
        verbose: Show the compiler's output.

    Returns:
        True if the native path is in use; False if the build or import failed or the build
        directory is not trusted (the reason, naming the path and the fix, is
        :func:`native_error`), in which case the Python fast path stays in use.
    """
    with _lock:
        if _state.module is None:
            try:
                _state.module = _obtain(verbose)
                _state.error = None
            except Exception as exc:  # any build or import failure leaves the Python path in use
                _state.error = f"{type(exc).__name__}: {exc}"
                return False
        waiting = list(_waiting)
        _waiting.clear()
    for signature in waiting:
        signature._use_native()
    return True


def build_native_in_background() -> threading.Thread | None:
    """Start :func:`build_native` on a daemon thread, once per process.

    Returns the thread (the running or finished one if already started), or None when the
    native path is already in use. Signatures switch to the native path when it completes.
    """
    if _state.module is not None:
        return None
    with _start_lock:  # not _lock: build_native holds that for the whole build
        if _state.background is None:
            _state.background = threading.Thread(
                target=build_native, name="pypto-torch-native-describe", daemon=True
            )
            _state.background.start()
        return _state.background


def loaded_module() -> Any:
    """The loaded extension module (describe, pin, unpin), or None until :func:`build_native`
    has succeeded in this process."""
    return _state.module


def native_error() -> str | None:
    """Why the last :func:`build_native` failed, or None."""
    return _state.error


def native_describe(
    signature: Any, plan: tuple[Any, ...], general: Callable[[Sequence[object]], Any]
) -> Callable[[Sequence[object]], Any] | None:
    """The native describe_call of one signature (None until :func:`build_native` succeeded;
    the signature is then switched over when it does)."""
    module = _state.module
    if module is None:
        _waiting.add(signature)
        # build_native sets the module before it reads the waiting set: a build finishing
        # between the two lines above is seen here, and one finishing later switches this one.
        module = _state.module
        if module is None:
            return None
        _waiting.discard(signature)
    return functools.partial(module.describe_or, plan, general)
