"""The native fast path of ``CallSignature.describe_call``, built on request against this torch.

``_native_describe.cpp`` makes the checks of the generated Python fast path
(:mod:`pypto.torch._fast_describe`) on the ``at::Tensor`` fields directly and builds the frame's
records in C, for platforms whose device memory is CPU memory (the simulators). Like the Python
fast path it takes the common call only and answers None for anything else, which then goes to
the general path; so the general path alone decides errors and their messages.

It is compiled with torch's own extension builder (``torch.utils.cpp_extension.load``) into
torch's extensions directory (``TORCH_EXTENSIONS_DIR``, by default under ``~/.cache``), under a
name that carries the torch version; torch rebuilds it when the source changes. A build takes
about 25 s of CPU (30 s wall on a quiet 2-core machine), so nothing builds it implicitly: :func:`build_native` does, once per
process (quickly when the build is cached). If it is never called, or the build or import fails,
every signature keeps the Python fast path.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = ["build_native", "native_describe", "native_error"]

_SOURCE = Path(__file__).with_name("_native_describe.cpp")


class _State:
    """The loaded extension module (None until built) and the last build failure."""

    module: Any = None
    error: str | None = None


_lock = threading.Lock()
_state = _State()
# Signatures to switch to the native path once it is built (weak: they live with their callers).
_waiting: weakref.WeakSet[Any] = weakref.WeakSet()


def _extension_name() -> str:
    return "pypto_torch_describe_" + re.sub(r"\W", "_", torch.__version__)


def build_native(*, verbose: bool = False) -> bool:
    """Build (or load from torch's extension cache) the native ``describe_call`` fast path.

    Every :class:`~pypto.torch.CallSignature` on a simulator platform, existing or made later,
    then describes its common calls natively. The first build takes about 25 s of CPU and
    needs a C++ compiler and ninja; later processes load the cached build in well under a
    second. Never called implicitly.

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

                _state.module = load(
                    name=_extension_name(),
                    sources=[str(_SOURCE)],
                    extra_cflags=["-O2"],
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
