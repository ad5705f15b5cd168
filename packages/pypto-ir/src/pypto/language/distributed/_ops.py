"""The ``pld`` functions of the cross-rank operations, made from their op-table entries."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pypto.ir.ops import LANGUAGE
from pypto.language import ops as _ops
from pypto.language.host_trace import active_trace


def comm_op(table_name: str) -> Callable[..., Any]:
    """``pld.<...>`` for op-table entry ``table_name`` (named as users write it)."""
    fn = _ops.make_op(LANGUAGE[table_name])
    fn.__name__ = fn.__qualname__ = LANGUAGE[table_name].spelled.rsplit(".", 1)[1]
    fn.__module__ = "pypto.language.distributed"
    return fn


def collective(table_name: str) -> Callable[..., Any]:
    """``pld.tensor.<collective>``: in a kernel, the op; called in a host orchestrator's body, it
    launches its builtin on every rank (``pypto.language.distributed.builtin``)."""
    in_kernel = comm_op(table_name)

    @functools.wraps(in_kernel)
    def call(*args: Any, **kwargs: Any) -> Any:
        if active_trace() is None:
            return in_kernel(*args, **kwargs)  # raises: the parser handles calls in kernels
        from pypto.language.distributed.builtin import host_collective

        return host_collective(table_name, args, kwargs)

    call.__wrapped__ = in_kernel.__wrapped__  # type: ignore[attr-defined]  # the signature the parser binds
    return call


get_comm_ctx = comm_op("get_comm_ctx")
rank = comm_op("comm_rank")
nranks = comm_op("comm_nranks")
notify = comm_op("notify")
wait = comm_op("wait")
remote_load = comm_op("remote_load")
remote_store = comm_op("remote_store")
put = comm_op("put")
get = comm_op("get")
barrier = collective("barrier")
allreduce = collective("allreduce")
broadcast = collective("broadcast")
allgather = collective("allgather")
reduce_scatter = collective("reduce_scatter")
all_to_all = collective("all_to_all")
all_to_all_v = collective("all_to_all_v")
defer_wait = comm_op("defer_wait")
