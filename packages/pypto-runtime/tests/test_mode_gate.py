"""The process mode gate: claims, conflicts, threads, close, fork children."""

from __future__ import annotations

import os
import threading

import pytest

from pypto.runtime import mode_gate
from pypto.runtime.mode_gate import ModeConflictError, ProcessMode

pytestmark = pytest.mark.usefixtures("fresh_gate")


def test_unclaimed_at_start_and_claim_is_idempotent() -> None:
    assert mode_gate.current() is None
    mode_gate.claim_program("run(a)")
    mode_gate.claim_program("run(b)")
    assert mode_gate.current() is ProcessMode.PROGRAM
    assert mode_gate.state().claimed_by == "run(a)"


@pytest.mark.parametrize(
    ("first", "second"),
    [(mode_gate.claim_program, mode_gate.claim_kernel), (mode_gate.claim_kernel, mode_gate.claim_program)],
)
def test_conflicting_claim_names_holder_and_advice(first, second) -> None:  # type: ignore[no-untyped-def]
    first("first-op")
    held = mode_gate.current()
    with pytest.raises(ModeConflictError) as info:
        second("second-op")
    msg = str(info.value)
    assert held is not None
    assert f"in {held.value} mode" in msg
    assert "first-op" in msg
    assert "second-op" in msg
    assert "spawn" in msg
    assert info.value.held is held
    assert mode_gate.current() is held


def test_close_is_terminal() -> None:
    mode_gate.claim_kernel("pypto.torch.init")
    mode_gate.close()
    for claim in (mode_gate.claim_program, mode_gate.claim_kernel):
        with pytest.raises(ModeConflictError, match="closed"):
            claim("later")


def test_close_unclaimed_is_terminal_too() -> None:
    mode_gate.close()
    with pytest.raises(ModeConflictError, match="terminal"):
        mode_gate.claim_program("run")


def test_claim_rejects_non_mode() -> None:
    with pytest.raises(TypeError, match="ProcessMode"):
        mode_gate.claim("program", what="x")  # type: ignore[arg-type]


def test_competing_threads_exactly_one_mode_wins() -> None:
    for _ in range(20):
        mode_gate._reset_for_tests()
        barrier = threading.Barrier(8)
        results: list[ProcessMode | str] = []

        def worker(
            i: int, barrier: threading.Barrier = barrier, results: list[ProcessMode | str] = results
        ) -> None:
            mode = ProcessMode.PROGRAM if i % 2 else ProcessMode.KERNEL
            barrier.wait()
            try:
                mode_gate.claim(mode, what=f"t{i}")
                results.append(mode)
            except ModeConflictError as exc:
                results.append("conflict" if exc.requested is mode else "wrong-requested")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = {r for r in results if r != "conflict"}
        assert winners == {mode_gate.current()}
        assert results.count("conflict") == 4  # the four claimants of the losing mode


def _fork_and_report(child_claims: ProcessMode) -> tuple[str, str]:
    """Fork; the child reports its inherited state, then tries ``child_claims``."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            st = mode_gate.state()
            inherited = "none" if st.mode is None else st.mode.value
            try:
                mode_gate.claim(child_claims, what="child")
                outcome = "ok"
            except ModeConflictError as exc:
                outcome = "conflict:" + str(exc)
            os.write(w, f"{inherited}|{outcome}".encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    inherited, outcome = data.decode().split("|", 1)
    return inherited, outcome


def test_fork_child_of_unclaimed_parent_may_claim_kernel() -> None:
    assert _fork_and_report(ProcessMode.KERNEL) == ("none", "ok")


def test_fork_child_of_program_parent_is_reset() -> None:
    mode_gate.claim_program("parent run")
    assert _fork_and_report(ProcessMode.KERNEL) == ("none", "ok")
    assert mode_gate.current() is ProcessMode.PROGRAM  # the parent is unaffected


def test_fork_child_of_closed_program_parent_is_reset() -> None:
    mode_gate.claim_program("parent run")
    mode_gate.close()
    assert _fork_and_report(ProcessMode.PROGRAM) == ("none", "ok")


def test_fork_child_of_kernel_parent_keeps_kernel() -> None:
    mode_gate.claim_kernel("pypto.torch.init")
    inherited, outcome = _fork_and_report(ProcessMode.PROGRAM)
    assert inherited == "kernel"
    assert outcome.startswith("conflict:")
    assert f"inherited from parent process {os.getpid()}" in outcome
    assert "spawn" in outcome


def test_fork_while_another_thread_holds_the_lock() -> None:
    # A parent thread holds the gate's lock at fork time; the child must not deadlock.
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        with mode_gate._gate.lock:
            started.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    started.wait(5)
    try:
        assert _fork_and_report(ProcessMode.PROGRAM) == ("none", "ok")
    finally:
        release.set()
        t.join()


def test_import_and_settings_do_not_claim(run_without_optional_runtime) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import pypto.runtime, pypto.runtime.store, pypto.runtime.artifact_runtime\n"
        "from pypto.runtime import mode_gate\n"
        "assert mode_gate.current() is None, mode_gate.current()\n"
    )
    run_without_optional_runtime(code).check()


class _FakeWorker:
    created: list[dict[str, object]] = []  # noqa: RUF012 - test recorder

    def __init__(self, **kw: object) -> None:
        assert mode_gate.current() is ProcessMode.PROGRAM, "Worker constructed before the claim"
        _FakeWorker.created.append(kw)

    def init(self, prewarm: object = None) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def fake_simpler(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    import types

    mod = types.ModuleType("simpler")
    mod.Worker = _FakeWorker  # type: ignore[attr-defined]
    monkeypatch.setitem(__import__("sys").modules, "simpler", mod)
    _FakeWorker.created.clear()
    return _FakeWorker


def test_direct_worker_initialisation_claims_program(fake_simpler) -> None:  # type: ignore[no-untyped-def]
    from pypto.runtime import worker

    w = worker.program_worker()
    assert isinstance(w, fake_simpler)
    assert mode_gate.current() is ProcessMode.PROGRAM
    assert fake_simpler.created[0]["execution_mode"] == "program"


def test_kernel_process_refuses_program_worker_before_creating_it(fake_simpler) -> None:  # type: ignore[no-untyped-def]
    from pypto.runtime import worker

    mode_gate.claim_kernel("pypto.torch.init")
    with pytest.raises(ModeConflictError, match="program_worker"):
        worker.program_worker()
    assert fake_simpler.created == []


def test_shared_worker_is_reused_and_forgotten_in_fork_child(fake_simpler) -> None:  # type: ignore[no-untyped-def]
    from pypto.runtime import worker

    try:
        a = worker.shared_worker("a2a3sim")
        assert worker.shared_worker("a2a3sim") is a
        assert len(fake_simpler.created) == 1
        pid = os.fork()
        if pid == 0:
            os._exit(0 if not worker._shared.workers and mode_gate.current() is None else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        worker.close_shared_workers()
