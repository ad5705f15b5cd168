"""The conversions the parser performs where a value meets an annotation or a window.

Upstream PyPTO infers some result dtypes differently from this IR (a tensor times a Python
float is FP32 there; a tensor-level ``pl.matmul`` keeps its operands' dtype there), so a
program annotated with upstream's dtype names a tensor-level value of another dtype here. Such a
value is converted to the annotated dtype (``pl.cast``, its default rounding). Tiles are not
converted: a tile annotation must match the tile, as upstream requires.

Upstream's tensor-level element-wise ops also promote and broadcast their operands; so do
they here (``tensor_operands``): of two float operands of different dtypes the narrower is
cast to the wider, and a ``[R, 1]`` (``[1, C]``) operand of a ``[R, C]`` one makes the op its
``row_expand_*`` (``col_expand_*``) form; a tensor-level ``pl.assemble`` source of another
float dtype is cast to the target's. Tile-level ops keep their exact rules, but for two
hardware paths upstream takes implicitly: a tile ``pl.matmul`` of Vec tiles moves them to the
cube (Vec -> Mat -> Left/Right), and a float Acc tile stored into a tensor of another float
dtype is converted on the way (moved to Vec and cast, where the chip's fixpipe converts).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Arg, Expr
from pypto.ir.types import MemorySpace, TensorType, TileType
from pypto.language import typing as lt

if TYPE_CHECKING:
    from pypto.language.parser.common import _ParserBase

__all__ = ["annotated_value", "tensor_operands"]


def annotated_value(p: _ParserBase, ann: Any, value: Any, at: ast.expr) -> Any:
    """``value`` as the annotation ``ann`` names it: a tensor-level value whose dtype differs from
    a tensor annotation of the same shape is cast to the annotated dtype; anything else is
    returned as it is (the annotation check then decides)."""
    if not isinstance(ann, lt.TensorAnnotation) or ann.dtype is None or not isinstance(value, Expr):
        return value
    ty = value.type
    if not isinstance(ty, TensorType) or ty.dtype is ann.dtype:
        return value
    if ann.shape is not None and tuple(ann.shape) != tuple(ty.shape):
        return value
    return p.make_op("cast", [value], {"dtype": ann.dtype}, at)


_BROADCASTING = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "max", "minimum": "min"}
"""Element-wise ops that broadcast a vector operand, and their ``*_expand_<name>`` suffix."""

_COMMUTATIVE = frozenset({"add", "mul", "maximum", "minimum"})


def _width(dtype: DataType) -> int:
    return {DataType.FP32: 3, DataType.BF16: 2, DataType.FP16: 2}.get(dtype, 0)


def _float_to_float(src: DataType, dst: DataType) -> bool:
    """Whether a value of float dtype ``src`` converts to another float dtype ``dst``."""
    return src is not dst and src.is_float and dst.is_float


def tensor_operands(p: _ParserBase, opname: str, args: list[Arg], at: ast.AST) -> tuple[str, list[Arg]]:
    """The op and operands a tensor-level element-wise op runs as: float operands promoted to the
    wider dtype and a vector operand broadcast by the ``row_expand_*``/``col_expand_*`` form
    (module docstring). Anything else is returned unchanged."""
    if opname == "assemble" and len(args) == 3:  # a tensor target takes its source's values in its dtype
        target, source = args[0], args[1]
        if (
            isinstance(target, Expr)
            and isinstance(source, Expr)
            and isinstance(target.type, TensorType)
            and isinstance(source.type, TensorType)
            and _float_to_float(source.type.dtype, target.type.dtype)
        ):
            return opname, [target, p.make_op("cast", [source], {"dtype": target.type.dtype}, at), args[2]]
        return opname, args
    if opname == "store" and len(args) == 3:  # an Acc tile converts on its way out, as the fixpipe does
        tile, out = args[0], args[2]
        if (
            isinstance(tile, Expr)
            and isinstance(out, Expr)
            and isinstance(tile.type, TileType)
            and isinstance(out.type, TensorType)
            and tile.type.memory is MemorySpace.Acc
            and _float_to_float(tile.type.dtype, out.type.dtype)
        ):
            vec = p.make_op("move", [tile], {"memory": MemorySpace.Vec}, at)
            return opname, [p.make_op("cast", [vec], {"dtype": out.type.dtype}, at), args[1], out]
        return opname, args
    if (
        opname == "matmul"
        and len(args) == 2
        and all(isinstance(a, Expr) and isinstance(a.type, TileType) for a in args)
    ):
        # a tile matmul; one with a tensor operand is tensor-level and lowers its operands itself
        return opname, [
            _to_cube(p, a, space, at)
            for a, space in zip(args, (MemorySpace.Left, MemorySpace.Right), strict=True)
        ]
    suffix = _BROADCASTING.get(opname)
    if suffix is None or len(args) != 2:
        return opname, args
    a, b = args
    if not (isinstance(a, Expr) and isinstance(b, Expr)):
        return opname, args
    ta, tb = a.type, b.type
    if not isinstance(ta, (TensorType, TileType)) or not isinstance(tb, (TensorType, TileType)):
        return opname, args
    if not (isinstance(ta, TensorType) or isinstance(tb, TensorType)):
        return opname, args
    if ta.dtype is not tb.dtype and ta.dtype.is_float and tb.dtype.is_float:
        wa, wb = _width(ta.dtype), _width(tb.dtype)
        if wa and wb and wa != wb:
            if wa < wb:
                a = p.make_op("cast", [a], {"dtype": tb.dtype}, at)
            else:
                b = p.make_op("cast", [b], {"dtype": ta.dtype}, at)
    sa, sb = tuple(a.type.shape), tuple(b.type.shape)  # type: ignore[union-attr]
    if len(sa) == len(sb) >= 2 and sa != sb:  # of rank 3 and more, the row form (each plane's rows)
        if sb == (*sa[:-1], 1) and sa[-1] != 1:
            return f"row_expand_{suffix}", [a, b]
        if len(sa) == 2 and sb == (1, sa[1]) and sa[0] != 1:
            return f"col_expand_{suffix}", [a, b]
        if opname in _COMMUTATIVE and (sa == (*sb[:-1], 1) or (len(sa) == 2 and sa == (1, sb[1]))):
            return tensor_operands(p, opname, [b, a], at)
    return opname, [a, b]


def _to_cube(p: _ParserBase, a: Arg, space: MemorySpace, at: ast.AST) -> Arg:
    """A Vec tile operand of a tile matmul moved where the cube reads it (Vec -> Mat -> ``space``),
    as upstream moves it; any other operand unchanged."""
    if not isinstance(a, Expr) or not isinstance(a.type, TileType) or a.type.memory is not MemorySpace.Vec:
        return a
    mat = p.make_op("move", [a], {"memory": MemorySpace.Mat}, at)
    return p.make_op("move", [mat], {"memory": space}, at)
