"""The operator registry: every op's name, operand rules and result type.

Tile ops (``tile.*``) work on on-chip tiles; tensor ops (``tensor.*``) are the same
computations written on whole tensors inside a ``pl.at`` scope, which the tensor-to-tile
pass lowers to load/compute/store. ``infer`` checks operands and returns the result type, or
raises ``OpError`` with a sentence that says what is wrong and how to fix it; the parser
attaches the source position.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.types import (
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    Type,
)

__all__ = [
    "BINARY",
    "COL_EXPAND",
    "OPS",
    "REDUCTIONS",
    "ROW_EXPAND",
    "UNARY",
    "OpError",
    "OpSpec",
    "infer",
]


class OpError(Exception):
    """An op applied to operands it does not accept."""


@dataclass(frozen=True)
class OpSpec:
    name: str
    infer: Callable[[list[Type], dict[str, Any]], Type]
    min_args: int
    max_args: int


OPS: dict[str, OpSpec] = {}

BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
UNARY = ("exp", "log", "sqrt", "rsqrt", "recip", "abs", "neg", "relu")
REDUCTIONS = ("row_sum", "row_max", "row_min", "col_sum", "col_max", "col_min")
ROW_EXPAND = ("row_expand_add", "row_expand_sub", "row_expand_mul", "row_expand_div")
COL_EXPAND = ("col_expand_add", "col_expand_sub", "col_expand_mul", "col_expand_div")
_FLOAT_ONLY = {"exp", "log", "sqrt", "rsqrt", "recip"}


def _register(name: str, min_args: int, max_args: int | None = None) -> Callable[[Any], Any]:
    def deco(
        fn: Callable[[list[Type], dict[str, Any]], Type],
    ) -> Callable[[list[Type], dict[str, Any]], Type]:
        OPS[name] = OpSpec(name, fn, min_args, min_args if max_args is None else max_args)
        return fn

    return deco


def infer(name: str, args: list[Type], attrs: dict[str, Any]) -> Type:
    spec = OPS.get(name)
    if spec is None:
        raise OpError(f"unknown operator {name!r}")
    if not spec.min_args <= len(args) <= spec.max_args:
        want = str(spec.min_args) if spec.min_args == spec.max_args else f"{spec.min_args} to {spec.max_args}"
        raise OpError(f"{_short(name)} takes {want} operand(s), got {len(args)}")
    return spec.infer(args, attrs)


def _short(name: str) -> str:
    return "pl." + name.split(".", 1)[1]


def _tile(t: Type, op: str, what: str, spaces: tuple[MemorySpace, ...] | None = None) -> TileType:
    if not isinstance(t, TileType):
        raise OpError(f"pl.{op}: {what} must be a Tile, got {t}")
    if spaces is not None and t.memory not in spaces:
        names = "/".join(s.value for s in spaces)
        raise OpError(
            f"pl.{op}: {what} must be in {names} memory, got a tile in {t.memory.value}; "
            f"use pl.move(..., target_memory=pl.MemorySpace.{spaces[0].value}) first"
        )
    return t


def _tensor(t: Type, op: str, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise OpError(f"pl.{op}: {what} must be a Tensor, got {t}")
    return t


def _same_shape(a: tuple[Any, ...], b: tuple[Any, ...], op: str) -> None:
    if tuple(a) != tuple(b):
        raise OpError(
            f"pl.{op}: operand shapes differ: [{', '.join(map(str, a))}] vs [{', '.join(map(str, b))}]; "
            "element-wise ops need equal shapes (use row_expand_*/col_expand_* to broadcast)"
        )


def _same_dtype(a: DataType, b: DataType, op: str) -> None:
    if a is not b:
        raise OpError(f"pl.{op}: operand dtypes differ: {a.value} vs {b.value}; use pl.cast first")


_VEC = (MemorySpace.Vec,)


def _scalar_fits(elem: DataType, scalar: DataType, op: str) -> None:
    if scalar.is_float and not elem.is_float:
        raise OpError(
            f"pl.{op}: a floating-point scalar with {elem.value} elements would be truncated; "
            f"pl.cast the operand to FP32 first (or use an integer scalar)"
        )


# ----------------------------------------------------------------------------- element-wise


def _make_binary(kind: str, op: str) -> None:
    def infer_bin(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args
        if kind == "tile":
            ta = _tile(a, op, "the first operand", _VEC)
            if isinstance(b, ScalarType):
                _scalar_fits(ta.dtype, b.dtype, op)
                return ta
            tb = _tile(b, op, "the second operand", _VEC)
            _same_shape(ta.shape, tb.shape, op)
            _same_dtype(ta.dtype, tb.dtype, op)
            return ta
        xa = _tensor(a, op, "the first operand")
        if isinstance(b, ScalarType):
            _scalar_fits(xa.dtype, b.dtype, op)
            return xa
        xb = _tensor(b, op, "the second operand")
        _same_shape(xa.shape, xb.shape, op)
        _same_dtype(xa.dtype, xb.dtype, op)
        return TensorType(xa.shape, xa.dtype)

    _register(f"{kind}.{op}", 2)(infer_bin)


def _make_unary(kind: str, op: str) -> None:
    def infer_un(args: list[Type], attrs: dict[str, Any]) -> Type:
        (a,) = args
        t: TileType | TensorType = (
            _tile(a, op, "the operand", _VEC) if kind == "tile" else _tensor(a, op, "the operand")
        )
        if op in _FLOAT_ONLY and not t.dtype.is_float:
            raise OpError(f"pl.{op}: needs a floating-point operand, got {t.dtype.value}; use pl.cast first")
        return t if kind == "tile" else TensorType(t.shape, t.dtype)

    _register(f"{kind}.{op}", 1)(infer_un)


def _make_reduction(kind: str, op: str) -> None:
    def infer_red(args: list[Type], attrs: dict[str, Any]) -> Type:
        if kind == "tile":
            t = _tile(args[0], op, "the operand", _VEC)
            if len(t.shape) != 2:
                raise OpError(f"pl.{op}: needs a 2-D tile, got shape {list(t.shape)}")
            if len(args) == 2:
                tmp = _tile(args[1], op, "the scratch tile", _VEC)
                if tmp.numel < t.numel:
                    raise OpError(
                        f"pl.{op}: the scratch tile {list(tmp.shape)} is smaller than the operand {list(t.shape)}"
                    )
            out = (t.shape[0], 1) if op.startswith("row_") else (1, t.shape[1])
            return TileType(out, t.dtype, MemorySpace.Vec)
        x = _tensor(args[0], op, "the operand")
        if len(x.shape) != 2:
            raise OpError(f"pl.{op}: needs a 2-D tensor, got shape {list(x.shape)}")
        return TensorType((x.shape[0], 1) if op.startswith("row_") else (1, x.shape[1]), x.dtype)

    _register(f"{kind}.{op}", 1, 2)(infer_red)


def _make_expand(kind: str, op: str, row: bool) -> None:
    def infer_exp(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args
        if kind == "tile":
            ta = _tile(a, op, "the first operand", _VEC)
            tb = _tile(b, op, "the vector operand", _VEC)
        else:
            ta = _tensor(a, op, "the first operand")  # type: ignore[assignment]
            tb = _tensor(b, op, "the vector operand")  # type: ignore[assignment]
        if len(ta.shape) != 2 or len(tb.shape) != 2:
            raise OpError(f"pl.{op}: needs 2-D operands, got {list(ta.shape)} and {list(tb.shape)}")
        want = (ta.shape[0], 1) if row else (1, ta.shape[1])
        if tuple(tb.shape) != want:
            raise OpError(
                f"pl.{op}: the vector operand must have shape {list(want)} to broadcast over "
                f"{list(ta.shape)}, got {list(tb.shape)}"
            )
        _same_dtype(ta.dtype, tb.dtype, op)
        return ta if kind == "tile" else TensorType(ta.shape, ta.dtype)

    _register(f"{kind}.{op}", 2)(infer_exp)


for _kind in ("tile", "tensor"):
    for _op in BINARY:
        _make_binary(_kind, _op)
    for _op in UNARY:
        _make_unary(_kind, _op)
    for _op in REDUCTIONS:
        _make_reduction(_kind, _op)
    for _op in ROW_EXPAND:
        _make_expand(_kind, _op, row=True)
    for _op in COL_EXPAND:
        _make_expand(_kind, _op, row=False)
    _make_expand(_kind, "row_expand", row=True)
    _make_expand(_kind, "col_expand", row=False)


# ----------------------------------------------------------------------------- data movement


def _check_window(tensor: TensorType, offsets: list[Any], shape: tuple[int, ...], op: str) -> None:
    if len(offsets) != len(tensor.shape):
        raise OpError(
            f"pl.{op}: {len(offsets)} offset(s) for a rank-{len(tensor.shape)} tensor; give one offset per dimension"
        )
    for axis, (off, ext, dim) in enumerate(zip(offsets, shape, tensor.shape, strict=True)):
        if isinstance(dim, int) and isinstance(off, int) and off + ext > dim:
            raise OpError(
                f"pl.{op}: the window [{off}, {off + ext}) on axis {axis} exceeds the tensor extent {dim}"
            )
        if isinstance(off, int) and off < 0:
            raise OpError(f"pl.{op}: offset {off} on axis {axis} is negative")


def tile_shape_for(tensor_rank: int, shape: tuple[int, ...], op: str) -> tuple[int, ...]:
    """The 2-D tile shape of a window: leading window dims must be 1."""
    if len(shape) != tensor_rank:
        raise OpError(
            f"pl.{op}: the shape {list(shape)} has rank {len(shape)} but the tensor has rank {tensor_rank}"
        )
    if any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.{op}: tile shapes must be positive integer constants, got {list(shape)}")
    if len(shape) == 1:
        return (1, shape[0])
    if any(d != 1 for d in shape[:-2]):
        raise OpError(f"pl.{op}: a tile is 2-D; the leading dims of {list(shape)} must be 1")
    return (shape[-2], shape[-1])


@_register("tile.load", 1)
def _load(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "load", "the source")
    shape = tuple(attrs["shape"])
    tshape = tile_shape_for(len(t.shape), shape, "load")
    _check_window(t, list(attrs.get("static_offsets", [None] * len(t.shape))), shape, "load")
    mem = attrs.get("memory", MemorySpace.Vec)
    if mem not in (MemorySpace.Vec, MemorySpace.Mat):
        raise OpError(
            f"pl.load: target_memory must be Vec or Mat, got {mem.value}; load into Mat and then "
            f"pl.move(..., target_memory=pl.MemorySpace.{mem.value})"
        )
    return TileType(tshape, t.dtype, mem)


@_register("tile.store", 2)
def _store(args: list[Type], attrs: dict[str, Any]) -> Type:
    tile = _tile(args[0], "store", "the value", (MemorySpace.Vec, MemorySpace.Acc))
    t = _tensor(args[1], "store", "the destination")
    if tile.dtype is not t.dtype:
        raise OpError(
            f"pl.store: the tile is {tile.dtype.value} but the tensor is {t.dtype.value}; use pl.cast first"
        )
    shape = tile.shape if len(t.shape) >= 2 else (tile.shape[1],)
    if len(t.shape) > 2:
        shape = (1,) * (len(t.shape) - 2) + tile.shape
    _check_window(t, list(attrs.get("static_offsets", [None] * len(t.shape))), shape, "store")
    return t


_MOVES = {
    (MemorySpace.Mat, MemorySpace.Left),
    (MemorySpace.Mat, MemorySpace.Right),
    (MemorySpace.Mat, MemorySpace.Vec),
    (MemorySpace.Vec, MemorySpace.Mat),
    (MemorySpace.Acc, MemorySpace.Vec),
    (MemorySpace.Acc, MemorySpace.Mat),
    (MemorySpace.Vec, MemorySpace.Vec),
}


@_register("tile.move", 1)
def _move(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "move", "the source")
    mem = attrs["memory"]
    if (t.memory, mem) not in _MOVES:
        allowed = ", ".join(
            f"{a.value}->{b.value}" for a, b in sorted(_MOVES, key=lambda m: (m[0].value, m[1].value))
        )
        raise OpError(f"pl.move: cannot move a tile from {t.memory.value} to {mem.value}; allowed: {allowed}")
    return TileType(t.shape, t.dtype, mem)


@_register("tile.create", 0)
def _create_tile(args: list[Type], attrs: dict[str, Any]) -> Type:
    shape = tuple(attrs["shape"])
    if len(shape) != 2 or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.create_tile: shape must be two positive integer constants, got {list(shape)}")
    return TileType(shape, attrs["dtype"], attrs.get("memory", MemorySpace.Vec))


@_register("tile.full", 1)
def _full(args: list[Type], attrs: dict[str, Any]) -> Type:
    if not isinstance(args[0], ScalarType):
        raise OpError(f"pl.full: the fill value must be a scalar, got {args[0]}")
    shape = tuple(attrs["shape"])
    if len(shape) != 2 or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.full: shape must be two positive integer constants, got {list(shape)}")
    return TileType(shape, attrs["dtype"], MemorySpace.Vec)


@_register("tensor.create", 0)
def _create_tensor(args: list[Type], attrs: dict[str, Any]) -> Type:
    shape = tuple(attrs["shape"])
    if not shape or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.create_tensor: shape must be positive integer constants, got {list(shape)}")
    return TensorType(shape, attrs["dtype"])


@_register("tensor.dim", 1)
def _dim(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "dim", "the operand")
    axis = attrs["axis"]
    if not 0 <= axis < len(t.shape):
        raise OpError(f"pl.dim: axis {axis} is outside a rank-{len(t.shape)} tensor")
    return ScalarType(DataType.INT64)


# ----------------------------------------------------------------------------- shape ops


@_register("tile.reshape", 1)
def _reshape(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "reshape", "the operand", _VEC)
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


@_register("tile.transpose", 1)
def _transpose(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "transpose", "the operand", _VEC)
    return TileType((t.shape[1], t.shape[0]), t.dtype, t.memory)


@_register("tile.concat", 2)
def _concat(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tile(args[0], "concat", "the first operand", _VEC)
    b = _tile(args[1], "concat", "the second operand", _VEC)
    _same_dtype(a.dtype, b.dtype, "concat")
    if a.shape[0] != b.shape[0]:
        raise OpError(f"pl.concat: row counts differ: {a.shape[0]} vs {b.shape[0]}; concat joins columns")
    return TileType((a.shape[0], a.shape[1] + b.shape[1]), a.dtype, a.memory)


_CASTABLE = {DataType.FP32, DataType.FP16, DataType.BF16, DataType.INT8, DataType.INT32}


@_register("tile.cast", 1)
def _cast(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "cast", "the operand", _VEC)
    to = attrs["dtype"]
    for d in (t.dtype, to):
        if d not in _CASTABLE:
            names = ", ".join(sorted(x.value for x in _CASTABLE))
            raise OpError(f"pl.cast: {d.value} is not castable; supported: {names}")
    return TileType(t.shape, to, t.memory)


@_register("tensor.cast", 1)
def _tensor_cast(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "cast", "the operand")
    return TensorType(t.shape, attrs["dtype"])


# ----------------------------------------------------------------------------- matmul


_MATMUL_ACC = {
    DataType.FP32: DataType.FP32,
    DataType.FP16: DataType.FP32,
    DataType.BF16: DataType.FP32,
    DataType.INT8: DataType.INT32,
}


def acc_dtype(operand: DataType, op: str) -> DataType:
    """The accumulator type of a matmul on ``operand`` elements."""
    try:
        return _MATMUL_ACC[operand]
    except KeyError:
        names = ", ".join(d.value for d in _MATMUL_ACC)
        raise OpError(f"pl.{op}: operands must be one of {names}, got {operand.value}") from None


def _check_matmul(left: TileType, right: TileType, op: str) -> None:
    if left.shape[1] != right.shape[0]:
        raise OpError(
            f"pl.{op}: inner dimensions differ: left is {list(left.shape)}, right is {list(right.shape)}"
        )
    _same_dtype(left.dtype, right.dtype, op)
    acc_dtype(left.dtype, op)


@_register("tile.matmul", 2)
def _matmul(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tile(args[0], "matmul", "the left operand", (MemorySpace.Left,))
    b = _tile(args[1], "matmul", "the right operand", (MemorySpace.Right,))
    _check_matmul(a, b, "matmul")
    return TileType((a.shape[0], b.shape[1]), acc_dtype(a.dtype, "matmul"), MemorySpace.Acc)


@_register("tile.matmul_acc", 3)
def _matmul_acc(args: list[Type], attrs: dict[str, Any]) -> Type:
    acc = _tile(args[0], "matmul_acc", "the accumulator", (MemorySpace.Acc,))
    a = _tile(args[1], "matmul_acc", "the left operand", (MemorySpace.Left,))
    b = _tile(args[2], "matmul_acc", "the right operand", (MemorySpace.Right,))
    _check_matmul(a, b, "matmul_acc")
    if acc.dtype is not acc_dtype(a.dtype, "matmul_acc"):
        raise OpError(
            f"pl.matmul_acc: the accumulator is {acc.dtype.value} but {a.dtype.value} operands accumulate in "
            f"{acc_dtype(a.dtype, 'matmul_acc').value}"
        )
    if acc.shape != (a.shape[0], b.shape[1]):
        raise OpError(
            f"pl.matmul_acc: the accumulator is {list(acc.shape)} but the product is {[a.shape[0], b.shape[1]]}"
        )
    return acc


@_register("tensor.matmul", 2)
def _tensor_matmul(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tensor(args[0], "matmul", "the left operand")
    b = _tensor(args[1], "matmul", "the right operand")
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise OpError(f"pl.matmul: cannot multiply {list(a.shape)} by {list(b.shape)}")
    _same_dtype(a.dtype, b.dtype, "matmul")
    return TensorType((a.shape[0], b.shape[1]), acc_dtype(a.dtype, "matmul"))


# ----------------------------------------------------------------------------- sub-tiles, padding, scalars


def _fits(outer: tuple[int, ...], inner: tuple[int, ...], offsets: list[Any], op: str) -> None:
    for axis, (o, n, m) in enumerate(zip(offsets, inner, outer, strict=True)):
        if isinstance(o, int) and (o < 0 or o + n > m):
            raise OpError(
                f"pl.{op}: the region [{o}, {o + n}) on axis {axis} does not fit the tile extent {m}"
            )


@_register("tile.assemble", 2)
def _assemble(args: list[Type], attrs: dict[str, Any]) -> Type:
    target = _tile(args[0], "assemble", "the target", (MemorySpace.Vec, MemorySpace.Mat))
    src = _tile(args[1], "assemble", "the source")
    _same_dtype(target.dtype, src.dtype, "assemble")
    _fits(target.shape, src.shape, list(attrs.get("static_offsets", [None, None])), "assemble")
    return target


@_register("tile.slice", 1)
def _slice(args: list[Type], attrs: dict[str, Any]) -> Type:
    src = _tile(args[0], "slice", "the source")
    shape = tuple(attrs["shape"])
    if len(shape) != 2 or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.slice: shape must be two positive integer constants, got {list(shape)}")
    _fits(src.shape, shape, list(attrs.get("static_offsets", [None, None])), "slice")
    return TileType(shape, src.dtype, src.memory)


@_register("tile.fillpad", 1)
def _fillpad(args: list[Type], attrs: dict[str, Any]) -> Type:
    return _tile(args[0], "fillpad", "the operand", _VEC)


@_register("tensor.read", 1)
def _read(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "read", "the source")
    return ScalarType(t.dtype)


@_register("scalar.cast", 1)
def _scalar_cast(args: list[Type], attrs: dict[str, Any]) -> Type:
    if not isinstance(args[0], ScalarType):
        raise OpError(f"pl.cast: expected a scalar, got {args[0]}")
    return ScalarType(attrs["dtype"])


@_register("tensor.view", 1)
def _view(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "view", "the source")
    shape = tuple(attrs["shape"])
    if len(shape) != len(t.shape) or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(
            f"tensor window: shape {list(shape)} must give one positive constant extent per dim of {t}"
        )
    _check_window(t, list(attrs.get("static_offsets", [None] * len(t.shape))), shape, "view")
    return TensorType(shape, t.dtype, t.layout)


@_register("tile.read", 1)
def _tile_read(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "read", "the source", _VEC)
    return ScalarType(t.dtype)


# tensor-level layout ops inside pl.at: lowered to the tile op on the whole (static) tensor


@_register("tensor.reshape", 1)
def _tensor_reshape(args: list[Type], attrs: dict[str, Any]) -> Type:
    x = _tensor(args[0], "reshape", "the operand")
    if not x.is_static:
        raise OpError(f"pl.reshape: needs a static shape, got {x}")
    t = _reshape([TileType(tile_shape_for(len(x.shape), x.static_shape, "reshape"), x.dtype)], attrs)
    assert isinstance(t, TileType)
    return TensorType(t.shape, x.dtype)


@_register("tensor.transpose", 1)
def _tensor_transpose(args: list[Type], attrs: dict[str, Any]) -> Type:
    x = _tensor(args[0], "transpose", "the operand")
    if len(x.shape) != 2:
        raise OpError(f"pl.transpose: needs a 2-D tensor, got shape {list(x.shape)}")
    return TensorType((x.shape[1], x.shape[0]), x.dtype)


@_register("tensor.concat", 2)
def _tensor_concat(args: list[Type], attrs: dict[str, Any]) -> Type:
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


@_register("tensor.write", 2)
def _write(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "write", "the destination")
    if not isinstance(args[1], ScalarType):
        raise OpError(f"pl.write: the value must be a scalar, got {args[1]}")
    _scalar_fits(t.dtype, args[1].dtype, "write")
    return t
