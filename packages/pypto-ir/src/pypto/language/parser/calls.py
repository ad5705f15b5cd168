"""The parser's calls: ops, kernels, inlined helpers, and their static arguments."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pypto.ir import ops as op_registry
from pypto.ir.codegen.block_group import SPMD_PARAMS
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.nodes import (
    Arg,
    Assign,
    Call,
    CallFunc,
    Const,
    Expr,
    Stmt,
    Var,
)
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import (
    Dim,
    DynDim,
    FunctionType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
    Type,
)
from pypto.language.fold import INDEX, fold
from pypto.language.op_builders import OP_BUILDERS, build_generic
from pypto.language.parser.common import (
    SourceInfo,
    _compatible,
    _rebound_names,
    _SelfMethod,
    _Static,
    param_annotations,
    tile_shape,
)
from pypto.language.parser.conversions import tensor_operands
from pypto.language.parser.directives import DIRECTIVES, _Directives
from pypto.language.suggest import foreign_library, instead_of
from pypto.language.typing import DirectionAnnotation, TileAnnotation

_SCALAR_ARITHMETIC = {"add": "add", "sub": "sub", "mul": "mul", "div": "truediv"}
"""The ops that, given two scalars, are scalar arithmetic (the operator's result)."""

_MIXABLE = ("element-wise", "broadcast", "matmul")
"""Op groups whose tile and tensor operands may be mixed: the op is then tensor-level, and
tensor_to_tile uses each tile as it is."""


class _Calls(_Directives):
    if TYPE_CHECKING:  # defined by the launches part (pl.split_aiv lanes)

        def lane_call(self, what: str, node: ast.Call) -> Expr: ...

    def call(self, node: ast.Call) -> Expr:
        target = self.resolve(node.func)
        if not isinstance(target, _Static):
            raise self.err(f"{ast.unparse(node.func)} is not callable in a kernel", node.func)
        obj = target.value
        opname = getattr(obj, "__pypto_op__", None)
        if opname is not None:
            return self.op_call(opname, obj, node)
        block = getattr(obj, "__pypto_block__", None)
        if block is not None:
            return self.block_query(block, node)
        if getattr(obj, "__pypto_alloc__", False):
            raise self.err(
                "pl.tile.alloc(...) is bound to a name of its own: `mem: pl.Ptr = pl.tile.alloc(space, size)`",
                node,
            )
        lane = getattr(obj, "__pypto_lane__", None)
        if lane is not None:
            return self.lane_call(lane, node)
        dsl = getattr(obj, "__pypto_dsl__", None)
        if dsl in DIRECTIVES:
            raise self.err(f"pl.{dsl} is a statement: write it on a line of its own, not as a value", node)
        if dsl is not None:
            raise self.err(f"pl.{dsl} is used in a for/with statement, not as a value", node)
        scalar_fn = "pl." + obj.__pypto_scalar__ if hasattr(obj, "__pypto_scalar__") else None
        if obj in (builtins.min, builtins.max) or scalar_fn is not None:
            shown = scalar_fn or f"{obj.__name__}()"
            if len(node.args) != 2 or node.keywords:
                raise self.err(f"{shown} in kernels takes two scalars", node)
            a, b = self.scalar(node.args[0], shown), self.scalar(node.args[1], shown)
            return fold(obj.__name__, a, b, self.src.span(node))
        library = foreign_library(obj)
        if library is not None:
            raise self.err(self._foreign_call_message(obj, library, node), node.func)
        return self.func_call(obj, node)

    def block_query(self, which: int, node: ast.Call) -> Expr:
        """``pl.tile.get_block_idx()`` / ``get_block_num()`` in a kernel: its hidden trailing
        SPMD parameters (index, count), made at first use."""
        what = "pl.tile.get_block_idx" if which == 0 else "pl.tile.get_block_num"
        if node.args or node.keywords:
            raise self.err(f"{what}() takes no arguments", node)
        if not self.st.func_type.is_kernel:
            if self.st.spmd is not None:  # an inline pl.spmd body, or a dispatch body's block
                var, n = self.st.spmd
                return var if which == 0 else Const(n, INDEX)
            raise self.err(f"{what}() is read in a kernel launched by pl.spmd, not in an orchestration", node)
        return self.spmd_params(node)[which]

    def spmd_params(self, node: ast.AST) -> list[Var]:
        """The kernel's hidden SPMD parameters (block index, block count), made at first use."""
        if not self.st.block_vars:
            self.st.block_vars = [
                Var(SPMD_PARAMS[0], ScalarType(INDEX), self.src.span(node)),
                Var(SPMD_PARAMS[1], ScalarType(INDEX), self.src.span(node)),
            ]
        return self.st.block_vars

    def _foreign_call_message(self, obj: Any, library: str, node: ast.Call) -> str:
        import pypto.language as pl

        spelled = ast.unparse(node.func)
        name = str(getattr(obj, "__name__", spelled.rsplit(".", 1)[-1]))
        if name in pl.__all__ and getattr(pl, name, None) is not None and name not in ("range", "slice"):
            hint = f"use pl.{name}"
        else:
            hint = instead_of(name, pl.__all__) or "the pl ops are listed by help(pl)"
        return f"{spelled}: {library} functions run on the host and cannot be called in a kernel; {hint}"

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
        for (pname, ann, _), arg, arg_node in zip(
            param_annotations(src, False), args, node.args, strict=True
        ):
            if isinstance(ann, DirectionAnnotation) and ann.direction is not ParamDirection.IN:
                self.st.helper_written.add(id(arg))
            if isinstance(ann, TileAnnotation):
                want = TileType(tile_shape(ann.shape), ann.dtype, ann.memory or MemorySpace.Vec)
                at = arg.type
                if (
                    not isinstance(at, TileType)
                    or at.shape != want.shape
                    or at.dtype is not want.dtype
                    or (ann.memory is not None and at.memory is not ann.memory)
                ):
                    raise self.err(
                        f"{obj.fn.__name__}: parameter {pname!r} is annotated {want} but the argument is {at}",
                        arg_node,
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
            # a parameter the helper rebinds (an Out tensor it assembles into, in a loop or a
            # scope) gets a name of its own in the splice, starting as the argument: the SSA
            # pass then carries it through the loops and scopes that rebind it
            rebound = _rebound_names(src.tree)
            for name, arg in zip(names, args, strict=True):
                if name in rebound and isinstance(arg, Var):
                    var = Var(self.prefix + name, arg.type, arg.span)
                    stmts.append(Assign(var, arg, arg.span))
                    self.st.env[name] = var
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

    def call_attrs(self, node: ast.expr, nargs: int) -> None:
        """A kernel call's ``attrs={"arg_directions": [pl.adir.<name>, ...]}`` (upstream's printed
        form): one known marker per argument. The directions are derived from the kernel's
        parameters here (call_directions pass), so the keyword is checked, not stored."""
        from pypto.language.arg_directions import ADIR_NAMES

        if not isinstance(node, ast.Dict) or any(k is None for k in node.keys):
            raise self.err('attrs= of a kernel call is a dict: attrs={"arg_directions": [...]}', node)
        for key, value in zip(node.keys, node.values, strict=True):
            assert key is not None  # a **mapping entry was refused above
            name = self.static_value(key, "kernel call attrs key", key)
            if name == "arg_direction_overrides":
                self.direction_overrides(value, nargs)
                continue
            if name != "arg_directions":
                raise self.err(
                    f'kernel call attrs: only "arg_directions" and "arg_direction_overrides" are taken, got {name!r}',
                    key,
                )
            if not isinstance(value, (ast.List, ast.Tuple)):
                raise self.err("arg_directions is a list of pl.adir markers, one per argument", value)
            if len(value.elts) != nargs:
                raise self.err(
                    f"arg_directions names {len(value.elts)} direction(s) for {nargs} argument(s)", value
                )
            for e in value.elts:
                marker = self.static_value(e, "arg_directions entry", e)
                if marker not in ADIR_NAMES:
                    raise self.err(
                        f"arg_directions entries are pl.adir.{{{', '.join(ADIR_NAMES)}}}, got {ast.unparse(e)}",
                        e,
                    )

    def direction_overrides(self, node: ast.expr, nargs: int) -> None:
        """``attrs={"arg_direction_overrides": [i, ...]}`` (upstream's printed form of ``pl.no_dep``
        arguments): distinct argument positions; checked, not stored, as ``pl.no_dep`` is."""
        seen: list[int] = []
        at = self.static_value(node, "arg_direction_overrides", node)
        if not isinstance(at, (list, tuple)):
            raise self.err("arg_direction_overrides is a list of argument positions: [0, 2]", node)
        for i in at:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < nargs or i in seen:
                raise self.err(
                    f"arg_direction_overrides: {i!r} is not a distinct argument position 0..{nargs - 1}", node
                )
            seen.append(i)

    def no_dep_arg(self, a: ast.expr) -> ast.expr:
        """A kernel call's argument ``pl.no_dep(t)``: the tensor ``t``, whose dependency tracking
        the author waives. A hint; the simulated runtime keeps every dependency."""
        if not (isinstance(a, ast.Call) and self.dsl_kind(a.func) == "no_dep"):
            return a
        if len(a.args) != 1 or a.keywords or not isinstance(a.args[0], ast.Name):
            raise self.err("pl.no_dep(t) takes one tensor name", a)
        held = self.st.env.get(a.args[0].id)
        if not (isinstance(held, Var) and isinstance(held.type, TensorType)):
            raise self.err(f"pl.no_dep(t): {a.args[0].id!r} must be a tensor", a.args[0])
        return a.args[0]

    def func_call(self, obj: Any, node: ast.Call) -> Expr:
        if getattr(obj, "__pypto_inline__", False):
            return self.inline_call(obj, node)
        span = self.src.span(node)
        for kw in node.keywords:
            if kw.arg != "attrs":
                raise self.err(
                    "kernel calls take positional arguments only (and upstream's printed "
                    '`attrs={"arg_directions": [pl.adir...]}`)',
                    kw,
                )
            self.call_attrs(kw.value, len(node.args))
        args = [self.expr(self.no_dep_arg(a)) for a in node.args]
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
        tiles = [p.name for p in fn.params if isinstance(p.var.type, TileType)]
        if not tiles and any(isinstance(t, TileType) for t in fn.returns):
            raise self.err(
                f"{fn.name} returns a tile: a tile lives in one core's buffer, so a kernel called from the "
                "orchestration returns the tensors it wrote; pl.store the tile into a pl.Out tensor",
                node,
            )
        if tiles:
            raise self.err(
                f"{fn.name} takes tile parameter {tiles[0]!r}: a tile lives in one core's buffer, so a "
                "kernel called from the orchestration takes tensors; pass a tensor and pl.load it in the "
                "kernel, or make it a @pl.jit.inline helper called inside the kernel",
                node,
            )
        hidden = [p for p in fn.params if p.name in SPMD_PARAMS]
        shown = [p for p in fn.params if p.name not in SPMD_PARAMS]
        if len(args) != len(shown):
            names = ", ".join(p.name for p in shown)
            raise self.err(f"{fn.name}({names}) takes {len(shown)} arguments, got {len(args)}", node)
        if hidden:  # an SPMD kernel: its block index and count, or block 0 of 1 outside pl.spmd
            spmd = self.st.spmd
            args += (
                [spmd[0], Const(spmd[1], INDEX)] if spmd is not None else [Const(0, INDEX), Const(1, INDEX)]
            )
        for p, a in zip(fn.params, args, strict=True):
            if p.var.type != a.type and not _compatible(p.var.type, a.type):
                raise self.err(f"{fn.name}: argument {p.name!r} expects {p.var.type}, got {a.type}", node)
        self.st.saw_call = True
        try:
            rtype: Type = _specialize(
                fn.returns[0] if len(fn.returns) == 1 else TupleType(fn.returns), fn.params, args
            )
        except ValueError as exc:
            raise self.err(f"{fn.name}: {exc}", node) from None
        dumps = dump_args(args, self.st.dump_tags)
        return CallFunc(fn.name, tuple(args), rtype, span=span, dumps=dumps)

    # ------------------------------------------------------------------ ops

    def op_call(self, opname: str, obj: Any, node: ast.Call) -> Expr:
        bound = self.bind(obj.__wrapped__, op_registry.LANGUAGE[opname].spelled, node)
        return OP_BUILDERS.get(opname, build_generic)(self, opname, bound, node)

    def not_planes(self, opname: str, args: list[Any], node: ast.AST) -> None:
        """Refuse a ``pl.batch_matmul`` result (held as its planes) as an operand of ``opname``."""
        if any(self.st.planes_of(a) is not None for a in args):
            raise self.err(
                f"pl.{opname}: a pl.batch_matmul result is held as its [M, N] Acc planes; store it "
                "with pl.store, or take a plane with t[i]",
                node,
            )

    def make_op(self, opname: str, args: list[Arg], attrs: dict[str, Any], node: ast.AST) -> Call:
        """Dispatch a ``pl`` op to the IR form its first operand selects (the op table's
        ``forms``/``default``), check it and build the Call."""
        self.not_planes(opname, args, node)
        first = args[0].type if args and not isinstance(args[0], tuple) else None
        second = args[1] if len(args) == 2 and not isinstance(args[1], tuple) else None
        if (
            opname in _SCALAR_ARITHMETIC
            and isinstance(first, ScalarType)
            and second is not None
            and isinstance(second.type, ScalarType)
            and not attrs
        ):
            # pl.add(a, b) of two scalars is a + b (likewise sub, mul, div as /)
            return fold(_SCALAR_ARITHMETIC[opname], args[0], second, self.src.span(node))  # type: ignore[arg-type, return-value]
        opname, args = tensor_operands(self, opname, args, node)  # upstream's promotion and broadcast
        if args and not isinstance(args[0], tuple):
            first = args[0].type
        lang = op_registry.LANGUAGE[opname]
        if (
            isinstance(first, TileType)
            and lang.group in _MIXABLE
            and "tensor" in lang.forms
            and any(isinstance(a.type, TensorType) for a in args if not isinstance(a, tuple))
        ):
            first = TensorType(first.shape, first.dtype)  # a tensor operand makes it tensor-level
        full = op_registry.op_for(lang, first)
        if full is None:
            if not isinstance(first, (TileType, TensorType)):
                raise self.err(
                    f"{lang.spelled}: the first operand must be a tile or a tensor, got {first}", node
                )
            kind = "tile" if isinstance(first, TileType) else "tensor"
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
        is_kernel_work = op_registry.OPS[full].on_core
        if is_kernel_work:
            outside = not self.st.in_scope and not self.st.func_type.is_kernel
            if outside and self.st.func_type is FunctionType.Opaque:
                self.st.outside_node = self.st.outside_node or (node, opname)
            elif outside:
                raise self.err(
                    f"{op_registry.LANGUAGE[opname].spelled} runs on a core: put it inside "
                    "`with pl.at(level=pl.Level.CORE_GROUP):` "
                    "or in a @pl.jit.incore function",
                    node,
                )
            self.st.saw_tile = True
        clean = {k: v for k, v in attrs.items() if k not in ("static_offsets", "static_valid")}
        return Call(full, tuple(args), tuple(sorted(clean.items())), rtype, self.src.span(node))

    def list_literal(self, node: Any) -> Any:
        """``node`` itself, or, for a name (or attribute) bound outside the kernel to a list or
        tuple of ints (``OFFSETS = [0, 0]``), that list as a literal at ``node``."""
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return node
        try:
            found = self.resolve(node)
        except KernelError:
            return node
        value = found.value if isinstance(found, _Static) else None
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            return node
        elts: list[ast.expr] = [ast.copy_location(ast.Constant(value=int(v)), node) for v in value]
        return ast.copy_location(ast.List(elts=elts, ctx=ast.Load()), node)

    def offsets(self, node: Any, what: str) -> tuple[Expr, ...]:
        node = self.list_literal(node)
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.err(f"{what} must be a list such as [0, 0]", node)
        return tuple(self.scalar(e, what) for e in node.elts)

    def shape(self, node: Any, what: str) -> tuple[int, ...]:
        node = self.list_literal(node)
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

    def extents(self, node: Any, what: str) -> tuple[tuple[Dim, ...], tuple[Expr, ...] | None]:
        """A tensor shape whose entries may be run-time index scalars (orchestration only):
        (the shape, an entry that is not a constant as a ``DynDim`` named by its source text;
        the extents as scalar expressions, or None when every entry is a constant)."""
        node = self.list_literal(node)
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.err(f"{what} must be a list such as [64, 64] or [rows, 64]", node)
        shape: list[Dim] = []
        exprs: list[Expr] = []
        dynamic = False
        for e in node.elts:
            v = self.expr(e)
            if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
                shape.append(int(v.value))
                exprs.append(v)
                continue
            if self.st.in_scope or self.st.func_type.is_kernel:
                hint = self.runtime_hint(v, what)
                raise self.err(
                    f"{what} entries must be integer constants in a kernel, got {ast.unparse(e)}{hint}", e
                )
            scalar = self.scalar(e, what)
            if not isinstance(scalar.type, ScalarType) or (
                scalar.type.dtype.is_float or scalar.type.dtype is DataType.BOOL
            ):
                raise self.err(
                    f"{what} entries must be integers, got {ast.unparse(e)} of type {scalar.type}", e
                )
            shape.append(DynDim(ast.unparse(e)))
            exprs.append(scalar)
            dynamic = True
        return tuple(shape), (tuple(exprs) if dynamic else None)

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


def dump_args(args: list[Expr] | tuple[Expr, ...], marked: Sequence[Expr]) -> tuple[Expr, ...]:
    """The arguments of a kernel call that are marked for a tensor dump, once each, in argument
    order (a marked tensor is the same value, not just the same name)."""
    out: list[Expr] = []
    for a in args:
        if any(a is m for m in marked) and not any(a is o for o in out):
            out.append(a)
    return tuple(out)


def _specialize(rtype: Type, params: Sequence[Any], args: Sequence[Expr]) -> Type:
    """A kernel's result type at one call: each dynamic dim that a tensor parameter names is the
    argument's dim there (a kernel of ``[M, N]`` called with ``[128, 128]`` tensors returns
    ``[128, 128]``); a dim no argument fixes stays dynamic. Raises ValueError when two arguments
    give one dynamic dim different sizes."""
    bound: dict[str, Dim] = {}
    for p, a in zip(params, args, strict=True):
        pt, at = p.var.type, a.type
        if isinstance(pt, TensorType) and isinstance(at, TensorType) and len(pt.shape) == len(at.shape):
            for d, got in zip(pt.shape, at.shape, strict=True):
                if (
                    isinstance(d, DynDim)
                    and not isinstance(got, DynDim)
                    and bound.setdefault(d.name, got) != got
                ):
                    raise ValueError(
                        f"conflicting bindings of dynamic dim {d.name!r}: {bound[d.name]} and {got} "
                        f"(argument {p.var.name!r})"
                    )
    if not bound:
        return rtype

    def one(t: Type) -> Type:
        if isinstance(t, TensorType):
            shape = tuple(bound.get(d.name, d) if isinstance(d, DynDim) else d for d in t.shape)
            return TensorType(shape, t.dtype, t.layout)
        return t

    if isinstance(rtype, TupleType):
        return TupleType(tuple(one(t) for t in rtype.items))
    return one(rtype)
