"""The exit gate's bracket (pypto.torch._kernel.exit_gate): nesting, and what a closed gate does."""

from __future__ import annotations

import threading

from pypto.torch._kernel.exit_gate import ExitGate


def test_an_inner_bracket_leaves_the_outer_one_open() -> None:
    gate = ExitGate()
    me = threading.get_ident()
    assert gate.enter()  # the operator's __call__
    assert not gate.enter()  # the kernel the dispatcher calls: nothing to leave
    assert me in gate.inside
    gate.leave()
    assert me not in gate.inside


def test_a_closed_gate_stops_daemon_threads_and_lets_others_through() -> None:
    gate = ExitGate()
    gate.close()
    reached: list[str] = []

    def call(name: str) -> None:
        if gate.enter():
            reached.append(name)
            gate.leave()
            reached.append(name + " left")

    daemon = threading.Thread(target=call, args=("daemon",), daemon=True)
    daemon.start()
    other = threading.Thread(target=call, args=("thread",))
    other.start()
    other.join(timeout=10)
    daemon.join(timeout=0.5)
    assert reached == ["thread", "thread left"]
    assert daemon.is_alive()  # waits at the gate until the process ends
    assert gate.drain(timeout=5.0)  # and is not counted inside
    assert gate.enter()  # the main thread never waits
    gate.leave()


def test_drain_waits_for_a_daemon_thread_inside() -> None:
    gate = ExitGate()
    entered, release = threading.Event(), threading.Event()

    def call() -> None:
        assert gate.enter()
        entered.set()
        release.wait(10)
        gate.leave()  # closed by now: stops here

    t = threading.Thread(target=call, daemon=True)
    t.start()
    assert entered.wait(10)
    gate.close()
    assert not gate.drain(timeout=0.05)
    release.set()
    assert gate.drain(timeout=10)
