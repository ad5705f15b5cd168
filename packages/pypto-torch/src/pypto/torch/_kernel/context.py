"""Process state of kernel mode: one manager per process owns the Worker and its context.

States (:class:`KernelState`): UNINITIALIZED -> INITIALIZING -> READY -> CLOSING -> CLOSED,
with FAILED when the native Worker could not be initialised (the Worker and the KERNEL mode
claim are kept for cleanup) or when cleanup itself failed. Closing is terminal: a closed
process never switches to program mode or back to kernel mode.

- ``init``: identical configuration is idempotent, a conflicting one fails naming the
  difference, a recursive init fails, and concurrent inits share one result (one Worker).
  Preflight (configuration, graph capture, device, runtime capabilities) runs before the
  KERNEL mode is claimed or anything is created; its exceptions keep their types.
- Registration: concurrent preparations of one artifact share one success or failure;
  registry-full errors propagate at once (nothing is drained, waited for or evicted).
- Launches: a pending ticket holds the registration and the call's owners before enqueue;
  admission only polls completed tickets; a launch the Worker refuses drops its ticket at
  once. ``shutdown`` refuses new launches, waits until every admitted launch has published its
  run (the Worker is never closed under an enqueue), retires every run, releases the sources,
  then closes the Worker on the lifecycle owner thread.
- Asynchronous mode (``init(asynchronous=True)``): a launch never waits; synchronisation
  points (:mod:`~pypto.torch._kernel.ordering`) retire runs and report failed ones.
- Fork: an untouched manager is replaced in the at-fork child callback (its locks too). A
  child forked after ``init`` refuses kernel-mode work (it must be a spawned process), and its
  shutdown anchors the inherited state without taking inherited locks or closing the
  parent's Worker.
- Exit: shutdown is registered with ``atexit`` once ``init`` has imported the framework, so
  it runs before the framework's own exit hooks (atexit runs in reverse order); on an NPU the
  framework's verified teardown hook is also wrapped to call shutdown first. If a clean
  shutdown is impossible the Worker is anchored for the rest of the process instead of having
  destructors run after the device context is gone.
- Daemon threads at exit: the exit hook closes the exit gate (``pypto.torch._kernel.exit_gate``)
  before shutdown and drains it after, so finalization never finds a daemon thread inside an
  operator call.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import enum
import itertools
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from pypto.ir import DEFAULT_PLATFORM, DEFAULT_RUNTIME, Contract
from pypto.runtime import mode_gate, settings
from pypto.torch._kernel import bound
from pypto.torch._kernel.callable import KernelCallable, RegistrationError, artifact_identity
from pypto.torch._kernel.exit_gate import exit_gate
from pypto.torch._kernel.owner import LifecycleOwner
from pypto.torch._kernel.pending import PendingTicket
from pypto.torch._kernel.pins import pin_frame
from pypto.torch._kernel.session import (
    BorrowedWorkerSession,
    KernelRequest,
    check_runtime_interfaces,
    check_runtime_pin,
    make_call_config,
)
from pypto.torch._platform import DevicePlatform, platform_for

__all__ = [
    "DEFAULT_PLATFORM",
    "DEFAULT_RUNTIME",
    "KernelClosedError",
    "KernelInfo",
    "KernelInitError",
    "KernelState",
    "current",
    "shutdown",
    "state",
]


class KernelState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    FAILED = "FAILED"
    CLOSING = "CLOSING"
    CLOSED = "CLOSED"


class KernelInitError(RuntimeError):
    """Kernel mode cannot be (re)initialised as asked: a conflicting or recursive init, an
    earlier failure, or a process forked after init."""


class KernelClosedError(RuntimeError):
    """Kernel mode was shut down in this process; closing is terminal."""


@dataclass(frozen=True)
class KernelInfo:
    """What ``pypto.torch.init`` set up: platform, runtime, device, generation, configuration."""

    platform: str
    runtime: str
    device_index: int
    generation: int
    config: Any
    asynchronous: bool = False


_generations = itertools.count(1)
_anchors: list[Any] = []  # objects kept alive to process exit on purpose (never destroyed)


def _anchor(obj: Any) -> None:
    """Keep ``obj`` alive through interpreter teardown: its destructor must never run."""
    if obj is None:
        return
    _anchors.append(obj)
    with contextlib.suppress(Exception):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


class _Attempt:
    """One initialisation in progress: the threads that wait on it share its outcome."""

    __slots__ = ("error", "request", "thread")

    def __init__(self, request: KernelRequest) -> None:
        self.request = request
        self.thread = threading.get_ident()
        self.error: BaseException | None = None


class _Preparation:
    """One registration in progress: concurrent preparations of an artifact share it."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: KernelCallable | None = None
        self.error: BaseException | None = None


