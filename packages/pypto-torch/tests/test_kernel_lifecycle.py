"""Kernel-mode lifecycle: states, idempotence, conflicts, concurrency, failure injection,
preflight ordering, registration reuse and pending-ticket cleanup (in-process; fork and exit
behaviour are in test_kernel_process.py)."""

from __future__ import annotations

import threading
import types
from typing import Any

import pytest
import torch

import pypto.language as pl
import pypto.torch as pt
import simpler
from pypto.runtime import ModeConflictError, mode_gate
from pypto.runtime.api import compile_artifact
from pypto.torch._kernel import context, session
from pypto.torch._kernel.pending import PendingTicket
from pypto.torch._kernel.session import RuntimeCapabilityError

pytestmark = pytest.mark.usefixtures("kernel_mode")


@pl.jit
def double(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):
        out[:] = pl.add(x, x)
    return out


def _artifact(contract: str = "KERNEL", platform: str = "a2a3sim") -> Any:
    x = torch.ones(16, 16)
    return compile_artifact(double, x, torch.empty(16, 16), contract=contract, platform=platform)


def test_states_idempotence_and_terminal_close() -> None:
    assert pt.state() is pt.KernelState.UNINITIALIZED
    info = pt.init()
    assert pt.state() is pt.KernelState.READY
    assert info.platform == "a2a3sim"
    assert info.runtime == "tensormap_and_ringbuffer"
    assert info.device_index == 0
    assert info.generation > 0
    assert mode_gate.current() is mode_gate.ProcessMode.KERNEL
    assert pt.init() is info  # identical configuration: the same result
    assert pt.init(0, platform="a2a3sim", config={}) is info
    pt.shutdown()
    assert pt.state() is pt.KernelState.CLOSED
    pt.shutdown()  # idempotent
    with pytest.raises(pt.KernelClosedError, match="closing is terminal"):
        pt.init()
    with pytest.raises(ModeConflictError):  # closed: no switch to program mode either
        mode_gate.claim_program("test")


@pytest.mark.parametrize(("setting", "started"), [("1", True), ("0", False)])
def test_init_on_a_simulator_starts_the_native_describe_build(
    monkeypatch: pytest.MonkeyPatch, setting: str, started: bool
) -> None:
    from pypto.torch import _native_describe

    calls: list[int] = []
    monkeypatch.setattr(_native_describe, "build_native_in_background", lambda: calls.append(1))
    monkeypatch.setenv("PYPTO_NATIVE_DESCRIBE", setting)
    pt.init()
    pt.init()  # an init that finds kernel mode READY starts nothing
    assert calls == ([1] if started else [])


def test_shutdown_before_init_is_a_no_op() -> None:
    pt.shutdown()
    assert pt.state() is pt.KernelState.UNINITIALIZED
    assert mode_gate.current() is None


def test_platform_defaults_to_the_configured_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_PLATFORM", "a5sim")
    assert pt.init().platform == "a5sim"


def test_ring_scalars_broadcast_so_equal_configs_are_identical() -> None:
    info = pt.init(config={"task_window": 64, "heap": 1 << 20})
    assert pt.init(config=simpler.CallConfig(task_window=(64,) * 4, heap=[1 << 20] * 4)) is info


