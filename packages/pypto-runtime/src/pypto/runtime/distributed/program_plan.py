"""Compiling a multi-chip ``@pl.program``: its host orchestrator's body becomes a plan.

The program's ``@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)`` method runs once
as Python (``pypto.language.host_trace``) on placeholders of its tensor parameters (zero arrays
of their annotated shapes and dtypes): ``self.<chip orchestration>(...)`` records a launch (on
rank ``device=`` or, with one rank, rank 0) and returns what it writes; ``self.<SubWorker>(...)``
(positional or keyword arguments) records a SubWorker call, run on a sub-worker process between
the launches before and after it (``pypto.runtime.distributed.sub_workers``). Each
launched chip orchestration is compiled once, as the program with that entry (and without its
host functions).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from pypto.ir import Function, FunctionType, HostLevelFunction, ParamDirection, Program, Role
from pypto.language.interface import HostTensorRef, HostTrace
from pypto.language.interface import typing as lt
from pypto.runtime.distributed.plan import (
    DistributedPlan,
    RankProgram,
    placeholder,
    plan_from_trace,
    planned_params,
)
from pypto.runtime.distributed.sub_workers import callback_writes

__all__ = ["plan_program"]


class _LaunchParam:
    def __init__(self, name: str, direction: ParamDirection, annotation: Any = None) -> None:
        self.name = name
        self.direction = direction
        self.annotation = annotation  # a window parameter's pld.DistributedTensor annotation


class _ChipLaunch:
    """A chip orchestration of the program, as the host trace launches it."""

    def __init__(self, program: Program, fn: Function, windows: Any = None) -> None:
        self.program = program
        self.function = fn
        self.windows = dict(windows or {})  # window parameters by name: their annotations
        self.__name__ = fn.name

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.function.params)

    def declared_params(self) -> tuple[_LaunchParam, ...]:
        return tuple(
            _LaunchParam(p.name, p.direction, self.windows.get(p.name)) for p in self.function.params
        )

    def bind(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        names = self.param_names
        bound: list[Any] = list(args) + [None] * (len(names) - len(args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{self.__name__}(): unexpected keyword argument {k!r}")
            bound[names.index(k)] = v
        if len(args) > len(names) or any(b is None for b in bound):
            raise TypeError(f"{self.__name__}(): takes the arguments {', '.join(names)}")
        return tuple(bound)


class _HostSelf:
    """``self`` inside the host orchestrator: its methods launch or call back."""

    def __init__(self, program: Program, trace: HostTrace, orchestrator: HostLevelFunction) -> None:
        self._program = program
        self._trace = trace
        self._orchestrator = orchestrator.name
        self._windows = orchestrator.window_params

    def __getattr__(self, name: str) -> Any:
        program = self._program
        fn = program.functions.get(name)
        if fn is not None:
            if fn.func_type is not FunctionType.Orchestration:
                raise TypeError(
                    f"{self._orchestrator}: self.{name}(...) is a {fn.func_type.value} function; the host "
                    "orchestrator launches chip orchestrations (pl.FunctionType.Orchestration) and calls "
                    "SubWorkers"
                )
            launch = _ChipLaunch(program, fn, self._windows.get(name))
            return lambda *args, **kwargs: self._trace.dispatch(launch, args, kwargs)
        host = program.get_function(name)
        if isinstance(host, HostLevelFunction) and host.role is Role.SubWorker:

            def call(*args: Any, **kwargs: Any) -> Any:
                bound = _bind_sub_worker(host, args, kwargs)
                self._trace.sub_worker_call(name, bound)
                return _written(bound, callback_writes(host))

            return call
        raise AttributeError(
            f"{self._orchestrator}: self.{name} is not a chip orchestration or SubWorker of program {program.name}"
        )


def _written(args: tuple[Any, ...], writes: tuple[bool, ...]) -> Any:
    """What a call writes, as a launch returns it: its ``Out``/``InOut`` tensor arguments (one,
    a tuple, or None)."""
    written = [a for a, w in zip(args, writes, strict=True) if w and isinstance(a, HostTensorRef)]
    return written[0] if len(written) == 1 else (tuple(written) if written else None)


def _bind_sub_worker(fn: HostLevelFunction, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """A SubWorker call's arguments in its parameter order (keywords bound, defaults filled)."""
    sig = inspect.signature(fn.fn)
    if fn.is_method:
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        params = ", ".join(
            p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
            for p in sig.parameters.values()
        )
        raise TypeError(f"SubWorker {fn.name}({params}): {e}") from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _example(
    fn: HostLevelFunction, pname: str, annotation: Any, world_size: int
) -> tuple[Any, ParamDirection]:
    """The placeholder of a host orchestrator's tensor parameter: zeros of its annotated shape, a
    dynamic dim (``pl.dynamic("NR")``) being the rank count."""
    direction = ParamDirection.IN
    if isinstance(annotation, lt.DirectionAnnotation):
        direction, annotation = annotation.direction, annotation.inner
    complete = lt.complete_tensor(annotation)
    if complete is None:
        raise TypeError(
            f"{fn.name}(): parameter {pname!r}: a host orchestrator's parameters are tensors of static "
            f"shape, annotated pl.Tensor[[dims], dtype] (or pl.Out[...]); got {annotation!r}"
        )
    dims, dtype, _layout = complete
    shape = tuple(d if isinstance(d, int) else world_size for d in dims)
    return placeholder(shape, dtype, f"{fn.name}(): parameter {pname!r}"), direction


