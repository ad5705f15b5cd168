"""Control constructs of the kernel language: ``pl.range`` loops and ``pl.at`` scopes.

Like the ops, these are read by the parser and never run as Python, except ``pl.range`` in a
``@pl.jit.host`` body (host Python).
"""

from __future__ import annotations

import builtins
import enum
from dataclasses import dataclass
from typing import Any

from pypto.ir.types import Level, SplitMode
from pypto.language.host_trace import active_trace

__all__ = [
    "CrossCoreSlot",
    "ScopeMode",
    "Split",
    "aic_gather",
    "aiv_shard",
    "at",
    "cluster",
    "cond",
    "cross_core_slot",
    "dump_tag",
    "get_subblock_idx",
    "manual_scope",
    "max",
    "min",
    "no_dep",
    "parallel",
    "pipeline",
    "range",
    "scope",
    "split",
    "split_aiv",
    "spmd",
    "spmd_submit",
    "static_assert",
    "static_print",
    "submit",
    "unroll",
    "while_",
    "yield_",
]


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


def pipeline(*args: Any, stage: int, init_values: Any = None) -> Any:
    """``for i in pl.pipeline(n, stage=2)``: a loop over ``pl.range``'s bounds whose ``stage``
    (a positive integer constant) asks an NPU backend to overlap that many iterations (ping-pong
    buffers). On the simulated chip iterations run in order, as for ``pl.range``; the stage is
    kept on the IR loop (``ir/lowered.txt``) and as a comment in the kernel's C++.
    """
    raise RuntimeError("pl.pipeline() runs only inside a kernel body, which the compiler parses")


pipeline.__pypto_dsl__ = "range"  # type: ignore[attr-defined]
pipeline.__pypto_pipeline__ = True  # type: ignore[attr-defined]


def unroll(*args: Any) -> Any:
    """``for i in pl.unroll(n)``: compiled like ``pl.range`` (the C++ compiler decides unrolling)."""
    raise RuntimeError("pl.unroll() runs only inside a kernel body, which the compiler parses")


unroll.__pypto_dsl__ = "range"  # type: ignore[attr-defined]


def yield_(*values: Any) -> Any:
    """``x = pl.yield_(v)`` ends an iteration of ``pl.range(..., init_values=(...))``: the
    loop-carried names take ``values`` for the next iteration (and after the loop)."""
    raise RuntimeError("pl.yield_() runs only inside a kernel body, which the compiler parses")


yield_.__pypto_dsl__ = "yield_"  # type: ignore[attr-defined]


def while_(*, init_values: Any) -> Any:
    """``for (x, ...) in pl.while_(init_values=(x0, ...)):`` — a while loop with its carried
    values spelled out: the body starts with ``pl.cond(condition)`` (the loop runs while it
    holds, tested before each iteration) and ends with ``x_next = pl.yield_(...)``, whose names
    hold the values after the loop. The same loop as a plain ``while condition:``."""
    raise RuntimeError("pl.while_() runs only inside a kernel body, which the compiler parses")


while_.__pypto_dsl__ = "while_"  # type: ignore[attr-defined]


def cond(condition: Any) -> Any:
    """``pl.cond(x < n)``: the condition of the ``pl.while_`` loop whose body it starts."""
    raise RuntimeError("pl.cond() runs only inside a kernel body, which the compiler parses")


cond.__pypto_dsl__ = "cond"  # type: ignore[attr-defined]