class _Manager:
    """The process's kernel-mode state (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.state = KernelState.UNINITIALIZED
        self.attempt: _Attempt | None = None
        self.info: KernelInfo | None = None
        self.request: KernelRequest | None = None
        self.failure: BaseException | None = None
        self.simpler: Any = None
        self.platform: DevicePlatform | None = None
        self.session: BorrowedWorkerSession | None = None
        self.owner: LifecycleOwner | None = None
        self.worker: Any = None
        self.registrations: dict[tuple[str, object], KernelCallable] = {}
        self.preparing: dict[tuple[str, object], _Preparation] = {}
        self.retained: dict[tuple[str, object], Any] = {}  # artifacts keyed by identity stay alive
        self.pending: list[PendingTicket] = []
        self.enqueuing = 0  # launches admitted but not yet published (shutdown waits for them)
        self.failed: list[PendingTicket] = []  # retired by admission, error not yet reported
        self.waits: dict[object, list[PendingTicket]] = {}  # stream -> tickets it waits on (events)
        self.asynchronous = False
        self.streams: dict[object, Any] = {}  # framework stream -> simpler Stream
        self.forked_from: int | None = None
        self.gate: Any = None  # the native admission gate of bound launches (see ``bind``)
        self.bound_cells: list[list[Any]] = []  # what bound launches hold of the Worker

    # -- init ------------------------------------------------------------------------------

    def init(
        self, device: object, platform: str | None, runtime: str, config: object, asynchronous: bool = False
    ) -> KernelInfo:
        request, plat, simpler = _preflight_request(device, platform, runtime, config, asynchronous)
        while True:
            with self.lock:
                self._refuse_if_forked("init")
                st = self.state
                if st is KernelState.READY:
                    assert self.request is not None
                    assert self.info is not None
                    diff = self.request.differences(request)
                    if diff:
                        raise KernelInitError(
                            "pypto.torch.init: kernel mode is already initialised with a different "
                            f"configuration: {'; '.join(diff)}; call init() with the same arguments "
                            "(or none), or use a fresh process"
                        )
                    return self.info
                if st is KernelState.INITIALIZING:
                    attempt = self.attempt
                    assert attempt is not None
                    if attempt.thread == threading.get_ident() or (
                        self.owner is not None and self.owner.on_owner_thread()
                    ):
                        raise KernelInitError(
                            "pypto.torch.init: called recursively while this thread is initialising kernel mode"
                        )
                    while self.state is KernelState.INITIALIZING and self.attempt is attempt:
                        self.changed.wait()
                    if attempt.error is not None:
                        raise attempt.error
                    continue  # READY (compare), or another state
                if st is KernelState.FAILED:
                    raise KernelInitError(
                        f"pypto.torch.init: kernel mode failed in this process ({self.failure!r}); its Worker "
                        "and mode are kept for cleanup, so call pypto.torch.shutdown() and use a fresh process"
                    ) from self.failure
                if st in (KernelState.CLOSING, KernelState.CLOSED):
                    raise KernelClosedError(
                        "pypto.torch.init: kernel mode was shut down in this process and closing is terminal; "
                        "use a fresh process"
                    )
                attempt = _Attempt(request)
                self.attempt = attempt
                self.state = KernelState.INITIALIZING
            try:
                info = self._initialise(request, plat, simpler)
            except BaseException as exc:
                with self.lock:
                    attempt.error = exc
                    if self.state is KernelState.INITIALIZING:  # preflight failed: nothing was created
                        self.state = KernelState.UNINITIALIZED
                    self.attempt = None
                    self.changed.notify_all()
                raise
            with self.lock:
                self.attempt = None
                self.changed.notify_all()
            if plat.is_simulator and settings.native_describe():
                from pypto.torch._native_describe import build_native_in_background

                build_native_in_background()
            return info

    def _initialise(self, request: KernelRequest, plat: DevicePlatform, simpler: Any) -> KernelInfo:
        """Preflight that needs the framework, the claim, then the Worker on the owner thread."""
        if plat.is_capturing():
            raise NotImplementedError(
                "pypto.torch.init: the current stream is capturing a graph; kernel-mode initialisation "
                "inside graph capture is not supported (initialise before capturing)"
            )
        current = plat.current_device()
        if request.device_index != current:
            raise ValueError(
                f"pypto.torch.init(device): expected the current {plat.device_type} device "
                f"{plat.device_type}:{current}, got {plat.device_type}:{request.device_index}; make it "
                "current first (PyPTO never selects a device)"
            )
        check_runtime_pin(simpler, skip=bool(settings.get("PYPTO_SKIP_RUNTIME_PIN")))
        check_runtime_interfaces(simpler)
        mode_gate.claim_kernel(
            f"pypto.torch.init(platform={request.platform!r}, runtime={request.runtime!r}, "
            f"device={request.device_index})"
        )
        generation = next(_generations)
        session = BorrowedWorkerSession(simpler, request, generation)
        owner = LifecycleOwner(lambda: plat.bind_context(request.device_index))
        with self.lock:
            self.simpler, self.platform, self.session, self.owner = simpler, plat, session, owner
        try:
            owner.call(session.init_worker)
        except BaseException as exc:
            with self.lock:  # the Worker (if any) and the KERNEL claim stay for cleanup
                self.worker = session.worker
                self.state = KernelState.FAILED
                self.failure = exc
            raise
        info = KernelInfo(
            request.platform,
            request.runtime,
            request.device_index,
            generation,
            request.config,
            request.asynchronous,
        )
        with self.lock:
            self.asynchronous = request.asynchronous
            self.worker = session.worker
            self.request, self.info = request, info
            self.state = KernelState.READY
        _register_exit_hook(plat)
        return info

    def _refuse_if_forked(self, what: str) -> None:
        if self.forked_from is not None:
            raise KernelInitError(
                f"pypto.torch.{what}: this process was forked from process {self.forked_from} after "
                "pypto.torch.init(); the borrowed device context and the Worker's threads do not cross a "
                "fork. Start worker processes with multiprocessing's 'spawn' start method "
                "(multiprocessing.get_context('spawn'))"
            )

    # -- use -------------------------------------------------------------------------------

    def ready(self) -> KernelInfo:
        """The READY context's info, initialising with the defaults on first use."""
        info = self.info
        if self.state is KernelState.READY and info is not None and self.forked_from is None:
            return info
        with self.lock:
            self._refuse_if_forked("register")
            st = self.state
        if st in (KernelState.CLOSING, KernelState.CLOSED):
            raise KernelClosedError(
                "pypto.torch: kernel mode was shut down in this process and closing is terminal; "
                "use a fresh process"
            )
        if st is KernelState.READY:
            assert self.info is not None
            return self.info
        return self.init(None, None, DEFAULT_RUNTIME, None)

    def prepare(self, artifact: Any) -> KernelCallable:
        """Register ``artifact`` on the Worker once (by identity); concurrent callers share."""
        info = self.ready()
        identity = artifact_identity(artifact)
        found = self.registrations.get(identity)
        if found is not None and found.generation == info.generation:
            return found
        _check_artifact(artifact, info)
        with self.lock:
            found = self.registrations.get(identity)
            if found is not None:
                return found
            prep = self.preparing.get(identity)
            leader = prep is None
            if prep is None:
                prep = self.preparing[identity] = _Preparation()
        if not leader:
            prep.done.wait()
            if prep.error is not None:
                raise prep.error
            assert prep.result is not None
            return prep.result
        try:
            chip_callable = artifact.chip_callable()  # the shared loader (store-validated)
            owner, session = self.owner, self.session
            if owner is None or session is None or self.state is not KernelState.READY:
                raise KernelClosedError("pypto.torch: kernel mode is shutting down; cannot register")
            handle = owner.call(lambda: session.register(chip_callable))
            result = KernelCallable(artifact, handle, info.generation, self.platform, self.simpler)
        except BaseException as exc:
            prep.error = exc
            with self.lock:
                self.preparing.pop(identity, None)
            prep.done.set()
            raise
        prep.result = result
        with self.lock:
            self.registrations[identity] = result
            if identity[0] == "object":
                self.retained[identity] = artifact
            self.preparing.pop(identity, None)
        prep.done.set()
        return result

    def stream_for(self, stream: object) -> Any:
        """The Worker stream that launches made on the framework stream ``stream`` go to."""
        found = self.streams.get(stream)
        if found is not None:
            return found
        with self.lock:
            found = self.streams.get(stream)
            if found is None:
                worker = self.worker
                if worker is None:
                    raise KernelClosedError("pypto.torch: kernel mode has no Worker (shut down)")
                default = getattr(stream, "stream_id", None) == 0
                found = worker.default_stream if default else worker.create_stream()
                self.streams[stream] = found
            return found

    def bind(self, kc: KernelCallable) -> Any:
        """The bound launch of ``kc``'s common calls, () or None (see :mod:`.bound`)."""
        return bound.bind(self, kc)

    def _close_gate(self) -> None:
        bound.close_gate(self)

    def _inside_gate(self) -> int:
        return bound.inside(self)

    def launch(self, kc: KernelCallable, frame: Any, *, wait: bool) -> PendingTicket:
        """Describe -> ticket -> launch on the frame's stream; with ``wait`` (the simulator's
        default, synchronous mode) wait for the run too and raise its error. In asynchronous
        mode (``init(asynchronous=True)``) a launch never waits: its run is retired, and its
        error reported, by the next synchronisation point that covers it (or by admission)."""
        worker = self.worker
        if self.state is not KernelState.READY or worker is None or kc.generation != self.info.generation:  # type: ignore[union-attr]
            raise KernelClosedError(
                f"pypto.torch: cannot launch {kc.name!r}: kernel mode is {self.state.value}"
                + (
                    " (the registration belongs to another context)"
                    if self.state is KernelState.READY
                    else ""
                )
            )
        if self.asynchronous:
            wait = False
        args = kc.materialize(frame)
        stream = self.stream_for(frame.stream)
        # The simulator's kernel works on the borrowed CPU memory itself: hold it for the run.
        pins = pin_frame(frame) if kc.signature.platform.is_simulator else ()
        ticket = PendingTicket(kc, frame, pins, frame.stream)
        with self.lock:
            if not self._admits():  # shutdown began since the check above: nothing is enqueued
                ticket.release()
                raise KernelClosedError(
                    f"pypto.torch: cannot launch {kc.name!r}: kernel mode is {self.state.value}"
                )
            pending = self.pending
            if pending:  # admission polls completed tickets only; it never waits
                keep = []
                for t in pending:
                    if t.complete:
                        if t.retire(0) is not None and not t.reported:
                            self.failed.append(t)  # reported by the next synchronisation point
                    else:
                        keep.append(t)
                pending[:] = keep
            pending.append(ticket)
            self.enqueuing += 1  # shutdown waits for this launch to publish or fail
        try:
            # A launch that is waited for runs on this thread when the chip is idle (no handoff).
            run = worker.launch(kc.handle, args, stream, waits=wait)
        except BaseException:
            # Refused before anything was enqueued: nothing uses the memory; release it now.
            with self.lock:
                self.enqueuing -= 1
                with contextlib.suppress(ValueError):
                    pending.remove(ticket)
                self.changed.notify_all()
            ticket.release()
            raise
        ticket.publish(run)
        if wait and run.done:
            # Run on this thread (an idle chip): retire it before letting go of the enqueue, so
            # that one lock section drops the ticket and ends the enqueue (shutdown sees neither).
            error = ticket.retire(0)
            with self.lock:
                self.enqueuing -= 1
                if not self.enqueuing and not self._admits():
                    self.changed.notify_all()  # shutdown waits for the enqueues (CLOSING)
                with contextlib.suppress(ValueError):
                    pending.remove(ticket)
            if error is not None:
                ticket.reported = True
                raise error
            return ticket
        with self.lock:
            self.enqueuing -= 1
            if not self.enqueuing and not self._admits():
                self.changed.notify_all()  # shutdown waits for the enqueues (CLOSING)
        if wait:
            self.retire_waited(ticket)
        return ticket

    def retire_waited(self, ticket: PendingTicket) -> None:
        """Waits for a launch whose ticket is in ``pending`` (synchronisation points and
        shutdown see it meanwhile), drops it from there and raises the run's error."""
        try:
            error = ticket.retire()
        finally:
            with self.lock, contextlib.suppress(ValueError):
                self.pending.remove(ticket)
        if error is not None:
            ticket.reported = True
            raise error

    def _admits(self) -> bool:
        """Whether a launch may still be enqueued (READY; read under the lock)."""
        return self.state is KernelState.READY

    # -- shutdown --------------------------------------------------------------------------

    def shutdown(self, timeout: float | None) -> None:
        if self.forked_from is not None:
            self._anchor_inherited()
            return
        with self.lock:
            while self.state is KernelState.INITIALIZING:
                self.changed.wait()
            st = self.state
            if st in (KernelState.UNINITIALIZED, KernelState.CLOSED):
                return
            if self.owner is not None and self.owner.on_owner_thread():
                raise KernelInitError("pypto.torch.shutdown: called from the lifecycle owner thread")
            self.state = KernelState.CLOSING  # from now on a launch is refused before its enqueue
            self._close_gate()
            # Launches admitted before CLOSING finish their enqueue (publish, or fail and drop
            # their ticket) before anything is retired or closed; bound launches (which do not
            # notify) are polled until none is inside.
            if not self._wait_enqueues(timeout):
                self.state = KernelState.FAILED
                self.failure = TimeoutError(
                    f"pypto.torch.shutdown: {self.enqueuing} launch(es) still enqueuing after {timeout} s"
                )
                raise self.failure
            pending = list(self.pending)
        failures: list[BaseException] = []
        unreported: list[BaseException] = []
        for ticket in pending:
            try:
                ticket.retire(timeout)
            except TimeoutError as exc:  # still running: keep the ticket, its sources and the Worker
                failures.append(exc)
                continue
            error = ticket.take_error()
            if error is not None:
                unreported.append(error)
            with self.lock, contextlib.suppress(ValueError):
                self.pending.remove(ticket)
        if failures:
            with self.lock:
                self.state = KernelState.FAILED
                self.failure = failures[0]
            raise failures[0]
        with self.lock:
            unreported += [e for e in (t.take_error() for t in self.failed) if e is not None]
            self.failed.clear()
        owner, session = self.owner, self.session
        try:
            if owner is not None and session is not None:
                owner.call(session.close)
        except BaseException as exc:
            with self.lock:
                self.state = KernelState.FAILED
                self.failure = exc
            raise
        if owner is not None:
            owner.stop()
        bound.unbind_all(self)
        with self.lock:
            self.registrations.clear()
            self.retained.clear()
            self.streams.clear()
            self.waits.clear()
            self.worker = None
            self.state = KernelState.CLOSED
        mode_gate.close()
        if unreported:  # asynchronous runs that failed and were never synchronised
            raise unreported[0]

    def _wait_enqueues(self, timeout: float | None) -> bool:
        """Wait (lock held) until no launch is enqueuing and no bound launch is inside."""
        end = None if timeout is None else time.monotonic() + timeout
        while self.enqueuing or self._inside_gate():
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            step = 0.001 if self.gate is not None else left
            self.changed.wait(step if left is None or step is None else min(step, left))
        return True

    def _anchor_inherited(self) -> None:
        # A forked child: the parent's Worker, owner thread and locks are not ours. Keep every
        # inherited object alive (never close, never collect) and take no inherited lock.
        for obj in (self.worker, self.session, self.owner, self.registrations, self.pending):
            _anchor(obj)
        self.state = KernelState.CLOSED


