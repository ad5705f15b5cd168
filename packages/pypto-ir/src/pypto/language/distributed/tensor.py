"""``pld.tensor``: whole-window transfers and the barrier (``put``, ``get``, ``barrier``), and the
host body's ``alloc_window_buffer`` and ``window``."""

from pypto.language.distributed._ops import barrier, get, put
from pypto.language.distributed.host import alloc_window_buffer, window

__all__ = ["alloc_window_buffer", "barrier", "get", "put", "window"]
