"""The native fast path of ``CallSignature.describe_call``, built on request against this torch.

``_native_describe.cpp`` makes the checks of the generated Python fast path
(:mod:`pypto.torch._fast_describe`) on the ``at::Tensor`` fields directly and builds the frame's
records in C, for platforms whose device memory is CPU memory (the simulators). Like the Python
fast path it takes the common call only and answers None for anything else, which then goes to
the general path; so the general path alone decides errors and their messages.

It is compiled with torch's own extension builder (``torch.utils.cpp_extension.load``) into
``$TORCH_EXTENSIONS_DIR/<name>`` (default ``<user cache dir>/pypto-torch/<name>``), under a name
that carries the torch version; torch rebuilds it when the source changes. The first build takes
about 25 s of CPU (30 s wall on a quiet 2-core machine); a cached one loads in well under a
second. :func:`build_native` builds or loads it, once per process. ``pypto.torch.init`` on a
simulator starts :func:`build_native` on a background thread (:func:`build_native_in_background`)
unless ``PYPTO_NATIVE_DESCRIBE=0``; until it is done, or if it fails, every signature keeps the
Python fast path.

A build runs under an ``fcntl`` lock in its directory. The kernel drops that lock when its holder
dies, so torch's own lock file found while holding it was left by a killed build (a process that
exited while its background build ran) and is removed instead of being waited on forever.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = ["build_native", "build_native_in_background", "native_describe", "native_error"]

_SOURCE = Path(__file__).with_name("_native_describe.cpp")


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


def _extension_name() -> str:
    return "pypto_torch_describe_" + re.sub(r"\W", "_", torch.__version__)


def _build_directory(name: str) -> Path:
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root:
        base = Path(root)
    else:
        import platformdirs

        base = Path(platformdirs.user_cache_dir("pypto-torch", appauthor=False))
    directory = base / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@contextlib.contextmanager
def _build_lock(directory: Path) -> Iterator[None]:
    """Hold the directory's fcntl lock; remove a torch lock file a killed build left behind."""
    fd = os.open(directory / "pypto-build.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        (directory / "lock").unlink(missing_ok=True)  # torch's FileBaton; no live holder now
        yield
    finally:
        os.close(fd)


def build_native(*, verbose: bool = False) -> bool:
    """Build (or load from torch's extension cache) the native ``describe_call`` fast path.

    Every :class:`~pypto.torch.CallSignature` on a simulator platform, existing or made later,
    then describes its common calls natively. The first build takes about 25 s of CPU and
    needs a C++ compiler and ninja; later processes load the cached build in well under a
    second. ``pypto.torch.init`` calls it on a background thread (see the module docstring).

    Args:
        verbose: Show the compiler's output.

    Returns:
        True if the native path is in use; False if the build or import failed (the reason is
        :func:`native_error`), in which case the Python fast path stays in use.
    """
    with _lock:
        if _state.module is None:
            try:
                from torch.utils.cpp_extension import load

                name = _extension_name()
                directory = _build_directory(name)
                with _build_lock(directory):
                    _state.module = load(
                        name=name,
                        sources=[str(_SOURCE)],
                        extra_cflags=["-O2"],
                        build_directory=str(directory),
                        verbose=verbose,
                    )
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
    describe = module.describe

    def describe_call(args: Sequence[object]) -> Any:
        frame = describe(plan, args)
        return general(args) if frame is None else frame

    return describe_call
