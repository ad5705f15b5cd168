"""Call-direction derivation: In/Out/InOut of every kernel parameter and every call argument.

A kernel parameter is written when a ``tile.store`` or a tensor write targets it (through
SSA versions and loop-carried values) and read when a load or a tensor-level op reads it.
Outlined kernels take the derived directions (written and read: InOut; written only: Out;
otherwise In). Declared kernels keep their declared directions, but writing a parameter
declared In is an error. Then every call site records its callee's directions, and an
orchestration parameter that a kernel writes must itself be declared Out or InOut.
"""

from __future__ import annotations

from dataclasses import replace

from pypto.ir.analysis.return_lineage import definitions, root_param
from pypto.ir.errors import KernelError
from pypto.ir.nodes import (
    Assign,
    Call,
    CallFunc,
    ExprStmt,
    Function,
    Param,
    Program,
    Stmt,
    TensorWrite,
    Var,
    stmt_exprs,
    walk_stmts,
)
from pypto.ir.param_info import ParamDirection
from pypto.ir.passes._rewrite import map_bodies
from pypto.ir.types import AtomicType, TensorType

NAME = "call_directions"


def usage(fn: Function) -> tuple[set[int], set[int]]:
    """(written, read) parameter indices of a kernel."""
    defs = definitions(fn.body)
    written: set[int] = set()
    read: set[int] = set()

    def root(e: object) -> int | None:
        return root_param(fn, e, None, defs) if isinstance(e, Var) else None

    for s in walk_stmts(fn.body):
        if isinstance(s, TensorWrite):
            r = root(s.target)
            if r is not None:
                written.add(r)
        for e in stmt_exprs(s):
            if not isinstance(e, Call):
                continue
            if e.op in ("tile.store", "tensor.write"):
                r = root(e.args[2] if e.op == "tile.store" else e.args[0])
                if r is not None:
                    written.add(r)
            elif e.op == "tensor.expand_clone":  # writes its target, reads its src
                r = root(e.args[1])
                if r is not None:
                    written.add(r)
                r = root(e.args[0])
                if r is not None and isinstance(fn.params[r].var.type, TensorType):
                    read.add(r)
            elif e.op == "tensor.assemble":
                r = root(e.args[0])
                if r is not None:
                    written.add(r)
                    if e.attr("atomic") is AtomicType.Add:
                        read.add(r)  # an accumulation reads what the window holds
                r = root(e.args[1])
                if r is not None and isinstance(fn.params[r].var.type, TensorType):
                    read.add(r)
            elif e.op == "tile.load" or (
                e.op.startswith("tensor.")
                and e.op not in ("tensor.dim", "tensor.create", "tensor.view", "tensor.write")
            ):
                for a in e.args:
                    r = root(a)
                    if r is not None and isinstance(fn.params[r].var.type, TensorType):
                        read.add(r)
        if isinstance(s, TensorWrite) and isinstance(s.value, Var):
            r = root(s.value)
            if r is not None:
                read.add(r)
    return written, read


def derive(fn: Function) -> Function:
    written, read = usage(fn)
    params = []
    for i, p in enumerate(fn.params):
        if not isinstance(p.var.type, TensorType):
            params.append(p)
            continue
        if fn.outlined:
            d = ParamDirection.IN
            if i in written:
                d = ParamDirection.INOUT if i in read else ParamDirection.OUT
            params.append(Param(p.var, d))
        else:
            if i in written and p.direction is ParamDirection.IN:
                raise KernelError(
                    f"kernel {fn.name!r} writes parameter {p.name!r}, which is declared In; "
                    f"annotate it pl.Out[...] (or pl.InOut[...] if it is also read)",
                    p.var.span,
                )
            params.append(p)
    return replace(fn, params=tuple(params))


def run(program: Program) -> Program:
    kernels = {f.name: derive(f) for f in program.funcs if f.func_type.is_kernel}
    out: list[Function] = []
    for f in program.funcs:
        if f.name in kernels:
            out.append(kernels[f.name])
            continue
        out.append(_annotate_calls(f, kernels, program))
    return program.replace(tuple(out))


def _annotate_calls(fn: Function, kernels: dict[str, Function], program: Program) -> Function:
    def annotate(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        res: list[Stmt] = []
        for s in body:
            callee = None
            if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, CallFunc):
                callee = kernels.get(s.value.callee)
            if callee is None:
                res.append(s)
                continue
            assert isinstance(s, (Assign, ExprStmt))
            assert isinstance(s.value, CallFunc)
            dirs = tuple(p.direction for p in callee.params)
            res.append(replace(s, value=replace(s.value, directions=dirs)))
        return tuple(res)

    fn = replace(fn, body=map_bodies(fn.body, annotate))
    defs = definitions(fn.body)
    for s in walk_stmts(fn.body):
        for e in stmt_exprs(s):
            if not isinstance(e, CallFunc) or not e.directions:
                continue
            for a, d in zip(e.args, e.directions, strict=True):
                if d is ParamDirection.IN or not isinstance(a, Var):
                    continue
                r = root_param(fn, a, program, defs)
                if r is not None and fn.params[r].direction is ParamDirection.IN:
                    p = fn.params[r]
                    raise KernelError(
                        f"{fn.name}: parameter {p.name!r} is declared In but kernel {e.callee!r} writes it; "
                        "annotate it pl.Out[pl.Tensor] (or pl.InOut[...])",
                        e.span or p.var.span,
                    )
    return fn
