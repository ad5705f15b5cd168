"""The rank engine: torch.distributed starts, connects and watches the rank processes.

This is the one module of pypto-runtime that imports torch, and only when a distributed
program is prepared (its imports are inside the functions): single-chip programs never load it.

- Process start and failure detection: torch's elastic launcher (the engine of ``torchrun``),
  ``torch.distributed.elastic.multiprocessing.start_processes``, runs ``python -m
  pypto.runtime.distributed._engine`` once per rank with torchrun's environment contract
  (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``). Polling its
  context reports a rank that exited (its exit code or signal, and the error it recorded) and
  terminates the others.
- Rendezvous and control: a ``TCPStore`` served by the parent at ``MASTER_ADDR:MASTER_PORT``.
  It holds the plans of the worker's programs (``boot``); commands are ``cmd/<seq>`` keys
  (JSON, naming the program and the phase to run), and each rank answers ``done/<seq>/<rank>``
  with ``ok`` or its error; a rank that ran sets ``time/<seq>/<rank>`` (the seconds its launches
  took, timed inside the rank) before its ``done``.
- The ranks form a gloo process group over the same store; its barrier confirms every rank is
  up before the parent sends the first command.
- On the process-group data path (``boot["data_path"] == "process_group"``) each rank also runs
  the gloo data path (``_gloo_path.GlooDataPath``: two more gloo groups and a service thread) that
  carries its kernels' cross-rank requests, and the control group's barrier separates each
  dispatch's window zeroing from its kernels.

A rank exits on the ``close`` command, or when the parent's process is gone.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from datetime import timedelta
from typing import Any

from pypto.runtime.distributed.errors import DistributedRankError, DistributedTimeoutError

__all__ = ["RankGroup"]

_HANDLED_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")


def _signal_handlers() -> dict[Any, Any]:
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    found = {}
    for name in _HANDLED_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            found[sig] = signal.getsignal(sig)
    return found


def _restore_signal_handlers(saved: dict[Any, Any]) -> None:
    import signal

    for sig, handler in saved.items():
        if handler is not None:
            signal.signal(sig, handler)


_POLL = 0.02  # seconds between checks of the store and the processes
# A dispatch is waited for this much longer than the timeout: a
# kernel's pld.system.wait gives up after the timeout itself, and its error (naming the rank, the
# signal and the value seen) then reaches the parent before the parent stops waiting.
_DISPATCH_GRACE = 10.0
_PARENT_ENV = "PYPTO_DIST_PARENT"


def _serve_windows(data_path: Any, runner: Any, barrier: Any) -> None:
    """Point the gloo data path at ``runner``'s windows, then wait for every rank."""
    data_path.use_windows(runner.own_windows())
    barrier()


def _rank_main() -> None:
    """A rank process (torchrun's environment): rendezvous, then run commands until ``close``."""
    import torch.distributed as dist

    from pypto.runtime.distributed.plan import DistributedPlan
    from pypto.runtime.distributed.rank import RankRunner

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    parent = int(os.environ.get(_PARENT_ENV, "0"))
    store = dist.TCPStore(  # type: ignore[attr-defined, unused-ignore]
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        is_master=False,
        timeout=timedelta(seconds=60),
    )
    boot = json.loads(store.get("boot"))
    timeout = timedelta(seconds=boot["timeout"])
    store.set_timeout(timeout)
    dist.init_process_group(
        "gloo",
        store=dist.distributed_c10d.PrefixStore("gloo", store),
        rank=rank,
        world_size=world_size,
        timeout=timeout,
    )
    data_path_name = boot.get("data_path", "shared_memory")
    runners = [
        RankRunner(
            rank,
            DistributedPlan.from_json(plan),
            aic_threads=boot["aic_threads"],
            aiv_threads=boot["aiv_threads"],
            data_path=data_path_name,
        )
        for plan in boot["plans"]
    ]
    data_path = None
    if data_path_name == "process_group":
        from pypto.runtime.distributed._gloo_path import GlooDataPath

        data_path = GlooDataPath(rank, world_size, runners[0].own_windows())
        for runner in runners:
            runner.host_handler = data_path.handle
            # every rank runs the same program in a dispatch: serve that program's windows, and
            # let the control group's barrier separate the windows' zeroing from the kernels
            runner.before_kernels = functools.partial(_serve_windows, data_path, runner, dist.barrier)
    try:
        dist.barrier()
        store.set(f"ready/{rank}", "1")
        seq = 0
        while True:
            key = f"cmd/{seq}"
            while not store.check([key]):
                if parent and os.getppid() != parent:
                    return  # the parent is gone: nobody will send a command
                time.sleep(_POLL)
            command = json.loads(store.get(key))
            if command["op"] == "close":
                if data_path is not None:
                    data_path.close()
                return
            try:
                for runner in runners:
                    runner.forget(command.get("forget", []))
                runner = runners[command.get("program", 0)]
                runner.run(command)
                result = "ok"
                store.set(f"time/{seq}/{rank}", repr(runner.last_run_seconds))
            except BaseException as exc:  # reported to the parent, which fails the dispatch
                result = "".join(traceback.format_exception(exc))
            store.set(f"done/{seq}/{rank}", result)
            seq += 1
    finally:
        for runner in runners:
            runner.close()
        dist.destroy_process_group()


