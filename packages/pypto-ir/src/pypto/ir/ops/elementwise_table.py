"""The op table's element-wise entries: binary ops (on two tiles or a tile and a scalar),
unary ops and the rest of the element-wise family.

A new unary op is one ``_unary(...)`` line here: its PTO-ISA instruction is ``T<NAME>``, or a
simpler/kernel_args.hpp helper for one the ISA lacks (``_UNARY_CPP``).
"""

from __future__ import annotations

from dataclasses import replace

from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _both, _enter, _leveled, _tile_and_tensor
from pypto.ir.ops.rules import FLOAT, INT, VEC
from pypto.ir.ops.spec import Cpp, LangOp, OpSpec, Param

__all__: list[str] = []


PRECISION = P("high_precision", False)
"""``high_precision=``: upstream's request for the device's more accurate (slower) algorithm of a
division, logarithm or reciprocal; the simulated chip computes every one of them in FP32 with the
C library, so the flag is checked and recorded (attribute ``high_precision``) and changes nothing."""


def _binary(name: str, doc: str, fn: str | None = None, precision: bool = False) -> None:
    """``pl.<name>(lhs, rhs)``: element-wise; ``T<FN>`` on two tiles, ``T<FN>S`` with a scalar.
    ``precision``: it takes ``high_precision=``."""
    lib = fn or name
    tile, tensor = _leveled(
        name,
        lambda kind: rules.binary(kind, name),
        (2, 2),
        Cpp(f"T{lib.upper()}", (0, 1), scalar_fn=f"T{lib.upper()}S", inplace=True),
    )
    params = (P("lhs"), P("rhs"), PRECISION) if precision else (P("lhs"), P("rhs"))
    if precision:
        tile = replace(tile, attrs=("high_precision",))
        tensor = replace(tensor, attrs=("high_precision",))
    _enter(LangOp(name, params, doc, _both(name), group="element-wise"), tile, tensor)


def _scalar_binary(name: str, pair: str, doc: str, *, fn: str, in_pl: bool, tensor: bool) -> None:
    """``pl.tile.<name>(lhs, rhs)``: a tile (op) a scalar, ``T<FN>(dst, tile, scalar)``; ``pair``
    is the op on two tiles. ``tensor``: it has a tensor form too (``pl.tensor.<name>``)."""
    specs = [
        OpSpec(
            f"tile.{name}",
            rules.scalar_binary("tile", name, pair),
            2,
            2,
            Cpp(f"T{fn.upper()}", (0, 1), scalar_fn=f"T{fn.upper()}", inplace=True),
            spaces=VEC,
        )
    ]
    forms = {"tile": f"tile.{name}"}
    if tensor:
        specs.append(OpSpec(f"tensor.{name}", rules.scalar_binary("tensor", name, pair), 2, 2))
        forms["tensor"] = f"tensor.{name}"
    _enter(LangOp(name, (P("lhs"), P("rhs")), doc, forms, group="element-wise", in_pl=in_pl), *specs)


def _unary(
    name: str,
    doc: str,
    *,
    float_only: bool = False,
    precision: bool = False,
    int_only: bool = False,
    scratch: bool = False,
) -> None:
    """``pl.<name>(input)``: element-wise, ``T<NAME>(dst, src)``. ``precision``: it takes
    ``high_precision=``; ``scratch``: its tile form takes upstream's scratch tile ``tmp``."""
    dtypes = FLOAT if float_only else INT if int_only else None
    tile, tensor = _leveled(
        name,
        lambda kind: rules.unary(kind, name, dtypes=dtypes),
        (1, 2 if scratch else 1),
        _UNARY_CPP.get(name, Cpp(f"T{name.rstrip('_').upper()}", inplace=True)),
        dtypes=dtypes,
    )
    if precision:
        tile = replace(tile, attrs=("high_precision",))
        tensor = replace(tensor, attrs=("high_precision",))
    params: tuple[Param, ...] = (P("input"), PRECISION) if precision else (P("input"),)
    if scratch:
        params += (P("tmp", None),)
    _enter(LangOp(name, params, doc, _both(name), group="element-wise"), tile, tensor)


# Unary ops whose instruction is not T<NAME>, or that PTO-ISA lacks (a simpler/kernel_args.hpp
# loop over the Tile API).
_UNARY_CPP = {
    "sin": Cpp("tsin", helper=True, inplace=True),
    "cos": Cpp("tcos", helper=True, inplace=True),
}


