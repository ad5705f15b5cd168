"""The type rules of the bitwise ops, the comparisons (a tile comparison gives a packed
predicate mask) and the selects that read such a mask."""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.operand_checks import INT, VEC, _same_dtype, _same_shape, _tensor_like, _tile
from pypto.ir.ops.spec import OpError, Rule
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type

MASK_COL_ALIGN = 32
"""A predicate mask row holds one bit per value, padded to a multiple of 32 bytes (A2/A3)."""


def _int_operand(t: TileType | TensorType, op: str, what: str) -> None:
    if t.dtype not in INT:
        raise OpError(
            f"pl.{op}: {what} must have an integer dtype (INT8..INT64, UINT8..UINT64), got {t.dtype.value}; "
            "use pl.cast first"
        )


def _rhs(t: TileType | TensorType, b: Type, kind: str, op: str, *, scalar_only: bool, pair: str) -> None:
    """The right operand of ``t op b``: a scalar, or (unless ``scalar_only``; ``pair`` is the op
    on two) a tile/tensor of ``t``'s shape and dtype."""
    if isinstance(b, ScalarType):
        return
    if scalar_only:
        raise OpError(f"pl.{op}: rhs must be a scalar, got {b}; for two {kind}s use pl.{pair}")
    u: TileType | TensorType = _tile(b, op, "rhs", VEC) if kind == "tile" else _tensor_like(b, op, "rhs")
    _same_shape(t.shape, u.shape, op)
    _same_dtype(t.dtype, u.dtype, op)


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
        if isinstance(b, ScalarType) and not (b.dtype.is_signed_int or b.dtype.is_unsigned_int):
            raise OpError(f"pl.{op}: rhs must be an integer scalar, got {b.dtype.value}")
        _rhs(t, b, kind, op, scalar_only=scalar_only, pair=pair)
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
        _rhs(t, b, kind, op, scalar_only=scalar_only, pair="cmp")  # a scalar rhs becomes lhs's dtype
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