def test_a_conflicting_configuration_fails_naming_the_difference() -> None:
    pt.init(config={"task_window": 64})
    with pytest.raises(pt.KernelInitError, match="config"):
        pt.init(config={"task_window": 128})
    with pytest.raises(pt.KernelInitError, match="platform 'a2a3sim' \\(now\\) vs 'a5sim'"):
        pt.init(platform="a5sim", config={"task_window": 64})
    assert pt.state() is pt.KernelState.READY


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"config": {"heap": 10}}, ValueError, "CallConfig.heap"),
        ({"config": {"swimlane": True}}, ValueError, "output_prefix"),
        ({"config": {"workspace_budget_bytes": 100}}, ValueError, "workspace_budget_bytes"),
        ({"config": {"aicpu_thread_num": 9}}, ValueError, "aicpu_thread_num"),
        ({"config": {"rings": 4}}, TypeError, "fields are those of simpler.CallConfig"),
        ({"config": 42}, TypeError, "got int"),
        ({"platform": "tpu"}, ValueError, "init\\(platform\\)"),
        ({"runtime": "eager"}, ValueError, "init\\(runtime\\)"),
        ({"device": 1}, ValueError, "current cpu device cpu:0"),
        ({"device": "npu:0"}, ValueError, "runs on cpu devices"),
        ({"device": True}, TypeError, "init\\(device\\)"),
    ],
)
def test_preflight_errors_come_before_any_claim(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        pt.init(**kwargs)
    assert mode_gate.current() is None
    assert pt.state() is pt.KernelState.UNINITIALIZED
    assert pt.init().platform == "a2a3sim"  # a corrected call still works


def test_graph_capture_raises_not_implemented_before_the_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.torch._platform.simulator import SimulatorPlatform

    monkeypatch.setattr(SimulatorPlatform, "is_capturing", lambda self: True)
    with pytest.raises(NotImplementedError, match="capturing a graph"):
        pt.init()
    assert mode_gate.current() is None


def test_program_mode_first_refuses_kernel_mode() -> None:
    mode_gate.claim_program("a test's program run")
    with pytest.raises(ModeConflictError, match="program mode"):
        pt.init()
    assert pt.state() is pt.KernelState.UNINITIALIZED


def test_a_direct_jit_call_after_init_says_to_use_the_operator() -> None:
    pt.init()
    x = torch.ones(16, 16)
    with pytest.raises(ModeConflictError, match=r"pypto\.torch\.register"):
        double(x, torch.empty(16, 16))


def test_sixteen_concurrent_inits_share_one_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[int] = []
    real = session.BorrowedWorkerSession.init_worker

    def counting(self: session.BorrowedWorkerSession) -> None:
        created.append(self.generation)
        real(self)

    monkeypatch.setattr(session.BorrowedWorkerSession, "init_worker", counting)
    start = threading.Barrier(16)
    results: list[Any] = [None] * 16

    def go(i: int) -> None:
        start.wait()
        results[i] = pt.init()

    threads = [threading.Thread(target=go, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(created) == 1
    assert all(r is results[0] for r in results)


def test_concurrent_inits_share_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()

    def slow_failure(simpler_module: Any) -> None:
        gate.wait(5)
        raise RuntimeCapabilityError("injected")

    monkeypatch.setattr(context, "check_runtime_interfaces", slow_failure)
    errors: list[BaseException] = []

    def go() -> None:
        try:
            pt.init()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert len(errors) == 4
    assert len({id(e) for e in errors}) == 1  # one attempt, one shared failure
    assert pt.state() is pt.KernelState.UNINITIALIZED


def test_recursive_init_on_the_same_thread_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def recurse(simpler_module: Any) -> None:
        pt.init()

    monkeypatch.setattr(context, "check_runtime_interfaces", recurse)
    with pytest.raises(pt.KernelInitError, match="recursively"):
        pt.init()
    assert mode_gate.current() is None


def test_recursive_init_from_the_owner_thread_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session.BorrowedWorkerSession, "init_worker", lambda self: pt.init())
    with pytest.raises(pt.KernelInitError, match="recursively"):
        pt.init()
    assert pt.state() is pt.KernelState.FAILED


def test_a_native_init_failure_keeps_the_worker_and_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Any, prewarm_config: Any = None, *, borrowed_context_generation: Any = None) -> None:
        raise OSError("injected native failure")

    monkeypatch.setattr(simpler.Worker, "init", boom)
    with pytest.raises(OSError, match="injected native failure"):  # the original type
        pt.init()
    assert pt.state() is pt.KernelState.FAILED
    assert mode_gate.current() is mode_gate.ProcessMode.KERNEL
    assert isinstance(context.current().worker, simpler.Worker)
    with pytest.raises(pt.KernelInitError, match="failed in this process"):
        pt.init()
    pt.shutdown()
    assert pt.state() is pt.KernelState.CLOSED


def test_the_lifecycle_owner_thread_binds_the_context_before_worker_init(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pypto.torch._platform.simulator import SimulatorPlatform

    events: list[str] = []
    monkeypatch.setattr(
        SimulatorPlatform,
        "bind_context",
        lambda self, i: events.append(f"bind {threading.current_thread().name}"),
    )
    real = session.BorrowedWorkerSession.init_worker
    monkeypatch.setattr(
        session.BorrowedWorkerSession,
        "init_worker",
        lambda self: (events.append(f"init {threading.current_thread().name}"), real(self))[1],
    )
    pt.init()
    assert events == ["bind pypto-kernel-owner", "init pypto-kernel-owner"]


# -- runtime capability checks ------------------------------------------------------------------


def test_the_installed_runtime_passes_the_checks() -> None:
    session.check_runtime_pin(simpler, skip=False)
    session.check_runtime_interfaces(simpler)


def _fake_runtime(**native: Any) -> types.ModuleType:
    """A stand-in simpler whose native module reports ``native`` (the pinned values by default)."""
    fields: dict[str, Any] = {"__version__": "0.1.0", "KERNEL_ABI_VERSION": 4, "ORCHESTRATION_ABI_VERSION": 1}
    fields.update(native)
    fake = types.ModuleType("simpler")
    fake.__version__ = fields["__version__"]  # type: ignore[attr-defined]
    fake._native = types.SimpleNamespace(**{k: v for k, v in fields.items() if v is not None})  # type: ignore[attr-defined]
    return fake


def test_the_pin_names_the_build_identity_and_abi_that_simpler_native_exposes() -> None:
    native = simpler._native
    pin = session.PINNED_RUNTIME
    assert pin.version == native.__version__ == simpler.__version__
    assert dict(pin.abi) == {
        "KERNEL_ABI_VERSION": native.KERNEL_ABI_VERSION,
        "ORCHESTRATION_ABI_VERSION": native.ORCHESTRATION_ABI_VERSION,
    }
    session.check_runtime_pin(_fake_runtime(), skip=False)  # the stand-in itself passes


@pytest.mark.parametrize(
    ("native", "match"),
    [
        ({"KERNEL_ABI_VERSION": 2}, r"KERNEL_ABI_VERSION 2 \(pinned 4\)"),
        ({"ORCHESTRATION_ABI_VERSION": 9}, r"ORCHESTRATION_ABI_VERSION 9 \(pinned 1\)"),
        ({"__version__": "0.1.7"}, r"build 0\.1\.7 \(pinned 0\.1\.0\)"),  # same series, other build
        (
            {"KERNEL_ABI_VERSION": None},
            r"does not report its identity \(simpler\._native\.KERNEL_ABI_VERSION",
        ),
        ({"__version__": None}, r"does not report its identity \(simpler\._native\.__version__"),
        ({"KERNEL_ABI_VERSION": "3"}, r"does not report its identity"),
    ],
)
def test_the_runtime_pin(native: dict[str, Any], match: str) -> None:
    fake = _fake_runtime(**native)
    with pytest.raises(RuntimeCapabilityError, match=match):
        session.check_runtime_pin(fake, skip=False)
    session.check_runtime_pin(fake, skip=True)  # the explicit skip accepts it


def test_the_runtime_pin_needs_a_native_module_and_one_build() -> None:
    fake = _fake_runtime()
    fake.__version__ = "0.1.1"  # type: ignore[attr-defined]  # the Python side of another build
    with pytest.raises(RuntimeCapabilityError, match="stale build"):
        session.check_runtime_pin(fake, skip=False)
    del fake._native  # type: ignore[attr-defined]
    with pytest.raises(RuntimeCapabilityError, match="has no native module"):
        session.check_runtime_pin(fake, skip=False)
    session.check_runtime_pin(fake, skip=True)


def test_missing_interfaces_are_named() -> None:
    fake = types.SimpleNamespace(
        **{n: getattr(simpler, n) for n in ("Buffer", "TaskArgs", "RunHandle", "CallConfig")}
    )

    class OldWorker:
        def init(self, prewarm_config: Any = None) -> None: ...

        def register(self, c: Any) -> None: ...

        def launch(self, handle: Any, args: Any) -> None: ...

    fake.Worker = OldWorker
    with pytest.raises(RuntimeCapabilityError) as info:
        session.check_runtime_interfaces(fake)  # type: ignore[arg-type]
    message = str(info.value)
    for needed in ("borrowed init", "caller-stream submit", "flush_diagnostics", "ChipStorageTaskArgs"):
        assert needed in message
    assert "Worker.register" not in message


def test_init_checks_the_pin_unless_told_to_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simpler._native, "KERNEL_ABI_VERSION", 7)
    with pytest.raises(RuntimeCapabilityError, match=r"KERNEL_ABI_VERSION 7"):
        pt.init()
    assert mode_gate.current() is None
    monkeypatch.setenv("PYPTO_SKIP_RUNTIME_PIN", "1")
    assert pt.init().platform == "a2a3sim"


# -- registration ---------------------------------------------------------------------------------


def test_registration_requires_kernel_capability_and_the_same_platform() -> None:
    pt.init()
    manager = context.current()
    with pytest.raises(pt.RegistrationError, match="KERNEL artifact"):
        manager.prepare(_artifact(contract="PROGRAM"))
    with pytest.raises(pt.RegistrationError, match="platform 'a5sim'"):
        manager.prepare(_artifact(platform="a5sim"))


def test_concurrent_preparations_share_one_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    pt.init()
    manager = context.current()
    artifact = _artifact()
    calls: list[int] = []
    real = session.BorrowedWorkerSession.register

    def slow_register(self: Any, chip_callable: Any) -> Any:
        calls.append(1)
        threading.Event().wait(0.2)
        return real(self, chip_callable)

    monkeypatch.setattr(session.BorrowedWorkerSession, "register", slow_register)
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(manager.prepare(artifact))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 8
    assert all(r is results[0] for r in results)
    assert manager.prepare(artifact) is results[0]


def test_a_full_registry_error_propagates_without_eviction(monkeypatch: pytest.MonkeyPatch) -> None:
    pt.init()
    manager = context.current()

    def full(self: Any, chip_callable: Any) -> Any:
        raise ValueError("Worker.register: at most 64 callables per Worker; 64 registered")

    monkeypatch.setattr(session.BorrowedWorkerSession, "register", full)
    with pytest.raises(ValueError, match="at most 64"):
        manager.prepare(_artifact())
    assert manager.registrations == {}
    assert manager.preparing == {}
    assert pt.state() is pt.KernelState.READY


# -- pending tickets -------------------------------------------------------------------------------


class _Run:
    def __init__(self, finishes: bool) -> None:
        self.finishes = finishes
        self.done = finishes

    def wait(self, timeout: float | None = None) -> bool:
        return self.finishes

    def result(self, timeout: float | None = None) -> None:
        return None


def test_a_ticket_is_complete_only_once_published_and_done() -> None:
    ticket = PendingTicket("callable", frame="sources")
    assert not ticket.complete
    with pytest.raises(RuntimeError, match="no run was published"):
        ticket.retire()
    ticket.publish(_Run(finishes=False))
    assert not ticket.complete
    with pytest.raises(TimeoutError):
        ticket.retire(0.01)
    assert ticket.frame == "sources"  # a run still going keeps its sources
    ticket.publish(_Run(finishes=True))
    assert ticket.complete
    ticket.retire()
    assert ticket.frame is None


def test_shutdown_retires_every_pending_run_then_closes() -> None:
    op = pt.register(double, "pypto_test_lifecycle::double")
    try:
        x = torch.arange(256, dtype=torch.float32).reshape(16, 16)
        outs = [torch.zeros(16, 16) for _ in range(6)]
        op(x, outs[0])  # compiles and registers
        manager = context.current()
        kc = next(iter(op._callables.values()))
        tickets = [manager.launch(kc, kc.signature.describe_call([x, o]), wait=False) for o in outs[1:]]
        assert all(t.run is not None for t in tickets)
        pt.shutdown()
        assert manager.pending == []
        assert all(t.frame is None for t in tickets)
        for o in outs:
            torch.testing.assert_close(o, x + x)
        with pytest.raises(pt.KernelClosedError):
            op(x, outs[0])
    finally:
        op.remove()


def test_a_shutdown_timeout_keeps_the_ticket_and_the_worker() -> None:
    pt.init()
    manager = context.current()
    stuck = PendingTicket("callable", frame="sources")
    stuck.publish(_Run(finishes=False))
    manager.pending.append(stuck)
    with pytest.raises(TimeoutError):
        pt.shutdown(timeout=0.01)
    assert pt.state() is pt.KernelState.FAILED
    assert manager.pending == [stuck]
    assert stuck.frame == "sources"
    assert manager.worker is not None
    manager.pending.clear()  # let the fixture close it


class _GatedWorker:
    """The real Worker, with ``launch`` held at a gate (or failing) to stage races."""

    def __init__(self, worker: Any, *, fail: BaseException | None = None) -> None:
        self._worker = worker
        self.fail = fail
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._worker, name)

    def launch(self, handle: Any, args: Any, stream: Any = None, *, waits: bool = False) -> Any:
        self.entered.set()
        self.release.wait(30)
        if self.fail is not None:
            raise self.fail
        return self._worker.launch(handle, args, stream, waits=waits)


