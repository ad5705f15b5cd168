"""The parser's statements: assignments, tensor writes, loops, branches, return (``pl.at`` scopes
are in scopes.py, SPMD launches in launches.py)."""

from __future__ import annotations

import ast
import builtins
import dataclasses
from typing import Any, TypeVar

from pypto.ir.analysis.return_lineage import function_aliases
from pypto.ir.dtypes import DataType
from pypto.ir.nodes import (
    Assign,
    Call,
    CallFunc,
    Const,
    Expr,
    ExprStmt,
    For,
    If,
    Return,
    Stmt,
    Var,
)
from pypto.ir.passes import ssa
from pypto.ir.types import (
    ArrayType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
    Type,
)
from pypto.language import typing as lt
from pypto.language.fold import INDEX
from pypto.language.parser.common import (
    _AUG,
    _ann_str,
    _Static,
    tile_shape,
)
from pypto.language.parser.conversions import annotated_value
from pypto.language.parser.directives import DIRECTIVES
from pypto.language.parser.launches import _Launches
from pypto.language.parser.placements import (
    allocations_in_scope,
    bind_allocation,
    check_placement,
    is_alloc_call,
)
from pypto.language.parser.subscripts import (
    note_valid_shape,
    out_param_write,
)
from pypto.language.parser.tuples import TupleValue
from pypto.language.parser.windows import _Windows

_V = TypeVar("_V", bound="Expr | TupleValue")  # the kind of value an annotation check hands back


