"""Worker: one simulated chip (or, with CANN, a device) that registers callables and runs them.

Program mode: ``submit(handle, TaskArgs)`` queues a run of a ChipCallable's orchestration on the
AICPU orchestrator thread; its tasks run on AICore threads; :class:`RunHandle` reports the
result. See docs/simpler-runtime.md for threads, rings and the dependency rule.

Example::

    with Worker(platform="a2a3sim") as w:
        w.init()
        h = w.register(ChipCallable.build(sig, "orch", orch_so, children=[(0, kernel)]))
        w.run(h, args)
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import sys
import threading
import weakref
from typing import Any

from simpler import _native
from simpler.callables import CallableHandle, ChipCallable, CoreCallable
from simpler.config import CallConfig
from simpler.errors import DeviceError, UnsupportedPlatformError, WorkerClosedError
from simpler.streams import Stream
from simpler.task_args import ChipStorageTaskArgs, TaskArgs

__all__ = ["MAX_CALLABLES", "RunHandle", "Worker", "finish_plan_run"]

# Limits bound from the C++ headers (simpler/wire/limits, core/chip/chip.hpp).
MAX_CALLABLES: int = _native.kernel.MAX_CALLABLES
_MAX_CORE_THREADS: int = _native.MAX_CORE_THREADS
SIM_PLATFORMS = ("a2a3sim", "a5sim")
DEVICE_PLATFORMS = ("a2a3", "a5")
RUNTIMES = ("tensormap_and_ringbuffer", "host_build_graph")
EXECUTION_MODES = ("program", "kernel")

_worker_ids = itertools.count(1)
_live_workers: weakref.WeakSet[Worker] = weakref.WeakSet()
_abandoned: list[Any] = []  # chips of a parent process, never touched or freed in a forked child


def _abandon_in_child() -> None:
    """After fork: the parent's chip threads do not exist here, and its locks and condition
    variables may be held by them. Closing or destroying such a chip would block forever, so
    every Worker inherited from the parent is marked closed and its chip is leaked on purpose."""
    quiet = False
    for w in list(_live_workers):
        w._lock = threading.Lock()  # a parent thread may have held it at fork
        chip, w._chip = w._chip, None
        w._closed = True
        if chip is not None:
            _abandoned.append(chip)
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(chip))  # survive interpreter teardown
            quiet = True
    if quiet:
        _native._quiet_leak_warnings()
    _generations.lock = threading.Lock()
    _generations.in_use.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_abandon_in_child)

EXIT_WAIT_SECONDS = 60.0  # how long the exit drain waits for a Worker's runs before leaving it


def _drain_at_exit() -> None:
    """atexit: close every Worker still open, on the main thread with the GIL, before the
    interpreter finalises. Its runs finish first (up to EXIT_WAIT_SECONDS each), its chip threads
    are joined and its native programs released here, so no chip thread runs, and no native
    object is left for nanobind's leak check, while the interpreter tears down. A Worker whose
    runs do not finish in time (a kernel that never returns) is left running and its chip kept
    alive for the rest of the process, as after a fork. Handlers registered later (a framework's
    shutdown of its own Workers) run before this one."""
    for w in list(_live_workers):
        with contextlib.suppress(Exception):
            w._close_at_exit(EXIT_WAIT_SECONDS)


atexit.register(_drain_at_exit)


class _Generations:
    """borrowed_context_generation values held by live kernel-mode Workers of this process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_use: set[int] = set()


_generations = _Generations()