class _Process:
    """The process's manager (replaced in a forked child) and its exit hook registration."""

    def __init__(self) -> None:
        self.manager = _Manager()
        self.exit_lock = threading.Lock()
        self.exit_registered = False


_process = _Process()


def _check_artifact(artifact: Any, info: KernelInfo) -> None:
    capabilities = tuple(getattr(artifact, "capabilities", ()))
    name = getattr(artifact, "name", repr(artifact))
    if Contract.KERNEL.value not in capabilities:
        raise RegistrationError(
            f"register({name!r}): the artifact was compiled for {', '.join(capabilities) or 'no'} "
            "capability; kernel mode needs a KERNEL artifact (compile it with contract=KERNEL)"
        )
    if artifact.platform != info.platform:
        raise RegistrationError(
            f"register({name!r}): the artifact targets platform {artifact.platform!r}, but kernel mode "
            f"runs on {info.platform!r}"
        )
    if artifact.runtime != info.runtime:
        raise RegistrationError(
            f"register({name!r}): the artifact was built for runtime {artifact.runtime!r}, but kernel "
            f"mode runs {info.runtime!r}"
        )


def _device_index(device: object, plat: DevicePlatform) -> int | None:
    """The device index an ``init(device=...)`` argument names (None: the current one)."""
    if device is None:
        return None
    if isinstance(device, bool):
        raise TypeError(f"pypto.torch.init(device): expected an int, a str or a torch.device, got {device!r}")
    if isinstance(device, int):
        index: int | None = device
        dtype = plat.device_type
    elif isinstance(device, str):
        # Parsed here, not by torch.device: "npu" is a device type only once torch_npu is loaded.
        kind, _, number = device.partition(":")
        if not kind or (number and not number.isdigit()):
            raise TypeError(f"pypto.torch.init(device): expected 'type' or 'type:index', got {device!r}")
        index, dtype = (int(number) if number else None), kind
    elif hasattr(device, "type") and hasattr(device, "index"):  # a torch.device
        index, dtype = device.index, device.type
    else:
        raise TypeError(f"pypto.torch.init(device): expected an int, a str or a torch.device, got {device!r}")
    if dtype != plat.device_type:
        raise ValueError(
            f"pypto.torch.init(device): platform {plat.name!r} runs on {plat.device_type} devices, got {device!r}"
        )
    if index is not None and index < 0:
        raise ValueError(f"pypto.torch.init(device): expected a device index >= 0, got {device!r}")
    return index


