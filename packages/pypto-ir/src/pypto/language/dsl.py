"""Control constructs of the kernel language: ``pl.range`` loops and ``pl.at`` scopes.

Like the ops, these are read by the parser and never run as Python.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.types import Level

__all__ = ["at", "parallel", "range", "unroll", "yield_"]


def range(*args: Any) -> Any:
    """``for i in pl.range(stop)`` / ``pl.range(start, stop[, step])``: a device loop.

    Bounds may be constants, loop variables, scalar parameters or dynamic extents.
    """
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
