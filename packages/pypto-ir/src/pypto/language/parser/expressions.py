"""The parser's expressions: names, constants, static values, operators."""

from __future__ import annotations

import ast
import builtins
import inspect
from collections.abc import Callable
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.nodes import (
    BINOP_SYMBOLS,
    Call,
    Const,
    Expr,
    expr_vars,
)
from pypto.ir.types import (
    DynDim,
    ScalarType,
    TensorType,
    TileType,
)
from pypto.language import typing as lt
from pypto.language.fold import INDEX, compare, fold
from pypto.language.parser.common import (
    _BINOPS,
    _COMPARE,
    INTEGER_BINOPS,
    _ParserBase,
    _SelfMethod,
    _Static,
)
from pypto.language.suggest import instead_of


class _Expressions(_ParserBase):
    # ------------------------------------------------------------------ expressions

    def lookup(self, name: str, node: ast.AST) -> Expr | _Static:
        if name in self.st.env:
            return self.st.env[name]
        if name in self.src.namespace:
            value = self.src.namespace[name]
            if isinstance(value, (bool, int, float, DynDim)):
                self.ctx.captured[(self.src.fn, name)] = value
            return self.static_to_expr(value, node)
        if hasattr(builtins, name):
            return _Static(getattr(builtins, name))
        raise self.err(f"unknown name {name!r}: not a parameter, a local or a module-level constant", node)

    def static_to_expr(self, value: Any, node: ast.AST) -> Expr | _Static:
        span = self.src.span(node)
        const = _python_const(value, span)
        if const is not None:
            return const
        if isinstance(value, DynDim):
            if value.name not in self.st.dyn_dims:
                raise self.err(
                    f"dynamic dim {value.name!r} is not a dimension of any tensor parameter of this function",
                    node,
                )
            var, axis = self.st.dyn_dims[value.name]
            return Call("tensor.dim", (var,), (("axis", axis),), ScalarType(INDEX), span)
        if lt.is_runtime(value):
            raise self.err(
                "pl.RUNTIME has no value inside a kernel: it only marks a scalar parameter as a runtime "
                "parameter (as its default, or as the argument to specialize/compile); use the parameter",
                node,
            )
        return _Static(value)

    def resolve(self, node: ast.expr) -> Expr | _Static:
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self" and "self" not in self.st.env:
                return _Static(_SelfMethod(node.attr))
            base = self.resolve(node.value)
            if not isinstance(base, _Static):
                raise self.err(f"attribute access .{node.attr} on a value is not supported in kernels", node)
            try:
                return self.static_to_expr(getattr(base.value, node.attr), node)
            except AttributeError:
                message = f"{ast.unparse(node.value)} has no attribute {node.attr!r}"
                hint = _instead_of_attribute(base.value, node.attr, ast.unparse(node.value))
                raise self.err(message + (f"; {hint}" if hint else ""), node) from None
        return self.expr(node)

    def static_value(self, node: Any, what: str, at: ast.AST) -> Any:
        """A compile-time value (enum, dtype, string, int) of an argument node."""
        if node is None or not isinstance(node, ast.AST):
            return node
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.static_value(e, what, at) for e in node.elts]
        r = self.resolve(node)  # type: ignore[arg-type]
        if isinstance(r, _Static):
            return r.value
        if isinstance(r, Const):
            return r.value
        hint = self.runtime_hint(r, what)
        raise self.err(f"{what} must be a compile-time constant, got {ast.unparse(node)}{hint}", node)

    def runtime_hint(self, e: Expr | None, what: str) -> str:
        """Why ``e`` is not a constant when it reads a runtime scalar parameter ("" otherwise)."""
        if e is None:
            return ""
        names = sorted({n for v in expr_vars(e) if (n := self.st.runtime_scalars.get(id(v))) is not None})
        if not names:
            return ""
        which = ", ".join(repr(n) for n in names)
        return (
            f"; parameter {which} is a runtime scalar, whose value arrives at dispatch, but {what} must "
            "be known when compiling: fold it (pass its value instead of pl.RUNTIME) or use a pl.dynamic dim"
        )

    def expr(self, node: ast.expr) -> Expr:
        r = self._expr(node)
        if isinstance(r, _Static):
            raise self.err(f"{ast.unparse(node)} is not a value a kernel can use", node)
        return r

    def _expr(self, node: ast.expr) -> Expr | _Static:
        span = self.src.span(node)
        if isinstance(node, ast.Constant):
            v = node.value
            const = _python_const(v, span)
            if const is not None:
                return const
            if v is None and not (self.st.func_type.is_kernel or self.st.in_scope):
                # upstream's "no producer yet" task id: a task with no work and no dependencies
                return self.make_op("task_dummy", [], {}, node)
            raise self.err(f"constant {v!r} is not supported in kernels (ints, floats, bools only)", node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.resolve(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand)
            if isinstance(node.op, ast.USub):
                if isinstance(operand, Const):
                    return Const(-operand.value, operand.dtype, span)
                if isinstance(operand.type, (TileType, TensorType)):
                    return self.make_op("neg", [operand], {}, node)
                return fold("mul", operand, Const(-1, INDEX), span)
            if isinstance(node.op, ast.UAdd):
                return operand
            st = operand.type
            if isinstance(node.op, ast.Not) and isinstance(st, ScalarType):
                # not a: a == 0 (False for a bool)
                zero = Const(False, DataType.BOOL) if st.dtype is DataType.BOOL else Const(0, st.dtype)
                return compare("eq", operand, zero, span)
            if isinstance(node.op, ast.Invert) and isinstance(st, ScalarType):
                if st.dtype.is_float or st.dtype is DataType.BOOL:
                    raise self.err(f"~ takes an integer scalar, got {st}", node)
                # ~a: -a - 1 (two's complement)
                return fold("sub", fold("mul", operand, Const(-1, st.dtype), span), Const(1, st.dtype), span)
            raise self.err(
                f"unary operator {type(node.op).__name__} is not supported on {operand.type}", node
            )
        if isinstance(node, ast.BinOp):
            lhs, rhs = self.expr(node.left), self.expr(node.right)
            opname = _BINOPS.get(type(node.op))
            if opname is None:
                raise self.err(f"operator {ast.unparse(node)} is not supported in kernels", node)
            if isinstance(lhs.type, (TileType, TensorType)):
                tile_op = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div"}.get(opname)
                if tile_op is None:
                    raise self.err(f"operator {type(node.op).__name__} does not apply to tiles", node)
                return self.make_op(tile_op, [lhs, rhs], {}, node)
            if not isinstance(lhs.type, ScalarType) or not isinstance(rhs.type, ScalarType):
                raise self.err(f"cannot apply {type(node.op).__name__} to {lhs.type} and {rhs.type}", node)
            if opname in INTEGER_BINOPS:
                self.check_integer_operands(node, BINOP_SYMBOLS[opname], lhs, rhs)
            return fold(opname, lhs, rhs, span)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.err("chained comparisons are not supported; compare two values", node)
            same = self.dtype_comparison(node)
            if same is not None:
                return Const(same, DataType.BOOL, span)
            cmp = _COMPARE.get(type(node.ops[0]))
            if cmp is None:
                raise self.err(f"comparison {type(node.ops[0]).__name__} is not supported in kernels", node)
            a = self.scalar(node.left, "a comparison operand")
            b = self.scalar(node.comparators[0], "a comparison operand")
            return compare(cmp, a, b, span)
        if isinstance(node, ast.Subscript):
            item = self.tuple_item(node)  # t[k] of a tuple (parser/tuples.py)
            if item is not None:
                return item  # type: ignore[no-any-return]
            return self.tensor_view(node)
        if isinstance(node, ast.Tuple):
            return self.tuple_literal(node)  # type: ignore[no-any-return]
        what = type(node).__name__
        raise self.err(f"unsupported expression in a kernel: {what}", node)

    def check_integer_operands(self, node: ast.BinOp, sym: str, lhs: Expr, rhs: Expr) -> None:
        """Shifts and bitwise operators take integer scalars (a shift a count from 0 to 63)."""
        for side, e in (("left", lhs), ("right", rhs)):
            t = e.type
            assert isinstance(t, ScalarType)
            if t.dtype.is_float or t.dtype is DataType.BOOL:
                raise self.err(f"{sym} takes integer scalars; its {side} operand is {t}", node)
        shift = isinstance(node.op, (ast.LShift, ast.RShift))
        if shift and isinstance(rhs, Const) and not 0 <= rhs.value < 64:
            raise self.err(f"{sym}: the shift count must be 0 to 63, got {rhs.value}", node)

    def dtype_comparison(self, node: ast.Compare) -> bool | None:
        """``DT == pl.FP32`` (``!=``, ``is``, ``is not``) of two compile-time dtypes, such as a
        ``pl.dtype_var`` bound by the specialisation: its value; None for any other comparison."""
        op = node.ops[0]
        if not isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            return None
        if not isinstance(node.left, (ast.Name, ast.Attribute)) or not isinstance(
            node.comparators[0], (ast.Name, ast.Attribute)
        ):
            return None
        a, b = self.resolve(node.left), self.resolve(node.comparators[0])
        if not (isinstance(a, _Static) and isinstance(b, _Static)):
            return None
        if not (isinstance(a.value, DataType) and isinstance(b.value, DataType)):
            return None
        return (a.value is b.value) == isinstance(op, (ast.Eq, ast.Is))

    def scalar(self, node: ast.expr, what: str) -> Expr:
        e = self.expr(node)
        if not isinstance(e.type, ScalarType):
            raise self.err(f"{what} must be a scalar, got {e.type}", node)
        return e

    def is_inline(self, func: ast.expr) -> bool:
        try:
            r = self.resolve(func)
        except KernelError:
            return False
        return isinstance(r, _Static) and bool(getattr(r.value, "__pypto_inline__", False))

    def dsl_kind(self, func: ast.expr) -> str | None:
        try:
            r = self.resolve(func)
        except KernelError:
            return None
        if isinstance(r, _Static):
            if r.value is builtins.range:
                return "range"
            return getattr(r.value, "__pypto_dsl__", None)
        return None

    def bind(self, fn: Callable[..., Any], what: str, node: ast.Call) -> dict[str, Any]:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.err(f"{what}: *args and **kwargs are not supported in kernels", node)
        sig = inspect.signature(fn)
        try:
            ba = sig.bind(*node.args, **{k.arg: k.value for k in node.keywords if k.arg is not None})
        except TypeError as exc:
            params = ", ".join(sig.parameters)
            raise self.err(f"{what}({params}): {exc}", node) from None
        return dict(ba.arguments)


def _python_const(value: object, span: Span | None) -> Const | None:
    """A Python bool, int or float as a kernel constant (BOOL, INDEX, FP32); None for any
    other value."""
    if isinstance(value, bool):
        return Const(value, DataType.BOOL, span)
    if isinstance(value, int):
        return Const(value, INDEX, span)
    if isinstance(value, float):
        return Const(value, DataType.FP32, span)
    return None


def _instead_of_attribute(obj: object, name: str, spelled: str) -> str:
    """A suggestion for ``spelled.name`` when ``obj`` is ``pl``, ``pl.tile`` or ``pl.tensor``, else ''."""
    import pypto.language as pl

    if obj is pl or obj is pl.tile or obj is pl.tensor:
        return instead_of(name, obj.__all__, prefix=f"{spelled}.")
    return ""