_binary("add", """Element-wise ``lhs + rhs`` (tile or tensor; ``rhs`` may be a scalar).""")
_binary("sub", """Element-wise ``lhs - rhs``.""")
_binary("mul", """Element-wise ``lhs * rhs``.""")
_binary(
    "div",
    """Element-wise ``lhs / rhs``. ``high_precision=True`` (tile or tensor divisor) asks the device
    for its more accurate division; the simulator divides in FP32 either way.""",
    precision=True,
)
_binary("maximum", """Element-wise maximum.""", fn="max")
_binary("minimum", """Element-wise minimum.""", fn="min")

_scalar_binary(
    "adds",
    "add",
    """Element-wise ``lhs + rhs`` of a tile and a scalar: ``pl.tile.adds(t, 1.0)``.""",
    fn="adds",
    in_pl=False,
    tensor=True,
)
_scalar_binary(
    "subs",
    "sub",
    """Element-wise ``lhs - rhs`` of a tile and a scalar.""",
    fn="subs",
    in_pl=False,
    tensor=True,
)
_scalar_binary(
    "muls",
    "mul",
    """Element-wise ``lhs * rhs`` of a tile and a scalar.""",
    fn="muls",
    in_pl=False,
    tensor=True,
)
_scalar_binary(
    "divs",
    "div",
    """Element-wise ``lhs / rhs`` of a tile and a scalar (an integer tile divides toward zero; an
    integer zero divisor gives 0 and fails the task).""",
    fn="divs",
    in_pl=False,
    tensor=True,
)
_tile_and_tensor(
    "fmod",
    (P("lhs"), P("rhs")),
    """Element-wise remainder of ``lhs / rhs`` with the sign of ``lhs`` (C's ``fmod``, as
    ``torch.fmod``); ``rhs`` a tile/tensor or a scalar; floating point.""",
    group="element-wise",
    rules_of=(
        rules.float_only(rules.binary("tile", "fmod"), "fmod"),
        rules.float_only(rules.binary("tensor", "fmod"), "fmod"),
    ),
    arity=(2, 2),
    cpp=Cpp("TFMOD", (0, 1), scalar_fn="TFMODS", inplace=True),
    dtypes=FLOAT,
)
_tile_and_tensor(
    "fmods",
    (P("lhs"), P("rhs")),
    """``pl.fmod`` with a scalar ``rhs``.""",
    group="element-wise",
    rules_of=(
        rules.float_only(rules.scalar_binary("tile", "fmods", "fmod"), "fmods"),
        rules.float_only(rules.scalar_binary("tensor", "fmods", "fmod"), "fmods"),
    ),
    arity=(2, 2),
    cpp=Cpp("TFMODS", (0, 1), scalar_fn="TFMODS", inplace=True),
    dtypes=FLOAT,
)
_scalar_binary(
    "maximums",
    "maximum",
    """Element-wise ``max(lhs, rhs)`` of a tile and a scalar.""",
    fn="maxs",
    in_pl=True,
    tensor=False,
)
_scalar_binary(
    "minimums",
    "minimum",
    """Element-wise ``min(lhs, rhs)`` of a tile and a scalar.""",
    fn="mins",
    in_pl=True,
    tensor=False,
)

