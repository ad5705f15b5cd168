"""Scope outlining: every ``pl.at`` scope of an orchestration becomes an InCore kernel.

The scope's free variables become the kernel's parameters (tensors first, then scalars, in
first-use order; SSA suffixes stripped from their names) and the scope is replaced by a call
that submits the kernel, binding the task id when the scope had ``as tid``. Directions are
filled in later by the call-directions pass. A value computed inside a scope can be used
after it when it is a tensor the scope wrote (then the outer tensor is used) or a tensor-level
value of static shape (it is written into an intermediate tensor the orchestration allocates
before the scope; later code reads that). Tiles and scalars do not outlive their scope.
A ``pl.create_tensor`` in a scope is scope-local scratch: kept in the kernel when it fits one
Vec tile (``tensor_to_tile`` makes it a tile), otherwise allocated by the orchestration before
the scope and passed to the kernel.
The scope's ``pl.at`` hints go to its kernel (``no_dep_args`` names become parameter names).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pypto.ir import nodes
from pypto.ir.analysis.return_lineage import root_param
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.param_info import ParamDirection
from pypto.ir.passes._rewrite import subst_body
from pypto.ir.passes.ssa import base_name
from pypto.ir.passes.tensor_to_tile import fits_one_tile
from pypto.ir.types import FunctionType, ScalarType, TaskIdType, TensorType, TupleType

NAME = "outline_scopes"


def run(program: nodes.Program) -> nodes.Program:
    new_funcs: list[nodes.Function] = []
    taken = {f.name for f in program.funcs}
    kernels: list[nodes.Function] = []
    for f in program.funcs:
        if any(isinstance(s, nodes.Scope) for s in nodes.walk_stmts(f.body)):
            outlined, ks = _outline(f, taken)
            kernels.extend(ks)
            new_funcs.append(outlined)
        else:
            new_funcs.append(f)
    return program.replace((*new_funcs, *kernels))


def _outline(fn: nodes.Function, taken: set[str]) -> tuple[nodes.Function, list[nodes.Function]]:
    kernels: list[nodes.Function] = []
    counter = [0]
    escapes: dict[str, nodes.Expr] = {}

    def unique(base: str) -> str:
        name = base
        while name in taken:
            counter[0] += 1
            name = f"{base}_{counter[0]}"
        taken.add(name)
        return name

    def visit(body: tuple[nodes.Stmt, ...]) -> tuple[nodes.Stmt, ...]:
        out: list[nodes.Stmt] = []
        for s in body:
            if isinstance(s, (nodes.For, nodes.While)):
                out.append(replace(s, body=visit(s.body)))
            elif isinstance(s, nodes.If):
                out.append(replace(s, then_body=visit(s.then_body), else_body=visit(s.else_body)))
            elif isinstance(s, nodes.Scope):
                out.extend(outline_one(s))
            else:
                out.append(s)
        return tuple(out)

    def outline_one(s: nodes.Scope) -> list[nodes.Stmt]:
        s, created = _spill_escaping_values(s, fn, unique, escapes)
        s, hoisted = _hoist_large_creates(s)
        created = [*hoisted, *created]
        free = nodes.free_vars(s.body)
        for v in free:
            if not isinstance(v.type, (TensorType, ScalarType)):
                raise KernelError(
                    f"a pl.at scope cannot use {v.name!r} of type {v.type} from outside", v.span
                )
        # parameters of the enclosing function first, in their order; then values in first-use order
        rank = {p.name: i for i, p in enumerate(fn.params)}
        free.sort(key=lambda v: rank.get(v.name, len(rank)))
        ordered = [v for v in free if isinstance(v.type, TensorType)] + [
            v for v in free if isinstance(v.type, ScalarType)
        ]
        names: set[str] = set()
        mapping: dict[str, nodes.Expr] = {}
        params: list[nodes.Param] = []
        for v in ordered:
            base = base_name(v.name)
            name, k = base, 1
            while name in names:
                k += 1
                name = f"{base}_{k}"
            names.add(name)
            pv = nodes.Var(name, v.type, v.span)
            mapping[v.name] = pv
            params.append(nodes.Param(pv, ParamDirection.IN))
        kname = unique(s.name_hint or f"{fn.name}_k{len(kernels)}")
        kbody = (*subst_body(s.body, mapping), nodes.Return(()))
        hints = _kernel_hints(s, ordered, mapping)
        kernel = nodes.Function(
            kname, tuple(params), (), kbody, FunctionType.InCore, outlined=True, span=s.span, hints=hints
        )
        kernels.append(kernel)
        # values defined in the scope that escape: tensors it wrote map to the outer tensor
        for inner in nodes.walk_stmts(s.body):
            for d in nodes.stmt_defs(inner):
                if isinstance(d.type, TensorType):
                    idx = _root_in_scope(s, d, ordered)
                    if idx is not None:
                        escapes[d.name] = ordered[idx]
        call_type = TaskIdType() if s.task is not None else TupleType(())
        call = nodes.CallFunc(
            kname, tuple(ordered), call_type, deps=s.deps, span=s.span, dumps=_dumps(s, ordered)
        )
        if s.task is not None:
            return [*created, nodes.Assign(s.task, call, s.span)]
        return [*created, nodes.ExprStmt(call, s.span)]

    body = visit(fn.body)
    body = _check_escapes(body, escapes, fn)
    return replace(fn, body=body, func_type=FunctionType.Orchestration), kernels


def _hoist_large_creates(s: nodes.Scope) -> tuple[nodes.Scope, list[nodes.Stmt]]:
    """``pl.create_tensor`` inside a scope is scope-local scratch. One that fits a Vec tile
    (``tensor_to_tile.fits_one_tile``) stays in the kernel and becomes an on-chip tile; a
    larger one is moved before the scope, where the orchestration allocates it in device memory
    and the kernel receives it as a tensor parameter (its extents are constants: the parser
    refuses run-time extents in a scope). Returns the scope and the moved allocations."""
    hoisted: list[nodes.Stmt] = []

    def visit(body: tuple[nodes.Stmt, ...]) -> tuple[nodes.Stmt, ...]:
        out: list[nodes.Stmt] = []
        for st in body:
            if (
                isinstance(st, nodes.Assign)
                and isinstance(st.value, nodes.Call)
                and st.value.op == "tensor.create"
                and isinstance(st.var.type, TensorType)
                and not fits_one_tile(st.var.type)
            ):
                hoisted.append(st)
            elif isinstance(st, (nodes.For, nodes.While)):
                out.append(replace(st, body=visit(st.body)))
            elif isinstance(st, nodes.If):
                out.append(replace(st, then_body=visit(st.then_body), else_body=visit(st.else_body)))
            else:
                out.append(st)
        return tuple(out)

    body = visit(s.body)
    return (replace(s, body=body), hoisted) if hoisted else (s, [])


def _spill_escaping_values(
    s: nodes.Scope, fn: nodes.Function, unique: Callable[[str], str], escapes: dict[str, nodes.Expr]
) -> tuple[nodes.Scope, list[nodes.Stmt]]:
    """Tensor-level values the scope computes and later code uses go through device memory.

    For each such value ``v`` (defined at the top of the scope body, not a tensor the scope
    wrote), the orchestration allocates an intermediate tensor of its shape and dtype before
    the scope (``tensor.create``), the scope ends by writing ``v`` into it, and later uses read
    the intermediate: the runtime orders every later reader after the scope's task by the
    usual dependency rule. Returns the scope with the writes appended and the allocations.
    """
    used_after = _used_outside(fn.body, s)
    created: list[nodes.Stmt] = []
    writes: list[nodes.Stmt] = []
    for st in s.body:
        for d in nodes.stmt_defs(st):
            if d.name not in used_after or not isinstance(d.type, TensorType) or d.name in escapes:
                continue
            if _root_in_scope(s, d, nodes.free_vars(s.body)) is not None:
                continue  # a tensor the scope wrote: later code uses the outer tensor
            tt = d.type
            if not tt.is_static:
                raise KernelError(
                    f"{base_name(d.name)!r} is computed inside a pl.at scope and used after it, which needs "
                    f"an intermediate tensor of static shape, but its shape is {list(tt.shape)}",
                    d.span,
                )
            tmp = nodes.Var(
                unique(f"{base_name(d.name)}_spill"), TensorType(tt.static_shape, tt.dtype), d.span
            )
            attrs = (("dtype", tt.dtype), ("shape", tt.static_shape))
            created.append(
                nodes.Assign(tmp, nodes.Call("tensor.create", (), attrs, tmp.type, d.span), d.span)
            )
            zeros = tuple(nodes.Const(0, DataType.INT64) for _ in tt.static_shape)
            writes.append(nodes.TensorWrite(tmp, zeros, d, d.span))
            escapes[d.name] = tmp
    if not writes:
        return s, []
    return replace(s, body=(*s.body, *writes)), created


def _used_outside(body: tuple[nodes.Stmt, ...], skip: nodes.Scope) -> set[str]:
    """Names read anywhere in ``body`` except inside the scope ``skip``."""
    names: set[str] = set()

    def walk(stmts: tuple[nodes.Stmt, ...]) -> None:
        for st in stmts:
            if st is skip:
                continue
            for e in nodes.stmt_exprs(st):
                names.update(v.name for v in nodes.expr_vars(e))
            if isinstance(st, (nodes.For, nodes.While, nodes.Scope)):
                walk(st.body)
            elif isinstance(st, nodes.If):
                walk(st.then_body)
                walk(st.else_body)

    walk(body)
    return names


def _dumps(s: nodes.Scope, ordered: list[nodes.Var]) -> tuple[nodes.Expr, ...]:
    """The captured tensors the scope's ``dumps=`` names (each must be captured) and those
    ``pl.dump_tag`` marked, in argument order: the kernel call's ``dumps``."""
    hints = dict(s.hints)
    named: tuple[str, ...] = hints.get("dumps", ())
    for name in named:
        if not any(base_name(v.name) == name for v in ordered):
            raise KernelError(
                f"pl.at: dumps names {name!r}, which the scope does not use; list only tensors the "
                "scope reads or writes",
                s.span,
            )
    wanted = set(named) | set(hints.get("dump_tags", ()))
    return tuple(v for v in ordered if base_name(v.name) in wanted and isinstance(v.type, TensorType))


