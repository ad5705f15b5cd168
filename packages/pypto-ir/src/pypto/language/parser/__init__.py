"""Python AST -> IR for kernel-language functions.

The parser reads a function's source (it never runs the body), resolves names statically
(locals first, then the function's closure and globals: module constants, ``pl``, kernels),
type-checks every op through the op registry and reports mistakes as ``file:line:col`` with
the source line and a caret.

The IR it produces is not yet SSA: a name assigned twice yields two ``Assign``s of the same
name; the SSA pass versions them.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import ops as op_registry
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.nodes import (
    Arg,
    Assign,
    Call,
    CallFunc,
    Const,
    Expr,
    ExprStmt,
    For,
    Function,
    If,
    Param,
    Return,
    Scope,
    Stmt,
    TensorWrite,
    Var,
    expr_vars,
)
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import (
    DynDim,
    FunctionType,
    Level,
    MemorySpace,
    ScalarType,
    TaskIdType,
    TensorType,
    TileType,
    TupleType,
    Type,
)
from pypto.language import typing as lt
from pypto.language.fold import INDEX, compare, extent, fold, make_const
from pypto.language.op_builders import OP_BUILDERS, build_generic

__all__ = ["ParseContext", "SourceInfo", "param_annotations", "parse_function"]


@dataclass
class SourceInfo:
    """A function's parsed source with the offsets that map AST positions to the file."""

    fn: Callable[..., Any]
    file: str
    tree: ast.FunctionDef
    line_offset: int
    col_offset: int
    namespace: dict[str, Any]

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> SourceInfo:
        try:
            lines, first = inspect.getsourcelines(fn)
            file = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as exc:
            raise KernelError(
                f"cannot read the source of {getattr(fn, '__qualname__', fn)!r} ({exc}); "
                "kernels must be defined in a file, not typed at an interactive prompt"
            ) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
        module = ast.parse(dedented)
        node = module.body[0]
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or isinstance(
            node, ast.AsyncFunctionDef
        ):
            raise KernelError(f"{fn!r} is not a plain function definition")
        namespace = dict(getattr(fn, "__globals__", {}))
        with contextlib.suppress(TypeError, ValueError):
            namespace.update(inspect.getclosurevars(fn).nonlocals)
        return cls(fn, file, node, first - 1, indent, namespace)

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 1) + self.line_offset
        col = getattr(node, "col_offset", 0) + self.col_offset
        end = getattr(node, "end_col_offset", None)
        end_line = getattr(node, "end_lineno", None)
        end_col = (
            end + self.col_offset if end is not None and end_line == getattr(node, "lineno", 1) else None
        )
        return Span(self.file, line, col, end_col)


class ParseContext:
    """What a function body may call besides ops: other functions of the program.

    Subclasses (the ``@pl.jit`` specialiser, the ``@pl.program`` builder) resolve a callee
    object to an IR function registered under a unique name.
    """

    def __init__(self) -> None:
        self.functions: dict[str, Function] = {}
        # (function, global name) -> the constant value the parse used
        self.captured: dict[tuple[Callable[..., Any], str], object] = {}

    def resolve_call(self, target: Any, arg_types: list[Type], span: Span) -> Function | None:
        """Return the callee's IR function, or None if ``target`` is not a callable kernel."""
        resolver = getattr(target, "__pypto_callee__", None)
        if resolver is None:
            return None
        fn: Function = resolver(self, arg_types, span)
        return fn

    def unique_name(self, base: str) -> str:
        name, k = base, 1
        while name in self.functions:
            k += 1
            name = f"{base}_{k}"
        return name


_UNSET = object()


def param_annotations(src: SourceInfo, skip_self: bool) -> list[tuple[str, Any, ast.arg]]:
    """Each parameter's evaluated annotation (or None when it has none)."""
    out = []
    args = src.tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        bad = args.vararg or args.kwarg or (args.kwonlyargs or args.posonlyargs)[0]
        node = bad if isinstance(bad, ast.arg) else src.tree
        raise KernelError(
            "kernel parameters must be plain positional parameters (no *args, **kwargs or keyword-only)",
            src.span(node),
        )
    params = list(args.args)
    if skip_self:
        params = params[1:]
    for a in params:
        ann: Any = None
        if a.annotation is not None:
            try:
                ann = eval(compile(ast.Expression(a.annotation), src.file, "eval"), src.namespace)
            except Exception as exc:
                raise KernelError(
                    f"cannot evaluate the annotation of parameter {a.arg!r}: {exc}", src.span(a.annotation)
                ) from None
        out.append((a.arg, ann, a))
    return out


