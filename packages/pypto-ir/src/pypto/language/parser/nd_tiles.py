"""Tiles of more than two dims, held as 2-D tiles with their leading dims flattened into rows.

A tile the program names ``[d0, ..., R, C]`` is the 2-D tile ``[d0 * ... * R, C]`` (row-major, so
plane ``(i0, ...)`` is the ``R`` rows from ``(i0 * d1 + ...) * R``); an annotation
``pl.Tile[[8, 64, 128], ...]`` names the ``[512, 128]`` tile. The parser remembers the N-D shape
of each such value (``_FnState.nd_shapes``) and reads its forms through it:

- ``pl.load(x, offsets, [d0, ..., R, C])`` of a rank-N tensor loads each ``[R, C]`` plane and
  inserts it at its rows (one load per plane: the planes need not be adjacent in the tensor);
- ``pl.store(t, offsets, x)`` stores each plane back the same way;
- ``t[i]``, ``t[i, j]``, ``t[i, a:b, :]`` with every leading dim indexed by a scalar are 2-D
  sub-tiles of the plane (rank-reducing, as upstream); ``t[i, j, :] = row`` and
  ``t[i, :, :] = plane`` write into it.

The kernel stays 2-D: every op sees the flattened tile. Element-wise ops of two N-D tiles of one
shape work on the flattened tiles as they are.
"""

from __future__ import annotations

import ast
import itertools
import math
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Assign, Const, Expr, ExprStmt, Var
from pypto.ir.types import TensorType, TileType
from pypto.language.fold import INDEX, fold
from pypto.language.parser.tuple_value import TupleValue

if TYPE_CHECKING:
    from pypto.language.parser.windows import _Windows

__all__ = ["MAX_PLANES", "flat_shape", "nd_load", "nd_shape_of", "nd_store", "nd_window"]

MAX_PLANES = 64
"""The most planes an N-D load or store is unrolled into (one instruction pair each)."""


def flat_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """The 2-D tile of an N-D shape: its leading dims flattened into rows."""
    return (math.prod(shape[:-1]), shape[-1])


def nd_shape_of(p: _Windows, value: Expr) -> tuple[int, ...] | None:
    """The N-D shape of a tile held flattened (``value`` or the name bound to it), else None."""
    nd = p.st.nd_shapes.get(id(value))
    if nd is None or not isinstance(value.type, TileType) or flat_shape(nd) != tuple(value.type.shape):
        return None
    return nd


def _bind(p: _Windows, base: str, value: Expr, node: ast.AST) -> Var:
    p.hoisted += 1
    var = Var(f"{p.prefix}_{base}{p.hoisted}", value.type, p.src.span(node))
    p.pending.append(Assign(var, value, p.src.span(node)))
    return var


def _planes(shape: tuple[int, ...], what: str, p: _Windows, node: ast.AST) -> list[tuple[int, ...]]:
    planes = list(itertools.product(*(range(d) for d in shape[:-2])))
    if len(planes) > MAX_PLANES:
        raise p.err(
            f"{what}: a tile of shape {list(shape)} has {len(planes)} [R, C] planes; at most {MAX_PLANES} "
            "are loaded or stored one by one (use a loop over smaller tiles)",
            node,
        )
    return planes


def _row_of(plane: tuple[int, ...], shape: tuple[int, ...]) -> int:
    """The first flattened row of ``plane`` in a tile of N-D ``shape``."""
    row = 0
    for i, d in zip(plane, shape[:-2], strict=True):
        row = row * d + i
    return row * shape[-2]


def nd_load(
    p: _Windows,
    tensor: Expr,
    *,
    offs: tuple[Expr, ...],
    shape: tuple[int, ...],
    attrs: dict[str, Any],
    node: ast.Call,
) -> Expr:
    """``pl.load`` of an N-D window: a flattened tile filled plane by plane (module docstring)."""
    tt = tensor.type
    if not isinstance(tt, TensorType) or len(tt.shape) != len(shape):
        raise p.err(f"pl.load: a tile of shape {list(shape)} is loaded from a rank-{len(shape)} tensor", node)
    if len(offs) != len(shape):
        raise p.err(f"pl.load: {len(offs)} offsets for a rank-{len(shape)} window", node)
    r, c = shape[-2], shape[-1]
    memory = attrs.get("memory")
    create: dict[str, Any] = {"shape": flat_shape(shape), "dtype": tt.dtype}
    if memory is not None:
        create["memory"] = memory
    whole: Expr = _bind(p, "nd", p.make_op("create_tile", [], create, node), node)
    unit = (1,) * (len(shape) - 2)
    for plane in _planes(shape, "pl.load", p, node):
        at = (
            tuple(
                fold("add", o, Const(i, INDEX), p.src.span(node)) for o, i in zip(offs, plane, strict=False)
            )
            + offs[len(plane) :]
        )
        one = dict(attrs)
        one["shape"] = (*unit, r, c)
        one["static_offsets"] = [o.value if isinstance(o, Const) else None for o in at]
        sub = _bind(p, "plane", p.make_op("load", [tensor, at], one, node), node)
        row = _row_of(plane, shape)
        whole = _bind(
            p,
            "nd",
            p.make_op(
                "assemble",
                [whole, sub, (Const(row, INDEX), Const(0, INDEX))],
                {"static_offsets": [row, 0]},
                node,
            ),
            node,
        )
    p.st.nd_shapes[id(whole)] = shape
    return whole