def _kernel_hints(
    s: nodes.Scope, ordered: list[nodes.Var], mapping: dict[str, nodes.Expr]
) -> tuple[tuple[str, object], ...]:
    """The scope's hints for its kernel: ``no_dep_args`` names become the kernel's parameter names;
    ``dumps`` / ``dump_tags`` go to the kernel call instead (``_dumps``)."""
    out: list[tuple[str, object]] = []
    for key, value in s.hints:
        if key in ("dumps", "dump_tags"):
            continue
        if key == "no_dep_args":
            params: list[str] = []
            for name in value:
                found = [v for v in ordered if base_name(v.name) == name]
                if not found:
                    raise KernelError(
                        f"pl.at: no_dep_args names {name!r}, which the scope does not use; "
                        "list only tensors the scope reads or writes",
                        s.span,
                    )
                for v in found:
                    pv = mapping[v.name]
                    assert isinstance(pv, nodes.Var)
                    params.append(pv.name)
            out.append((key, tuple(params)))
        else:
            out.append((key, value))
    return tuple(out)


def _root_in_scope(s: nodes.Scope, d: nodes.Var, ordered: list[nodes.Var]) -> int | None:
    fake = nodes.Function("_scope", tuple(nodes.Param(v) for v in ordered), (), s.body)
    return root_param(fake, d)


def _check_escapes(
    body: tuple[nodes.Stmt, ...], escapes: dict[str, nodes.Expr], fn: nodes.Function
) -> tuple[nodes.Stmt, ...]:
    """Replace uses of escaping tensors by the outer tensor; reject any other escaping value."""
    defined_outside: set[str] = {p.name for p in fn.params}
    for st in nodes.walk_stmts(body):
        defined_outside.update(v.name for v in nodes.stmt_defs(st))
    body = subst_body(body, escapes)
    for st in nodes.walk_stmts(body):
        if isinstance(st, (nodes.Scope,)):
            continue
        for e in nodes.stmt_exprs(st):
            for v in nodes.expr_vars(e):
                if v.name not in defined_outside:
                    raise KernelError(
                        f"{base_name(v.name)!r} is computed inside a pl.at scope and used outside it; "
                        "only tensors the scope wrote can be used after it (store tiles into a tensor)",
                        v.span,
                    )
    return body