def annotation_to_type(
    ann: Any, name: str, span: Span, given: Type | None = None
) -> tuple[Type, ParamDirection]:
    """Map a parameter annotation to (type, direction). ``given`` fills bare ``pl.Tensor``."""
    direction = ParamDirection.IN
    if isinstance(ann, lt.DirectionAnnotation):
        direction, ann = ann.direction, ann.inner
    if ann is lt.Tensor or isinstance(ann, lt.TensorAnnotation):
        if given is not None:
            if not isinstance(given, TensorType):
                raise KernelError(f"parameter {name!r} is a Tensor but the call passed {given}", span)
            if isinstance(ann, lt.TensorAnnotation):
                _check_declared(ann, given, name, span)
                return TensorType(ann.shape or given.shape, ann.dtype or given.dtype, ann.layout), direction
            return given, direction
        if not isinstance(ann, lt.TensorAnnotation) or ann.shape is None or ann.dtype is None:
            raise KernelError(
                f"parameter {name!r}: a bare pl.Tensor takes its shape from the call, which only @pl.jit has; "
                "write pl.Tensor[[rows, cols], pl.FP32]",
                span,
            )
        return TensorType(ann.shape, ann.dtype, ann.layout), direction
    if isinstance(ann, (lt.ScalarAnnotation, DataType)):
        dtype = ann.dtype if isinstance(ann, lt.ScalarAnnotation) else ann
        if direction is not ParamDirection.IN:
            raise KernelError(f"parameter {name!r}: a scalar is always In", span)
        return ScalarType(dtype), direction
    if ann is None:
        raise KernelError(
            f"parameter {name!r} needs an annotation: pl.Tensor, pl.Out[pl.Tensor], pl.InOut[...] or a scalar dtype such as pl.FP32",
            span,
        )
    raise KernelError(f"parameter {name!r}: unsupported annotation {ann!r}", span)


def _check_declared(ann: lt.TensorAnnotation, given: TensorType, name: str, span: Span) -> None:
    if ann.dtype is not None and ann.dtype is not given.dtype:
        raise KernelError(
            f"parameter {name!r} is declared {ann.dtype.value} but the call passed {given.dtype.value}", span
        )
    if ann.shape is not None:
        if len(ann.shape) != len(given.shape):
            raise KernelError(
                f"parameter {name!r} is declared rank {len(ann.shape)} but the call passed shape "
                f"{list(given.shape)}",
                span,
            )
        for axis, (d, g) in enumerate(zip(ann.shape, given.shape, strict=True)):
            if isinstance(d, int) and d != g:
                raise KernelError(
                    f"parameter {name!r}: axis {axis} is declared {d} but the call passed {g} "
                    f"(shape {list(given.shape)})",
                    span,
                )


# ----------------------------------------------------------------------------- the body parser


@dataclass
class _Static:
    """A compile-time Python value met while resolving a name (a module, a constant, a kernel)."""

    value: Any


@dataclass
class _FnState:
    func_type: FunctionType
    env: dict[str, Expr] = field(default_factory=dict)
    in_scope: bool = False
    dyn_dims: dict[str, tuple[Var, int]] = field(default_factory=dict)
    saw_scope: bool = False
    saw_call: bool = False
    saw_tile: bool = False
    multi: set[str] = field(default_factory=set)
    outside_node: tuple[ast.AST, str] | None = None  # first on-core op outside a scope (Opaque)
    runtime_scalars: dict[int, str] = field(default_factory=dict)  # id(param Var) -> name, not folded


def parse_function(
    fn: Callable[..., Any],
    *,
    ctx: ParseContext,
    name: str | None = None,
    func_type: FunctionType = FunctionType.Opaque,
    arg_types: Mapping[str, Type] | None = None,
    scalar_values: Mapping[str, int | float | bool] | None = None,
    is_method: bool = False,
) -> Function:
    """Parse ``fn`` into an IR Function.

    Args:
        ctx: Resolves calls of other kernels and collects them.
        name: The IR name (default: the Python name).
        func_type: Orchestration, InCore or Opaque (inferred from the body).
        arg_types: Per-parameter types from a call (for bare ``pl.Tensor``).
        scalar_values: Scalar parameters whose values are specialisation constants; every
            other scalar parameter (a ``pl.RUNTIME`` one) stays its parameter Var.
        is_method: Skip ``self``.
    """
    src = SourceInfo.of(fn)
    return _Parser(src, ctx).parse(
        name or fn.__name__, func_type, dict(arg_types or {}), dict(scalar_values or {}), is_method
    )


