"""``pl.optimizations``: the entries of ``optimizations=[...]`` on ``pl.at`` and ``pl.spmd``
(``pl.optimizations.split(mode)``, ``pl.optimizations.cross_core_slot(slot_num=n)``), the same
functions as ``pl.split`` and ``pl.cross_core_slot``."""

from pypto.language.dsl import cross_core_slot, split

__all__ = ["cross_core_slot", "split"]
