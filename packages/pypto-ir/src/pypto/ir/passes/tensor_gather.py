"""Tensor-level ``pl.gather`` / ``pl.scatter`` (index form) in kernels, for the tensor-to-tile
lowering: torch's per-axis indices turned into the flat row-major positions that TGATHER and
TSCATTER take, then the tile op."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pypto.ir import nodes
from pypto.ir.dtypes import DataType
from pypto.ir.ops import rules
from pypto.ir.types import MemorySpace, TileType

if TYPE_CHECKING:
    from pypto.ir.passes.tensor_to_tile import _Lowerer

__all__ = ["lower"]


def lower(
    lw: _Lowerer, kind: str, args: list[nodes.Arg], *, dim: int, out: list[nodes.Stmt], base: str
) -> nodes.Var:
    """``tile.gather`` (``kind`` "gather": source, index) or ``tile.scatter`` ("scatter":
    destination, index, values) of the operands' tiles ``args`` along ``dim``."""
    if kind == "gather":
        src, idx = args
        assert isinstance(src, nodes.Var)
        assert isinstance(idx, nodes.Var)
        return lw.emit(
            "tile.gather",
            [src, _flat(lw, src, idx, dim=dim, out=out, base=base), _scratch_row(lw, out)],
            {},
            out,
            base,
        )
    dst, idx, values = args
    assert isinstance(dst, nodes.Var)
    assert isinstance(idx, nodes.Var)
    assert isinstance(dst.type, TileType)
    flat = _flat(lw, dst, idx, dim=dim, out=out, base=base)
    width = rules.scatter_index_dtype(dst.type.dtype)
    if width is not DataType.INT32:
        flat = lw.emit("tile.cast", [flat], {"dtype": width}, out, base + "_at16")
    return lw.emit("tile.scatter", [dst, values, flat], {}, out, base)


def _flat(
    lw: _Lowerer, src: nodes.Var, idx: nodes.Var, *, dim: int, out: list[nodes.Stmt], base: str
) -> nodes.Var:
    """torch's per-axis indices of a gather or scatter on the [R, S] tile ``src`` as the flat
    row-major positions TGATHER and TSCATTER take, in INT32: ``index * S + j`` (dim 0) or
    ``i * S + index`` (dim 1)."""
    st, it = src.type, idx.type
    assert isinstance(st, TileType)
    assert isinstance(it, TileType)
    i32 = DataType.INT32
    if it.dtype is not i32:
        idx = lw.emit("tile.cast", [idx], {"dtype": i32}, out, base + "_idx")
    rows, cols = (int(n) for n in it.shape)
    width = nodes.Const(int(st.shape[1]), i32)
    zero = nodes.Const(0, i32)
    flat: nodes.Var = idx
    if dim % 2 == 0:  # index * S + j
        flat = lw.emit("tile.muls", [idx, width], {}, out, base + "_at")
        if cols > 1:
            col = lw.emit("tile.ci", [zero], {"shape": (1, cols), "dtype": i32}, out, base + "_col")
            flat = lw.emit("tile.col_expand_add", [flat, col], {}, out, base + "_flat")
    elif rows > 1:  # i * S + index
        row = lw.emit("tile.ci", [zero], {"shape": (1, rows), "dtype": i32}, out, base + "_row")
        row = lw.emit("tile.reshape", [row], {"shape": (rows, 1)}, out, base + "_rows")
        row = lw.emit("tile.muls", [row, width], {}, out, base + "_base")
        flat = lw.emit("tile.row_expand_add", [idx, row], {}, out, base + "_flat")
    return flat


def _scratch_row(lw: _Lowerer, out: list[nodes.Stmt]) -> nodes.Var:
    """The scratch tile TGATHER takes (unused by its index form)."""
    return lw.emit(
        "tile.create", [], {"shape": (1, 8), "dtype": DataType.INT32, "memory": MemorySpace.Vec}, out, "tmp"
    )
