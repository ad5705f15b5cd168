"""The parser's task-graph forms in an orchestration: ``pl.submit``, ``pl.manual_scope``,
``deps=[...]`` lists and task-id arrays (``pl.array.create``, ``arr[i]``, ``arr[i] = v``)."""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING, Any

from pypto.ir.analysis.return_lineage import root_param
from pypto.ir.nodes import Assign, Call, CallFunc, Const, Expr, ExprStmt, Function, Return, Stmt, Var
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import ArrayType, TaskIdType, TensorType, TupleType, Type
from pypto.language.fold import INDEX
from pypto.language.parser.calls import _Calls, dump_args


class _Tasks(_Calls):
    manual_depth = 0

    if TYPE_CHECKING:  # defined by the statements part

        def block(self, stmts: list[ast.stmt], top: bool = False) -> tuple[list[Stmt], tuple[Type, ...]]: ...

    def deps_list(self, node: Any, what: str) -> tuple[Expr, ...]:
        """The entries of ``deps=[a, tids, None]``: task ids and task-id arrays (``None`` skipped)."""
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return ()
        if isinstance(node, ast.ListComp):
            return self.deps_comprehension(node, what)
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.err(f"{what}: deps must be a list of task ids or task-id arrays: deps=[tid]", node)
        return self.deps_entries(node.elts, what)

    def deps_entries(self, elts: list[ast.expr], what: str) -> tuple[Expr, ...]:
        out: list[Expr] = []
        whole: ast.expr | None = None  # the first whole task-id array in the list
        element: ast.expr | None = None  # the first `arr[i]` entry
        for d in elts:
            if isinstance(d, ast.Constant) and d.value is None:
                continue
            e = self.expr(d)
            if isinstance(e.type, ArrayType):
                whole = whole or d
            elif self.is_array_element(d):
                element = element or d
            if whole is not None and element is not None:
                raise self.err(
                    f"{what}: deps= cannot mix a whole task-id array ({ast.unparse(whole)}) with "
                    f"per-element entries ({ast.unparse(element)}); pass the array alone (deps=[arr]) to "
                    "wait for all of it, or index it slot by slot (deps=[arr[i], arr[j]])",
                    d,
                )
            if not isinstance(e.type, (TaskIdType, ArrayType)):
                raise self.err(
                    f"{what}: a deps entry must be a task id (from pl.submit, pl.system.task_dummy or "
                    f"`pl.at(...) as tid`) or a pl.array of them, got {e.type}",
                    d,
                )
            out.append(e)
        return tuple(out)

    def is_array_element(self, node: ast.expr) -> bool:
        """Whether ``node`` reads one slot of a task-id array: ``arr[i]``."""
        if not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name):
            return False
        base = self.lookup(node.value.id, node.value)
        return isinstance(base, Var) and isinstance(base.type, ArrayType)

    def deps_comprehension(self, node: ast.ListComp, what: str) -> tuple[Expr, ...]:
        """``deps=[tids[k] for k in range(K) if k != j]``: unrolled when compiling, so the
        iterable (``range`` of constants, or a list or tuple of ints) and the conditions must
        be known then."""
        if len(node.generators) != 1 or not isinstance(node.generators[0].target, ast.Name):
            raise self.err(f"{what}: a deps comprehension has one `for name in ...`", node)
        gen = node.generators[0]
        assert isinstance(gen.target, ast.Name)
        it = gen.iter
        if isinstance(it, ast.Call) and self.dsl_kind(it.func) == "range":
            target = self.resolve(it.func)
            if getattr(target, "value", None) is not builtins.range:
                raise self.err(
                    f"{what}: a deps comprehension is unrolled when compiling; {ast.unparse(it.func)} is a "
                    f"DSL loop (an IR loop, not iterable then): use Python's range(...)",
                    it,
                )
        if isinstance(it, ast.Call) and self.dsl_kind(it.func) == "range" and not it.keywords:
            bounds = [self.static_value(a, f"{what} deps range bound", a) for a in it.args]
            if (
                not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
                or not 1 <= len(bounds) <= 3
            ):
                raise self.err(f"{what}: a deps comprehension's range takes 1 to 3 int constants", it)
            values: list[Any] = list(builtins.range(*bounds))
        else:
            seq = self.static_value(it, f"{what} deps comprehension iterable", it)
            if not isinstance(seq, (list, tuple)) or not all(isinstance(v, int) for v in seq):
                raise self.err(
                    f"{what}: a deps comprehension iterates over range(...) or a list of ints known when "
                    f"compiling, got {ast.unparse(it)}",
                    it,
                )
            values = list(seq)
        name = gen.target.id
        saved = self.st.env.get(name)
        elts: list[Expr] = []
        try:
            for v in values:
                self.st.env[name] = Const(int(v), INDEX)
                keep = True
                for cond in gen.ifs:
                    c = self.expr(cond)
                    if not isinstance(c, Const):
                        raise self.err(
                            f"{what}: a deps comprehension's condition must be known when compiling", cond
                        )
                    keep = keep and bool(c.value)
                if keep:
                    elts.extend(self.deps_entries([node.elt], what))
        finally:
            if saved is None:
                self.st.env.pop(name, None)
            else:
                self.st.env[name] = saved
        return tuple(elts)

    def check_orchestration(self, what: str, node: ast.AST) -> None:
        if self.st.func_type.is_kernel or self.st.in_scope:
            raise self.err(f"{what} belongs in an orchestration body, not in a kernel or a pl.at scope", node)

    # ------------------------------------------------------------------ manual scope

    def scope_stmt(self, s: ast.With, call: ast.Call) -> list[Stmt]:
        """``with pl.scope(mode=pl.ScopeMode.MANUAL):`` is ``pl.manual_scope()``; ``with pl.scope():``
        an automatic runtime scope, in an orchestration declared ``auto_scope=False``."""
        from pypto.language.dsl import ScopeMode, scope

        if call.args:
            raise self.err("pl.scope() takes only the keyword mode=pl.ScopeMode.AUTO or MANUAL", call)
        bound = self.bind(scope, "pl.scope", call)
        mode = self.static_value(bound.get("mode", ScopeMode.AUTO), "pl.scope mode", call)
        if not isinstance(mode, ScopeMode):
            raise self.err(f"pl.scope(mode): expected pl.ScopeMode.AUTO or MANUAL, got {mode!r}", call)
        if mode is ScopeMode.MANUAL:
            return self.manual_scope_stmt(s, call, "pl.scope(mode=pl.ScopeMode.MANUAL)")
        if self.st.attrs.get("auto_scope", True) is not False:
            raise self.err(
                "pl.scope() opens an automatic runtime scope, which an orchestration places by hand: "
                "declare it @pl.function(..., auto_scope=False) (with the default the whole body already "
                "is one automatic scope), or use pl.scope(mode=pl.ScopeMode.MANUAL)",
                call,
            )
        return self.manual_scope_stmt(s, call, "pl.scope()", mode="auto")

    def manual_scope_stmt(
        self, s: ast.With, call: ast.Call, what: str = "pl.manual_scope()", mode: str = "manual"
    ) -> list[Stmt]:
        """``with pl.manual_scope():`` -> scope_begin, the body, scope_end (one runtime scope);
        ``mode="auto"`` for ``pl.scope()`` (its tasks are ordered by the tensors they touch)."""
        if s.items[0].optional_vars is not None:
            raise self.err(f"{what} binds no name; write `with {what}:`", s)
        self.check_orchestration(what, call)
        if self.manual_depth:  # the runtime nests no scope inside a manual one
            raise self.err(f"{what} does not nest inside a pl.manual_scope()", call)
        span = self.src.span(s)
        attrs = (("mode", mode),)
        begin = ExprStmt(
            Call("system.scope_begin", (), attrs, self._mark_type("system.scope_begin"), span), span
        )
        end = ExprStmt(Call("system.scope_end", (), attrs, self._mark_type("system.scope_end"), span), span)
        depth = 1 if mode == "manual" else 0
        self.manual_depth += depth
        try:
            body, _ = self.block(s.body)
        finally:
            self.manual_depth -= depth
        return [begin, *body, end]

    def _mark_type(self, name: str) -> Any:
        from pypto.ir import ops as op_registry

        return op_registry.infer(name, [], {"mode": "manual"})

    # ------------------------------------------------------------------ pl.submit

    def is_submit(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and self.dsl_kind(node.func) == "submit"

    def early_resolve_flag(self, node: ast.expr, what: str) -> bool:
        """``allow_early_resolve=`` of ``pl.submit`` / ``pl.spmd``: a bool known when compiling."""
        flag = self.static_value(node, f"{what} allow_early_resolve", node)
        if not isinstance(flag, bool):
            raise self.err(f"{what}(allow_early_resolve): expected a bool, got {flag!r}", node)
        return flag

    def submit_assign(self, targets: list[ast.expr], call: ast.Call, s: ast.stmt) -> list[Stmt]:
        """``r1, ..., tid = pl.submit(self.kernel, *args, deps=[...])``: one task; the names take
        what the kernel returns (each an argument of the call) and the task id. As a statement
        (no targets) the results are not named."""
        self.check_orchestration("pl.submit", call)
        if not call.args:
            raise self.err("pl.submit(self.kernel, *args, deps=[...]) needs the kernel first", call)
        deps_node = None
        dumps_node: ast.expr | None = None
        for kw in call.keywords:
            if kw.arg == "allow_early_resolve":
                self.early_resolve_flag(kw.value, "pl.submit")
                continue
            if kw.arg == "dumps":
                dumps_node = kw.value
                continue
            if kw.arg != "deps":
                raise self.err(
                    f"pl.submit() got an unsupported keyword {kw.arg!r}; it takes deps=[...], "
                    "dumps=[...] and allow_early_resolve=...",
                    kw,
                )
            deps_node = kw.value
        func = call.args[0]
        if not (
            isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
        ):
            raise self.err(
                "pl.submit: the first argument must be a kernel method written self.<kernel>", func
            )
        inner = ast.Call(func=func, args=list(call.args[1:]), keywords=[])
        ast.copy_location(inner, call)
        c = self.expr(inner)
        if not isinstance(c, CallFunc):
            raise self.err(f"pl.submit: {ast.unparse(func)} is not a kernel of the program", func)
        deps = self.deps_list(deps_node, "pl.submit")
        results = self._returned_args(c, self.ctx.functions.get(c.callee), call)
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        whole = len(targets) == 1 and len(names) == 1 and results  # `res = pl.submit(...)`: one tuple
        if targets and not whole and (len(names) != len(targets) or len(names) != len(results) + 1):
            raise self.err(
                f"pl.submit of {c.callee!r} gives {len(results)} result(s) and a task id: "
                f"unpack {len(results) + 1} name(s), e.g. `out, tid = pl.submit(...)`",
                s,
            )
        span = self.src.span(s)
        dumps = self._submit_dumps(dumps_node, c)
        task = CallFunc(c.callee, c.args, TaskIdType(), deps=deps, span=c.span, dumps=dumps)
        if not targets:
            self.hoisted += 1
            anon = Var(f"{self.prefix}_task{self.hoisted}", TaskIdType(), span)
            return [Assign(anon, task, span)]
        if whole:
            from pypto.language.parser.tuples import TupleValue

            self.hoisted += 1
            tid = Var(f"{self.prefix}_task{self.hoisted}", TaskIdType(), self.src.span(targets[0]))
            # the name holds the kernel's results and the task id: res[0], ..., res[-1]
            self.st.env[names[0]] = TupleValue((*results, tid))  # type: ignore[assignment]
            return [Assign(tid, task, span)]
        tid = Var(self.prefix + names[-1], TaskIdType(), self.src.span(targets[-1]))
        self.st.env[names[-1]] = tid
        # a kernel's result is the argument it returns: the names rebind to those arguments
        for name, arg in zip(names[:-1], results, strict=True):
            self.st.env[name] = arg
        return [Assign(tid, task, span)]

    def _submit_dumps(self, node: ast.expr | None, c: CallFunc) -> tuple[Expr, ...]:
        """``dumps=[a, b]`` of a submit: arguments of the call, recorded with those ``pl.dump_tag``
        marked (once each, in argument order)."""
        if node is None:
            return c.dumps
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.err("pl.submit: dumps must be a list of argument names, e.g. dumps=[x]", node)
        marked = list(c.dumps)
        for e in node.elts:
            v = self.st.env.get(e.id) if isinstance(e, ast.Name) else None
            if v is None or not any(v is a for a in c.args):
                raise self.err(
                    f"pl.submit: dumps= entry {ast.unparse(e)!r} is not an argument of this submit; "
                    "list tensors passed to the kernel",
                    e,
                )
            marked.append(v)
        return dump_args(c.args, marked)

    def _returned_args(self, c: CallFunc, callee: Function | None, node: ast.AST) -> list[Var]:
        """The call's arguments that the kernel returns, in return order: traced through the
        kernel's body (return lineage), else its pl.Out/pl.InOut arguments in order."""
        items = c.type.items if isinstance(c.type, TupleType) else (c.type,)
        rets = [t for t in items if isinstance(t, TensorType)]
        if callee is None:
            raise self.err(f"pl.submit: {c.callee!r} is not a kernel of the program", node)
        last = callee.body[-1] if callee.body else None
        if isinstance(last, Return) and len(last.values) == len(rets):
            roots = [root_param(callee, v) for v in last.values]
            if all(r is not None for r in roots):
                picked = [c.args[r] for r in roots if r is not None]
                if all(isinstance(a, Var) for a in picked):
                    return [a for a in picked if isinstance(a, Var)]
        out = [
            a
            for p, a in zip(callee.params, c.args, strict=False)
            if p.direction in (ParamDirection.OUT, ParamDirection.INOUT) and isinstance(a, Var)
        ]
        if len(out) != len(rets):
            raise self.err(
                f"pl.submit of {c.callee!r}: it returns {len(rets)} tensor(s) but writes {len(out)} "
                "argument(s) (pl.Out/pl.InOut); each returned tensor must be one of its arguments",
                node,
            )
        return out

    # ------------------------------------------------------------------ task-id arrays

    def array_read(self, base: Expr, node: ast.Subscript) -> Expr:
        idx = self.scalar(node.slice, "an array index")
        return self.make_op_direct("array.get", [base, idx], node)

    def array_write(self, target: ast.Subscript, value_node: ast.expr, s: ast.stmt) -> list[Stmt]:
        assert isinstance(target.value, ast.Name)
        arr = self.lookup(target.value.id, target.value)
        assert isinstance(arr, Var)
        idx = self.scalar(target.slice, "an array index")
        value = self.expr(value_node)
        new = self.make_op_direct("array.set", [arr, idx, value], s)
        var = Var(arr.name, arr.type, self.src.span(target))
        self.st.env[target.value.id] = var
        return [Assign(var, new, self.src.span(s))]

    def make_op_direct(self, name: str, args: list[Expr], node: ast.AST) -> Call:
        """An orchestration op with no ``pl`` function of its own (array reads and updates)."""
        from pypto.ir import ops as op_registry

        self.check_orchestration("a pl.array access", node)
        try:
            rtype = op_registry.infer(name, [a.type for a in args], {})
        except op_registry.OpError as exc:
            raise self.err(str(exc), node) from None
        return Call(name, tuple(args), (), rtype, self.src.span(node))
