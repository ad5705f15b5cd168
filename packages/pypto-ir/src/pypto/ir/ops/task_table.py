"""The op table's task-graph entries: orchestration-only task-id arrays, dependency
barriers and manual runtime scopes."""

from __future__ import annotations

from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _enter
from pypto.ir.ops.spec import LangOp, OpSpec, Param, Rule

__all__: list[str] = []


def _task_op(
    name: str,
    params: tuple[Param, ...],
    doc: str,
    op: str,
    *,
    rule: Rule,
    arity: tuple[int, int],
    attrs: tuple[str, ...] = (),
) -> None:
    """Enter ``pl.<name>`` (not public: the parser emits it for a task-graph form) and its one
    orchestration-only IR op ``op``."""
    lo, hi = arity
    _enter(
        LangOp(name, params, doc, default=op, group="task graph", public=False),
        OpSpec(op, rule, lo, hi, attrs=attrs, on_core=False),
    )


_task_op(
    "array_create",
    (P("extent"), P("dtype")),
    """``pl.array.create(n, pl.TASK_ID)``: an array of ``n`` task ids held by the orchestration,
    none set yet. ``arr[i] = tid`` sets an entry, ``arr[i]`` reads one; an array in ``deps=[...]``
    stands for every entry that has been set.""",
    "array.create",
    rule=rules.array_create,
    arity=(0, 0),
    attrs=("extent", "elem"),
)
_task_op(
    "array_read",
    (),
    """``arr[i]``: entry ``i`` of a task-id array (-1, no task, when never set).""",
    "array.get",
    rule=rules.array_get,
    arity=(2, 2),
)
_task_op(
    "array_update",
    (),
    """``arr[i] = tid``: the array with entry ``i`` set (the name is rebound to the new value).""",
    "array.set",
    rule=rules.array_set,
    arity=(3, 3),
)
_task_op(
    "task_dummy",
    (P("deps"),),
    """``pl.system.task_dummy(deps=[...])``: a task that does no work and finishes once every
    dependency has; its id stands for the whole set in later ``deps=`` lists.""",
    "system.task_dummy",
    rule=rules.task_dummy,
    arity=(0, 1 << 16),
)
_task_op(
    "task_invalid",
    (),
    """``pl.system.task_invalid()``: the id of no task (``tid = None`` in an orchestration is
    the same), the "no producer yet" start of a chain of tasks; a ``deps=`` list skips it.""",
    "system.task_invalid",
    rule=rules.task_invalid,
    arity=(0, 0),
)
_task_op(
    "manual_scope_begin",
    (),
    """The start of ``with pl.manual_scope():`` (a nested runtime scope of the orchestration).""",
    "system.scope_begin",
    rule=rules.runtime_scope_mark,
    arity=(0, 0),
    attrs=("mode",),
)
_task_op(
    "manual_scope_end",
    (),
    """The end of ``with pl.manual_scope():``.""",
    "system.scope_end",
    rule=rules.runtime_scope_mark,
    arity=(0, 0),
    attrs=("mode",),
)