def at(
    level: Level = Level.CORE_GROUP,
    name_hint: str | None = None,
    deps: Any = None,
    *,
    optimizations: Any = None,
    no_dep_args: Any = None,
    dumps: Any = None,
    allow_early_resolve: bool = False,
) -> Any:
    """``with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1", deps=[tid]) as tid:``

    The body becomes one InCore kernel task submitted by the orchestration; ``as tid`` binds
    the task's id so a later scope can name it in ``deps``.

    ``optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]`` and
    ``no_dep_args=[t]`` (tensors the scope captures whose dependency tracking the author
    waives) are hints: validated, recorded in the kernel's ``hints`` in compiled metadata; the
    simulated chip runs the kernel whole and keeps every dependency (docs/pypto-ir.md).
    ``dumps=[t]`` marks captured tensors for a selective tensor dump of this task (recorded on
    the kernel call, as ``pl.dump_tag`` does; the simulated chip has no tensor dump).
    ``allow_early_resolve=True`` (as for ``pl.submit``) lets the runtime release the task's
    dependants before it finishes; checked, and the simulated runtime keeps every dependency.

    The parser binds each ``pl.at(...)`` call against this signature.
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


def dump_tag(tensor: Any) -> None:
    """``pl.dump_tag(t)`` in an orchestration: mark the tensor ``t`` for a selective tensor dump.

    Every later kernel call (``self.kernel(...)``, ``pl.submit``) that takes this value of ``t``
    records it in the call's ``dumps`` (``dumps=[t]`` in the IR text); a name rebound afterwards
    is a new value, not marked. ``pl.submit(..., dumps=[t])`` marks it for that one task. The
    simulated chip has no tensor dump: the marks are recorded in the IR and change nothing.
    """
    raise RuntimeError("pl.dump_tag() runs only inside a kernel-language body, which the compiler parses")


dump_tag.__pypto_dsl__ = "dump_tag"  # type: ignore[attr-defined]


def static_assert(condition: Any, message: str = "") -> None:
    """``pl.static_assert(n % 16 == 0, "n must be a multiple of 16")``: check at compile time.

    ``condition`` must be known while the kernel is compiled (constants, closure values,
    static dimensions); a false condition is a compile error at this line with ``message``
    (a string literal). It produces no IR and checks nothing at run time.
    """
    raise RuntimeError("pl.static_assert() runs only inside a kernel body, which the compiler parses")


static_assert.__pypto_dsl__ = "static_assert"  # type: ignore[attr-defined]


def func_attr(attrs: dict[str, Any]) -> None:
    """``pl.func_attr({"stationary": w, "split": pl.SplitMode.UP_DOWN})``: attributes of the whole
    function, written as the first statements of its body (after the parameters are bound, so a
    value may name a parameter).

    Keys are string literals; a value is a parameter name (recorded as a reference to that
    parameter), or a constant known at compile time (int, float, bool, str, a ``pl`` enum
    member). Every call must come before any other statement; several calls merge, and a key
    given twice is an error. The attributes are kept on the IR function (its text and
    ``as_python``) and, for a kernel, in the metadata (``kernels[i].attrs``). They are hints for
    device backends: nothing on the simulated chip reads them.
    """
    raise RuntimeError("pl.func_attr() runs only inside a kernel body, which the compiler parses")


func_attr.__pypto_dsl__ = "func_attr"  # type: ignore[attr-defined]


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


def spmd(
    core_num: int,
    sync_start: bool = False,
    *,
    name_hint: str | None = None,
    deps: Any = None,
    optimizations: Any = None,
    allow_early_resolve: bool = False,
) -> Any:
    """``with pl.spmd(core_num=n):`` or ``for i in pl.spmd(n):`` in an orchestration: one SPMD
    launch of ``n`` blocks (0..n-1).

    A body that calls kernels submits each of them ``n`` times; a kernel reads its block with
    ``pl.tile.get_block_idx()`` and the count with ``pl.tile.get_block_num()``. A body of
    kernel code (loads, tile ops, stores) is itself the kernel, as in ``pl.at``: it reads its
    block as the loop variable ``i`` (or ``pl.tile.get_block_idx()``), and ``name_hint``,
    ``deps`` and ``optimizations`` mean what they mean for ``pl.at`` (they are refused for a
    body that calls kernels). On the simulator the blocks are ``n`` tasks (ordered by the
    tensors they share, as any tasks); ``sync_start`` and ``allow_early_resolve`` (a scheduling
    hint: consumers may be staged before this launch completes) are checked to be bools and have
    no effect there."""
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


def split_aiv(n: int, *, mode: SplitMode) -> Any:
    """``for lane in pl.split_aiv(2, mode=pl.SplitMode.<mode>):`` in a kernel, a ``pl.at`` scope or
    an orchestration (where the loop is a kernel of its own): the body once per vector lane of a
    core group, ``lane`` (also ``pl.tile.get_subblock_idx()``) 0 and then 1; the body addresses
    its lane's part of the data with ``lane``. With ``UP_DOWN`` / ``LEFT_RIGHT``, ``pl.aiv_shard``
    gives each lane its half (rows / columns) of a value from the cube and ``pl.aic_gather`` joins
    the lanes' halves; with ``NONE`` both pass values whole. The simulator runs lane 0, then
    lane 1."""
    if isinstance(n, bool) or n != 2:
        raise ValueError(f"pl.split_aiv(n): n must be the integer 2 (the two vector lanes), got {n!r}")
    raise RuntimeError("pl.split_aiv is the iterable of a for statement in a kernel-language body")


def aiv_shard(x: Any) -> Any:
    """In a ``pl.split_aiv`` loop: ``x`` (a cube result, moved to Vec) as this lane reads it: its
    half (rows for ``UP_DOWN``, columns for ``LEFT_RIGHT``), or all of it for ``NONE``."""
    raise RuntimeError("pl.aiv_shard is read inside a pl.split_aiv loop of a kernel-language body")


def aic_gather(x: Any) -> Any:
    """In a ``pl.split_aiv`` loop: the lanes' values handed to the cube. With ``UP_DOWN`` /
    ``LEFT_RIGHT`` the whole tile, lane 0's half then lane 1's (read it after the loop); with
    ``NONE`` the value itself (both lanes must hold the same value, as on the chip)."""
    raise RuntimeError("pl.aic_gather is read inside a pl.split_aiv loop of a kernel-language body")


def get_subblock_idx() -> Any:
    """In a ``pl.split_aiv`` loop: this vector lane's index (0 or 1), the loop variable."""
    raise RuntimeError("pl.tile.get_subblock_idx is read inside a pl.split_aiv loop")


