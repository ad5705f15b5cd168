"""The ``pld`` functions of the cross-rank operations, made from their op-table entries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pypto.ir.ops import LANGUAGE
from pypto.language import ops as _ops


def comm_op(table_name: str) -> Callable[..., Any]:
    """``pld.<...>`` for op-table entry ``table_name`` (named as users write it)."""
    fn = _ops.make_op(LANGUAGE[table_name])
    fn.__name__ = fn.__qualname__ = LANGUAGE[table_name].spelled.rsplit(".", 1)[1]
    fn.__module__ = "pypto.language.distributed"
    return fn


get_comm_ctx = comm_op("get_comm_ctx")
rank = comm_op("comm_rank")
nranks = comm_op("comm_nranks")
notify = comm_op("notify")
wait = comm_op("wait")
barrier = comm_op("barrier")
remote_load = comm_op("remote_load")
remote_store = comm_op("remote_store")
put = comm_op("put")
get = comm_op("get")
allreduce = comm_op("allreduce")
broadcast = comm_op("broadcast")
allgather = comm_op("allgather")
reduce_scatter = comm_op("reduce_scatter")
all_to_all = comm_op("all_to_all")
all_to_all_v = comm_op("all_to_all_v")
defer_wait = comm_op("defer_wait")
