"""The collectives called in a host orchestrator's body (``pld.tensor.allreduce(data, signal)``
in a ``@pl.jit.host`` function or a ``@pl.program``'s host orchestrator).

Such a call launches, on every rank, a builtin program: a chip orchestration calling one kernel
whose body is that collective on the same window views (the kernel form: a schedule of PTO-ISA
communication instructions, simpler/kernel_collectives.hpp). The builtin's source is generated from the views' shapes and dtypes and the
call's keywords, parsed with ``pl.parse`` (one per distinct text) and compiled like any launched
program; its launches are recorded in the host trace in call order, between the launches before
and after the call. ``allreduce`` without a signal allocates one: an INT32 window buffer of
``[world_size, core_num]``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import ReduceOp
from pypto.language.host_trace import HostTrace, WindowView, require_trace

__all__ = ["BuiltinLaunch", "host_collective"]

SIM_AIV_CORES = 48
"""AIV cores of the simulated a2a3 chip (24 clusters of two): the most ``core_num`` may ask for."""

_MISSING: Any = object()


@dataclass(frozen=True)
class _Param:
    name: str
    direction: ParamDirection
    annotation: Any


class BuiltinLaunch:
    """One host-level collective as the host trace launches it (``Dispatch.fn``): the builtin
    program (``builtin_program``) and its parameters, every one a window view."""

    def __init__(
        self, name: str, params: tuple[str, ...], program: Any, annotations: tuple[Any, ...]
    ) -> None:
        self.__name__ = name
        self.param_names = params
        self.builtin_program = program
        self._annotations = annotations

    def declared_params(self) -> tuple[_Param, ...]:
        return tuple(
            _Param(n, ParamDirection.INOUT, a)
            for n, a in zip(self.param_names, self._annotations, strict=True)
        )

    def bind(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        return tuple(args)


def _spelled(dtype: DataType) -> str:
    return f"pl.{dtype.value}"


def _ann(view: WindowView) -> str:
    return f"pl.InOut[pld.DistributedTensor[{list(view.shape)}, {_spelled(view.dtype)}]]"


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> Any:
    from pypto.language.text import parse

    return parse(text, filename="<pld builtin collective>")


def _launch(trace: HostTrace, name: str, params: dict[str, WindowView], body: str) -> None:
    """Record the builtin ``name`` (a kernel whose one statement is ``body``) on every rank."""
    from pypto.language.distributed import DistributedTensor

    names = tuple(params)
    sig = ", ".join(f"{n}: {_ann(v)}" for n, v in params.items())
    ret = _ann(next(iter(params.values())))[len("pl.InOut[") : -1]
    first = names[0]
    text = (
        "import pypto.language as pl\n"
        "import pypto.language.distributed as pld\n\n\n"
        "@pl.program\n"
        "class Builtin:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def kernel(self, {sig}) -> {ret}:\n"
        f"        {body}\n"
        f"        return {first}\n\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def orchestration(self, {sig}) -> {ret}:\n"
        f"        return self.kernel({', '.join(names)})\n"
    )
    program = _parsed(text)
    dt: Any = DistributedTensor
    annotations = tuple(dt[list(v.shape), v.dtype] for v in params.values())
    launch = BuiltinLaunch(name, names, program, annotations)
    for r in range(trace.world_size):
        trace.dispatch(launch, tuple(params.values()), {"device": r})


def _view(what: str, name: str, v: Any) -> WindowView:
    if not isinstance(v, WindowView):
        raise TypeError(
            f"{what} in a host orchestrator: {name} must be a pld.window(...) view, got {type(v).__name__}"
        )
    return v


def _reduce_op(what: str, op: Any) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a pld.ReduceOp (Sum, Max, Min or Prod), got {op!r}")
    return op


def _allreduce(
    trace: HostTrace,
    target: Any,
    signal: Any = _MISSING,
    *,
    op: Any = ReduceOp.Sum,
    mode: str = "mesh",
    core_num: int = 1,
) -> WindowView:
    what = "pld.tensor.allreduce"
    if not isinstance(core_num, int) or isinstance(core_num, bool):
        raise TypeError(
            f"{what}: core_num must be a positive compile-time int, got {type(core_num).__name__}"
        )
    if core_num <= 0:
        raise ValueError(f"{what}: core_num must be positive, got {core_num}")
    if core_num > SIM_AIV_CORES:
        raise ValueError(f"{what}: core_num {core_num} exceeds the chip's {SIM_AIV_CORES} AIV cores")
    if mode not in ("mesh", "ring"):
        raise ValueError(f'{what}: mode must be "mesh" or "ring", got {mode!r}')
    if mode == "ring" and core_num != 1:
        raise ValueError(f'{what}: mode="ring" requires core_num == 1, got core_num={core_num}')
    rop = _reduce_op(what, op)
    data = _view(what, "target", target)
    if signal is _MISSING:
        if mode != "mesh":
            raise ValueError(
                f'{what}: mode="{mode}" requires an explicit signal; a signal is synthesised in mesh mode only. '
                'Pass a window-bound signal, e.g. pld.tensor.allreduce(target, signal, mode="ring").'
            )
        shape = (trace.world_size, core_num)
        signal = WindowView(trace.alloc_window(shape, DataType.INT32), shape, DataType.INT32)
    elif signal is None:
        raise TypeError(f"{what}: signal cannot be None; omit the signal argument to have one synthesised")
    sig = _view(what, "signal", signal)
    name = f"builtin.tensor.allreduce__{rop.name.lower()}__{data.dtype.value.lower()}"
    body = f'pld.tensor.allreduce(target, signal, op=pld.ReduceOp.{rop.name}, mode="{mode}")'
    _launch(trace, name, {"target": data, "signal": sig}, body)
    return data


def _barrier(trace: HostTrace, signal: Any) -> WindowView:
    sig = _view("pld.tensor.barrier", "signal", signal)
    _launch(trace, "builtin.tensor.barrier", {"signal": sig}, "pld.tensor.barrier(signal)")
    return sig


def _broadcast(trace: HostTrace, target: Any, signal: Any, *, root: int) -> WindowView:
    what = "pld.tensor.broadcast"
    if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < trace.world_size:
        raise ValueError(f"{what}: root must be a rank in [0, {trace.world_size}), got {root!r}")
    data = _view(what, "target", target)
    params = {"target": data, "signal": _view(what, "signal", signal)}
    _launch(
        trace,
        f"builtin.tensor.broadcast__root{root}",
        params,
        f"pld.tensor.broadcast(target, signal, root={root})",
    )
    return data


def _pushed(kind: str, first: str) -> Any:
    def call(trace: HostTrace, source: Any, target: Any, signal: Any) -> WindowView:
        what = f"pld.tensor.{kind}"
        data = _view(what, "target", target)
        params = {"target": data, first: _view(what, first, source), "signal": _view(what, "signal", signal)}
        _launch(trace, f"builtin.tensor.{kind}", params, f"pld.tensor.{kind}({first}, target, signal)")
        return data

    return call


def _reduce_scatter(trace: HostTrace, target: Any, signal: Any, *, op: Any = ReduceOp.Sum) -> WindowView:
    what = "pld.tensor.reduce_scatter"
    rop = _reduce_op(what, op)
    data = _view(what, "target", target)
    params = {"target": data, "signal": _view(what, "signal", signal)}
    body = f"pld.tensor.reduce_scatter(target, signal, op=pld.ReduceOp.{rop.name})"
    _launch(trace, f"builtin.tensor.reduce_scatter__{rop.name.lower()}", params, body)
    return data


def _all_to_all_v(  # noqa: PLR0917 - upstream's positional signature
    trace: HostTrace, input: Any, target: Any, signal: Any, send_counts: Any, recv_counts: Any
) -> WindowView:
    what = "pld.tensor.all_to_all_v"
    data = _view(what, "target", target)
    params = {
        "target": data,
        "input": _view(what, "input", input),
        "signal": _view(what, "signal", signal),
        "send_counts": _view(what, "send_counts", send_counts),
        "recv_counts": _view(what, "recv_counts", recv_counts),
    }
    body = "pld.tensor.all_to_all_v(input, target, signal, send_counts, recv_counts)"
    _launch(trace, "builtin.tensor.all_to_all_v", params, body)
    return data


_HOST_FORMS: dict[str, Any] = {
    "allreduce": _allreduce,
    "barrier": _barrier,
    "broadcast": _broadcast,
    "allgather": _pushed("allgather", "local_data"),
    "reduce_scatter": _reduce_scatter,
    "all_to_all": _pushed("all_to_all", "input"),
    "all_to_all_v": _all_to_all_v,
}


def host_collective(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> WindowView:
    """``pld.tensor.<name>(*args, **kwargs)`` in a host body: its builtin launched on every rank."""
    trace = require_trace(f"pld.tensor.{name}()")
    form = _HOST_FORMS[name]
    try:
        return form(trace, *args, **kwargs)  # type: ignore[no-any-return]
    except TypeError as exc:
        if "positional argument" in str(exc) or "keyword argument" in str(exc):
            raise TypeError(f"pld.tensor.{name}(): {exc}") from None
        raise
