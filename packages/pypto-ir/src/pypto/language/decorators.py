"""``@pl.jit.incore``, ``@pl.inline``, ``@pl.program`` and ``@pl.function``.

``@pl.jit`` itself (argument binding, specialisation, the in-memory cache) is
:mod:`pypto.language.jit`; ``JITFunction``, ``Specialization`` and ``jit`` are still importable
from here.

- ``@pl.jit.incore`` marks a kernel helper; a jit body that calls it picks it up by name.
- ``@pl.program`` turns a class of ``@pl.function`` methods into an IR ``Program``
  (functions fully annotated, no call needed), for tests and explicit builds.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

from pypto.ir.artifact_key import source_digest
from pypto.ir.errors import KernelError, Span
from pypto.ir.host_function import HostLevelFunction, has_ellipsis_body
from pypto.ir.nodes import Assign, CallFunc, ExprStmt, Function, Param, Program, Return, Var
from pypto.ir.types import FunctionType, Level, Role, TileType, TupleType, Type
from pypto.language.parser import ParseContext, SourceInfo, _SelfMethod, param_annotations, parse_function
from pypto.language.parser.common import capture_enclosing
from pypto.language.tracebacks import user_facing

__all__ = [
    "DSLFunction",
    "IncoreFunction",
    "InlineFunction",
    "function",
    "inline",
    "program",
]


# ----------------------------------------------------------------------------- kernels


class IncoreFunction:
    """A kernel helper (``@pl.jit.incore``), specialised on the types it is called with."""

    def __init__(self, fn: Callable[..., Any], func_type: FunctionType = FunctionType.InCore) -> None:
        self.fn = fn
        self.func_type = func_type
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{self.fn.__name__} is a @pl.jit.incore kernel: call it from a @pl.jit function body, "
            "which the compiler parses"
        )

    def __pypto_callee__(self, ctx: ParseContext, arg_types: list[Type], span: Span) -> Function:
        src = SourceInfo.of(self.fn)
        names = [n for n, _, _ in param_annotations(src, skip_self=False)]
        if len(names) != len(arg_types):
            raise KernelError(
                f"{self.fn.__name__}({', '.join(names)}) takes {len(names)} arguments, got {len(arg_types)}",
                span,
            )
        key = (id(self), tuple(arg_types))
        cache: dict[Any, Function] = ctx.__dict__.setdefault("_incore_cache", {})
        if key in cache:
            return cache[key]
        name = ctx.unique_name(self.fn.__name__.lstrip("_") or "kernel")
        f = parse_function(
            self.fn,
            ctx=ctx,
            name=name,
            func_type=self.func_type,
            arg_types=dict(zip(names, arg_types, strict=True)),
        )
        ctx.functions[name] = f
        cache[key] = f
        ctx.__dict__.setdefault("_sources", {})[name] = source_digest(self.fn)
        return f


class InlineFunction:
    """A helper whose body is spliced into each caller (``@pl.jit.inline`` / ``@pl.inline``).

    Its parameters take the caller's values; names it binds are renamed so they cannot
    clash with the caller's; its ``return`` value is the call's value.
    """

    __pypto_inline__ = True

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{self.fn.__name__} is an inline kernel-language helper: call it from a kernel body"
        )


class DSLFunction:
    """A fully annotated ``@pl.function`` defined outside a program class."""

    def __init__(
        self, fn: Callable[..., Any], func_type: FunctionType, attrs: dict[str, Any] | None = None
    ) -> None:
        self.fn = fn
        self.func_type = func_type
        self.attrs = dict(attrs or {})
        self._ir: Function | None = None
        functools.update_wrapper(self, fn)

    @property
    def ir(self) -> Function:
        if self._ir is None:
            self._ir = parse_function(self.fn, ctx=ParseContext(), func_type=self.func_type, attrs=self.attrs)
        return self._ir

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self.fn.__name__} is a @pl.function: call it from a kernel-language body")

    def __pypto_callee__(self, ctx: ParseContext, arg_types: list[Type], span: Span) -> Function:
        name = self.fn.__name__
        if name in getattr(ctx, "methods", ()):
            raise KernelError(
                f"the external @pl.function {name!r} conflicts with program function {name!r} of the "
                "same name: a program holds one function per name; rename one of them",
                span,
            )
        first = ctx.externals.setdefault(name, self.fn)
        if first is not self.fn:
            raise KernelError(
                f"conflicting external functions named {name!r}: this call names a different "
                f"@pl.function {name!r} than an earlier call ({_where(first)}); a program holds one "
                "function per name; rename one of them",
                span,
            )
        existing = ctx.functions.get(name)
        if existing is not None:
            return existing
        f = parse_function(self.fn, ctx=ctx, func_type=self.func_type, attrs=self.attrs)
        ctx.functions[f.name] = f
        return f


def _where(fn: Callable[..., Any]) -> str:
    code = getattr(fn, "__code__", None)
    return f"defined at {code.co_filename}:{code.co_firstlineno}" if code is not None else "defined elsewhere"


def inline(fn: Callable[..., Any]) -> InlineFunction:
    """``@pl.inline``: the same as ``@pl.jit.inline``."""
    return InlineFunction(fn)


# ----------------------------------------------------------------------------- program


class _FunctionMarker:
    def __init__(
        self,
        fn: Callable[..., Any],
        func_type: FunctionType,
        attrs: dict[str, Any] | None = None,
        source: Any = None,
    ) -> None:
        self.fn = fn
        self.func_type = func_type
        self.attrs = dict(attrs or {})
        self.source = source  # a SourceInfo to parse instead of fn's (a host orchestrator's chip block)


def _caller_frame() -> types.FrameType | None:
    """The first frame outside this module (the code that applied the decorator)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals is globals():
        frame = frame.f_back
    return frame


