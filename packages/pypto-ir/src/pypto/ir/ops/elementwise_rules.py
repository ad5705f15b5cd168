"""The type rules of the element-wise families: binary and unary ops, a tile with a scalar,
a scalar broadcast (``expands``), and the leaky ReLUs.

One rule per family, made for one op at one level; the table passes the spaces and dtypes it
records for the op, so those facts are read from the table, not repeated here.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.operand_checks import FLOAT, VEC, _describe, _same_dtype, _same_shape, _tensor_like, _tile
from pypto.ir.ops.spec import OpError, Rule
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type


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


PART_DTYPES = frozenset(
    {
        DataType.FP16,
        DataType.FP32,
        DataType.BF16,
        DataType.INT8,
        DataType.UINT8,
        DataType.INT16,
        DataType.INT32,
    }
)


def partial(kind: str, op: str) -> Rule:
    """``pl.part_add/mul/max/min(lhs, rhs)``: two tiles (or tensors) of one shape and dtype, no
    scalar; the tile form combines operands of different valid shapes (PTO-ISA TPART*)."""
    inner = binary(kind, op)

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        if isinstance(args[1], ScalarType):
            raise OpError(f"pl.{op}: rhs must be a tile or a tensor, got a scalar {args[1]}")
        out = inner(args, attrs)
        assert isinstance(out, (TileType, TensorType))
        if out.dtype not in PART_DTYPES:
            names = "/".join(sorted(d.value for d in PART_DTYPES))
            raise OpError(f"pl.{op}: operands must be {names}, got {out.dtype.value}")
        return out

    return rule


def three_operand(op: str, scalar: bool) -> Rule:
    """``pl.addc/subc(lhs, rhs, rhs2)`` (three tiles) and ``pl.addsc/subsc(lhs, scalar, rhs2)``:
    Vec tiles of one shape and dtype (a scalar in the middle for the ``s`` forms)."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        t = _tile(args[0], op, "lhs", VEC)
        if t.dtype is DataType.BOOL:
            raise OpError(f"pl.{op}: needs numbers, got a BOOL operand")
        r = args[1]
        if scalar != isinstance(r, ScalarType):
            want = "a scalar" if scalar else "a tile"
            raise OpError(f"pl.{op}: rhs must be {want}, got {r}")
        for what, other in (("rhs", r), ("rhs2", args[2])):
            if isinstance(other, ScalarType):
                continue
            o = _tile(other, op, what, VEC)
            _same_shape(t.shape, o.shape, op)
            _same_dtype(t.dtype, o.dtype, op)
        return t

    return rule


REM_DTYPES = frozenset({DataType.FP16, DataType.FP32, DataType.BF16, DataType.INT16, DataType.INT32})


def remainder(op: str) -> Rule:
    """``pl.rem(lhs, rhs, tmp)`` (a tile ``rhs`` of ``lhs``'s shape and dtype, or a scalar) and
    ``pl.rems(lhs, rhs, tmp)`` (a scalar ``rhs``), with upstream's scratch tile: Vec tiles."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        t = _tile(args[0], op, "lhs", VEC)
        if t.dtype not in REM_DTYPES:
            names = "/".join(sorted(d.value for d in REM_DTYPES))
            raise OpError(f"pl.{op}: lhs must be {names}, got {t.dtype.value}")
        r = args[1]
        if not isinstance(r, ScalarType):
            if op == "rems":
                raise OpError(f"pl.rems: rhs must be a scalar, got {r}; for a tile divisor use pl.rem")
            rt = _tile(r, op, "rhs", VEC)
            _same_shape(t.shape, rt.shape, op)
            _same_dtype(t.dtype, rt.dtype, op)
        _tile(args[2], op, "tmp (a scratch tile)", VEC)
        return t

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
