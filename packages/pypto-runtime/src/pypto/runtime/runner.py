"""The program runner: bind a call to the logical signature, allocate outputs, run on a Worker.

Binding and output allocation use the artifact's original, pre-lowering ``params`` (also after
a reload); ``lowered_params`` only shapes the orchestration's ABI signature. Caller storage is
passed by ``Buffer.wrap`` views, never copied. PROGRAM mode is claimed right before the Worker
is touched, after every argument has been checked.
"""

from __future__ import annotations

import atexit
import math
import sys
import weakref
from collections.abc import Mapping, Sequence
from ctypes import addressof, c_char
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.ir import (
    DEFAULT_PLATFORM,
    DEFAULT_RUNTIME,
    DYNAMIC,
    SIMULATOR_PLATFORMS,
    BackendType,
    Contract,
    DataType,
    Layout,
    OptimizationStrategy,
    ParamDirection,
    ParamInfo,
    PassDumpLevel,
    check_backend,
    check_dump_passes,
    check_strategy,
    partial_overlap,
    strided_alias_conflict,
)
from pypto.ir import ViewSpan as Span
from pypto.language.binding import is_tensor
from pypto.language.typing import is_runtime
from pypto.runtime import mode_gate
from pypto.runtime.host_tensors import (
    HostTensor,
    TensorBindingError,
    _module_type,
    allocate_like,
    check_against,
    describe,
    numpy_typestr,
)

if TYPE_CHECKING:
    from pypto.runtime.compiled import CompiledArtifact

__all__ = ["RunConfig", "bind_arguments", "bind_task_args", "call_results", "run_artifact"]


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
            other effect.
        backend_type: Checked against ``platform`` (``BackendType.Ascend910B``: a2a3,
            ``Ascend950``: a5); None: the platform's. The platform alone decides the build.
        dump_passes: A bool or a ``PassDumpLevel``: checked; a program-mode compile writes no
            per-pass dump (its generated sources are in the store entry);
            ``pypto.ir.compile(..., dump_passes=True)`` writes one.
        compile_profiling: A bool, checked; no effect: a program-mode compile goes through the
            artifact store and is timed by nobody (``nox -s bench`` measures the compile path).
        rtol, atol: The tolerances of a check of results against a reference that uses this
            config (``torch.allclose(out, ref, rtol=config.rtol, atol=config.atol)``); a run
            itself compares nothing. Each >= 0.
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
        check_strategy(self.strategy)
        check_backend(self.backend_type, self.platform)
        check_dump_passes(self.dump_passes)
        if not isinstance(self.compile_profiling, bool):
            raise ValueError(f"RunConfig(compile_profiling): expected a bool, got {self.compile_profiling!r}")
        t = self.timeout
        if t is not None and (
            isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0
        ):
            raise ValueError(
                f"RunConfig(timeout): expected None (no limit) or a finite number of seconds > 0, got {t!r}"
            )
        for name in ("rtol", "atol"):
            tol = getattr(self, name)
            if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol >= 0:
                raise ValueError(f"RunConfig({name}): expected a number >= 0, got {tol!r}")
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


def run_artifact(
    artifact: CompiledArtifact,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    config: RunConfig | None,
    key: tuple[Any, ...] | None = None,
) -> Any:
    """Run ``artifact`` (a CompiledArtifact with PROGRAM capability) on the caller's tensors.

    Args:
        key: The binder's call key of ``args`` (``pypto.language.binding.fast_key``), when the
            caller has it: a call whose key the plan has seen fills addresses and scalars only.
    """
    plan = artifact._call_plan
    if plan is None:
        plan = CallPlan(artifact)
        artifact._call_plan = plan  # computed once per artifact (a race computes it twice)
    return plan.run(args, kwargs, config, key)