class _HostMarker:
    """A ``@pl.function(level=pl.Level.HOST, role=...)`` method: host Python, not parsed."""

    def __init__(self, fn: Callable[..., Any], role: Role) -> None:
        self.fn = fn
        self.role = role


def _host_function(fn: Callable[..., Any], level: Any, role: Any) -> _HostMarker:
    if level is not Level.HOST:
        raise ValueError(
            f"@pl.function(level=...) {fn.__name__}: only pl.Level.HOST is a function level (with "
            f"role=pl.Role.Orchestrator or pl.Role.SubWorker); got {level!r}"
        )
    if not isinstance(role, Role):
        raise ValueError(
            f"@pl.function(level=pl.Level.HOST) {fn.__name__}: expected role=pl.Role.Orchestrator or "
            f"pl.Role.SubWorker, got {role!r}"
        )
    parts = getattr(fn, "__qualname__", "").split(".")
    if len(parts) < 2 or parts[-2] == "<locals>":
        raise TypeError(
            f"@pl.function(level=pl.Level.HOST) {fn.__name__}: a host-level function is a method of a "
            "@pl.program class"
        )
    return _HostMarker(fn, role)


def function(
    fn: Callable[..., Any] | None = None,
    *,
    type: FunctionType = FunctionType.Opaque,
    level: Level | None = None,
    role: Role | None = None,
    attrs: dict[str, Any] | None = None,
    auto_scope: bool = True,
) -> Any:
    """``@pl.function`` / ``@pl.function(type=pl.FunctionType.InCore)``.

    Inside a ``@pl.program`` class it marks a method; outside, it makes a standalone
    function that programs can call. ``level=pl.Level.HOST, role=pl.Role.Orchestrator`` or
    ``role=pl.Role.SubWorker`` marks host Python of a multi-chip program
    (:mod:`pypto.ir.host_function`).

    ``attrs={"key": value}``: function attributes, as ``pl.func_attr`` at the top of the body
    gives them (constants only: a decorator cannot name a parameter); the two combine, and a key
    given by both is an error. ``auto_scope=False`` (an orchestration that places its runtime
    scopes by hand, ``pl.manual_scope``) is recorded as the attribute ``auto_scope``; the
    simulated runtime's scopes are the same either way.
    """
    recorded = _decorator_attrs(attrs, auto_scope)
    if fn is None:
        return lambda f: function(f, type=type, level=level, role=role, attrs=attrs, auto_scope=auto_scope)
    if level is not None or role is not None:
        return _host_function(fn, level, role)
    capture_enclosing(fn, _caller_frame())
    parts = getattr(fn, "__qualname__", "").split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":  # defined in a class body
        return _FunctionMarker(fn, type, recorded)
    return DSLFunction(fn, type, recorded)


