"""The parser's SPMD launches in an orchestration: ``with pl.spmd(n) [as tid]:`` /
``for i in pl.spmd(n):`` (kernel calls or inline kernel code run as blocks ``0..n-1``),
``pl.spmd_submit``, and ``for lane in pl.split_aiv(2, mode=...):`` (the two vector lanes of a
core group)."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from pypto.ir.codegen.block_group import SPMD_PARAMS
from pypto.ir.errors import KernelError, Span
from pypto.ir.nodes import Assign, Call, CallFunc, Const, Expr, ExprStmt, For, Scope, Stmt, Var
from pypto.ir.types import (
    ArrayType,
    Level,
    MemorySpace,
    ScalarType,
    SplitMode,
    TaskIdType,
    TensorType,
    TileType,
)
from pypto.language.fold import INDEX, fold
from pypto.language.parser.common import _Static
from pypto.language.parser.scopes import _Scopes


class _Launches(_Scopes):
    cluster_depth = 0  # pl.cluster() blocks open around the statement being parsed
    # ------------------------------------------------------------------ pl.split_aiv

    split_lane: tuple[int, SplitMode] | None = None  # (lane, mode) inside a pl.split_aiv body
    split_gathered: dict[int, Expr]  # in a pl.split_aiv body: pl.aic_gather call -> lane 0's value

    def split_aiv_stmt(self, s: ast.For, call: ast.Call) -> list[Stmt]:
        """``for lane in pl.split_aiv(2, mode=...):``: the body once per vector lane (0, then 1),
        ``lane`` a constant in each; at the top of an orchestration, a kernel of its own."""
        for kw in call.keywords:
            if kw.arg != "mode":
                raise self.err(
                    f"pl.split_aiv does not accept '{kw.arg}='; write "
                    "`for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):`",
                    kw,
                )
        if len(call.args) != 1:
            raise self.err(
                f"pl.split_aiv(n, mode=...) takes one positional argument (2), got {len(call.args)}", call
            )
        n = self.static_value(call.args[0], "pl.split_aiv n", call)
        if isinstance(n, bool) or n != 2:
            raise self.err(
                f"pl.split_aiv(n): requires n == 2 (the two vector lanes of a core group), got {n!r}", call
            )
        mode_kw = next((kw for kw in call.keywords if kw.arg == "mode"), None)
        if mode_kw is None:
            raise self.err("pl.split_aiv requires mode=pl.SplitMode.UP_DOWN, LEFT_RIGHT or NONE", call)
        mode = self.static_value(mode_kw.value, "pl.split_aiv mode", mode_kw)
        if not isinstance(mode, SplitMode):
            raise self.err(
                f"pl.split_aiv(mode): expected pl.SplitMode.UP_DOWN, LEFT_RIGHT or NONE, got {mode!r}",
                mode_kw,
            )
        if not isinstance(s.target, ast.Name):
            raise self.err(
                "pl.split_aiv binds a single loop variable: `for lane in pl.split_aiv(2, mode=...)`", s.target
            )
        if self.split_lane is not None:
            raise self.err("a pl.split_aiv loop cannot be nested in another pl.split_aiv body", s)
        exit_stmt = _exits(s.body)
        if exit_stmt is not None:
            word = "break" if isinstance(exit_stmt, ast.Break) else "continue"
            raise self.err(
                f"'{word}' not supported inside a pl.split_aiv body: both lanes run all of it", exit_stmt
            )
        if s.orelse:
            raise self.err("for ... else is not supported", s)
        wrap = not self.st.func_type.is_kernel and not self.st.in_scope
        name = s.target.id
        shadowed = self.st.env.get(name)
        body: list[Stmt] = []
        if wrap:
            self.st.in_scope = True
            self.st.saw_scope = True
        self.split_gathered = {}
        try:
            for lane in (0, 1):
                self.split_lane = (lane, mode)
                self.st.env[name] = Const(lane, INDEX, self.src.span(s.target))
                stmts, _ = self.block(s.body)
                body.extend(stmts)
        finally:
            self.split_lane = None
            if wrap:
                self.st.in_scope = False
            if shadowed is None:
                self.st.env.pop(name, None)
            else:
                self.st.env[name] = shadowed
        if wrap:
            return [
                Scope(
                    Level.CORE_GROUP,
                    None,
                    (),
                    None,
                    tuple(body),
                    self.src.span(s),
                    hints=(("split", mode.value),),
                )
            ]
        return body

    def lane_call(self, what: str, node: ast.Call) -> Expr:
        """``pl.tile.get_subblock_idx()``, ``pl.aiv_shard(x)``, ``pl.aic_gather(x)`` in a lane."""
        if self.split_lane is None:
            raise self.err(
                f"pl.{'tile.' if what == 'get_subblock_idx' else ''}{what}() is read inside a "
                "`for lane in pl.split_aiv(2, mode=...)` loop, whose lane and mode it takes",
                node,
            )
        lane, mode = self.split_lane
        if what == "get_subblock_idx":
            if node.args or node.keywords:
                raise self.err("pl.tile.get_subblock_idx() takes no arguments", node)
            return Const(lane, INDEX, self.src.span(node))
        if node.keywords:
            raise self.err(
                f"pl.{what} does not take a mode: it inherits the enclosing pl.split_aiv loop's ({mode!r})",
                node,
            )
        if len(node.args) != 1:
            raise self.err(f"pl.{what}(x) takes one value, got {len(node.args)}", node)
        x = self.expr(node.args[0])
        if not isinstance(x.type, (TileType, TensorType)):
            raise self.err(f"pl.{what}(x): x must be a tile or a tensor, got {x.type}", node)
        if id(x) in self.st.distributed:
            raise self.err(
                f"pl.{what}(x): {ast.unparse(node.args[0])} is a pld.DistributedTensor (a rank's window), "
                "which a pl.split_aiv lane does not split; pl.load the part this core needs into a tile",
                node,
            )
        if what == "aiv_shard" and isinstance(x.type, TileType) and x.type.memory is not MemorySpace.Vec:
            x = self.make_op("move", [x], {"memory": MemorySpace.Vec}, node)  # the cube -> vector crossing
        if mode is SplitMode.NONE:
            return x  # no split axis: the value crosses whole
        if what == "aic_gather":
            return self.lane_gather(x, lane, mode, node)
        assert isinstance(x.type, (TileType, TensorType))
        shape = list(x.type.shape)
        axis = len(shape) - (2 if mode is SplitMode.UP_DOWN else 1)
        full = shape[axis] if axis >= 0 else None
        if not isinstance(full, int) or full % 2:
            raise self.err(
                f"pl.aiv_shard: a {mode!r} lane takes half of dimension {axis} of x, which is {full!r}: "
                "it must be an even constant",
                node,
            )
        shape[axis] = full // 2
        offs = [Const(0, INDEX) for _ in shape]
        offs[axis] = Const(lane * (full // 2), INDEX)
        attrs = {"shape": tuple(shape), "static_offsets": [o.value for o in offs]}
        return self.make_op("slice", [x, tuple(offs)], attrs, node)

    def lane_gather(self, x: Expr, lane: int, mode: SplitMode, node: ast.Call) -> Expr:
        """``pl.aic_gather(half)`` in a data-parallel lane: lane 0's half is kept; in lane 1 the
        value is the whole tile, lane 0's half then lane 1's along the split axis."""
        if not isinstance(x.type, TileType):
            raise self.err(
                f"pl.aic_gather(x): in a {mode!r} lane x must be a tile (its half), got {x.type}", node
            )
        if lane == 0:  # held under a name of its own: lane 1 rebinds the names x is made of
            self.hoisted += 1
            held = Var(f"{self.prefix}_lane0_half{self.hoisted}", x.type, self.src.span(node))
            self.pending.append(Assign(held, x, self.src.span(node)))
            self.split_gathered[id(node)] = held
            return held
        first = self.split_gathered.get(id(node))
        if first is None or first.type != x.type:
            raise self.err("pl.aic_gather: the two lanes gather tiles of different types", node)
        rows, cols = x.type.shape
        whole = (rows * 2, cols) if mode is SplitMode.UP_DOWN else (rows, cols * 2)
        at = (
            (Const(rows, INDEX), Const(0, INDEX))
            if mode is SplitMode.UP_DOWN
            else (Const(0, INDEX), Const(cols, INDEX))
        )
        zero = (Const(0, INDEX), Const(0, INDEX))
        tile: Expr = self.make_op(
            "create_tile", [], {"shape": whole, "dtype": x.type.dtype, "memory": MemorySpace.Vec}, node
        )
        for half, offs in ((first, zero), (x, at)):
            tile = self.make_op(
                "assemble", [tile, half, offs], {"static_offsets": [int(o.value) for o in offs]}, node
            )
        return tile

    # ------------------------------------------------------------------ pl.spmd

    def spmd_stmt(self, s: ast.With | ast.For, call: ast.Call) -> list[Stmt]:
        """``with pl.spmd(n):`` / ``for i in pl.spmd(n):`` in an orchestration: a loop over the
        blocks 0..n-1 of one SPMD launch.

        A body that calls kernels (or opens ``pl.at`` scopes) passes each called kernel the
        block index and count; any other body is inline kernel code, made into one kernel (a
        ``pl.at`` scope) that reads the block index as ``i`` or ``pl.tile.get_block_idx()``.
        ``with pl.cluster():`` runs its block as written (the simulator has no clusters)."""
        kind = self.dsl_kind(call.func)
        if self.st.func_type.is_kernel or self.st.in_scope:
            raise self.err(
                f"pl.{kind} groups kernel calls of an orchestration; it is not used in a kernel", s
            )
        bound_tid = s.items[0].optional_vars if isinstance(s, ast.With) else None
        if bound_tid is not None and (kind == "cluster" or not isinstance(bound_tid, ast.Name)):
            raise self.err(
                f"pl.{kind} binds no name"
                if kind == "cluster"
                else "bind the launch's task id to one name: `as tid`",
                s,
            )
        if isinstance(s, ast.For):
            if s.orelse:
                raise self.err("for ... else is not supported", s)
            if not isinstance(s.target, ast.Name):
                raise self.err("the block index must be a single name: for i in pl.spmd(n)", s.target)
        span = self.src.span(s)
        if kind == "cluster":
            if call.args or call.keywords:
                raise self.err("pl.cluster() takes no arguments", call)
            self.cluster_depth += 1
            try:
                body, _ = self.block(s.body)
            finally:
                self.cluster_depth -= 1
            return body
        if bound_tid is not None and self.cluster_depth:
            raise self.err(
                "pl.spmd cannot capture a TaskId when nested inside pl.cluster(): the cluster is one "
                "launch; drop `as tid`",
                bound_tid,
            )
        deps_kw = next((kw for kw in call.keywords if kw.arg == "deps"), None)
        if deps_kw is not None and bound_tid is None:
            raise self.err(
                "pl.spmd does not accept 'deps=' without a task id to order: write "
                "`with pl.spmd(n, deps=[...]) as tid:`",
                deps_kw,
            )
        from pypto.language.dsl import spmd

        bound = self.bind(spmd, "pl.spmd", call)
        n = self.static_value(bound["core_num"], "pl.spmd core_num", call)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise self.err(f"pl.spmd(core_num): expected an int >= 1 known when compiling, got {n!r}", call)
        if "sync_start" in bound:
            sync = self.static_value(bound["sync_start"], "pl.spmd sync_start", call)
            if not isinstance(sync, bool):
                raise self.err(f"pl.spmd(sync_start): expected a bool, got {sync!r}", call)
        if "allow_early_resolve" in bound:
            if self.cluster_depth:
                raise self.err(
                    "pl.spmd(allow_early_resolve=...) cannot be nested inside pl.cluster(): the "
                    "cluster's launch resolves as one",
                    call,
                )
            self.early_resolve_flag(bound["allow_early_resolve"], "pl.spmd")
        if self.st.spmd is not None:
            raise self.err("pl.spmd scopes do not nest", s)
        inline = not self._launches(s.body)
        if inline and not _reads_block_index(
            s.body, s.target.id if isinstance(s, ast.For) and isinstance(s.target, ast.Name) else None
        ):
            raise self.err(
                "pl.spmd: the inline body neither reads the per-block index (pl.tile.get_block_idx() "
                "or the loop's index) nor calls a kernel, so every block would do the same work on "
                "the same data",
                s,
            )
        launch_deps: tuple[Expr, ...] = ()
        if not inline:  # name_hint and optimizations are hints here; deps order every block
            self.spmd_hints(bound, call)
            launch_deps = self.deps_list(bound.get("deps"), "pl.spmd")
        self.hoisted += 1
        tracked = bound_tid is not None or bool(launch_deps)
        tasks = Var(f"{self.prefix}spmd_tasks{self.hoisted}", ArrayType(n, TaskIdType()), span)
        shadowed: Any = None
        index_name = s.target.id if isinstance(s, ast.For) and isinstance(s.target, ast.Name) else None
        # an inline body that syncs becomes a kernel whose block index is its hidden parameter
        # (the group entry of codegen/block_group.py runs its blocks together)
        hidden = inline and self._syncs(s.body)
        if index_name is not None:
            name = SPMD_PARAMS[0] if hidden else self.prefix + index_name
            var = Var(name, ScalarType(INDEX), self.src.span(s))
            shadowed = self.st.env.get(index_name)
            self.st.env[index_name] = var
        else:
            var = Var(SPMD_PARAMS[0] if hidden else f"spmd_block{self.hoisted}", ScalarType(INDEX), span)
        self.st.spmd = (var, n)
        try:
            if inline:
                body = [self.spmd_kernel(s, call, bound, span, tracked)]
            else:
                body, _ = self.block(s.body)
                if tracked:
                    body = self.spmd_submits(body, launch_deps, call)
        finally:
            self.st.spmd = None
        if index_name is not None:  # the block index is local to the loop
            if shadowed is None:
                self.st.env.pop(index_name, None)
            else:
                self.st.env[index_name] = shadowed
        if not tracked:
            return [For(var, Const(0, INDEX), Const(n, INDEX), Const(1, INDEX), tuple(body), span=span)]
        # each block records its task(s) in an array; the launch's task id is ready once all are
        width = sum(1 for st in body if isinstance(st, (Assign, Scope)) and isinstance(_task_of(st), Var))
        tasks = Var(tasks.name, ArrayType(n * width, TaskIdType()), span)
        out: list[Stmt] = [Assign(tasks, self._array_op("array.create", [], span, n * width), span)]
        k = 0
        recorded: list[Stmt] = []
        for st in body:
            recorded.append(st)
            task = _task_of(st)
            if isinstance(task, Var):
                slot = fold("mul", var, Const(width, INDEX), span)
                slot = fold("add", slot, Const(k, INDEX), span)
                recorded.append(Assign(tasks, self._array_op("array.set", [tasks, slot, task], span), span))
                k += 1
        out.append(For(var, Const(0, INDEX), Const(n, INDEX), Const(1, INDEX), tuple(recorded), span=span))
        name = bound_tid.id if isinstance(bound_tid, ast.Name) else f"_spmd_task{self.hoisted}"
        tid = Var(
            self.prefix + name, TaskIdType(), self.src.span(bound_tid) if bound_tid is not None else span
        )
        out.append(Assign(tid, self._array_op("system.task_dummy", [tasks], span), span))
        if isinstance(bound_tid, ast.Name):
            self.st.env[bound_tid.id] = tid
        return out

    def _array_op(self, name: str, args: list[Expr], span: Span | None, extent: int = 0) -> Call:
        from pypto.ir import ops as op_registry

        attrs: dict[str, Any] = {"extent": extent, "elem": TaskIdType()} if name == "array.create" else {}
        rtype = op_registry.infer(name, [a.type for a in args], attrs)
        return Call(name, tuple(args), tuple(sorted(attrs.items())), rtype, span)

    def spmd_hints(self, bound: dict[str, Any], call: ast.Call) -> None:
        """``name_hint=`` and ``optimizations=`` of a ``pl.spmd`` launch of kernel calls: checked
        as ``pl.at`` checks them; the simulated chip runs the kernels as written."""
        hint = self.static_value(bound.get("name_hint"), "name_hint", call)
        if hint is not None and (not isinstance(hint, str) or not hint.isidentifier()):
            raise self.err(f"pl.spmd: name_hint must be an identifier string, got {hint!r}", call)
        self.at_hints(bound, call)

    def spmd_submits(self, body: list[Stmt], deps: tuple[Expr, ...], call: ast.Call) -> list[Stmt]:
        """The kernel calls of a ``pl.spmd`` body as tasks whose ids are recorded (``as tid`` or
        ``deps=``): ``x = self.k(...)`` becomes the submit of ``k`` (with the launch's deps) and
        ``x`` names the argument ``k`` returns."""
        out: list[Stmt] = []
        for st in body:
            value = st.value if isinstance(st, (Assign, ExprStmt)) else None
            if not isinstance(value, CallFunc) or value.deps:
                ordered = (
                    dataclasses.replace(st, deps=st.deps + deps) if isinstance(st, Scope) and deps else st
                )
                out.append(ordered)
                continue
            self.hoisted += 1
            task = Var(f"{self.prefix}_spmd_block_task{self.hoisted}", TaskIdType(), value.span)
            submit = CallFunc(value.callee, value.args, TaskIdType(), deps=deps, span=value.span)
            out.append(Assign(task, submit, st.span))
            if isinstance(st, Assign) and isinstance(st.var.type, TensorType):
                results = self._returned_args(value, self.ctx.functions.get(value.callee), call)
                if len(results) != 1:
                    raise self.err(
                        f"pl.spmd: {value.callee!r} returns {len(results)} tensors; name them with "
                        "`a, b = self.kernel(...)` outside `as tid`, or return one",
                        call,
                    )
                if results[0].name != st.var.name:
                    out.append(Assign(st.var, results[0], st.span))
        return out

    def spmd_submit(self, targets: list[ast.expr], call: ast.Call, s: ast.stmt) -> list[Stmt]:
        """``r..., tid = pl.spmd_submit(self.k, *args, core_num=n, ...)``: the launch
        ``with pl.spmd(n, ...) as tid: r... = self.k(*args)``."""
        self.check_orchestration("pl.spmd_submit", call)
        if not call.args or not (
            isinstance(call.args[0], ast.Attribute)
            and isinstance(call.args[0].value, ast.Name)
            and call.args[0].value.id == "self"
        ):
            raise self.err(
                "pl.spmd_submit: the first argument must be a kernel method written self.<kernel>", call
            )
        if not isinstance(call.func, ast.Attribute):
            raise self.err("pl.spmd_submit: write it as pl.spmd_submit(...)", call.func)
        keys = ("core_num", "sync_start", "deps", "allow_early_resolve")
        for kw in call.keywords:
            if kw.arg not in keys:
                raise self.err(
                    f"pl.spmd_submit() got an unsupported keyword {kw.arg!r}; it takes {', '.join(keys)}", kw
                )
        if not any(kw.arg == "core_num" for kw in call.keywords):
            raise self.err("pl.spmd_submit: core_num=n (the launch's block count) is required", call)
        if targets and not all(isinstance(t, ast.Name) for t in targets):
            raise self.err("pl.spmd_submit: unpack into names: `out, tid = pl.spmd_submit(...)`", s)
        names = [t for t in targets if isinstance(t, ast.Name)]
        if len(names) == 1:  # `res = pl.spmd_submit(...)`: res holds the results and the task id
            from pypto.language.parser.tuples import TupleValue

            self.hoisted += 1
            held = [
                ast.copy_location(
                    ast.Name(id=f"_spmd_submit_{what}{self.hoisted}", ctx=ast.Store()), names[0]
                )
                for what in ("results", "task")
            ]
            stmts = self.spmd_submit(list(held), call, s)
            results = self.st.env.pop(held[0].id)
            task = self.st.env.pop(held[1].id)
            if isinstance(results, Var):  # one result: the argument the launch's kernel returns
                results = _assigned_value(stmts, results) or results
            items = results.items if isinstance(results, TupleValue) else (results,)
            self.st.env[names[0].id] = TupleValue((*items, task))  # type: ignore[assignment]
            return stmts
        kernel_call = ast.Call(func=call.args[0], args=list(call.args[1:]), keywords=[])
        body: ast.stmt
        if len(names) > 2:
            elts: list[ast.expr] = list(names[:-1])
            body = ast.Assign(targets=[ast.Tuple(elts=elts, ctx=ast.Store())], value=kernel_call)
        elif names:
            body = ast.Assign(targets=[names[0]], value=kernel_call)
        else:
            body = ast.Expr(value=kernel_call)
        launch = ast.Call(
            func=ast.Attribute(value=call.func.value, attr="spmd", ctx=ast.Load()),
            args=[],
            keywords=call.keywords,
        )
        item = ast.withitem(context_expr=launch, optional_vars=names[-1] if names else None)
        with_stmt = ast.With(items=[item], body=[body])
        for node in (kernel_call, body, launch, launch.func, with_stmt):
            ast.copy_location(node, call)
        if names:
            with_stmt.items[0].optional_vars = ast.Name(id=names[-1].id, ctx=ast.Store())
            ast.copy_location(with_stmt.items[0].optional_vars, names[-1])
        else:  # the launch's id is recorded even when not named, so the statement forms match
            with_stmt.items[0].optional_vars = None
        ast.fix_missing_locations(with_stmt)
        return self.spmd_stmt(with_stmt, launch)

    def spmd_kernel(
        self, s: ast.With | ast.For, call: ast.Call, bound: dict[str, Any], span: Span, tracked: bool = False
    ) -> Stmt:
        """An inline ``pl.spmd`` body as the one ``pl.at(level=CORE_GROUP)`` scope it is (with a
        task id when the launch's is recorded)."""
        hint, deps, hints = self.scope_options(bound, call, "pl.spmd")
        body = self.scope_body(s.body)
        task = Var(f"{self.prefix}_spmd_block_task{self.hoisted}", TaskIdType(), span) if tracked else None
        return Scope(Level.CORE_GROUP, hint, tuple(deps), task, tuple(body), span, hints=hints)

    def _syncs(self, stmts: list[ast.stmt]) -> bool:
        """Whether a body calls ``pl.system.syncall``."""
        import pypto.language as pl

        for node in ast.walk(ast.Module(body=stmts, type_ignores=[])):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
                try:
                    target = self.resolve(node.func)
                except KernelError:
                    continue
                if isinstance(target, _Static) and target.value is pl.system.syncall:
                    return True
        return False

    def _launches(self, stmts: list[ast.stmt]) -> bool:
        """Whether a ``pl.spmd`` body launches kernels (calls them or opens ``pl.at`` scopes)
        rather than being kernel code itself."""
        for node in ast.walk(ast.Module(body=stmts, type_ignores=[])):
            if isinstance(node, ast.With):
                return True
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            is_self = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"
            if is_self and "self" not in self.st.env:
                return True
            if isinstance(f, ast.Name) and f.id not in self.st.env:
                try:
                    target = self.resolve(f)
                except KernelError:
                    continue
                if isinstance(target, _Static) and hasattr(target.value, "__pypto_callee__"):
                    return True
        return False


def _exits(stmts: list[ast.stmt]) -> ast.stmt | None:
    """The first ``break``/``continue`` of this loop body (not of a loop nested in it)."""
    for st in stmts:
        if isinstance(st, (ast.Break, ast.Continue)):
            return st
        if isinstance(st, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "handlers", "finalbody"):
            inner = getattr(st, field, None)
            if isinstance(inner, list):
                found = _exits([x for x in inner if isinstance(x, ast.stmt)])
                if found is not None:
                    return found
    return None


def _task_of(st: Stmt) -> Var | None:
    """The task id a statement of a recorded ``pl.spmd`` body defines (a scope's, a submit's)."""
    if isinstance(st, Scope):
        return st.task
    if isinstance(st, Assign) and isinstance(st.var.type, TaskIdType) and isinstance(st.value, CallFunc):
        return st.var
    return None


def _assigned_value(stmts: list[Stmt], var: Var) -> Expr | None:
    """The value ``stmts`` (or the bodies of their scopes) last assign to ``var``."""
    found: Expr | None = None
    for st in stmts:
        if isinstance(st, Assign) and st.var is var:
            found = st.value
        inner = getattr(st, "body", None)
        if isinstance(inner, tuple) and all(isinstance(x, Stmt) for x in inner):
            found = _assigned_value(list(inner), var) or found
    return found


def _reads_block_index(body: list[ast.stmt], index_name: str | None) -> bool:
    """An inline SPMD body reads its block: it calls ``get_block_idx`` or reads the loop index."""
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "get_block_idx") or (
                isinstance(f, ast.Name) and f.id == "get_block_idx"
            ):
                return True
        if index_name is not None and isinstance(node, ast.Name) and node.id == index_name:
            return True
    return False
