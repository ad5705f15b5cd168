"""The type rules of sub-tiles and tensor windows (assemble, slice, view, valid shape),
padding, single elements (read, write) and ``pl.print``."""

from __future__ import annotations

from typing import Any

from pypto.ir.ops.movement_rules import _check_window
from pypto.ir.ops.operand_checks import VEC, _same_dtype, _tensor, _tensor_like, _tile, _tile_shape
from pypto.ir.ops.spec import OpError
from pypto.ir.types import DynDim, MemorySpace, ScalarType, TensorType, TileType, Type


def _fits(outer: tuple[int, ...], inner: tuple[int, ...], offsets: list[Any], op: str) -> None:
    for axis, (o, n, m) in enumerate(zip(offsets, inner, outer, strict=True)):
        if isinstance(o, int) and (o < 0 or o + n > m):
            raise OpError(
                f"pl.{op}: the region [{o}, {o + n}) on axis {axis} does not fit the tile extent {m}"
            )


def tile_assemble(args: list[Type], attrs: dict[str, Any]) -> Type:
    target = _tile(args[0], "assemble", "the target", (MemorySpace.Vec, MemorySpace.Mat))
    src = _tile(args[1], "assemble", "the source")
    _same_dtype(target.dtype, src.dtype, "assemble")
    _fits(target.shape, src.shape, list(attrs.get("static_offsets", [None, None])), "assemble")
    return target


def tensor_assemble(args: list[Type], attrs: dict[str, Any]) -> Type:
    target = _tensor(args[0], "assemble", "the target")
    src = args[1]
    if not isinstance(src, (TileType, TensorType)):
        raise OpError(f"pl.assemble: the source must be a tile or a tensor-level value, got {src}")
    _same_dtype(target.dtype, src.dtype, "assemble")
    if isinstance(src, TensorType) and not src.is_static:
        raise OpError(f"pl.assemble: the source needs a static shape, got {list(src.shape)}")
    shape = src.shape if isinstance(src, TileType) else src.static_shape
    if len(shape) < len(target.shape):  # a tile into a higher-rank tensor: leading dims of 1
        shape = (1,) * (len(target.shape) - len(shape)) + tuple(shape)
    if len(shape) != len(target.shape):
        raise OpError(
            f"pl.assemble: the source {list(shape)} has rank {len(shape)} but the target has rank {len(target.shape)}"
        )
    _check_window(
        target, list(attrs.get("static_offsets", [None] * len(target.shape))), tuple(shape), "assemble"
    )
    if isinstance(src, TileType) and src.memory not in (MemorySpace.Vec, MemorySpace.Acc):
        raise OpError(
            f"pl.assemble: a tile source into a tensor must be in Vec or Acc, got {src.memory.value}"
        )
    return target


def tile_slice(args: list[Type], attrs: dict[str, Any]) -> Type:
    src = _tile(args[0], "slice", "the source")
    shape = _tile_shape(attrs["shape"], "slice")
    _fits(src.shape, shape, list(attrs.get("static_offsets", [None, None])), "slice")
    return TileType(shape, src.dtype, src.memory)


# where TEXTRACT may take a sub-tile: Mat to the cube's operand buffers, Acc to Mat, Vec to Vec
_EXTRACT_TARGETS = {
    MemorySpace.Mat: (MemorySpace.Left, MemorySpace.Right),
    MemorySpace.Acc: (MemorySpace.Mat,),
    MemorySpace.Vec: (MemorySpace.Vec,),
}


