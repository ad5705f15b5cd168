"""Subscript forms of tiles and tensors beyond a plain window (statements.py reads those).

A sub-tile ``t[a:b, c:d]`` has a static shape. Where a bound is a run-time scalar
(``t[:, :n]``) the sub-tile's shape runs to the end of the tile and ``n`` becomes its valid
extent (``pl.set_validshape``); a constant bound past the tile's end is clamped to it
(``t[:, :256]`` of a 128-wide tile is 128 wide), as upstream does.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Const, Expr
from pypto.ir.types import TileType
from pypto.language.fold import INDEX

if TYPE_CHECKING:
    from pypto.language.parser.statements import _Statements

__all__ = ["tile_window"]


def tile_window(p: _Statements, base: Expr, node: ast.Subscript) -> Expr:
    """``t[...]`` of a tile that is not one element: ``pl.slice`` with a static shape (module
    docstring), narrowed by ``pl.set_validshape`` where an extent is only known at run time."""
    tt = base.type
    assert isinstance(tt, TileType)
    offsets, extents = p.window(base, node, runtime_ok=True)
    shape: list[int] = []
    valid: list[Expr] = []
    narrowed = False
    for axis, (o, e, dim) in enumerate(zip(offsets, extents, tt.shape, strict=True)):
        room = dim - int(o.value) if isinstance(o, Const) else None
        if isinstance(e, int):
            n = min(e, room) if room is not None else e
            shape.append(n)
            valid.append(Const(n, INDEX))
            continue
        if room is None:
            raise p.err(
                f"a sub-tile with a run-time extent on axis {axis} needs a constant start there", node
            )
        shape.append(room)
        valid.append(e)
        narrowed = True
    attrs: dict[str, Any] = {
        "shape": tuple(shape),
        "static_offsets": [o.value if isinstance(o, Const) else None for o in offsets],
    }
    sub = p.make_op("slice", [base, tuple(offsets)], attrs, node)
    if not narrowed:
        return sub
    if len(shape) != 2:
        raise p.err("a sub-tile with a run-time extent is 2-D ([rows, cols])", node)
    return p.make_op("set_validshape", [sub, *valid], {}, node)
