"""The type rules of sorting and of picking columns by a fixed pattern: ``sort32`` (PTO-ISA
TSORT32: 32-element blocks sorted into (value, index) pairs), ``mrgsort``'s single-list form
(TMRGSORT format 1: four sorted runs merged into one, run after run), its multi-list form
(format 2: two to four sorted lists merged into one) and ``gather_mask`` (TGATHER's
mask form). Each has a tile form (Vec tiles) and a tensor form with the same rule.

A sorted pair is 8 bytes: the FP32 value and its UINT32 index, side by side, so a row of ``n``
values becomes ``2 n`` FP32 slots whose odd ones hold index bits. FP16 values (upstream types
their pairs as two FP16 slots, which cannot hold them) are not built."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.operand_checks import VEC, _tensor_like, _tile
from pypto.ir.ops.spec import OpError
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type

__all__ = [
    "MASK_DTYPES",
    "SORT_BLOCK",
    "SORT_DTYPES",
    "MaskPattern",
    "mask_pattern",
    "tensor_gather_mask",
    "tensor_mrgsort",
    "tensor_mrgsort_lists",
    "tensor_sort32",
    "tile_gather_mask",
    "tile_mrgsort",
    "tile_mrgsort_lists",
    "tile_sort32",
]

SORT_BLOCK = 32  # TSORT32 sorts each run of 32 values on its own
SORT_DTYPES = frozenset({DataType.FP32})  # the values sorted (and the slots of the pairs)
MASK_DTYPES = frozenset(d for d in DataType if d.itemsize in (2, 4))  # TGATHER's mask form
_MERGE_WAYS = 4  # TMRGSORT format 1 merges four runs at a time
_MAX_REPEATS = 255  # ... in at most 255 groups of four (its repeat count is 8 bits)


class MaskPattern(enum.IntEnum):
    """Which columns ``pl.tile.gather_mask`` keeps (PTO-ISA's ``MaskPattern``; the bits read right
    to left, one a column, repeating): ``P0101`` the even ones, ``P1010`` the odd ones, ``P0001``
    .. ``P1000`` one of every four (the first .. the fourth), ``P1111`` all."""

    P0101 = 1
    P1010 = 2
    P0001 = 3
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7

    @property
    def stride(self) -> int:
        """One column kept of this many."""
        return {1: 2, 2: 2, 7: 1}.get(int(self), 4)


def mask_pattern(value: Any, op: str) -> MaskPattern:
    """``value`` (a ``MaskPattern`` or its number, 1-7) as a ``MaskPattern``."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in tuple(MaskPattern):
        names = ", ".join(f"{m.name} ({int(m)})" for m in MaskPattern)
        raise OpError(f"pl.{op}: mask_pattern must be a pl.tile.MaskPattern ({names}), got {value!r}")
    return MaskPattern(value)


def _pairs_of(shape: tuple[Any, ...], dtype: DataType, op: str, what: str) -> tuple[Any, ...]:
    """The shape of the sorted pairs of values of ``shape``: the last dim doubled."""
    if dtype is not DataType.FP32:
        raise OpError(
            f"pl.{op}: {what} must be FP32, got {dtype.value} (a sorted pair is an FP32 value and its "
            "UINT32 index; FP16 values are not built here)"
        )
    if len(shape) != 2:
        raise OpError(f"pl.{op}: {what} must be 2-D, got shape {list(shape)}")
    cols = shape[-1]
    if not isinstance(cols, int) or cols % SORT_BLOCK:
        raise OpError(
            f"pl.{op}: {what}'s last dim must be a constant multiple of {SORT_BLOCK} (TSORT32 sorts "
            f"blocks of {SORT_BLOCK}), got {cols}"
        )
    return (*shape[:-1], 2 * cols)


def _sort32(src: TensorType | TileType, idx: TensorType | TileType, op: str) -> tuple[Any, ...]:
    pairs = _pairs_of(tuple(src.shape), src.dtype, op, "src")
    if idx.dtype is not DataType.UINT32:
        raise OpError(
            f"pl.{op}: idx must be UINT32 (the index carried with each value), got {idx.dtype.value}"
        )
    if tuple(idx.shape) != tuple(src.shape):
        raise OpError(
            f"pl.{op}: idx must have src's shape {list(src.shape)} (one index a value), got {list(idx.shape)}"
        )
    return pairs


