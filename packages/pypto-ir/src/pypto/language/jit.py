"""``@pl.jit``: binding a call's arguments, specialising on them, and caching the result.

- ``@pl.jit`` makes an orchestration function specialised per call on the tensor
  shapes/dtypes and scalar values it receives (in-memory cache of specialisations, keyed by
  ``call_key``). Calling it executes it through the installed runtime executor (see
  ``pypto.ir.execution``). A scalar parameter whose default or argument is ``pl.RUNTIME`` is
  not folded: it stays a runtime scalar argument and only its dtype enters the key (see
  ``pl.RuntimeScalarMarker``).
- ``pl.jit.incore`` / ``pl.jit.inline`` make the helpers of :mod:`pypto.language.decorators`.
- ``pl.jit.host`` makes a :class:`~pypto.language.host.HostFunction` (multi-chip programs).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from pypto.ir.analysis.signature import function_signature
from pypto.ir.artifact_key import program_material, source_digest
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.execution import get_jit_compiler, get_jit_executor
from pypto.ir.nodes import Program
from pypto.ir.param_info import DYNAMIC, ParamDirection, ParamInfo
from pypto.ir.types import DynDim, FunctionType, TensorType, Type
from pypto.language import typing as lt
from pypto.language.binding import DecoratedFunction, dtype_of, fast_key, is_tensor, scalar_of, shape_of
from pypto.language.decorators import IncoreFunction, InlineFunction
from pypto.language.host import HostFunction
from pypto.language.host_trace import active_trace
from pypto.language.parser import ParseContext, SourceInfo, param_annotations, parse_function
from pypto.language.parser.common import capture_enclosing
from pypto.language.tracebacks import full_traceback, is_user_error, mark_user_error, user_facing

__all__ = ["DeclaredParam", "JITFunction", "Specialization", "jit"]

_MAX_FAST_KEYS = 256  # per function (a function called with ever new scalar values stops adding)


class DeclaredParam(NamedTuple):
    """What a ``@pl.jit`` function's annotation says of one parameter (before any call).

    Attributes:
        kind: ``"tensor"``, ``"scalar"``, or None for an annotation that is neither.
        dtype: The annotated dtype, or None when it comes from the call.
        shape: The annotated dims (``DYNAMIC`` for a ``pl.dynamic`` dim), or None when the
            shape comes from the call.
    """

    position: int
    name: str
    direction: ParamDirection
    kind: Literal["tensor", "scalar"] | None
    dtype: DataType | None
    shape: tuple[int, ...] | None
    annotation: Any

    @property
    def is_scalar(self) -> bool:
        return self.kind == "scalar"

    def param_info(self) -> ParamInfo | None:
        """The ParamInfo the declaration fixes, or None when dtype or shape comes from the call."""
        if self.kind is None or self.dtype is None or (self.kind == "tensor" and self.shape is None):
            return None
        return ParamInfo(self.name, self.direction, None if self.is_scalar else self.shape, self.dtype)


@dataclass(frozen=True)
class Specialization:
    """One specialisation of a ``@pl.jit`` function: its IR program and what it depends on.

    Attributes:
        program: The parsed (pre-pass) IR program; its entry is the jit function.
        params: The caller's logical signature (ParamInfo, complete, scalars included).
        key: The cheap in-memory cache key of the call (shapes, dtypes, folded scalar values;
            a runtime scalar is ``("R", dtype)``).
        key_material: Canonical JSON-able data for ArtifactKey (sources, IR text, folded values).
        attached: What the layers above compute once per specialisation and keep with it (the
            runtime: its compiled program per platform and chip runtime). Not part of equality.
    """

    program: Program
    params: tuple[ParamInfo, ...]
    key: tuple[Any, ...]
    key_material: dict[str, Any] = field(compare=False)
    captured: tuple[tuple[Callable[..., Any], str, object], ...] = field(default=(), compare=False)
    attached: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def check_captured(self) -> None:
        """Raise if a module constant the kernels were compiled with has changed since."""
        for fn, name, old in self.captured:
            now = _current_value(fn, name)
            if now is not old and now != old:
                raise RuntimeError(
                    f"{fn.__qualname__}: global {name!r} was {old!r} when this kernel was compiled and is "
                    f"{now!r} now; kernels capture module constants at their first call, so set them before "
                    "calling (or use a parameter / pl.dynamic dim for values that change)"
                )


def _current_value(fn: Callable[..., Any], name: str) -> object:
    try:
        nonlocals = inspect.getclosurevars(fn).nonlocals
    except (TypeError, ValueError):
        nonlocals = {}
    if name in nonlocals:
        return nonlocals[name]
    return getattr(fn, "__globals__", {}).get(name, "<deleted>")


class JITFunction(functools.partial[Any], DecoratedFunction):
    """A ``@pl.jit`` function. Call it to run (needs a runtime), or ``lower``/``specialize``.

    Scalar arguments are folded into the program as constants (one specialisation per value)
    unless the parameter is a runtime scalar: its argument is ``pl.RUNTIME`` or its signature
    default is ``pl.RUNTIME`` (``runtime_defaults``). A runtime scalar stays a scalar parameter
    of the program, is keyed by its dtype only, and takes its value when the compiled program
    is called; ``fn.specialize(a, pl.RUNTIME, c)`` serves every value of the middle argument.

    Calling it calls its target: the executor's plan when one is set (``executor_plan``), else
    :meth:`general_call`. The class is a ``functools.partial`` with no bound arguments for that
    reason alone: in CPython 3.10-3.11 a class that defines ``__call__`` is called through a type
    lookup and a Python frame (~1,900 instructions, 9% of a repeat 64x64 call;
    docs/performance-small-call.md), where a partial's C call passes the call's arguments straight
    to its target. The partial's ``func`` is that target and changes with the plan; its ``args``
    and ``keywords`` are always empty. Like a function, it pickles by reference (by its module and
    qualified name) and ``copy.copy``/``copy.deepcopy`` return it.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__(fn)
        self._cache: dict[tuple[Any, ...], Specialization] = {}
        # binding.fast_key of an all-positional call -> its specialisation (no binding needed)
        self._fast: dict[tuple[Any, ...], Specialization] = {}
        self._nparams = len(self._sig.parameters)
        # every parameter may be passed by position (no *args, **kwargs or keyword-only ones)
        self._positional = all(
            p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for p in self._sig.parameters.values()
        )
        # The installed executor's plan for repeat calls (pypto.ir.execution.set_executor_plan;
        # pypto.runtime keeps its hot call here): None until the executor sets one.
        self.executor_plan = None
        self._lock = threading.Lock()
        self._annotations: list[tuple[str, Any]] | None = None
        self._spans: dict[str, Span] = {}
        # with the annotations: each parameter's name in messages, and the parameters (index,
        # name, variable) annotated with a pl.dtype_var, so a call builds neither again
        self._what: dict[str, str] = {}
        self._dtype_var_params: tuple[tuple[int, str, lt.DTypeVar], ...] = ()
        # parameters whose signature default is pl.RUNTIME: runtime scalars at every call
        self.runtime_defaults: frozenset[str] = frozenset(
            n for n, p in self._sig.parameters.items() if lt.is_runtime(p.default)
        )

    def __repr__(self) -> str:
        return f"<pl.jit {self.fn.__module__}.{self.fn.__qualname__}>"

    def __reduce__(self) -> str:
        # As a function: pickled by reference to its module's global, copied as itself (not
        # partial's reduce, which would rebuild a partial of the current target).
        return self.__qualname__

    @property
    def executor_plan(self) -> Any:
        """The executor's plan for repeat calls (None: every call takes :meth:`general_call`).

        A plan is called in place of the function, as ``plan(*args, **kwargs)``, and returns
        what the call returns; a call it does not take it passes on to ``general_call(*args,
        **kwargs)`` (pypto.ir.execution). Set it through ``set_executor_plan``."""
        return self._executor_plan

    @executor_plan.setter
    def executor_plan(self, plan: Any) -> None:
        self._executor_plan = plan
        # the partial's target; its args stay (), its keywords empty and its __dict__ this one
        target = self.general_call if plan is None else plan
        functools.partial.__setstate__(self, (target, (), None, self.__dict__))  # type: ignore[attr-defined]  # (not in typeshed)

    def general_call(self, *args: Any, **kwargs: Any) -> Any:
        """A call without the executor's plan: recorded inside a ``@pl.jit.host`` body being
        traced on this thread, else run by the installed executor. This frame is the entry
        point that trims a user error's traceback, as ``@user_facing``'s wrapper is elsewhere."""
        try:
            trace = active_trace()
            if trace is not None:  # a launch inside a @pl.jit.host body: recorded, not run
                return trace.dispatch(self, args, kwargs)
            return get_jit_executor()(self, args, kwargs)
        except Exception as exc:
            if not is_user_error(exc) or full_traceback():
                raise
            raise exc.with_traceback(None) from None

    @user_facing
    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """Compile the specialisation of ``args`` (their shapes, dtypes and folded scalars;
        tensor values are not read) with the installed runtime and return its compiled program
        (``pypto.runtime.CompiledProgram``), without running it. Options of the runtime's
        ``compile`` (``platform=``, ``runtime=``) pass through ``kwargs``."""
        return get_jit_compiler()(self, args, kwargs)

    def signature_text(self) -> str:
        """The function's signature as written: ``f(a: pl.Tensor, c: pl.Out[pl.Tensor])``."""
        parts = []
        for name, p in self._sig.parameters.items():
            text = (
                name
                if p.annotation is inspect.Parameter.empty
                else f"{name}: {lt.annotation_text(p.annotation)}"
            )
            if p.default is not inspect.Parameter.empty:
                text += f" = {p.default!r}"
            parts.append(text)
        return f"{self.fn.__name__}({', '.join(parts)})"

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self._sig.parameters)

    def _param_annotations(self) -> list[tuple[str, Any]]:
        if self._annotations is None:
            src = SourceInfo.of(self.fn)
            found = param_annotations(src, skip_self=False)
            self._spans = {n: src.span(node) for n, _, node in found}
            self._what = {n: f"{self.fn.__name__}: parameter {n!r}" for n, _, _ in found}
            self._dtype_var_params = tuple(
                (i, n, var) for i, (n, a, _) in enumerate(found) if (var := _dtype_var(a)) is not None
            )
            self._annotations = [(n, a) for n, a, _ in found]
        return self._annotations

    def bind(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """The call's arguments in parameter order (signature defaults filled in)."""
        if self._positional and not kwargs and len(args) == self._nparams:
            return args  # one argument per parameter, in order: what binding gives
        try:
            ba = self._sig.bind(*args, **kwargs)
        except TypeError as exc:
            given = set(self.param_names[: len(args)]) | set(kwargs)
            outs = [
                p.name
                for p in self.declared_params()
                if p.name not in given and p.direction is ParamDirection.OUT and p.kind == "tensor"
            ]
            hint = (
                f"; an Out parameter ({', '.join(map(repr, outs))}) is allocated when omitted only if its "
                "annotation fixes its shape and dtype (pl.Out[pl.Tensor[[16, 16], pl.FP32]]); otherwise pass it"
                if outs
                else ""
            )
            raise TypeError(f"{self.signature_text()}: {exc}{hint}") from None
        ba.apply_defaults()
        return tuple(ba.arguments[n] for n in self._sig.parameters)

    def _scalar_dtype(self, name: str, ann: Any, why: str) -> DataType:
        if isinstance(ann, lt.ScalarAnnotation):
            return ann.dtype
        if isinstance(ann, DataType):
            return ann
        raise KernelError(
            f"{self.fn.__name__}: parameter {name!r} is a runtime scalar ({why}) but has no scalar dtype "
            f"annotation; annotate it, e.g. `{name}: pl.Scalar[pl.INT32]` or `{name}: pl.FP32`",
            self._spans.get(name),
        )

    def call_key(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The in-memory specialisation key of bound arguments (cheap: no parsing).

        A tensor is ``("T", shape, dtype)``, a folded scalar ``("S", type, value)`` and a runtime
        scalar (argument or default ``pl.RUNTIME``) ``("R", dtype)``, which holds no value.
        """
        key: list[Any] = []
        for (name, ann), value in zip(self._param_annotations(), args, strict=True):
            inner = ann.inner if isinstance(ann, lt.DirectionAnnotation) else ann
            if inner is lt.Tensor or isinstance(inner, lt.TensorAnnotation):
                if lt.is_runtime(value) or name in self.runtime_defaults:
                    raise TypeError(
                        f"{self.fn.__name__}: parameter {name!r} is a tensor; pl.RUNTIME marks a runtime "
                        "scalar and applies to scalar parameters only"
                    )
                if not is_tensor(value):
                    raise TypeError(
                        f"{self.fn.__name__}: parameter {name!r} is a tensor; got {type(value).__name__} "
                        "(pass a torch tensor or numpy array)"
                    )
                if isinstance(value, lt.TensorSpec):  # run-time dims keyed by name, not extent
                    key.append(("T", tuple(_spec_dim(d) for d in value.shape), value.dtype.value))
                    continue
                what = self._what[name]
                shape = shape_of(value, what)
                if isinstance(inner, lt.TensorAnnotation) and inner.shape is not None:
                    shape = (
                        tuple(
                            -1 if isinstance(d, DynDim) else s
                            for d, s in zip(inner.shape, shape, strict=False)
                        )
                        + shape[len(inner.shape) :]
                    )
                key.append(("T", shape, dtype_of(value, what).value))
            elif lt.is_runtime(value) or name in self.runtime_defaults:
                why = "its default is pl.RUNTIME" if name in self.runtime_defaults else "passed pl.RUNTIME"
                dtype = self._scalar_dtype(name, inner, why)
                if not lt.is_runtime(value):
                    scalar_of(value, f"parameter {name!r}")  # the call's value, checked, not keyed
                key.append(("R", dtype.value))
            else:
                v = scalar_of(value, f"parameter {name!r}")
                if isinstance(v, float) and not math.isfinite(v):
                    raise ValueError(
                        f"{self.fn.__name__}: parameter {name!r} is {v!r}; a NaN or infinite value cannot be "
                        "folded into the compiled program as a constant. Make it a runtime scalar to pass it "
                        f"at run time (compile with pl.RUNTIME for {name!r}, or give it the default pl.RUNTIME)"
                    )
                key.append(("S", type(v).__name__, v))
        self._check_dtype_vars(key)
        return tuple(key)

    def _check_dtype_vars(self, key: list[Any]) -> None:
        """Every tensor annotated with one ``pl.dtype_var`` has one dtype, an allowed one."""
        bound: dict[str, tuple[str, str]] = {}
        for i, name, var in self._dtype_var_params:  # call_key has read the annotations
            k = key[i]
            if k[0] != "T":
                continue
            if var.allowed and k[2] not in [d.value for d in var.allowed]:
                raise TypeError(
                    f"{self.fn.__name__}: parameter {name!r} is annotated with dtype variable {var.name} "
                    f"({', '.join(d.value for d in var.allowed)}) but the call passed {k[2]}"
                )
            first = bound.setdefault(var.name, (name, k[2]))
            if first[1] != k[2]:
                raise TypeError(
                    f"{self.fn.__name__}: dtype variable {var.name} is {first[1]} in parameter {first[0]!r} "
                    f"but {k[2]} in parameter {name!r}; every tensor annotated {var.name} has one dtype"
                )

    def dtype_bindings(self, key: tuple[Any, ...]) -> dict[str, DataType]:
        """``{dtype variable name: the dtype the call key binds it to}``."""
        out: dict[str, DataType] = {}
        for (_, ann), k in zip(self._param_annotations(), key, strict=True):
            var = _dtype_var(ann)
            if var is not None and k[0] == "T":
                out.setdefault(var.name, DataType(k[2]))
        return out

    @user_facing
    def specialize(self, *args: Any, **kwargs: Any) -> Specialization:
        """Parse (or fetch from the in-memory cache) the program for these arguments.

        Pass ``pl.RUNTIME`` in place of a scalar to keep it a runtime parameter (by position
        or keyword: ``fn.specialize(a, c=c, alpha=pl.RUNTIME)``); pass it for each scalar to
        make every scalar runtime.
        """
        kwargs.pop("config", None)
        return self.bind_call(args, kwargs)[0]

    def bind_call(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, run: bool = False
    ) -> tuple[Specialization, tuple[Any, ...], tuple[Any, ...] | None]:
        """Bind a call once: its specialisation, its arguments in parameter order (signature
        defaults filled in) and their :func:`~pypto.language.binding.fast_key` (None for a call
        that has none), which layers above may key their own per-call work by.

        A call with every parameter passed positionally whose arguments all have a
        :func:`~pypto.language.binding.fast_key` is looked up by that key first (no binding,
        no specialisation key); any other call binds, computes :meth:`call_key` and then
        remembers its fast key.

        Args:
            run: The call runs the program (``fn(...)``): a ``pl.RUNTIME`` argument, or a
                runtime-scalar default left out, is an error, since the program needs its value.
        """
        fk = fast_key(args) if not kwargs and len(args) == self._nparams else None
        if fk is not None:
            spec = self._fast.get(fk)
            if spec is not None:
                spec.check_captured()
                return spec, args, fk
        try:
            bound = self.bind(*args, **kwargs)
            if run:
                for name, value in zip(self._sig.parameters, bound, strict=True):
                    if lt.is_runtime(value):
                        raise TypeError(
                            f"{self.__name__}(): parameter {name!r} is a runtime scalar (pl.RUNTIME); a call "
                            "runs the program, so pass its value"
                        )
            key = self.call_key(bound)
        except (TypeError, ValueError) as exc:  # the binder's message names the parameter
            mark_user_error(exc)
            raise
        with self._lock:
            spec = self._cache.get(key)
        if spec is not None:
            spec.check_captured()
        else:
            built = self._build(bound, key)
            with self._lock:
                spec = self._cache.setdefault(key, built)
        if fk is not None and len(self._fast) < _MAX_FAST_KEYS:
            self._fast[fk] = spec
        return spec, bound, fk

    def declared_params(self) -> tuple[DeclaredParam, ...]:
        """What the parameter annotations say of each parameter, before any call."""
        out = []
        for i, (name, ann) in enumerate(self._param_annotations()):
            direction = ParamDirection.IN
            inner = ann
            if isinstance(ann, lt.DirectionAnnotation):
                direction, inner = ann.direction, ann.inner
            if inner is lt.Tensor or isinstance(inner, lt.TensorAnnotation):
                shape = dtype = None
                if isinstance(inner, lt.TensorAnnotation):
                    dtype = (
                        inner.dtype if isinstance(inner.dtype, DataType) else None
                    )  # a dtype var: the call's
                    if inner.shape is not None:
                        shape = tuple(d if isinstance(d, int) else DYNAMIC for d in inner.shape)
                out.append(DeclaredParam(i, name, direction, "tensor", dtype, shape, ann))
            elif isinstance(inner, (lt.ScalarAnnotation, DataType)):
                dtype = inner.dtype if isinstance(inner, lt.ScalarAnnotation) else inner
                out.append(DeclaredParam(i, name, ParamDirection.IN, "scalar", dtype, None, ann))
            else:
                out.append(DeclaredParam(i, name, direction, None, None, None, ann))
        return tuple(out)

    def _build(self, bound: tuple[Any, ...], key: tuple[Any, ...]) -> Specialization:
        arg_types: dict[str, Type] = {}
        scalars: dict[str, int | float | bool] = {}
        for (name, ann), value, k in zip(self._param_annotations(), bound, key, strict=True):
            if k[0] == "T" and isinstance(value, lt.TensorSpec):
                arg_types[name] = TensorType(tuple(value.shape), DataType(k[2]))
            elif k[0] == "T":
                arg_types[name] = TensorType(shape_of(value), DataType(k[2]))
                inner = ann.inner if isinstance(ann, lt.DirectionAnnotation) else ann
                if isinstance(inner, lt.TensorAnnotation) and inner.shape is not None:
                    given = shape_of(value)
                    if len(inner.shape) == len(given):
                        arg_types[name] = TensorType(
                            tuple(
                                d if isinstance(d, DynDim) else g
                                for d, g in zip(inner.shape, given, strict=True)
                            ),
                            DataType(k[2]),
                        )
            elif k[0] == "S":
                scalars[name] = k[2]
            # "R": a runtime scalar stays the parameter Var (typed by its annotation)
        ctx = ParseContext()
        source = None
        bindings = self.dtype_bindings(key)
        if bindings:  # a dtype variable's name is its bound dtype in the body and annotations
            source = SourceInfo.of(self.fn)
            namespace = {
                n: bindings.get(v.name, v) if isinstance(v, lt.DTypeVar) else v
                for n, v in source.namespace.items()
            }
            source = dataclasses.replace(source, namespace=namespace)
        entry = parse_function(
            self.fn,
            ctx=ctx,
            func_type=FunctionType.Orchestration,
            arg_types=arg_types,
            scalar_values=scalars,
            source=source,
        )
        program = Program(self.fn.__name__, (entry, *ctx.functions.values()), entry.name)
        sources = {entry.name: source_digest(self.fn), **ctx.__dict__.get("_sources", {})}
        captured = tuple(
            (fn, name, value)
            for (fn, name), value in sorted(
                ctx.captured.items(), key=lambda kv: (kv[0][0].__qualname__, kv[0][1])
            )
        )
        material = program_material(
            program,
            kind="jit",
            entry=entry.name,
            sources=sources,
            call_key=[list(_jsonable(k)) for k in key],
            captured={f"{fn.__qualname__}.{name}": repr(v) for fn, name, v in captured},
        )
        return Specialization(program, function_signature(entry, ssa_names=False), key, material, captured)

    @user_facing
    def lower(self, *args: Any, **kwargs: Any) -> Program:
        """Run the full pass pipeline for these arguments and return the lowered program."""
        from pypto.ir.pipeline import lower

        return lower(self.specialize(*args, **kwargs).program).program

    @property
    def cache_size(self) -> int:
        return len(self._cache)


def _spec_dim(d: int | DynDim) -> int | str:
    return d.name if isinstance(d, DynDim) else d


def _dtype_var(ann: Any) -> lt.DTypeVar | None:
    inner = ann.inner if isinstance(ann, lt.DirectionAnnotation) else ann
    dtype = getattr(inner, "dtype", None) if isinstance(inner, lt.TensorAnnotation) else None
    return dtype if isinstance(dtype, lt.DTypeVar) else None


def _jsonable(k: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(list(x) if isinstance(x, tuple) else x for x in k)


class _Jit:
    """``pl.jit`` (orchestration entry), with ``pl.jit.incore`` for kernel helpers and
    ``pl.jit.host`` for the host orchestrator of a multi-chip program."""

    # Each decorator records the locals of the functions that define ``fn`` (a builder
    # ``def build(n): @pl.jit def f(x: pl.Tensor[[n], ...])``): annotations may name them.
    def __call__(self, fn: Callable[..., Any]) -> JITFunction:
        if not callable(fn):
            raise TypeError(f"@pl.jit decorates a function, got {fn!r}")
        capture_enclosing(fn, sys._getframe(1))
        return JITFunction(fn)

    def incore(self, fn: Callable[..., Any]) -> IncoreFunction:
        """A kernel helper called from a @pl.jit body; its body is tile code."""
        capture_enclosing(fn, sys._getframe(1))
        return IncoreFunction(fn)

    def host(self, fn: Callable[..., Any]) -> HostFunction:
        """The host orchestrator of a multi-chip program: its body launches @pl.jit programs
        on ranks (``per_rank(x[r], y[r], device=r)``); see ``pypto.language.distributed``."""
        if not callable(fn):
            raise TypeError(f"@pl.jit.host decorates a function, got {fn!r}")
        return HostFunction(fn)

    def inline(self, fn: Callable[..., Any]) -> InlineFunction:
        """A helper spliced into its callers (orchestration or kernel code alike)."""
        capture_enclosing(fn, sys._getframe(1))
        return InlineFunction(fn)


jit = _Jit()
