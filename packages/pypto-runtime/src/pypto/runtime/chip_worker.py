"""``ChipWorker``: explicit dispatch of compiled programs on a Worker the caller owns.

A compiled program called directly (``prog(a, b, c)``) runs on the process's shared program
Worker (:mod:`pypto.runtime.worker`), registered on first use. A ``ChipWorker`` is the explicit
form of the same path: it creates its own ``simpler.Worker`` (claiming PROGRAM mode), and the
caller registers each compiled program once (``handle = worker.register(prog)``), dispatches
through the handle (``handle(a, b, c)``: binding, checks and results exactly as a direct call),
keeps tensors resident on the Worker between dispatches (``worker.alloc_tensor``) and releases
everything with ``worker.close()``. On the simulated chip device memory is host memory, so a
``DeviceTensor`` is a tensor argument like a host array, without copies.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from pypto.ir import DataType
from pypto.language.interface import dtype_of
from pypto.runtime import mode_gate
from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.host_tensors import HostTensor, TensorBindingError, describe, resident_view, tensor_nbytes
from pypto.runtime.runner import RunConfig, bind_task_args, call_results
from pypto.runtime.worker import program_worker

__all__ = ["ChipWorker", "DeviceTensor", "ProgramRegistration", "RegistrationHandle"]


def _data_type(dtype: Any, what: str) -> DataType:
    """The DataType of a torch or numpy dtype, a numpy scalar type (``np.float32``) or a DataType."""
    if isinstance(dtype, type):  # a scalar type such as np.float32, not a dtype object
        found = DataType.from_array_name(dtype.__name__.lower())
        if found is None:
            known = ", ".join(d.array_name for d in DataType)
            raise TypeError(f"{what}: expected a dtype the chip has ({known}), got {dtype.__name__}")
        return found
    try:
        return dtype_of(dtype, what)
    except ValueError as exc:
        raise TypeError(str(exc)) from None


class DeviceTensor:
    """A row-major tensor resident on one ChipWorker (``ChipWorker.alloc_tensor``).

    ``data_ptr`` is its device address, ``shape`` its dims, ``dtype`` the dtype it was
    allocated with (a torch or numpy dtype, or a ``pypto.ir.DataType``); ``data_type`` is that
    dtype as a DataType. Pass it to a registered handle of the same worker as any tensor
    argument. Freed (``free_tensor``, ``close``), it refuses every use.
    """

    __slots__ = ("_freed", "_worker", "data_ptr", "data_type", "dtype", "nbytes", "shape")

    def __init__(
        self, worker: ChipWorker, data_ptr: int, shape: tuple[int, ...], dtype: Any, data_type: DataType
    ):
        self._worker = worker
        self._freed = False
        self.data_ptr = data_ptr
        self.shape = shape
        self.dtype = dtype
        self.data_type = data_type
        self.nbytes = tensor_nbytes(shape, data_type)

    @property
    def worker(self) -> ChipWorker:
        """The ChipWorker whose memory holds this tensor."""
        return self._worker

    @property
    def freed(self) -> bool:
        return self._freed

    def __pypto_host_tensor__(self, what: str) -> HostTensor:
        """The view a call binds (device memory is host memory on the simulated chip)."""
        if self._freed:
            raise TensorBindingError(
                f"{what}: this DeviceTensor was freed (free_tensor or close); allocate another"
            )
        return resident_view(self.data_ptr, self.shape, self.data_type, self)

    def __repr__(self) -> str:
        state = ", freed" if self._freed else ""
        return f"DeviceTensor(shape={self.shape}, dtype={self.data_type.value}, data_ptr={self.data_ptr:#x}{state})"


_Compiled = TypeVar("_Compiled")
_Handle = TypeVar("_Handle", bound="ProgramRegistration[Any]")


class ProgramRegistration(Generic[_Compiled]):
    """What a registered program's handle is besides its call (:class:`RegistrationHandle` of a
    ChipWorker, ``DistributedRegistrationHandle`` of a DistributedWorker): its worker and compiled
    program, ``unregister``, the ``with`` block that unregisters, and its repr."""

    def __init__(self, worker: Any, compiled: _Compiled) -> None:
        self._worker = worker
        self._compiled = compiled
        self._closed = False

    @property
    def compiled(self) -> _Compiled:
        return self._compiled

    @property
    def closed(self) -> bool:
        """Unregistered, or its worker closed."""
        return self._closed or self._worker.closed

    def _program_name(self) -> str:
        raise NotImplementedError

    def unregister(self) -> None:
        """Refuse further dispatches through this handle (the worker keeps the program until it
        closes: program-mode Workers have no unload)."""
        self._closed = True

    def __enter__(self: _Handle) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unregister()

    def __repr__(self) -> str:
        state = ", closed" if self.closed else ""
        return f"{type(self).__name__}({self._program_name()!r}{state})"


class RegistrationHandle(ProgramRegistration[CompiledProgram]):
    """One compiled program registered on one ChipWorker: call it to dispatch.

    ``handle(*args, config=None)`` binds and checks the arguments as a direct call of the
    compiled program does (shapes, dtypes, directions, aliasing; omitted Out tensors are
    allocated) and runs the program on the handle's worker; ``config`` may set ``timeout``
    and ``call_config`` (its platform and thread fields are the worker's).
    """

    def __init__(self, worker: ChipWorker, compiled: CompiledProgram, native: Any) -> None:
        super().__init__(worker, compiled)
        self._native = native

    def _program_name(self) -> str:
        return self._compiled.artifact.name

    def __call__(self, *args: Any, config: RunConfig | None = None, **kwargs: Any) -> Any:
        name = self._compiled.artifact.name
        if self.closed:
            raise RuntimeError(
                f"{name}: this RegistrationHandle is closed (unregistered, or its ChipWorker was closed); "
                "register the program on an open ChipWorker"
            )
        if config is not None and not isinstance(config, RunConfig):
            raise TypeError(
                f"{name}(config=...): expected a pypto.runtime.RunConfig, got {type(config).__name__}"
            )
        for i, a in enumerate((*args, *kwargs.values())):
            if isinstance(a, DeviceTensor) and a.worker is not self._worker:
                raise TensorBindingError(
                    f"{name}(): argument {i} is a DeviceTensor of another ChipWorker ({a.worker!r}); "
                    f"this handle dispatches on {self._worker!r}: allocate it on this worker"
                )
        task_args, slots = bind_task_args(self._compiled.artifact, args, kwargs)
        cfg = config or self._worker.config
        self._worker._run(self._native, task_args, cfg, keep_alive=slots)
        return call_results(self._compiled.artifact, slots)


class ChipWorker:
    """A Worker this caller owns, for explicit registration and dispatch.

    Args:
        config: Platform, chip runtime, device and AICore thread counts of the Worker
            (``RunConfig()``: the default simulator); its ``timeout`` and ``call_config`` are
            the default of each dispatch.

    Raises:
        ModeConflictError: the process is in KERNEL mode (no Worker is created).
    """

    def __init__(self, config: RunConfig | None = None) -> None:
        if config is None:
            config = RunConfig()
        if not isinstance(config, RunConfig):
            raise TypeError(
                f"ChipWorker(config): expected a pypto.runtime.RunConfig, got {type(config).__name__}"
            )
        self.config = config
        self._lock = threading.Lock()
        self._closed = False
        self._handles: dict[str, RegistrationHandle] = {}  # callable digest -> handle
        self._owned: dict[int, DeviceTensor] = {}  # data_ptr -> tensor
        self._worker = program_worker(
            platform=config.platform,
            runtime=config.runtime,
            device_id=config.device_id,
            aic_threads=config.aic_threads,
            aiv_threads=config.aiv_threads,
        )

    # -- state -----------------------------------------------------------------------------

    @property
    def platform(self) -> str:
        return self.config.platform

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def aicpu_dlopen_count(self) -> int:
        """How many distinct compiled programs have been loaded onto this Worker (registering
        the same program again, or dispatching, loads nothing)."""
        return len(self._handles)

    def _require_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"ChipWorker.{what}: this ChipWorker is closed; create a new one")

    # -- registration and dispatch ---------------------------------------------------------

    def register(self, compiled: CompiledProgram) -> RegistrationHandle:
        """Load ``compiled`` onto this Worker once and return the handle that dispatches it
        (the same program again returns the same handle).

        Raises:
            TypeError: ``compiled`` is not a CompiledProgram.
            ValueError: it was compiled for another platform than this worker's.
        """
        self._require_open("register")
        if not isinstance(compiled, CompiledProgram):
            raise TypeError(
                "ChipWorker.register(compiled): expected a pypto.runtime.CompiledProgram "
                f"(pypto.runtime.compile(...) or jit_fn.compile(...)), got {type(compiled).__name__}"
            )
        if compiled.platform != self.platform:
            raise ValueError(
                f"ChipWorker.register(compiled): {compiled.artifact.name!r} was compiled for platform "
                f"{compiled.platform!r}, but this worker runs {self.platform!r}; compile it with "
                f"platform={self.platform!r}"
            )
        callable_ = compiled.artifact.chip_callable()
        with self._lock:
            self._require_open("register")
            handle = self._handles.get(callable_.digest)
            if handle is None:
                native = self._worker.register(callable_)
                handle = RegistrationHandle(self, compiled, native)
                self._handles[callable_.digest] = handle
            return handle

    def run(
        self, compiled: CompiledProgram, *args: Any, config: RunConfig | None = None, **kwargs: Any
    ) -> Any:
        """Register ``compiled`` (once) and dispatch it on ``args``."""
        return self.register(compiled)(*args, config=config, **kwargs)

    def _run(self, native: Any, task_args: Any, config: RunConfig, keep_alive: object) -> None:
        self._require_open("run")
        mode_gate.claim_program(f"ChipWorker on {self.platform}")
        self._worker.run(
            native, task_args, config.effective_call_config, timeout=config.timeout, keep_alive=keep_alive
        )

    # -- device memory ---------------------------------------------------------------------

    def alloc_tensor(self, shape: Sequence[int], dtype: Any, *, init: Any = None) -> DeviceTensor:
        """A zero-filled row-major tensor in this Worker's memory, kept until ``free_tensor``
        or ``close``; ``init`` (a host tensor of exactly ``shape`` and ``dtype``) is copied in.

        Raises:
            ValueError: ``shape`` is not a sequence of ints > 0.
            TypeError: ``dtype`` is not a dtype the chip has.
            TensorBindingError: ``init`` has another shape or dtype, or is not a host tensor.
        """
        self._require_open("alloc_tensor")
        dims = tuple(shape)
        if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in dims):
            raise ValueError(f"ChipWorker.alloc_tensor(shape): expected ints > 0, got {list(dims)}")
        data_type = _data_type(dtype, "ChipWorker.alloc_tensor(dtype)")
        view = None
        if init is not None:
            view = describe(init, what="ChipWorker.alloc_tensor(init)")
            if view.shape != dims or view.dtype is not data_type:
                raise TensorBindingError(
                    f"ChipWorker.alloc_tensor(init): expected shape {list(dims)} and dtype {data_type.value}, "
                    f"got shape {list(view.shape)} and dtype {view.dtype.value}"
                )
            if not view.is_contiguous:
                raise TensorBindingError(
                    "ChipWorker.alloc_tensor(init): expected a contiguous host tensor; pass .contiguous() (torch) "
                    "or numpy.ascontiguousarray"
                )
        ptr = self._worker.malloc(tensor_nbytes(dims, data_type))
        try:
            if view is not None:
                self._worker.copy_to(ptr, view.ptr, view.span_bytes)
        except BaseException:
            self._worker.free(ptr)
            raise
        t = DeviceTensor(self, ptr, dims, dtype, data_type)
        with self._lock:
            self._owned[ptr] = t
        return t

    def free_tensor(self, t: DeviceTensor) -> None:
        """Release ``t`` (a second free of the same tensor does nothing).

        Raises:
            TypeError: ``t`` is not a DeviceTensor.
            ValueError: ``t`` belongs to another ChipWorker.
        """
        if not isinstance(t, DeviceTensor):
            raise TypeError(f"ChipWorker.free_tensor(t): expected a DeviceTensor, got {type(t).__name__}")
        if t.worker is not self:
            raise ValueError(f"ChipWorker.free_tensor(t): {t!r} belongs to another ChipWorker")
        with self._lock:
            if t.freed or self._owned.pop(t.data_ptr, None) is None:
                return
            t._freed = True
        if not self._closed:
            self._worker.free(t.data_ptr)

    def copy_from(self, dst: Any, t: DeviceTensor) -> Any:
        """Copy ``t`` into the host tensor ``dst`` (its shape and dtype); returns ``dst``."""
        self._require_open("copy_from")
        if not isinstance(t, DeviceTensor) or t.worker is not self or t.freed:
            raise ValueError(
                f"ChipWorker.copy_from(t): expected a live DeviceTensor of this worker, got {t!r}"
            )
        view = describe(dst, what="ChipWorker.copy_from(dst)")
        if view.shape != t.shape or view.dtype is not t.data_type or not view.is_contiguous or view.readonly:
            raise TensorBindingError(
                f"ChipWorker.copy_from(dst): expected a writable contiguous host tensor of shape {list(t.shape)} "
                f"and dtype {t.data_type.value}, got shape {list(view.shape)} and dtype {view.dtype.value}"
            )
        self._worker.copy_from(view.ptr, t.data_ptr, t.nbytes)
        return dst

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Free every tensor this worker still owns, close every handle and the Worker
        (closing twice does nothing)."""
        with self._lock:
            if self._closed:
                return
            owned = list(self._owned.values())
            self._owned.clear()
            self._closed = True
        try:
            for t in owned:
                t._freed = True
                self._worker.free(t.data_ptr)
        finally:
            self._worker.close()

    def __enter__(self) -> ChipWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"ChipWorker(platform={self.platform!r}, {state})"
