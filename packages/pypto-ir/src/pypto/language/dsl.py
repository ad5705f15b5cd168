"""Control constructs of the kernel language: ``pl.range`` loops and ``pl.at`` scopes.

Like the ops, these are read by the parser and never run as Python.
"""

from __future__ import annotations

import builtins
from typing import Any

from pypto.ir.types import Level

__all__ = [
    "at",
    "cluster",
    "max",
    "min",
    "parallel",
    "range",
    "spmd",
    "static_assert",
    "static_print",
    "unroll",
    "yield_",
]


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


def min(a: Any, b: Any) -> Any:
    """The smaller of two scalars: ``pl.min(block, seq_len - start)``. In a kernel or an
    orchestration it is an index or float scalar expression (folded when both are constants);
    outside one it is Python's ``min``. For element-wise minima of tiles use ``pl.minimum``."""
    return builtins.min(a, b)


def max(a: Any, b: Any) -> Any:
    """The larger of two scalars (see :func:`min`); element-wise: ``pl.maximum``."""
    return builtins.max(a, b)


min.__pypto_scalar__ = "min"  # type: ignore[attr-defined]
max.__pypto_scalar__ = "max"  # type: ignore[attr-defined]


def spmd(core_num: int, sync_start: bool = False) -> Any:
    """``with pl.spmd(core_num=n):`` in an orchestration: each kernel call in the block is
    submitted ``n`` times, as blocks 0..n-1 of one SPMD launch; a kernel reads its block with
    ``pl.tile.get_block_idx()`` and the count with ``pl.tile.get_block_num()``. On the simulator
    the blocks are ``n`` tasks (ordered by the tensors they share, as any tasks);
    ``sync_start`` is accepted and has no effect there."""
    raise RuntimeError("pl.spmd is a with-statement of an orchestration function")


def cluster() -> Any:
    """``with pl.cluster():`` groups SPMD launches that run on one cluster of cube and vector
    cores; the simulator has no clusters, so the block runs as written."""
    raise RuntimeError("pl.cluster is a with-statement of an orchestration function")


def get_block_idx() -> Any:
    """In a kernel launched by ``pl.spmd``: this block's index (0 outside an SPMD launch)."""
    raise RuntimeError("pl.tile.get_block_idx is read in a kernel")


def get_block_num() -> Any:
    """In a kernel launched by ``pl.spmd``: the launch's block count (1 outside one)."""
    raise RuntimeError("pl.tile.get_block_num is read in a kernel")


spmd.__pypto_dsl__ = "spmd"  # type: ignore[attr-defined]
cluster.__pypto_dsl__ = "cluster"  # type: ignore[attr-defined]
get_block_idx.__pypto_block__ = 0  # type: ignore[attr-defined]
get_block_num.__pypto_block__ = 1  # type: ignore[attr-defined]
