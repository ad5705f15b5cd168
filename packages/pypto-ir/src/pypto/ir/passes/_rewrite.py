"""Small helpers shared by passes: substituting variables in expressions and bodies, adding
index expressions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pypto.ir import nodes
from pypto.ir.dtypes import DataType
from pypto.ir.types import ScalarType


def subst_expr(e: nodes.Expr, m: Mapping[str, nodes.Expr]) -> nodes.Expr:
    if isinstance(e, nodes.Var):
        return m.get(e.name, e)
    if isinstance(e, nodes.Const):
        return e
    if isinstance(e, nodes.BinOp):
        return replace(e, lhs=subst_expr(e.lhs, m), rhs=subst_expr(e.rhs, m))
    if isinstance(e, nodes.Call):
        return replace(e, args=tuple(subst_arg(a, m) for a in e.args))
    return replace(
        e,
        args=tuple(subst_expr(a, m) for a in e.args),
        deps=tuple(subst_expr(d, m) for d in e.deps),
        dumps=tuple(subst_expr(d, m) for d in e.dumps),
    )


def subst_arg(a: nodes.Arg, m: Mapping[str, nodes.Expr]) -> nodes.Arg:
    if isinstance(a, tuple):
        return tuple(subst_expr(x, m) for x in a)
    return subst_expr(a, m)


def subst_var(v: nodes.Var, m: Mapping[str, nodes.Expr]) -> nodes.Var:
    r = m.get(v.name, v)
    assert isinstance(r, nodes.Var), f"cannot substitute defined variable {v.name} by {r}"
    return r


def _subst_loop_carried(s: nodes.For | nodes.While, m: Mapping[str, nodes.Expr]) -> dict[str, Any]:
    """The body, iter_args and results of a loop, substituted (the fields For and While share)."""
    return {
        "body": subst_body(s.body, m),
        "iter_args": tuple(nodes.IterArg(subst_var(ia.var, m), subst_expr(ia.init, m)) for ia in s.iter_args),
        "results": tuple(subst_var(r, m) for r in s.results),
    }


def subst_body(body: tuple[nodes.Stmt, ...], m: Mapping[str, nodes.Expr]) -> tuple[nodes.Stmt, ...]:
    """Substitute uses and definitions (for renaming) throughout ``body``."""
    out: list[nodes.Stmt] = []
    for s in body:
        if isinstance(s, nodes.Assign):
            out.append(replace(s, var=subst_var(s.var, m), value=subst_expr(s.value, m)))
        elif isinstance(s, nodes.ExprStmt):
            out.append(replace(s, value=subst_expr(s.value, m)))
        elif isinstance(s, nodes.TensorWrite):
            out.append(
                replace(
                    s,
                    target=subst_var(s.target, m),
                    offsets=tuple(subst_expr(o, m) for o in s.offsets),
                    value=subst_expr(s.value, m),
                )
            )
        elif isinstance(s, nodes.For):
            out.append(
                replace(
                    s,
                    var=subst_var(s.var, m),
                    start=subst_expr(s.start, m),
                    stop=subst_expr(s.stop, m),
                    step=subst_expr(s.step, m),
                    **_subst_loop_carried(s, m),
                )
            )
        elif isinstance(s, nodes.While):
            out.append(replace(s, cond=subst_expr(s.cond, m), **_subst_loop_carried(s, m)))
        elif isinstance(s, nodes.If):
            out.append(
                replace(
                    s,
                    cond=subst_expr(s.cond, m),
                    then_body=subst_body(s.then_body, m),
                    else_body=subst_body(s.else_body, m),
                    results=tuple(subst_var(r, m) for r in s.results),
                )
            )
        elif isinstance(s, (nodes.Yield, nodes.Break, nodes.Continue)):
            out.append(replace(s, values=tuple(subst_expr(v, m) for v in s.values)))
        elif isinstance(s, nodes.Scope):
            out.append(
                replace(
                    s,
                    deps=tuple(subst_expr(d, m) for d in s.deps),
                    task=None if s.task is None else subst_var(s.task, m),
                    body=subst_body(s.body, m),
                )
            )
        elif isinstance(s, nodes.Return):
            out.append(replace(s, values=tuple(subst_expr(v, m) for v in s.values)))
    return tuple(out)


def map_bodies(
    body: tuple[nodes.Stmt, ...], fn: Callable[[tuple[nodes.Stmt, ...]], tuple[nodes.Stmt, ...]]
) -> tuple[nodes.Stmt, ...]:
    """Apply ``fn`` to ``body`` and, first, to every nested body (bottom-up)."""
    out: list[nodes.Stmt] = []
    for s in body:
        if isinstance(s, (nodes.For, nodes.While, nodes.Scope)):
            out.append(replace(s, body=map_bodies(s.body, fn)))
        elif isinstance(s, nodes.If):
            out.append(
                replace(s, then_body=map_bodies(s.then_body, fn), else_body=map_bodies(s.else_body, fn))
            )
        else:
            out.append(s)
    return fn(tuple(out))


def add_index(a: nodes.Expr, b: nodes.Expr) -> nodes.Expr:
    """``a + b`` of two index expressions, folded when either is a constant (0 drops out)."""
    if isinstance(a, nodes.Const) and isinstance(b, nodes.Const):
        return nodes.Const(int(a.value) + int(b.value), DataType.INT64)
    if isinstance(a, nodes.Const) and a.value == 0:
        return b
    if isinstance(b, nodes.Const) and b.value == 0:
        return a
    return nodes.BinOp("add", a, b, ScalarType(DataType.INT64))
