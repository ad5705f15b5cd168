"""Compiling a ``@pl.jit.host`` program: its trace becomes a :class:`DistributedPlan`.

The host body runs once (``HostFunction.trace``); every launch ``fn(*args, device=r)`` becomes a
:class:`PlannedDispatch` whose per-device program is compiled through the single-chip path (one
store entry per distinct specialisation, shared by the ranks that launch it). A scalar argument of
a launch is a runtime scalar of the per-device program (``pl.RUNTIME``), so ranks that differ
only in scalars (their rank number) share one artifact. The plan is JSON-able; the compiled
program writes it to ``output_dir/plan.json``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pypto.ir import DataType, DistributedConfig, ParamDirection, atomic_write
from pypto.language import typing as lt
from pypto.language.binding import dtype_of, is_tensor, shape_of
from pypto.language.distributed import is_distributed_annotation
from pypto.language.host import HostFunction
from pypto.language.host_trace import HostTensorRef, WindowView
from pypto.runtime import settings
from pypto.runtime.host_tensors import numpy_typestr

__all__ = [
    "WINDOW_ALIGN",
    "DistributedPlan",
    "PlannedCallback",
    "PlannedDispatch",
    "PlannedParam",
    "PlannedWindow",
    "plan_host",
]

# A rank's window is a whole number of 4 KiB pages (so at least 4 KiB, even for tiny data).
WINDOW_ALIGN = 4096
PLAN_FILE = "plan.json"
PLAN_SCHEMA = 1


@dataclass(frozen=True)
class PlannedParam:
    name: str
    kind: str  # "tensor" | "scalar"
    shape: tuple[int, ...]
    dtype: str  # DataType value ("" for a scalar)
    direction: str  # ParamDirection value
    value: Any = None  # a scalar's value: the host body ran with it, so the plan holds it


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
    """Callback ``index`` of the plan: the host-level SubWorker ``name``, run in the host
    process after the launches of phases ``0..index``. ``args`` as a launch's (``host`` or
    ``scalar``)."""

    name: str
    args: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class DistributedPlan:
    name: str
    platform: str
    runtime: str
    device_ids: tuple[int, ...]
    params: tuple[PlannedParam, ...]
    windows: tuple[PlannedWindow, ...]
    programs: tuple[str, ...]  # artifact directories (store entries)
    dispatches: tuple[PlannedDispatch, ...]
    callbacks: tuple[PlannedCallback, ...] = ()
    required_callbacks: tuple[str, ...] = ()  # SubWorkers that prepare(callbacks=) must bind

    @property
    def world_size(self) -> int:
        return len(self.device_ids)

    def to_json(self) -> dict[str, Any]:
        return {"schema": PLAN_SCHEMA, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DistributedPlan:
        if data.get("schema") != PLAN_SCHEMA:
            raise ValueError(f"distributed plan: expected schema {PLAN_SCHEMA}, got {data.get('schema')!r}")
        return cls(
            name=data["name"],
            platform=data["platform"],
            runtime=data["runtime"],
            device_ids=tuple(data["device_ids"]),
            params=tuple(
                PlannedParam(
                    p["name"], p["kind"], tuple(p["shape"]), p["dtype"], p["direction"], p.get("value")
                )
                for p in data["params"]
            ),
            windows=tuple(
                PlannedWindow(tuple(w["shape"]), w["dtype"], w["nbytes"], w["stride"])
                for w in data["windows"]
            ),
            programs=tuple(data["programs"]),
            dispatches=tuple(
                PlannedDispatch(
                    d["rank"], d["program"], tuple(tuple(a) for a in d["args"]), d.get("phase", 0)
                )
                for d in data["dispatches"]
            ),
            callbacks=tuple(
                PlannedCallback(c["name"], tuple(tuple(a) for a in c["args"]))
                for c in data.get("callbacks", ())
            ),
            required_callbacks=tuple(data.get("required_callbacks", ())),
        )

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()


def dtype_itemsize(dtype: DataType, what: str) -> tuple[str, int]:
    """(numpy type string, item size) of ``dtype``; a dtype numpy lacks is an error naming ``what``."""
    ts = numpy_typestr(dtype)
    if ts is None:
        raise TypeError(
            f"{what}: dtype {dtype.value} has no numpy type; distributed host tensors and windows "
            "travel through shared memory as numpy arrays"
        )
    return ts, int(ts[2:])


def plan_host(
    fn: HostFunction, args: tuple[Any, ...], kwargs: dict[str, Any], config: Any
) -> DistributedPlan:
    """Trace ``fn`` on the example arguments and compile every per-device program it launches."""
    from pypto.runtime.api import compile as compile_program

    dc: DistributedConfig | None = getattr(config, "distributed_config", None)
    if dc is None:
        raise TypeError(
            f"{fn.__name__}.compile(..., config=...): a @pl.jit.host program needs "
            "config=RunConfig(distributed_config=DistributedConfig(device_ids=[...])); got "
            f"{'no config' if config is None else 'a RunConfig without distributed_config'}"
        )
    trace = fn.trace(args, kwargs, dc.world_size)
    bound = fn.bind(args, kwargs)
    params = planned_params(fn.__name__, fn.param_names, bound, fn.param_directions())

    def compile_launch(d: Any, examples: list[Any]) -> tuple[Any, Callable[[], str]]:
        spec = d.fn.specialize(*examples)
        return (d.fn, spec.key), lambda: str(
            compile_program(spec, platform=config.platform, runtime=config.runtime).path
        )

    return plan_from_trace(fn.__name__, params, trace, config, compile_launch)


def planned_params(
    name: str, names: tuple[str, ...], values: tuple[Any, ...], directions: tuple[ParamDirection, ...]
) -> tuple[PlannedParam, ...]:
    """The host function's parameters as the plan records them (tensor dtypes checked)."""
    params = []
    for pname, value, direction in zip(names, values, directions, strict=True):
        if is_tensor(value):
            dtype = dtype_of(value, f"{name}(): parameter {pname!r}")
            dtype_itemsize(dtype, f"{name}(): parameter {pname!r}")
            params.append(PlannedParam(pname, "tensor", shape_of(value), dtype.value, direction.value))
        else:
            params.append(PlannedParam(pname, "scalar", (), "", ParamDirection.IN.value, value))
    return tuple(params)


