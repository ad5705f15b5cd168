"""The type rules of the reductions (``row_*`` / ``col_*``) and of the row and column
broadcasts (``row_expand_*`` / ``col_expand_*``)."""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.operand_checks import VEC, _describe, _same_dtype, _tensor, _tensor_like, _tile
from pypto.ir.ops.spec import OpError, Rule
from pypto.ir.types import MemorySpace, TensorType, TileType, Type


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
        if op.startswith("row_") and len(x.shape) >= 2:  # each row of each [R, C] plane
            return TensorType((*x.shape[:-1], 1), x.dtype)
        if len(x.shape) != 2:
            raise OpError(f"pl.{op}: needs a 2-D tensor, got shape {list(x.shape)}")
        return TensorType((1, x.shape[1]), x.dtype)

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
        planes = kind == "tensor" and row and len(ta.shape) > 2  # rank 3 and more: each plane's rows
        if not planes and (len(ta.shape) != 2 or len(tb.shape) != 2):
            raise OpError(f"pl.{op}: needs 2-D operands, got {list(ta.shape)} and {list(tb.shape)}")
        want = (*ta.shape[:-1], 1) if row else (1, ta.shape[1])
        block = (*ta.shape[:-1], 32 // ta.dtype.itemsize) if packed and ta.dtype.itemsize else None
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
