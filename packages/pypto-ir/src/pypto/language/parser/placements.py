"""The parser's tile placements: ``mem: pl.Ptr = pl.tile.alloc(space, size)`` and tiles
annotated ``pl.Tile[[...], dtype, pl.MemRef(mem, byte_offset, size), space]``.

An allocation exists only while the parser reads the kernel (its name is bound to the
``Allocation``); a placement is checked and recorded on the function (``Function.placements``).
The checks, for every platform this stack targets:

- an allocation is of an on-chip buffer (not DDR), ``size`` > 0 bytes, and the allocations of one
  buffer in one function together fit the largest such buffer of any platform;
- a placed tile is in the allocation's buffer, its bytes fit the placement's ``size``, the
  placement lies inside the allocation (``byte_offset + size <= `` the allocation's size), and
  ``byte_offset`` is a multiple of the buffer's start-address alignment.

Whether two placed tiles that are live at the same time overlap is not checked: on the
simulated chip every tile has storage of its own, so an overlap changes no result here.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import TilePlacement
from pypto.ir.platforms import PLATFORM_TABLE, TILE_SPACES
from pypto.ir.types import MemorySpace, TileType
from pypto.language.memref import Allocation, Ptr
from pypto.language.parser.common import _Static
from pypto.language.typing import TileAnnotation

if TYPE_CHECKING:
    from pypto.language.parser.statements import _Statements

__all__ = ["allocations_in_scope", "bind_allocation", "check_placement", "is_alloc_call"]


def _capacity(space: MemorySpace) -> int:
    return max(p.capacity(space) for p in PLATFORM_TABLE.values())


def _alignment(space: MemorySpace) -> int:
    return max(p.alignment(space) for p in PLATFORM_TABLE.values())


def is_alloc_call(parser: _Statements, node: ast.expr) -> bool:
    """Whether ``node`` is a call of ``pl.tile.alloc``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
        return False
    try:
        target = parser.resolve(node.func)
    except Exception:
        return False
    return isinstance(target, _Static) and getattr(target.value, "__pypto_alloc__", False)


def allocations_in_scope(parser: _Statements) -> dict[str, Allocation]:
    """The names bound to allocations so far (what a tile annotation's ``pl.MemRef`` may name)."""
    return {
        name: v.value
        for name, v in parser.st.env.items()
        if isinstance(v, _Static) and isinstance(v.value, Allocation)
    }