class CallPlan:
    """What a program-mode call of one artifact needs, computed once per artifact: the
    parameter order, per tensor parameter its dtype (and the numpy type string it arrives
    as), rank, static dims, direction and descriptor layout, per scalar its wire code.

    A call whose arguments are all plain (every parameter passed positionally, each tensor a
    C-contiguous numpy array that owns its memory, or any other host tensor :func:`describe`
    accepts, each scalar a Python ``int``/``float``/``bool``, no two views overlapping) then
    only reads each array's address and shape, fills a ``simpler.ChipStorageTaskArgs`` and
    submits it. Anything else (omitted outputs, keywords, views, empty tensors, overlapping
    arguments, an argument that is wrong) takes the general path, which checks and reports
    exactly as before; the plan's path accepts only calls that the general one accepts with
    the same descriptors. Once PROGRAM mode is held and the Worker is known, a call of owned
    numpy arrays goes through the native plan (``simpler.CallPlan``: the same checks, the
    descriptors filled, submitted and waited for in one C++ call); what it declines takes the
    Python path above.
    """

    def __init__(self, artifact: CompiledArtifact) -> None:
        import simpler
        from pypto.runtime import worker
        from simpler._dtypes import arg_direction_code

        meta = artifact.metadata
        params: tuple[ParamInfo, ...] = tuple(meta.params)
        self.artifact = artifact
        self.name: str = meta.name
        self.params = params
        self.program_capable = Contract.PROGRAM.value in artifact.capabilities
        self.default_config: RunConfig | None = None
        self.return_aliases: tuple[int, ...] = tuple(meta.return_aliases)
        self.return_count: int = meta.return_count
        self.claim_what = f"{self.name}() on {artifact.platform}"
        # per tensor parameter: (slot, dtype, typestr, wire code, itemsize, shape pattern,
        # row-major strides when every dim is static, writes)
        tensors: list[
            tuple[int, DataType, str | None, int, int, tuple[int, ...], tuple[int, ...] | None, bool]
        ] = []
        directions: list[int] = []
        scalars: list[tuple[int, int]] = []
        fast = True
        for i, p in enumerate(params):
            if p.is_scalar:
                scalars.append((i, p.dtype.wire_code))
                continue
            assert p.shape is not None
            if p.layout is Layout.NZ or not 1 <= len(p.shape) <= 5:
                fast = False
            static = None
            if DYNAMIC not in p.shape and 0 not in p.shape:
                static = _row_major(p.shape)
            tensors.append(
                (
                    i,
                    p.dtype,
                    numpy_typestr(p.dtype),
                    p.dtype.wire_code,
                    p.dtype.itemsize,
                    tuple(p.shape),
                    static,
                    p.direction.writes,
                )
            )
            directions.append(arg_direction_code(getattr(simpler.ArgDirection, p.direction.value)))
        self.tensors = tuple(tensors)
        self.directions = tuple(directions)
        self.scalars = tuple(scalars)
        self.fast = fast
        self.np_dtypes: dict[DataType, Any] | None = None
        # RunConfig's Worker fields -> (shared-Worker generation, worker, handle)
        self.bound: dict[tuple[Any, ...], tuple[int, Any, Any]] = {}
        self.materialized = simpler.ChipStorageTaskArgs
        self.encode_scalar = simpler.task_args.encode_scalar
        self.shared_workers = worker
        # The native repeat-call path (simpler.CallPlan), built at the first call that numpy
        # is imported for (it needs numpy's buffer formats); None: no such path (a dtype
        # numpy has no type for, or not built yet). ``native_built`` says it was tried.
        self.native: Any = None
        self.native_built = False
        # binder call key -> a simpler.CallPlan that takes only calls of that key (exact
        # shapes, the key's scalar values), for the @pl.jit executor's hot path
        self.exact: dict[tuple[Any, ...], Any] = {}
        # RunConfig's Worker fields -> (shared-Worker generation, worker, plan target)
        self.targets: dict[tuple[Any, ...], tuple[int, Any, tuple[Any, Any, Any] | None]] = {}
        self.finish_plan_run = simpler.worker.finish_plan_run
        self.program_held = mode_gate.program_held

    def run(
        self,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        config: RunConfig | None,
        key: tuple[Any, ...] | None = None,
    ) -> Any:
        name = self.name
        if not self.program_capable:
            raise RuntimeError(
                f"{name}: this artifact was compiled for the KERNEL contract only; compile it with "
                "pypto.runtime.compile() to run it as a program"
            )
        if config is None:
            config = self.default_config
            if config is None:
                config = self.default_config = RunConfig(
                    platform=self.artifact.platform, runtime=self.artifact.runtime
                )
        elif type(config) is not RunConfig and not isinstance(config, RunConfig):
            raise TypeError(
                f"{name}(config=...): expected a pypto.runtime.RunConfig, got {type(config).__name__}"
            )
        if config.platform != self.artifact.platform:
            raise ValueError(
                f"{name}: compiled for platform {self.artifact.platform!r} but RunConfig.platform is "
                f"{config.platform!r}; recompile, or reload with CompiledProgram.from_dir(path, platform=...)"
            )
        if config.runtime != self.artifact.runtime:
            raise ValueError(
                f"{name}: compiled for runtime {self.artifact.runtime!r} but RunConfig.runtime is "
                f"{config.runtime!r}; an artifact runs only on the runtime it was built for: recompile "
                f"with runtime={config.runtime!r}, or run with RunConfig(runtime={self.artifact.runtime!r})"
            )
        mat = None
        if self.fast and not kwargs and len(args) == len(self.params):
            native = self.native
            if native is None and not self.native_built:
                native = self._build_native()
            if native is not None:
                if type(args) is not tuple:
                    args = tuple(args)
                done = self.run_native(native, args, config)
                if done is not DECLINED:
                    return done
            mat = self._materialize(args)
        if mat is None:
            return _run_general(self.artifact, args, kwargs, config)
        return self._submit(mat, args, config)

    def run_native(self, native: Any, args: tuple[Any, ...], config: RunConfig) -> Any:
        """Run a call through ``native`` (a simpler.CallPlan of this plan): its result, or
        DECLINED when the native path did not take it (nothing was submitted): PROGRAM mode
        not held yet (the first call claims it after its checks), no current Worker target,
        or arguments the native plan leaves to the other paths."""
        if not self.program_held():
            return DECLINED
        wkey = (config.platform, config.runtime, config.device_id, config.aic_threads, config.aiv_threads)
        known = self.targets.get(wkey)
        if known is None or known[0] != self.shared_workers.shared_generation() or known[1]._closed:
            return DECLINED  # _submit (re)registers and records the target
        target = known[2]
        if target is None or config.effective_call_config is not None:
            return DECLINED
        timeout = config.timeout
        run = native.run(*target, args, -1.0 if timeout is None else timeout)
        if run is None:
            return DECLINED
        self.finish_plan_run(run, timeout)
        if self.return_count == 0:
            return None
        if self.return_count == 1:
            return args[self.return_aliases[0]]
        return tuple(args[a] for a in self.return_aliases)

    def _build_native(self, key: tuple[Any, ...] | None = None) -> Any:
        """A simpler.CallPlan of this plan's parameters (the shape patterns), or, for a binder
        call key, of that key's exact shapes and scalar values; None when numpy is not
        imported or has no type for a parameter's dtype."""
        import simpler

        numpy = sys.modules.get("numpy")
        if numpy is None:
            return None
        if key is None:
            self.native_built = True
        tensors = []
        for slot, _dtype, typestr, code, itemsize, pattern, _static, writes in self.tensors:
            if typestr is None:
                return None
            fmt = _buffer_format(numpy, typestr)
            shape = tuple(DYNAMIC if d == DYNAMIC else d for d in pattern)
            if key is not None:
                shape = tuple(key[slot][1])
            tensors.append((slot, code, fmt, itemsize, list(shape), writes))
        fixed = []
        if key is not None:
            # the key's scalars, by type and value: what names the key's specialisation
            fixed = [(i, k[1]) for i, k in enumerate(key) if k[0] in _PLAIN_SCALARS]
        plan = simpler.CallPlan(
            numpy.ndarray, len(self.params), tensors, list(self.scalars), fixed, self.encode_scalar
        )
        _release_at_exit(self)
        if key is None:
            self.native = plan
        return plan

    def exact_plan(self, key: tuple[Any, ...]) -> Any:
        """The simpler.CallPlan that takes only calls of binder call key ``key`` whose
        tensors are numpy arrays (None: that key has none); made once per key."""
        plan = self.exact.get(key, DECLINED)
        if plan is DECLINED and len(self.exact) < _MAX_LAYOUTS:
            ndarray = _module_type("numpy", "ndarray")
            plan = None
            if (
                self.fast
                and ndarray is not None
                and len(key) == len(self.params)
                and all(key[slot][0] is ndarray for slot, *_ in self.tensors)
            ):
                plan = self._build_native(key)
            self.exact[key] = plan
        return None if plan is DECLINED else plan

    def _materialize(self, args: Sequence[Any]) -> Any:
        """The call's ChipStorageTaskArgs, or None when it needs the general path."""
        ndarray: Any = _module_type("numpy", "ndarray")  # never imports numpy
        np_dtypes = self._numpy_dtypes(ndarray)
        descriptors = []
        spans = []
        for slot, dtype, _typestr, code, itemsize, pattern, static, writes in self.tensors:
            a = args[slot]
            if type(a) is ndarray and a.base is None and a.flags.c_contiguous:
                # An array that owns its memory, row-major: the view is its whole storage.
                if a.dtype is not np_dtypes.get(dtype):
                    return None  # another dtype or byte order: the general path decides
                try:
                    ptr = addressof(c_char.from_buffer(a))  # writable arrays (cheapest)
                except TypeError:  # read-only
                    if writes:
                        return None
                    ptr = a.__array_interface__["data"][0]
                shape = a.shape
                if static is not None:
                    if shape != pattern:
                        return None
                    strides = static
                else:
                    if not _matches(shape, pattern):
                        return None
                    strides = _row_major(shape)
                nbytes = a.nbytes
                descriptors.append((ptr, nbytes, code, shape, strides, 0))
                spans.append((ptr, ptr + nbytes))
                continue
            if a is None:
                return None
            try:
                view = describe(a, what="")
            except TensorBindingError:
                return None
            if (
                view.dtype is not dtype
                or not view.span_bytes
                or not _matches(view.shape, pattern)
                or (writes and view.readonly)
                or any(not 0 < s < 1 << 32 for s in view.strides)
            ):
                return None
            descriptors.append(
                (
                    view.storage_ptr,
                    view.storage_nbytes,
                    code,
                    view.shape,
                    view.strides,
                    view.offset_bytes // itemsize,
                )
            )
            spans.append((view.ptr, view.ptr + view.span_bytes))
        return self._finish(descriptors, spans, args)

    def _finish(self, descriptors: list[Any], spans: list[tuple[int, int]], args: Sequence[Any]) -> Any:
        """Check that the views are disjoint, encode the scalars, build the ChipStorageTaskArgs
        (None: the general path decides)."""
        encode_scalar = self.encode_scalar
        if len(spans) > 1:  # the alias rule: disjoint views only here (others: general path)
            spans.sort()
            reach = 0
            for lo, hi in spans:
                if lo < reach:
                    return None
                reach = hi
        bits = []
        for slot, code in self.scalars:
            v = args[slot]
            if type(v) not in _PLAIN_SCALARS:
                return None
            try:
                bits.append(encode_scalar(v, code))
            except ValueError:
                return None
        return self.materialized(tuple(descriptors), self.directions, tuple(bits))

    def _numpy_dtypes(self, ndarray: type | None) -> dict[DataType, Any]:
        """DataType -> the native-order numpy dtype object (numpy's dtype singletons, compared
        by identity), for the numpy dtypes of the tensor parameters; computed once."""
        found = self.np_dtypes
        if found is None and ndarray is not None:
            import numpy

            found = self.np_dtypes = {dt: numpy.dtype(ts) for _, dt, ts, *_ in self.tensors if ts is not None}
        return found or {}

    def _submit(self, mat: Any, args: Sequence[Any], config: RunConfig) -> Any:
        shared = self.shared_workers
        callable_ = self.artifact.chip_callable()  # loading native code never claims a mode
        mode_gate.claim_program(self.claim_what)
        key = (config.platform, config.runtime, config.device_id, config.aic_threads, config.aiv_threads)
        bound = self.bound.get(key)
        if bound is not None and bound[0] == shared.shared_generation():
            worker, handle = bound[1], bound[2]
        else:
            generation = shared.shared_generation()
            worker, handle = shared.register_on_shared_worker(
                callable_,
                config.platform,
                config.runtime,
                config.device_id,
                aic_threads=config.aic_threads,
                aiv_threads=config.aiv_threads,
            )
            self.bound[key] = (generation, worker, handle)
            self.targets[key] = (generation, worker, worker.plan_target(handle))
        worker.run(handle, mat, config.effective_call_config, timeout=config.timeout, keep_alive=args)
        if self.return_count == 0:
            return None
        if self.return_count == 1:
            return args[self.return_aliases[0]]
        return tuple(args[a] for a in self.return_aliases)