class _Parser:
    def __init__(self, src: SourceInfo, ctx: ParseContext) -> None:
        self.src = src
        self.ctx = ctx
        self.st = _FnState(FunctionType.Opaque)
        self.prefix = ""  # prepended to names bound in an inlined helper's body
        self.inlined = 0
        self.hoisted = 0  # windows bound to a generated name (_view1, ...)
        self.pending: list[Stmt] = []  # statements an expression produced (inlined helpers)
        # innermost first: a loop's init_values names, or None for an if branch
        self.carried: list[list[str] | None] = []
        self.yield_targets: list[dict[str, str]] = []  # per loop: init_values name -> yield LHS

    def err(self, msg: str, node: ast.AST) -> KernelError:
        return KernelError(msg, self.src.span(node))

    # ------------------------------------------------------------------ function

    def parse(
        self,
        name: str,
        func_type: FunctionType,
        arg_types: dict[str, Type],
        scalar_values: dict[str, Any],
        is_method: bool,
    ) -> Function:
        self.st = _FnState(func_type)
        self.st.multi = _rebound_names(self.src.tree)
        params: list[Param] = []
        for pname, ann, node in param_annotations(self.src, is_method):
            ty, direction = annotation_to_type(ann, pname, self.src.span(node), arg_types.get(pname))
            var = Var(pname, ty, self.src.span(node))
            params.append(Param(var, direction))
            if pname in scalar_values and isinstance(ty, ScalarType):
                self.st.env[pname] = make_const(scalar_values[pname], ty.dtype, self.src.span(node))
            else:
                self.st.env[pname] = var
                if isinstance(ty, ScalarType):
                    self.st.runtime_scalars[id(var)] = pname
            if isinstance(ty, TensorType):
                for axis, d in enumerate(ty.shape):
                    if isinstance(d, DynDim) and d.name not in self.st.dyn_dims:
                        self.st.dyn_dims[d.name] = (var, axis)
        body, returns = self.block(self.src.tree.body, top=True)
        ft = func_type
        if ft is FunctionType.Opaque:
            if self.st.saw_scope or self.st.saw_call:
                ft = FunctionType.Orchestration
            elif self.st.saw_tile:
                ft = FunctionType.InCore
        if ft is FunctionType.Orchestration and self.st.outside_node is not None:
            where, opname = self.st.outside_node
            raise self.err(
                f"pl.{opname} runs on a core, but this function also submits work (pl.at scopes or "
                "kernel calls); put it inside `with pl.at(level=pl.Level.CORE_GROUP):`",
                where,
            )
        return Function(name, tuple(params), returns, tuple(body), ft, span=self.src.span(self.src.tree))

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
        if isinstance(s, ast.Pass):
            return []
        if (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and self.dsl_kind(s.value.func) == "yield_"
        ):
            return self.yield_stmt(s.value, None)
        if (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.value, ast.Call)
            and self.dsl_kind(s.value.func) == "yield_"
        ):
            return self.yield_stmt(s.value, s.targets[0])
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return []
            value = self.expr(s.value)
            if not isinstance(value, (Call, CallFunc)):
                if isinstance(s.value, ast.Call) and self.is_inline(s.value.func):
                    return []  # an inlined helper's statements are already emitted; its value is unused
                raise self.err("this expression has no effect; assign its value or remove it", s)
            return [ExprStmt(value, span)]
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise self.err("chained assignment (a = b = ...) is not supported; assign once", s)
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
        if isinstance(s, ast.With):
            return [self.with_stmt(s)]
        names = {
            ast.While: "while loops",
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
            "pl.range loops, pl.at scopes and a final return",
            s,
        )

    def assign(self, target: ast.expr, value_node: ast.expr, ann: ast.expr | None, s: ast.stmt) -> list[Stmt]:
        span = self.src.span(s)
        if isinstance(target, ast.Subscript):
            return [self.tensor_write(target, value_node, s)]
        if not isinstance(target, ast.Name):
            raise self.err(
                "only a single name (x = ...) or a tensor window (out[:] = ...) can be assigned; "
                "tuple unpacking is not supported",
                target,
            )
        value = self.expr(value_node)
        if ann is not None:
            self.check_annotation(ann, value, target.id)
        if isinstance(value, Var) and value.name == target.id:
            return []
        if isinstance(value, Const) and target.id not in self.st.multi:
            self.st.env[target.id] = value  # a name bound once to a constant is that constant
            return []
        var = Var(self.prefix + target.id, value.type, self.src.span(target))
        self.st.env[target.id] = var
        if isinstance(value.type, TupleType) and not value.type.items and isinstance(value, CallFunc):
            raise self.err(f"{value.callee!r} returns nothing; call it without assigning", s)
        return [Assign(var, value, span)]

    def check_annotation(self, ann_node: ast.expr, value: Expr, name: str) -> None:
        try:
            ann = eval(compile(ast.Expression(ann_node), self.src.file, "eval"), self.src.namespace)
        except Exception as exc:
            raise self.err(f"cannot evaluate the annotation of {name!r}: {exc}", ann_node) from None
        ty = value.type
        if isinstance(ann, lt.TileAnnotation):
            if (
                not isinstance(ty, TileType)
                or ty.shape != ann.shape
                or ty.dtype is not ann.dtype
                or (ann.memory is not None and ann.memory is not ty.memory)
            ):
                raise self.err(f"{name!r} is annotated {_ann_str(ann)} but the value is {ty}", ann_node)
        elif isinstance(ann, lt.TensorAnnotation):
            if (
                not isinstance(ty, TensorType)
                or (ann.dtype is not None and ann.dtype is not ty.dtype)
                or (ann.shape is not None and tuple(ann.shape) != tuple(ty.shape))
            ):
                raise self.err(f"{name!r} is annotated {_ann_str(ann)} but the value is {ty}", ann_node)
        elif isinstance(ann, (lt.ScalarAnnotation, DataType)) and not isinstance(ty, ScalarType):
            raise self.err(f"{name!r} is annotated as a scalar but the value is {ty}", ann_node)

    def tensor_write(self, target: ast.Subscript, value_node: ast.expr, s: ast.stmt) -> Stmt:
        span = self.src.span(s)
        if not isinstance(target.value, ast.Name):
            raise self.err("write through a tensor name: out[:] = ...", target)
        tvar = self.lookup(target.value.id, target.value)
        if not isinstance(tvar, Var) or not isinstance(tvar.type, TensorType):
            raise self.err(
                f"{target.value.id!r} is not a tensor; only tensors can be written with [...]", target
            )
        tt = tvar.type
        offsets, extents = self.window(tvar, target)
        value = self.expr(value_node)
        vt = value.type
        if isinstance(vt, TileType):
            call = self.make_op("store", [value, tuple(offsets), tvar], {}, value_node)
            var = Var(tvar.name, tvar.type, self.src.span(target))
            self.st.env[tvar.name] = var
            return Assign(var, call, span)
        if not isinstance(vt, TensorType):
            raise self.err(
                f"the value written to {tvar.name!r} must be a tensor or tile expression, got {vt}",
                value_node,
            )
        if tuple(vt.shape) != tuple(extents):
            raise self.err(
                f"shape mismatch: the window of {tvar.name!r} is [{', '.join(map(str, extents))}] "
                f"but the value is [{', '.join(map(str, vt.shape))}]",
                s,
            )
        if vt.dtype is not tt.dtype:
            raise self.err(
                f"dtype mismatch: {tvar.name!r} is {tt.dtype.value} but the value is {vt.dtype.value}; use pl.cast",
                value_node,
            )
        if not self.st.in_scope and not self.st.func_type.is_kernel:
            if self.st.func_type is not FunctionType.Opaque:
                raise self.err(
                    "tensor computations run on a core: put this inside `with pl.at(level=pl.Level.CORE_GROUP):`",
                    s,
                )
            self.st.outside_node = self.st.outside_node or (s, "store")
        self.st.saw_tile = True
        if isinstance(value, Call) and value.op == "tensor.view":
            # `out[...] = a[i:i + 16, :]` is lowered as `v = a[i:i + 16, :]; out[...] = v`
            self.hoisted += 1
            view = Var(f"{self.prefix}_view{self.hoisted}", vt, self.src.span(value_node))
            self.pending.append(Assign(view, value, self.src.span(value_node)))
            value = view
        return TensorWrite(tvar, tuple(offsets), value, span)

    def window(self, tvar: Var, target: ast.Subscript) -> tuple[list[Expr], list[Any]]:
        """Offsets and extents of ``t[a:b, ...]`` (missing dims are whole)."""
        tt = tvar.type
        assert isinstance(tt, TensorType)
        items = list(target.slice.elts) if isinstance(target.slice, ast.Tuple) else [target.slice]
        if len(items) > len(tt.shape):
            raise self.err(f"{len(items)} indices for a rank-{len(tt.shape)} tensor", target.slice)
        offsets: list[Expr] = []
        extents: list[Any] = []
        for axis in range(len(tt.shape)):
            item = items[axis] if axis < len(items) else None
            dim = tt.shape[axis]
            if item is None or (isinstance(item, ast.Slice) and item.lower is None and item.upper is None):
                offsets.append(Const(0, INDEX))
                extents.append(dim)
                continue
            if not isinstance(item, ast.Slice) or item.step is not None:
                raise self.err("tensor windows are written with slices such as t[0:64, :]", item)
            lo = self.expr(item.lower) if item.lower is not None else Const(0, INDEX)
            if item.upper is None:
                if not isinstance(lo, Const) or not isinstance(dim, int):
                    hint = self.runtime_hint(lo, "its start")
                    raise self.err(f"an open-ended slice needs a constant start and a static dim{hint}", item)
                extents.append(dim - int(lo.value))
            else:
                hi = self.expr(item.upper)
                ext = extent(hi, lo)
                if not isinstance(ext, Const):
                    hint = self.runtime_hint(ext, "the extent")
                    raise self.err(f"a slice's extent (stop - start) must be a constant{hint}", item)
                extents.append(int(ext.value))
            offsets.append(lo)
        return offsets, extents

    def tensor_view(self, node: ast.Subscript) -> Expr:
        base = self.expr(node.value)
        if not isinstance(base, Var) or not isinstance(base.type, TensorType):
            raise self.err(f"only tensors can be windowed with [...], got {base.type}", node)
        offsets, extents = self.window(base, node)
        if any(not isinstance(e, int) for e in extents):
            raise self.err("a tensor window needs static extents; slice the dynamic dims explicitly", node)
        static = [o.value if isinstance(o, Const) else None for o in offsets]
        attrs = {"shape": tuple(extents), "static_offsets": static}
        return self.make_op("view", [base, tuple(offsets)], attrs, node)

    def for_stmt(self, s: ast.For) -> list[Stmt]:
        if s.orelse:
            raise self.err("for ... else is not supported", s)
        it = s.iter
        if not isinstance(it, ast.Call) or self.dsl_kind(it.func) != "range":
            raise self.err("kernel loops iterate over pl.range(...) (or range(...))", it)
        init_node = None
        for kw in it.keywords:
            if kw.arg != "init_values":
                raise self.err(
                    f"pl.range() got an unsupported keyword {kw.arg!r}; use pl.range(start, stop, step[, init_values=(...)])",
                    kw,
                )
            init_node = kw.value
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
        try:
            body, _ = self.block(s.body)
        finally:
            self.carried.pop()
            renames = self.yield_targets.pop()
        # names first bound inside the loop are local to it
        after = self.st.env
        self.st.env = {k: v for k, v in after.items() if k in saved}
        for k in self.st.env:
            if isinstance(after[k], Var) and after[k] is not saved[k]:
                self.st.env[k] = after[k]
        for name, lhs in renames.items():  # `x_next = pl.yield_(...)` names the value after the loop
            self.st.env[lhs] = self.st.env[name]
        return [*pre, For(var, start, stop, step, tuple(body), span=self.src.span(s))]

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
        return [If(cond, tuple(then), tuple(els), span=self.src.span(s))]

    def with_stmt(self, s: ast.With) -> Stmt:
        if len(s.items) != 1:
            raise self.err("one pl.at(...) per with statement", s)
        item = s.items[0]
        call = item.context_expr
        if not isinstance(call, ast.Call) or self.dsl_kind(call.func) != "at":
            raise self.err("kernels only use `with pl.at(level=pl.Level.CORE_GROUP, ...)`", call)
        if self.st.in_scope:
            raise self.err("pl.at scopes do not nest", s)
        if self.st.func_type.is_kernel:
            raise self.err(
                "pl.at opens a kernel; this function already is one, so write the body directly", s
            )
        from pypto.language.dsl import _at_signature

        bound = self.bind(_at_signature, "pl.at", call)
        level = self.static_value(bound.get("level", Level.CORE_GROUP), "level", call)
        if not isinstance(level, Level):
            raise self.err(f"pl.at: level must be a pl.Level, got {level!r}", call)
        hint = self.static_value(bound.get("name_hint"), "name_hint", call)
        if hint is not None and (not isinstance(hint, str) or not hint.isidentifier()):
            raise self.err(f"pl.at: name_hint must be an identifier string, got {hint!r}", call)
        deps: list[Expr] = []
        dnode = bound.get("deps")
        if dnode is not None and not (isinstance(dnode, ast.Constant) and dnode.value is None):
            if not isinstance(dnode, (ast.List, ast.Tuple)):
                raise self.err("pl.at: deps must be a list of task ids: deps=[tid]", dnode)
            for d in dnode.elts:
                e = self.expr(d)
                if not isinstance(e.type, TaskIdType):
                    raise self.err(f"pl.at: deps entries must be task ids bound by `as`, got {e.type}", d)
                deps.append(e)
        task: Var | None = None
        if item.optional_vars is not None and not isinstance(item.optional_vars, ast.Name):
            raise self.err("bind the task id to one name: `as tid`", item.optional_vars)
        self.st.in_scope = True
        self.st.saw_scope = True
        try:
            body, _ = self.block(s.body)
        finally:
            self.st.in_scope = False
        if item.optional_vars is not None:
            assert isinstance(item.optional_vars, ast.Name)
            task = Var(self.prefix + item.optional_vars.id, TaskIdType(), self.src.span(item.optional_vars))
            self.st.env[task.name] = task
        return Scope(level, hint, tuple(deps), task, tuple(body), self.src.span(s))

    def return_stmt(self, s: ast.Return) -> Return:
        if s.value is None:
            return Return((), self.src.span(s))
        nodes = s.value.elts if isinstance(s.value, ast.Tuple) else [s.value]
        values = []
        for n in nodes:
            e = self.expr(n)
            if not isinstance(e.type, (TensorType, ScalarType)):
                raise self.err(f"a function returns tensors (or scalars), not {e.type}", n)
            values.append(e)
        return Return(tuple(values), self.src.span(s))

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
        if isinstance(value, bool):
            return Const(value, DataType.BOOL, span)
        if isinstance(value, int):
            return Const(value, INDEX, span)
        if isinstance(value, float):
            return Const(value, DataType.FP32, span)
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
                raise self.err(f"{ast.unparse(node.value)} has no attribute {node.attr!r}", node) from None
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
            if isinstance(v, bool):
                return Const(v, DataType.BOOL, span)
            if isinstance(v, int):
                return Const(v, INDEX, span)
            if isinstance(v, float):
                return Const(v, DataType.FP32, span)
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
            raise self.err(f"unary operator {type(node.op).__name__} is not supported", node)
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
            return fold(opname, lhs, rhs, span)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.err("chained comparisons are not supported; compare two values", node)
            cmp = _COMPARE.get(type(node.ops[0]))
            if cmp is None:
                raise self.err(f"comparison {type(node.ops[0]).__name__} is not supported in kernels", node)
            a = self.scalar(node.left, "a comparison operand")
            b = self.scalar(node.comparators[0], "a comparison operand")
            return compare(cmp, a, b, span)
        if isinstance(node, ast.Subscript):
            return self.tensor_view(node)
        what = type(node).__name__
        raise self.err(f"unsupported expression in a kernel: {what}", node)

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

    def call(self, node: ast.Call) -> Expr:
        target = self.resolve(node.func)
        if not isinstance(target, _Static):
            raise self.err(f"{ast.unparse(node.func)} is not callable in a kernel", node.func)
        obj = target.value
        opname = getattr(obj, "__pypto_op__", None)
        if opname is not None:
            return self.op_call(opname, obj, node)
        if getattr(obj, "__pypto_dsl__", None) is not None:
            raise self.err(f"pl.{obj.__pypto_dsl__} is used in a for/with statement, not as a value", node)
        if obj in (builtins.min, builtins.max):
            if len(node.args) != 2 or node.keywords:
                raise self.err(f"{obj.__name__}() in kernels takes two scalars", node)
            a, b = self.scalar(node.args[0], obj.__name__), self.scalar(node.args[1], obj.__name__)
            return fold(obj.__name__, a, b, self.src.span(node))
        return self.func_call(obj, node)

    def inline_call(self, obj: Any, node: ast.Call) -> Expr:
        """Splice a ``@pl.jit.inline`` helper's body at the call; returns its return value."""
        if node.keywords:
            raise self.err("inline helpers take positional arguments only", node.keywords[0])
        args = [self.expr(a) for a in node.args]
        src = SourceInfo.of(obj.fn)
        names = [a.arg for a in src.tree.args.args]
        if len(names) != len(args):
            raise self.err(
                f"{obj.fn.__name__}({', '.join(names)}) takes {len(names)} arguments, got {len(args)}", node
            )
        body = list(src.tree.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        last = body[-1] if body else None
        ret = last if isinstance(last, ast.Return) else None
        if ret is not None:
            body.pop()
        saved = (self.src, self.st.env, self.st.multi, self.prefix)
        self.inlined += 1
        self.src = src
        self.st.env = dict(zip(names, args, strict=True))
        self.st.multi = _rebound_names(src.tree) | set(names)
        self.prefix = f"{saved[3]}{obj.fn.__name__.strip('_')}{self.inlined}_"
        try:
            stmts: list[Stmt] = []
            for s in body:
                if isinstance(s, ast.Return):
                    raise self.err("an inline helper returns once, at the end", s)
                outer, self.pending = self.pending, []
                try:
                    produced = self.stmt(s)
                finally:
                    nested, self.pending = self.pending, outer
                stmts.extend(nested)
                stmts.extend(produced)
            if ret is None or ret.value is None:
                value: Expr = Const(0, INDEX)
                result_type: Type | None = None
            else:
                if isinstance(ret.value, ast.Tuple):
                    raise self.err("an inline helper returns one value", ret)
                value = self.expr(ret.value)
                result_type = value.type
        finally:
            self.src, self.st.env, self.st.multi, self.prefix = saved
        self.pending.extend(stmts)
        if result_type is None:
            return Const(0, INDEX)
        return value

    def func_call(self, obj: Any, node: ast.Call) -> Expr:
        if getattr(obj, "__pypto_inline__", False):
            return self.inline_call(obj, node)
        span = self.src.span(node)
        if node.keywords:
            raise self.err("kernel calls take positional arguments only", node.keywords[0])
        args = [self.expr(a) for a in node.args]
        if self.st.in_scope or self.st.func_type.is_kernel:
            raise self.err(
                "a kernel cannot call another function; call kernels from the orchestration (outside pl.at)",
                node,
            )
        if isinstance(obj, _SelfMethod):
            target: Any = obj
        else:
            target = obj
        fn = self.ctx.resolve_call(target, [a.type for a in args], span)
        if fn is None:
            raise self.err(
                f"{ast.unparse(node.func)} is not a kernel: call @pl.jit.incore / @pl.function kernels or pl.* ops",
                node.func,
            )
        if len(args) != len(fn.params):
            names = ", ".join(p.name for p in fn.params)
            raise self.err(f"{fn.name}({names}) takes {len(fn.params)} arguments, got {len(args)}", node)
        for p, a in zip(fn.params, args, strict=True):
            if p.var.type != a.type and not _compatible(p.var.type, a.type):
                raise self.err(f"{fn.name}: argument {p.name!r} expects {p.var.type}, got {a.type}", node)
        self.st.saw_call = True
        rtype: Type = fn.returns[0] if len(fn.returns) == 1 else TupleType(fn.returns)
        return CallFunc(fn.name, tuple(args), rtype, span=span)

    # ------------------------------------------------------------------ ops

    def op_call(self, opname: str, obj: Any, node: ast.Call) -> Expr:
        bound = self.bind(obj.__wrapped__, f"pl.{opname}", node)
        return OP_BUILDERS.get(opname, build_generic)(self, opname, bound, node)

    def make_op(self, opname: str, args: list[Arg], attrs: dict[str, Any], node: ast.AST) -> Call:
        """Dispatch a unified op to its tile or tensor form, check it and build the Call."""
        first = args[0].type if args and not isinstance(args[0], tuple) else None
        if opname in ("create_tile", "full") or (opname == "read" and isinstance(first, TileType)):
            kind = "tile"
        elif opname in ("create_tensor", "dim", "read", "view", "write"):
            kind = "tensor"
        elif opname == "cast" and isinstance(first, ScalarType):
            kind = "scalar"
        elif opname == "load" or isinstance(first, TileType):
            kind = "tile"
        elif isinstance(first, TensorType):
            kind = "tensor"
        else:
            raise self.err(f"pl.{opname}: the first operand must be a tile or a tensor, got {first}", node)
        full = {"create_tile": "tile.create", "create_tensor": "tensor.create"}.get(
            opname, f"{kind}.{opname}"
        )
        if full not in op_registry.OPS:
            raise self.err(
                f"pl.{opname} works on {'tensors' if kind == 'tile' else 'tiles'}, not {kind}s"
                + ("; pl.load the tensor into a tile first" if kind == "tensor" else ""),
                node,
            )
        types: list[Type] = [a.type for a in args if not isinstance(a, tuple)]
        try:
            rtype = op_registry.infer(full, types, attrs)
        except op_registry.OpError as exc:
            raise self.err(str(exc), node) from None
        # a window (tensor.view) is a descriptor in the orchestration and offsets in a kernel
        is_kernel_work = full not in (
            "tensor.create",
            "tensor.dim",
            "tensor.read",
            "tensor.write",
            "scalar.cast",
            "tensor.view",
        )
        if is_kernel_work:
            outside = not self.st.in_scope and not self.st.func_type.is_kernel
            if outside and self.st.func_type is FunctionType.Opaque:
                self.st.outside_node = self.st.outside_node or (node, opname)
            elif outside:
                raise self.err(
                    f"pl.{opname} runs on a core: put it inside `with pl.at(level=pl.Level.CORE_GROUP):` "
                    "or in a @pl.jit.incore function",
                    node,
                )
            self.st.saw_tile = True
        elif full == "tensor.create" and self.st.in_scope:
            raise self.err(
                "pl.create_tensor allocates device memory from the orchestration; call it outside pl.at", node
            )
        clean = {k: v for k, v in attrs.items() if k != "static_offsets"}
        return Call(full, tuple(args), tuple(sorted(clean.items())), rtype, self.src.span(node))

    def offsets(self, node: Any, what: str) -> tuple[Expr, ...]:
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.err(f"{what} must be a list such as [0, 0]", node)
        return tuple(self.scalar(e, what) for e in node.elts)

    def shape(self, node: Any, what: str) -> tuple[int, ...]:
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.err(f"{what} must be a list of constants such as [64, 64]", node)
        out = []
        for e in node.elts:
            v = self.expr(e)
            if not isinstance(v, Const) or isinstance(v.value, bool) or not isinstance(v.value, int):
                hint = self.runtime_hint(v, what)
                raise self.err(f"{what} entries must be integer constants, got {ast.unparse(e)}{hint}", e)
            out.append(int(v.value))
        return tuple(out)

    def dtype(self, node: Any, what: str) -> DataType:
        v = self.static_value(node, what, node)
        try:
            return DataType.parse(v, what=what)
        except ValueError as exc:
            raise self.err(str(exc), node) from None

    def memory(self, node: Any, what: str) -> MemorySpace:
        v = self.static_value(node, what, node) if isinstance(node, ast.AST) else node
        if not isinstance(v, MemorySpace):
            raise self.err(
                f"{what} must be a pl.MemorySpace, got {v!r}",
                node if isinstance(node, ast.AST) else ast.Pass(),
            )
        return v


def _rebound_names(tree: ast.FunctionDef) -> set[str]:
    """Names bound more than once in a function (parameters count once)."""
    counts: dict[str, int] = {a.arg: 1 for a in tree.args.args}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)):
            targets = [node.target]
            if isinstance(node, (ast.AugAssign, ast.For)):
                targets = [node.target, node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    counts[n.id] = counts.get(n.id, 0) + 1
    return {k for k, v in counts.items() if v > 1}


@dataclass(frozen=True)
class _SelfMethod:
    """``self.<name>`` inside a ``@pl.program`` class: a call of another method."""

    name: str


def _compatible(param: Type, arg: Type) -> bool:
    if isinstance(param, TensorType) and isinstance(arg, TensorType):
        if param.dtype is not arg.dtype or len(param.shape) != len(arg.shape):
            return False
        return all(
            isinstance(p, DynDim) or isinstance(a, DynDim) or p == a
            for p, a in zip(param.shape, arg.shape, strict=True)
        )
    return isinstance(param, ScalarType) and isinstance(arg, ScalarType)


def _ann_str(ann: Any) -> str:
    if isinstance(ann, lt.TileAnnotation):
        mem = f", {ann.memory.value}" if ann.memory else ""
        return f"Tile[{list(ann.shape)}, {ann.dtype.value}{mem}]"
    if isinstance(ann, lt.TensorAnnotation):
        return f"Tensor[{list(ann.shape or [])}, {ann.dtype.value if ann.dtype else '?'}]"
    return repr(ann)


_AUG = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv"}
_COMPARE = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}


_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Div: "truediv",
}
