"""The parser's control flow beyond ``for``/``if``: ``while`` loops (plain and ``pl.while_``),
``break`` and ``continue``, and names first bound inside a loop or one if branch and read after it.

A ``while`` loop is name-based like a ``for`` loop: a name rebound in the body and defined
before it is carried by the SSA pass. ``break`` / ``continue`` leave or restart the innermost
loop; the SSA pass records the carried values at that point.

A name first bound inside a loop body (or in one branch of an ``if``) that the function reads
after the statement keeps its last binding, as in Python. The IR needs a value before the
statement for it, so one is bound there: a scalar starts as 0, a tile as a fresh tile and a
tensor as a new tensor of its shape. After a loop that ran no iteration (or the branch that
did not bind it) the name holds that starting value; Python would raise ``NameError``.
"""

from __future__ import annotations

import ast
from typing import Any

from pypto.ir import ops as op_registry
from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Assign, Break, Call, Const, Continue, Expr, Stmt, Var, While
from pypto.ir.types import ScalarType, TensorType, TileType, Type
from pypto.language.parser.tuples import _Tuples

_KIND_WORDS = {
    "parallel": "a pl.parallel loop (its iterations are independent)",
    "unroll": "a pl.unroll loop (every iteration is unrolled)",
    "spmd": "a pl.spmd loop (its iterations are the blocks of one launch)",
    "split_aiv": "a pl.split_aiv loop (its iterations are the two vector lanes)",
}


