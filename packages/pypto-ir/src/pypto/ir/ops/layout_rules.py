"""The type rules of the shape and type ops: reshape, transpose, concat and cast, of tiles,
of tensors inside ``pl.at`` (lowered to the tile op on the whole static tensor) and of scalars."""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.cast_modes import DEFAULT as CAST_DEFAULT
from pypto.ir.ops.cast_modes import cast_mode
from pypto.ir.ops.movement_rules import tile_shape_for
from pypto.ir.ops.operand_checks import VEC, _same_dtype, _tensor, _tile
from pypto.ir.ops.spec import OpError
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type


def tile_reshape(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "reshape", "the operand", VEC)
    shape = tuple(attrs["shape"])
    n = 1
    for d in shape:
        n *= d
    if len(shape) != 2 or n != t.numel:
        raise OpError(
            f"pl.reshape: cannot reshape {list(t.shape)} ({t.numel} elements) to {list(shape)}; "
            "the new 2-D shape must hold the same number of elements"
        )
    return TileType(shape, t.dtype, t.memory)


def tile_transpose(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "transpose", "the operand", VEC)
    return TileType((t.shape[1], t.shape[0]), t.dtype, t.memory)


def tile_transpose_view(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "tile.transpose_view", "the operand", (MemorySpace.Mat, MemorySpace.Vec))
    if len(t.shape) != 2:
        raise OpError(f"pl.tile.transpose_view: the operand must be a 2-D tile, got shape {list(t.shape)}")
    return TileType((t.shape[1], t.shape[0]), t.dtype, t.memory)


def tile_concat(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tile(args[0], "concat", "the first operand", VEC)
    b = _tile(args[1], "concat", "the second operand", VEC)
    _same_dtype(a.dtype, b.dtype, "concat")
    if a.shape[0] != b.shape[0]:
        raise OpError(f"pl.concat: row counts differ: {a.shape[0]} vs {b.shape[0]}; concat joins columns")
    return TileType((a.shape[0], a.shape[1] + b.shape[1]), a.dtype, a.memory)


CASTABLE = {
    DataType.FP32,
    DataType.FP16,
    DataType.BF16,
    DataType.INT8,
    DataType.INT16,
    DataType.INT32,
    DataType.UINT8,
    DataType.UINT16,
    DataType.UINT32,
}


def tile_cast(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "cast", "the operand", VEC)
    if attrs.get("mode") is not None:
        cast_mode(attrs["mode"])
    to = attrs["dtype"]
    for d in (t.dtype, to):
        if d not in CASTABLE:
            names = ", ".join(sorted(x.value for x in CASTABLE))
            raise OpError(f"pl.cast: {d.value} is not castable; supported: {names}")
    return TileType(t.shape, to, t.memory)


def tensor_cast(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "cast", "the operand")
    if attrs.get("mode") is not None:
        cast_mode(attrs["mode"])
    return TensorType(t.shape, attrs["dtype"])


def scalar_cast(args: list[Type], attrs: dict[str, Any]) -> Type:
    if not isinstance(args[0], ScalarType):
        raise OpError(f"pl.cast: expected a scalar, got {args[0]}")
    mode = attrs.get("mode")
    if mode is not None and cast_mode(mode) != CAST_DEFAULT:
        raise OpError(f"pl.cast: a scalar takes the default mode {CAST_DEFAULT!r} only, got mode={mode!r}")
    return ScalarType(attrs["dtype"])


def tensor_reshape(args: list[Type], attrs: dict[str, Any]) -> Type:
    x = _tensor(args[0], "reshape", "the operand")
    if not x.is_static:
        raise OpError(f"pl.reshape: needs a static shape, got {x}")
    t = tile_reshape([TileType(tile_shape_for(len(x.shape), x.static_shape, "reshape"), x.dtype)], attrs)
    assert isinstance(t, TileType)
    return TensorType(t.shape, x.dtype)


def tensor_transpose(args: list[Type], attrs: dict[str, Any]) -> Type:
    """The last two axes swapped (of every ``[M, N]`` plane, for a tensor of rank 3 or more)."""
    x = _tensor(args[0], "transpose", "the operand")
    if len(x.shape) < 2:
        raise OpError(f"pl.transpose: needs a tensor of rank 2 or more, got shape {list(x.shape)}")
    return TensorType((*x.shape[:-2], x.shape[-1], x.shape[-2]), x.dtype)


def tensor_concat(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tensor(args[0], "concat", "the first operand")
    b = _tensor(args[1], "concat", "the second operand")
    _same_dtype(a.dtype, b.dtype, "concat")
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[0] != b.shape[0]:
        raise OpError(
            f"pl.concat: needs 2-D operands with equal row counts, got {list(a.shape)} and {list(b.shape)}"
        )
    if not isinstance(a.shape[1], int) or not isinstance(b.shape[1], int):
        raise OpError("pl.concat: column counts must be static")
    return TensorType((a.shape[0], a.shape[1] + b.shape[1]), a.dtype)
