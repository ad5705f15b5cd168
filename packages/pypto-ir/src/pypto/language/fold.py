"""Scalar expressions built while parsing: constant folding and the linear-form check used
for slice extents (``(i * 16 + 16) - i * 16`` is the constant 16)."""

from __future__ import annotations

import builtins
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import Span
from pypto.ir.nodes import BinOp, Const, Expr
from pypto.ir.types import ScalarType

__all__ = ["INDEX", "compare", "extent", "fold", "linear", "make_const"]

INDEX = DataType.INT64


def linear(e: Expr) -> dict[str, int] | None:
    """``e`` as integer coefficients of atoms (key "" is the constant), or None."""
    if isinstance(e, Const):
        return {"": int(e.value)} if isinstance(e.value, int) and not isinstance(e.value, bool) else None
    if isinstance(e, BinOp) and e.op in ("add", "sub"):
        a, b = linear(e.lhs), linear(e.rhs)
        if a is None or b is None:
            return None
        sign = 1 if e.op == "add" else -1
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + sign * v
        return out
    if isinstance(e, BinOp) and e.op == "mul":
        a, b = linear(e.lhs), linear(e.rhs)
        if a is not None and b is not None:
            if set(b) == {""}:
                return {k: v * b[""] for k, v in a.items()}
            if set(a) == {""}:
                return {k: v * a[""] for k, v in b.items()}
    return {str(e): 1}


def extent(hi: Expr, lo: Expr) -> Expr:
    """``hi - lo``, a constant whenever the two differ by one (e.g. ``i*16+16`` and ``i*16``)."""
    folded = fold("sub", hi, lo)
    if isinstance(folded, Const):
        return folded
    a, b = linear(hi), linear(lo)
    if a is None or b is None:
        return folded
    diff = {k: a.get(k, 0) - b.get(k, 0) for k in set(a) | set(b)}
    if all(v == 0 for k, v in diff.items() if k):
        return Const(diff.get("", 0), INDEX)
    return folded


def compare(op: str, lhs: Expr, rhs: Expr, span: Span | None) -> Expr:
    if isinstance(lhs, Const) and isinstance(rhs, Const):
        a, b = lhs.value, rhs.value
        value = {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]
        return Const(bool(value), DataType.BOOL, span)
    return BinOp(op, lhs, rhs, ScalarType(DataType.BOOL), span)


def make_const(value: Any, dtype: DataType, span: Span | None) -> Const:
    if dtype.is_float:
        return Const(float(value), dtype, span)
    if dtype is DataType.BOOL:
        return Const(bool(value), dtype, span)
    return Const(int(value), dtype, span)


_BIT_OPS = frozenset({"lshift", "rshift", "bitand", "bitor", "bitxor"})


def _bits(op: str, a: int, b: int) -> int:
    """A shift or bitwise operator of two integers as the kernel's 64-bit arithmetic computes it
    (Python's result; a left shift wraps to 64 bits)."""
    if op == "lshift":
        wrapped = (a << b) & 0xFFFF_FFFF_FFFF_FFFF
        return wrapped - ((wrapped >> 63) << 64)
    if op == "rshift":
        return a >> b
    if op == "bitand":
        return a & b
    return a | b if op == "bitor" else a ^ b


def fold(op: str, lhs: Expr, rhs: Expr, span: Span | None = None) -> Expr:
    """Scalar arithmetic, folded when both sides are constants."""
    lt_ = lhs.type
    rt_ = rhs.type
    assert isinstance(lt_, ScalarType)
    assert isinstance(rt_, ScalarType)
    is_float = lt_.dtype.is_float or rt_.dtype.is_float or op == "truediv"
    dtype = (
        (lt_.dtype if lt_.dtype.is_float else rt_.dtype if rt_.dtype.is_float else DataType.FP32)
        if is_float
        else INDEX
    )
    if isinstance(lhs, Const) and isinstance(rhs, Const):
        a, b = lhs.value, rhs.value
        if op in ("floordiv", "mod") and b == 0:
            return BinOp(op, lhs, rhs, ScalarType(dtype), span)
        if op == "add":
            result: Any = a + b
        elif op == "sub":
            result = a - b
        elif op == "mul":
            result = a * b
        elif op == "floordiv":
            result = a // b
        elif op == "mod":
            result = a % b
        elif op == "truediv":
            result = a / b
        elif op in _BIT_OPS:
            result = _bits(op, int(a), int(b))
        elif op == "min":
            result = builtins.min(a, b)
        else:
            result = builtins.max(a, b)
        return Const(float(result) if is_float else int(result), dtype, span)
    if op == "add" and isinstance(rhs, Const) and rhs.value == 0:
        return lhs
    if op == "mul" and isinstance(rhs, Const) and rhs.value == 1:
        return lhs
    return BinOp(op, lhs, rhs, ScalarType(dtype), span)
