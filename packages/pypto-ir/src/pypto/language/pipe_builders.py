"""The parser's builders of the cross-core pipe ops (pypto/ir/ops/pipe_ops.py): each is used on
its side of the pipe (a cube op in an AIC or mixed InCore function, a vector op in an AIV or
InCore one), ``split`` / ``lane_stride`` / ``id`` are ints known when compiling, and a pop
takes its tile type from ``shape=`` / ``dtype=`` or from the assignment's ``pl.Tile[...]``
annotation; registered in ``OP_BUILDERS`` by ``op_builders``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Expr
from pypto.ir.ops.pipe_ops import CUBE_SIDE
from pypto.ir.types import FunctionType, TileType
from pypto.language import typing as lt
from pypto.language.op_builders import OP_BUILDERS
from pypto.language.parser.common import tile_shape

if TYPE_CHECKING:
    from pypto.language.parser.calls import _Calls as _Parser

_SPLITS = {"tpush_to_aiv": 4, "tpop_from_aic": 4, "tpush_to_aic": 2, "tpop_from_aiv": 2}


def _side(p: _Parser, name: str, node: ast.Call) -> None:
    cube = name in CUBE_SIDE
    wrong = FunctionType.AIV if cube else FunctionType.AIC
    if p.st.func_type is wrong:
        where, other = ("a cube (AIC)", "vector (AIV)") if cube else ("a vector (AIV)", "cube (AIC)")
        raise p.err(
            f"pl.{name} runs on {where} core, but this is a {other} function "
            f"(@pl.function(type=pl.FunctionType.{wrong.value}))",
            node,
        )
    if not p.st.func_type.is_kernel and not p.st.in_scope:
        raise p.err(f"pl.{name} runs on a core: use it in a kernel (an AIC, AIV or InCore function)", node)


def _int(
    p: _Parser, b: dict[str, Any], key: str, name: str, node: ast.Call, *, top: int | None
) -> int | None:
    if key not in b or (isinstance(b[key], ast.Constant) and b[key].value is None):
        return None
    v = p.static_value(b[key], f"pl.{name} {key}", node)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0 or (top is not None and v > top):
        bound = f"0 to {top}" if top is not None else ">= 0"
        raise p.err(f"pl.{name}({key}): expected an int {bound} known when compiling, got {v!r}", node)
    return v


def _attrs(p: _Parser, b: dict[str, Any], name: str, node: ast.Call) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for key in ("split", "lane_stride", "id"):
        v = _int(p, b, key, name, node, top=_SPLITS.get(name) if key == "split" else None)
        if v is not None:
            attrs[key] = v
    return attrs


def _build_push(p: _Parser, name: str, b: dict[str, Any], node: ast.Call) -> Expr:
    _side(p, name, node)
    return p.make_op(name, [p.expr(b["tile"])], _attrs(p, b, name, node), node)


def _build_pop(p: _Parser, name: str, b: dict[str, Any], node: ast.Call) -> Expr:
    _side(p, name, node)
    attrs = _attrs(p, b, name, node)
    attrs.setdefault("split", 0)
    ann = _annotation(p)
    if "shape" in b:
        attrs["shape"] = tile_shape(p.shape(b["shape"], f"pl.{name} shape"))
    elif ann is not None:
        attrs["shape"] = tile_shape(tuple(ann.shape))
    if "dtype" in b:
        attrs["dtype"] = p.dtype(b["dtype"], f"pl.{name} dtype")
    elif ann is not None:
        attrs["dtype"] = ann.dtype
    if "shape" not in attrs or "dtype" not in attrs:
        raise p.err(
            f"pl.{name}(): the popped tile's type is not known: give shape= and dtype=, or assign it "
            "to an annotated name (t: pl.Tile[[64], pl.FP32] = ...)",
            node,
        )
    if ann is not None and ann.memory is not None:
        attrs["memory"] = ann.memory
    return p.make_op(name, [], attrs, node)


def _build_free(p: _Parser, name: str, b: dict[str, Any], node: ast.Call) -> Expr:
    _side(p, name, node)
    tile = p.expr(b["tile"])
    if not isinstance(tile.type, TileType):
        raise p.err(f"pl.{name}(tile): expected the tile a pop gave, got {tile.type}", node)
    return p.make_op(name, [tile], _attrs(p, b, name, node), node)


def _annotation(p: _Parser) -> lt.TileAnnotation | None:
    """The ``pl.Tile[...]`` annotation of the assignment being parsed, if it has one."""
    node = getattr(p, "assign_ann", None)
    if node is None:
        return None
    try:
        ann = eval(compile(ast.Expression(node), p.src.file, "eval"), dict(p.src.namespace))
    except Exception:
        return None  # the assignment's own check reports a bad annotation
    return ann if isinstance(ann, lt.TileAnnotation) else None


OP_BUILDERS.update(
    {
        "tpush_to_aiv": _build_push,
        "tpush_to_aic": _build_push,
        "tpop_from_aic": _build_pop,
        "tpop_from_aiv": _build_pop,
        "tfree_to_aic": _build_free,
        "tfree_to_aiv": _build_free,
    }
)
