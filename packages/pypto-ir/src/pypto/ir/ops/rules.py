"""The type rules of the ops: operand checks and result types.

A rule takes the operand types (tuple operands such as offsets left out) and the attributes
and returns the result type, or raises ``OpError`` with a sentence that says what is wrong and
how to fix it; the parser attaches the source position. Which op uses which rule, and the
facts the family rules read (memory spaces, dtypes), are entered in ``pypto.ir.ops.table``.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.cast_modes import DEFAULT as CAST_DEFAULT
from pypto.ir.ops.cast_modes import cast_mode
from pypto.ir.ops.spec import OpError, Rule
from pypto.ir.types import (
    ArrayType,
    DynDim,
    MemorySpace,
    ScalarType,
    TaskIdType,
    TensorType,
    TileType,
    TupleType,
    Type,
)

VEC = (MemorySpace.Vec,)
FLOAT = frozenset(d for d in DataType if d.is_float)
INT = frozenset(d for d in DataType if d.is_signed_int or d.is_unsigned_int)
MASK_COL_ALIGN = 32
"""A predicate mask row holds one bit per value, padded to a multiple of 32 bytes (A2/A3)."""


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


def _tensor_like(t: Type, op: str, what: str) -> TensorType:
    """An operand of a tensor-level op: a tensor, or a tile (a value already on chip, mixed in
    inside a kernel; the lowering uses the tile as it is)."""
    if isinstance(t, TileType):
        return TensorType(t.shape, t.dtype)
    if not isinstance(t, TensorType):
        raise OpError(f"pl.{op}: {what} must be a Tensor or a tile, got {t}")
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


# ----------------------------------------------------------------------------- element-wise families
# One rule per family, made for one op at one level; the table passes the spaces and dtypes it
# records for the op, so those facts are read from the table, not repeated here.


def _describe(dtypes: frozenset[DataType]) -> str:
    if dtypes == FLOAT:
        return "a floating-point operand"
    return "an operand of " + "/".join(sorted(d.value for d in dtypes))


def binary(kind: str, op: str, spaces: tuple[MemorySpace, ...] = VEC) -> Rule:
    """``a op b`` on equal shapes and dtypes; ``b`` may be a scalar."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args
        if kind == "tile":
            ta = _tile(a, op, "the first operand", spaces)
            if isinstance(b, ScalarType):
                return ta
            tb = _tile(b, op, "the second operand", spaces)
            _same_shape(ta.shape, tb.shape, op)
            _same_dtype(ta.dtype, tb.dtype, op)
            return ta
        xa = _tensor_like(a, op, "the first operand")
        if isinstance(b, ScalarType):
            return TensorType(xa.shape, xa.dtype)
        xb = _tensor_like(b, op, "the second operand")
        _same_shape(xa.shape, xb.shape, op)
        _same_dtype(xa.dtype, xb.dtype, op)
        return TensorType(xa.shape, xa.dtype)

    return rule


def float_only(rule: Rule, op: str) -> Rule:
    """``rule``, for floating-point operands only."""

    def checked(args: list[Type], attrs: dict[str, Any]) -> Type:
        out = rule(args, attrs)
        assert isinstance(out, (TileType, TensorType))
        if out.dtype not in FLOAT:
            raise OpError(
                f"pl.{op}: needs a floating-point operand, got {out.dtype.value}; use pl.cast first"
            )
        return out

    return checked


def scalar_binary(kind: str, op: str, pair: str, spaces: tuple[MemorySpace, ...] = VEC) -> Rule:
    """``a op s`` for a tile (or tensor) ``a`` and a scalar ``s`` (``pl.tile.adds``, ...);
    ``pair`` is the op that takes two tiles (``add``)."""
    where = f"{kind}.{op}"

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args
        t: TileType | TensorType = (
            _tile(a, where, "the first operand", spaces) if kind == "tile" else _tensor_like(a, where, "lhs")
        )
        if not isinstance(b, ScalarType):
            raise OpError(
                f"pl.{where}: rhs must be a scalar (a number or a scalar value), got {b}; "
                f"for two {kind}s use pl.{pair}"
            )
        return t if kind == "tile" else TensorType(t.shape, t.dtype)

    return rule


