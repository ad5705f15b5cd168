"""Sync insertion: the pipe synchronisation a kernel plan needs on the device.

On an AICore the pipes (MTE2 loads, V vector, MTE1 L1->L0, M cube, FIX L0C out, MTE3 stores,
S scalar) run concurrently; an instruction on pipe Q that reads or overwrites a tile whose
bytes were last read or written by an instruction on pipe P != Q must wait until that access
is done. This pass walks a kernel plan (pypto.ir.codegen.plan) and puts a :class:`Sync`
(``set_flag(P, Q, e)`` then ``wait_flag(P, Q, e)``) right before such an instruction.

State: for each tile access not yet known to be complete for every pipe, the pipes it has
been ordered before (a sync P -> Q orders every access issued on P so far before Q). Two
tiles conflict when their storages overlap (same buffer, intersecting bytes: the memory
allocation's slots), so SSA versions sharing one storage are one tile here.

Control flow, conservatively:
- a branch: both arms start from the state before it; after it, an access is pending if it is
  pending after either arm;
- a loop: the body is analysed from the state before the loop merged with the state at the
  end of the body (the next iteration), until that merge stops changing; the syncs of the
  last round are kept; after the loop the state is that fixed point;
- ``break``/``continue``: a ``pipe_barrier(PIPE_ALL)`` before the jump, so that nothing is
  pending where it lands.

Event ids: an event is the triple (source pipe, destination pipe, id), with ids EVENT_ID0..7
per pipe pair (pypto.ir.codegen.plan.EVENT_IDS), and each set_flag pairs with one wait_flag.
Every :class:`Sync` is rendered as its set_flag followed at once by its wait_flag, so at most one
event is pending at any point of the kernel, only between those two lines, and it is waited for
before anything else is issued: one id (EVENT_ID0) serves every pair with no two pending events
sharing it, on every path through loops, branches and jumps. Waiting at once orders the pipes
where the consumer needs it; it gives up overlapping the producer with unrelated work between
the set and the point of use (a deferred wait would need an id per pending event).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pypto.ir.codegen.plan import Barrier, Branch, Inst, Item, Jump, Loop, Pipe, Sync

__all__ = ["insert_syncs"]

Storage = Callable[[str, str], bool]
"""``conflicts(a, b)``: tiles ``a`` and ``b`` share a byte of one buffer."""

# (tile name, pipe of the access) -> the pipes it is ordered before (itself always)
_State = dict[tuple[str, Pipe], frozenset[Pipe]]


@dataclass
class _Pass:
    conflicts: Storage
    # (tile name, the tiles an instruction touches) -> whether they share a byte; a loop's
    # body is analysed more than once and a tile is tested against every instruction after it
    _hits: dict[tuple[str, tuple[str, ...]], bool] = field(default_factory=dict)

    def block(self, items: list[Item], state: _State) -> tuple[list[Item], _State]:
        out: list[Item] = []
        for it in items:
            if isinstance(it, Inst):
                if it.pipe is not None:
                    self.access(it, state, out)
                out.append(it)
            elif isinstance(it, (Sync, Barrier)):
                self.apply(it, state)
                out.append(it)
            elif isinstance(it, Jump):
                if state:
                    out.append(Barrier())
                    state.clear()
                out.append(it)
            elif isinstance(it, Branch):
                then, s1 = self.block(it.then, dict(state))
                orelse, s2 = self.block(it.orelse, dict(state))
                out.append(Branch(it.cond, then, orelse))
                state.clear()
                state.update(_merge(s1, s2))
            else:
                assert isinstance(it, Loop)
                entry = dict(state)
                body, end = self.block(it.body, dict(entry))
                for _ in range(8):  # the merged state only grows; a few rounds reach the fixed point
                    merged = _merge(entry, end)
                    if merged == entry:
                        break
                    entry = merged
                    body, end = self.block(it.body, dict(entry))
                out.append(Loop(it.head, body))
                state.clear()
                state.update(_merge(entry, end))
        return out, state

    def access(self, it: Inst, state: _State, out: list[Item]) -> None:
        q = it.pipe
        assert q is not None
        touched = (*it.reads, *it.writes)
        need: set[Pipe] = set()
        hits = self._hits
        for (name, p), done in state.items():
            if p is q or q in done or p in need:
                continue
            hit = hits.get((name, touched))
            if hit is None:
                hit = hits[(name, touched)] = any(self.conflicts(name, t) for t in touched)
            if hit:
                need.add(p)
        for p in sorted(need, key=lambda x: x.value):
            sync = Sync(p, q)
            self.apply(sync, state)
            out.append(sync)
        for t in touched:
            state[(t, q)] = frozenset({q})

    def apply(self, it: Sync | Barrier, state: _State) -> None:
        if isinstance(it, Barrier):
            state.clear()
            return
        for key, done in list(state.items()):
            if key[1] is it.src:
                state[key] = done | {it.dst}


def _merge(a: _State, b: _State) -> _State:
    """Pending after either path: an access is ordered before a pipe only if both paths say so."""
    out = dict(a)
    for key, done in b.items():
        out[key] = out[key] & done if key in out else done
    return out


def insert_syncs(items: list[Item], conflicts: Storage) -> list[Item]:
    """``items`` with the syncs the device needs (module docstring)."""
    body, _ = _Pass(conflicts).block(items, {})
    return body
