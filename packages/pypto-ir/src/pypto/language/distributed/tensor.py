"""``pld.tensor``: whole-window transfers (``put``, ``get``), the barrier and the collectives
(``allreduce``, ``broadcast``, ``allgather``, ``reduce_scatter``, ``all_to_all``,
``all_to_all_v``), and the host body's ``alloc_window_buffer`` and ``window``."""

from pypto.language.distributed._ops import (
    all_to_all,
    all_to_all_v,
    allgather,
    allreduce,
    barrier,
    broadcast,
    get,
    put,
    reduce_scatter,
)
from pypto.language.distributed.host import alloc_window_buffer, window

__all__ = [
    "all_to_all",
    "all_to_all_v",
    "allgather",
    "alloc_window_buffer",
    "allreduce",
    "barrier",
    "broadcast",
    "get",
    "put",
    "reduce_scatter",
    "window",
]
