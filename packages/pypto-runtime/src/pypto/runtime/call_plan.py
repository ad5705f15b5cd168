"""The call plan of a program-mode call: which route a call of a compiled artifact takes.

Routes, fastest first (each declines what it cannot take, before anything runs, to the next):

1. **exact** (:meth:`CallPlan.exact_plan`): a ``simpler.CallPlan`` for one binder call key
   (exact shapes, dtypes and folded scalar values), bound to the current Worker's chip
   (:meth:`CallPlan.bound_call`: a ``simpler.BoundCall``) and kept on the ``@pl.jit`` function
   as its executor plan (``pypto.ir.execution.set_executor_plan``) for its repeat calls with
   the default RunConfig: the function's ``__call__`` calls it directly, no binding, no
   specialising, no Python in between. It is dropped whenever what it was bound to changes
   (the shared Workers, the mode gate, a fork: ``pypto.ir.execution.clear_executor_plans``).
2. **native** (:meth:`CallPlan.run_native`): the artifact's ``simpler.CallPlan`` over its shape
   patterns; once PROGRAM mode is held and the Worker is known, a call of owned numpy arrays is
   checked, filled, submitted and waited for in one C++ call.
3. **plan** (:meth:`CallPlan._materialize` and ``_submit``): plain arguments (every parameter
   positional, C-contiguous owned arrays or other described host tensors, Python scalars, no
   overlaps) fill a ``simpler.ChipStorageTaskArgs`` from addresses and shapes only.
4. **general** (:func:`pypto.runtime.runner.run_general`): everything else (omitted outputs,
   keywords, views, empty tensors, overlapping or wrong arguments) is bound, described,
   checked and reported in full.

Every route accepts only calls the general one accepts, with the same descriptors.
"""

from __future__ import annotations

import atexit
import sys
import weakref
from collections.abc import Mapping, Sequence
from ctypes import addressof, c_char
from typing import TYPE_CHECKING, Any

from pypto.ir import DECLINED as _DECLINED
from pypto.ir import DYNAMIC, Contract, DataType, Layout, ParamInfo, clear_executor_plans, set_executor_plan
from pypto.runtime import mode_gate
from pypto.runtime.host_tensors import TensorBindingError, _module_type, _row_major, describe, numpy_typestr
from pypto.runtime.runner import RunConfig, register_for, run_general

if TYPE_CHECKING:
    from pypto.runtime.compiled import CompiledArtifact

__all__ = ["DECLINED", "CallPlan", "run_artifact"]

_PLAIN_SCALARS = frozenset((int, float, bool))
DECLINED: Any = _DECLINED  # the native path did not take the call

_with_native: weakref.WeakSet[CallPlan] = weakref.WeakSet()


def _release_native_plans() -> None:
    """atexit: drop every native plan (simpler.CallPlan) while the interpreter is whole. A
    CallPlan can outlive finalization through a jit function that something immortal holds
    (torch's operator registry keeps a registered operator's kernel, and with it the function
    and its compiled programs, until the process ends); nanobind would report it as leaked."""
    clear_executor_plans()  # the bound calls (simpler.BoundCall) hold native plans
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
        # A CompiledProgram call with no config and positional arguments goes straight to this
        # (a simpler.BoundCall of ``native`` on the default config's Worker), kept and dropped
        # as a @pl.jit function's executor plan is (pypto.ir.execution.set_executor_plan).
        self.executor_plan: Any = None

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
                    if config is self.default_config and self.executor_plan is None:
                        hot = self.bound_call(native, config)
                        # the bound method: calling it goes straight to the native function,
                        # where calling the object first looks __call__ up on its type
                        set_executor_plan(self, None if hot is None else hot.__call__)
                    return done
            mat = self._materialize(args)
        if mat is None:
            return run_general(self.artifact, args, kwargs, config)
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
        # read the arrays' fields instead of their buffer exports, where numpy's layout is
        # the one the plan knows (checked on these probes)
        probe = numpy.zeros((2, 3), numpy.float32)
        readonly = numpy.zeros((2, 3), numpy.float32)
        readonly.flags.writeable = False
        dtypes = [numpy.dtype(typestr) for _, _, typestr, *_ in self.tensors]
        plan.use_array_fields(probe, readonly, probe[1:], dtypes)
        _release_at_exit(self)
        if key is None:
            self.native = plan
        return plan

    def bound_call(self, native: Any, config: RunConfig) -> Any:
        """A ``simpler.BoundCall`` of ``native`` (a simpler.CallPlan of this plan) on the Worker
        ``config`` runs on now, or None when a call would not take the native path (see
        :meth:`run_native`). Valid until the shared Workers or the mode gate change."""
        if not self.program_held():
            return None
        import simpler

        wkey = (config.platform, config.runtime, config.device_id, config.aic_threads, config.aiv_threads)
        known = self.targets.get(wkey)
        if known is None or known[0] != self.shared_workers.shared_generation() or known[1]._closed:
            return None
        target = known[2]
        if target is None or config.effective_call_config is not None:
            return None
        timeout = config.timeout
        chip, program, settings = target
        aliases = list(self.return_aliases[: self.return_count])
        return simpler.BoundCall(
            native,
            chip,
            program,
            settings,
            -1.0 if timeout is None else timeout,
            aliases,
            self.return_count > 1,
            DECLINED,
            self.finish_plan_run,
        )

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
            worker, handle = register_for(config, callable_)
            self.bound[key] = (generation, worker, handle)
            self.targets[key] = (generation, worker, worker.plan_target(handle))
        worker.run(handle, mat, config.effective_call_config, timeout=config.timeout, keep_alive=args)
        if self.return_count == 0:
            return None
        if self.return_count == 1:
            return args[self.return_aliases[0]]
        return tuple(args[a] for a in self.return_aliases)