def _decorator_attrs(attrs: Any, auto_scope: Any) -> dict[str, Any]:
    """The attributes ``@pl.function(attrs=..., auto_scope=...)`` records, checked."""
    from pypto.ir.serialization import ENUM_TYPES

    if attrs is None:
        attrs = {}
    if not isinstance(attrs, dict):
        raise TypeError(f'@pl.function(attrs=...): expected a dict such as {{"key": value}}, got {attrs!r}')
    for key, value in attrs.items():
        if not isinstance(key, str):
            raise TypeError(f"@pl.function(attrs=...): keys must be strings, got {key!r}")
        constant = isinstance(value, (bool, int, float, str)) and not isinstance(value, enum.Enum)
        if not (constant or isinstance(value, ENUM_TYPES)):
            raise TypeError(
                f"@pl.function(attrs=...): the value of {key!r} must be a constant (int, float, bool, str, "
                f"a pl enum member), got {value!r}"
            )
    if not isinstance(auto_scope, bool):
        raise TypeError(f"@pl.function(auto_scope=...): expected True or False, got {auto_scope!r}")
    if "auto_scope" in attrs:
        raise TypeError("@pl.function: give auto_scope as its own keyword (auto_scope=False), not in attrs")
    recorded = dict(attrs)
    if not auto_scope:
        recorded["auto_scope"] = False
    return recorded


class _ProgramContext(ParseContext):
    def __init__(self, methods: dict[str, _FunctionMarker]) -> None:
        super().__init__()
        self.methods = methods
        self.parsing: set[str] = set()

    def method(self, name: str, span: Span | None) -> Function:
        if name in self.functions:
            return self.functions[name]
        if name not in self.methods:
            raise KernelError(f"the program has no @pl.function named {name!r}", span)
        if name in self.parsing:
            raise KernelError(f"function {name!r} calls itself (recursion is not supported)", span)
        self.parsing.add(name)
        m = self.methods[name]
        f = parse_function(
            m.fn, ctx=self, name=name, func_type=m.func_type, is_method=True, attrs=m.attrs, source=m.source
        )
        self.functions[name] = f
        return f

    def resolve_call(self, target: Any, arg_types: list[Type], span: Span) -> Function | None:
        if isinstance(target, _SelfMethod):
            return self.method(target.name, span)
        return super().resolve_call(target, arg_types, span)


def _host_functions(cls: type) -> tuple[HostLevelFunction, ...]:
    found = []
    for name, v in vars(cls).items():
        if not isinstance(v, _HostMarker):
            continue
        params = list(inspect.signature(v.fn).parameters)
        found.append(
            HostLevelFunction(
                name,
                v.role,
                v.fn,
                is_method=bool(params) and params[0] == "self",
                requires_runtime_binding=v.role is Role.SubWorker and has_ellipsis_body(v.fn),
            )
        )
    orchestrators = [f.name for f in found if f.role is Role.Orchestrator]
    if len(orchestrators) > 1:
        raise KernelError(
            f"@pl.program {cls.__name__}: one host orchestrator (pl.Role.Orchestrator) per program, got "
            f"{', '.join(orchestrators)}"
        )
    return tuple(found)


def _outline_chip_blocks(
    program_name: str, host_funcs: tuple[HostLevelFunction, ...], methods: dict[str, _FunctionMarker]
) -> tuple[HostLevelFunction, ...]:
    """The host orchestrator's ``pl.at(level=pl.Level.CHIP)`` blocks become chip orchestrations
    (added to ``methods``) and the orchestrator launches them (``pypto.language.host_outline``)."""
    from pypto.language.host_outline import outline_chip_blocks

    out: list[HostLevelFunction] = []
    for f in host_funcs:
        if f.role is Role.Orchestrator:
            fn, chips = outline_chip_blocks(f.fn, f.name, f.is_method)
            for c in chips:
                if c.name in methods:
                    raise KernelError(
                        f"@pl.program {program_name}: {f.name}'s chip block would be named {c.name!r}, "
                        "which a method of the class already is; rename that method"
                    )
                methods[c.name] = _FunctionMarker(c.source.fn, FunctionType.Orchestration, source=c.source)
            out.append(dataclasses.replace(f, fn=fn) if chips else f)
        else:
            out.append(f)
    return tuple(out)