class _Statements(_Windows, _Launches):
    assign_ann: ast.expr | None = None  # the annotation of the assignment being parsed
    # ------------------------------------------------------------------ statements

    def block(self, stmts: list[ast.stmt], top: bool = False) -> tuple[list[Stmt], tuple[Type, ...]]:
        out: list[Stmt] = []
        returns: tuple[Type, ...] = ()
        for i, s in enumerate(stmts):
            if i == 0 and top and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                continue  # docstring
            outer, self.pending = self.pending, []
            try:
                produced = self.block_stmt(s, i, len(stmts), top)
            finally:
                pending, self.pending = self.pending, outer
            out.extend(pending)  # what inlined helpers produced comes first
            out.extend(produced)
            if isinstance(s, ast.Return) and produced and isinstance(produced[-1], Return):
                returns = tuple(v.type for v in produced[-1].values)
        return out, returns

    def block_stmt(self, s: ast.stmt, i: int, n: int, top: bool) -> list[Stmt]:
        if isinstance(s, ast.Return):
            out: list[Stmt] = []
            if not top or i != n - 1:
                raise self.err("return must be the last statement of the function body", s)
            ret = self.return_stmt(s)
            values = []
            for k, v in enumerate(ret.values):
                if isinstance(v, (Var, Const)):
                    values.append(v)
                    continue
                tmp = Var(f"ret{k}", v.type, ret.span)
                out.append(Assign(tmp, v, ret.span))
                values.append(tmp)
            ret = Return(tuple(values), ret.span)
            out.append(ret)
            return out
        return self.stmt(s)

    def stmt(self, s: ast.stmt) -> list[Stmt]:
        span = self.src.span(s)
        docstring = isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
        if not docstring and not (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and self.dsl_kind(s.value.func) == "func_attr"
        ):
            self.st.prologue = False
        if isinstance(s, ast.Pass):
            return []
        if (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and self.dsl_kind(s.value.func) == "yield_"
        ):
            return self.yield_stmt(s.value, None)
        if (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and self.manual_depth
            and self.dsl_kind(s.value.func) in ("submit", "spmd_submit")
        ):
            word = self.dsl_kind(s.value.func)
            raise self.err(
                f"pl.{word} in a pl.manual_scope() must be unpacked into its results and task id "
                f"(`out, tid = pl.{word}(...)`): a manual scope orders tasks only by the ids it is given",
                s,
            )
        if (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.value, ast.Call)
            and self.dsl_kind(s.value.func) == "yield_"
        ):
            return self.yield_stmt(s.value, s.targets[0])
        if (  # `y: pl.Scalar[pl.INDEX] = pl.yield_(v)`: the annotation documents the yielded value
            isinstance(s, ast.AnnAssign)
            and isinstance(s.value, ast.Call)
            and self.dsl_kind(s.value.func) == "yield_"
        ):
            return self.yield_stmt(s.value, s.target)
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            kind = self.dsl_kind(s.value.func)
            if kind == "cond":
                raise self.err(
                    "pl.cond(condition) is the first statement of a pl.while_ loop body, and only that", s
                )
            if kind == "submit":
                return self.submit_assign([], s.value, s)
            if kind == "spmd_submit":
                return self.spmd_submit([], s.value, s)
            if kind in DIRECTIVES:
                self.directive(kind, s.value)
                return []
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return []
            value = self.expr(s.value)
            written = isinstance(value, Call) and value.op == "tile.write"
            if (
                written
                and isinstance(s.value, ast.Call)
                and s.value.args
                and isinstance(s.value.args[0], ast.Name)
            ):
                # pl.tile.write(t, [i, j], v) as a statement writes t: the name holds the written tile
                target = s.value.args[0]
                var = Var(self.prefix + target.id, value.type, self.src.span(target))
                self.st.env[target.id] = var
                return [Assign(var, value, span)]
            if not isinstance(value, (Call, CallFunc)):
                if isinstance(s.value, ast.Call) and self.is_inline(s.value.func):
                    return []  # an inlined helper's statements are already emitted; its value is unused
                raise self.err("this expression has no effect; assign its value or remove it", s)
            return [ExprStmt(value, span)]
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise self.err("chained assignment (a = b = ...) is not supported; assign once", s)
            if self.is_submit(s.value):
                t = s.targets[0]
                assert isinstance(s.value, ast.Call)
                return self.submit_assign(list(t.elts) if isinstance(t, ast.Tuple) else [t], s.value, s)
            if isinstance(s.value, ast.Call) and self.dsl_kind(s.value.func) == "spmd_submit":
                t = s.targets[0]
                return self.spmd_submit(list(t.elts) if isinstance(t, ast.Tuple) else [t], s.value, s)
            return self.assign(s.targets[0], s.value, None, s)
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                raise self.err("a declaration without a value is not supported; assign a value", s)
            return self.assign(s.target, s.value, s.annotation, s)
        if isinstance(s, ast.AugAssign):
            opname = _AUG.get(type(s.op))
            if opname is None or not isinstance(s.target, ast.Name):
                raise self.err("only +=, -=, *=, /= on a name are supported", s)
            call = ast.BinOp(left=ast.Name(id=s.target.id, ctx=ast.Load()), op=s.op, right=s.value)
            ast.copy_location(call, s)
            ast.fix_missing_locations(call)
            return self.assign(s.target, call, None, s)
        if isinstance(s, ast.For):
            return self.for_stmt(s)
        if isinstance(s, ast.If):
            return self.if_stmt(s)
        if isinstance(s, ast.While):
            return self.while_stmt(s)
        if isinstance(s, (ast.Break, ast.Continue)):
            return self.leave_stmt(s)
        if isinstance(s, ast.With):
            opened = s.items[0].context_expr if len(s.items) == 1 else None
            if isinstance(opened, ast.Call) and self.dsl_kind(opened.func) in ("spmd", "cluster"):
                return self.spmd_stmt(s, opened)
            if isinstance(opened, ast.Call) and self.dsl_kind(opened.func) == "manual_scope":
                if opened.args or opened.keywords:
                    raise self.err("pl.manual_scope() takes no arguments", opened)
                return self.manual_scope_stmt(s, opened)
            if isinstance(opened, ast.Call) and self.dsl_kind(opened.func) == "scope":
                return self.scope_stmt(s, opened)
            return self.with_stmt(s)
        names = {
            ast.Try: "try statements",
            ast.FunctionDef: "nested function definitions",
            ast.Delete: "del",
            ast.Import: "imports",
            ast.ImportFrom: "imports",
            ast.Global: "global",
            ast.Nonlocal: "nonlocal",
            ast.Raise: "raise",
            ast.Assert: "assert",
        }
        what = names.get(type(s), type(s).__name__)
        raise self.err(
            f"unsupported Python construct in a kernel: {what}; kernels use assignments, "
            "pl.range and while loops, if, pl.at scopes and a final return",
            s,
        )

    def assign(self, target: ast.expr, value_node: ast.expr, ann: ast.expr | None, s: ast.stmt) -> list[Stmt]:
        span = self.src.span(s)
        if isinstance(target, ast.Subscript):
            if isinstance(target.value, ast.Name):
                base = self.lookup(target.value.id, target.value)
                if isinstance(base, Var) and isinstance(base.type, ArrayType):
                    return self.array_write(target, value_node, s)
            return [self.tensor_write(target, value_node, s)]
        if isinstance(target, ast.Tuple) and ann is None:
            return self.unpack_call(target, value_node, s)
        if not isinstance(target, ast.Name):
            raise self.err(
                "only a single name (x = ...), a tensor window (out[:] = ...) or the results of a "
                "kernel call (a, b = kernel(...)) can be assigned",
                target,
            )
        if is_alloc_call(self, value_node):
            bind_allocation(self, target, value_node, ann, s)  # type: ignore[arg-type]
            return []
        self.assign_ann = ann  # what a call that takes its type from it reads (pl.tpop_from_aic)
        try:
            if (
                isinstance(value_node, ast.Constant)
                and value_node.value is None
                and not self.in_kernel_code()
            ):
                # `tid = None` in an orchestration: "no producer yet", the id of no task
                value: Expr | TupleValue = self.make_op("task_invalid", [], {}, value_node)
            else:
                value = self.expr(value_node)
        finally:
            self.assign_ann = None
        if (
            isinstance(value, CallFunc)
            and isinstance(value.type, TupleType)
            and len(value.type.items) > 1
            and value.callee in self.ctx.functions
        ):
            # t = kernel(...) of a kernel with several results: t is the tuple of the tensors
            # they alias, read as t[0], t[1] or unpacked later
            out, results = self.call_results(value, value_node, s, [target] * len(value.type.items))
            held = TupleValue(tuple(results))
            if ann is not None:
                self.check_annotation(ann, held, target.id)
            return out + self.bind_name(target, held)
        if isinstance(value, TupleValue):  # a tuple: its name stands for its items
            if ann is not None:
                self.check_annotation(ann, value, target.id)
            return self.bind_name(target, value)
        if ann is not None:
            value = self.check_annotation(ann, value, target.id)
        if isinstance(value, Var) and value.name == target.id:
            return []
        written = out_param_write(self, target.id, value, s)
        if written is not None:  # `out = pl.add(a, b)` in a kernel writes its pl.Out parameter
            return [written]
        if isinstance(value, Const) and target.id not in self.st.multi:
            self.st.env[target.id] = value  # a name bound once to a constant is that constant
            return []
        self.check_rebind(target, value.type)
        var = Var(self.prefix + target.id, value.type, self.src.span(target))
        self.st.env[target.id] = var
        note_valid_shape(self, var, value)
        if isinstance(value.type, TupleType) and not value.type.items and isinstance(value, CallFunc):
            raise self.err(f"{value.callee!r} returns nothing; call it without assigning", s)
        return [Assign(var, value, span)]

    def in_kernel_code(self) -> bool:
        return self.st.func_type.is_kernel or self.st.in_scope

    def check_rebind(self, target: ast.Name, ty: Type) -> None:
        """A name holding a tensor keeps its shape and dtype: rebinding it to a tensor of another
        shape or dtype is an error (as in upstream PyPTO), so one name is one tensor type."""
        held = self.st.env.get(target.id)
        if not (isinstance(held, Var) and isinstance(held.type, TensorType) and isinstance(ty, TensorType)):
            return
        was, now = held.type, ty
        if tuple(was.shape) != tuple(now.shape) or was.dtype is not now.dtype:
            raise self.err(
                f"cannot reassign {target.id!r} with a different type: was {was}, got {now}; use a "
                "different name for a tensor of another shape or dtype",
                target,
            )

    def unpack_call(self, target: ast.Tuple, value_node: ast.expr, s: ast.stmt) -> list[Stmt]:
        """``a, b = kernel(x, y)`` in an orchestration: the call is submitted once, and each name
        is bound to the argument tensor its result aliases (a kernel returns the tensors it
        wrote, so the names are those tensors, now written)."""
        value = self.expr(value_node)
        if isinstance(value, TupleValue):
            return self.unpack_tuple(target, value, s)
        if not all(isinstance(t, ast.Name) for t in target.elts):
            raise self.err("tuple unpacking assigns plain names: a, b = kernel(...)", target)
        if not isinstance(value, CallFunc):
            raise self.err(
                "only the results of a kernel call can be unpacked: a, b = kernel(...) (or a tuple: a, b = t)",
                value_node,
            )
        callee = self.ctx.functions.get(value.callee)
        n = len(value.type.items) if isinstance(value.type, TupleType) else 1
        if callee is None or n != len(target.elts):
            raise self.err(
                f"{value.callee!r} returns {n} value(s); {len(target.elts)} name(s) are assigned", target
            )
        out, results = self.call_results(value, value_node, s, list(target.elts))
        for name, result in zip(target.elts, results, strict=True):
            assert isinstance(name, ast.Name)
            self.st.env[name.id] = result
        return out

    def call_results(
        self, value: CallFunc, value_node: ast.expr, s: ast.stmt, where: list[ast.expr]
    ) -> tuple[list[Stmt], list[Expr]]:
        """Submit the kernel call ``value`` once; its results are the argument tensors they alias
        (a kernel returns the tensors it wrote). ``where[k]`` is the source of result ``k``."""
        callee = self.ctx.functions[value.callee]
        aliases = function_aliases(ssa.convert_function(callee))
        out: list[Stmt] = []
        args = list(value.args)
        for k, (at, alias) in enumerate(zip(where, aliases, strict=True)):
            if alias is None:
                raise self.err(
                    f"{value.callee!r}: return value {k} is not one of its tensor parameters, so it cannot be "
                    "named here; return the Out/InOut tensors the kernel wrote",
                    at,
                )
            if not isinstance(args[alias], Var):
                # An argument written inline (`pl.create_tensor(...)`, `pl.slice(...)`) is bound to a
                # generated name before the call, so the name refers to the tensor the kernel wrote
                # rather than to a second evaluation of the expression (a fresh allocation or view).
                self.hoisted += 1
                held = Var(f"{self.prefix}_result{self.hoisted}", args[alias].type, self.src.span(at))
                out.append(Assign(held, args[alias], self.src.span(value_node)))
                args[alias] = held
        out.append(ExprStmt(dataclasses.replace(value, args=tuple(args)), self.src.span(s)))
        return out, [args[alias] for alias in aliases]  # type: ignore[index]

    def check_annotation(self, ann_node: ast.expr, value: _V, name: str) -> _V:
        """The value bound to an annotated name: ``value``, or a tensor-level value converted to
        the annotated dtype (parser/conversions.py); raises if the annotation does not fit."""
        namespace = {**self.src.namespace, **allocations_in_scope(self)}
        try:
            ann = eval(compile(ast.Expression(ann_node), self.src.file, "eval"), namespace)
        except Exception as exc:
            raise self.err(f"cannot evaluate the annotation of {name!r}: {exc}", ann_node) from None
        value = annotated_value(self, ann, value, ann_node)
        self.check_value_annotation(ann, value, name, ann_node)
        return value

    def check_value_annotation(
        self, ann: Any, value: Expr | TupleValue, name: str, ann_node: ast.expr
    ) -> None:
        ty = value.type
        planes = self.st.planes_of(value)
        if planes is not None and isinstance(ann, lt.TileAnnotation):  # a pl.batch_matmul result
            first = value.items[0] if isinstance(value, TupleValue) else value
            fits = tuple(ann.shape) == planes and ann.dtype is first.type.dtype  # type: ignore[union-attr]
            if not fits or ann.memory not in (None, MemorySpace.Acc):
                raise self.err(
                    f"{name!r} is annotated {_ann_str(ann)} but the value is {list(planes)} "
                    f"{first.type.dtype.value} in Acc (pl.batch_matmul's planes)",  # type: ignore[union-attr]
                    ann_node,
                )
            return
        if isinstance(ann, lt.TupleAnnotation):
            items = value.items if isinstance(value, TupleValue) else None
            if items is None or len(items) != len(ann.items):
                raise self.err(f"{name!r} is annotated {_ann_str(ann)} but the value is {ty}", ann_node)
            for k, (item_ann, item) in enumerate(zip(ann.items, items, strict=True)):
                self.check_value_annotation(item_ann, item, f"{name}[{k}]", ann_node)
            return
        if isinstance(value, TupleValue):
            raise self.err(f"{name!r} is a tuple ({ty}); annotate it pl.Tuple[...]", ann_node)
        if isinstance(ann, lt.TileAnnotation):
            if (
                not isinstance(ty, TileType)
                or ty.shape != tile_shape(ann.shape)
                or ty.dtype is not ann.dtype
                or (ann.memory is not None and ann.memory is not ty.memory)
            ):
                raise self.err(f"{name!r} is annotated {_ann_str(ann)} but the value is {ty}", ann_node)
            if ann.memref is not None:
                check_placement(self, ann, ty, name, ann_node)
        elif isinstance(ann, lt.TensorAnnotation):
            if (
                not isinstance(ty, TensorType)
                or (ann.dtype is not None and ann.dtype is not ty.dtype)
                or (ann.shape is not None and tuple(ann.shape) != tuple(ty.shape))
            ):
                raise self.err(f"{name!r} is annotated {_ann_str(ann)} but the value is {ty}", ann_node)
        elif isinstance(ann, (lt.ScalarAnnotation, DataType)) and not isinstance(ty, ScalarType):
            raise self.err(f"{name!r} is annotated as a scalar but the value is {ty}", ann_node)

    def for_stmt(self, s: ast.For) -> list[Stmt]:
        if s.orelse:
            raise self.err("for ... else is not supported", s)
        it = s.iter
        kind = self.dsl_kind(it.func) if isinstance(it, ast.Call) else None
        if kind == "while_" and isinstance(it, ast.Call):
            return self.while_form(s, it)
        if kind in ("spmd", "split_aiv") and isinstance(it, ast.Call):
            # a launch body: a loop of its own kind on the loop stack (break/continue checks)
            self.loop_stack.append((kind, self.st.in_scope))
            try:
                launch = self.spmd_stmt if kind == "spmd" else self.split_aiv_stmt
                return launch(s, it)
            finally:
                self.loop_stack.pop()
        if not isinstance(it, ast.Call) or self.dsl_kind(it.func) != "range":
            raise self.err(
                "a kernel loop must use pl.range() (or pl.parallel, pl.unroll, pl.pipeline, pl.while_)", it
            )
        init_node = None
        target_fn = self.resolve(it.func)
        if isinstance(target_fn, _Static) and target_fn.value is builtins.range:
            raise self.err(
                f"a kernel loop must use pl.range(), not Python's range: for ... in pl.{ast.unparse(it)}", it
            )
        pipelined = isinstance(target_fn, _Static) and getattr(target_fn.value, "__pypto_pipeline__", False)
        stage: int | None = None
        for kw in it.keywords:
            if kw.arg == "stage" and pipelined:
                stage = self.static_value(kw.value, "pl.pipeline stage", kw)
                if isinstance(stage, bool) or not isinstance(stage, int) or stage <= 0:
                    raise self.err(
                        f"pl.pipeline: stage must be a positive integer constant, got {stage!r}", kw
                    )
                continue
            if kw.arg != "init_values":
                raise self.err(
                    f"pl.range() got an unsupported keyword {kw.arg!r}; use pl.range(start, stop, step[, init_values=(...)])",
                    kw,
                )
            init_node = kw.value
        if pipelined and stage is None:
            raise self.err("pl.pipeline needs stage=<depth>: pl.pipeline(n, stage=2)", it)
        pre: list[Stmt] = []
        carried: list[str] = []
        target = s.target
        if init_node is not None:
            # for i, (a, b) in pl.range(n, init_values=(x, y)): a and b start as x and y and
            # take the values of pl.yield_(...) at the end of each iteration
            if not (
                isinstance(target, ast.Tuple)
                and len(target.elts) == 2
                and isinstance(target.elts[0], ast.Name)
                and isinstance(target.elts[1], (ast.Tuple, ast.List))
                and all(isinstance(e, ast.Name) for e in target.elts[1].elts)
            ):
                raise self.err("with init_values the target is `i, (a, b, ...)`", target)
            if not isinstance(init_node, (ast.Tuple, ast.List)):
                raise self.err("init_values must be a tuple: init_values=(x,)", init_node)
            names = [e.id for e in target.elts[1].elts if isinstance(e, ast.Name)]
            if len(names) != len(init_node.elts):
                raise self.err(
                    f"{len(names)} loop-carried names for {len(init_node.elts)} init_values", init_node
                )
            for name, init in zip(names, init_node.elts, strict=True):
                value = self.expr(init)
                v = Var(self.prefix + name, value.type, self.src.span(init))
                pre.append(Assign(v, value, self.src.span(init)))
                self.st.env[name] = v
            carried = names
            self.st.multi.update(names)
            target = target.elts[0]
        if not isinstance(target, ast.Name):
            raise self.err("the loop variable must be a single name: for i in pl.range(n)", s.target)
        args = [self.scalar(a, "pl.range bound") for a in it.args]
        if not 1 <= len(args) <= 3:
            raise self.err(f"pl.range takes 1 to 3 arguments, got {len(args)}", it)
        start: Expr = Const(0, INDEX)
        step: Expr = Const(1, INDEX)
        if len(args) == 1:
            stop = args[0]
        elif len(args) == 2:
            start, stop = args
        else:
            start, stop, step = args
        if isinstance(step, Const) and step.value == 0:
            raise self.err("pl.range step must not be 0", it)
        var = Var(self.prefix + target.id, ScalarType(INDEX), self.src.span(target))
        saved = dict(self.st.env)
        self.st.env[target.id] = var
        self.carried.append(carried)
        self.yield_targets.append({})
        self.loop_stack.append((self.loop_kind(it), self.st.in_scope))
        try:
            body, _ = self.block(s.body)
        finally:
            self.loop_stack.pop()
            self.carried.pop()
            renames = self.yield_targets.pop()
        # names first bound inside the loop are local to it, except a name bound to a store into
        # a tensor from before the loop (`t_new = pl.store(tile, [i, 0], t)`): after the loop it
        # names that tensor, which the loop's stores wrote
        after = self.st.env
        self.st.env = {k: v for k, v in after.items() if k in saved}
        for k in self.st.env:
            if isinstance(after[k], Var) and after[k] is not saved[k]:
                self.st.env[k] = after[k]
        outer = {id(v) for v in saved.values()}
        for st in body:
            if not isinstance(st, Assign) or not isinstance(st.value, Call) or st.value.op != "tile.store":
                continue
            bound = next((k for k, v in after.items() if v is st.var and k not in saved), None)
            dest = st.value.args[2]
            if bound is not None and isinstance(dest, Var) and id(dest) in outer:
                self.st.env[bound] = dest
        # any other name first bound in the body and read after the loop keeps its last value
        first_bound = {
            k: v for k, v in after.items() if k not in saved and k not in self.st.env and k != target.id
        }
        pre.extend(self.keep_read_after(s, first_bound))
        for name, lhs in renames.items():  # `x_next = pl.yield_(...)` names the value after the loop
            self.st.env[lhs] = self.st.env[name]
        return [*pre, For(var, start, stop, step, tuple(body), span=self.src.span(s), stage=stage)]

    def yield_stmt(self, call: ast.Call, target: ast.expr | None) -> list[Stmt]:
        """``pl.yield_(v, ...)``: the next values of the enclosing loop's init_values names."""
        if self.carried and self.carried[-1] is None:  # in an if branch: the branch's values
            return self.branch_yield(call, target)
        if not self.carried or not self.carried[-1]:
            raise self.err(
                "pl.yield_ belongs in a loop over pl.range(..., init_values=(...)) or an if branch", call
            )
        names = self.carried[-1]
        assert names is not None
        if target is None:  # the loop's results are the names it assigns (as upstream requires)
            raise self.err(
                f"a loop with init_values requires an assignment-form pl.yield_: "
                f"{', '.join(n + '_next' for n in names)} = pl.yield_(...)",
                call,
            )
        if call.keywords or len(call.args) != len(names):
            raise self.err(f"pl.yield_ takes the {len(names)} next value(s) of {', '.join(names)}", call)
        values = [self.expr(a) for a in call.args]
        out: list[Stmt] = []
        targets: list[str] = []
        if target is not None:
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            if len(elts) != len(names) or not all(isinstance(e, ast.Name) for e in elts):
                raise self.err(f"assign pl.yield_ to {len(names)} name(s)", target)
            targets = [e.id for e in elts]  # type: ignore[attr-defined]
        for k, (name, value) in enumerate(zip(names, values, strict=True)):
            v = Var(self.prefix + name, value.type, self.src.span(call))
            out.append(Assign(v, value, self.src.span(call)))
            self.st.env[name] = v
            if targets and targets[k] != name:
                self.st.env[targets[k]] = v
                self.yield_targets[-1][name] = targets[k]
        return out

    def branch_yield(self, call: ast.Call, target: ast.expr | None) -> list[Stmt]:
        """``y = pl.yield_(v)`` in an if branch binds ``y`` (the SSA pass merges the branches)."""
        if target is None:
            raise self.err("in an if branch, assign pl.yield_(...) to the name(s) it defines", call)
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if call.keywords or len(elts) != len(call.args) or not all(isinstance(e, ast.Name) for e in elts):
            raise self.err(f"pl.yield_ of {len(call.args)} value(s) needs as many names", target)
        out: list[Stmt] = []
        for e, a in zip(elts, call.args, strict=True):
            assert isinstance(e, ast.Name)
            value = self.expr(a)
            v = Var(self.prefix + e.id, value.type, self.src.span(e))
            out.append(Assign(v, value, self.src.span(call)))
            self.st.env[e.id] = v
            self.st.multi.add(e.id)
        return out

    def if_stmt(self, s: ast.If) -> list[Stmt]:
        if isinstance(s.test, ast.Constant) and not isinstance(s.test.value, bool):
            raise self.err(
                f"an if condition must be a bool scalar (a comparison such as i < n, or True), "
                f"got the literal {s.test.value!r}",
                s.test,
            )
        cond = self.scalar(s.test, "an if condition")
        if isinstance(cond, Const):  # decided at compile time (e.g. a jit scalar parameter)
            out: list[Stmt] = []
            for inner in s.body if cond.value else s.orelse:
                out.extend(self.stmt(inner))
            return out
        before = dict(self.st.env)
        self.carried.append(None)
        try:
            then, _ = self.block(s.body)
            env_then = self.st.env
            self.st.env = dict(before)
            els, _ = self.block(s.orelse)
            env_else = self.st.env
        finally:
            self.carried.pop()
        # names bound before the if, or in both branches, stay visible (the IR is name-based
        # until SSA merges the versions); a name bound in one branch only ends with the if
        merged = dict(before)
        merged.update({n: v for n, v in env_then.items() if n in before or n in env_else})
        self.st.env = merged
        # a name bound in one branch only and read after the if keeps its binding (control.py)
        one_branch = {n: v for env in (env_then, env_else) for n, v in env.items() if n not in merged}
        pre = self.keep_read_after(s, one_branch)
        return [*pre, If(cond, tuple(then), tuple(els), span=self.src.span(s))]

    def return_stmt(self, s: ast.Return) -> Return:
        if s.value is None:
            return Return((), self.src.span(s))
        nodes = s.value.elts if isinstance(s.value, ast.Tuple) else [s.value]
        values = []
        for n in nodes:
            e = self.expr(n)
            for item in e.flat() if isinstance(e, TupleValue) else [e]:  # return t: the tuple's items
                tile_result = isinstance(item.type, TileType) and self.st.func_type.is_kernel
                if not isinstance(item.type, (TensorType, ScalarType)) and not tile_result:
                    raise self.err(
                        f"a function returns tensors (or scalars; an InCore/AIC/AIV function also tiles), not {item.type}",
                        n,
                    )
                values.append(item)
        return Return(tuple(values), self.src.span(s))