_PLAIN_SCALARS = frozenset((int, float, bool))
DECLINED: Any = object()  # CallPlan.run_native: the native path did not take the call

_with_native: weakref.WeakSet[CallPlan] = weakref.WeakSet()


def _release_native_plans() -> None:
    """atexit: drop every native plan (simpler.CallPlan) while the interpreter is whole. A
    CallPlan can outlive finalization through a jit function that something immortal holds
    (torch's operator registry keeps a registered operator's kernel, and with it the function
    and its compiled programs, until the process ends); nanobind would report it as leaked."""
    for plan in list(_with_native):
        plan.native = None
        plan.exact.clear()


def _release_at_exit(plan: CallPlan) -> None:
    if not _with_native:
        atexit.unregister(_release_native_plans)
        atexit.register(_release_native_plans)
    _with_native.add(plan)


_MAX_LAYOUTS = 256  # exact plans per artifact, as the binder's keys per function


def _buffer_format(numpy: Any, typestr: str) -> str:
    """The buffer-protocol format string a native-order numpy array of ``typestr`` exports."""
    return memoryview(numpy.empty(1, numpy.dtype(typestr))).format


def _matches(shape: Sequence[int], pattern: Sequence[int]) -> bool:
    """``shape`` has ``pattern``'s rank and static dims, and no dimension of extent 0."""
    if len(shape) != len(pattern):
        return False
    return all(w in (DYNAMIC, g) and 0 < g < 1 << 32 for w, g in zip(pattern, shape, strict=True))


def _row_major(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def _run_general(artifact: Any, args: Sequence[Any], kwargs: Mapping[str, Any], config: RunConfig) -> Any:
    """Every call the plan does not take: binds, describes, checks and reports in full."""
    from pypto.runtime.worker import register_on_shared_worker

    meta = artifact.metadata
    task_args, slots = bind_task_args(artifact, args, kwargs)
    callable_ = artifact.chip_callable()  # loading native code never claims a mode
    mode_gate.claim_program(f"{meta.name}() on {config.platform}")
    worker, handle = register_on_shared_worker(
        callable_,
        config.platform,
        config.runtime,
        config.device_id,
        aic_threads=config.aic_threads,
        aiv_threads=config.aiv_threads,
    )
    worker.run(handle, task_args, config.effective_call_config, timeout=config.timeout)
    return call_results(artifact, slots)


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
