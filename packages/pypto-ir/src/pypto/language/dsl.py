"""Control constructs of the kernel language: ``pl.range`` loops and ``pl.at`` scopes.

Like the ops, these are read by the parser and never run as Python, except ``pl.range`` in a
``@pl.jit.host`` body (host Python).
"""

from __future__ import annotations

import builtins
from typing import Any

from pypto.ir.types import Level
from pypto.language.host_trace import active_trace

__all__ = ["at", "parallel", "range", "static_assert", "static_print", "unroll", "yield_"]


def range(*args: Any) -> Any:
    """``for i in pl.range(stop)`` / ``pl.range(start, stop[, step])``: a device loop.

    Bounds may be constants, loop variables, scalar parameters or dynamic extents. In a
    ``@pl.jit.host`` body, which runs as Python on the host, it is Python's ``range``.
    """
    if active_trace() is not None:
        return builtins.range(*args)
    raise RuntimeError("pl.range() runs only inside a kernel body, which the compiler parses")


range.__pypto_dsl__ = "range"  # type: ignore[attr-defined]


def parallel(*args: Any) -> Any:
    """``for i in pl.parallel(n)``: a loop whose iterations are independent.

    Compiled like ``pl.range``: in an orchestration the runtime already overlaps tasks that
    do not depend on each other; in a kernel the loop runs in order.
    """
    raise RuntimeError("pl.parallel() runs only inside a kernel body, which the compiler parses")


parallel.__pypto_dsl__ = "range"  # type: ignore[attr-defined]


def unroll(*args: Any) -> Any:
    """``for i in pl.unroll(n)``: compiled like ``pl.range`` (the C++ compiler decides unrolling)."""
    raise RuntimeError("pl.unroll() runs only inside a kernel body, which the compiler parses")


unroll.__pypto_dsl__ = "range"  # type: ignore[attr-defined]


def yield_(*values: Any) -> Any:
    """``x = pl.yield_(v)`` ends an iteration of ``pl.range(..., init_values=(...))``: the
    loop-carried names take ``values`` for the next iteration (and after the loop)."""
    raise RuntimeError("pl.yield_() runs only inside a kernel body, which the compiler parses")


yield_.__pypto_dsl__ = "yield_"  # type: ignore[attr-defined]


def _at_signature(level: Level = Level.CORE_GROUP, name_hint: str | None = None, deps: Any = None) -> None:
    """The arguments ``pl.at`` accepts (the parser binds calls against this)."""


def at(level: Level = Level.CORE_GROUP, name_hint: str | None = None, deps: Any = None) -> Any:
    """``with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1", deps=[tid]) as tid:``

    The body becomes one InCore kernel task submitted by the orchestration; ``as tid`` binds
    the task's id so a later scope can name it in ``deps``.
    """
    raise RuntimeError("pl.at() runs only inside a @pl.jit body, which the compiler parses")


at.__pypto_dsl__ = "at"  # type: ignore[attr-defined]


def static_print(*args: Any) -> None:
    """``pl.static_print("x is", x)``: print at compile time (while the parser reads the kernel).

    Each argument prints as itself when it is a string, as ``name: <type>`` when it is a
    value of the kernel (tensor, tile, scalar), and as its value when it is a compile-time
    constant; f-strings with plain ``{expr}`` fields format each field the same way. The
    line is tagged ``static_print [file:line]``. It produces no IR: a ``@pl.jit`` function
    prints when it is specialised (its first call with new shapes), not when it runs.
    """
    raise RuntimeError("pl.static_print() runs only inside a kernel body, which the compiler parses")


static_print.__pypto_dsl__ = "static_print"  # type: ignore[attr-defined]


def static_assert(condition: Any, message: str = "") -> None:
    """``pl.static_assert(n % 16 == 0, "n must be a multiple of 16")``: check at compile time.

    ``condition`` must be known while the kernel is compiled (constants, closure values,
    static dimensions); a false condition is a compile error at this line with ``message``
    (a string literal). It produces no IR and checks nothing at run time.
    """
    raise RuntimeError("pl.static_assert() runs only inside a kernel body, which the compiler parses")


static_assert.__pypto_dsl__ = "static_assert"  # type: ignore[attr-defined]
