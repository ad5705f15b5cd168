"""The op table's reductions (``row_*`` / ``col_*``) and row and column broadcasts."""

from __future__ import annotations

from pypto.ir.dtypes import DataType
from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _both, _enter, _leveled, _tile_and_tensor
from pypto.ir.ops.rules import FLOAT
from pypto.ir.ops.spec import Cpp, LangOp

__all__: list[str] = []


def _reduction_cpp(name: str) -> Cpp:
    """``row_sum`` -> ``TROWSUM(dst, src, tmp)`` ([R, 1] result); ``col_max`` -> ``TCOLMAX(dst,
    src)`` ([1, C] result). The row reductions and the arg reductions take a scratch tile."""
    row = name.startswith("row_")
    tmp = row or "arg" in name
    return Cpp(f"T{name.replace('_', '').upper()}", tmp=tmp, tmp_arg=1, valid="row" if row else "col")


def _reduction(name: str, doc: str, result: DataType | None = None) -> None:
    """``pl.<name>(input, tmp_tile=None)``: ``TROWSUM(dst, src, tmp)`` / ``TCOLSUM(dst, src)``...; ``result``: the result dtype
    when it is not the operand's."""
    _enter(
        LangOp(name, (P("input"), P("tmp_tile", None)), doc, _both(name), group="reduction"),
        *_leveled(
            name, lambda kind: rules.reduction(kind, name, result=result), (1, 2), _reduction_cpp(name)
        ),
    )


def _expand(name: str, doc: str, row: bool, float_only: bool = False, packed: bool = False) -> None:
    """``pl.<name>(lhs, rhs)``: a vector broadcast; the plain ``row_expand``/``col_expand`` write
    the broadcast vector alone (``TROWEXPAND(dst, vec)``), the others combine it with ``lhs``.
    ``packed``: the row vector may also be one 32-byte block a row, and the tile form takes
    upstream's scratch tile ``tmp`` (unused by the simulator)."""
    operands = (1,) if name in ("row_expand", "col_expand") else (0, 1)
    dtypes = FLOAT if float_only else None
    params = (P("lhs"), P("rhs"), P("tmp", None)) if packed else (P("lhs"), P("rhs"))
    _enter(
        LangOp(name, params, doc, _both(name), group="broadcast"),
        *_leveled(
            name,
            lambda kind: rules.expand(kind, name, row, dtypes=dtypes, packed=packed),
            (2, 3 if packed else 2),
            Cpp(
                f"T{name.replace('_', '').upper()}",
                operands,
                inplace=name not in ("row_expand", "col_expand"),
            ),
            dtypes=dtypes,
        ),
    )


_reduction("row_sum", """Sum of each row: [R, C] -> [R, 1]. ``tmp_tile`` is an optional scratch tile.""")
_reduction("row_max", """Maximum of each row: [R, C] -> [R, 1].""")
_reduction("row_min", """Minimum of each row: [R, C] -> [R, 1].""")
_reduction("col_sum", """Sum of each column: [R, C] -> [1, C].""")
_reduction("col_max", """Maximum of each column: [R, C] -> [1, C].""")
_reduction("col_min", """Minimum of each column: [R, C] -> [1, C].""")
_reduction("row_prod", """Product of each row: [R, C] -> [R, 1] (FP32 products for float tiles).""")
_reduction("col_prod", """Product of each column: [R, C] -> [1, C].""")
_reduction(
    "row_argmax",
    """Column index of each row's first maximum: [R, C] -> [R, 1] INT32 (a NaN counts as the
    maximum, as torch.argmax).""",
    result=DataType.INT32,
)
_reduction(
    "row_argmin",
    """Column index of each row's first minimum: [R, C] -> [R, 1] INT32 (a NaN counts as the
    minimum, as torch.argmin).""",
    result=DataType.INT32,
)
_reduction(
    "col_argmax",
    """Row index of each column's first maximum: [R, C] -> [1, C] INT32.""",
    result=DataType.INT32,
)
_reduction(
    "col_argmin",
    """Row index of each column's first minimum: [R, C] -> [1, C] INT32.""",
    result=DataType.INT32,
)

_expand("row_expand", """Broadcast a [R, 1] vector over the columns of a [R, C] shape.""", row=True)
_expand(
    "row_expand_add",
    """``tile + row_vec`` with the [R, 1] vector broadcast over columns. ``row_vec`` may also be
    upstream's packed carrier, one 32-byte block a row ([R, 32 / element size]), repeated
    across the columns: ``tile[r, c] + row_vec[r, c % k]``. ``tmp`` is upstream's scratch tile
    (tile form; unused by the simulator).""",
    row=True,
    packed=True,
)
_expand("row_expand_sub", """``tile - row_vec`` with the [R, 1] vector broadcast over columns.""", row=True)
_expand("row_expand_mul", """``tile * row_vec`` with the [R, 1] vector broadcast over columns.""", row=True)
_expand("row_expand_div", """``tile / row_vec`` with the [R, 1] vector broadcast over columns.""", row=True)
_expand(
    "row_expand_max", """``max(tile, row_vec)`` with the [R, 1] vector broadcast over columns.""", row=True
)
_expand(
    "row_expand_min", """``min(tile, row_vec)`` with the [R, 1] vector broadcast over columns.""", row=True
)
_expand(
    "row_expand_expdif",
    """``exp(tile - row_vec)`` with the [R, 1] vector broadcast over columns (floating point).""",
    row=True,
    float_only=True,
)
_expand("col_expand", """Broadcast a [1, C] vector over the rows of a [R, C] shape.""", row=False)
_expand("col_expand_add", """``tile + col_vec`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_sub", """``tile - col_vec`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_mul", """``tile * col_vec`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_div", """``tile / col_vec`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_max", """``max(tile, col_vec)`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_min", """``min(tile, col_vec)`` with the [1, C] vector broadcast over rows.""", row=False)
_expand(
    "col_expand_expdif",
    """``exp(tile - col_vec)`` with the [1, C] vector broadcast over rows (floating point).""",
    row=False,
    float_only=True,
)

_tile_and_tensor(
    "expands",
    (P("target"), P("scalar")),
    """A value shaped and typed like ``target`` with ``scalar`` in every element:
    ``pl.expands(t, 0.5)``. ``target`` gives the shape, dtype and (for a tile) the valid shape;
    its elements are not read.""",
    group="broadcast",
    rules_of=(rules.expands("tile"), rules.expands("tensor")),
    arity=(2, 2),
)
