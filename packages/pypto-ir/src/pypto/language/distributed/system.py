"""``pld.system``: the rank's identity and signals (``get_comm_ctx``, ``rank``, ``nranks``,
``notify``, ``wait``, ``defer_wait``), and ``world_size`` (host body)."""

from pypto.language.distributed._ops import defer_wait, get_comm_ctx, notify, nranks, rank, wait
from pypto.language.distributed.host import world_size

__all__ = ["defer_wait", "get_comm_ctx", "notify", "nranks", "rank", "wait", "world_size"]
