"""A program call's configuration (:class:`RunConfig`) and its general path: bind a call to the
logical signature, allocate outputs, check every argument, run on a Worker. The faster routes
that a repeat call takes are :mod:`pypto.runtime.call_plan`'s; what they decline comes here.

Binding and output allocation use the artifact's original, pre-lowering ``params`` (also after
a reload); ``lowered_params`` only shapes the orchestration's ABI signature. Caller storage is
passed by ``Buffer.wrap`` views, never copied. PROGRAM mode is claimed right before the Worker
is touched, after every argument has been checked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.ir import (
    DEFAULT_PLATFORM,
    DEFAULT_RUNTIME,
    DYNAMIC,
    SIMULATOR_PLATFORMS,
    BackendType,
    Layout,
    OptimizationStrategy,
    ParamDirection,
    ParamInfo,
    PassDumpLevel,
    partial_overlap,
    strided_alias_conflict,
)
from pypto.ir import ViewSpan as Span
from pypto.language.interface import is_runtime, is_tensor, marks_user_errors
from pypto.runtime import mode_gate, upstream
from pypto.runtime.host_tensors import (
    HostTensor,
    TensorBindingError,
    allocate_like,
    check_against,
    describe,
)

if TYPE_CHECKING:
    pass

__all__ = ["RunConfig", "bind_arguments", "bind_task_args", "call_results", "register_for", "run_general"]


@dataclass(frozen=True)
class RunConfig:
    """How a program runs.

    Args:
        platform: ``"a2a3sim"`` (default) or ``"a5sim"``; ``"a2a3"``/``"a5"`` need an NPU.
        runtime: The chip runtime: ``"tensormap_and_ringbuffer"`` (TMR, default) or
            ``"host_build_graph"`` (HBG); it must be the one the artifact was compiled for.
        device_id: Device ordinal (0 on the simulator).
        call_config: A ``simpler.CallConfig`` for ring sizes and diagnostics (None: defaults).
        timeout: Seconds to wait for the run, finite and > 0 (None: no limit).
        aic_threads: Simulated AICore cube (AIC) threads (None: what this machine runs well,
            ``pypto.runtime.worker.default_core_threads()``; 1 per 2 CPUs, 1..2).
        aiv_threads: Simulated AICore vector (AIV) threads (None: the default, 1 per CPU, 1..4).
            Independent tasks run in parallel on these threads (traces show it); runs with
            different counts use different shared Workers.
        enable_chip_swimlane: The chip's swimlane trace: False/0 off; True or a level 1..4
            writes it (the simulator has one level of detail: every level writes the same
            trace, Chrome/Perfetto JSON ``<swimlane_dir>/<program>_call<k>.swimlane.json``);
            it is ``call_config.swimlane`` set on a copy of ``call_config``.
        swimlane_dir: Where the swimlane trace goes (default ``build_output/swimlane`` under
            the current directory); only with ``enable_chip_swimlane``.
        strategy: ``OptimizationStrategy.Default``, the compiler's one pipeline: checked, no
            other effect. (This field and the next five exist for upstream programs only:
            ``pypto.runtime.upstream``.)
        backend_type: Checked against ``platform`` (``BackendType.Ascend910B``: a2a3,
            ``Ascend950``: a5); None: the platform's. The platform alone decides the build.
        dump_passes: A bool or a ``PassDumpLevel``: checked; a program-mode compile writes no
            per-pass dump (its generated sources are in the store entry);
            ``pypto.ir.compile(..., dump_passes=True)`` writes one.
        compile_profiling: A bool, checked; no effect: a program-mode compile goes through the
            artifact store and is timed by nobody (``nox -s bench`` measures the compile path).
        rtol: The relative tolerance of a check of results against a reference that uses
            this config (``torch.allclose(out, ref, rtol=config.rtol, atol=config.atol)``); a
            run itself compares nothing. >= 0.
        atol: The absolute tolerance of that check, as ``rtol``. >= 0.
        distributed_config: A ``pypto.ir.DistributedConfig`` (which devices are the ranks)
            for compiling a ``@pl.jit.host`` program; None for a single-chip program.
    """

    platform: str = DEFAULT_PLATFORM
    runtime: str = DEFAULT_RUNTIME
    device_id: int = 0
    call_config: Any = None
    timeout: float | None = None
    aic_threads: int | None = None
    aiv_threads: int | None = None
    enable_chip_swimlane: bool | int = False
    swimlane_dir: str | None = None
    strategy: OptimizationStrategy | str = OptimizationStrategy.Default
    backend_type: BackendType | str | None = None
    dump_passes: bool | PassDumpLevel = False
    rtol: float = 1e-5
    atol: float = 1e-5
    compile_profiling: bool = False
    distributed_config: Any = None
    # the CallConfig a run passes to the Worker: call_config, with the swimlane setting applied
    effective_call_config: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from pypto.ir import RUNTIMES, DistributedConfig, get_platform, parse_platform
        from pypto.runtime import settings

        if self.distributed_config is not None and not isinstance(self.distributed_config, DistributedConfig):
            raise TypeError(
                "RunConfig(distributed_config): expected a pypto.ir.DistributedConfig or None, got "
                f"{type(self.distributed_config).__name__}"
            )

        parse_platform(self.platform)
        if not get_platform(self.platform).simulated and settings.simulate_npu():
            chip = get_platform(self.platform).hardware
            simulator = next(n for n in SIMULATOR_PLATFORMS if get_platform(n).hardware == chip)
            object.__setattr__(self, "platform", simulator)
            object.__setattr__(self, "device_id", 0)
        if self.runtime not in RUNTIMES:
            raise ValueError(
                f"RunConfig(runtime): expected one of {', '.join(RUNTIMES)}, got {self.runtime!r}"
            )
        if isinstance(self.device_id, bool) or not isinstance(self.device_id, int) or self.device_id < 0:
            raise ValueError(f"RunConfig(device_id): expected an int >= 0, got {self.device_id!r}")
        for name in ("aic_threads", "aiv_threads"):
            n = getattr(self, name)
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 64):
                raise ValueError(f"RunConfig({name}): expected None or an int in [0, 64], got {n!r}")
        if self.aic_threads == 0 and self.aiv_threads == 0:
            raise ValueError(
                "RunConfig(aic_threads, aiv_threads): expected at least one AICore thread, got 0"
            )
        level = self.enable_chip_swimlane
        if isinstance(level, bool):
            level = 4 if level else 0
        if not isinstance(level, int) or not 0 <= level <= 4:
            raise ValueError(
                f"RunConfig(enable_chip_swimlane): expected a bool or an int level in [0, 4], got "
                f"{self.enable_chip_swimlane!r}"
            )
        if self.swimlane_dir is not None and not level:
            raise ValueError(
                f"RunConfig(swimlane_dir): given as {self.swimlane_dir!r} but enable_chip_swimlane is off; "
                "set enable_chip_swimlane=True to write the trace"
            )
        upstream.check_fields(self)  # the six fields that exist for upstream programs only
        t = self.timeout
        if t is not None and (
            isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0
        ):
            raise ValueError(
                f"RunConfig(timeout): expected None (no limit) or a finite number of seconds > 0, got {t!r}"
            )
        call_config = self.call_config
        if level:
            call_config = _with_swimlane(
                call_config, self.swimlane_dir or str(Path("build_output", "swimlane"))
            )
        object.__setattr__(self, "effective_call_config", call_config)
        prefix = getattr(call_config, "output_prefix", None)
        if prefix:
            from pypto.runtime import settings

            root = settings.cache_dir().resolve()
            where = Path(prefix).resolve()
            if where == root or root in where.parents:
                raise ValueError(
                    f"RunConfig(call_config.output_prefix): {prefix!r} is inside the artifact store "
                    f"{str(root)!r}, which is immutable; write diagnostics somewhere else"
                )


_CALL_CONFIG_FIELDS = (
    "aicpu_thread_num",
    "dep_graph",
    "dep_pool",
    "heap",
    "orchestrate_on_caller",
    "rings",
    "task_window",
    "validate",
    "workspace_budget_bytes",
)


def _with_swimlane(call_config: Any, where: str) -> Any:
    """A copy of ``call_config`` (None: the defaults) with the swimlane trace on, written under
    ``where`` (created), unless ``call_config`` already names an ``output_prefix``."""
    import simpler

    made = simpler.CallConfig()
    if call_config is not None:
        for name in _CALL_CONFIG_FIELDS:
            setattr(made, name, getattr(call_config, name))
    prefix = getattr(call_config, "output_prefix", None) or str(Path(where).resolve())
    made.swimlane = True
    made.output_prefix = prefix
    return made


def _signature_text(params: Sequence[ParamInfo]) -> str:
    return ", ".join(f"{p.name}:{'scalar' if p.is_scalar else p.direction.value}" for p in params)


@marks_user_errors  # its errors name the parameter: shown without pypto's frames
def bind_arguments(
    name: str, params: Sequence[ParamInfo], args: Sequence[Any], kwargs: Mapping[str, Any]
) -> list[Any]:
    """Match a call to ``params``: every parameter positionally or by name, or (PROGRAM)
    every Out parameter omitted together. Omitted Out slots are returned as None."""
    by_name = {p.name: i for i, p in enumerate(params)}
    for k in kwargs:
        if k not in by_name:
            raise TypeError(
                f"{name}(): unexpected keyword argument {k!r}; parameters are ({_signature_text(params)})"
            )
    if len(args) + len(kwargs) == len(params) or kwargs:
        slots: list[Any] = [None] * len(params)
        filled = [False] * len(params)
        if len(args) > len(params):
            raise TypeError(
                f"{name}(): takes {len(params)} arguments ({_signature_text(params)}), got {len(args)}"
            )
        for i, a in enumerate(args):
            slots[i], filled[i] = a, True
        for k, v in kwargs.items():
            i = by_name[k]
            if filled[i]:
                raise TypeError(f"{name}(): parameter {k!r} given twice")
            slots[i], filled[i] = v, True
        for i, p in enumerate(params):
            if not filled[i] and p.direction is not ParamDirection.OUT:
                raise TypeError(
                    f"{name}(): parameter {p.name!r} ({p.direction.value}) was not supplied; "
                    f"parameters are ({_signature_text(params)})"
                )
            if filled[i] and slots[i] is None:
                raise _none_error(name, p)
        return slots
    inputs = [i for i, p in enumerate(params) if p.direction is not ParamDirection.OUT]
    if len(args) != len(inputs):
        raise TypeError(
            f"{name}(): expected {len(params)} arguments ({_signature_text(params)}), or the "
            f"{len(inputs)} non-Out ones with the Out parameters allocated for you; got {len(args)}"
        )
    slots = [None] * len(params)
    for i, a in zip(inputs, args, strict=True):
        if a is None:
            raise _none_error(name, params[i])
        slots[i] = a
    return slots


def _none_error(name: str, p: ParamInfo) -> TypeError:
    """None is never an argument (an omitted Out is left out, not passed as None)."""
    if p.is_scalar:
        return TypeError(f"{name}(): parameter {p.name!r} is a {p.dtype.value} scalar; got NoneType")
    return TypeError(
        f"{name}(): parameter {p.name!r} ({p.direction.value}) is a tensor; got NoneType (pass a torch "
        "tensor or numpy array; Out parameters may be left out together to have them allocated)"
    )


def _output_shape(name: str, p: ParamInfo) -> tuple[int, ...]:
    assert p.shape is not None
    if DYNAMIC in p.shape:
        raise TypeError(
            f"{name}(): Out parameter {p.name!r} has dynamic shape {list(p.shape)}; pass the output "
            "tensor explicitly so its extents are known"
        )
    return p.shape


def register_for(config: RunConfig, callable_: Any) -> tuple[Any, Any]:
    """``callable_`` registered on the shared Worker of ``config`` (platform, runtime, device and
    core threads): the Worker and the registration handle."""
    from pypto.runtime.worker import register_on_shared_worker

    return register_on_shared_worker(
        callable_,
        config.platform,
        config.runtime,
        config.device_id,
        aic_threads=config.aic_threads,
        aiv_threads=config.aiv_threads,
    )


def run_general(artifact: Any, args: Sequence[Any], kwargs: Mapping[str, Any], config: RunConfig) -> Any:
    """Every call the plan does not take: binds, describes, checks and reports in full."""
    meta = artifact.metadata
    task_args, slots = bind_task_args(artifact, args, kwargs)
    callable_ = artifact.chip_callable()  # loading native code never claims a mode
    mode_gate.claim_program(f"{meta.name}() on {config.platform}")
    worker, handle = register_for(config, callable_)
    worker.run(handle, task_args, config.effective_call_config, timeout=config.timeout)
    return call_results(artifact, slots)


@marks_user_errors
def bind_task_args(artifact: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, list[Any]]:
    """A call of ``artifact``'s program as ``simpler.TaskArgs``, and the arguments in parameter
    order (omitted Out tensors allocated): binds, describes and checks every argument against
    its parameter, and the views against each other, before anything runs."""
    import simpler

    meta = artifact.metadata
    name = meta.name
    params = meta.params
    slots = bind_arguments(name, params, args, kwargs)

    # Describe and check every supplied tensor before anything is allocated or claimed.
    views: dict[int, HostTensor] = {}
    bound: dict[str, int] = {}
    for i, (p, a) in enumerate(zip(params, slots, strict=True)):
        what = f"{name}(): argument {p.name!r}"
        if p.is_scalar:
            if is_runtime(a):
                raise TypeError(
                    f"{what}: pl.RUNTIME marks a runtime scalar when compiling; a call passes its "
                    f"{p.dtype.value} value"
                )
            if is_tensor(a) or isinstance(a, (list, tuple)) or a is None:
                raise TypeError(f"{what}: expected a {p.dtype.value} scalar, got {type(a).__name__}")
            continue
        if p.layout is Layout.NZ:
            raise NotImplementedError(
                f"{what}: NZ-layout parameters need host-side NZ packing, not provided yet"
            )
        if a is None:
            continue
        view = describe(a, what=what)
        check_against(view, p, bound, what=what)
        views[i] = view
    supplied = [a for a in slots if a is not None and is_tensor(a)]
    for i, p in enumerate(params):
        if p.is_tensor and slots[i] is None:
            slots[i] = allocate_like(_output_shape(name, p), p.dtype, supplied)
            views[i] = describe(slots[i], what=f"{name}(): output {p.name!r}")
    _check_aliasing(name, params, views)

    task_args = simpler.TaskArgs()
    for i, p in enumerate(params):
        if p.is_tensor:
            task_args.add_tensor(
                _chip_view(simpler, views[i], f"{name}(): argument {p.name!r}"),
                getattr(simpler.ArgDirection, p.direction.value),
            )
    for i, p in enumerate(params):
        if p.is_scalar:
            try:
                task_args.add_scalar(slots[i], p.dtype.wire_code)
            except ValueError as exc:
                raise TensorBindingError(f"{name}(): scalar {p.name!r}: {exc}") from None
    return task_args, slots


def call_results(artifact: Any, slots: Sequence[Any]) -> Any:
    """What a call returns: None, the one returned argument, or a tuple of them."""
    meta = artifact.metadata
    results = tuple(slots[a] for a in meta.return_aliases)
    if meta.return_count == 0:
        return None
    if meta.return_count == 1:
        return results[0]
    return results


def _chip_view(simpler: Any, v: HostTensor, what: str) -> Any:
    """The chip's view of ``v``: its whole storage wrapped (no copy), the view at its offset,
    so that the chip checks the view's extent against the real capacity too."""
    if not v.span_bytes:  # empty: touches nothing, may start past its storage's capacity
        return simpler.Buffer.allocate(1).tensor(v.shape, v.dtype.wire_code, v.strides)
    try:
        buf = simpler.Buffer.wrap(v.storage_ptr, v.storage_nbytes, owner=v.owner)
        return buf.tensor(v.shape, v.dtype.wire_code, v.strides, byte_offset=v.offset_bytes)
    except ValueError as exc:
        raise TensorBindingError(f"{what}: {exc}") from None