def tile_sort32(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.sort32(src, idx)``: each row's blocks of 32 FP32 values sorted descending, as
    (value, index) pairs: a tile of twice src's columns."""
    op = "tile.sort32"
    src, idx = _tile(args[0], op, "src", VEC), _tile(args[1], op, "idx", VEC)
    return TileType(_sort32(src, idx, op), src.dtype, MemorySpace.Vec)


def tensor_sort32(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.sort32(src, idx)`` of tensors: as the tile form."""
    op = "sort32"
    src, idx = _tensor_like(args[0], op, "src"), _tensor_like(args[1], op, "idx")
    return TensorType(_sort32(src, idx, op), src.dtype)


def _mrgsort(src: TensorType | TileType, length: Type, attrs: dict[str, Any], op: str) -> None:
    if src.dtype is not DataType.FP32:
        raise OpError(f"pl.{op}: src must hold FP32 sorted pairs (pl.sort32's result), got {src.dtype.value}")
    if len(src.shape) != 2 or src.shape[0] != 1 or not isinstance(src.shape[1], int):
        raise OpError(
            f"pl.{op}: src must be one row of constant width ([1, n]: TMRGSORT merges within a row), got "
            f"shape {list(src.shape)}"
        )
    if not isinstance(length, ScalarType) or not (length.dtype.is_signed_int or length.dtype.is_unsigned_int):
        raise OpError(f"pl.{op}: block_len must be an integer scalar, got {length}")
    block = attrs.get("static_block_len")
    if block is None:  # a run-time length is checked when the instruction runs
        return
    cols = src.shape[1]
    if block <= 0 or block % 64:
        raise OpError(
            f"pl.{op}: block_len must be a positive multiple of 64 (FP32 slots of a sorted run: 32 pairs "
            f"are 64), got {block}"
        )
    group = _MERGE_WAYS * block
    if cols % group or not 1 <= cols // group <= _MAX_REPEATS:
        raise OpError(
            f"pl.{op}: src's {cols} columns must be 1 to {_MAX_REPEATS} groups of four runs of block_len "
            f"{block} ({group} columns each)"
        )


def tile_mrgsort(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.mrgsort(src, block_len=n)`` (format 1): each four consecutive sorted runs of ``n``
    FP32 slots merged into one sorted run; src's type."""
    op = "tile.mrgsort"
    src = _tile(args[0], op, "src", VEC)
    _mrgsort(src, args[1], attrs, op)
    return TileType(src.shape, src.dtype, MemorySpace.Vec)


def tensor_mrgsort(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.mrgsort(src, block_len=n)`` of a tensor: as the tile form."""
    op = "mrgsort"
    src = _tensor_like(args[0], op, "src")
    _mrgsort(src, args[1], attrs, op)
    return TensorType(src.shape, src.dtype)


_MAX_LIST_PAIRS = 0xFFFF  # TMRGSORT counts a list's pairs in 16 bits


def _merge_lists(lists: Sequence[TensorType | TileType], op: str) -> int:
    """The sorted lists a multi-list merge takes: two to four FP32 rows of pairs; their total
    width (in FP32 slots)."""
    if not 2 <= len(lists) <= _MERGE_WAYS:
        raise OpError(f"pl.{op}: merges two to four sorted lists, got {len(lists)}")
    total = 0
    for k, t in enumerate(lists):
        what = f"src{k}"
        if t.dtype is not DataType.FP32:
            raise OpError(f"pl.{op}: {what} must hold FP32 sorted pairs, got {t.dtype.value}")
        if len(t.shape) != 2 or t.shape[0] != 1 or not isinstance(t.shape[1], int) or t.shape[1] % 2:
            raise OpError(
                f"pl.{op}: {what} must be one row of whole pairs ([1, 2 n], constant n), got shape {list(t.shape)}"
            )
        if t.shape[1] // 2 > _MAX_LIST_PAIRS:
            raise OpError(
                f"pl.{op}: {what} has {t.shape[1] // 2} pairs; a list holds at most {_MAX_LIST_PAIRS}"
            )
        total += t.shape[1]
    return total


def tile_mrgsort_lists(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.mrgsort(src0, src1[, src2[, src3]], tmp=tmp, exhausted=False)`` (TMRGSORT's
    multi-list form): the sorted lists merged into one row of ``tmp``'s shape."""
    op = "tile.mrgsort"
    lists = [_tile(a, op, f"src{k}", VEC) for k, a in enumerate(args[:-1])]
    _merge_lists(lists, op)
    tmp = _tile(args[-1], op, "tmp (the merge's scratch row)", VEC)
    if tmp.dtype is not DataType.FP32 or len(tmp.shape) != 2 or tmp.shape[0] != 1 or tmp.shape[1] % 2:
        raise OpError(f"pl.{op}: tmp must be an FP32 row of whole pairs ([1, 2 n]), got {tmp}")
    return TileType(tmp.shape, DataType.FP32, MemorySpace.Vec)


def tensor_mrgsort_lists(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.mrgsort(src0, src1[, src2[, src3]])`` of tensors: one row holding every pair."""
    op = "mrgsort"
    lists = [_tensor_like(a, op, f"src{k}") for k, a in enumerate(args)]
    return TensorType((1, _merge_lists(lists, op)), DataType.FP32)


def _gather_mask(
    src: TensorType | TileType, attrs: dict[str, Any], op: str
) -> tuple[tuple[Any, ...], DataType]:
    pattern = mask_pattern(attrs.get("mask_pattern"), op)
    if src.dtype not in MASK_DTYPES:
        raise OpError(f"pl.{op}: src must have 2- or 4-byte elements, got {src.dtype.value}")
    out = attrs.get("output_dtype") or src.dtype
    if out.itemsize != src.dtype.itemsize:
        raise OpError(
            f"pl.{op}: output_dtype reinterprets the bits, so it must be as wide as src's {src.dtype.value}; "
            f"got {out.value}"
        )
    if len(src.shape) != 2 or not isinstance(src.shape[1], int) or src.shape[1] % pattern.stride:
        raise OpError(
            f"pl.{op}: src must be 2-D with a constant number of columns divisible by {pattern.stride} "
            f"({pattern.name} keeps one of {pattern.stride}), got shape {list(src.shape)}"
        )
    return (src.shape[0], src.shape[1] // pattern.stride), out


def tile_gather_mask(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.gather_mask(src, mask_pattern, output_dtype=None)``: the columns of each row the
    pattern keeps, side by side (their bits, read as ``output_dtype``)."""
    op = "tile.gather_mask"
    shape, dtype = _gather_mask(_tile(args[0], op, "src", VEC), attrs, op)
    return TileType(shape, dtype, MemorySpace.Vec)


def tensor_gather_mask(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.gather(input, mask_pattern=...)``: as the tile form."""
    shape, dtype = _gather_mask(_tensor_like(args[0], "gather", "input"), attrs, "gather")
    return TensorType(shape, dtype)