class RunHandle:
    """The result of one :meth:`Worker.submit`: poll :attr:`done`, :meth:`wait`, :meth:`result`."""

    __slots__ = ("_args", "_native", "callable")

    def __init__(self, native: Any, args: object, callable_: CallableHandle) -> None:
        self._native = native
        self._args = args  # keeps borrowed buffers alive until the run is done
        self.callable = callable_

    @property
    def done(self) -> bool:
        return bool(self._native.done)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run finishes or ``timeout`` seconds pass; True when finished."""
        native = self._native
        # a finished run (one that ran on the caller's thread) answers without releasing the GIL
        finished = bool(native.done or native.wait(-1.0 if timeout is None else float(timeout)))
        if finished:
            self._args = None
        return finished

    def result(self, timeout: float | None = None) -> None:
        """Wait, then re-raise a device error as :class:`DeviceError`.

        Raises:
            TimeoutError: not finished within ``timeout`` seconds.
            DeviceError: a kernel, the orchestration or a task failed (message names them).
        """
        if not self.wait(timeout):
            raise TimeoutError(f"RunHandle.result: run {self._native.id} not finished after {timeout} s")
        error = self._native.error
        if error:
            raise DeviceError(error)

    @property
    def stats(self) -> dict[str, int]:
        return {
            "tasks_submitted": int(self._native.tasks_submitted),
            "tasks_executed": int(self._native.tasks_executed),
        }

    @property
    def diagnostics_files(self) -> list[str]:
        return list(self._native.diagnostics_files)

    def __repr__(self) -> str:
        return f"RunHandle(id={self._native.id}, done={self.done})"


class Worker:
    """A level-2 (single chip) Worker.

    Args:
        level: 2 (one chip); other levels are not provided by simpler.
        platform: ``"a2a3sim"``/``"a5sim"`` (simulated chip) or ``"a2a3"``/``"a5"`` (needs CANN).
        runtime: ``"tensormap_and_ringbuffer"`` (TMR: the orchestration runs on the chip's AICPU
            orchestrator thread, tasks dispatch as they are submitted) or ``"host_build_graph"``
            (HBG: the orchestration runs on the thread that calls ``submit``/``launch`` and builds
            the whole task graph, which the chip then runs).
        device_id: device ordinal (0 on the simulator).
        execution_mode: ``"program"`` or ``"kernel"``; latched for the Worker's lifetime.
        aic_threads: AICore cube threads (default 1).
        aiv_threads: AICore vector threads (default 1).
    """

    def __init__(
        self,
        level: int = 2,
        platform: str = "a2a3sim",
        runtime: str = "tensormap_and_ringbuffer",
        device_id: int = 0,
        execution_mode: str = "program",
        *,
        aic_threads: int = 1,
        aiv_threads: int = 1,
    ) -> None:
        if level != 2:
            raise ValueError(f"Worker(level): expected 2 (a single chip), got {level!r}")
        if platform not in SIM_PLATFORMS + DEVICE_PLATFORMS:
            raise ValueError(
                f"Worker(platform): expected one of {SIM_PLATFORMS + DEVICE_PLATFORMS}, got {platform!r}"
            )
        if runtime not in RUNTIMES:
            raise ValueError(f"Worker(runtime): expected one of {RUNTIMES}, got {runtime!r}")
        if execution_mode not in EXECUTION_MODES:
            raise ValueError(
                f"Worker(execution_mode): expected one of {EXECUTION_MODES}, got {execution_mode!r}"
            )
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
            raise ValueError(f"Worker(device_id): expected an int >= 0, got {device_id!r}")
        for name, n in (("aic_threads", aic_threads), ("aiv_threads", aiv_threads)):
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= _MAX_CORE_THREADS:
                raise ValueError(f"Worker({name}): expected an int in [0, {_MAX_CORE_THREADS}], got {n!r}")
        if aic_threads + aiv_threads == 0:
            raise ValueError("Worker(aic_threads, aiv_threads): expected at least one AICore thread, got 0")
        self.level = level
        self.platform = platform
        self.runtime = runtime
        self.device_id = device_id
        self.execution_mode = execution_mode
        self.aic_threads = aic_threads
        self.aiv_threads = aiv_threads
        self._id = next(_worker_ids)
        self._lock = threading.Lock()
        self._chip: Any = None
        self._closed = False
        self._handles: dict[str, CallableHandle] = {}
        self._slots: list[CallableHandle] = []
        self._kernels: dict[str, Any] = {}
        self._diagnostics: list[RunHandle] = []
        self._prewarm: CallConfig | None = None
        self._streams: list[Stream] = []
        self._default_settings: list[Any] = [None, None]  # for calls that do not wait, that wait
        self._default_stream: Stream | None = None
        self.borrowed_context_generation: int | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def init(
        self, prewarm_config: CallConfig | None = None, *, borrowed_context_generation: int | None = None
    ) -> None:
        """Start the chip. Unsupported platforms and bad settings fail here, before anything runs.

        Raises:
            UnsupportedPlatformError: ``a2a3``/``a5`` without CANN.
            ValueError: invalid ``prewarm_config`` or ``borrowed_context_generation``.
        """
        with self._lock:
            if self._closed:
                raise WorkerClosedError("Worker.init: this Worker was closed; create a new one")
            if self._chip is not None:
                raise RuntimeError("Worker.init: already initialised")
            if self.platform in DEVICE_PLATFORMS:
                raise UnsupportedPlatformError(
                    f"Worker.init: platform {self.platform!r} needs an Ascend NPU with CANN (libascendcl, "
                    f"ASCEND_HOME_PATH) and a device build of simpler; this build has the simulated chip only. "
                    f"Use platform={self.platform + 'sim'!r}."
                )
            if prewarm_config is not None:
                if not isinstance(prewarm_config, CallConfig):
                    raise TypeError(
                        f"Worker.init(prewarm_config): expected a CallConfig, got {type(prewarm_config).__name__}"
                    )
                prewarm_config.validate()
            if self.execution_mode == "kernel":
                g = borrowed_context_generation
                if isinstance(g, bool) or not isinstance(g, int) or g <= 0 or g >= 1 << 64:
                    raise ValueError(
                        f"Worker.init(borrowed_context_generation): kernel mode needs a nonzero 64-bit int, got {g!r}"
                    )
                with _generations.lock:
                    if g in _generations.in_use:
                        raise ValueError(
                            f"Worker.init(borrowed_context_generation): {g} is already used by another Worker in this process"
                        )
                    _generations.in_use.add(g)
                self.borrowed_context_generation = g
            elif borrowed_context_generation is not None:
                raise ValueError(
                    "Worker.init(borrowed_context_generation): only kernel mode borrows a context, "
                    f"but execution_mode is {self.execution_mode!r}"
                )
            self._prewarm = prewarm_config
            chip = _native.ChipRuntime(
                aic_threads=self.aic_threads,
                aiv_threads=self.aiv_threads,
                runtime=self.runtime,
                arch="a5" if self.platform.startswith("a5") else "a2a3",
            )
            if self.execution_mode == "kernel":
                chip.enable_kernel_mode(self.borrowed_context_generation)
                self._default_stream = Stream(self, 0)
                self._streams.append(self._default_stream)
            self._chip = chip
            _live_workers.add(self)

    def close(self) -> None:
        """Finish queued runs, stop the chip threads and release the callables. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            chip, self._chip = self._chip, None
        if chip is not None:
            chip.close()
        if self.borrowed_context_generation is not None:
            with _generations.lock:
                _generations.in_use.discard(self.borrowed_context_generation)
        # Release the native programs now, with the GIL, even where a handle outlives the Worker
        # (held by a framework's operator registry until the process ends): a closed Worker's
        # handles are refused by every call, and nothing native must survive to finalisation.
        for h in self._slots:
            h._native = None
        self._handles.clear()
        self._slots.clear()
        self._kernels.clear()

    def _close_at_exit(self, timeout: float) -> None:
        """The exit drain's close: wait up to ``timeout`` s for the runs, then close; if they do
        not finish, keep the chip (and its threads) alive instead of blocking the exit."""
        chip = self._chip
        if self._closed or chip is None:
            return
        if chip.wait_idle(timeout):
            self.close()
            return
        with self._lock:
            self._closed = True
            self._chip = None
        _abandoned.append(chip)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(chip))  # survive interpreter teardown
        _native._quiet_leak_warnings()
        print(
            f"simpler: {self!r} still has runs in flight after {timeout:g} s at exit; leaving its chip running",
            file=sys.stderr,
        )

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()

    @property
    def initialized(self) -> bool:
        return self._chip is not None

    def _require_chip(self, what: str) -> Any:
        chip = self._chip
        if chip is None:
            if self._closed:
                raise WorkerClosedError(f"Worker.{what}: the Worker is closed")
            raise WorkerClosedError(f"Worker.{what}: call init() first")
        return chip

    # -- callables -------------------------------------------------------------------------

    def _load_kernel(self, core: CoreCallable) -> Any:
        native = self._kernels.get(core.digest)
        if native is None:
            native = _native.load_core_kernel(
                core.binary, core.name, core.entry, int(core.core_type), list(core.signature)
            )
            self._kernels[core.digest] = native
        return native

    def register(self, callable_: ChipCallable) -> CallableHandle:
        """Load a callable's binaries and resolve their symbols; same content -> same handle.

        Raises:
            TypeError: not a ChipCallable.
            ValueError: a binary misses an entry, has the wrong ABI version, or 64 are registered.
        """
        if not isinstance(callable_, ChipCallable):
            raise TypeError(
                f"Worker.register(callable): expected a ChipCallable, got {type(callable_).__name__}"
            )
        with self._lock:
            self._require_chip("register")
            existing = self._handles.get(callable_.digest)
            if existing is not None:
                return existing
            if len(self._handles) >= MAX_CALLABLES:
                raise ValueError(
                    f"Worker.register: at most {MAX_CALLABLES} callables per Worker; {len(self._handles)} registered"
                )
            if self.execution_mode == "kernel":
                # Kernel-entry admission runs before anything is loaded or registered.
                _native.admit_kernel_entry(
                    callable_.func_name,
                    list(callable_.signature),
                    len(callable_.binary),
                    [
                        (fid, core.name, list(core.signature), len(core.binary))
                        for fid, core in callable_.children
                    ],
                )
            children = [(func_id, self._load_kernel(core)) for func_id, core in callable_.children]
            native = _native.load_chip_program(
                callable_.binary, callable_.func_name, list(callable_.signature), children
            )
            slot = len(self._slots)
            if self.execution_mode == "kernel":
                # Kernel-entry admission and a residency generation for the slot.
                slot = int(self._chip.kernel_register(native))
            handle = CallableHandle(self._id, slot, callable_.digest, callable_, native)
            self._slots.append(handle)
            self._handles[callable_.digest] = handle
            return handle

    # -- runs ------------------------------------------------------------------------------

    def submit(
        self,
        handle: CallableHandle,
        args: TaskArgs | ChipStorageTaskArgs,
        config: CallConfig | None = None,
        *,
        keep_alive: object = None,
    ) -> RunHandle:
        return self._submit(handle, args, config, keep_alive, waits=False)

    def _submit(
        self,
        handle: CallableHandle,
        args: TaskArgs | ChipStorageTaskArgs,
        config: CallConfig | None,
        keep_alive: object,
        waits: bool,
    ) -> RunHandle:
        """Queue a run; returns at once (unless ``config.orchestrate_on_caller`` is True).
        Invalid arguments or config raise before anything runs.

        ``args`` is a :class:`TaskArgs`, or the :class:`ChipStorageTaskArgs` it materialises
        into (what a caller that already checked its tensors builds directly: descriptors,
        directions and scalar bits), exactly as :meth:`launch` takes them: the counts and
        directions are checked against the callable here and every descriptor against its
        buffer by the chip. A ChipStorageTaskArgs holds addresses only, so pass the objects
        that own the memory as ``keep_alive``: the RunHandle keeps them referenced until the
        run is done (a TaskArgs keeps its buffers itself).
        """
        chip = self._require_chip("submit")
        if self.execution_mode != "program":
            raise RuntimeError(
                "Worker.submit: this Worker is in kernel mode (latched at construction); use launch()"
            )
        if not isinstance(handle, CallableHandle) or handle._worker_id != self._id:
            raise ValueError(
                f"Worker.submit(handle): expected a CallableHandle registered on this Worker, got {handle!r}"
            )
        settings = self._run_settings(config, waits)
        mat = _materialized(handle, args, "submit")
        native_run = chip.submit(handle._native, mat.tensors, mat.scalars, settings)
        run = RunHandle(native_run, args if keep_alive is None else (args, keep_alive), handle)
        if settings.writes_diagnostics:
            with self._lock:
                self._diagnostics.append(run)
        return run

    def _run_settings(self, config: CallConfig | None, waits: bool) -> Any:
        """The native RunSettings of ``config``, validated, for a call that waits for the run
        (``waits``: orchestrate_on_caller None means True) or not (the defaults built once)."""
        if config is None:
            if self._default_settings[waits] is None:
                cfg = (self._prewarm or CallConfig()).validate()
                self._default_settings[waits] = _run_settings(cfg, waits)
            return self._default_settings[waits]
        if not isinstance(config, CallConfig):
            raise TypeError(f"Worker: config must be a simpler.CallConfig, got {type(config).__name__}")
        return _run_settings(config.validate(), waits)

    def run(
        self,
        handle: CallableHandle,
        args: TaskArgs | ChipStorageTaskArgs,
        config: CallConfig | None = None,
        *,
        timeout: float | None = None,
        keep_alive: object = None,
    ) -> None:
        """Submit and wait; raises :class:`DeviceError` if the run failed. An idle Worker
        orchestrates the run on this thread (``CallConfig.orchestrate_on_caller``)."""
        self._submit(handle, args, config, keep_alive, waits=True).result(timeout)

    def plan_target(
        self, handle: CallableHandle, config: CallConfig | None = None
    ) -> tuple[Any, Any, Any] | None:
        """What a :class:`simpler.CallPlan` runs a program-mode call of ``handle`` on: (the
        native chip, the loaded program, the run settings), checked as :meth:`submit` checks
        them; None when such a run must go through :meth:`run` instead (a closed Worker, kernel
        mode, a config that writes diagnostics). Valid while the Worker is open."""
        chip = self._chip
        if chip is None or self._closed or self.execution_mode != "program":
            return None
        if not isinstance(handle, CallableHandle) or handle._worker_id != self._id:
            raise ValueError(
                f"Worker.plan_target(handle): expected a CallableHandle registered on this Worker, got {handle!r}"
            )
        settings = self._run_settings(config, True)  # a CallPlan run waits for its run
        if settings.writes_diagnostics:
            return None
        return chip, handle._native, settings

    # -- kernel mode -------------------------------------------------------------------------

    def _require_kernel(self, what: str) -> Any:
        chip = self._require_chip(what)
        if self.execution_mode != "kernel":
            raise RuntimeError(
                f"Worker.{what}: this Worker is in program mode (latched at construction); "
                "create it with execution_mode='kernel'"
            )
        return chip

    @property
    def default_stream(self) -> Stream:
        self._require_kernel("default_stream")
        assert self._default_stream is not None
        return self._default_stream

    def create_stream(self) -> Stream:
        """A new FIFO stream for :meth:`launch` (kernel mode)."""
        self._require_kernel("create_stream")
        with self._lock:
            stream = Stream(self, len(self._streams))
            self._streams.append(stream)
            return stream

    def launch_target(self, config: CallConfig | None = None) -> tuple[Any, Any] | None:
        """What a framework adapter's bound launch (one native call per operator call, no
        :class:`RunHandle` unless the run must be waited for in Python) runs on: (the native
        chip's ``kernel_launch(slot, tensors, scalars, settings)``, the run settings of a
        launch with ``waits=True``), checked as :meth:`launch` checks them; None when such a
        launch must go through :meth:`launch` instead (a closed Worker, a config that writes
        diagnostics: their files are collected through the Worker). Valid while the Worker is
        open; the caller checks its arguments against the callable as :meth:`launch` does.

        Raises:
            RuntimeError: the Worker is in program mode.
        """
        if self._chip is None or self._closed:
            return None
        chip = self._require_kernel("launch_target")
        settings = self._run_settings(config, True)
        if settings.writes_diagnostics:
            return None
        return chip.kernel_launch, settings

    def residency_generation(self, handle: CallableHandle) -> int:
        """The residency generation of a kernel-mode handle's slot (>= 1 while registered)."""
        return int(self._require_kernel("residency_generation").kernel_generation(handle.slot))

    def unregister(self, handle: CallableHandle) -> None:
        """Retire a kernel-mode callable: later launches, and packets already queued, are stale."""
        chip = self._require_kernel("unregister")
        with self._lock:
            if self._handles.get(handle.digest) is not handle:
                raise ValueError(f"Worker.unregister(handle): {handle!r} is not registered on this Worker")
            chip.kernel_unregister(handle.slot)
            del self._handles[handle.digest]

    def launch(
        self,
        handle: CallableHandle,
        args: TaskArgs | ChipStorageTaskArgs,
        stream: Stream | None = None,
        config: CallConfig | None = None,
        *,
        waits: bool = False,
    ) -> RunHandle:
        """Encode a TMR packet for ``handle`` and enqueue it (copy-on-enqueue) on ``stream``.

        ``waits``: the caller waits for the run next. Then, unless ``config.orchestrate_on_caller``
        is False, a launch on an idle Worker (nothing queued or running) is consumed, orchestrated
        and run on this thread before ``launch`` returns (the same checks, results and errors,
        without a hand-off to the chip's threads); otherwise it is queued as without ``waits``.

        ``args`` is a :class:`TaskArgs`, or the :class:`ChipStorageTaskArgs` it materialises
        into (what a framework adapter that already validated its tensors builds directly:
        descriptors, directions and scalar bits). Either way the counts and directions are
        checked against the callable here, every descriptor is checked against its buffer by
        the chip, and the simulated AICPU consumer decodes and validates the packet against
        the slot's trusted view and the Worker's binding before anything runs; a stale or
        invalid packet fails the returned RunHandle without running a kernel.

        Raises:
            ValueError: arguments do not match the callable, or the encoder rejected them
                (message names the InvocationStatus).
        """
        chip = self._require_kernel("launch")
        if type(handle) is not CallableHandle or handle._worker_id != self._id:
            raise ValueError(
                f"Worker.launch(handle): expected a CallableHandle registered on this Worker, got {handle!r}"
            )
        target = stream if stream is not None else self._default_stream
        if target is None or type(target) is not Stream or target.worker is not self:
            raise ValueError(f"Worker.launch(stream): expected a Stream of this Worker, got {stream!r}")
        settings = self._run_settings(config, waits)
        mat = _materialized(handle, args, "launch")
        native_run = chip.kernel_launch(handle.slot, mat.tensors, mat.scalars, settings)
        run = RunHandle(native_run, args, handle)
        target._enqueued(run)
        if settings.writes_diagnostics:
            with self._lock:
                self._diagnostics.append(run)
        return run

    def flush_diagnostics(self) -> list[str]:
        """Wait for runs that write diagnostics and return the files written since the last flush."""
        with self._lock:
            pending, self._diagnostics = self._diagnostics, []
        files: list[str] = []
        for run in pending:
            run.wait()
            files.extend(run.diagnostics_files)
        return files

    # -- device memory ---------------------------------------------------------------------

    def malloc(self, nbytes: int) -> int:
        """Allocate tracked device memory (zero-filled, 64-byte aligned); returns its address."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"Worker.malloc(nbytes): expected an int > 0, got {nbytes!r}")
        return int(self._require_chip("malloc").malloc(nbytes))

    def free(self, ptr: int) -> None:
        """Free memory returned by :meth:`malloc`."""
        self._require_chip("free").free(ptr)

    def copy_to(self, dst: int, src: Any, nbytes: int | None = None) -> None:
        """Copy host data (a buffer-protocol object, or an address with ``nbytes``) to device ``dst``."""
        chip = self._require_chip("copy_to")
        addr, n, keep = _host_span(src, nbytes, "copy_to")
        chip.copy_to(dst, addr, n)
        del keep

    def copy_from(self, dst: Any, src: int, nbytes: int | None = None) -> None:
        """Copy from device ``src`` into host ``dst`` (writable buffer, or an address with ``nbytes``)."""
        chip = self._require_chip("copy_from")
        addr, n, keep = _host_span(dst, nbytes, "copy_from", writable=True)
        chip.copy_from(addr, src, n)
        del keep

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("ready" if self._chip is not None else "new")
        return f"Worker(platform={self.platform!r}, runtime={self.runtime!r}, mode={self.execution_mode!r}, {state})"


def finish_plan_run(run: Any, timeout: float | None) -> None:
    """Report a run that :meth:`simpler.CallPlan.run` waited for as :meth:`RunHandle.result`
    does: TimeoutError when it has not finished, DeviceError when it failed."""
    if not run.done:
        raise TimeoutError(f"RunHandle.result: run {run.id} not finished after {timeout} s")
    error = run.error
    if error:
        raise DeviceError(error)


def _run_settings(cfg: CallConfig, waits: bool = False) -> Any:
    """The native RunSettings (named fields, checked again in C++) of a validated CallConfig,
    for a call that waits for its run (``waits``) or not."""
    windows, heaps, pools = cfg.rings()
    return _native.RunSettings(
        task_window=windows,
        heap=heaps,
        dep_pool=pools,
        workspace_budget_bytes=cfg.workspace_budget_bytes or 0,
        swimlane=cfg.swimlane,
        dep_graph=cfg.dep_graph,
        output_prefix=cfg.output_prefix or "",
        aicpu_thread_num=cfg.aicpu_thread_num,
        orchestrate_on_caller=waits if cfg.orchestrate_on_caller is None else cfg.orchestrate_on_caller,
    )


_DIRECTION_NAMES = {1: "In", 2: "Out", 3: "InOut"}


def _check_materialized(handle: CallableHandle, mat: ChipStorageTaskArgs, what: str) -> None:
    """Counts and tensor directions of materialised arguments against the callable."""
    cc: ChipCallable = handle.callable
    if len(mat.tensors) != cc.tensor_count or len(mat.scalars) != cc.scalar_count:
        raise ValueError(
            f"Worker.{what}(args): '{cc.func_name}' expects {cc.tensor_count} tensors and {cc.scalar_count} scalars, "
            f"got {len(mat.tensors)} and {len(mat.scalars)}"
        )
    sig = cc.signature
    directions = mat.directions
    if len(directions) != len(mat.tensors):
        raise ValueError(f"Worker.{what}(args): {len(mat.tensors)} tensors but {len(directions)} directions")
    if tuple(sig[: len(directions)]) == tuple(directions):
        return
    for i, d in enumerate(directions):
        if d != sig[i]:
            raise ValueError(
                f"Worker.{what}(args): tensor {i} of '{cc.func_name}' is {_DIRECTION_NAMES.get(sig[i], sig[i])} "
                f"in the signature but was added as {_DIRECTION_NAMES.get(d, d)}"
            )


def _materialized(
    handle: CallableHandle, args: TaskArgs | ChipStorageTaskArgs, what: str
) -> ChipStorageTaskArgs:
    """``args`` as the chip takes them, checked against the callable: a ChipStorageTaskArgs as
    given, a TaskArgs materialised."""
    if isinstance(args, ChipStorageTaskArgs):
        if args is not handle._checked:  # a repeat call with the same frozen args was checked
            _check_materialized(handle, args, what)
            handle._checked = args
        return args
    return _checked_args(handle, args, what)


def _checked_args(handle: CallableHandle, args: TaskArgs, what: str) -> ChipStorageTaskArgs:
    """Materialise ``args`` after checking counts and directions against the callable."""
    if not isinstance(args, TaskArgs):
        raise TypeError(
            f"Worker.{what}(args): expected a TaskArgs or ChipStorageTaskArgs, got {type(args).__name__}"
        )
    cc: ChipCallable = handle.callable
    if args.tensor_count != cc.tensor_count or args.scalar_count != cc.scalar_count:
        raise ValueError(
            f"Worker.{what}(args): '{cc.func_name}' expects {cc.tensor_count} tensors and {cc.scalar_count} scalars, "
            f"got {args.tensor_count} and {args.scalar_count}"
        )
    mat = args.materialize()
    _check_materialized(handle, mat, what)
    return mat


def _host_span(obj: Any, nbytes: int | None, what: str, writable: bool = False) -> tuple[int, int, Any]:
    """(address, byte count, object to keep alive while the address is used)."""
    import ctypes

    if isinstance(obj, int) and not isinstance(obj, bool):
        if nbytes is None or nbytes < 0:
            raise ValueError(f"Worker.{what}: an address needs nbytes >= 0, got {nbytes!r}")
        return obj, nbytes, None
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(
            f"Worker.{what}: expected a buffer-protocol object or an address, got {type(obj).__name__}"
        ) from None
    if not mv.c_contiguous:
        raise ValueError(f"Worker.{what}: host buffer must be C-contiguous")
    if writable and mv.readonly:
        raise ValueError(f"Worker.{what}: host buffer is read-only")
    size = mv.nbytes
    n = size if nbytes is None else nbytes
    if n > size:
        raise ValueError(f"Worker.{what}(nbytes): {n} bytes exceed the host buffer of {size}")
    if size == 0:
        return 0, 0, None
    mv_b = mv.cast("B")
    if mv.readonly:
        buf = (ctypes.c_char * size).from_buffer_copy(mv_b)  # read-only source: copy once
        return ctypes.addressof(buf), n, buf
    view = (ctypes.c_char * size).from_buffer(mv_b)
    return ctypes.addressof(view), n, view
