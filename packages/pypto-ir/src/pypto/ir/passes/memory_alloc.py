"""Memory allocation: a byte offset in its on-chip buffer for every tile of a lowered kernel.

Input: the kernel's tiles and live ranges (pypto.ir.analysis.tile_liveness) and a platform's
buffer alignments (pypto.ir.platforms). Output: a :class:`KernelMemory`, one :class:`Slot` per
storage, and the slot of every IR name that names a tile.

- Physical size: a tile takes its padded PTO-ISA shape (pypto.ir.pto_layout), rounded up to its
  buffer's alignment (UB, L1, L0A, L0B, L0C).
- Shared storage: SSA versions of one value share a slot when the generated code needs no copy
  between them: a loop's init, its carried holder and the values yielded into it (and the
  loop's result); a branch's result and the values its arms yield; the result of an op that
  updates an ``into`` operand. They share only when they have the same IR type, the earlier
  version is dead when the later one is written (its last read is the statement that writes the
  later one, or before it), and that statement may write its operand's storage in place
  (element-wise ops, ``matmul_acc``, the ``into`` ops). Otherwise each version has its own slot
  and the generated code copies (TMOV).
- Dying operands: after that, the result of an element-wise op (one that may write an operand's
  storage in place) takes the storage of an operand of the same IR type whose storage holds
  nothing read after the op, when nothing else lives in the result's storage before it (the
  two storages' ranges meet at the op only). A chain such as ``exp(x - max) * r`` then works in
  one tile instead of alternating between two, which halves what its passes stream through the
  core's caches and what it takes of its buffer.
- Aliases: a reshape's result, and a ``transpose_view`` of a Mat tile, is its operand's storage
  (the ISA's TRESHAPE reinterprets the bytes: the NZ bytes of a Mat tile read as ZN are its
  transpose; the device backends point the result at the operand's data).
- A slot is live over the union of its versions' ranges; slots of one buffer whose ranges meet
  get disjoint byte ranges (first fit, by start point). :func:`check_no_overlap` re-checks a
  result and is run on every allocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pypto.ir.analysis.tile_liveness import KernelLiveness, kernel_liveness
from pypto.ir.errors import PyptoCompileError
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Continue,
    For,
    Function,
    If,
    Scope,
    Stmt,
    Var,
    While,
    Yield,
    expr_vars,
)
from pypto.ir.ops import OPS
from pypto.ir.platforms import BufferCapacityError, Platform, TileAlloc, buffer_peaks, get_platform
from pypto.ir.pto_layout import pto_tile
from pypto.ir.types import MemorySpace, TileType

__all__ = [
    "ALIASING_OPS",
    "IN_PLACE_OPS",
    "KernelMemory",
    "OverlapError",
    "Slot",
    "allocate_kernel",
    "check_no_overlap",
    "is_alias",
]

IN_PLACE_OPS = frozenset(
    {
        *(
            n
            for n, s in OPS.items()
            if n.startswith("tile.") and s.cpp is not None and s.cpp.valid == "same" and s.cpp.inplace
        ),
        "tile.matmul_acc",
        "tile.gemv_acc",
    }
)
"""Ops whose result may be written over an operand's storage (the ISA allows dst == src)."""


ALIASING_OPS = frozenset({"tile.reshape", "tile.set_validshape"})
"""Ops whose result is its operand's storage: TRESHAPE reinterprets the bytes in place, and a
new valid shape is the same bytes declared again (no instruction writes either afterwards: an
SSA op writes a new tile)."""


def is_alias(e: Call) -> bool:
    """Whether call ``e``'s result is its first operand's storage: an op of ALIASING_OPS, or the
    transpose view of a Mat tile (its NZ bytes read as a ZN tile)."""
    if e.op in ALIASING_OPS:
        return True
    t = e.type
    return e.op == "tile.transpose_view" and isinstance(t, TileType) and t.memory is MemorySpace.Mat


class OverlapError(PyptoCompileError):
    """Two tiles live at the same time were given overlapping bytes of one buffer."""


