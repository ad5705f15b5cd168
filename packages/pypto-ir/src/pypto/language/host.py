"""``@pl.jit.host``: the host orchestrator of a multi-chip program.

Its body is Python run on the host CPU: ``fn.compile(*args, config=RunConfig(
distributed_config=DistributedConfig(device_ids=[...])))`` runs it once in a
:class:`~pypto.language.host_trace.HostTrace` to record the per-rank launches, and the
installed host compiler (``pypto.runtime``) compiles each launched ``@pl.jit`` program and
returns a distributed compiled program. Calling the function compiles and runs it.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.execution import get_host_compiler
from pypto.ir.param_info import ParamDirection
from pypto.language import typing as lt
from pypto.language.binding import DecoratedFunction, is_tensor
from pypto.language.host_trace import HostTensorRef, HostTrace
from pypto.language.tracebacks import user_facing

__all__ = ["HostFunction"]


class HostFunction(DecoratedFunction):
    """A ``@pl.jit.host`` function: ``compile(*args, config=...)`` or call it to run."""

    def __repr__(self) -> str:
        return f"<pl.jit.host {self.fn.__module__}.{self.fn.__qualname__}>"

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self._sig.parameters)

    def param_directions(self) -> tuple[ParamDirection, ...]:
        """Per parameter, the direction its annotation declares (``In`` when none)."""
        out = []
        for p in self._sig.parameters.values():
            ann = p.annotation
            if isinstance(ann, str):  # postponed annotations
                ann = eval(ann, getattr(self.fn, "__globals__", {}))
            out.append(ann.direction if isinstance(ann, lt.DirectionAnnotation) else ParamDirection.IN)
        return tuple(out)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        try:
            ba = self._sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.__name__}(): {exc}") from None
        ba.apply_defaults()
        return tuple(ba.arguments.values())

    def trace(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], world_size: int, make_tensor: Any = None
    ) -> HostTrace:
        """Run the body once on placeholders of ``args`` and return what it launched;
        ``make_tensor(shape, dtype, what)`` makes what ``pl.create_tensor`` returns."""
        bound = self.bind(args, kwargs)
        refs = [
            HostTensorRef(i, name, (), value) if is_tensor(value) else value
            for i, (name, value) in enumerate(zip(self.param_names, bound, strict=True))
        ]
        with HostTrace(world_size, make_tensor=make_tensor) as trace:
            result = self.fn(*refs)
        returned = result if isinstance(result, tuple) else (result,)
        if any(r is not None and not isinstance(r, HostTensorRef) for r in returned):
            raise TypeError(
                f"{self.__name__}: a @pl.jit.host body returns nothing or its own tensor parameters "
                f"(what its launches wrote: its outputs are pl.Out parameters); it returned "
                f"{type(result).__name__}"
            )
        return trace

    @user_facing
    def compile(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """Compile for the ranks of ``config.distributed_config`` (a ``RunConfig``)."""
        return get_host_compiler()(self, args, kwargs, config)

    @user_facing
    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        compiled = get_host_compiler()(self, args, kwargs, config)
        return compiled(*args, config=config, **kwargs)
