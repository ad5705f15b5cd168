"""The type rules of the task graph: arrays of task ids, a dummy task that joins
dependencies, and the marks of a ``pl.manual_scope()`` block."""

from __future__ import annotations

from typing import Any

from pypto.ir.ops.spec import OpError
from pypto.ir.types import ArrayType, ScalarType, TaskIdType, TupleType, Type


def array_create(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.array.create(n, pl.TASK_ID)``: ``n`` entries, none naming a task yet."""
    n, elem = attrs["extent"], attrs["elem"]
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise OpError(f"pl.array.create: extent must be a positive integer constant, got {n!r}")
    if not isinstance(elem, TaskIdType):
        raise OpError(f"pl.array.create: the element type must be pl.TASK_ID, got {elem!r}")
    return ArrayType(n, elem)


def _array(t: Type, op: str) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise OpError(f"{op}: expected a pl.array, got {t}")
    return t


def _index(t: Type, op: str) -> None:
    if not isinstance(t, ScalarType) or not (t.dtype.is_signed_int or t.dtype.is_unsigned_int):
        raise OpError(f"{op}: the index must be an integer scalar, got {t}")


def array_get(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``arr[i]``: entry ``i``."""
    a = _array(args[0], "array read arr[i]")
    _index(args[1], "array read arr[i]")
    return a.elem


def array_set(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``arr[i] = v``: the array with entry ``i`` replaced."""
    a = _array(args[0], "array update arr[i] = v")
    _index(args[1], "array update arr[i] = v")
    if args[2] != a.elem:
        raise OpError(f"array update arr[i] = v: arr holds {a.elem}, got a value of type {args[2]}")
    return a


def deps_entries(args: list[Type], op: str) -> None:
    """Each dependency is a task id or an array of them."""
    for k, t in enumerate(args):
        if not isinstance(t, (TaskIdType, ArrayType)):
            raise OpError(f"{op}: deps entry {k} must be a task id or a pl.array of task ids, got {t}")


def task_dummy(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.system.task_dummy(deps=[...])``: a task id ready once every dependency is."""
    deps_entries(args, "pl.system.task_dummy")
    return TaskIdType()


def task_invalid(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.system.task_invalid()`` (``tid = None`` in an orchestration): the id of no task, which
    a ``deps=`` list skips."""
    return TaskIdType()


def runtime_scope_mark(args: list[Type], attrs: dict[str, Any]) -> Type:
    """The start or end of a ``pl.manual_scope()`` block: a statement, no value."""
    return TupleType(())
