"""The op table's task-graph entries: orchestration-only task-id arrays, dependency
barriers and manual runtime scopes."""

from __future__ import annotations

from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _enter
from pypto.ir.ops.spec import LangOp, OpSpec

__all__: list[str] = []


_enter(
    LangOp(
        "array_create",
        (P("extent"), P("dtype")),
        """``pl.array.create(n, pl.TASK_ID)``: an array of ``n`` task ids held by the orchestration,
    none set yet. ``arr[i] = tid`` sets an entry, ``arr[i]`` reads one; an array in ``deps=[...]``
    stands for every entry that has been set.""",
        default="array.create",
        group="task graph",
        public=False,
    ),
    OpSpec("array.create", rules.array_create, 0, 0, attrs=("extent", "elem"), on_core=False),
)
_enter(
    LangOp(
        "array_read",
        (),
        """``arr[i]``: entry ``i`` of a task-id array (-1, no task, when never set).""",
        default="array.get",
        group="task graph",
        public=False,
    ),
    OpSpec("array.get", rules.array_get, 2, 2, on_core=False),
)
_enter(
    LangOp(
        "array_update",
        (),
        """``arr[i] = tid``: the array with entry ``i`` set (the name is rebound to the new value).""",
        default="array.set",
        group="task graph",
        public=False,
    ),
    OpSpec("array.set", rules.array_set, 3, 3, on_core=False),
)
_enter(
    LangOp(
        "task_dummy",
        (P("deps"),),
        """``pl.system.task_dummy(deps=[...])``: a task that does no work and finishes once every
    dependency has; its id stands for the whole set in later ``deps=`` lists.""",
        default="system.task_dummy",
        group="task graph",
        public=False,
    ),
    OpSpec("system.task_dummy", rules.task_dummy, 0, 1 << 16, on_core=False),
)
_enter(
    LangOp(
        "task_invalid",
        (),
        """``pl.system.task_invalid()``: the id of no task (``tid = None`` in an orchestration is
    the same), the "no producer yet" start of a chain of tasks; a ``deps=`` list skips it.""",
        default="system.task_invalid",
        group="task graph",
        public=False,
    ),
    OpSpec("system.task_invalid", rules.task_invalid, 0, 0, on_core=False),
)
_enter(
    LangOp(
        "manual_scope_begin",
        (),
        """The start of ``with pl.manual_scope():`` (a nested runtime scope of the orchestration).""",
        default="system.scope_begin",
        group="task graph",
        public=False,
    ),
    OpSpec("system.scope_begin", rules.runtime_scope_mark, 0, 0, attrs=("mode",), on_core=False),
)
_enter(
    LangOp(
        "manual_scope_end",
        (),
        """The end of ``with pl.manual_scope():``.""",
        default="system.scope_end",
        group="task graph",
        public=False,
    ),
    OpSpec("system.scope_end", rules.runtime_scope_mark, 0, 0, attrs=("mode",), on_core=False),
)
