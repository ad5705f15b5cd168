"""The kernel plan: a generated kernel body as a tree of items before it is printed.

The kernel generator (pypto.ir.codegen.kernel) builds it; the sync-insertion pass
(pypto.ir.passes.sync_insertion) adds the pipe synchronisation the device needs; :func:`render`
prints it. An :class:`Inst` is one PTO-ISA instruction (or a helper working on tiles) with the
pipe it runs on and the tiles it reads and writes; everything else (declarations, scalar code)
is an :class:`Inst` with no pipe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["EVENT_IDS", "Barrier", "Branch", "Inst", "Item", "Jump", "Loop", "Pipe", "Sync", "render"]


class Pipe(Enum):
    """The AICore pipes (PTO-ISA's ``pipe_t`` constants)."""

    # members are singletons compared by identity: hash them by identity too (C-level; Enum's
    # own __hash__ is a Python call, paid on every dict or set lookup the compiler makes)
    __hash__ = object.__hash__

    S = "PIPE_S"  # scalar unit: element reads and writes (GetValue/SetValue)
    V = "PIPE_V"  # vector unit
    MTE1 = "PIPE_MTE1"  # L1 -> L0A/L0B
    MTE2 = "PIPE_MTE2"  # GM -> UB/L1
    MTE3 = "PIPE_MTE3"  # UB -> GM
    M = "PIPE_M"  # cube unit
    FIX = "PIPE_FIX"  # L0C -> UB/GM


@dataclass
class Inst:
    """Lines of C++; ``pipe`` is None for code that touches no tile data (declarations,
    scalar arithmetic, TASSIGN)."""

    lines: tuple[str, ...]
    pipe: Pipe | None = None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


EVENT_IDS = 8
"""Event ids per pipe pair: ``EVENT_ID0`` .. ``EVENT_ID7`` (the ISA's ``EVENT_ID_MAX`` on A2/A3
and A5; an event is the triple (source pipe, destination pipe, id))."""


@dataclass
class Sync:
    """``set_flag(src, dst, EVENT_IDn); wait_flag(src, dst, EVENT_IDn);``: everything issued on
    ``src`` so far completes before ``dst`` runs on. The wait follows its set at once, so the
    event is pending only between the two and its id is free again after them."""

    src: Pipe
    dst: Pipe
    event: int = 0

    def __post_init__(self) -> None:
        if self.src is self.dst:
            raise ValueError(
                f"Sync: source and destination are both {self.src.value}; an event joins two pipes"
            )
        if not 0 <= self.event < EVENT_IDS:
            raise ValueError(f"Sync: event id {self.event} is not one of EVENT_ID0..EVENT_ID{EVENT_IDS - 1}")


@dataclass
class Barrier:
    """``pipe_barrier(PIPE_ALL);``: every pipe drains."""


@dataclass
class Jump:
    """``break;`` / ``continue;`` (with the carried values' assignments in ``lines``)."""

    lines: tuple[str, ...]


@dataclass
class Loop:
    head: str
    body: list[Item] = field(default_factory=list)


@dataclass
class Branch:
    cond: str
    then: list[Item] = field(default_factory=list)
    orelse: list[Item] = field(default_factory=list)


Item = Inst | Sync | Barrier | Jump | Loop | Branch


def render(items: list[Item], depth: int) -> list[str]:
    """The C++ lines of ``items``, indented ``depth`` levels."""
    pad = "    " * depth
    out: list[str] = []
    for it in items:
        if isinstance(it, Inst):
            out += [pad + line for line in it.lines]
        elif isinstance(it, Sync):
            e = f"EVENT_ID{it.event}"
            out.append(f"{pad}set_flag({it.src.value}, {it.dst.value}, {e});")
            out.append(f"{pad}wait_flag({it.src.value}, {it.dst.value}, {e});")
        elif isinstance(it, Barrier):
            out.append(f"{pad}pipe_barrier(PIPE_ALL);")
        elif isinstance(it, Jump):
            out += [pad + line for line in it.lines]
        elif isinstance(it, Loop):
            out.append(pad + it.head)
            out += render(it.body, depth + 1)
            out.append(pad + "}")
        else:
            out.append(f"{pad}if ({it.cond}) {{")
            out += render(it.then, depth + 1)
            out.append(f"{pad}}} else {{")
            out += render(it.orelse, depth + 1)
            out.append(pad + "}")
    return out