split_aiv.__pypto_dsl__ = "split_aiv"  # type: ignore[attr-defined]
aiv_shard.__pypto_lane__ = "aiv_shard"  # type: ignore[attr-defined]
aic_gather.__pypto_lane__ = "aic_gather"  # type: ignore[attr-defined]
get_subblock_idx.__pypto_lane__ = "get_subblock_idx"  # type: ignore[attr-defined]
spmd.__pypto_dsl__ = "spmd"  # type: ignore[attr-defined]
cluster.__pypto_dsl__ = "cluster"  # type: ignore[attr-defined]
get_block_idx.__pypto_block__ = 0  # type: ignore[attr-defined]
get_block_num.__pypto_block__ = 1  # type: ignore[attr-defined]


def manual_scope() -> Any:
    """``with pl.manual_scope():`` in an orchestration: a runtime scope whose tasks are ordered
    by the ``deps=`` they name (``pl.submit(..., deps=[...])``, ``pl.system.task_dummy``).

    On the simulated chip the scope is a nested runtime scope (its tasks use the next ring), and
    the chip's tensor-overlap rule stays on inside it: the explicit edges are added to the
    inferred ones, so a task waits for at least what it names.
    """
    raise RuntimeError("pl.manual_scope() runs only inside an orchestration body, which the compiler parses")


manual_scope.__pypto_dsl__ = "manual_scope"  # type: ignore[attr-defined]


class ScopeMode(enum.Enum):
    """The mode of ``pl.scope(mode=...)``: ``AUTO`` (the runtime infers the order of the scope's
    tasks from the tensors they touch) or ``MANUAL`` (``pl.manual_scope()``)."""

    AUTO = "auto"
    MANUAL = "manual"


def scope(*, mode: ScopeMode = ScopeMode.AUTO) -> Any:
    """``with pl.scope():`` in an orchestration: a nested runtime scope of its tasks.

    ``mode=pl.ScopeMode.MANUAL`` is ``pl.manual_scope()``. The default ``AUTO`` scope belongs in an
    orchestration that places its runtime scopes by hand, ``@pl.function(..., auto_scope=False)``
    (elsewhere the whole body already is one automatic scope). On the simulated chip each is a
    nested runtime scope whose tasks use the next ring.
    """
    raise RuntimeError("pl.scope() runs only inside an orchestration body, which the compiler parses")


