"""Source positions, parse contexts, parameter annotations and the shared helpers of the parser."""

from __future__ import annotations

import ast
import contextlib
import inspect
import linecache
import math
import sys
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.nodes import (
    Arg,
    Call,
    Expr,
    Function,
    Stmt,
    Var,
)
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import (
    DynDim,
    FunctionType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    Type,
)
from pypto.language import typing as lt

__all__ = [
    "ENCLOSING_ATTR",
    "ParseContext",
    "SourceInfo",
    "annotation_to_type",
    "capture_enclosing",
    "param_annotations",
]


ENCLOSING_ATTR = "__pypto_enclosing__"
"""Attribute of a decorated function: the locals of the functions it was defined in."""


def capture_enclosing(fn: Callable[..., Any], frame: types.FrameType | None) -> None:
    """Remember on ``fn`` the local names of the functions that define it, from ``frame`` out.

    A builder function (``def build(n): @pl.program class P: ...``) names ``n`` in
    annotations and bodies of its kernels; Python keeps ``n`` in a method's closure only when
    the method's body uses it, so the decorator records it here. Only function frames of the
    defining module count (not class bodies, not the module itself); an inner name wins.
    """
    names: dict[str, Any] = {}
    globals_ = getattr(fn, "__globals__", None)
    while frame is not None and frame.f_globals is globals_ and frame.f_code.co_name != "<module>":
        if frame.f_code.co_flags & inspect.CO_OPTIMIZED:  # a function, not a class body
            for key, value in frame.f_locals.items():
                names.setdefault(key, value)
        frame = frame.f_back
    if names:
        with contextlib.suppress(AttributeError, TypeError):
            setattr(fn, ENCLOSING_ATTR, names)


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
            found = _command_line_source(fn)
            if found is None:
                raise KernelError(
                    f"cannot read the source of {getattr(fn, '__qualname__', fn)!r} ({exc}); "
                    "kernels must be defined in a file (or given as text to pl.parse), not typed at an "
                    "interactive prompt"
                ) from None
            lines, first, file = found
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
        namespace.update(getattr(fn, ENCLOSING_ATTR, None) or {})
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


