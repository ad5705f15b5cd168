"""Host reads and writes of tensor data in an orchestration (``pl.read`` / ``pl.write``)."""

from __future__ import annotations

from pypto.ir import nodes
from pypto.ir.analysis.return_lineage import definitions, root_param
from pypto.ir.errors import KernelError
from pypto.ir.types import FunctionType

__all__ = ["check_host_access", "host_tensor_access"]


def host_tensor_access(program: nodes.Program) -> tuple[str, ...]:
    """Orchestration statements that read or write tensor data on the host (outside pl.at)."""
    found: list[str] = []

    def visit(body: tuple[nodes.Stmt, ...]) -> None:
        for s in body:
            if isinstance(s, nodes.Scope):
                continue  # on-core work
            for e in nodes.stmt_exprs(s):
                for c in _calls(e):
                    if c.op in ("tensor.read", "tensor.write"):
                        where = f" at {c.span}" if c.span is not None else ""
                        found.append(f"pl.{c.op.split('.')[1]}({c.args[0]}){where}")
            if isinstance(s, (nodes.For, nodes.While)):
                visit(s.body)
            elif isinstance(s, nodes.If):
                visit(s.then_body)
                visit(s.else_body)

    for f in program.funcs:
        if f.func_type is FunctionType.Orchestration:
            visit(f.body)
    return tuple(found)


def check_host_access(program: nodes.Program) -> None:
    """Host reads/writes in the orchestration run when the orchestration reaches them, not in
    task order: reject reads of tensors a kernel writes and writes to tensors a kernel uses."""
    for f in program.funcs:
        if f.func_type is not FunctionType.Orchestration:
            continue
        defs = definitions(f.body)
        touched: dict[object, set[str]] = {}
        for s in nodes.walk_stmts(f.body):
            for e in nodes.stmt_exprs(s):
                if isinstance(e, nodes.CallFunc):
                    for a, d in zip(e.args, e.directions, strict=False):
                        if isinstance(a, nodes.Var):
                            key = _root_key(f, a, program, defs)
                            touched.setdefault(key, set()).add(d.value)
        for s in nodes.walk_stmts(f.body):
            for e in nodes.stmt_exprs(s):
                for c in _calls(e):
                    if c.op not in ("tensor.read", "tensor.write") or not isinstance(c.args[0], nodes.Var):
                        continue
                    uses = touched.get(_root_key(f, c.args[0], program, defs), set())
                    bad = uses - {"In"} if c.op == "tensor.read" else uses
                    if bad:
                        verb = "reads" if c.op == "tensor.read" else "writes"
                        raise KernelError(
                            f"pl.{c.op.split('.')[1]} on {c.args[0]} {verb} it on the host, but kernels of this "
                            f"orchestration use it ({', '.join(sorted(uses))}); host access is not ordered with "
                            "tasks: read only inputs no kernel writes, write only tensors no kernel uses",
                            c.span,
                        )


def _root_key(fn: nodes.Function, v: nodes.Var, program: nodes.Program, defs: dict[str, object]) -> object:
    idx = root_param(fn, v, program, defs)
    return ("param", idx) if idx is not None else ("value", v.name)


def _calls(e: object) -> list[nodes.Call]:
    out: list[nodes.Call] = []
    if isinstance(e, nodes.Call):
        out.append(e)
    if isinstance(e, (nodes.Call, nodes.BinOp, nodes.CallFunc)):
        for c in nodes.expr_children(e):
            out.extend(_calls(c))
    return out