class RankGroup:
    """The parent's handle on ``world_size`` running rank processes."""

    def __init__(
        self,
        plans_json: list[dict[str, Any]],
        world_size: int,
        *,
        timeout: float,
        aic_threads: int | None,
        aiv_threads: int | None,
        data_path: str = "shared_memory",
    ) -> None:
        import torch.distributed as dist
        from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, start_processes

        self.world_size = world_size
        self.timeout = timeout
        self._seq = 0
        self._closed = False
        self.rank_seconds: tuple[float, ...] = ()  # each rank's launch time in the last dispatch
        self.context: Any = None
        self._log_dir = tempfile.mkdtemp(prefix="pypto-ranks-")
        self.store = dist.TCPStore(  # type: ignore[attr-defined, unused-ignore]
            "127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=timeout)
        )
        self.store.set(
            "boot",
            json.dumps(
                {
                    "timeout": timeout,
                    "plans": plans_json,
                    "aic_threads": aic_threads,
                    "aiv_threads": aiv_threads,
                    "data_path": data_path,
                }
            ),
        )
        base = {
            "WORLD_SIZE": str(world_size),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(self.store.port),
            _PARENT_ENV: str(os.getpid()),
        }
        # the launcher installs its own SIGTERM/SIGINT/SIGHUP/SIGQUIT handlers (torchrun's); this
        # process is the user's, so its handlers are put back (Ctrl-C stays KeyboardInterrupt)
        saved = _signal_handlers()
        try:
            self.context = start_processes(
                name="pypto-rank",
                entrypoint=sys.executable,
                args=dict.fromkeys(range(world_size), ("-m", __name__)),
                envs={r: {**base, "RANK": str(r), "LOCAL_RANK": str(r)} for r in range(world_size)},
                # a real directory (removed on close) for the ranks' recorded errors; with no redirects
                # the ranks write to this process's stdout/stderr and no log-tailing thread runs
                logs_specs=DefaultLogsSpecs(log_dir=self._log_dir),
            )
        finally:
            _restore_signal_handlers(saved)
        try:
            self._wait([f"ready/{r}" for r in range(world_size)], "start")
        except BaseException:
            self.kill()
            raise

    @property
    def pids(self) -> tuple[int, ...]:
        if self.context is None:
            return ()
        pids = self.context.pids()
        return tuple(pids[r] for r in range(self.world_size))

    def _check_processes(self, what: str) -> None:
        """Raise DistributedRankError if a rank process has exited (the others are terminated)."""
        result = self.context.wait(timeout=0)  # polls; on a failure it terminates the others
        if result is not None and result.is_failed():
            self._closed = True
            rank, failure = min(result.failures.items(), key=lambda kv: kv[1].timestamp)
            how = (
                f"signal {failure.signal_name()}" if failure.exitcode < 0 else f"exit code {failure.exitcode}"
            )
            detail = failure.message if isinstance(failure.message, str) else ""
            raise DistributedRankError(
                f"rank {rank} died during {what} ({how}); the other ranks were terminated"
                + (f":\n{detail}" if detail and "<N/A>" not in detail else ""),
                rank,
            )
        exited = [r for r, h in self.context.subprocess_handlers.items() if h.proc.poll() is not None]
        if exited:  # exited cleanly while it should be serving commands
            self.kill()
            raise DistributedRankError(
                f"rank {exited[0]} exited during {what}; the other ranks were terminated", exited[0]
            )

    def _wait(self, keys: list[str], what: str, grace: float = 0.0) -> None:
        deadline = time.monotonic() + self.timeout + grace
        pending = list(keys)
        while pending:
            pending = [k for k in pending if not self.store.check([k])]
            if not pending:
                return
            self._check_processes(what)
            if time.monotonic() > deadline:
                ranks = tuple(int(k.rsplit("/", 1)[1]) for k in pending)
                self.kill()
                raise DistributedTimeoutError(
                    f"{what}: rank(s) {', '.join(map(str, ranks))} did not answer within {self.timeout:g} s "
                    "(DistributedConfig(timeout)); all ranks were terminated",
                    ranks,
                )
            time.sleep(_POLL)

    def dispatch(self, command: dict[str, Any], what: str) -> None:
        """Send ``command`` to every rank and wait until each has run it; a rank's error fails it."""
        if self._closed:
            raise DistributedRankError(
                f"{what}: the ranks of this worker are gone (closed or failed earlier)"
            )
        seq = self._seq
        self._seq += 1
        self.store.set(f"cmd/{seq}", json.dumps(command))
        keys = [f"done/{seq}/{r}" for r in range(self.world_size)]
        self._wait(keys, what, _DISPATCH_GRACE)
        self.rank_seconds = ()
        for r, key in enumerate(keys):
            result = self.store.get(key).decode()
            if result != "ok":
                self.kill()
                last = result.strip().splitlines()[-1] if result.strip() else "no error text"
                raise DistributedRankError(
                    f"rank {r} failed in {what}: {last}; the other ranks were terminated\n"
                    f"rank {r}'s traceback:\n{result}",
                    r,
                )
        self.rank_seconds = tuple(float(self.store.get(f"time/{seq}/{r}")) for r in range(self.world_size))

    def close(self) -> None:
        """Ask the ranks to exit and wait for them; terminate any that does not."""
        if self._closed:
            self.kill()
            return
        self._closed = True
        try:
            self.store.set(f"cmd/{self._seq}", json.dumps({"op": "close"}))
            deadline = time.monotonic() + min(self.timeout, 30.0)
            handlers = self.context.subprocess_handlers.values()
            while any(h.proc.poll() is None for h in handlers) and time.monotonic() < deadline:
                time.sleep(_POLL)
        finally:
            self.kill()

    def kill(self) -> None:
        """Terminate (SIGTERM, then SIGKILL) every rank process still running, and reap them all."""
        self._closed = True
        try:
            if self.context is not None:
                self.context.close(timeout=5)
        finally:
            shutil.rmtree(self._log_dir, ignore_errors=True)


if __name__ == "__main__":
    from torch.distributed.elastic.multiprocessing.errors import record

    record(_rank_main)()
