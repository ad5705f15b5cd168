"""Compiling a ``@pl.jit.host`` program: its trace becomes a :class:`DistributedPlan`.

The host body runs once (``HostFunction.trace``); every launch ``fn(*args, device=r)`` becomes a
:class:`PlannedDispatch` whose per-device program is compiled through the single-chip path (one
store entry per distinct specialisation, shared by the ranks that launch it). A scalar argument of
a launch is a runtime scalar of the per-device program (``pl.RUNTIME``), so ranks that differ
only in scalars (their rank number) share one artifact. The plan is JSON-able; the compiled
program writes it to ``output_dir/plan.json``.
"""

from __future__ import annotations

import hashlib
import json
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

__all__ = ["WINDOW_ALIGN", "DistributedPlan", "PlannedDispatch", "PlannedParam", "PlannedWindow", "plan_host"]

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

    ``args`` per parameter: ``["host", param, [indices...]]``, ``["window", buffer]`` or
    ``["scalar", value]``.
    """

    rank: int
    program: int
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
                PlannedDispatch(d["rank"], d["program"], tuple(tuple(a) for a in d["args"]))
                for d in data["dispatches"]
            ),
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
    import numpy

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
    params = []
    for name, value, direction in zip(fn.param_names, bound, fn.param_directions(), strict=True):
        if is_tensor(value):
            dtype = dtype_of(value, f"{fn.__name__}(): parameter {name!r}")
            dtype_itemsize(dtype, f"{fn.__name__}(): parameter {name!r}")
            params.append(PlannedParam(name, "tensor", shape_of(value), dtype.value, direction.value))
        else:
            params.append(PlannedParam(name, "scalar", (), "", ParamDirection.IN.value, value))
    windows = []
    for w in trace.windows:
        _, size = dtype_itemsize(w.dtype, f"pld.alloc_window_buffer(dtype) #{w.index}")
        nbytes = size * int(numpy.prod(w.shape))
        stride = max(WINDOW_ALIGN, -(-nbytes // WINDOW_ALIGN) * WINDOW_ALIGN)
        windows.append(PlannedWindow(w.shape, w.dtype.value, nbytes, stride))
    programs: list[str] = []
    by_key: dict[tuple[Any, ...], int] = {}
    dispatches = []
    for d in trace.dispatches:
        declared = d.fn.declared_params()
        examples: list[Any] = []
        planned: list[tuple[Any, ...]] = []
        for p, a in zip(declared, d.args, strict=True):
            distributed = is_distributed_annotation(p.annotation)
            where = f"{d.fn.__name__}(): parameter {p.name!r} (rank {d.rank})"
            if isinstance(a, WindowView):
                if not distributed:
                    raise TypeError(
                        f"{where} receives a pld.window(...) view; annotate it pld.DistributedTensor[...]"
                    )
                ts, _ = dtype_itemsize(a.dtype, where)
                examples.append(numpy.zeros(a.shape, dtype=numpy.dtype(ts)))
                planned.append(("window", a.buffer.index))
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
        spec = d.fn.specialize(*examples)
        slot = (d.fn, spec.key)
        index = by_key.get(slot)
        if index is None:
            prog = compile_program(spec, platform=config.platform, runtime=config.runtime)
            index = by_key[slot] = len(programs)
            programs.append(str(prog.path))
        dispatches.append(PlannedDispatch(d.rank, index, tuple(planned)))
    return DistributedPlan(
        name=fn.__name__,
        platform=config.platform,
        runtime=config.runtime,
        device_ids=tuple(dc.device_ids),
        params=tuple(params),
        windows=tuple(windows),
        programs=tuple(programs),
        dispatches=tuple(dispatches),
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