class _Control(_Tuples):
    # ------------------------------------------------------------------ loop bookkeeping

    def loop_kind(self, it: ast.Call) -> str:
        """The kind of a ``for`` loop over ``pl.range`` / ``parallel`` / ``unroll`` / ``pipeline``."""
        from pypto.language import dsl

        target = self.resolve(it.func)
        value = getattr(target, "value", None)
        if value is dsl.parallel:
            return "parallel"
        if value is dsl.unroll:
            return "unroll"
        if getattr(value, "__pypto_pipeline__", False):
            return "pipeline"
        return "range"

    # ------------------------------------------------------------------ break / continue

    def leave_stmt(self, s: ast.Break | ast.Continue) -> list[Stmt]:
        word = "break" if isinstance(s, ast.Break) else "continue"
        if not self.loop_stack:
            raise self.err(f"{word} outside a loop: it must be inside a pl.range or while loop", s)
        kind, in_scope = self.loop_stack[-1]
        if kind in _KIND_WORDS:
            raise self.err(
                f"{word} in {_KIND_WORDS[kind]}: only a sequential loop (pl.range or while) can be left "
                "or restarted early",
                s,
            )
        if in_scope != self.st.in_scope:
            raise self.err(
                f"{word} inside a pl.at scope cannot leave the loop around the scope (the scope is a "
                "kernel of its own); put the loop inside the scope",
                s,
            )
        span = self.src.span(s)
        return [Break(span=span) if isinstance(s, ast.Break) else Continue(span=span)]

    # ------------------------------------------------------------------ while loops

    def while_stmt(self, s: ast.While) -> list[Stmt]:
        """``while cond:`` — the condition is a scalar tested before each iteration."""
        if s.orelse:
            raise self.err("while ... else is not supported; put the else block after the loop", s)
        cond = self.while_condition(s.test)
        return self.while_body(s, cond, s.body, carried=[])

    def while_form(self, s: ast.For, it: ast.Call) -> list[Stmt]:
        """``for (x, ...) in pl.while_(init_values=(x0, ...)):`` with ``pl.cond(c)`` first and
        ``x_next = pl.yield_(...)`` last: the loop ``while c`` carrying ``x``."""
        if s.orelse:
            raise self.err("for ... else is not supported", s)
        if it.args or [k.arg for k in it.keywords] != ["init_values"]:
            raise self.err("pl.while_ takes only init_values: pl.while_(init_values=(x0,))", it)
        init_node = it.keywords[0].value
        if not isinstance(init_node, (ast.Tuple, ast.List)) or not init_node.elts:
            raise self.err("pl.while_: init_values must be a non-empty tuple: init_values=(x0,)", init_node)
        target = s.target
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else None
        if elts is None or not all(isinstance(e, ast.Name) for e in elts):
            raise self.err(
                "pl.while_ binds its carried values as a tuple of names: for (x,) in pl.while_(...)", target
            )
        names = [e.id for e in elts if isinstance(e, ast.Name)]
        if len(names) != len(init_node.elts):
            raise self.err(
                f"{len(names)} loop-carried names for {len(init_node.elts)} init_values", init_node
            )
        first = s.body[0]
        if not (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Call)
            and self.dsl_kind(first.value.func) == "cond"
        ):
            raise self.err("the body of a pl.while_ loop starts with pl.cond(condition)", first)
        cond_call = first.value
        last = s.body[-1]
        if not (
            isinstance(last, ast.Assign)
            and isinstance(last.value, ast.Call)
            and self.dsl_kind(last.value.func) == "yield_"
        ):
            raise self.err(
                "the body of a pl.while_ loop ends with an assignment-form pl.yield_: x_next = pl.yield_(...) "
                "(its names hold the values after the loop)",
                last,
            )
        if len(cond_call.args) != 1 or cond_call.keywords:
            raise self.err("pl.cond takes one condition: pl.cond(x < n)", cond_call)
        pre: list[Stmt] = []
        for name, init in zip(names, init_node.elts, strict=True):
            value = self.expr(init)
            v = Var(self.prefix + name, value.type, self.src.span(init))
            pre.append(Assign(v, value, self.src.span(init)))
            self.st.env[name] = v
        self.st.multi.update(names)
        cond = self.while_condition(cond_call.args[0])
        return [*pre, *self.while_body(s, cond, s.body[1:], carried=names)]

    def while_condition(self, node: ast.expr) -> Expr:
        cond = self.expr(node)
        if not isinstance(cond.type, ScalarType) or cond.type.dtype is not DataType.BOOL:
            raise self.err(
                f"a while condition must be a bool scalar (a comparison such as i < n, or True), got {cond.type}",
                node,
            )
        return cond

    def while_body(
        self, s: ast.While | ast.For, cond: Expr, body_nodes: list[ast.stmt], carried: list[str]
    ) -> list[Stmt]:
        saved = dict(self.st.env)
        self.carried.append(carried)
        self.yield_targets.append({})
        self.loop_stack.append(("while", self.st.in_scope))
        try:
            body, _ = self.block(body_nodes)
        finally:
            self.loop_stack.pop()
            self.carried.pop()
            renames = self.yield_targets.pop()
        pre = self.close_loop(s, saved)
        for name, lhs in renames.items():  # `x_next = pl.yield_(...)` names the value after the loop
            self.st.env[lhs] = self.st.env[name]
        return [*pre, While(cond, tuple(body), span=self.src.span(s))]

    # ------------------------------------------------------------------ names bound inside

    def close_loop(self, s: ast.stmt, saved: dict[str, Any]) -> list[Stmt]:
        """End a loop body's names: those bound before keep their latest binding; a name first
        bound in the body stays visible when the function reads it after the loop (it starts
        before the loop as ``starting_value``). Returns the statements that bind them before the loop."""
        after = self.st.env
        self.st.env = {k: v for k, v in after.items() if k in saved}
        for k in self.st.env:
            if isinstance(after[k], Var) and after[k] is not saved[k]:
                self.st.env[k] = after[k]
        return self.keep_read_after(s, {k: v for k, v in after.items() if k not in saved})

    def keep_read_after(self, s: ast.stmt, new: dict[str, Any]) -> list[Stmt]:
        """Of the names ``new`` first bound inside statement ``s``, keep those the function
        reads after ``s`` visible, each starting before ``s`` with a value of its type."""
        later = self.names_read_after(s)
        pre: list[Stmt] = []
        for name, value in new.items():
            if name not in later:
                continue
            if isinstance(value, Var) and value.name == self.prefix + name:  # not another name's value
                start = self.starting_value(name, value.type, s)
                pre.append(Assign(Var(value.name, value.type, value.span), start, self.src.span(s)))
                self.st.multi.add(name)
            self.st.env[name] = value
        return pre

    def names_read_after(self, s: ast.stmt) -> set[str]:
        """Names whose first mention after statement ``s`` (in source order) reads them; a name
        assigned again before any read does not need its value from ``s``."""
        end = (getattr(s, "end_lineno", 0) or 0, getattr(s, "end_col_offset", 0) or 0)
        tree = self.src.tree
        updated = {id(n.target) for n in ast.walk(tree) if isinstance(n, ast.AugAssign)}  # x += 1 reads x
        first: dict[str, tuple[tuple[int, int], bool]] = {}
        for n in ast.walk(tree):
            if not isinstance(n, ast.Name) or (n.lineno, n.col_offset) <= end:
                continue
            read = isinstance(n.ctx, ast.Load) or id(n) in updated
            # in `x = f(x)` the value is read before the name is bound again
            at = (n.lineno, n.col_offset) if read else (n.end_lineno or n.lineno, 1 << 30)
            if n.id not in first or at < first[n.id][0]:
                first[n.id] = (at, read)
        return {name for name, (_, read) in first.items() if read}

    def starting_value(self, name: str, ty: Type, s: ast.stmt) -> Expr:
        span = self.src.span(s)
        if isinstance(ty, ScalarType):
            zero: bool | int | float = (
                False if ty.dtype is DataType.BOOL else (0.0 if ty.dtype.is_float else 0)
            )
            return Const(zero, ty.dtype, span)
        if isinstance(ty, TileType):
            attrs = {"shape": tuple(ty.shape), "dtype": ty.dtype, "memory": ty.memory}
            if op_registry.infer("tile.create", [], attrs) == ty:
                return Call("tile.create", (), tuple(sorted(attrs.items())), ty, span)
        if isinstance(ty, TensorType) and ty.is_static and TensorType(ty.static_shape, ty.dtype) == ty:
            attrs = {"dtype": ty.dtype, "shape": ty.static_shape}
            return Call("tensor.create", (), tuple(sorted(attrs.items())), ty, span)
        raise self.err(
            f"{name!r} is first bound inside this statement and read after it, so it needs a value "
            f"before it, but a {ty} has no starting value; bind {name!r} before the statement",
            s,
        )
