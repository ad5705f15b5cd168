"""Kernel mode across processes: fork (after init, and of an untouched manager), exit
ordering against the framework's own exit hooks, anchoring when a clean shutdown is
impossible, and scale-out with torch.distributed (gloo, two ranks, each on its own
simulated chip). Each scenario runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from pypto_testing.scripts import ADD_PROGRAM_SOURCE, run_python_file

_PRELUDE = "import os, sys\nimport torch\nimport pypto.torch as pt\n" + ADD_PROGRAM_SOURCE


def _run(
    tmp_path: Path, kernel_store: Path, body: str, name: str = "scenario.py"
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / name
    script.write_text(_PRELUDE + textwrap.dedent(body))
    return run_python_file(script, tmp_path, kernel_store, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})


def _check(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    )
    return proc.stdout.splitlines()


def test_a_child_forked_after_init_must_be_spawned(tmp_path: Path, kernel_store: Path) -> None:
    lines = _check(
        _run(
            tmp_path,
            kernel_store,
            """
            from pypto.runtime import mode_gate
            op = pt.register(add, "fork_after::add")
            a, b = torch.rand(16, 16), torch.rand(16, 16)
            out = torch.empty(16, 16)
            op(a, b, out)
            pid = os.fork()
            if pid == 0:
                problems = []
                try:
                    op(a, b, torch.empty(16, 16))
                    problems.append("the op ran in the child")
                except pt.KernelInitError as exc:
                    if "'spawn'" not in str(exc):
                        problems.append("no advice: " + str(exc))
                try:
                    pt.init()
                    problems.append("init succeeded in the child")
                except pt.KernelInitError:
                    pass
                try:
                    mode_gate.claim_program("child")
                    problems.append("program mode was claimed in the child")
                except mode_gate.ModeConflictError:
                    pass
                pt.shutdown()  # anchors the inherited state: no inherited lock, no close
                if pt.state() is not pt.KernelState.CLOSED:
                    problems.append("state " + pt.state().value)
                print("child:", problems or "ok", flush=True)
                sys.exit(1 if problems else 0)  # atexit runs in the child too
            _, status = os.waitpid(pid, 0)
            print("child exit", os.waitstatus_to_exitcode(status), flush=True)
            out2 = torch.empty(16, 16)
            op(a, b, out2)  # the parent's Worker was not closed by the child
            torch.testing.assert_close(out2, a + b)
            print("parent:", pt.state().value)
            """,
        )
    )
    assert lines == ["child: ok", "child exit 0", "parent: READY"]


def test_an_untouched_manager_is_replaced_in_the_child(tmp_path: Path, kernel_store: Path) -> None:
    lines = _check(
        _run(
            tmp_path,
            kernel_store,
            """
            import traceback
            op = pt.register(add, "fork_before::add")
            pid = os.fork()
            a, b = torch.rand(16, 16), torch.rand(16, 16)
            out = torch.empty(16, 16)
            try:
                op(a, b, out)  # each process initialises its own simulated chip
                torch.testing.assert_close(out, a + b)
            except BaseException:
                print("in", "child" if pid == 0 else "parent", traceback.format_exc(), flush=True)
                raise
            if pid == 0:
                print("child ok", flush=True)
                sys.exit(0)
            _, status = os.waitpid(pid, 0)
            print("child exit", os.waitstatus_to_exitcode(status))
            print("parent ok")
            """,
        )
    )
    assert lines == ["child ok", "child exit 0", "parent ok"]


def test_shutdown_at_exit_runs_before_the_frameworks_exit_hooks(tmp_path: Path, kernel_store: Path) -> None:
    lines = _check(
        _run(
            tmp_path,
            kernel_store,
            """
            import atexit
            from pypto.torch._kernel import context

            # Stands for torch_npu's teardown, registered when the framework was imported.
            atexit.register(lambda: print("framework teardown", flush=True))
            real = context._Manager.shutdown

            def traced(self, timeout):
                print("pypto shutdown from", pt.state().value, flush=True)
                real(self, timeout)
                print("pypto", pt.state().value, flush=True)

            context._Manager.shutdown = traced
            op = pt.register(add, "exit_order::add")
            a = torch.rand(16, 16)
            op(a, a, torch.empty(16, 16))
            print("main done", flush=True)
            """,
        )
    )
    assert lines == ["main done", "pypto shutdown from READY", "pypto CLOSED", "framework teardown"]


def test_an_impossible_shutdown_at_exit_anchors_the_worker(tmp_path: Path, kernel_store: Path) -> None:
    lines = _check(
        _run(
            tmp_path,
            kernel_store,
            """
            from pypto.torch._kernel import context, session
            import simpler

            def refuse(self):
                raise RuntimeError("the device context is already gone")

            session.BorrowedWorkerSession.close = refuse
            destroyed = []
            simpler.Worker.__del__ = lambda self: destroyed.append(self)  # must never run
            op = pt.register(add, "exit_anchor::add")
            a = torch.rand(16, 16)
            op(a, a, torch.empty(16, 16))
            worker = context.current().worker
            context._shutdown_at_exit()
            print(pt.state().value, worker in context._anchors, destroyed == [], flush=True)
            del worker
            """,
        )
    )
    assert lines == ["FAILED True True"]


def test_two_ranks_with_gloo_each_on_its_own_simulated_chip(tmp_path: Path, kernel_store: Path) -> None:
    rendezvous = tmp_path / "rendezvous"
    lines = _check(
        _run(
            tmp_path,
            kernel_store,
            f"""
            import torch.distributed as dist
            import torch.multiprocessing as mp

            def rank_main(rank, world):
                dist.init_process_group("gloo", init_method="file://{rendezvous}", rank=rank, world_size=world)
                op = pt.register(add, "ddp_test::add")
                info = pt.init()

                class Shifted(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.shift = torch.nn.Parameter(torch.full((16, 16), float(rank + 1)))

                    def forward(self, x):
                        return op(x, self.shift, torch.empty_like(x))

                model = torch.nn.parallel.DistributedDataParallel(Shifted())  # rank 0's parameters win
                torch.manual_seed(0)
                x = torch.rand(16, 16)
                with torch.no_grad():
                    y = model(x)
                torch.testing.assert_close(y, x + 1.0)
                dist.all_reduce(y)
                torch.testing.assert_close(y, 2 * (x + 1.0))
                # one write per line: both ranks print at once into one pipe (print writes the
                # text and its newline separately, which can interleave two ranks' lines)
                print(f"rank {{rank}} ok on {{info.platform}} generation {{info.generation}}\\n", end="", flush=True)
                pt.shutdown()
                dist.destroy_process_group()

            if __name__ == "__main__":
                mp.spawn(rank_main, args=(2,), nprocs=2, join=True)
            """,
            name="ddp_scenario.py",
        )
    )
    assert sorted(lines) == ["rank 0 ok on a2a3sim generation 1", "rank 1 ok on a2a3sim generation 1"]


def test_exit_is_clean_while_daemon_threads_are_inside_operator_calls(
    tmp_path: Path, kernel_store: Path
) -> None:
    # Before the exit gate, about one exit in five aborted ("terminate called without an active
    # exception"): CPython unwound a daemon thread through torch's C++ dispatcher.
    for run, delay in enumerate((0.05, 0.2, 0.1, 0.4, 0.3, 0.15)):
        proc = _run(
            tmp_path,
            kernel_store,
            f"""
            import threading, time
            op = pt.register(add, "daemon_exit{run}::add")
            a, b = torch.rand(64, 64), torch.rand(64, 64)
            op(a, b, torch.empty(64, 64))

            def loop():
                out = torch.empty(64, 64)
                while True:
                    op(a, b, out)

            for _ in range(4):
                threading.Thread(target=loop, daemon=True).start()
            time.sleep({delay})
            print("exiting", flush=True)
            """,
            name=f"daemon_exit{run}.py",
        )
        assert proc.returncode == 0, f"run {run}: exit {proc.returncode}\n{proc.stderr[-4000:]}"
        assert "terminate" not in proc.stderr, proc.stderr[-4000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
        assert proc.stdout.splitlines() == ["exiting"]


_RESIZE_ATTACK = """
    import threading, time
    from pypto.torch._kernel import pins

    @pl.jit
    def tiled_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tiled_add"):
            for i in pl.range(64):
                s = pl.add(pl.load(a, [i * 16, 0], [16, 64]), pl.load(b, [i * 16, 0], [16, 64]))
                pl.store(s, [i * 16, 0], out)
        return out

    if NATIVE:  # pins through the describe_call extension, else through the ctypes fallback
        assert pt.build_native()
    op = pt.register(tiled_add, "resize_attack::add")
    # 256 KiB each: above glibc's mmap threshold, so a freed storage is unmapped at once
    a, b, out = torch.rand(1024, 64), torch.rand(1024, 64), torch.empty(1024, 64)
    op(a, b, out)
    nbytes = a.untyped_storage().nbytes()
    stop = threading.Event()
    counts = {"refused": 0, "resized": 0}

    def attack():
        while not stop.is_set():
            for t in (a, out):
                storage = t.untyped_storage()
                try:
                    storage.resize_(0)
                    counts["resized"] += 1
                    storage.resize_(nbytes)
                except RuntimeError as exc:
                    assert "not resizable" in str(exc), exc
                    counts["refused"] += 1

    thread = threading.Thread(target=attack)
    thread.start()
    outcomes = {}
    end = time.monotonic() + 4
    while time.monotonic() < end:
        try:
            op(a, b, out)
            kind = "ran"
        except (pt.ArgumentError, pins.StorageChangedError) as exc:
            kind = type(exc).__name__
        outcomes[kind] = outcomes.get(kind, 0) + 1
    stop.set()
    thread.join()
    print("pinning", pins.pinning_available())
    print("native pins", pins._pins.native is not None)
    print("ran", outcomes.get("ran", 0) > 0)
    print("refused", counts["refused"] > 0)
    print(sorted(outcomes), counts, file=sys.stderr)
"""


@pytest.mark.parametrize("native", [True, False], ids=["native-pins", "ctypes-pins"])
def test_freeing_a_borrowed_storage_during_a_launch_raises_instead_of_crashing(
    tmp_path: Path, kernel_store: Path, native: bool
) -> None:
    body = f"    NATIVE = {native}\n" + _RESIZE_ATTACK
    proc = _run(tmp_path, kernel_store, body, name="resize_attack.py")
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-4000:]}"
    assert proc.stdout.splitlines() == [
        "pinning True",
        f"native pins {native}",
        "ran True",
        "refused True",
    ], proc.stderr[-2000:]


def test_a_refused_mode_switch_leaves_no_leak_report_at_exit(tmp_path: Path, kernel_store: Path) -> None:
    """A jit function that is also a registered operator is kept alive by torch's operator
    registry until the process ends; its refused direct call built a native call plan, which
    must be released before nanobind checks for leaked instances at exit."""
    proc = _run(
        tmp_path,
        kernel_store,
        """
        from pypto.runtime import ModeConflictError

        op = pt.register(add, "pypto_test_exit_leak::add")
        a = torch.ones(16, 16)
        op(a, a, torch.zeros(16, 16))  # kernel mode
        try:
            add(a, a, torch.zeros(16, 16))  # program mode: refused
        except ModeConflictError:
            print("refused")
        """,
    )
    assert _check(proc) == ["refused"]
    assert "leaked" not in proc.stderr, proc.stderr[-4000:]