def _command_line_source(fn: Callable[..., Any]) -> tuple[list[str], int, str] | None:
    """The source of ``fn`` defined by ``python -c CODE`` (file ``<string>``, which Python keeps
    no lines of): CODE, from ``sys.orig_argv``; None when that is not where ``fn`` came from (the
    line it starts at holds no ``def`` of its name)."""
    code = getattr(fn, "__code__", None)
    argv = getattr(sys, "orig_argv", [])
    if code is None or code.co_filename != "<string>" or "-c" not in argv[:-1]:
        return None
    text = argv[argv.index("-c") + 1]
    if not isinstance(text, str):
        return None
    # inspect reads lines through linecache: the text is entered there while it is read, and
    # taken out again (other code compiled as "<string>", exec'd text, is not this text)
    previous = linecache.cache.get("<string>")
    linecache.cache["<string>"] = (len(text), None, text.splitlines(keepends=True), "<string>")
    try:
        lines, first = inspect.getsourcelines(fn)
        head: ast.stmt | None = ast.parse(textwrap.dedent("".join(lines))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        head = None
    finally:
        if previous is None:
            linecache.cache.pop("<string>", None)
        else:
            linecache.cache["<string>"] = previous
    if not isinstance(head, ast.FunctionDef) or head.name != fn.__name__:
        return None
    return lines, first, "<string>"


class ParseContext:
    """What a function body may call besides ops: other functions of the program.

    Subclasses (the ``@pl.jit`` specialiser, the ``@pl.program`` builder) resolve a callee
    object to an IR function registered under a unique name.
    """

    def __init__(self) -> None:
        self.functions: dict[str, Function] = {}
        # (function, global name) -> the constant value the parse used
        self.captured: dict[tuple[Callable[..., Any], str], object] = {}
        # the Python function each external @pl.function name was first resolved to
        self.externals: dict[str, Callable[..., Any]] = {}

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
                dtype = (
                    ann.dtype if isinstance(ann.dtype, DataType) else given.dtype
                )  # a pl.dtype_var: the call's
                return TensorType(ann.shape or given.shape, dtype, ann.layout), direction
            return given, direction
        complete = lt.complete_tensor(ann)
        if complete is None:
            raise KernelError(
                f"parameter {name!r}: a bare pl.Tensor takes its shape from the call, which only @pl.jit has; "
                "write pl.Tensor[[rows, cols], pl.FP32]",
                span,
            )
        return TensorType(*complete), direction
    if isinstance(ann, lt.TileAnnotation):
        if direction is not ParamDirection.IN:
            raise KernelError(
                f"parameter {name!r}: a tile parameter is In (the kernel's result tiles are returned)", span
            )
        if ann.memref is not None:
            raise KernelError(
                f"parameter {name!r}: a tile parameter is placed by its caller; drop the pl.MemRef", span
            )
        shape = tile_shape(ann.shape)
        if len(shape) != 2 or any(d != 1 for d in ann.shape[:-2]):  # no N-D tile parameters
            raise KernelError(
                f"parameter {name!r}: a tile is 2-D (or 1-D, as a [1, n] tile), got shape {list(ann.shape)}",
                span,
            )
        return TileType(shape, ann.dtype, ann.memory or MemorySpace.Vec), direction
    if isinstance(ann, (lt.ScalarAnnotation, DataType)):
        dtype = ann.dtype if isinstance(ann, lt.ScalarAnnotation) else ann
        if direction is not ParamDirection.IN:
            raise KernelError(f"parameter {name!r}: a scalar is always In", span)
        return ScalarType(dtype), direction
    if ann is None:
        raise KernelError(
            f"parameter {name!r} needs an annotation: pl.Tensor, pl.Out[pl.Tensor], pl.InOut[...], a scalar dtype such as pl.FP32 or pl.Tile[[rows, cols], dtype]",
            span,
        )
    raise KernelError(f"parameter {name!r}: unsupported annotation {ann!r}", span)


def tile_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A tile annotation's shape as the tile is: 2-D, a 1-D ``[n]`` being ``[1, n]``, leading
    dims of 1 dropped (``[1, 1, 8, 16]`` is ``[8, 16]``) and other leading dims flattened into
    rows (``[4, 8, 16]`` is ``[32, 16]``)."""
    if len(shape) == 1:
        return (1, shape[0])
    while len(shape) > 2 and shape[0] == 1:
        shape = shape[1:]
    if len(shape) > 2:  # an N-D tile is held with its leading dims flattened (parser/nd_tiles.py)
        return (math.prod(shape[:-1]), shape[-1])
    return shape


def _check_declared(ann: lt.TensorAnnotation, given: TensorType, name: str, span: Span) -> None:
    if isinstance(ann.dtype, DataType) and ann.dtype is not given.dtype:
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
    # a kernel's SPMD block index and block count (pl.tile.get_block_idx/num): hidden trailing
    # scalar parameters, made at first use
    block_vars: list[Var] = field(default_factory=list)
    # ids of argument Vars an inlined helper declares pl.Out / pl.InOut (the helper writes them)
    helper_written: set[int] = field(default_factory=set)
    # the orchestration's innermost pl.spmd(core_num=n) scope: (block index var, n)
    spmd: tuple[Var, int] | None = None
    # pl.func_attr attributes so far, and whether the body is still in its prologue (only
    # pl.func_attr calls and a docstring so far)
    attrs: dict[str, Any] = field(default_factory=dict)
    # tiles placed with pl.MemRef in their annotations (pypto.language.parser.placements)
    placements: list[Any] = field(default_factory=list)
    # tensors marked by pl.dump_tag so far: later kernel calls that take one record it in dumps
    dump_tags: list[Var] = field(default_factory=list)
    prologue: bool = True
    # ids of the parameter Vars annotated pld.DistributedTensor (a rank's window view)
    distributed: set[int] = field(default_factory=set)
    # id(Expr) -> the valid shape a narrowed tensor or tile carries (parser/subscripts.py)
    valid_shapes: dict[int, tuple[Expr, ...]] = field(default_factory=dict)
    # ids of the pl.Out / pl.InOut tensor parameters (parser/subscripts.py: out_param_write)
    out_params: set[int] = field(default_factory=set)
    # id(Expr) -> the N-D shape of a tile held flattened to 2-D (parser/nd_tiles.py)
    nd_shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # id(Expr) -> the N-D shape of a pl.tile.transpose_view of such a tile: its planes side by
    # side in columns (the flattened [B * R, C] tile read as [C, B * R])
    nd_columns: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # id(TupleValue) -> (that value, the N-D shape of the pl.batch_matmul result it holds as its
    # [M, N] planes); the value is kept so that its id is not reused (planes_of)
    nd_planes: dict[int, tuple[Any, tuple[int, ...]]] = field(default_factory=dict)

    def planes_of(self, value: object) -> tuple[int, ...] | None:
        """The N-D shape of ``value`` when it is a ``pl.batch_matmul`` result held as planes."""
        entry = self.nd_planes.get(id(value))
        return entry[1] if entry is not None and entry[0] is value else None


class _ParserBase:
    """The parser's state and error helper; the statement, expression and call parts build on it."""

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
        # the loops around the statement being parsed, innermost last: (kind, whether the loop is
        # inside a pl.at scope); kinds: range, parallel, unroll, pipeline, spmd, while
        self.loop_stack: list[tuple[str, bool]] = []

    def err(self, msg: str, node: ast.AST) -> KernelError:
        return KernelError(msg, self.src.span(node))

    if TYPE_CHECKING:  # defined by the later parts (calls, statements); declared for the earlier ones

        def call(self, node: ast.Call) -> Expr: ...

        def make_op(self, opname: str, args: list[Arg], attrs: dict[str, Any], node: ast.AST) -> Call: ...

        def stmt(self, s: ast.stmt) -> list[Stmt]: ...

        def tensor_view(self, node: ast.Subscript) -> Expr: ...

        def tuple_item(self, node: ast.Subscript) -> Any: ...

        def tuple_literal(self, node: ast.Tuple) -> Any: ...

        def deps_list(self, node: Any, what: str) -> tuple[Expr, ...]: ...

        def check_orchestration(self, what: str, node: ast.AST) -> None: ...


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
    if isinstance(ann, lt.TupleAnnotation):
        return f"Tuple[{', '.join(_ann_str(i) for i in ann.items)}]"
    if isinstance(ann, lt.TileAnnotation):
        mem = f", {ann.memory.value}" if ann.memory else ""
        return f"Tile[{list(ann.shape)}, {ann.dtype.value}{mem}]"
    if isinstance(ann, lt.TensorAnnotation):
        dtype = ann.dtype.value if isinstance(ann.dtype, DataType) else repr(ann.dtype) if ann.dtype else "?"
        return f"Tensor[{list(ann.shape or [])}, {dtype}]"
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
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.BitAnd: "bitand",
    ast.BitOr: "bitor",
    ast.BitXor: "bitxor",
}
INTEGER_BINOPS = frozenset({"lshift", "rshift", "bitand", "bitor", "bitxor"})  # of integer scalars only