def bind_allocation(
    parser: _Statements, target: ast.expr, call: ast.Call, ann_node: ast.expr | None, s: ast.stmt
) -> None:
    """``name: pl.Ptr = pl.tile.alloc(space, size, pinned=False)``: bind ``name`` to the allocation."""
    if not isinstance(target, ast.Name):
        raise parser.err(
            "pl.tile.alloc(...) is bound to one name: `mem: pl.Ptr = pl.tile.alloc(space, size)`", s
        )
    if not parser.st.func_type.is_kernel and not parser.st.in_scope:
        raise parser.err(
            "pl.tile.alloc reserves a kernel's on-chip buffer: write it in an InCore/AIC/AIV function "
            "or inside `with pl.at(level=pl.Level.CORE_GROUP):`",
            call,
        )
    if ann_node is not None:
        try:
            ann = eval(compile(ast.Expression(ann_node), parser.src.file, "eval"), parser.src.namespace)
        except Exception as exc:
            raise parser.err(f"cannot evaluate the annotation of {target.id!r}: {exc}", ann_node) from None
        if ann is not Ptr:
            raise parser.err(
                f"{target.id!r} is bound to pl.tile.alloc(...), so it is annotated pl.Ptr, got {ast.unparse(ann_node)}",
                ann_node,
            )
    args: dict[str, ast.expr] = {}
    names = ("memory_space", "size")
    if len(call.args) > 2:
        raise parser.err(
            "pl.tile.alloc(memory_space, size, *, pinned=False) takes 2 positional arguments", call
        )
    args.update(zip(names, call.args, strict=False))
    for kw in call.keywords:
        if kw.arg not in ("memory_space", "size", "pinned") or kw.arg in args:
            raise parser.err(
                f"pl.tile.alloc(memory_space, size, *, pinned=False): unexpected keyword {kw.arg!r}", kw
            )
        args[kw.arg] = kw.value
    for required in names:
        if required not in args:
            raise parser.err(f"pl.tile.alloc(memory_space, size): {required!r} is missing", call)
    space = parser.static_value(args["memory_space"], "pl.tile.alloc memory_space", args["memory_space"])
    if space not in TILE_SPACES:
        raise parser.err(
            "pl.tile.alloc(memory_space): expected an on-chip buffer "
            f"({', '.join('pl.Mem.' + m.value for m in TILE_SPACES)}), got {space!r}",
            args["memory_space"],
        )
    size = parser.static_value(args["size"], "pl.tile.alloc size", args["size"])
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise parser.err(f"pl.tile.alloc(size): expected an int > 0 (bytes), got {size!r}", args["size"])
    pinned: Any = False
    if "pinned" in args:
        pinned = parser.static_value(args["pinned"], "pl.tile.alloc pinned", args["pinned"])
        if not isinstance(pinned, bool):
            raise parser.err(f"pl.tile.alloc(pinned): expected True or False, got {pinned!r}", args["pinned"])
    if target.id in parser.st.env and not isinstance(parser.st.env[target.id], _Static):
        raise parser.err(
            f"{target.id!r} is already a value of this kernel; name the allocation apart", target
        )
    existing = allocations_in_scope(parser)
    existing.pop(target.id, None)
    used = sum(a.size for a in existing.values() if a.space is space)
    if used + size > _capacity(space):
        raise parser.err(
            f"pl.tile.alloc: the allocations of pl.Mem.{space.value} in this function take {used + size} bytes, "
            f"more than the {_capacity(space)} bytes of that buffer",
            call,
        )
    parser.st.env[target.id] = _Static(Allocation(target.id, space, size, pinned))  # type: ignore[assignment]


def check_placement(
    parser: _Statements, ann: TileAnnotation, ty: TileType, name: str, ann_node: ast.expr
) -> None:
    """A tile annotated with ``pl.MemRef(base, byte_offset, size)``: check it and record it."""
    memref = ann.memref
    base: Allocation = memref.base
    current: object = parser.st.env.get(base.name)  # a _Static when the name is an allocation
    if not (isinstance(current, _Static) and current.value is base):
        raise parser.err(
            f"{name!r}: pl.MemRef names {base.name!r}, which is not an allocation of this function", ann_node
        )
    if ty.memory is not base.space:
        raise parser.err(
            f"{name!r} is a tile in pl.Mem.{ty.memory.value}, but {base.name!r} is an allocation of "
            f"pl.Mem.{base.space.value}",
            ann_node,
        )
    nbytes = (ty.numel * ty.dtype.bits + 7) // 8
    if nbytes > memref.size:
        raise parser.err(
            f"{name!r}: the tile takes {nbytes} bytes but its pl.MemRef spans {memref.size}", ann_node
        )
    if memref.byte_offset + memref.size > base.size:
        raise parser.err(
            f"{name!r}: pl.MemRef({base.name}, {memref.byte_offset}, {memref.size}) ends at byte "
            f"{memref.byte_offset + memref.size}, past the {base.size} bytes of {base.name!r}",
            ann_node,
        )
    align = _alignment(base.space)
    if memref.byte_offset % align:
        raise parser.err(
            f"{name!r}: pl.MemRef byte_offset {memref.byte_offset} is not a multiple of {align}, the "
            f"start-address alignment of pl.Mem.{base.space.value}",
            ann_node,
        )
    parser.st.placements.append(
        TilePlacement(name, base.name, base.space, memref.byte_offset, memref.size, base.size)
    )
