"""Subscript forms of tiles and tensors beyond a plain window (statements.py reads those).

A sub-tile ``t[a:b, c:d]`` has a static shape. Where a bound is a run-time scalar
(``t[:, :n]``) the sub-tile's shape runs to the end of the tile and ``n`` becomes its valid
extent (``pl.set_validshape``); a constant bound past the tile's end is clamped to it
(``t[:, :256]`` of a 128-wide tile is 128 wide), as upstream does.

A write ``out[w] = v`` of a tensor-level value fits ``v`` to the window ``w`` as upstream does:
a window with leading one-wide (scalar-indexed) dims takes a value without them
(``C[i, j] = rhs`` of a ``[64, 64]`` rhs into a rank-4 ``C``); a value narrowed by
``pl.set_validshape`` (or a ``pl.slice`` with ``valid_shape``) fills a window of its valid shape
(the value's part at its origin is written); a window extent that is a run-time scalar
(``out[:, :k] = src``) is taken to be the value's extent (upstream trusts it too).

A chained index ``C[i][j]`` of a tensor whose first subscript is all scalars is ``C[i, j]``.

In a kernel, ``out = <tensor-level computation>`` (an op the table runs on a core, not an
assemble) of a ``pl.Out``/``pl.InOut`` parameter ``out`` of the value's type writes the whole
parameter (``out[...] = value``), as upstream returns such a value through the parameter;
``out`` still names the parameter.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Call, Const, Expr, Stmt, TensorWrite, Var
from pypto.ir.ops import OPS
from pypto.ir.types import Dim, ScalarType, TensorType, TileType
from pypto.language.fold import INDEX
from pypto.language.parser.nd_tiles import nd_shape_of, nd_window

if TYPE_CHECKING:
    from pypto.language.parser.windows import _Windows

__all__ = [
    "chained",
    "fit_to_window",
    "lifted",
    "note_valid_shape",
    "out_param_write",
    "scalar_lead",
    "tensor_set_validshape",
    "tile_subscript",
    "tile_window",
    "tile_write_window",
    "trusted_extents",
]


def tile_subscript(p: _Windows, base: Expr, node: ast.Subscript) -> Expr:
    """``t[...]`` of a tile: one element (``pl.read``) or a sub-tile (``tile_window``); of an
    N-D tile, a sub-tile of one of its planes (parser/nd_tiles.py)."""
    nd = nd_shape_of(p, base)
    if nd is not None:
        return tile_window(p, base, node, nd_window(p, base, nd, node))
    index = p.element_index(base, node)
    if index is not None:  # t[i, j]: one element, as pl.read(t, [i, j])
        return p.make_op("read", [base, tuple(index)], {}, node)
    return tile_window(p, base, node)


def tile_write_window(p: _Windows, tvar: Expr, target: ast.Subscript) -> tuple[list[Expr], list[Any]]:
    """The window ``t[...] = v`` writes into a tile (of an N-D tile, into one of its planes)."""
    nd = nd_shape_of(p, tvar)
    if nd is not None:
        return nd_window(p, tvar, nd, target)
    return p.window(tvar, target)


def tile_window(
    p: _Windows, base: Expr, node: ast.Subscript, window: tuple[list[Expr], list[Any]] | None = None
) -> Expr:
    """``t[...]`` of a tile that is not one element: ``pl.slice`` with a static shape (module
    docstring), narrowed by ``pl.set_validshape`` where an extent is only known at run time.
    ``window`` is the (offsets, extents) when the caller has worked them out."""
    tt = base.type
    assert isinstance(tt, TileType)
    offsets, extents = window if window is not None else p.window(base, node, runtime_ok=True)
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


def tensor_set_validshape(p: _Windows, src: Expr, valid: list[Expr], node: ast.AST) -> Expr:
    """``pl.set_validshape(tensor, rows, cols)``: the tensor as a window of its whole shape whose
    valid part is ``rows`` x ``cols`` (a constant valid shape is the window's ``valid_shape``)."""
    tt = src.type
    assert isinstance(tt, TensorType)
    if len(tt.shape) != 2:
        raise p.err(f"pl.set_validshape: needs a 2-D tensor, got shape {list(tt.shape)}", node)
    for what, v, full in zip(("valid_rows", "valid_cols"), valid, tt.shape, strict=True):
        if isinstance(v, Const) and isinstance(full, int) and not 0 <= int(v.value) <= full:
            raise p.err(
                f"pl.set_validshape: {what} {int(v.value)} is outside [0, {full}] (the tensor is "
                f"{list(tt.shape)})",
                node,
            )
        if not isinstance(v.type, ScalarType) or v.type.dtype.is_float or v.type.dtype is DataType.BOOL:
            raise p.err(
                f"pl.set_validshape: {what} must be an integer (a constant or an index scalar), got {v.type}",
                node,
            )
    attrs: dict[str, Any] = {"shape": tuple(tt.shape), "static_offsets": [0, 0]}
    if all(isinstance(v, Const) for v in valid):
        attrs["valid_shape"] = [int(v.value) for v in valid]  # type: ignore[union-attr]
    view = p.make_op("view", [src, (Const(0, INDEX), Const(0, INDEX))], attrs, node)
    p.st.valid_shapes[id(view)] = tuple(valid)
    return view


# The cube products: (position of the left operand, of the right one); their result is valid
# over the left operand's valid rows and the right operand's valid columns.
_PRODUCTS = {"tile.matmul": (0, 1), "tile.matmul_bias": (0, 1), "tile.gemv": (0, 1), "tile.gemv_bias": (0, 1)}


def valid_shape_of(p: _Windows, value: Expr) -> tuple[Expr, ...] | None:
    """The valid shape ``value`` was narrowed to, or None when it is valid throughout: a
    ``pl.set_validshape``, a window with a valid shape, a ``pl.load(..., valid_shape=...)``, a
    move of a narrowed tile, and a cube product of narrowed operands (or accumulated into a
    narrowed accumulator)."""
    known = p.st.valid_shapes.get(id(value))
    if known is not None:
        return known
    if not isinstance(value, Call):
        return None
    if value.op == "tile.set_validshape":
        return tuple(value.args[1:])  # type: ignore[arg-type]
    if value.op == "tile.load" and len(value.args) > 2:
        return tuple(value.args[2])  # type: ignore[arg-type]
    if value.op in ("tile.move", "tile.matmul_acc", "tile.gemv_acc"):  # the operand's, the accumulator's
        return valid_shape_of(p, value.args[0])  # type: ignore[arg-type]
    if value.op in _PRODUCTS:
        lhs, rhs = (value.args[i] for i in _PRODUCTS[value.op])
        lv, rv = valid_shape_of(p, lhs), valid_shape_of(p, rhs)  # type: ignore[arg-type]
        if lv is None and rv is None:
            return None
        lt, rt = lhs.type, rhs.type  # type: ignore[union-attr]
        assert isinstance(lt, TileType)
        assert isinstance(rt, TileType)
        rows = lv[0] if lv is not None else Const(int(lt.shape[0]), INDEX)
        cols = rv[1] if rv is not None else Const(int(rt.shape[1]), INDEX)
        return (rows, cols)
    if value.op == "tensor.view":
        vs = dict(value.attrs).get("valid_shape")
        if vs is not None:
            return tuple(Const(int(v), INDEX) for v in vs)
    return None


def note_valid_shape(p: _Windows, var: Var, value: Expr) -> None:
    """Remember that the name ``var`` holds a narrowed value (``valid_shape_of``) or an N-D tile
    (``nd_shape_of``)."""
    valid = valid_shape_of(p, value)
    if valid is not None:
        p.st.valid_shapes[id(var)] = valid
    if isinstance(value, Call) and value.op == "tile.transpose_view":
        inner = p.st.nd_shapes.get(id(value.args[0]))
        if inner is not None:  # the planes of [.., R, C] read as [.., C, R], side by side in columns
            p.st.nd_columns[id(var)] = (*inner[:-2], inner[-1], inner[-2])
    nd = p.st.nd_shapes.get(id(value))
    if nd is None and isinstance(value, Call) and "matmul" not in value.op:
        # an element-wise result of an N-D tile: the same shape, the same planes
        same = [
            p.st.nd_shapes[id(a)]
            for a in value.args
            if isinstance(a, Expr) and a.type == value.type and id(a) in p.st.nd_shapes
        ]
        nd = same[0] if same else None
    if nd is not None:
        p.st.nd_shapes[id(var)] = nd


def scalar_lead(target: ast.Subscript) -> int:
    """How many leading dims of the window ``target`` are indexed by a scalar (``C[i, j]``)."""
    items = list(target.slice.elts) if isinstance(target.slice, ast.Tuple) else [target.slice]
    n = 0
    while n < len(items) and not isinstance(items[n], ast.Slice):
        n += 1
    return n


def lifted(shape: tuple[Dim, ...], rank: int, lift: int) -> tuple[Dim, ...]:
    """``shape`` with leading ones up to ``rank``, at most ``lift`` of them (the window's
    scalar-indexed leading dims, which a value need not have), or without leading ones
    beyond ``rank``."""
    if len(shape) < rank and rank - len(shape) <= lift:
        return (1,) * (rank - len(shape)) + tuple(shape)
    if len(shape) > rank and all(d == 1 for d in shape[: len(shape) - rank]):
        return tuple(shape[len(shape) - rank :])  # a window view's own leading ones (C[i][j])
    return tuple(shape)


def trusted_extents(vt: Any, extents: list[Any], lift: int) -> list[Any]:
    """The window's extents with each run-time one replaced by the value's extent there."""
    if all(isinstance(e, int) for e in extents):
        return extents
    shape = lifted(tuple(vt.shape), len(extents), lift)
    if len(shape) != len(extents):
        return extents
    return [e if isinstance(e, int) else d for e, d in zip(extents, shape, strict=True)]


def fit_to_window(p: _Windows, value: Expr, extents: list[Any], lift: int, node: ast.AST) -> Expr:
    """``value`` to write into a window of ``extents`` (module docstring): itself, or its part at
    the origin when it was narrowed to a valid shape that is the window's. Where nothing fits,
    ``value`` is returned and the caller reports the mismatch."""
    vt = value.type
    if not isinstance(vt, (TensorType, TileType)):
        return value
    want = lifted(tuple(vt.shape), len(extents), lift)
    if len(want) != len(extents):
        return value
    if all(not isinstance(e, int) or e == d for e, d in zip(extents, want, strict=True)):
        return value
    valid = valid_shape_of(p, value)
    if valid is None or len(valid) != len(vt.shape) or len(vt.shape) > len(extents):
        return value
    core = list(extents[len(extents) - len(vt.shape) :])
    for e, d, v in zip(core, vt.shape, valid, strict=True):
        if not isinstance(e, int) or e == d:
            continue
        if isinstance(v, Const) and int(v.value) != e:
            return value
        if not isinstance(d, int) or e > d:
            return value
    shape = tuple(e if isinstance(e, int) else d for e, d in zip(core, vt.shape, strict=True))
    zeros = tuple(Const(0, INDEX) for _ in shape)
    attrs: dict[str, Any] = {"shape": shape, "static_offsets": [0] * len(shape)}
    return p.make_op("view" if isinstance(vt, TensorType) else "slice", [value, zeros], attrs, node)


def chained(p: _Windows, node: ast.Subscript) -> ast.Subscript:
    """``C[i][j]`` of a tensor name as ``C[i, j]`` when ``C[i]`` indexes by scalars only (the
    later subscript then indexes the dims the first left); any other subscript unchanged."""
    inner = node.value
    if not isinstance(inner, ast.Subscript) or not isinstance(inner.value, ast.Name):
        return node
    base = p.st.env.get(inner.value.id)
    if not isinstance(base, Var) or not isinstance(base.type, TensorType):
        return node
    first = list(inner.slice.elts) if isinstance(inner.slice, ast.Tuple) else [inner.slice]
    if any(isinstance(i, ast.Slice) for i in first):
        return node
    second = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    merged = ast.copy_location(ast.Tuple(elts=first + second, ctx=ast.Load()), inner.slice)
    return ast.copy_location(ast.Subscript(value=inner.value, slice=merged, ctx=ast.Load()), node)


def out_param_write(p: _Windows, name: str, value: Expr, s: ast.stmt) -> Stmt | None:
    """``name = value`` in a kernel as a write of the whole ``pl.Out``/``pl.InOut`` parameter
    ``name`` (module docstring), or None when it is an ordinary binding."""
    param = p.st.env.get(name)
    if not (p.st.func_type.is_kernel and isinstance(param, Var) and id(param) in p.st.out_params):
        return None
    pt = param.type
    if not isinstance(pt, TensorType) or value.type != pt or not isinstance(value, Call):
        return None
    if not value.op.startswith("tensor.") or not OPS[value.op].on_core or value.op == "tensor.assemble":
        return None  # not a computed value: a store, write or comm op returns the tensor it took
    zeros = tuple(Const(0, INDEX) for _ in pt.shape)
    p.st.saw_tile = True
    return TensorWrite(param, zeros, value, p.src.span(s))
