"""``pl.system``: orchestration-level task helpers (``pl.system.task_dummy``)."""

from typing import Any

from pypto.ir.ops import LANGUAGE
from pypto.language import ops as _ops

__all__ = ["task_dummy"]

task_dummy = _ops.make_op(LANGUAGE["task_dummy"])
task_dummy.__name__ = task_dummy.__qualname__ = "task_dummy"


def __getattr__(name: str) -> Any:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; pl.system has: task_dummy")
