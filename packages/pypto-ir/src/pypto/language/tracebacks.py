"""Compile errors and argument errors shown as the user's error, without pypto's frames.

A :class:`~pypto.ir.errors.PyptoCompileError` raised while a kernel is compiled carries all a
user needs (``file:line:col``, the source line, the caret, the fix). So does an argument error
of a call (a float64 array for an FP32 parameter, a missing argument, a strided view): the
binder names the parameter, what was expected and what was found. Such an error is a
*user error*: a compile error, an exception whose class sets :data:`USER_ERROR_ATTR` true
(pypto-runtime's ``TensorBindingError``), or one marked by :func:`mark_user_error` where it is
raised. The entry points a user calls (``@pl.jit`` calls, ``specialize``, ``lower``,
``@pl.program``, ``pypto.runtime.compile``, a compiled program's call) re-raise a user error
with the traceback cut at that entry point, so what is printed is the user's own call and the
error, not the binder's, the parser's and the passes' frames. Any other exception keeps its
whole traceback. Setting ``PYPTO_FULL_TRACEBACK=1`` keeps the whole traceback of user errors
too (for work on pypto itself).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

from pypto.ir.errors import PyptoCompileError

__all__ = [
    "FULL_TRACEBACK_ENV",
    "USER_ERROR_ATTR",
    "full_traceback",
    "is_user_error",
    "mark_user_error",
    "marks_user_errors",
    "user_facing",
]

FULL_TRACEBACK_ENV = "PYPTO_FULL_TRACEBACK"
USER_ERROR_ATTR = "pypto_user_error"
"""An exception class (or instance) with this attribute true is a user error."""

E = TypeVar("E", bound=BaseException)

F = TypeVar("F", bound=Callable[..., Any])


def full_traceback() -> bool:
    """Whether user errors keep pypto's frames (``PYPTO_FULL_TRACEBACK`` set, not 0)."""
    return os.environ.get(FULL_TRACEBACK_ENV, "").strip() not in ("", "0")


def mark_user_error(exc: E) -> E:
    """Mark ``exc`` a user error (its message says what is wrong with the call); returns it."""
    setattr(exc, USER_ERROR_ATTR, True)
    return exc


def is_user_error(exc: BaseException) -> bool:
    """Whether an entry point shows ``exc`` without pypto's frames."""
    return isinstance(exc, PyptoCompileError) or getattr(exc, USER_ERROR_ATTR, False) is True


def marks_user_errors(fn: F) -> F:
    """Decorate a binder: a ``TypeError`` or ``ValueError`` leaving it is a user error."""

    @functools.wraps(fn)
    def binder(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            mark_user_error(exc)
            raise

    return binder  # type: ignore[return-value]


def user_facing(fn: F) -> F:
    """Decorate an entry point: a user error leaves it with no frames below it."""

    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if not is_user_error(exc) or full_traceback():
                raise
            # Below this frame there are only pypto's frames, and the message says where the
            # mistake is; an internal cause is dropped too (PYPTO_FULL_TRACEBACK keeps both).
            raise exc.with_traceback(None) from None

    return entry  # type: ignore[return-value]
