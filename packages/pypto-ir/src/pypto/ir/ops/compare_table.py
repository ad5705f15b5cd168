"""The op table's bitwise, compare and select entries."""

from __future__ import annotations

from typing import Any

from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _both, _enter
from pypto.ir.ops.rules import INT, VEC
from pypto.ir.ops.spec import Cpp, LangOp, OpSpec

__all__: list[str] = []


def _isa(fn: str) -> str:
    """The PTO-ISA instruction of a bitwise op: ``and_`` -> ``TAND``, ``shls`` -> ``TSHLS``."""
    return "T" + fn.rstrip("_").upper()


def _xors(fn: str) -> dict[str, Any]:
    """TXOR and TXORS take a scratch tile of the result's type as their last argument."""
    return {"tmp": True, "tmp_like": None, "tmp_arg": 2} if fn in ("xor_", "xors") else {}


def _bitwise(name: str, scalar: str, fn: str, doc: str, sdoc: str, *, tmp: bool = False) -> None:
    """``pl.<name>(lhs, rhs)`` on integer elements (``rhs`` a tile/tensor or an integer scalar:
    ``T<FN>`` / ``T<SCALAR>``) and ``pl.<scalar>(lhs, rhs)`` with a scalar rhs. ``tmp``: the
    tile forms take upstream's scratch tile as a third operand (not used by the simulator)."""
    params = (P("lhs"), P("rhs"), P("tmp", None)) if tmp else (P("lhs"), P("rhs"))
    hi = 3 if tmp else 2
    forms: tuple[tuple[str, bool, str, str, Cpp], ...] = (
        (name, False, "", doc, Cpp(_isa(fn), (0, 1), scalar_fn=_isa(scalar), inplace=True, **_xors(fn))),
        (
            scalar,
            True,
            name,
            sdoc,
            Cpp(_isa(scalar), (0, 1), scalar_fn=_isa(scalar), inplace=True, **_xors(scalar)),
        ),
    )
    for op, scalar_only, pair, text, lib in forms:
        _enter(
            LangOp(op, params, text, _both(op), group="bitwise"),
            OpSpec(
                f"tile.{op}",
                rules.bitwise("tile", op, scalar_only=scalar_only, pair=pair),
                2,
                hi,
                lib,
                dtypes=INT,
                spaces=VEC,
            ),
            OpSpec(
                f"tensor.{op}",
                rules.bitwise("tensor", op, scalar_only=scalar_only, pair=pair),
                2,
                hi,
                dtypes=INT,
            ),
        )


# ----------------------------------------------------------------------------- bitwise

_bitwise(
    "and_",
    "ands",
    "and_",
    """Element-wise bitwise AND of integer values; ``rhs`` a tile/tensor or an integer scalar.""",
    """Element-wise bitwise AND with an integer scalar.""",
)
_bitwise(
    "or_",
    "ors",
    "or_",
    """Element-wise bitwise OR of integer values; ``rhs`` a tile/tensor or an integer scalar.""",
    """Element-wise bitwise OR with an integer scalar.""",
)
_bitwise(
    "xor",
    "xors",
    "xor_",
    """Element-wise bitwise XOR of integer values; ``rhs`` a tile/tensor or an integer scalar.
    Of tiles it takes upstream's scratch tile ``tmp`` (optional here: the simulator needs none).""",
    """Element-wise bitwise XOR with an integer scalar (``tmp`` as for ``pl.xor``).""",
    tmp=True,
)
_bitwise(
    "shl",
    "shls",
    "shl",
    """Element-wise left shift ``lhs << rhs`` of integer values (zeros shifted in). A shift amount
    outside [0, bits of the type) fails the task (that element becomes 0).""",
    """Element-wise left shift by an integer scalar.""",
)
_bitwise(
    "shr",
    "shrs",
    "shr",
    """Element-wise right shift ``lhs >> rhs`` of integer values: arithmetic for signed types (the
    sign copied in), logical for unsigned ones. A shift amount outside [0, bits of the type)
    fails the task (that element becomes 0).""",
    """Element-wise right shift by an integer scalar.""",
)

# ----------------------------------------------------------------------------- compare, select

_CMP_DOC = """``cmp_type`` is upstream's code: 0 EQ, 1 NE, 2 LT, 3 LE, 4 GT, 5 GE (NaN is unequal to
    everything)."""
_enter(
    LangOp(
        "cmp",
        (P("lhs"), P("rhs"), P("cmp_type", 0)),
        """Compare element by element: ``lhs (cmp_type) rhs``, ``rhs`` a tile/tensor or a scalar.
    Of tiles the result is a packed predicate mask: a UINT8 tile [R, ceil(C / 8) rounded up to
    32] whose byte (r, c // 8) holds bit c % 8 for element (r, c), read by ``pl.sel`` /
    ``pl.sels``. Of tensors it is 0/1 in lhs's dtype and shape. """
        + _CMP_DOC,
        _both("cmp"),
        group="compare",
    ),
    OpSpec(
        "tile.cmp",
        rules.compare("tile", "cmp"),
        2,
        2,
        Cpp("TCMP", (0, 1), scalar_fn="TCMPS", tail="cmp", scalar_like=0, valid="mask"),
        attrs=("cmp_type",),
        spaces=VEC,
    ),
    OpSpec("tensor.cmp", rules.compare("tensor", "cmp"), 2, 2, attrs=("cmp_type",)),
)
_enter(
    LangOp(
        "cmps",
        (P("lhs"), P("rhs"), P("cmp_type", 0)),
        """``pl.cmp`` of a tile and a scalar: the packed UINT8 predicate mask of ``lhs (cmp_type) rhs``. """
        + _CMP_DOC,
        {"tile": "tile.cmps"},
        group="compare",
    ),
    OpSpec(
        "tile.cmps",
        rules.compare("tile", "cmps", scalar_only=True),
        2,
        2,
        Cpp("TCMPS", (0, 1), scalar_fn="TCMPS", tail="cmp", scalar_like=0, valid="mask"),
        attrs=("cmp_type",),
        spaces=VEC,
    ),
)
_enter(
    LangOp(
        "sel",
        (P("mask"), P("lhs"), P("rhs"), P("tmp", None)),
        """Per element, ``lhs`` where the mask bit is 1, else ``rhs`` (equal-shaped Vec tiles; the mask
    from ``pl.cmp``). ``tmp`` is upstream's scratch tile (optional here: the simulator needs none).""",
        {"tile": "tile.sel"},
        group="compare",
    ),
    OpSpec(
        "tile.sel",
        rules.select("sel"),
        3,
        4,
        Cpp("TSEL", (0, 1, 2), valid="static", tmp=True, tmp_like=None),
        spaces=VEC,
    ),
)
_enter(
    LangOp(
        "sels",
        (P("mask"), P("src"), P("tmp"), P("scalar")),
        """Per element, ``src`` where the mask bit is 1, else ``scalar``. ``tmp`` is upstream's scratch
    tile (the simulator does not use it).""",
        {"tile": "tile.sels"},
        group="compare",
    ),
    OpSpec(
        "tile.sels",
        rules.select("sels"),
        4,
        4,
        Cpp("TSELS", (0, 1, 3), scalar_fn="TSELS", valid="static", tmp=True, tmp_at=3, tmp_like=None),
        spaces=VEC,
    ),
)
