"""``pld.tile``: tile-level remote memory access (``remote_load``, ``remote_store``)."""

from pypto.language.distributed._ops import remote_load, remote_store

__all__ = ["remote_load", "remote_store"]