_unary("exp", """Element-wise e**x.""", float_only=True)
_unary(
    "log",
    """Element-wise natural logarithm. ``high_precision=True`` asks the device for its more accurate
    algorithm; the simulator computes FP32 ``log`` either way.""",
    float_only=True,
    precision=True,
)
_unary("sin", """Element-wise sine (radians).""", float_only=True)
_unary("cos", """Element-wise cosine (radians).""", float_only=True)
_unary("sqrt", """Element-wise square root.""", float_only=True)
_unary(
    "rsqrt",
    """Element-wise 1 / sqrt(x). ``high_precision=True`` (tensor level only, as upstream) asks the
    device for its more accurate algorithm; a tile rsqrt asks for it with a scratch tile ``tmp``
    of the operand's shape and dtype. The simulator computes FP32 ``1 / sqrt`` either way.""",
    float_only=True,
    precision=True,
    scratch=True,
)
_unary(
    "recip",
    """Element-wise 1 / x. ``high_precision=True`` asks the device for its more accurate algorithm;
    the simulator computes it in FP32 either way.""",
    float_only=True,
    precision=True,
)
_unary("abs", """Element-wise absolute value.""")
_unary("neg", """Element-wise negation.""")
_unary("relu", """Element-wise max(x, 0).""")
_enter(
    LangOp(
        "lrelu",
        (P("tile"), P("slope")),
        """Leaky ReLU with a scalar slope: ``x if x > 0 else slope * x`` (floating-point tiles).""",
        {"tile": "tile.lrelu"},
        group="element-wise",
    ),
    OpSpec(
        "tile.lrelu",
        rules.leaky("lrelu"),
        2,
        2,
        Cpp("TLRELU", (0, 1), scalar_fn="TLRELU", inplace=True),
        spaces=VEC,
    ),
)
_enter(
    LangOp(
        "prelu",
        (P("tile"), P("slope"), P("tmp")),
        """Parametric ReLU: ``x if x > 0 else slope * x`` with a slope tile of the tile's shape
    (floating point). ``tmp`` is upstream's scratch tile (the simulator does not use it).""",
        {"tile": "tile.prelu"},
        group="element-wise",
    ),
    OpSpec(
        "tile.prelu",
        rules.leaky("prelu"),
        3,
        3,
        Cpp("TPRELU", (0, 1), inplace=True, tmp=True, tmp_like=None, tmp_arg=2),
        spaces=VEC,
    ),
)
for _name, _sign, _scalar in (
    ("addc", "+", False),
    ("subc", "-", False),
    ("addsc", "+", True),
    ("subsc", "-", True),
):
    _rhs = "the scalar ``rhs``" if _scalar else "``rhs``"
    _enter(
        LangOp(
            _name,
            (P("lhs"), P("rhs"), P("rhs2")),
            f"""Element-wise ``lhs {_sign} rhs + rhs2`` of Vec tiles of one shape and dtype, {_rhs} in the
    middle (PTO-ISA T{_name.upper()}, as its ISA page defines it: the third operand is always
    added; upstream's docstring of ``subc`` says ``lhs - rhs - rhs2``, but it lowers to the same
    instruction). Left to right, wrapping in integer types.""",
            {"tile": f"tile.{_name}"},
            group="element-wise",
        ),
        OpSpec(
            f"tile.{_name}",
            rules.three_operand(_name, _scalar),
            3,
            3,
            Cpp(f"T{_name.upper()}", (0, 1, 2), scalar_fn=f"T{_name.upper()}"),
            spaces=VEC,
        ),
    )
for _name, _what in (("add", "sum"), ("mul", "product"), ("max", "maximum"), ("min", "minimum")):
    _tile_and_tensor(
        f"part_{_name}",
        (P("lhs"), P("rhs")),
        f"""Element-wise {_what} of two tiles whose valid shapes may differ (PTO-ISA TPART{_name.upper()}):
    over ``lhs``'s valid shape (the result's), the {_what} where ``rhs`` is valid too and ``lhs``'s
    element where it is not. Equal shapes and dtypes (FP16, FP32, BF16, INT8, UINT8, INT16,
    INT32); of tensors (all valid), the {_what}.""",
        group="element-wise",
        rules_of=(rules.partial("tile", f"part_{_name}"), rules.partial("tensor", f"part_{_name}")),
        arity=(2, 2),
        cpp=Cpp(f"TPART{_name.upper()}", (0, 1)),
        dtypes=rules.PART_DTYPES,
    )
for _name, _doc in (
    (
        "rem",
        """Element-wise remainder of ``lhs / rhs`` with the sign of ``rhs`` (Python's ``%``, as
    ``torch.remainder``; PTO-ISA TREM): ``rhs`` a tile of ``lhs``'s shape and dtype, or a
    scalar; FP16, FP32, BF16, INT16 or INT32 Vec tiles. ``tmp`` is upstream's scratch tile (the
    simulator does not use it). An integer zero divisor gives 0 and fails the task; a float one
    gives NaN.""",
    ),
    ("rems", """``pl.rem`` with a scalar ``rhs`` (PTO-ISA TREMS)."""),
):
    _enter(
        LangOp(_name, (P("lhs"), P("rhs"), P("tmp")), _doc, {"tile": f"tile.{_name}"}, group="element-wise"),
        OpSpec(
            f"tile.{_name}",
            rules.remainder(_name),
            3,
            3,
            Cpp(
                "TREM" if _name == "rem" else "TREMS",
                (0, 1),
                scalar_fn="TREMS",
                tmp=True,
                tmp_like=None,
                tmp_arg=2,
            ),
            dtypes=rules.REM_DTYPES,
            spaces=VEC,
        ),
    )
_unary("not_", """Element-wise bitwise NOT (``~x``) of an integer tile or tensor.""", int_only=True)