def expands(kind: str) -> Rule:
    """``pl.expands(target, scalar)``: the scalar in every element of a value shaped and typed like
    ``target``."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args
        t: TileType | TensorType = (
            _tile(a, "expands", "the target", VEC)
            if kind == "tile"
            else _tensor_like(a, "expands", "the target")
        )
        if not isinstance(b, ScalarType):
            raise OpError(f"pl.expands: the value to broadcast must be a scalar, got {b}")
        return t if kind == "tile" else TensorType(t.shape, t.dtype)

    return rule


def unary(
    kind: str, op: str, spaces: tuple[MemorySpace, ...] = VEC, dtypes: frozenset[DataType] | None = None
) -> Rule:
    """``f(a)`` element by element; ``dtypes`` (when given) limits the element type. A second
    operand (ops whose table entry allows it) is a tile form's scratch tile of ``a``'s shape and
    dtype (upstream's ``pl.tile.rsqrt(t, tmp)``)."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        a = args[0]
        if len(args) == 2:
            if kind != "tile":
                raise OpError(f"pl.{op}: tmp is a scratch tile of the tile form; a tensor {op} takes none")
            tmp = _tile(args[1], op, "tmp", spaces)
            ta = _tile(a, op, "the operand", spaces)
            if tmp.shape != ta.shape or tmp.dtype is not ta.dtype:
                raise OpError(f"pl.{op}: tmp must have the operand's shape and dtype ({ta}), got {tmp}")
        t: TileType | TensorType = (
            _tile(a, op, "the operand", spaces) if kind == "tile" else _tensor_like(a, op, "the operand")
        )
        if dtypes is not None and t.dtype not in dtypes:
            raise OpError(f"pl.{op}: needs {_describe(dtypes)}, got {t.dtype.value}; use pl.cast first")
        return t if kind == "tile" else TensorType(t.shape, t.dtype)

    return rule


def reduction(
    kind: str, op: str, spaces: tuple[MemorySpace, ...] = VEC, result: DataType | None = None
) -> Rule:
    """``row_*`` reduce [R, C] to [R, 1], ``col_*`` to [1, C]; an optional scratch tile.
    ``result``: the result's dtype when it is not the operand's (INT32 indices of an argmax)."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        out = reduced(args, attrs)
        if result is None:
            return out
        if isinstance(out, TileType):
            if out.dtype is DataType.BOOL:
                raise OpError(f"pl.{op}: compares numbers, got a BOOL operand")
            return TileType(out.shape, result, out.memory)
        assert isinstance(out, TensorType)
        return TensorType(out.shape, result)

    def reduced(args: list[Type], attrs: dict[str, Any]) -> Type:
        if kind == "tile":
            t = _tile(args[0], op, "the operand", spaces)
            if len(t.shape) != 2:
                raise OpError(f"pl.{op}: needs a 2-D tile, got shape {list(t.shape)}")
            if len(args) == 2:
                tmp = _tile(args[1], op, "the scratch tile", spaces)
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

    return rule


def expand(
    kind: str,
    op: str,
    row: bool,
    *,
    spaces: tuple[MemorySpace, ...] = VEC,
    dtypes: frozenset[DataType] | None = None,
    packed: bool = False,
) -> Rule:
    """A [R, 1] (``row``) or [1, C] vector broadcast over a [R, C] operand; ``dtypes`` (when
    given) limits the element type. ``packed``: a row vector may also be [R, 32 bytes of
    elements] (repeated across the columns), and a tile form takes a scratch tile third."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args[0], args[1]
        if len(args) == 3:
            if kind != "tile":
                raise OpError(f"pl.{op}: tmp is a scratch tile of the tile form; a tensor {op} takes none")
            _tile(args[2], op, "tmp", spaces)
        if kind == "tile":
            ta = _tile(a, op, "the first operand", spaces)
            tb = _tile(b, op, "the vector operand", spaces)
        else:
            ta = _tensor_like(a, op, "the first operand")  # type: ignore[assignment]
            tb = _tensor_like(b, op, "the vector operand")  # type: ignore[assignment]
        if len(ta.shape) != 2 or len(tb.shape) != 2:
            raise OpError(f"pl.{op}: needs 2-D operands, got {list(ta.shape)} and {list(tb.shape)}")
        want = (ta.shape[0], 1) if row else (1, ta.shape[1])
        block = (ta.shape[0], 32 // ta.dtype.itemsize) if packed and ta.dtype.itemsize else None
        if tuple(tb.shape) != want and not (block is not None and tuple(tb.shape) == block):
            if block is not None:
                want_text = f"{list(want)} (or the packed {list(block)})"
                raise OpError(
                    f"pl.{op}: the vector operand must have shape {want_text} to broadcast over "
                    f"{list(ta.shape)}, got {list(tb.shape)}"
                )
            raise OpError(
                f"pl.{op}: the vector operand must have shape {list(want)} to broadcast over "
                f"{list(ta.shape)}, got {list(tb.shape)}"
            )
        _same_dtype(ta.dtype, tb.dtype, op)
        if dtypes is not None and ta.dtype not in dtypes:
            raise OpError(f"pl.{op}: needs {_describe(dtypes)}, got {ta.dtype.value}; use pl.cast first")
        return ta if kind == "tile" else TensorType(ta.shape, ta.dtype)

    return rule


def leaky(op: str) -> Rule:
    """``pl.lrelu(tile, slope)`` (a scalar slope) and ``pl.prelu(tile, slope, tmp)`` (a slope tile
    of the tile's shape and dtype, and upstream's scratch tile): floating-point Vec tiles."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        t = _tile(args[0], op, "the operand", VEC)
        if t.dtype not in FLOAT:
            raise OpError(f"pl.{op}: needs a floating-point operand, got {t.dtype.value}; use pl.cast first")
        s = args[1]
        if op == "lrelu":
            if not isinstance(s, ScalarType):
                raise OpError(f"pl.lrelu: slope must be a scalar, got {s}; for a slope tile use pl.prelu")
            return t
        st = _tile(s, op, "slope", VEC)
        _same_shape(t.shape, st.shape, op)
        _same_dtype(t.dtype, st.dtype, op)
        _tile(args[2], op, "tmp")
        return t

    return rule


# ----------------------------------------------------------------------------- bitwise, compare, select


def _int_operand(t: TileType | TensorType, op: str, what: str) -> None:
    if t.dtype not in INT:
        raise OpError(
            f"pl.{op}: {what} must have an integer dtype (INT8..INT64, UINT8..UINT64), got {t.dtype.value}; "
            "use pl.cast first"
        )


def bitwise(kind: str, op: str, scalar_only: bool = False, pair: str = "") -> Rule:
    """``a op b`` bit by bit on integer elements: ``b`` an equal-shaped tile/tensor or an integer
    scalar (``scalar_only``: a scalar; ``pair`` names the op on two tiles). A third operand is
    the scratch tile upstream's ``xor`` takes on tiles (the simulator does not need it)."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args[0], args[1]
        t: TileType | TensorType = _tile(a, op, "lhs", VEC) if kind == "tile" else _tensor_like(a, op, "lhs")
        _int_operand(t, op, "lhs")
        if len(args) == 3:
            if kind != "tile":
                raise OpError(f"pl.{op}: tmp is a scratch tile of the tile form; a tensor {op} takes none")
            _tile(args[2], op, "tmp", VEC)
        if isinstance(b, ScalarType):
            if not (b.dtype.is_signed_int or b.dtype.is_unsigned_int):
                raise OpError(f"pl.{op}: rhs must be an integer scalar, got {b.dtype.value}")
        elif scalar_only:
            raise OpError(f"pl.{op}: rhs must be a scalar, got {b}; for two {kind}s use pl.{pair}")
        else:
            u: TileType | TensorType = (
                _tile(b, op, "rhs", VEC) if kind == "tile" else _tensor_like(b, op, "rhs")
            )
            _same_shape(t.shape, u.shape, op)
            _same_dtype(t.dtype, u.dtype, op)
        return t if kind == "tile" else TensorType(t.shape, t.dtype)

    return rule


def mask_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """The predicate mask of a [R, C] comparison: [R, C / 8 bytes rounded up to MASK_COL_ALIGN]."""
    rows, cols = shape
    packed = (cols + 7) // 8
    return rows, (packed + MASK_COL_ALIGN - 1) // MASK_COL_ALIGN * MASK_COL_ALIGN


def compare(kind: str, op: str, scalar_only: bool = False) -> Rule:
    """``pl.cmp`` / ``pl.tile.cmps``: ``lhs (cmp_type) rhs`` element by element. A tile comparison
    gives a packed UINT8 predicate mask (``mask_shape``); a tensor one gives 0/1 in lhs's dtype."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args
        t: TileType | TensorType = _tile(a, op, "lhs", VEC) if kind == "tile" else _tensor_like(a, op, "lhs")
        if isinstance(b, ScalarType):  # converted to lhs's dtype, as every scalar operand
            pass
        elif scalar_only:
            raise OpError(f"pl.{op}: rhs must be a scalar, got {b}; for two tiles use pl.cmp")
        else:
            u: TileType | TensorType = (
                _tile(b, op, "rhs", VEC) if kind == "tile" else _tensor_like(b, op, "rhs")
            )
            _same_shape(t.shape, u.shape, op)
            _same_dtype(t.dtype, u.dtype, op)
        if t.dtype is DataType.BOOL:
            raise OpError(f"pl.{op}: compares numbers, got a BOOL operand")
        if kind != "tile":
            return TensorType(t.shape, t.dtype)
        if len(t.shape) != 2:
            raise OpError(f"pl.{op}: needs a 2-D tile, got shape {list(t.shape)}")
        return TileType(mask_shape(t.shape), DataType.UINT8, MemorySpace.Vec)  # type: ignore[arg-type]

    return rule


MASK_CARRIERS = frozenset(d for d in INT if d.itemsize <= 4)
"""Element types a predicate mask may have: UINT8 as pl.cmp writes it, or any 8/16/32-bit integer
carrier (its bytes are the mask bytes)."""


def _mask(t: Type, op: str, shape: tuple[int, ...]) -> None:
    m = _tile(t, op, "mask", VEC)
    need = (shape[0], (shape[1] + 7) // 8)
    if (
        m.dtype not in MASK_CARRIERS
        or len(m.shape) != 2
        or m.shape[0] < need[0]
        or m.shape[1] * m.dtype.itemsize < need[1]
    ):
        raise OpError(
            f"pl.{op}: mask must be a predicate mask of at least {list(need)} bytes (a UINT8 tile from "
            f"pl.cmp / pl.cmps on a {list(shape)} tile, or an 8/16/32-bit integer carrier of as many "
            f"bytes), got {m}"
        )


def select(op: str) -> Rule:
    """``pl.sel(mask, lhs, rhs[, tmp])`` and ``pl.sels(mask, src, tmp, scalar)``: per element, the
    first value where the mask bit is 1, else the second (a tile or, for sels, a scalar)."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        src = _tile(args[1], op, "lhs" if op == "sel" else "src", VEC)
        if len(src.shape) != 2:
            raise OpError(f"pl.{op}: needs 2-D tiles, got shape {list(src.shape)}")
        _mask(args[0], op, src.shape)
        if op == "sel":
            other = _tile(args[2], op, "rhs", VEC)
            _same_shape(src.shape, other.shape, op)
            _same_dtype(src.dtype, other.dtype, op)
            if len(args) == 4:
                _tile(args[3], op, "tmp")
        else:
            _tile(args[2], op, "tmp")
            s = args[3]
            if not isinstance(s, ScalarType):
                raise OpError(f"pl.sels: scalar must be a scalar, got {s}; for two tiles use pl.sel")
        return src

    return rule


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


def tile_load(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "load", "the source")
    shape = tuple(attrs["shape"])
    tshape = tile_shape_for(len(t.shape), shape, "load")
    read = shape
    valid = attrs.get("static_valid")
    if valid is not None:  # only the valid region is read; a run-time extent is checked at run time
        rows, cols = (v if isinstance(v, int) else 0 for v in valid)
        read = (*shape[:-2], rows, cols) if len(shape) >= 2 else (cols,)
    _check_window(t, list(attrs.get("static_offsets", [None] * len(t.shape))), read, "load")
    mem = attrs.get("memory", MemorySpace.Vec)
    if mem not in (MemorySpace.Vec, MemorySpace.Mat):
        raise OpError(
            f"pl.load: target_memory must be Vec or Mat, got {mem.value}; load into Mat and then "
            f"pl.move(..., target_memory=pl.MemorySpace.{mem.value})"
        )
    return TileType(tshape, t.dtype, mem)


def tile_store(args: list[Type], attrs: dict[str, Any]) -> Type:
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


def tile_move(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "move", "the source")
    mem = attrs["memory"]
    if (t.memory, mem) not in _MOVES:
        allowed = ", ".join(
            f"{a.value}->{b.value}" for a, b in sorted(_MOVES, key=lambda m: (m[0].value, m[1].value))
        )
        raise OpError(f"pl.move: cannot move a tile from {t.memory.value} to {mem.value}; allowed: {allowed}")
    return TileType(t.shape, t.dtype, mem)


def tile_create(args: list[Type], attrs: dict[str, Any]) -> Type:
    shape = tuple(attrs["shape"])
    if len(shape) != 2 or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.create_tile: shape must be two positive integer constants, got {list(shape)}")
    return TileType(shape, attrs["dtype"], attrs.get("memory", MemorySpace.Vec))


def tile_full(args: list[Type], attrs: dict[str, Any]) -> Type:
    if not isinstance(args[0], ScalarType):
        raise OpError(f"pl.full: the fill value must be a scalar, got {args[0]}")
    shape = tuple(attrs["shape"])
    if len(shape) != 2 or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.full: shape must be two positive integer constants, got {list(shape)}")
    return TileType(shape, attrs["dtype"], MemorySpace.Vec)


def tensor_create(args: list[Type], attrs: dict[str, Any]) -> Type:
    shape = tuple(attrs["shape"])
    if not shape or any(not isinstance(d, DynDim) and (not isinstance(d, int) or d <= 0) for d in shape):
        raise OpError(
            f"pl.create_tensor: shape must be positive integer constants or index scalars, got {list(shape)}"
        )
    return TensorType(shape, attrs["dtype"])


def tensor_dim(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "dim", "the operand")
    axis = attrs["axis"]
    if not 0 <= axis < len(t.shape):
        raise OpError(f"pl.dim: axis {axis} is outside a rank-{len(t.shape)} tensor")
    return ScalarType(DataType.INT64)


# ----------------------------------------------------------------------------- shape ops


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


# ----------------------------------------------------------------------------- matmul


MATMUL_ACC = {
    DataType.FP32: DataType.FP32,
    DataType.FP16: DataType.FP32,
    DataType.BF16: DataType.FP32,
    DataType.INT8: DataType.INT32,
}


def acc_dtype(operand: DataType, op: str) -> DataType:
    """The accumulator type of a matmul on ``operand`` elements."""
    try:
        return MATMUL_ACC[operand]
    except KeyError:
        names = ", ".join(d.value for d in MATMUL_ACC)
        raise OpError(f"pl.{op}: operands must be one of {names}, got {operand.value}") from None


def _check_matmul(left: TileType, right: TileType, op: str) -> None:
    if left.shape[1] != right.shape[0]:
        raise OpError(
            f"pl.{op}: inner dimensions differ: left is {list(left.shape)}, right is {list(right.shape)}"
        )
    _same_dtype(left.dtype, right.dtype, op)
    acc_dtype(left.dtype, op)


def tile_matmul(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tile(args[0], "matmul", "the left operand", (MemorySpace.Left,))
    b = _tile(args[1], "matmul", "the right operand", (MemorySpace.Right,))
    _check_matmul(a, b, "matmul")
    return TileType((a.shape[0], b.shape[1]), acc_dtype(a.dtype, "matmul"), MemorySpace.Acc)


def tile_matmul_acc(args: list[Type], attrs: dict[str, Any]) -> Type:
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


def tensor_matmul(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tensor_like(args[0], "matmul", "the left operand")
    b = _tensor_like(args[1], "matmul", "the right operand")
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise OpError(f"pl.matmul: cannot multiply {list(a.shape)} by {list(b.shape)}")
    _same_dtype(a.dtype, b.dtype, "matmul")
    return TensorType((a.shape[0], b.shape[1]), acc_dtype(a.dtype, "matmul"))


def tensor_matmul_acc(args: list[Type], attrs: dict[str, Any]) -> Type:
    acc = _tensor_like(args[0], "matmul_acc", "the accumulator")
    prod = tensor_matmul(args[1:], attrs)
    assert isinstance(prod, TensorType)
    if acc.dtype is not prod.dtype:
        raise OpError(
            f"pl.matmul_acc: the accumulator is {acc.dtype.value} but the operands accumulate in {prod.dtype.value}"
        )
    if tuple(acc.shape) != tuple(prod.shape):
        raise OpError(
            f"pl.matmul_acc: the accumulator is {list(acc.shape)} but the product is {list(prod.shape)}"
        )
    return TensorType(acc.shape, acc.dtype)


# ----------------------------------------------------------------------------- sub-tiles, padding, scalars


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
    shape = tuple(attrs["shape"])
    if len(shape) != 2 or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.slice: shape must be two positive integer constants, got {list(shape)}")
    _fits(src.shape, shape, list(attrs.get("static_offsets", [None, None])), "slice")
    return TileType(shape, src.dtype, src.memory)


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


def tensor_read(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "read", "the source")
    return ScalarType(t.dtype)


def scalar_cast(args: list[Type], attrs: dict[str, Any]) -> Type:
    if not isinstance(args[0], ScalarType):
        raise OpError(f"pl.cast: expected a scalar, got {args[0]}")
    mode = attrs.get("mode")
    if mode is not None and cast_mode(mode) != CAST_DEFAULT:
        raise OpError(f"pl.cast: a scalar takes the default mode {CAST_DEFAULT!r} only, got mode={mode!r}")
    return ScalarType(attrs["dtype"])


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


# tensor-level layout ops inside pl.at: lowered to the tile op on the whole (static) tensor


def tensor_reshape(args: list[Type], attrs: dict[str, Any]) -> Type:
    x = _tensor(args[0], "reshape", "the operand")
    if not x.is_static:
        raise OpError(f"pl.reshape: needs a static shape, got {x}")
    t = tile_reshape([TileType(tile_shape_for(len(x.shape), x.static_shape, "reshape"), x.dtype)], attrs)
    assert isinstance(t, TileType)
    return TensorType(t.shape, x.dtype)


def tensor_transpose(args: list[Type], attrs: dict[str, Any]) -> Type:
    x = _tensor(args[0], "transpose", "the operand")
    if len(x.shape) != 2:
        raise OpError(f"pl.transpose: needs a 2-D tensor, got shape {list(x.shape)}")
    return TensorType((x.shape[1], x.shape[0]), x.dtype)


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


def tensor_write(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "write", "the destination")
    if not isinstance(args[1], ScalarType):
        raise OpError(f"pl.write: the value must be a scalar, got {args[1]}")
    return t


# ----------------------------------------------------------------------------- task graph


def array_create(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.array.create(n, pl.TASK_ID)``: ``n`` entries, none naming a task yet."""
    n, elem = attrs["extent"], attrs["elem"]
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise OpError(f"pl.array.create: extent must be a positive integer constant, got {n!r}")
    if not isinstance(elem, TaskIdType):
        raise OpError(f"pl.array.create: the element type must be pl.TASK_ID, got {elem!r}")
    return ArrayType(n, elem)


def _array(t: Type, op: str) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise OpError(f"{op}: expected a pl.array, got {t}")
    return t


def _index(t: Type, op: str) -> None:
    if not isinstance(t, ScalarType) or not (t.dtype.is_signed_int or t.dtype.is_unsigned_int):
        raise OpError(f"{op}: the index must be an integer scalar, got {t}")


def array_get(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``arr[i]``: entry ``i``."""
    a = _array(args[0], "array read arr[i]")
    _index(args[1], "array read arr[i]")
    return a.elem


def array_set(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``arr[i] = v``: the array with entry ``i`` replaced."""
    a = _array(args[0], "array update arr[i] = v")
    _index(args[1], "array update arr[i] = v")
    if args[2] != a.elem:
        raise OpError(f"array update arr[i] = v: arr holds {a.elem}, got a value of type {args[2]}")
    return a


def deps_entries(args: list[Type], op: str) -> None:
    """Each dependency is a task id or an array of them."""
    for k, t in enumerate(args):
        if not isinstance(t, (TaskIdType, ArrayType)):
            raise OpError(f"{op}: deps entry {k} must be a task id or a pl.array of task ids, got {t}")


def task_dummy(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.system.task_dummy(deps=[...])``: a task id ready once every dependency is."""
    deps_entries(args, "pl.system.task_dummy")
    return TaskIdType()


def runtime_scope_mark(args: list[Type], attrs: dict[str, Any]) -> Type:
    """The start or end of a ``pl.manual_scope()`` block: a statement, no value."""
    return TupleType(())
