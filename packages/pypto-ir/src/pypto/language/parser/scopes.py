"""The parser's ``with pl.at(level=..., ...)`` scopes: in an orchestration a scope becomes a task
(``name_hint``, ``deps=[...]``, ``as tid``, and the hints ``optimizations=[pl.split(...),
pl.cross_core_slot(...)]``, ``no_dep_args=[...]``, ``dumps=[...]``); in a kernel a plain
``pl.at(level=pl.Level.CORE_GROUP)`` block is part of the body."""

from __future__ import annotations

import ast
import dataclasses
import warnings
from typing import Any

from pypto.ir.nodes import Assign, Call, Expr, ExprStmt, For, If, Scope, Stmt, TensorWrite, Var, While
from pypto.ir.types import Level, SplitMode, TaskIdType, TensorType
from pypto.language.parser.tasks import _Tasks


class _Scopes(_Tasks):
    # ------------------------------------------------------------------ pl.at scopes

    def with_stmt(self, s: ast.With) -> list[Stmt]:
        if len(s.items) != 1:
            raise self.err("one pl.at(...) per with statement", s)
        item = s.items[0]
        call = item.context_expr
        if not isinstance(call, ast.Call) or self.dsl_kind(call.func) != "at":
            raise self.err("kernels only use `with pl.at(level=pl.Level.CORE_GROUP, ...)`", call)
        if self.st.in_scope:
            raise self.err("pl.at scopes do not nest", s)
        from pypto.language.dsl import at

        bound = self.bind(at, "pl.at", call)
        level = self.static_value(bound.get("level", Level.CORE_GROUP), "level", call)
        if not isinstance(level, Level):
            raise self.err(f"pl.at: level must be a pl.Level, got {level!r}", call)
        if self.st.func_type.is_kernel:
            # a kernel already runs on a core: its plain `with pl.at(level=CORE_GROUP):` block is
            # part of its body; scope options name a task the kernel does not submit
            options = [k for k in bound if k != "level"]
            if level is not Level.CORE_GROUP or options or item.optional_vars is not None:
                what = (
                    f"{options[0]}=..." if options else ("as ..." if item.optional_vars else f"level={level}")
                )
                raise self.err(
                    f"pl.at({what}) in a kernel: this function already is the kernel, so its "
                    "pl.at block takes only level=pl.Level.CORE_GROUP; set the options where the "
                    "kernel is called",
                    s,
                )
            body, _ = self.block(s.body)
            return body
        if level is not Level.CORE_GROUP:
            raise self.err(
                f"pl.at(level={level!r}) in a chip orchestration: its scopes are kernels, "
                "level=pl.Level.CORE_GROUP (a pl.Level.CHIP block belongs in a host orchestrator, "
                "@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator))",
                s,
            )
        hint, deps, hints = self.scope_options(bound, call, "pl.at")
        if "allow_early_resolve" in bound:  # checked; the simulated runtime keeps every dependency
            self.early_resolve_flag(bound["allow_early_resolve"], "pl.at")
        task: Var | None = None
        if item.optional_vars is not None and not isinstance(item.optional_vars, ast.Name):
            raise self.err("bind the task id to one name: `as tid`", item.optional_vars)
        body = self.scope_body(s.body)
        if item.optional_vars is not None:
            assert isinstance(item.optional_vars, ast.Name)
            task = Var(self.prefix + item.optional_vars.id, TaskIdType(), self.src.span(item.optional_vars))
            self.st.env[task.name] = task
        return [Scope(level, hint, tuple(deps), task, tuple(body), self.src.span(s), hints=hints)]

    def scope_options(
        self, bound: dict[str, Any], call: ast.Call, what: str
    ) -> tuple[str | None, list[Expr], tuple[tuple[str, Any], ...]]:
        """The ``name_hint``, ``deps`` and hints of a scope (``pl.at``, an inline ``pl.spmd``)."""
        hint = self.static_value(bound.get("name_hint"), "name_hint", call)
        if hint is not None and (not isinstance(hint, str) or not hint.isidentifier()):
            raise self.err(f"{what}: name_hint must be an identifier string, got {hint!r}", call)
        deps = list(self.deps_list(bound.get("deps"), what))
        return hint, deps, self.at_hints(bound, call)

    def scope_body(self, stmts: list[ast.stmt]) -> list[Stmt]:
        """The statements of a scope's body, read as inside a scope (where scopes do not nest)."""
        self.st.in_scope = True
        self.st.saw_scope = True
        try:
            body, _ = self.block(stmts)
        finally:
            self.st.in_scope = False
        return body

    def at_hints(self, bound: dict[str, Any], call: ast.Call) -> tuple[tuple[str, Any], ...]:
        """The hints of ``pl.at(optimizations=[...], no_dep_args=[...])`` as (key, value) pairs."""
        from pypto.language.dsl import cross_core_slot, split

        hints: dict[str, Any] = {}
        onode = bound.get("optimizations")
        if onode is not None and not (isinstance(onode, ast.Constant) and onode.value is None):
            if not isinstance(onode, (ast.List, ast.Tuple)):
                raise self.err(
                    "pl.at: optimizations must be a list of pl.split(...) / pl.cross_core_slot(...) entries",
                    onode,
                )
            for entry in onode.elts:
                kind = self.dsl_kind(entry.func) if isinstance(entry, ast.Call) else None
                if kind not in ("split", "cross_core_slot"):
                    raise self.err(
                        "pl.at: each optimizations entry must be pl.split(pl.SplitMode.<mode>) or "
                        f"pl.cross_core_slot(slot_num=n), got {ast.unparse(entry)}",
                        entry,
                    )
                assert isinstance(entry, ast.Call)
                key = "split" if kind == "split" else "cross_core_slot"
                if key in hints:
                    raise self.err(f"pl.at: optimizations lists pl.{key}(...) twice", entry)
                if kind == "split":
                    args = self.bind(split, "pl.split", entry)
                    mode = self.static_value(args.get("mode"), "pl.split(mode)", entry)
                    if not isinstance(mode, SplitMode):
                        raise self.err(
                            "pl.split(mode): expected pl.SplitMode.NONE, UP_DOWN or LEFT_RIGHT, "
                            f"got {ast.unparse(args['mode']) if 'mode' in args else 'nothing'}",
                            entry,
                        )
                    hints[key] = mode.value
                    if "slot_num" in args:
                        if "cross_core_slot" in hints:
                            raise self.err("pl.at: optimizations gives slot_num twice", entry)
                        hints["cross_core_slot"] = self.slot_num(args["slot_num"], entry)
                        warnings.warn_explicit(
                            "pl.split(..., slot_num=n) is deprecated; write "
                            "optimizations=[pl.cross_core_slot(slot_num=n)] (with pl.split(mode) for a split)",
                            DeprecationWarning,
                            self.src.file,
                            self.src.span(entry).line,
                        )
                else:
                    args = self.bind(cross_core_slot, "pl.cross_core_slot", entry)
                    if key in hints:
                        raise self.err("pl.at: optimizations gives slot_num twice", entry)
                    hints[key] = self.slot_num(args.get("slot_num"), entry)
        nnode = bound.get("no_dep_args")
        if nnode is not None and not (isinstance(nnode, ast.Constant) and nnode.value is None):
            if not isinstance(nnode, (ast.List, ast.Tuple)):
                raise self.err("pl.at: no_dep_args must be a list of tensor names: no_dep_args=[t]", nnode)
            names: list[str] = []
            for e in nnode.elts:
                if not isinstance(e, ast.Name):
                    raise self.err(
                        f"pl.at: no_dep_args entries must be tensor names, got {ast.unparse(e)}", e
                    )
                v = self.st.env.get(e.id)
                if not isinstance(v, Var) or not isinstance(v.type, TensorType):
                    what = "not defined before the scope" if v is None else f"a {v.type}"
                    raise self.err(
                        f"pl.at: no_dep_args entry {e.id!r} must be a tensor defined before the scope, it is {what}",
                        e,
                    )
                if e.id in names:
                    raise self.err(f"pl.at: no_dep_args names {e.id!r} more than once", e)
                names.append(e.id)
            hints["no_dep_args"] = tuple(names)
        hints.update(self.at_dumps(bound.get("dumps")))
        return tuple(sorted(hints.items()))

    def slot_num(self, node: Any, entry: ast.Call) -> int:
        n = self.static_value(node, "pl.cross_core_slot(slot_num)", entry)
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise self.err(f"pl.cross_core_slot(slot_num): expected a positive int, got {n!r}", entry)
        return n

    def at_dumps(self, node: Any) -> dict[str, tuple[str, ...]]:
        """``pl.at(dumps=[t])`` (tensors defined before the scope) as the ``dumps`` hint, and the
        tensors ``pl.dump_tag`` marked that the names still hold as ``dump_tags``; the scope's
        kernel call records those it captures (outline_scopes)."""
        out: dict[str, tuple[str, ...]] = {}
        if node is not None and not (isinstance(node, ast.Constant) and node.value is None):
            if not isinstance(node, (ast.List, ast.Tuple)):
                raise self.err("pl.at: dumps must be a list of tensor names: dumps=[t]", node)
            names: list[str] = []
            for e in node.elts:
                v = self.st.env.get(e.id) if isinstance(e, ast.Name) else None
                if not isinstance(v, Var) or not isinstance(v.type, TensorType):
                    what = "not a tensor defined before the scope"
                    raise self.err(f"pl.at: dumps entry {ast.unparse(e)!r} is {what}", e)
                assert isinstance(e, ast.Name)
                if e.id not in names:
                    names.append(e.id)
            out["dumps"] = tuple(names)
        tagged = tuple(n for n, v in self.st.env.items() if any(v is t for t in self.st.dump_tags))
        if tagged:
            out["dump_tags"] = tagged
        return out


def _on_core(s: Stmt) -> bool:
    from pypto.ir import ops as op_registry

    if isinstance(s, TensorWrite):
        return True
    value = s.value if isinstance(s, (Assign, ExprStmt)) else None
    return isinstance(value, Call) and value.op in op_registry.OPS and op_registry.OPS[value.op].on_core


def core_runs_as_scopes(stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """``stmts`` with each run of consecutive on-core statements (tile and tensor computation)
    wrapped in a ``pl.at(level=pl.Level.CORE_GROUP)`` scope, inside loops and branches too."""
    out: list[Stmt] = []
    run: list[Stmt] = []

    def close() -> None:
        if run:
            out.append(Scope(Level.CORE_GROUP, None, (), None, tuple(run), run[0].span))
            run.clear()

    for s in stmts:
        if _on_core(s):
            run.append(s)
            continue
        close()
        if isinstance(s, (For, While)):
            out.append(dataclasses.replace(s, body=core_runs_as_scopes(s.body)))
        elif isinstance(s, If):
            then, other = core_runs_as_scopes(s.then_body), core_runs_as_scopes(s.else_body)
            out.append(dataclasses.replace(s, then_body=then, else_body=other))
        else:
            out.append(s)
    close()
    return tuple(out)