@dataclass(frozen=True)
class Slot:
    """One storage: ``nbytes`` (aligned) at ``offset`` in ``space``'s buffer, live over
    ``live`` (inclusive program points); ``names``: the IR names that use it."""

    space: MemorySpace
    offset: int
    nbytes: int
    live: tuple[int, int]
    names: tuple[str, ...]
    alloc: TileAlloc  # the first version's record, with the padded shape and the slot's range

    def overlaps(self, other: Slot) -> bool:
        same_time = self.live[0] <= other.live[1] and other.live[0] <= self.live[1]
        same_bytes = self.offset < other.offset + other.nbytes and other.offset < self.offset + self.nbytes
        return self.space is other.space and same_time and same_bytes


@dataclass
class KernelMemory:
    """The allocation of one kernel: ``slots`` and ``slot_of`` (IR name or ``"@<call id>"``
    -> index into ``slots``)."""

    slots: list[Slot] = field(default_factory=list)
    slot_of: dict[str, int] = field(default_factory=dict)

    def slot(self, key: str) -> Slot:
        return self.slots[self.slot_of[key]]

    def shares(self, a: str, b: str) -> bool:
        """Whether IR names ``a`` and ``b`` use one storage."""
        return a in self.slot_of and self.slot_of.get(a) == self.slot_of.get(b)

    @property
    def tiles(self) -> tuple[TileAlloc, ...]:
        """One record per storage (padded shape, aligned bytes, the slot's range), for the
        capacity check (pypto.ir.platforms.check_kernel_buffers)."""
        return tuple([s.alloc for s in self.slots])


class _Union:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


class _Sharing:
    """Finds the SSA versions that may share storage (module docstring)."""

    def __init__(self, lv: KernelLiveness) -> None:
        self.lv = lv
        self.union = _Union(len(lv.tiles))
        self.uses: dict[int, list[int]] = {}
        for i, at in lv.uses:
            self.uses.setdefault(i, []).append(at)
        self.point = -1
        self.def_point = {i: t.live[0] for i, t in enumerate(lv.tiles) if t.live is not None}
        self.def_op: dict[int, str] = {}
        # (point, result, tile operands) of each element-wise op that updates no `into` operand
        self.in_place: list[tuple[int, int, list[int]]] = []

    def index(self, name: str) -> int | None:
        return self.lv.owner.get(name)

    def may_share(
        self, old: int, new: int, writer: int | None, until: int | None = None, *, updates: bool = False
    ) -> bool:
        """``new`` may take ``old``'s storage: same type, and ``old`` is not read after the
        statement ``writer`` that writes ``new`` (nor at it, unless that op works in place, or
        ``updates``: ``old`` is only the ``into`` operand the op updates), before ``until``
        (exclusive; the end of the loop for a carried holder)."""
        lv = self.lv
        if lv.types[old] != lv.types[new] or writer is None:
            return False
        for at in self.uses.get(old, ()):
            if at > writer and (until is None or at < until):
                return False
            if at == writer and not updates and self.def_op.get(new) not in IN_PLACE_OPS:
                return False
        return True

    def take_dying_operands(self) -> None:
        """The second rule (module docstring, "Dying operands"), on the storages the first
        rules formed: a storage is live from its first version's definition to its last read."""
        union, tiles, types = self.union, self.lv.tiles, self.lv.types
        span: dict[int, tuple[int, int]] = {}  # storage (its root) -> (first point, last point)
        for k, t in enumerate(tiles):
            if t.live is None:
                continue
            r = union.find(k)
            lo, hi = t.live
            a, b = span.get(r, (lo, hi))
            span[r] = (min(a, lo), max(b, hi))
        for p, i, operands in self.in_place:
            ri = union.find(i)
            if ri not in span or span[ri][0] != p:  # something lives in the result's storage before
                continue
            for j in operands:
                rj = union.find(j)
                if rj == ri or types[j] != types[i] or rj not in span or span[rj][1] != p:
                    continue
                lo, hi = span.pop(rj)[0], span.pop(ri)[1]
                union.join(ri, rj)
                span[union.find(ri)] = (lo, hi)
                break

    def body(self, stmts: tuple[Stmt, ...]) -> None:
        for s in stmts:
            self.point += 1
            self.stmt(s, self.point)

    def stmt(self, s: Stmt, p: int) -> None:
        if isinstance(s, Assign):
            i = self.index(s.var.name)
            e = s.value
            if i is not None and isinstance(e, Call) and self.lv.keys[i] == s.var.name:
                self.def_op[i] = e.op
                if is_alias(e):  # the result is the operand's bytes read another way
                    src0 = e.args[0]
                    j0 = self.index(src0.name) if isinstance(src0, Var) else None
                    if j0 is not None:
                        self.union.join(j0, i)
                    return
                spec = OPS.get(e.op)
                into = spec.cpp.into if spec is not None and spec.cpp is not None else None
                if into is not None and into < len(e.args):
                    src = e.args[into]
                    j = self.index(src.name) if isinstance(src, Var) else None
                    # the instruction updates its into operand in place (TINSERT, TFILLPAD, ...)
                    # unless the same tile is another of its operands too
                    alone = isinstance(src, Var) and sum(v.name == src.name for v in expr_vars(e)) == 1
                    if j is not None and self.may_share(j, i, p, updates=alone):
                        self.union.join(j, i)
                elif e.op in IN_PLACE_OPS:
                    operands = [self.index(a.name) for a in e.args if isinstance(a, Var)]
                    self.in_place.append((p, i, [j for j in operands if j is not None]))
        elif isinstance(s, (For, While)):
            holders = [
                self.index(ia.var.name) if isinstance(ia.var.type, TileType) else None for ia in s.iter_args
            ]
            for h, ia in zip(holders, s.iter_args, strict=True):
                init = ia.init
                j = self.index(init.name) if isinstance(init, Var) else None
                if h is None or j is None or j == h or self.lv.types[j] != self.lv.types[h]:
                    continue
                # the init is read at the header only: the holder may take its storage
                if not any(at > p for at in self.uses.get(j, ())):
                    self.union.join(j, h)
            start = self.point
            self.body(s.body)
            end = self.point
            for st in _exits(s.body):
                for h, v in zip(holders, st.values, strict=False):
                    j = self.index(v.name) if isinstance(v, Var) else None
                    if h is None or j is None or j == h:
                        continue
                    w = self.def_point.get(j)
                    if w is not None and start < w <= end and self.may_share(h, j, w, until=end):
                        self.union.join(h, j)
        elif isinstance(s, If):
            start = self.point
            self.body(s.then_body)
            self.body(s.else_body)
            end = self.point
            for arm in (s.then_body, s.else_body):
                if not arm or not isinstance(arm[-1], Yield):
                    continue
                for r, v in zip(s.results, arm[-1].values, strict=False):
                    i = self.index(r.name)
                    j = self.index(v.name) if isinstance(v, Var) else None
                    w = self.def_point.get(j) if j is not None else None
                    if i is None or j is None or w is None or not (start < w <= end):
                        continue
                    if self.lv.types[i] == self.lv.types[j]:
                        self.union.join(i, j)
        elif isinstance(s, Scope):
            self.body(s.body)