def plan_program(program: Program, config: Any) -> tuple[DistributedPlan, tuple[RankProgram, ...]]:
    """Trace ``program``'s host orchestrator: the plan (its chip orchestrations by key, none
    compiled yet) and the per-device programs it launches."""
    from pypto.runtime.api import planned_program

    dc = config.distributed_config
    orch = next(f for f in program.host_funcs if f.role is Role.Orchestrator)
    sig = inspect.signature(orch.fn)
    names = orch.param_names
    examples, directions = [], []
    for pname in names:
        annotation = sig.parameters[pname].annotation
        if isinstance(annotation, str):  # postponed annotations
            annotation = eval(annotation, getattr(orch.fn, "__globals__", {}))
        example, direction = _example(orch, pname, annotation, dc.world_size)
        examples.append(example)
        directions.append(direction)
    params = planned_params(orch.name, names, tuple(examples), tuple(directions))
    refs = [HostTensorRef(i, n, (), e) for i, (n, e) in enumerate(zip(names, examples, strict=True))]
    with HostTrace(dc.world_size, make_tensor=placeholder) as trace:
        orch.fn(_HostSelf(program, trace, orch), *refs) if orch.is_method else orch.fn(*refs)

    def program_of(d: Any, examples: list[Any]) -> tuple[Any, Any]:
        fn: Function = d.fn.function
        for p, e in zip(fn.params, examples, strict=True):
            want = getattr(p.var.type, "shape", None)
            if (
                want is not None
                and hasattr(e, "shape")
                and (
                    len(want) != len(e.shape)
                    or any(isinstance(w, int) and w != g for w, g in zip(want, e.shape, strict=True))
                )
            ):  # a dynamic dim takes any extent
                raise TypeError(
                    f"{orch.name}: {fn.name}(): parameter {p.name!r} has shape {list(want)}, the host "
                    f"orchestrator passes one of shape {list(e.shape)}"
                )
        chip = Program(
            program.name,
            tuple(
                f for f in program.funcs if f.func_type is not FunctionType.Orchestration or f.name == fn.name
            ),
            fn.name,
        )
        return fn.name, lambda: RankProgram(
            *planned_program(chip, platform=config.platform, runtime=config.runtime)
        )

    plan, programs = plan_from_trace(orch.name, params, trace, config, program_of)
    required = tuple(f.name for f in program.host_funcs if f.requires_runtime_binding)
    writes = {f.name: callback_writes(f) for f in program.host_funcs if f.role is Role.SubWorker}
    callbacks = tuple(dataclasses.replace(c, writes=writes[c.name]) for c in plan.callbacks)
    return dataclasses.replace(plan, callbacks=callbacks, required_callbacks=required), programs
