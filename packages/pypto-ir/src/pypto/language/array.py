"""``pl.array``: fixed-length arrays of task ids in an orchestration.

``tids = pl.array.create(n, pl.TASK_ID)`` makes one with no entry set; ``tids[i] = tid`` sets
entry ``i`` (a new array value, carried through loops like any other), ``tids[i]`` reads it, and
``deps=[tids]`` waits for every entry that has been set.
"""

from typing import Any

from pypto.ir.ops import LANGUAGE
from pypto.language import ops as _ops

__all__ = ["create"]

create = _ops.make_op(LANGUAGE["array_create"])
create.__name__ = create.__qualname__ = "create"


def __getattr__(name: str) -> Any:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; pl.array has: create")
