"""The operand checks the type rules share: a tile (in given memory spaces), a tensor, a
tensor-level operand, equal shapes and dtypes; and the dtype sets the rules and the table name.

A check raises ``OpError`` with a sentence that names the op and the operand, says what was
expected and what was found, and how to fix it.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.spec import OpError
from pypto.ir.types import MemorySpace, TensorType, TileType, Type

VEC = (MemorySpace.Vec,)
FLOAT = frozenset(d for d in DataType if d.is_float)
INT = frozenset(d for d in DataType if d.is_signed_int or d.is_unsigned_int)


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


def _tile_shape(shape: Any, op: str) -> tuple[int, int]:
    """A tile's ``shape`` attribute: two positive integer constants."""
    dims = tuple(shape)
    if len(dims) != 2 or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in dims):
        raise OpError(f"pl.{op}: shape must be two positive integer constants, got {list(dims)}")
    rows, cols = dims
    return rows, cols


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


def _describe(dtypes: frozenset[DataType]) -> str:
    if dtypes == FLOAT:
        return "a floating-point operand"
    return "an operand of " + "/".join(sorted(d.value for d in dtypes))
