"""Live ranges of a lowered kernel's tiles: which on-chip tiles the generated kernel needs and
between which program points each one holds a value.

Program points number the kernel's statements depth-first in source order: a loop or a branch
is one point (its header), then come the statements of its body (a branch: the then arm, then
the else arm). A tile is live from the point that defines it to the last point that uses it,
with these rules:

- a tile used inside a loop that it was defined before is live to the end of that loop (the
  next iteration reads it again);
- a loop-carried tile (the holder of a tile iter arg, defined at the loop's header) is live
  across its whole loop, and after it for as long as the loop's result is used (the result is
  a reference to the holder);
- a value that names another tile (``x = pl.print(t)``, a loop result) is that tile: its uses
  extend the tile's range and it is not counted again.

The tiles are the ones the generated kernel declares (pypto.ir.codegen.kernel): every
tile-valued op result (an op that computes into a copy of an operand included), every
loop-carried and branch-result holder, and the 1x1 tile of each ``pl.read`` / ``pl.write``
(live at its statement only). The build checks that the two lists agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pypto.ir import nodes
from pypto.ir.errors import Span
from pypto.ir.ops import OPS
from pypto.ir.passes.ssa import base_name
from pypto.ir.platforms import TileAlloc
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType

__all__ = [
    "ALIAS_OPS",
    "COMM_STAGING",
    "STAGING_SHAPE",
    "KernelLiveness",
    "given_scratch",
    "kernel_liveness",
    "kernel_tile_ranges",
    "staging_key",
]

ALIAS_OPS = frozenset({"tile.print", "scalar.print"})
"""Ops whose tile result is a second name for their operand (``x = pl.print(t)``: x is t)."""


COMM_STAGING = {
    "comm.put": (0, 1),
    "comm.get": (0, 1),
    "comm.allreduce": (0, 2),
    "comm.broadcast": (0, 1),
    "comm.allgather": (1, 1),
    "comm.reduce_scatter": (0, 2),
    "comm.all_to_all": (1, 1),
    "comm.all_to_all_v": (1, 1),
}
"""The cross-rank ops whose PTO-ISA instructions take staging tiles (TPUT, TGET, TBROADCAST: one;
TREDUCE: an accumulator and a receive tile): op -> (the operand whose element type the tiles
have, how many). Each is a Vec tile of ``STAGING_SHAPE`` live at its statement only."""

STAGING_SHAPE = (16, 64)
"""Rows and columns of a staging tile (rows of 64 elements: a multiple of 32 bytes for every
element type)."""


def staging_key(c: nodes.Call, i: int) -> str:
    """The storage key of staging tile ``i`` of comm call ``c``."""
    return f"@stage{i}_{id(c)}"


def given_scratch(e: nodes.Call, at: int | None) -> nodes.Var | None:
    """The scratch tile a call passes itself (operand ``at``), if any."""
    a = e.args[at] if at is not None and at < len(e.args) else None
    return a if isinstance(a, nodes.Var) and isinstance(a.type, TileType) else None


@dataclass
class _Tile:
    alloc: TileAlloc  # without its range yet
    start: int
    end: int
    key: str  # the IR name that defines it, or "@<id of the call>" for a pl.read/pl.write tile
    type: TileType


@dataclass
class _Liveness:
    point: int = -1
    tiles: list[_Tile] = field(default_factory=list)
    owner: dict[str, int] = field(default_factory=dict)  # IR name -> index in tiles (aliases too)
    loop_start: list[int] = field(default_factory=list)
    loop_end: list[int] = field(default_factory=list)
    uses: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)  # tile, point, loops

    def define(self, key: str, name: str, t: TileType, span: Span | None, *, at: int) -> None:
        r, c = t.shape
        alloc = TileAlloc(base_name(name), t.memory, t.dtype, (int(r), int(c)), span)
        self.tiles.append(_Tile(alloc, at, at, key, t))
        if key and not key.startswith("@"):
            self.owner[key] = len(self.tiles) - 1

    def use(self, e: nodes.Expr | tuple[nodes.Expr, ...], at: int, loops: tuple[int, ...]) -> None:
        for v in nodes.expr_vars(e):
            i = self.owner.get(v.name)
            if i is not None:
                self.uses.append((i, at, loops))

    def body(self, stmts: tuple[nodes.Stmt, ...], loops: tuple[int, ...]) -> None:
        for s in stmts:
            self.point += 1
            self.stmt(s, self.point, loops)

    def stmt(self, s: nodes.Stmt, p: int, loops: tuple[int, ...]) -> None:
        if isinstance(s, nodes.Assign):
            self.assign(s, p, loops)
            return
        if isinstance(s, nodes.ExprStmt) and isinstance(s.value, nodes.Call) and s.value.op == "tensor.write":
            self.element_write(s.value, p)
        if isinstance(s, nodes.ExprStmt) and isinstance(s.value, nodes.Call):
            self.staging(s.value, p)
        if isinstance(
            s,
            (
                nodes.ExprStmt,
                nodes.TensorWrite,
                nodes.Yield,
                nodes.Break,
                nodes.Continue,
                nodes.Return,
                nodes.If,
            ),
        ):
            for e in nodes.stmt_exprs(s):
                self.use(e, p, loops)
        if isinstance(s, (nodes.For, nodes.While)):
            self.loop(s, p, loops)
        elif isinstance(s, nodes.If):
            for r in s.results:
                if isinstance(r.type, TileType):
                    self.define(r.name, r.name, r.type, r.span or s.span, at=p)
            self.body(s.then_body, loops)
            self.body(s.else_body, loops)
        elif isinstance(s, nodes.Scope):
            self.body(s.body, loops)

    def assign(self, s: nodes.Assign, p: int, loops: tuple[int, ...]) -> None:
        v, e = s.var, s.value
        self.use(e, p, loops)
        if isinstance(e, nodes.Call) and e.op == "tensor.write":
            self.element_write(e, p)
        if isinstance(e, nodes.Call):
            self.staging(e, p)
        t = v.type
        if isinstance(e, nodes.Call) and e.op in ALIAS_OPS:
            (value,) = e.args
            if isinstance(value, nodes.Var) and value.name in self.owner:
                self.owner[v.name] = self.owner[value.name]
            return
        if isinstance(t, TileType):
            self.define(v.name, v.name, t, v.span or e.span, at=p)
            self.scratch(e, v.name, p)
        elif isinstance(t, ScalarType) and isinstance(e, nodes.Call) and e.op == "tensor.read":
            # the element is loaded through a 1x1 tile, then copied out into a scalar
            one = TileType((1, 1), t.dtype, MemorySpace.Vec)
            self.define(f"@{id(e)}", f"{v.name} (pl.read)", one, v.span or e.span, at=p)

    def scratch(self, e: nodes.Expr, name: str, p: int) -> None:
        """The scratch tile an instruction takes (``Cpp.tmp``: TROWSUM, TTRANS, ...): the type
        of its operand ``Cpp.tmp_like`` (or its result's), live at the statement only."""
        if not isinstance(e, nodes.Call):
            return
        spec = OPS.get(e.op)
        if spec is None or spec.cpp is None or not spec.cpp.tmp or given_scratch(e, spec.cpp.tmp_arg):
            return
        like = e.args[spec.cpp.tmp_like] if spec.cpp.tmp_like is not None else None
        t = like.type if isinstance(like, nodes.Var) else e.type
        if isinstance(t, TileType):
            self.define(f"@tmp{id(e)}", f"{name} (scratch)", t, e.span, at=p)

    def staging(self, c: nodes.Call, p: int) -> None:
        """The staging tiles of a cross-rank op (``COMM_STAGING``), live at its statement only."""
        if c.op not in COMM_STAGING:
            return
        at, count = COMM_STAGING[c.op]
        data = c.args[at]
        assert isinstance(data, nodes.Var)
        assert isinstance(data.type, TensorType)
        t = TileType(STAGING_SHAPE, data.type.dtype, MemorySpace.Vec)
        for i in range(count):
            self.define(staging_key(c, i), f"{c.op} staging", t, c.span, at=p)

    def element_write(self, c: nodes.Call, p: int) -> None:
        dst = c.args[0]
        assert isinstance(dst, nodes.Var)
        assert isinstance(dst.type, TensorType)
        one = TileType((1, 1), dst.type.dtype, MemorySpace.Vec)
        self.define(f"@{id(c)}", f"pl.write({dst.name})", one, c.span, at=p)

    def loop(self, s: nodes.For | nodes.While, p: int, loops: tuple[int, ...]) -> None:
        for e in nodes.stmt_exprs(s):  # bounds and iter-arg inits are read once, at the header
            self.use(e, p, loops)
        holders = []
        for ia in s.iter_args:
            if isinstance(ia.var.type, TileType):
                self.define(ia.var.name, ia.var.name, ia.var.type, ia.var.span or s.span, at=p)
                holders.append(len(self.tiles) - 1)
        index = len(self.loop_start)
        self.loop_start.append(p)
        self.loop_end.append(p)
        self.body(s.body, (*loops, index))
        self.loop_end[index] = self.point
        for h in holders:  # carried from each iteration into the next: live across the loop
            self.uses.append((h, self.point, loops))
        for ia, r in zip(s.iter_args, s.results, strict=True):
            if ia.var.name in self.owner:
                self.owner[r.name] = self.owner[ia.var.name]

    def ranges(self) -> tuple[TileAlloc, ...]:
        for i, at, loops in self.uses:
            tile = self.tiles[i]
            end = at
            for lp in loops:  # a loop the tile was defined before reads it again next iteration
                if self.loop_start[lp] > tile.start:
                    end = max(end, self.loop_end[lp])
            tile.end = max(tile.end, end)
        return tuple(
            TileAlloc(a.name, a.space, a.dtype, a.shape, a.span, (t.start, t.end))
            for t in self.tiles
            for a in (t.alloc,)
        )


@dataclass(frozen=True)
class KernelLiveness:
    """The full result of the analysis, for the memory-allocation pass: ``tiles`` as
    :func:`kernel_tile_ranges` gives them; ``keys[i]`` the IR name that defines tile ``i`` (or
    ``"@<id of the call>"`` for the 1x1 tile of a ``pl.read``/``pl.write``); ``types[i]`` its IR
    type; ``owner`` every IR name that names a tile (aliases too) -> its index; ``uses`` every
    (tile index, program point) at which a statement reads it (the loop-extension rules not
    applied)."""

    tiles: tuple[TileAlloc, ...]
    keys: tuple[str, ...]
    types: tuple[TileType, ...]
    owner: dict[str, int]
    uses: tuple[tuple[int, int], ...]


def kernel_liveness(fn: nodes.Function) -> KernelLiveness:
    """:func:`kernel_tile_ranges` with the tiles' defining names, aliases and use points."""
    lv = _Liveness()
    lv.body(fn.body, ())
    raw = tuple((i, at) for i, at, _ in lv.uses)
    tiles = lv.ranges()
    return KernelLiveness(
        tiles, tuple(t.key for t in lv.tiles), tuple(t.type for t in lv.tiles), dict(lv.owner), raw
    )


def kernel_tile_ranges(fn: nodes.Function) -> tuple[TileAlloc, ...]:
    """Every tile the generated kernel of ``fn`` (a lowered InCore function) declares, in
    definition order, each with ``live`` set to the (first, last) program points it is live."""
    lv = _Liveness()
    lv.body(fn.body, ())
    return lv.ranges()
