"""Compile errors shown as the user's error, without the compiler's frames.

A :class:`~pypto.ir.errors.PyptoCompileError` raised while a kernel is compiled carries all a
user needs (``file:line:col``, the source line, the caret, the fix). The entry points a user
calls (``@pl.jit`` calls, ``specialize``, ``lower``, ``@pl.program``, ``pypto.runtime.compile``)
re-raise it with the traceback cut at that entry point, so what is printed is the user's own
call and the error, not the parser's and the passes' frames. Setting ``PYPTO_FULL_TRACEBACK=1``
keeps the whole traceback (for work on pypto itself).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

from pypto.ir.errors import PyptoCompileError

__all__ = ["FULL_TRACEBACK_ENV", "full_traceback", "user_facing"]

FULL_TRACEBACK_ENV = "PYPTO_FULL_TRACEBACK"

F = TypeVar("F", bound=Callable[..., Any])


def full_traceback() -> bool:
    """Whether compile errors keep the compiler's frames (``PYPTO_FULL_TRACEBACK`` set, not 0)."""
    return os.environ.get(FULL_TRACEBACK_ENV, "").strip() not in ("", "0")


def user_facing(fn: F) -> F:
    """Decorate an entry point: a compile error leaves it with no frames below it."""

    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PyptoCompileError as exc:
            if full_traceback():
                raise
            # Below this frame there are only pypto's frames, and the message says where the
            # mistake is; an internal cause is dropped too (PYPTO_FULL_TRACEBACK keeps both).
            raise exc.with_traceback(None) from None

    return entry  # type: ignore[return-value]