def test_shutdown_waits_for_a_launch_being_enqueued() -> None:
    op = pt.register(double, "pypto_test_lifecycle::double_race")
    try:
        x = torch.arange(256, dtype=torch.float32).reshape(16, 16)
        out = torch.zeros(16, 16)
        op(x, torch.zeros(16, 16))  # compiles and registers
        for kc in op._callables.values():  # the general path's enqueue (bound launches: test_kernel_bound)
            kc.bound = ()
        op._bound = None
        manager = context.current()
        gated = _GatedWorker(manager.worker)
        gated.release.clear()
        manager.worker = gated
        errors: list[BaseException] = []

        def call() -> None:
            try:
                op(x, out)
            except BaseException as exc:
                errors.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        assert gated.entered.wait(30)
        closer = threading.Thread(target=pt.shutdown)
        closer.start()
        closer.join(0.3)
        assert closer.is_alive()  # shutdown waits: the Worker is not closed under the enqueue
        assert pt.state() is pt.KernelState.CLOSING
        with pytest.raises(pt.KernelClosedError):  # a launch that comes later fails before enqueue
            op(x, torch.zeros(16, 16))
        gated.release.set()
        caller.join(30)
        closer.join(30)
        assert errors == []
        torch.testing.assert_close(out, x + x)
        assert pt.state() is pt.KernelState.CLOSED
        assert manager.pending == []
    finally:
        op.remove()


def test_a_failed_launch_releases_its_ticket_and_tensors_at_once() -> None:
    import gc
    import weakref

    op = pt.register(double, "pypto_test_lifecycle::double_fail")
    try:
        op(torch.ones(16, 16), torch.zeros(16, 16))
        manager = context.current()
        manager.worker = _GatedWorker(manager.worker, fail=ValueError("launch: encoder rejected it"))
        kc = next(iter(op._callables.values()))
        x = torch.ones(16, 16)
        alive = weakref.ref(x)
        frame = kc.signature.describe_call([x, torch.zeros(16, 16)])
        with pytest.raises(ValueError, match="encoder rejected") as info:
            manager.launch(kc, frame, wait=True)
        info.value.__traceback__ = None  # the failed call's frames are not what this checks
        del info
        assert manager.pending == []
        del x, frame
        gc.collect()
        assert alive() is None  # nothing holds the caller's tensor until shutdown
    finally:
        op.remove()
