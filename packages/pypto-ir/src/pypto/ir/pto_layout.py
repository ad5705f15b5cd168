"""How an IR tile is laid out as a PTO-ISA tile: its block layout and physical (padded) shape.

The ISA's tiles have a static physical shape that its instructions' static checks constrain
(docs/isa in the pto-isa repository; ``Tile`` in ``include/pto/common/pto_tile.hpp``):

- a Vec tile is row-major with no fractal box, and each row fills whole 32-byte blocks
  (``Cols * sizeof(T) % 32 == 0``); a column vector ``[R, 1]`` is column-major instead, each
  column filling whole blocks (``Rows * sizeof(T) % 32 == 0``), which is the shape the row
  reductions write and the row-broadcast instructions read;
- a Mat (L1) tile is stored column-major in 16 x (32 bytes) fractals with row-major boxes of
  512 bytes (``BLayout::ColMajor``, ``SLayout::RowMajor``), as TLOAD into L1 and TMOV to
  L0A/L0B accept it; Left, Right and Acc are the ISA's ``TileLeft``/``TileRight``/``TileAcc``;
  the cube tiles' rows and columns are padded to whole fractals: M and N to 16, K to 16 (32 for
  1-byte types), so a product's Left, Right and Acc tiles agree in M, K and N;
- a Bias tile (the bias table) is one row-major row with no fractal box (the ISA's matmuls
  with a bias take a single-row Bias tile), its columns filling whole 32-byte blocks.

The IR shape is the tile's valid shape at most; the generated code declares the valid shape
at run time (``Tile<..., -1, -1> t(rows, cols)``) and the padding is never read as data.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pypto.ir.dtypes import DataType
from pypto.ir.types import MemorySpace, TileType

__all__ = ["BLOCK_BYTES", "PtoTile", "pto_tile"]

BLOCK_BYTES = 32
"""Bytes of one ISA data block: a Vec row (or a column-major column) is a whole number of them."""


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass(frozen=True)
class PtoTile:
    """The PTO-ISA form of one IR tile: ``space`` and ``dtype`` as the IR's, ``rows x cols``
    physical elements, ``col_major`` for a column-vector Vec tile."""

    space: MemorySpace
    dtype: DataType
    rows: int
    cols: int
    col_major: bool = False

    @property
    def nbytes(self) -> int:
        """Bytes of the physical tile (what the allocator reserves before alignment)."""
        return (self.rows * self.cols * self.dtype.bits + 7) // 8


def _elem_bytes(dtype: DataType) -> int:
    return max(1, dtype.bits // 8)


@functools.lru_cache(maxsize=1024)  # a kernel asks for its few tile types many times over
def pto_tile(t: TileType) -> PtoTile:
    """The physical PTO-ISA tile that holds an IR tile of type ``t`` (2-D)."""
    r, c = (int(x) for x in t.shape)
    size = _elem_bytes(t.dtype)
    per_block = max(1, BLOCK_BYTES // size)  # elements in one 32-byte block
    if t.memory is MemorySpace.Bias:  # the bias table holds one unboxed row
        return PtoTile(t.memory, t.dtype, r, _round_up(c, per_block))
    if t.memory is MemorySpace.Vec:
        if c == 1 and r > 1:
            return PtoTile(t.memory, t.dtype, _round_up(r, per_block), 1, col_major=True)
        return PtoTile(t.memory, t.dtype, r, _round_up(c, per_block))
    # a box is 16 rows by C0 = 32 bytes of columns (Left, Mat, Acc), or C0 rows by 16 columns
    # (Right); C0 is 16 elements (8 for 4-byte types, padded to 16 like the others) or 32 for 1-byte
    # types. M (Left, Acc rows) and N (Right, Acc columns) are padded to 16, K (Left columns, Right
    # rows) to C0, so the product's three tiles agree in M, K and N whatever the element size.
    c0 = 32 if size == 1 else 16
    rows, cols = {
        MemorySpace.Left: (16, c0),
        MemorySpace.Right: (c0, 16),
        MemorySpace.Acc: (16, 16),
    }.get(t.memory, (16, c0))
    return PtoTile(t.memory, t.dtype, _round_up(r, rows), _round_up(c, cols))