def _exits(body: tuple[Stmt, ...]) -> list[Yield | Break | Continue]:
    """The statements of a loop body that carry values to the next iteration or out of the loop
    (its final yield, and break/continue not inside a nested loop)."""
    found: list[Yield | Break | Continue] = []

    def walk(stmts: tuple[Stmt, ...], top: bool) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, (Break, Continue)) or (isinstance(s, Yield) and top and i == len(stmts) - 1):
                found.append(s)
            elif isinstance(s, If):
                walk(s.then_body, False)
                walk(s.else_body, False)
            elif isinstance(s, Scope):
                walk(s.body, False)

    walk(body, True)
    return found


def _aligned(n: int, align: int) -> int:
    return -(-n // align) * align


def _place(busy: list[tuple[int, int]], nbytes: int, align: int) -> int:
    """The lowest aligned offset where ``nbytes`` fit between the sorted ``busy`` byte ranges."""
    offset = 0
    for a, b in busy:
        if offset + nbytes <= a:
            break
        offset = max(offset, _aligned(b, align))
    return offset


def allocate_kernel(fn: Function, platform: str | Platform) -> KernelMemory:
    """Allocate every tile of lowered kernel ``fn`` (module docstring)."""
    plat = platform if isinstance(platform, Platform) else get_platform(platform)
    lv = kernel_liveness(fn)
    sharing = _Sharing(lv)
    sharing.body(fn.body)
    sharing.take_dying_operands()
    groups: dict[int, list[int]] = {}
    for i in range(len(lv.tiles)):
        groups.setdefault(sharing.union.find(i), []).append(i)
    mem = KernelMemory()
    tiles, types, keys = lv.tiles, lv.types, lv.keys
    ranges = []  # (first point, last point, members) of each storage
    for members in groups.values():
        lo, hi = tiles[members[0]].live  # type: ignore[misc]
        for i in members[1:]:
            a, b = tiles[i].live  # type: ignore[misc]
            lo, hi = min(lo, a), max(hi, b)
        ranges.append((lo, hi, members))
    ranges.sort(key=lambda g: g[0])  # stable: groups starting together keep their order
    placed: list[Slot] = []
    for lo, hi, members in ranges:
        first = tiles[members[0]]
        ptile = pto_tile(types[members[0]])
        for i in members[1:]:
            p = pto_tile(types[i])
            if p.nbytes > ptile.nbytes:  # the first of the largest
                ptile = p
        space = first.space
        align = plat.alignment(space)
        nbytes = _aligned(ptile.nbytes, align)
        busy = sorted(
            [
                (s.offset, s.offset + s.nbytes)
                for s in placed
                if s.space is space and s.live[0] <= hi and lo <= s.live[1]
            ]
        )
        offset = _place(busy, nbytes, align)
        names = tuple([keys[i] for i in members])
        alloc = TileAlloc(first.name, space, first.dtype, (ptile.rows, ptile.cols), first.span, (lo, hi))
        slot = Slot(space, offset, nbytes, (lo, hi), names, alloc)
        placed.append(slot)
        index = len(mem.slots)
        mem.slots.append(slot)
        for i in members:
            mem.slot_of[keys[i]] = index
    for name, i in lv.owner.items():  # aliases (loop results, printed tiles) name their tile's slot
        mem.slot_of.setdefault(name, mem.slot_of[lv.keys[i]])
    check_no_overlap(fn.name, mem.slots)
    _check_extents(fn.name, plat, mem)
    return mem


def _check_extents(kernel: str, plat: Platform, mem: KernelMemory) -> None:
    """Refuse a placement that runs past a buffer although the tiles live at once fit it (first
    fit can leave gaps); a peak beyond the buffer is left to the capacity check, which explains
    it (pypto.ir.platforms.check_kernel_buffers)."""
    ends: dict[MemorySpace, int] = {}
    for s in mem.slots:
        end = s.offset + s.nbytes
        if end > ends.get(s.space, 0):
            ends[s.space] = end
    over = [space for space, end in ends.items() if end > plat.capacity(space)]
    if not over:  # every placement inside its buffer: no peak to compare with
        return
    peaks = buffer_peaks(plat, mem.tiles)
    for space, peak in peaks.items():
        end = ends.get(space, 0)
        if end > plat.capacity(space) >= peak.nbytes:
            raise BufferCapacityError(
                f"kernel {kernel!r}: its {space.value} tiles fit the {plat.capacity(space)} bytes of "
                f"{plat.name}'s buffer at their peak ({peak.nbytes} bytes), but placing them by their live "
                f"ranges needs {end} bytes: use fewer tiles of different sizes live at once"
            )


def check_no_overlap(kernel: str, slots: list[Slot]) -> None:
    """Refuse an allocation in which two storages live at the same time share a byte."""
    for i, a in enumerate(slots):
        a0, a1, lo, hi = a.offset, a.offset + a.nbytes, a.live[0], a.live[1]
        for b in slots[i + 1 :]:
            # Slot.overlaps, inlined: a compile checks every pair of its kernels' storages
            if (
                b.space is a.space
                and lo <= b.live[1]
                and b.live[0] <= hi
                and a0 < b.offset + b.nbytes
                and b.offset < a1
            ):
                raise OverlapError(
                    f"kernel {kernel!r}: tiles {'/'.join(a.names)} and {'/'.join(b.names)} are live together "
                    f"(points {a.live} and {b.live}) but overlap in the {a.space.value} buffer "
                    f"([{a.offset:#x}, {a.offset + a.nbytes:#x}) and [{b.offset:#x}, {b.offset + b.nbytes:#x}))"
                )