def _with_window_params(
    host_funcs: tuple[HostLevelFunction, ...], methods: dict[str, _FunctionMarker]
) -> tuple[HostLevelFunction, ...]:
    """The host orchestrator with the window parameters (``pld.DistributedTensor``) of each
    chip orchestration it may launch, so that its launches can pass ``pld.window`` views."""
    from pypto.language.distributed import is_distributed_annotation

    if not any(f.role is Role.Orchestrator for f in host_funcs):
        return host_funcs
    windows: dict[str, dict[str, Any]] = {}
    for name, m in methods.items():
        if m.func_type is not FunctionType.Orchestration or m.source is not None:
            continue
        found = {
            pname: ann
            for pname, ann, _ in param_annotations(SourceInfo.of(m.fn), True)
            if is_distributed_annotation(ann)
        }
        if found:
            windows[name] = found
    return tuple(
        dataclasses.replace(f, window_params=windows) if f.role is Role.Orchestrator else f
        for f in host_funcs
    )


@user_facing
def program(cls: type) -> Program:
    """Build an IR Program from a class of ``@pl.function`` methods.

    The entry is the (first) orchestration function; a program of one kernel and no
    orchestration gets a generated ``main`` orchestration that submits that kernel once. Any
    other program without an orchestration is a library of functions entered at its first
    one: it can be printed, parsed back and called from, but not compiled on its own.
    """
    methods = {k: v for k, v in vars(cls).items() if isinstance(v, _FunctionMarker)}
    host_funcs = _host_functions(cls)
    host_funcs = _outline_chip_blocks(cls.__name__, host_funcs, methods)
    host_funcs = _with_window_params(host_funcs, methods)
    if not methods:
        raise KernelError(f"@pl.program {cls.__name__}: the class has no @pl.function methods")
    ctx = _ProgramContext(methods)
    for name in methods:
        ctx.method(name, None)
    ordered = [ctx.functions[n] for n in methods] + [f for n, f in ctx.functions.items() if n not in methods]
    orch = [f for f in ordered if f.func_type is FunctionType.Orchestration]
    if orch:
        return Program(cls.__name__, tuple(ordered), orch[0].name, host_funcs)
    if host_funcs:
        raise KernelError(
            f"@pl.program {cls.__name__}: a program with host-level functions launches a chip "
            "orchestration; it has no @pl.function(type=pl.FunctionType.Orchestration)"
        )
    kernels = [f for f in ordered if f.func_type.is_kernel]
    tiles = bool(kernels) and any(
        isinstance(t, TileType) for t in (*(p.var.type for p in kernels[0].params), *kernels[0].returns)
    )
    if len(kernels) != 1 or tiles:
        # a library of functions: it builds, prints and parses back; compiling it needs an
        # orchestration to enter (compile_to_files says so). A kernel with tile parameters or
        # results is called from another core's code, never submitted by an orchestration.
        return Program(cls.__name__, tuple(ordered), ordered[0].name)
    k = kernels[0]
    name = "main" if "main" not in ctx.functions else ctx.unique_name("main")
    params = tuple(Param(Var(p.name, p.var.type), p.direction) for p in k.params)
    call = CallFunc(
        k.name,
        tuple(p.var for p in params),
        k.returns[0] if len(k.returns) == 1 else TupleType(k.returns),
    )
    if len(k.returns) == 1:
        result = Var("result", k.returns[0])
        body: tuple[Any, ...] = (Assign(result, call), Return((result,)))
        rets: tuple[Type, ...] = k.returns
    else:
        body, rets = (ExprStmt(call), Return(())), ()
    main = Function(name, params, rets, body, FunctionType.Orchestration)
    return Program(cls.__name__, (*ordered, main), name)