def _preflight_request(
    device: object, platform: str | None, runtime: str, config: object, asynchronous: bool = False
) -> tuple[KernelRequest, DevicePlatform, Any]:
    """Normalise and validate ``init``'s arguments; nothing is claimed or created here."""
    from pypto.ir import PLATFORMS, RUNTIMES, get_platform

    name = platform if platform is not None else (settings.platform() or DEFAULT_PLATFORM)
    if name not in PLATFORMS:
        raise ValueError(f"pypto.torch.init(platform): expected one of {', '.join(PLATFORMS)}, got {name!r}")
    if runtime not in RUNTIMES:
        raise ValueError(f"pypto.torch.init(runtime): expected one of {', '.join(RUNTIMES)}, got {runtime!r}")
    provided = get_platform(name).runtimes
    if runtime not in provided:
        raise ValueError(
            f"pypto.torch.init(runtime): platform {name!r} provides {', '.join(provided)}, not {runtime!r}"
        )
    if not isinstance(asynchronous, bool):
        raise TypeError(f"pypto.torch.init(asynchronous): expected True or False, got {asynchronous!r}")
    plat = platform_for(name)
    index = _device_index(device, plat)
    import simpler

    cfg = make_call_config(simpler, config)
    if index is None:
        index = plat.current_device()
    return KernelRequest(name, runtime, index, cfg, asynchronous), plat, simpler


