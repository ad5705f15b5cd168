"""Tile placements written in the program text: ``pl.tile.alloc``, ``pl.Ptr``, ``pl.MemRef``.

A memory planner places every tile at a byte range of an on-chip buffer. A kernel may say where
a tile is placed, as a planned program is printed::

    mem_vec_0: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 8192)
    t: pl.Tile[[16, 128], pl.FP32, pl.MemRef(mem_vec_0, 0, 8192), pl.Mem.Vec] = pl.load(x, [0, 0], [16, 128])

``pl.tile.alloc(space, size)`` reserves ``size`` bytes of one buffer (``pl.Ptr`` names it) and
``pl.MemRef(base, byte_offset, size)`` places a tile at ``byte_offset`` bytes into it. This
stack plans no addresses: on the simulated chip every tile has storage of its own. The parser
checks each placement (see ``pypto.language.parser.placements``) and records it on the
function (``Function.placements``); the generated code does not read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pypto.ir.types import MemorySpace

__all__ = ["Allocation", "MemRef", "Ptr", "alloc"]


class Ptr:
    """The annotation of a name bound to ``pl.tile.alloc(...)``: ``mem: pl.Ptr = pl.tile.alloc(...)``."""


@dataclass(frozen=True)
class Allocation:
    """What a ``pl.tile.alloc`` in a kernel reserved: ``size`` bytes of ``space``, named by the
    variable it is bound to. It exists while the parser reads the kernel."""

    name: str
    space: MemorySpace
    size: int
    pinned: bool = False

    def __repr__(self) -> str:
        return f"pl.tile.alloc(pl.Mem.{self.space.value}, {self.size}) as {self.name!r}"


def _byte_count(value: Any, what: str, *, positive: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (1 if positive else 0):
        wanted = "an int > 0" if positive else "an int >= 0"
        raise TypeError(f"pl.MemRef({what}): expected {wanted} (bytes), got {value!r}")
    return value


class MemRef:
    """Where a tile is placed: ``pl.MemRef(base, byte_offset, size)`` in a tile annotation, with
    ``base`` a ``pl.Ptr`` of this kernel (a ``pl.tile.alloc`` result), ``byte_offset`` the tile's
    first byte in that allocation and ``size`` the bytes it spans."""

    __slots__ = ("base", "byte_offset", "size")

    def __init__(self, base: Any = None, byte_offset: Any = None, size: Any = None, **kwargs: Any) -> None:
        if byte_offset is None and size is None:
            raise TypeError(
                "pl.MemRef(base, byte_offset, size): a MemRef without a byte offset and size declares "
                "an allocation for a memory planner to size and place; this stack plans no tile "
                "addresses, so write pl.tile.alloc(space, size) and pl.MemRef(ptr, byte_offset, size)"
            )
        if kwargs:
            raise TypeError(
                f"pl.MemRef(base, byte_offset, size): unexpected keyword(s) {sorted(kwargs)}; "
                "slotted allocations (slots=, slot=) are not supported"
            )
        if not isinstance(base, Allocation):
            raise TypeError(
                "pl.MemRef(base): expected a pl.Ptr bound in this kernel to pl.tile.alloc(space, size), "
                f"got {base!r}"
            )
        self.base = base
        self.byte_offset = _byte_count(byte_offset, "byte_offset", positive=False)
        self.size = _byte_count(size, "size", positive=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemRef) and (self.base, self.byte_offset, self.size) == (
            other.base,
            other.byte_offset,
            other.size,
        )

    def __hash__(self) -> int:
        return hash((self.base, self.byte_offset, self.size))

    def __repr__(self) -> str:
        return f"pl.MemRef({self.base.name}, {self.byte_offset}, {self.size})"


def alloc(memory_space: MemorySpace, size: int, *, pinned: bool = False) -> Any:
    """Reserve ``size`` bytes of the on-chip buffer ``memory_space`` in a kernel; bind the result
    to a name annotated ``pl.Ptr`` and place tiles in it with ``pl.MemRef(name, offset, size)``.
    ``pinned`` marks an allocation its author declared (a memory planner keeps it apart); it is
    recorded only. Read by the parser; calling it from Python raises."""
    raise RuntimeError("pl.tile.alloc() is part of the kernel language and runs only inside a kernel body")


alloc.__pypto_alloc__ = True  # type: ignore[attr-defined]
