"""Compiling a ``@pl.jit.host`` program: its trace becomes a :class:`DistributedPlan`.

The host body runs once (``HostFunction.trace``); every launch ``fn(*args, device=r)`` becomes a
:class:`PlannedDispatch` whose per-device program is a single-chip artifact (one store entry per
distinct specialisation, shared by the ranks that launch it), named in the plan by its
ArtifactKey (``program_keys``); a :class:`RankProgram` compiles or restores it. A scalar argument
of a launch is a runtime scalar of the per-device program (``pl.RUNTIME``), so ranks that differ
only in scalars (their rank number) share one artifact. The plan is JSON-able; it is stored as an
artifact-store entry of its own (:mod:`pypto.runtime.distributed.entry`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pypto.ir import DataType, DistributedConfig, ParamDirection, digest_of
from pypto.language.interface import (
    HostFunction,
    HostTensorRef,
    WindowView,
    dtype_of,
    is_distributed_annotation,
    is_tensor,
    shape_of,
)
from pypto.language.interface import typing as lt
from pypto.runtime.distributed.host_bytes import ByteTensor, element_size

__all__ = [
    "WINDOW_ALIGN",
    "DistributedPlan",
    "PlannedCallback",
    "PlannedDispatch",
    "PlannedParam",
    "PlannedWindow",
    "RankProgram",
    "plan_host",
]

# A rank's window is a whole number of 4 KiB pages (so at least 4 KiB, even for tiny data).
WINDOW_ALIGN = 4096
PLAN_SCHEMA = 2


@dataclass(frozen=True)
class PlannedParam:
    name: str
    kind: str  # "tensor" | "scalar"
    shape: tuple[int, ...]
    dtype: str  # DataType value ("" for a scalar)
    direction: str  # ParamDirection value
    value: Any = None  # a scalar's value: the host body ran with it, so the plan holds it
    local: bool = False  # a host tensor the body creates (pl.create_tensor): zeros per dispatch


@dataclass(frozen=True)
class PlannedWindow:
    shape: tuple[int, ...]
    dtype: str
    nbytes: int  # of one rank's window data
    stride: int  # bytes from one rank's window to the next (nbytes rounded up to WINDOW_ALIGN)


@dataclass(frozen=True)
class PlannedDispatch:
    """One launch: ``program`` (an index into ``DistributedPlan.programs``) on ``rank``.

    ``args`` per parameter: ``["host", param, [indices...]]``, ``["window", buffer, shape, dtype]``
    (the view's shape and dtype, at the start of the rank's window) or
    ``["scalar", value]``.
    """

    rank: int
    program: int
    args: tuple[tuple[Any, ...], ...]
    phase: int = 0  # runs after ``phase`` sub-worker callbacks (``DistributedPlan.callbacks``)


@dataclass(frozen=True)
class PlannedCallback:
    """Callback ``index`` of the plan: a call of the host-level SubWorker ``name``, run on a
    sub-worker process after the launches of phases ``0..index``. ``args`` as a launch's
    (``host`` or ``scalar``), in the SubWorker's parameter order; ``writes``: per argument,
    whether its parameter is ``pl.Out``/``pl.InOut`` (empty: every tensor may be written)."""

    name: str
    args: tuple[tuple[Any, ...], ...]
    writes: tuple[bool, ...] = ()


@dataclass(frozen=True)
class DistributedPlan:
    name: str
    platform: str
    runtime: str
    device_ids: tuple[int, ...]
    params: tuple[PlannedParam, ...]
    windows: tuple[PlannedWindow, ...]
    programs: tuple[str, ...]  # artifact directories, resolved in this process (not stored)
    dispatches: tuple[PlannedDispatch, ...]
    callbacks: tuple[PlannedCallback, ...] = ()
    required_callbacks: tuple[str, ...] = ()  # SubWorkers that prepare(callbacks=) must bind
    program_keys: tuple[str, ...] = ()  # the ArtifactKey of each program (``programs[i]``'s entry)
    aicpu_thread_num: int = 0  # each rank's chip runs (simpler.CallConfig); 0: the chip's default

    @property
    def world_size(self) -> int:
        return len(self.device_ids)

    def to_json(self) -> dict[str, Any]:
        """Everything, the resolved artifact directories too (what the ranks are handed)."""
        return {"schema": PLAN_SCHEMA, **asdict(self)}

    def entry_json(self) -> dict[str, Any]:
        """What the store entry holds: the plan with its programs by key, never by path."""
        data = {"schema": PLAN_SCHEMA, "kind": "distributed", "world_size": self.world_size, **asdict(self)}
        del data["programs"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DistributedPlan:
        if data.get("schema") != PLAN_SCHEMA:
            raise ValueError(f"distributed plan: expected schema {PLAN_SCHEMA}, got {data.get('schema')!r}")
        if "kind" in data and data["kind"] != "distributed":
            raise ValueError(f"distributed plan: expected kind 'distributed', got {data['kind']!r}")
        return cls(
            name=data["name"],
            platform=data["platform"],
            runtime=data["runtime"],
            device_ids=tuple(data["device_ids"]),
            params=tuple(
                PlannedParam(
                    p["name"],
                    p["kind"],
                    tuple(p["shape"]),
                    p["dtype"],
                    p["direction"],
                    p.get("value"),
                    bool(p.get("local", False)),
                )
                for p in data["params"]
            ),
            windows=tuple(
                PlannedWindow(tuple(w["shape"]), w["dtype"], w["nbytes"], w["stride"])
                for w in data["windows"]
            ),
            programs=tuple(data.get("programs", ())),
            dispatches=tuple(
                PlannedDispatch(
                    d["rank"], d["program"], tuple(tuple(a) for a in d["args"]), d.get("phase", 0)
                )
                for d in data["dispatches"]
            ),
            callbacks=tuple(
                PlannedCallback(c["name"], tuple(tuple(a) for a in c["args"]), tuple(c.get("writes", ())))
                for c in data.get("callbacks", ())
            ),
            required_callbacks=tuple(data.get("required_callbacks", ())),
            program_keys=tuple(data.get("program_keys", ())),
            aicpu_thread_num=int(data.get("aicpu_thread_num", 0)),
        )

    @property
    def caller_params(self) -> tuple[PlannedParam, ...]:
        """The parameters a call passes (the body's own tensors, ``local``, come after them)."""
        return tuple(p for p in self.params if not p.local)

    def digest(self) -> str:
        return digest_of(self.to_json())


@dataclass(frozen=True)
class RankProgram:
    """A per-device program of a plan: its ArtifactKey, and ``obtain()``, which restores it from
    the store (or compiles it there) and returns its artifact directory."""

    key: str
    obtain: Callable[[], Path]


def plan_host(
    fn: HostFunction, args: tuple[Any, ...], kwargs: dict[str, Any], config: Any
) -> tuple[DistributedPlan, tuple[RankProgram, ...]]:
    """Trace ``fn`` on the example arguments: the plan (its programs by key, none compiled yet)
    and the per-device programs it launches."""
    from pypto.runtime.api import planned_program

    dc: DistributedConfig | None = getattr(config, "distributed_config", None)
    if dc is None:
        raise TypeError(
            f"{fn.__name__}.compile(..., config=...): a @pl.jit.host program needs "
            "config=RunConfig(distributed_config=DistributedConfig(device_ids=[...])); got "
            f"{'no config' if config is None else 'a RunConfig without distributed_config'}"
        )
    trace = fn.trace(args, kwargs, dc.world_size, make_tensor=placeholder)
    bound = fn.bind(args, kwargs)
    params = planned_params(fn.__name__, fn.param_names, bound, fn.param_directions())

    def program_of(d: Any, examples: list[Any]) -> tuple[Any, Callable[[], RankProgram]]:
        spec = d.fn.specialize(*examples)
        return (d.fn, spec.key), lambda: RankProgram(
            *planned_program(spec, platform=config.platform, runtime=config.runtime)
        )

    return plan_from_trace(fn.__name__, params, trace, config, program_of)


def planned_params(
    name: str, names: tuple[str, ...], values: tuple[Any, ...], directions: tuple[ParamDirection, ...]
) -> tuple[PlannedParam, ...]:
    """The host function's parameters as the plan records them (tensor dtypes checked)."""
    params = []
    for pname, value, direction in zip(names, values, directions, strict=True):
        if is_tensor(value):
            dtype = dtype_of(value, f"{name}(): parameter {pname!r}")
            element_size(dtype, f"{name}(): parameter {pname!r}")
            params.append(PlannedParam(pname, "tensor", shape_of(value), dtype.value, direction.value))
        else:
            params.append(PlannedParam(pname, "scalar", (), "", ParamDirection.IN.value, value))
    return tuple(params)


def _builtin_program(program: Any, config: Any) -> RankProgram:
    """The RankProgram of a host-level collective's builtin (pypto.language.distributed.builtin)."""
    from pypto.runtime.api import planned_program

    return RankProgram(*planned_program(program, platform=config.platform, runtime=config.runtime))


def placeholder(shape: tuple[int, ...], dtype: DataType, what: str) -> ByteTensor:
    """A zero tensor of ``shape`` and ``dtype`` (any whole-byte dtype, BF16 and FP8 too): an
    example argument to specialise a per-device program on."""
    import numpy

    size = element_size(dtype, what)
    return ByteTensor(numpy.zeros((*shape, size), dtype=numpy.uint8), dtype)


def plan_from_trace(
    name: str, params: tuple[PlannedParam, ...], trace: Any, config: Any, program_of: Any
) -> tuple[DistributedPlan, tuple[RankProgram, ...]]:
    """A plan of a recorded host body. ``program_of(dispatch, examples)`` returns the identity of
    the launched program's specialisation and a thunk making its :class:`RankProgram` (called
    once per identity). Nothing is compiled here: the plan names its programs by key."""
    dc: DistributedConfig = config.distributed_config
    threads = getattr(dc, "aicpu_thread_num", 0)
    if threads:
        _check_aicpu_threads(threads)
    params = (*params, *_local_params(trace, params))
    windows = []
    for w in trace.windows:
        size = element_size(w.dtype, f"pld.alloc_window_buffer(dtype) #{w.index}")
        n = 1
        for d in w.shape:
            n *= int(d)
        nbytes = size * n
        stride = max(WINDOW_ALIGN, -(-nbytes // WINDOW_ALIGN) * WINDOW_ALIGN)
        windows.append(PlannedWindow(w.shape, w.dtype.value, nbytes, stride))
    programs: list[RankProgram] = []
    by_key: dict[Any, int] = {}
    dispatches = []
    for d in trace.dispatches:
        declared = d.fn.declared_params()
        examples: list[Any] = []
        planned: list[tuple[Any, ...]] = []
        for p, a in zip(declared, d.args, strict=True):
            distributed = is_distributed_annotation(p.annotation)
            known = p.annotation is not None  # a @pl.program's chip orchestration: its IR does not say
            where = f"{d.fn.__name__}(): parameter {p.name!r} (rank {d.rank})"
            if isinstance(a, WindowView):
                if known and not distributed:
                    raise TypeError(
                        f"{where} receives a pld.window(...) view; annotate it pld.DistributedTensor[...]"
                    )
                examples.append(placeholder(tuple(a.shape), a.dtype, where))
                planned.append(("window", a.buffer.index, list(a.shape), a.dtype.value))
            elif isinstance(a, HostTensorRef):
                if distributed:
                    raise TypeError(
                        f"{where} is a pld.DistributedTensor; pass a pld.window(...) view, got host tensor {a.describe()}"
                    )
                examples.append(a.example)
                planned.append(("host", _param_index(a, params), list(a.path)))
            else:
                examples.append(lt.RUNTIME)
                planned.append(("scalar", a))
        builtin = getattr(d.fn, "builtin_program", None)  # a host-level collective (pld builtin)
        identity, make = (
            (("builtin", d.fn.__name__, id(builtin)), functools.partial(_builtin_program, builtin, config))
            if builtin is not None
            else program_of(d, examples)
        )
        index = by_key.get(identity)
        if index is None:
            index = by_key[identity] = len(programs)
            programs.append(make())
        dispatches.append(PlannedDispatch(d.rank, index, tuple(planned), d.phase))
    callbacks = tuple(
        PlannedCallback(
            c.name,
            tuple(
                ("host", _param_index(a, params), list(a.path))
                if isinstance(a, HostTensorRef)
                else ("scalar", a)
                for a in c.args
            ),
        )
        for c in getattr(trace, "sub_worker_calls", ())
    )
    plan = DistributedPlan(
        name=name,
        platform=config.platform,
        runtime=config.runtime,
        device_ids=tuple(dc.device_ids),
        params=params,
        windows=tuple(windows),
        programs=(),
        dispatches=tuple(dispatches),
        callbacks=callbacks,
        program_keys=tuple(p.key for p in programs),
        aicpu_thread_num=threads,
    )
    return plan, tuple(programs)


def _check_aicpu_threads(n: int) -> None:
    """``DistributedConfig(aicpu_thread_num)`` within what a simulated chip runs."""
    import simpler

    try:
        simpler.CallConfig(aicpu_thread_num=n).validate()
    except ValueError as exc:
        raise ValueError(
            f"DistributedConfig(aicpu_thread_num): {n} is more than a chip runs ({exc})"
        ) from None


def _local_params(trace: Any, params: tuple[PlannedParam, ...]) -> tuple[PlannedParam, ...]:
    """The host tensors the body created (``pl.create_tensor``), as parameters after the caller's."""
    out = []
    for t in getattr(trace, "tensors", ()):
        element_size(t.dtype, f"pl.create_tensor(dtype) #{t.index} in a host body")
        out.append(
            PlannedParam(t.name, "tensor", t.shape, t.dtype.value, ParamDirection.INOUT.value, local=True)
        )
    return tuple(out)


def _param_index(ref: HostTensorRef, params: tuple[PlannedParam, ...]) -> int:
    """The plan's parameter index of ``ref``: a caller's parameter, or (a negative ``param``,
    ``-1 - k``) the ``k``-th tensor the body created, which follows the caller's parameters."""
    if ref.param >= 0:
        return ref.param
    return sum(1 for p in params if not p.local) + (-1 - ref.param)