def _register_exit_hook(plat: DevicePlatform) -> None:
    with _process.exit_lock:
        if not _process.exit_registered:
            atexit.register(_shutdown_at_exit)
            # On an NPU the framework's own teardown is wrapped to close PyPTO first, whatever
            # order the hooks were registered in; shutdown is idempotent.
            plat.wrap_framework_teardown(_shutdown_at_exit)
            _process.exit_registered = True


def _shutdown_at_exit() -> None:
    exit_gate.close()  # daemon threads stop at the gate from now on
    m = _process.manager
    if m.forked_from is not None:
        m._anchor_inherited()
        return
    try:
        m.shutdown(timeout=60.0)
    except BaseException as exc:  # at exit: keep what could not be closed
        if m.state is KernelState.CLOSED:  # closed cleanly; an asynchronous run failed unseen
            print(f"pypto.torch: a kernel run failed and was never synchronised: {exc}", file=sys.stderr)
        _anchor(m.worker)
        _anchor(m.session)
        _anchor(m.pending)
    # Daemon threads whose launch was retired above get the GIL back and stop at the gate.
    exit_gate.drain(60.0)


def _after_fork_in_child() -> None:
    m = _process.manager
    if m.state is KernelState.UNINITIALIZED and m.attempt is None:
        _process.manager = _Manager()  # untouched: replaced once, inherited locks included
        return
    # Used before the fork: remember where it came from; never take or reuse its locks.
    m.lock = threading.Lock()
    m.changed = threading.Condition(m.lock)
    m._close_gate()  # the parent's Worker is not this process's: no bound launch here
    if m.forked_from is None:
        m.forked_from = os.getppid()


os.register_at_fork(after_in_child=_after_fork_in_child)


# -- public functions ------------------------------------------------------------------------


def shutdown(timeout: float | None = None) -> None:
    """Drain and close kernel mode (see :func:`pypto.torch.shutdown`)."""
    _process.manager.shutdown(timeout)


def state() -> KernelState:
    """The process's kernel-mode state."""
    return _process.manager.state


def current() -> _Manager:
    """The process's manager (internal: the operator layer launches through it)."""
    return _process.manager


def _reset_for_tests() -> None:
    """Shut down and replace the process's manager (tests only; pair with the mode gate's reset)."""
    m = _process.manager
    m._close_gate()
    bound.unbind_all(m)
    if m.forked_from is None and m.state not in (KernelState.UNINITIALIZED, KernelState.CLOSED):
        with contextlib.suppress(Exception):
            m.shutdown(timeout=30.0)
        if m.session is not None and state() is not KernelState.CLOSED:
            with contextlib.suppress(Exception):
                m.session.close()
        if m.owner is not None:
            m.owner.stop()
    _process.manager = _Manager()