def tile_extract(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.extract(src, index_row, index_col, shape, target_memory=...)`` (PTO-ISA
    TEXTRACT): the ``shape`` window of ``src`` at the offsets, in ``target_memory``."""
    src = _tile(args[0], "tile.extract", "src", tuple(_EXTRACT_TARGETS))
    shape = _tile_shape(attrs["shape"], "tile.extract")
    _fits(src.shape, shape, list(attrs.get("static_offsets", [None, None])), "tile.extract")
    target = attrs["memory"]
    allowed = _EXTRACT_TARGETS[src.memory]
    if target not in allowed:
        names = " or ".join(m.value for m in allowed)
        raise OpError(
            f"pl.tile.extract: from a {src.memory.value} tile the target_memory is {names}, got {target.value}"
        )
    return TileType(shape, src.dtype, target)


def tile_set_validshape(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.set_validshape(tile, rows, cols)``: the same tile (type and data) with a new valid shape."""
    t = _tile(args[0], "set_validshape", "the operand")
    if len(t.shape) != 2:
        raise OpError(f"pl.set_validshape: needs a 2-D tile, got shape {list(t.shape)}")
    for what, v in zip(("valid_rows", "valid_cols"), args[1:], strict=True):
        if not isinstance(v, ScalarType) or not (v.dtype.is_signed_int or v.dtype.is_unsigned_int):
            raise OpError(
                f"pl.set_validshape: {what} must be an integer (a constant or an index scalar), got {v}"
            )
    return t


def tile_fillpad(args: list[Type], attrs: dict[str, Any]) -> Type:
    return _tile(args[0], "fillpad", "the operand", VEC)


def tensor_fillpad(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor_like(args[0], "fillpad", "the operand")
    return TensorType(t.shape, t.dtype)


def _expanded(src_shape: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[int, ...]:
    shape = tuple(attrs["shape"])
    if len(shape) != len(src_shape) or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(
            f"pl.fillpad_expand: shape must be {len(src_shape)} positive integer constants (the source's "
            f"rank), got {list(shape)}"
        )
    if any(isinstance(s, int) and d < s for d, s in zip(shape, src_shape, strict=True)):
        raise OpError(
            f"pl.fillpad_expand: shape {list(shape)} must be at least the source's {list(src_shape)} in "
            "every dimension"
        )
    return shape


def tile_fillpad_expand(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "fillpad_expand", "the operand", VEC)
    return TileType(_expanded(t.shape, attrs), t.dtype, MemorySpace.Vec)


def tensor_fillpad_expand(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor_like(args[0], "fillpad_expand", "the operand")
    return TensorType(_expanded(tuple(t.shape), attrs), t.dtype)


def tensor_read(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "read", "the source")
    return ScalarType(t.dtype)


def tensor_view(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "view", "the source")
    shape = tuple(attrs["shape"])
    if len(shape) != len(t.shape) or any(
        not isinstance(d, DynDim) and (not isinstance(d, int) or d <= 0) for d in shape
    ):
        raise OpError(f"tensor window: shape {list(shape)} must give one positive extent per dim of {t}")
    static = tuple(d if isinstance(d, int) else 0 for d in shape)
    _check_window(t, list(attrs.get("static_offsets", [None] * len(t.shape))), static, "view")
    return TensorType(shape, t.dtype, t.layout)


def debug_print(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.print(value)``: a tile or a scalar, returned unchanged (the call is a statement)."""
    (a,) = args
    if isinstance(a, TensorType):
        raise OpError(
            "pl.print: prints tiles and scalars inside a kernel, got a tensor; load the part you want to see "
            "(pl.load) and print the tile"
        )
    if not isinstance(a, (TileType, ScalarType)):
        raise OpError(f"pl.print: prints tiles and scalars, got {a}")
    return a


def tile_read(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "read", "the source", VEC)
    return ScalarType(t.dtype)


def tile_write(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "write", "the destination", VEC)
    if not isinstance(args[1], ScalarType):
        raise OpError(f"pl.write: the value must be a scalar, got {args[1]}")
    for axis, (o, dim) in enumerate(zip(attrs.get("static_offsets") or (), t.shape, strict=False)):
        if o is not None and not 0 <= o < dim:
            raise OpError(f"pl.write: index {o} on axis {axis} is outside the tile {list(t.shape)}")
    return t


def tensor_write(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "write", "the destination")
    if not isinstance(args[1], ScalarType):
        raise OpError(f"pl.write: the value must be a scalar, got {args[1]}")
    return t