def _compile_builtin(program: Any, config: Any) -> str:
    from pypto.runtime.api import compile as compile_program

    return str(compile_program(program, platform=config.platform, runtime=config.runtime).path)


def plan_from_trace(
    name: str, params: tuple[PlannedParam, ...], trace: Any, config: Any, compile_launch: Any
) -> DistributedPlan:
    """A plan of a recorded host body. ``compile_launch(dispatch, examples)`` returns the key of
    the launched program's specialisation and a thunk compiling it (called once per key)."""
    import numpy

    dc: DistributedConfig = config.distributed_config
    windows = []
    for w in trace.windows:
        _, size = dtype_itemsize(w.dtype, f"pld.alloc_window_buffer(dtype) #{w.index}")
        nbytes = size * int(numpy.prod(w.shape))
        stride = max(WINDOW_ALIGN, -(-nbytes // WINDOW_ALIGN) * WINDOW_ALIGN)
        windows.append(PlannedWindow(w.shape, w.dtype.value, nbytes, stride))
    programs: list[str] = []
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
                ts, _ = dtype_itemsize(a.dtype, where)
                examples.append(numpy.zeros(a.shape, dtype=numpy.dtype(ts)))
                planned.append(("window", a.buffer.index, list(a.shape), a.dtype.value))
            elif isinstance(a, HostTensorRef):
                if distributed:
                    raise TypeError(
                        f"{where} is a pld.DistributedTensor; pass a pld.window(...) view, got host tensor {a.describe()}"
                    )
                examples.append(a.example)
                planned.append(("host", a.param, list(a.path)))
            else:
                examples.append(lt.RUNTIME)
                planned.append(("scalar", a))
        builtin = getattr(d.fn, "builtin_program", None)  # a host-level collective (pld builtin)
        key, build = (
            (("builtin", d.fn.__name__, id(builtin)), functools.partial(_compile_builtin, builtin, config))
            if builtin is not None
            else compile_launch(d, examples)
        )
        index = by_key.get(key)
        if index is None:
            index = by_key[key] = len(programs)
            programs.append(build())
        dispatches.append(PlannedDispatch(d.rank, index, tuple(planned), d.phase))
    callbacks = tuple(
        PlannedCallback(
            c.name,
            tuple(
                ("host", a.param, list(a.path)) if isinstance(a, HostTensorRef) else ("scalar", a)
                for a in c.args
            ),
        )
        for c in getattr(trace, "sub_worker_calls", ())
    )
    return DistributedPlan(
        name=name,
        platform=config.platform,
        runtime=config.runtime,
        device_ids=tuple(dc.device_ids),
        params=params,
        windows=tuple(windows),
        programs=tuple(programs),
        dispatches=tuple(dispatches),
        callbacks=callbacks,
    )


def write_plan(plan: DistributedPlan, output_dir: str | Path | None = None) -> Path:
    """Write ``plan.json`` into ``output_dir`` (default: ``<store>/distributed/<digest>``)."""
    where = (
        Path(output_dir)
        if output_dir is not None
        else settings.cache_dir() / "distributed" / plan.digest()[:32]
    )
    where.mkdir(parents=True, exist_ok=True)
    atomic_write(where / PLAN_FILE, json.dumps(plan.to_json(), indent=1), mode=None)
    return where