def nd_store(
    p: _Windows,
    tile: Expr | TupleValue,
    nd: tuple[int, ...],
    *,
    offs: tuple[Expr, ...],
    out: Expr,
    node: ast.Call,
) -> Expr:
    """``pl.store`` of an N-D tile: each plane stored at its place; the last store is the value.
    ``tile`` is the flattened tile, or the planes themselves (a ``pl.batch_matmul`` result)."""

    ot = out.type
    if not isinstance(ot, TensorType) or len(ot.shape) != len(nd) or len(offs) != len(nd):
        raise p.err(
            f"pl.store: a tile of shape {list(nd)} is stored into a rank-{len(nd)} tensor at {len(nd)} offsets",
            node,
        )
    r, c = nd[-2], nd[-1]
    planes = _planes(nd, "pl.store", p, node)
    last: Expr | None = None
    for k, plane in enumerate(planes):
        row = _row_of(plane, nd)
        if isinstance(tile, TupleValue):
            item = tile.items[k]
            assert not isinstance(item, TupleValue)
            sub: Expr = item
        else:
            sub = _bind(
                p,
                "plane",
                p.make_op(
                    "slice",
                    [tile, (Const(row, INDEX), Const(0, INDEX))],
                    {"shape": (r, c), "static_offsets": [row, 0]},
                    node,
                ),
                node,
            )
        at = (
            tuple(
                fold("add", o, Const(i, INDEX), p.src.span(node)) for o, i in zip(offs, plane, strict=False)
            )
            + offs[len(plane) :]
        )
        store = p.make_op(
            "store",
            [sub, at, out],
            {"static_offsets": [o.value if isinstance(o, Const) else None for o in at]},
            node,
        )
        if k < len(planes) - 1:
            p.pending.append(ExprStmt(store, p.src.span(node)))
        else:
            last = store
    assert last is not None
    return last


def nd_window(
    p: _Windows, base: Expr, nd: tuple[int, ...], target: ast.Subscript
) -> tuple[list[Expr], list[Any]]:
    """The 2-D window (offsets, extents) of ``t[...]`` on an N-D tile: every leading dim indexed
    by a scalar, then the ``[R, C]`` plane's rows and columns as in a 2-D tile."""
    items = list(target.slice.elts) if isinstance(target.slice, ast.Tuple) else [target.slice]
    lead = len(nd) - 2
    if len(items) > len(nd):
        raise p.err(f"{len(items)} indices for a rank-{len(nd)} tile", target.slice)
    if len(items) < lead or any(isinstance(i, ast.Slice) for i in items[:lead]):
        raise p.err(
            f"a tile of shape {list(nd)} is held as [{', '.join(map(str, flat_shape(nd)))}]: index each of its "
            f"{lead} leading dim(s) by a scalar, such as t[i] or t[i, a:b, :]",
            target,
        )
    span = p.src.span(target)
    row: Expr = Const(0, INDEX)
    for item, d in zip(items[:lead], nd[:lead], strict=True):
        row = fold("add", fold("mul", row, Const(d, INDEX), span), p.scalar(item, "a tile index"), span)
    row = fold("mul", row, Const(nd[-2], INDEX), span)
    plane = ast.copy_location(ast.Tuple(elts=items[lead:], ctx=ast.Load()), target.slice)
    sub = ast.copy_location(ast.Subscript(value=target.value, slice=plane, ctx=ast.Load()), target)
    plane_tile = Var("_plane", TileType((nd[-2], nd[-1]), base.type.dtype, base.type.memory))  # type: ignore[union-attr]
    offsets: list[Expr] = [Const(0, INDEX), Const(0, INDEX)]
    extents: list[Any] = [nd[-2], nd[-1]]
    if items[lead:]:
        offsets, extents = p.window(plane_tile, sub)
    offsets[0] = fold("add", row, offsets[0], span)
    return offsets, extents
