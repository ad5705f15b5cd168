"""The immutable IR: expressions, statements, functions, programs; a printer; structural equality.

Every node is a frozen dataclass. Source spans ride along for error messages but take no
part in equality. ``structural_equal`` compares two trees modulo a consistent renaming of
variables (alpha-equivalence), which is what pass tests want.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeAlias

from pypto.ir.dtypes import DataType
from pypto.ir.errors import Span
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import FunctionType, Level, MemorySpace, ScalarType, Type

__all__ = [
    "Assign",
    "BinOp",
    "Break",
    "Call",
    "CallFunc",
    "Const",
    "Continue",
    "Expr",
    "ExprStmt",
    "For",
    "Function",
    "If",
    "IterArg",
    "Param",
    "ParamRef",
    "Program",
    "Return",
    "Scope",
    "Stmt",
    "TensorWrite",
    "TilePlacement",
    "Var",
    "While",
    "Yield",
    "free_vars",
    "print_ir",
    "structural_equal",
    "walk_stmts",
]


# ----------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Var:
    """A named value. After SSA every Var in a function is assigned exactly once."""

    name: str
    type: Type
    span: Span | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    """A literal int, float or bool."""

    value: int | float | bool
    dtype: DataType
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class BinOp:
    """Scalar arithmetic or comparison: add sub mul floordiv mod truediv min max lt le gt ge eq ne."""

    op: str
    lhs: Expr
    rhs: Expr
    type: Type
    span: Span | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        sym = BINOP_SYMBOLS.get(self.op)
        if sym is None:
            return f"{self.op}({self.lhs}, {self.rhs})"
        return f"({self.lhs} {sym} {self.rhs})"


BINOP_SYMBOLS = {  # Python spelling of each BinOp op
    "add": "+",
    "sub": "-",
    "mul": "*",
    "floordiv": "//",
    "mod": "%",
    "truediv": "/",
    "lshift": "<<",
    "rshift": ">>",
    "bitand": "&",
    "bitor": "|",
    "bitxor": "^",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "eq": "==",
    "ne": "!=",
}


@dataclass(frozen=True)
class Call:
    """An operator application, e.g. ``tile.add(a, b)`` or ``tile.load(t, (0, 0))``.

    ``args`` are expressions (a tuple of expressions for offsets); ``attrs`` are static
    values (shapes, memory spaces, dtypes) as sorted (name, value) pairs.
    """

    op: str
    args: tuple[Arg, ...]
    attrs: tuple[tuple[str, Any], ...]
    type: Type
    span: Span | None = field(default=None, compare=False, repr=False)

    def attr(self, name: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == name:
                return v
        return default

    def __str__(self) -> str:
        parts = [_fmt_arg(a) for a in self.args]
        parts += [f"{k}={_fmt_static(v)}" for k, v in self.attrs]
        return f"{self.op}({', '.join(parts)})"


@dataclass(frozen=True)
class CallFunc:
    """A call of another function of the program (an orchestration submitting a kernel).

    ``directions`` holds, per argument, the callee parameter's direction once the
    call-directions pass has run (empty before). ``deps`` are explicit task dependencies.
    ``dumps`` are the arguments marked for a selective tensor dump (``pl.dump_tag``,
    ``pl.submit(..., dumps=[...])``); the simulated chip has no tensor dump, so they are recorded
    and change nothing.
    """

    callee: str
    args: tuple[Expr, ...]
    type: Type
    directions: tuple[ParamDirection, ...] = ()
    deps: tuple[Expr, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)
    dumps: tuple[Expr, ...] = ()

    def __str__(self) -> str:
        args = []
        for i, a in enumerate(self.args):
            d = self.directions[i].value + " " if i < len(self.directions) else ""
            args.append(f"{d}{a}")
        deps = f", deps=[{', '.join(map(str, self.deps))}]" if self.deps else ""
        dumps = f", dumps=[{', '.join(map(str, self.dumps))}]" if self.dumps else ""
        return f"call @{self.callee}({', '.join(args)}{deps}{dumps})"


Expr: TypeAlias = Var | Const | BinOp | Call | CallFunc
Arg: TypeAlias = Expr | tuple[Expr, ...]


def _fmt_arg(a: Arg) -> str:
    if isinstance(a, tuple):
        return "[" + ", ".join(str(x) for x in a) + "]"
    return str(a)


def _fmt_static(v: Any) -> str:
    if isinstance(v, enum.Enum):
        return str(v.value)
    if isinstance(v, tuple):
        return "[" + ", ".join(_fmt_static(x) for x in v) + "]"
    return repr(v)


# ----------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Assign:
    var: Var
    value: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ExprStmt:
    value: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class TensorWrite:
    """``target[offsets...] = value``: write a tensor-level value into a tensor window."""

    target: Var
    offsets: tuple[Expr, ...]
    value: Expr
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class IterArg:
    """A loop-carried value: ``var`` inside the body starts as ``init``."""

    var: Var
    init: Expr


@dataclass(frozen=True)
class Yield:
    """End of a loop body: the next values of the loop's iter args, in order."""

    values: tuple[Expr, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class For:
    """``for var in range(start, stop, step)`` with loop-carried values.

    ``results[i]`` is the value of ``iter_args[i]`` after the last iteration. ``stage``: the
    software-pipelining depth of a ``pl.pipeline`` loop (a scheduling hint; None for other loops).
    """

    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    iter_args: tuple[IterArg, ...] = ()
    results: tuple[Var, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)
    stage: int | None = None


@dataclass(frozen=True)
class While:
    """``while cond:`` with loop-carried values.

    ``cond`` is evaluated before each iteration and reads the iter args (their values so far);
    ``results[i]`` is the value of ``iter_args[i]`` when the loop ends.
    """

    cond: Expr
    body: tuple[Stmt, ...]
    iter_args: tuple[IterArg, ...] = ()
    results: tuple[Var, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Break:
    """``break``: leave the innermost loop (a ``For`` or ``While``).

    After SSA, ``values`` are the values the loop's iter args (hence its results) take when the
    loop is left here; before SSA it is empty.
    """

    values: tuple[Expr, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Continue:
    """``continue``: start the next iteration of the innermost loop.

    After SSA, ``values`` are the next values of the loop's iter args (as a ``Yield`` would
    give them); before SSA it is empty.
    """

    values: tuple[Expr, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class If:
    """``if cond: ... else: ...`` on a run-time scalar condition.

    When ``results`` is not empty, each branch ends with a ``Yield`` of the values that
    ``results`` take after the statement (SSA merge of names rebound in the branches).
    """

    cond: Expr
    then_body: tuple[Stmt, ...]
    else_body: tuple[Stmt, ...]
    results: tuple[Var, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Scope:
    """``with pl.at(level=..., name_hint=..., deps=[...]) as task:`` before outlining."""

    level: Level
    name_hint: str | None
    deps: tuple[Expr, ...]
    task: Var | None
    body: tuple[Stmt, ...]
    span: Span | None = field(default=None, compare=False, repr=False)
    # pl.at hints with no effect on the simulated chip, as (key, JSON value) pairs in key order:
    # "split" (a SplitMode name), "cross_core_slot" (int), "no_dep_args" (captured tensor names)
    hints: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Return:
    values: tuple[Expr, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


Stmt: TypeAlias = (
    Assign | ExprStmt | TensorWrite | For | While | If | Yield | Break | Continue | Scope | Return
)

LOOPS = (For, While)
"""The loop statements (a ``break`` / ``continue`` leaves or restarts the innermost one)."""


# ----------------------------------------------------------------------------- functions


@dataclass(frozen=True)
class Param:
    var: Var
    direction: ParamDirection = ParamDirection.IN

    @property
    def name(self) -> str:
        return self.var.name


@dataclass(frozen=True)
class TilePlacement:
    """Where the program text placed a tile: ``pl.MemRef(allocation, byte_offset, size)`` in the
    annotation of ``tile``, with ``allocation`` a ``pl.tile.alloc(space, ...)`` of the function.
    Recorded and checked by the parser; the simulated chip gives every tile storage of its own
    and reads none of it."""

    tile: str
    allocation: str
    space: MemorySpace
    byte_offset: int
    size: int
    allocation_size: int


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[Param, ...]
    returns: tuple[Type, ...]
    body: tuple[Stmt, ...]
    func_type: FunctionType = FunctionType.Opaque
    outlined: bool = False  # made from a pl.at scope (its directions are derived, not declared)
    span: Span | None = field(default=None, compare=False, repr=False)
    hints: tuple[tuple[str, Any], ...] = ()  # the pl.at hints of the scope it was outlined from
    # pl.func_attr attributes, (key, value) in key order; a value is a constant, an enum member or
    # a ParamRef. Hints for device backends; the simulated chip reads none.
    attrs: tuple[tuple[str, Any], ...] = ()
    # the tile placements its text wrote (pl.tile.alloc / pl.MemRef), in source order; a record
    # only, so not part of its identity (equality, serialization)
    placements: tuple[TilePlacement, ...] = field(default=(), compare=False, repr=False)

    @property
    def return_types(self) -> tuple[Type, ...]:
        """The types the function returns (``returns``)."""
        return self.returns

    def as_python(self) -> str:
        """Kernel-language text (``@pl.function``) that ``pl.parse`` reads back to this function."""
        from pypto.ir.python_printer import function_text

        return function_text(self)

    @property
    def requires_runtime_binding(self) -> bool:
        """False: a device function has its body (a host SubWorker with a ``...`` body is the
        one kind of function bound at runtime)."""
        return False

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def __str__(self) -> str:
        return print_ir(self)


@dataclass(frozen=True)
class ParamRef:
    """A ``pl.func_attr`` value that names a parameter of the function."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Program:
    """A set of functions; ``entry`` names the orchestration the caller invokes."""

    name: str
    funcs: tuple[Function, ...]
    entry: str
    # Level.HOST functions (pypto.ir.host_function.HostLevelFunction): Python bodies, not IR
    host_funcs: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        names = [f.name for f in self.funcs] + [f.name for f in self.host_funcs]
        if len(set(names)) != len(names):
            raise ValueError(f"Program {self.name!r}: function names repeat: {names}")
        if self.entry not in names:
            raise ValueError(f"Program {self.name!r}: entry {self.entry!r} is not one of {names}")

    @property
    def functions(self) -> Mapping[str, Function]:
        """Read-only mapping name -> Function, in definition order."""
        return MappingProxyType({f.name: f for f in self.funcs})

    @property
    def entry_function(self) -> Function:
        return self.functions[self.entry]

    def get_function(self, name: str) -> Any:
        """The function ``name`` (a device Function or a host-level function), or None."""
        found = self.functions.get(name)
        if found is not None:
            return found
        return next((f for f in self.host_funcs if f.name == name), None)

    def as_python(self) -> str:
        """Kernel-language text (a ``@pl.program`` class) that ``pl.parse`` reads back to this program."""
        from pypto.ir.python_printer import program_text

        return program_text(self)

    def replace(self, funcs: tuple[Function, ...]) -> Program:
        return Program(self.name, funcs, self.entry, self.host_funcs)

    def __str__(self) -> str:
        return print_ir(self)


# ----------------------------------------------------------------------------- traversal


def walk_stmts(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement, depth-first, nested bodies included."""
    for s in body:
        yield s
        if isinstance(s, (For, While, Scope)):
            yield from walk_stmts(s.body)
        elif isinstance(s, If):
            yield from walk_stmts(s.then_body)
            yield from walk_stmts(s.else_body)


def expr_children(e: Arg) -> Iterator[Expr]:
    if isinstance(e, tuple):
        yield from e
    elif isinstance(e, BinOp):
        yield e.lhs
        yield e.rhs
    elif isinstance(e, Call):
        for a in e.args:
            if isinstance(a, tuple):
                yield from a
            else:
                yield a
    elif isinstance(e, CallFunc):
        yield from e.args
        yield from e.deps
        yield from e.dumps


def expr_vars(e: Arg) -> list[Var]:
    """The variables ``e`` reads, depth-first, left to right (repeats included)."""
    out: list[Var] = []
    _collect_vars(e, out)
    return out


def _collect_vars(e: Arg, out: list[Var]) -> None:
    # a plain recursion into a list: the passes and the verifier ask for every expression's
    # variables, and a generator per node costs more than the walk itself
    if isinstance(e, Var):
        out.append(e)
    elif isinstance(e, Call):
        for a in e.args:
            if isinstance(a, Var):
                out.append(a)
            elif isinstance(a, tuple):
                for x in a:
                    _collect_vars(x, out)
            else:
                _collect_vars(a, out)
    elif isinstance(e, (tuple, BinOp, CallFunc)):
        for c in expr_children(e):
            _collect_vars(c, out)


def stmt_exprs(s: Stmt) -> Iterator[Expr]:
    """The expressions a statement reads directly (not those of nested bodies)."""
    if isinstance(s, (Assign, ExprStmt)):
        yield s.value
    elif isinstance(s, TensorWrite):
        yield s.target
        yield from s.offsets
        yield s.value
    elif isinstance(s, For):
        yield s.start
        yield s.stop
        yield s.step
        for ia in s.iter_args:
            yield ia.init
    elif isinstance(s, While):
        yield s.cond
        for ia in s.iter_args:
            yield ia.init
    elif isinstance(s, If):
        yield s.cond
    elif isinstance(s, (Yield, Return, Break, Continue)):
        yield from s.values
    elif isinstance(s, Scope):
        yield from s.deps


def stmt_defs(s: Stmt) -> Iterator[Var]:
    """Variables a statement defines (loop vars and iter args belong to the loop)."""
    if isinstance(s, Assign):
        yield s.var
    elif isinstance(s, For):
        yield s.var
        for ia in s.iter_args:
            yield ia.var
        yield from s.results
    elif isinstance(s, While):
        for ia in s.iter_args:
            yield ia.var
        yield from s.results
    elif isinstance(s, If):
        yield from s.results
    elif isinstance(s, Scope) and s.task is not None:
        yield s.task


def free_vars(body: tuple[Stmt, ...]) -> list[Var]:
    """Variables read in ``body`` but defined outside it, in first-use order."""
    defined: set[str] = set()
    for s in walk_stmts(body):
        defined.update(v.name for v in stmt_defs(s))
    seen: dict[str, Var] = {}
    for s in walk_stmts(body):
        for e in stmt_exprs(s):
            for v in expr_vars(e):
                if v.name not in defined and v.name not in seen:
                    seen[v.name] = v
    return list(seen.values())


# ----------------------------------------------------------------------------- printer


def print_ir(node: Program | Function) -> str:
    """Readable Python-like text of a program or function."""
    out: list[str] = []
    if isinstance(node, Program):
        out.append(f"# program {node.name} (entry @{node.entry})")
        out.extend(_print_function(f) for f in node.funcs)
        return "\n".join(out)
    return _print_function(node)


def _print_function(f: Function) -> str:
    params = ", ".join(f"{p.name}: {p.direction.value} {p.var.type}" for p in f.params)
    rets = ", ".join(str(t) for t in f.returns)
    hints = "".join(f", {k}={v!r}" for k, v in f.hints)
    attrs = "".join(f", attr {k}={v!r}" for k, v in f.attrs)
    lines = [f"def @{f.name}({params}) -> ({rets}):  # {f.func_type.value}{hints}{attrs}"]
    _print_body(f.body, 1, lines)
    return "\n".join(lines)


def _carried_text(s: For | While) -> str:
    """`` carry(v=init, ...) -> (results)`` of a loop with loop-carried values, else ''."""
    if not s.iter_args:
        return ""
    inits = ", ".join(f"{ia.var}={ia.init}" for ia in s.iter_args)
    return f" carry({inits}) -> ({', '.join(map(str, s.results))})"


def _print_body(body: tuple[Stmt, ...], depth: int, lines: list[str]) -> None:
    pad = "    " * depth
    if not body:
        lines.append(pad + "pass")
    for s in body:
        if isinstance(s, Assign):
            lines.append(f"{pad}{s.var}: {s.var.type} = {s.value}")
        elif isinstance(s, ExprStmt):
            lines.append(f"{pad}{s.value}")
        elif isinstance(s, TensorWrite):
            offs = ", ".join(map(str, s.offsets))
            lines.append(f"{pad}{s.target}[{offs}] = {s.value}")
        elif isinstance(s, For):
            carried = _carried_text(s)
            stage = f", stage={s.stage}" if s.stage is not None else ""
            loop = "pipeline" if s.stage is not None else "range"
            lines.append(f"{pad}for {s.var} in {loop}({s.start}, {s.stop}, {s.step}{stage}){carried}:")
            _print_body(s.body, depth + 1, lines)
        elif isinstance(s, While):
            carried = _carried_text(s)
            lines.append(f"{pad}while {s.cond}{carried}:")
            _print_body(s.body, depth + 1, lines)
        elif isinstance(s, (Break, Continue)):
            word = "break" if isinstance(s, Break) else "continue"
            values = f" with {', '.join(map(str, s.values))}" if s.values else ""
            lines.append(f"{pad}{word}{values}")
        elif isinstance(s, If):
            res = f"  -> ({', '.join(map(str, s.results))})" if s.results else ""
            lines.append(f"{pad}if {s.cond}:{res}")
            _print_body(s.then_body, depth + 1, lines)
            lines.append(f"{pad}else:")
            _print_body(s.else_body, depth + 1, lines)
        elif isinstance(s, Yield):
            lines.append(f"{pad}yield {', '.join(map(str, s.values))}")
        elif isinstance(s, Scope):
            task = f" as {s.task}" if s.task is not None else ""
            deps = f", deps=[{', '.join(map(str, s.deps))}]" if s.deps else ""
            hints = "".join(f", {k}={v!r}" for k, v in s.hints)
            lines.append(f"{pad}with at({s.level.value}, name_hint={s.name_hint!r}{deps}{hints}){task}:")
            _print_body(s.body, depth + 1, lines)
        else:
            lines.append(f"{pad}return {', '.join(map(str, s.values))}")


# ----------------------------------------------------------------------------- equality


def structural_equal(a: object, b: object) -> bool:
    """Equality modulo a consistent one-to-one renaming of variables. Spans are ignored."""
    return _eq(a, b, {}, {})


def _eq(a: object, b: object, fwd: dict[str, str], back: dict[str, str]) -> bool:
    if isinstance(a, Var) or isinstance(b, Var):
        if not (isinstance(a, Var) and isinstance(b, Var)) or a.type != b.type:
            return False
        if a.name in fwd or b.name in back:
            return fwd.get(a.name) == b.name and back.get(b.name) == a.name
        fwd[a.name] = b.name
        back[b.name] = a.name
        return True
    if isinstance(a, Program) and isinstance(b, Program):
        return a.entry == b.entry and _eq(a.funcs, b.funcs, fwd, back)
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return False
        for f in dataclasses.fields(a):
            if not f.compare:
                continue
            if not _eq(getattr(a, f.name), getattr(b, f.name), fwd, back):
                return False
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_eq(x, y, fwd, back) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