scope.__pypto_dsl__ = "scope"  # type: ignore[attr-defined]


def no_dep(tensor: Any) -> Any:
    """``self.kernel(x, pl.no_dep(out))``: a kernel call's argument whose dependency tracking the
    author waives (as ``pl.at(no_dep_args=[t])`` does for a scope). Taken only as a direct
    argument of a kernel call. A hint: the simulated runtime keeps every dependency, so the
    call is the same as ``self.kernel(x, out)``."""
    raise RuntimeError("pl.no_dep() marks a kernel call's argument inside a kernel-language body")


no_dep.__pypto_dsl__ = "no_dep"  # type: ignore[attr-defined]


def submit(kernel: Any, *args: Any, deps: Any = None, allow_early_resolve: bool = False) -> Any:
    """``out, tid = pl.submit(self.kernel, a, b, out, deps=[t0, tids])`` in a ``@pl.program``
    orchestration: call the kernel as one task and also bind its task id.

    ``deps`` lists task ids and ``pl.array``s of task ids (entries never set are skipped).
    ``allow_early_resolve`` (a scheduling hint) is checked to be a bool and has no effect on the
    simulator.
    The values are what the kernel returns followed by the task id.
    """
    raise RuntimeError("pl.submit() runs only inside an orchestration body, which the compiler parses")


submit.__pypto_dsl__ = "submit"  # type: ignore[attr-defined]


def spmd_submit(
    kernel: Any,
    *args: Any,
    core_num: int,
    sync_start: bool = False,
    deps: Any = None,
    allow_early_resolve: bool = False,
) -> Any:
    """``out, tid = pl.spmd_submit(self.kernel, a, out, core_num=n, deps=[t0])`` in an
    orchestration: one SPMD launch of the kernel (``n`` blocks, as ``with pl.spmd(n):`` around
    the call) whose task id ``tid`` is ready once every block has finished; ``deps`` order every
    block after those tasks. The values are what the kernel returns followed by the task id."""
    raise RuntimeError("pl.spmd_submit() runs only inside an orchestration body, which the compiler parses")


spmd_submit.__pypto_dsl__ = "spmd_submit"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Split:
    """A ``pl.split(mode)`` entry of ``pl.at(optimizations=[...])``."""

    mode: SplitMode


def split(mode: SplitMode, *, slot_num: int | None = None) -> Split:
    """``pl.at(..., optimizations=[pl.split(pl.SplitMode.UP_DOWN)])``: ask for a mixed cube +
    vector scope to be halved by rows (``UP_DOWN``) or columns (``LEFT_RIGHT``) between the
    vector cores. A hint recorded in the kernel's metadata; the simulator runs the scope whole.
    ``slot_num=n`` is upstream PyPTO's older spelling of ``pl.cross_core_slot(slot_num=n)``: taken
    as that entry, with a DeprecationWarning."""
    if not isinstance(mode, SplitMode):
        raise TypeError(f"pl.split(mode): expected a pl.SplitMode, got {mode!r}")
    return Split(mode)


split.__pypto_dsl__ = "split"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class CrossCoreSlot:
    """A ``pl.cross_core_slot(slot_num=n)`` entry of ``pl.at(optimizations=[...])``."""

    slot_num: int


def cross_core_slot(*, slot_num: int) -> CrossCoreSlot:
    """``pl.at(..., optimizations=[pl.cross_core_slot(slot_num=4)])``: the depth of the ring
    that carries tiles between the cube and the vector cores of a mixed scope. A hint recorded
    in the kernel's metadata; the simulator has no such ring."""
    if not isinstance(slot_num, int) or isinstance(slot_num, bool) or slot_num <= 0:
        raise ValueError(f"pl.cross_core_slot(slot_num): expected a positive int, got {slot_num!r}")
    return CrossCoreSlot(slot_num)


cross_core_slot.__pypto_dsl__ = "cross_core_slot"  # type: ignore[attr-defined]