def _check_aliasing(name: str, params: Sequence[ParamInfo], views: Mapping[int, HostTensor]) -> None:
    """pypto.ir.storage_rules' alias rule, as describe_call applies it: exact aliases, disjoint
    views and overlapping read-only views pass; a partial overlap with a written view fails."""
    spans: list[Span] = [
        (v.ptr, v.ptr + v.span_bytes, i, params[i].direction.writes) for i, v in views.items() if v.span_bytes
    ]
    if len(spans) < 2:
        return
    found = partial_overlap(list(spans))
    problem = "partially overlap"
    if found is None:
        layouts = [views[i].layout if i in views else None for i in range(len(params))]
        found = strided_alias_conflict(spans, layouts)
        problem = "cover the same bytes with different layouts (shape/strides)"
        if found is None:
            return
    (a, va), (b, vb) = ((j, views[j]) for j in sorted(found))
    pa, pb = params[a], params[b]
    raise TensorBindingError(
        f"{name}(): parameters {pa.name!r} ({pa.direction.value}, bytes [{va.ptr:#x}, {va.ptr + va.span_bytes:#x})) "
        f"and {pb.name!r} ({pb.direction.value}, bytes [{vb.ptr:#x}, {vb.ptr + vb.span_bytes:#x})) {problem}; "
        "a written view may only alias another view exactly or be disjoint from it (pass a copy)"
    )
