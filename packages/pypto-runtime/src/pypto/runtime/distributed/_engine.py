"""The rank engine: torch.distributed starts, connects and watches the rank processes.

With ``launched.py`` and ``_gloo_path.py``, the modules of pypto-runtime that import torch
(declared by the ``pypto-runtime[distributed]`` extra), only when a distributed program is
prepared (the imports are inside the functions). The control messages and their checks are
``channel.py``'s.

- Process start and failure detection: torch's elastic launcher (the engine of ``torchrun``),
  ``torch.distributed.elastic.multiprocessing.start_processes``, runs ``python -m
  pypto.runtime.distributed._engine`` once per rank with torchrun's environment contract
  (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``). Polling its
  context reports a rank that exited (its exit code or signal, and the error it recorded) and
  terminates the others.
- Rendezvous and control: a ``TCPStore`` served by the parent at ``MASTER_ADDR:MASTER_PORT``
  (127.0.0.1 only). It holds the plans of the worker's programs (``boot``); commands are
  ``cmd/<seq>`` keys (JSON, naming the program and the phase to run), and each rank answers
  ``done/<seq>/<rank>`` with ``ok`` or its error; a rank that ran sets ``time/<seq>/<rank>`` (the
  seconds its launches took, timed inside the rank) before its ``done``. Every one of these
  values is MAC'd under the run's secret and verified before it is parsed (``channel.py``); the
  ranks read the secret from a 0600 file the parent names in ``PYPTO_DIST_SECRET_FILE``.
- The ranks form a gloo process group over the same store (listening on loopback,
  ``GLOO_SOCKET_IFNAME``); its barrier confirms every rank is up before the parent sends the
  first command.
- On the process-group data path (``boot["data_path"] == "process_group"``) each rank also runs
  the gloo data path (``_gloo_path.GlooDataPath``: two more gloo groups and a service thread) that
  carries its kernels' cross-rank requests, and the control group's barrier separates each
  dispatch's window zeroing from its kernels.

A rank exits on the ``close`` command, or when the parent's process is gone.

Under torchrun (``pypto.runtime.distributed.launch``) the ranks are torchrun's processes, and
their side is ``launched.py``: ``serve_launched`` runs the same command loop (``_serve``) for each worker the host orchestrator
(torchrun's RANK 0, ``LaunchContext``) prepares, and ``LaunchedRankGroup`` is that worker's handle,
which tells a dead rank by its heartbeat in the store instead of by its process. There the
store carries control only: host and resident tensors travel over each session's io group
(gloo: the orchestrator and every rank, ``_io_group``), point-to-point between the orchestrator
and each rank that uses them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import tempfile
import time
import traceback
from datetime import timedelta
from typing import Any

from pypto.runtime.distributed.channel import (
    POLL,
    Channel,
    Sent,
    await_verified,
    check_command,
    listen_socket,
    loopback_interface,
    new_secret,
    read_secret,
    read_verified,
    write_secret,
)
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


# A dispatch is waited for this much longer than the timeout: a
# kernel's pld.system.wait gives up after the timeout itself, and its error (naming the rank, the
# signal and the value seen) then reaches the parent before the parent stops waiting.
_DISPATCH_GRACE = 10.0
_PARENT_ENV = "PYPTO_DIST_PARENT"
_STALE = 5.0  # a rank whose heartbeat (launched.py) stood still this long is taken as dead
_SECRET_ENV = "PYPTO_DIST_SECRET_FILE"  # the file of the run's secret (its path only: never the secret)


def _serve_windows(data_path: Any, runner: Any, barrier: Any) -> None:
    """Point the gloo data path at ``runner``'s windows, then wait for every rank."""
    data_path.use_windows(runner.own_windows())
    barrier()


def _rank_main() -> None:
    """A rank process started by :class:`RankGroup` (torchrun's environment)."""
    import torch.distributed as dist

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    parent = int(os.environ.get(_PARENT_ENV, "0"))
    secret = read_secret(os.environ[_SECRET_ENV])
    store = dist.TCPStore(  # type: ignore[attr-defined, unused-ignore]
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        is_master=False,
        timeout=timedelta(seconds=60),
    )
    _serve(
        Channel(store, secret), rank, world_size, parent_alive=lambda: not parent or os.getppid() == parent
    )


def _io_group(store: Any, rank: int, size: int, timeout: timedelta) -> Any:
    """The gloo group that carries host and resident tensors between torchrun's RANK 0 (member 0)
    and the launched ranks (program rank ``r`` is member ``r + 1``), apart from the control group."""
    import torch.distributed as dist

    return dist.ProcessGroupGloo(dist.distributed_c10d.PrefixStore("io", store), rank, size, timeout)


def _io_params(plan: Any, rank: int, phase: int) -> list[int]:
    """The host parameters rank ``rank``'s launches of ``phase`` use (their indices), as the
    rank's ``RankRunner.host_params`` finds them: what the orchestrator sends each rank."""
    return sorted(
        {
            a[1]
            for d in plan.dispatches
            if d.rank == rank and d.phase == phase
            for a in d.args
            if a[0] == "host"
        }
    )


def _writes(plan: Any, i: int) -> bool:
    from pypto.ir import ParamDirection

    return bool(ParamDirection(plan.params[i].direction).writes)


def _receive_io(group: Any, runner: Any, phase: int) -> dict[int, Any]:
    """The host tensors this rank's launches of ``phase`` use, received from the host orchestrator
    (member 0 of the io group; the parameter index is the tag)."""
    import numpy
    import torch

    from pypto.ir import DataType
    from pypto.runtime.distributed.host_bytes import byte_array, element_size

    hosts = {}
    for i in runner.host_params(phase):
        p = runner.plan.params[i]
        dtype = DataType(p.dtype)
        data = numpy.empty(
            int(numpy.prod(p.shape, dtype=numpy.int64)) * element_size(dtype, p.name), numpy.uint8
        )
        group.recv([torch.from_numpy(data)], 0, i).wait()
        hosts[i] = byte_array(data, p.shape, dtype)
    return hosts


def _post_io(group: Any, runner: Any, hosts: dict[int, Any]) -> list[Any]:
    """Start sending back this rank's copies of the host tensors it may have written; the
    orchestrator receives them once every rank has answered."""
    import torch

    return [
        group.send([torch.from_numpy(array.reshape(-1))], 0, i)
        for i, array in sorted(hosts.items())
        if _writes(runner.plan, i)
    ]


def _serve(channel: Channel, rank: int, world_size: int, parent_alive: Any) -> None:
    """Rendezvous over ``channel``'s store (the plans in ``boot``, a gloo group), then run
    commands until ``close``, or until ``parent_alive()`` says the host orchestrator is gone.
    Every message read is verified (its MAC) before it is parsed; a forged one is dropped."""
    import torch.distributed as dist

    from pypto.runtime.distributed.plan import DistributedPlan
    from pypto.runtime.distributed.rank import RankRunner

    store = channel.store
    who = f"rank {rank}"
    boot = await_verified(channel, "boot", parent_alive, who)
    if boot is None:
        return
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
    io_group = None
    if data_path_name == "process_group":
        from pypto.runtime.distributed._gloo_path import GlooDataPath

        data_path = GlooDataPath(rank, world_size, runners[0].own_windows())
        for runner in runners:
            runner.host_handler = data_path.handle
            # every rank runs the same program in a dispatch: serve that program's windows, and
            # let the control group's barrier separate the windows' zeroing from the kernels
            runner.before_kernels = functools.partial(_serve_windows, data_path, runner, dist.barrier)
    sent = Sent(store)
    try:
        dist.barrier()
        sent.put(channel, f"ready/{rank}", rank)
        if boot.get("io") == "gloo":  # under torchrun: tensors travel between RANK 0 and the ranks
            io_group = _io_group(store, rank + 1, world_size + 1, timeout)
        seq = 0
        while True:
            command = await_verified(channel, f"cmd/{seq}", parent_alive, who, sent)
            if command is None:
                return  # the host orchestrator is gone: nobody will send a command
            sent.messages.clear()
            outgoing: list[Any] = []
            if isinstance(command, dict) and command.get("op") == "close":
                if data_path is not None:
                    data_path.close()
                return
            try:
                command = check_command(command, len(runners))
                for runner in runners:
                    runner.forget(command.get("forget", []))
                runner = runners[command.get("program", 0)]
                # host tensors over the io group: ranks that share no memory with the host
                hosts = (
                    _receive_io(io_group, runner, command.get("phase", 0)) if command.get("gloo_io") else None
                )
                runner.run(command, hosts=hosts)
                if hosts:
                    outgoing = _post_io(io_group, runner, hosts)
                result = "ok"
                sent.put(channel, f"time/{seq}/{rank}", runner.last_run_seconds)
            except BaseException as exc:  # reported to the parent, which fails the dispatch
                result = "".join(traceback.format_exception(exc))
            sent.put(channel, f"done/{seq}/{rank}", result)
            for work in outgoing:  # the orchestrator receives them after every rank's answer
                with contextlib.suppress(Exception):  # it gave up (a peer failed): the group times out
                    work.wait()
            seq += 1
    finally:
        for runner in runners:
            runner.close()
        del io_group
        dist.destroy_process_group()


def _boot_message(
    timeout: float,
    plans_json: list[dict[str, Any]],
    aic_threads: int | None,
    aiv_threads: int | None,
    data_path: str,
    *,
    io: str = "",
) -> dict[str, Any]:
    """The ``boot`` message every rank reads first: the worker's plans and how to run them
    (``io``: ``"gloo"`` when host tensors travel over the io group, under torchrun)."""
    return {
        "timeout": timeout,
        "plans": plans_json,
        "aic_threads": aic_threads,
        "aiv_threads": aiv_threads,
        "data_path": data_path,
        "io": io,
    }


class RankGroup:
    """The parent's handle on ``world_size`` running rank processes."""

    _AFTERMATH = "{which} ranks were terminated"  # what a failed wait or dispatch did to the ranks

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
        self._log_dir = tempfile.mkdtemp(prefix="pypto-ranks-")  # 0700: this user's only
        # the run's secret: in a 0600 file of that directory, named (not given) to the ranks
        secret_path = write_secret(self._log_dir, new_secret())
        # the store listens on loopback only; every message in it is MAC'd (channel.py)
        listener = listen_socket("127.0.0.1")
        port = listener.getsockname()[1]
        self.store: Any = dist.TCPStore(  # type: ignore[attr-defined, unused-ignore]
            "127.0.0.1",
            port,
            is_master=True,
            wait_for_workers=False,
            timeout=timedelta(seconds=timeout),
            master_listen_fd=listener.detach(),  # the store's from now on
        )
        self.channel = Channel(self.store, read_secret(secret_path))
        self._sent = Sent(self.store)
        self._sent.put(
            self.channel, "boot", _boot_message(timeout, plans_json, aic_threads, aiv_threads, data_path)
        )
        base = {
            "WORLD_SIZE": str(world_size),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            _PARENT_ENV: str(os.getpid()),
            _SECRET_ENV: secret_path,
        }
        lo = loopback_interface()
        if lo is not None:  # the ranks' gloo groups listen on loopback only
            base["GLOO_SOCKET_IFNAME"] = lo
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
        with contextlib.suppress(OSError):  # every rank has read it
            os.unlink(secret_path)

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

    def _wait(self, keys: list[str], what: str, grace: float = 0.0) -> list[Any]:
        """The verified values of ``keys`` once every one is there (a forged value counts as not
        there: the rank's own replaces it); the messages this side sent are kept in place."""
        deadline = time.monotonic() + self.timeout + grace
        got: dict[str, Any] = {}
        dropped: dict[str, bytes] = {}
        while True:
            for k in keys:
                if k not in got:
                    there, value = read_verified(self.channel, k, "the host orchestrator", dropped)
                    if there:
                        got[k] = value
            if len(got) == len(keys):
                return [got[k] for k in keys]
            self._check_processes(what)
            if time.monotonic() > deadline:
                ranks = tuple(int(k.rsplit("/", 1)[1]) for k in keys if k not in got)
                self.kill()
                raise DistributedTimeoutError(
                    f"{what}: rank(s) {', '.join(map(str, ranks))} did not answer within {self.timeout:g} s "
                    f"(DistributedConfig(timeout)); {self._AFTERMATH.format(which='all')}",
                    ranks,
                )
            self._sent.keep()
            time.sleep(POLL)

    def dispatch(self, command: dict[str, Any], what: str, io: dict[int, Any] | None = None) -> None:
        """Send ``command`` to every rank and wait until each has run it; a rank's error fails it.

        ``io`` (parameter index -> byte array): host tensors carried over gloo instead of shared
        memory (ranks started by torchrun); each rank gets the ones its launches use and returns
        the ones they may write, and the bytes a rank changed are written into ``io``'s arrays."""
        if self._closed:
            raise DistributedRankError(
                f"{what}: the ranks of this worker are gone (closed or failed earlier)"
            )
        seq = self._seq
        self._seq += 1
        try:
            before = self._send_io(command, io) if io is not None else {}
        except RuntimeError as exc:
            self._name_the_dead(what, exc)
            raise
        self._sent.messages.clear()
        self._sent.put(self.channel, f"cmd/{seq}", {**command, "gloo_io": io is not None})
        keys = [f"done/{seq}/{r}" for r in range(self.world_size)]
        results = [str(r) for r in self._wait(keys, what, _DISPATCH_GRACE)]
        self.rank_seconds = ()
        if io is not None:  # the ranks that ran are sending their copies back: take them
            self._receive_io(command, io, before, [r for r, result in enumerate(results) if result == "ok"])
        for r, result in enumerate(results):
            if result != "ok":
                self.kill()
                last = result.strip().splitlines()[-1] if result.strip() else "no error text"
                raise DistributedRankError(
                    f"rank {r} failed in {what}: {last}; {self._AFTERMATH.format(which='the other')}\n"
                    f"rank {r}'s traceback:\n{result}",
                    r,
                )
        self.rank_seconds = tuple(
            float(t) for t in self._wait([f"time/{seq}/{r}" for r in range(self.world_size)], what)
        )

    def _name_the_dead(self, what: str, exc: BaseException) -> None:
        """The data path to a rank broke (gloo: "Connection closed by peer"): a rank died. Name
        it as the heartbeats do (raise its DistributedRankError), whichever noticed first; return
        when no rank is found dead within the heartbeat's staleness."""
        deadline = time.monotonic() + _STALE + 1.0
        while time.monotonic() < deadline:
            try:
                self._check_processes(what)
            except DistributedRankError as named:
                raise named from exc
            time.sleep(POLL)

    _NO_IO = (
        "RankGroup.dispatch(io): host tensors outside shared memory travel to ranks started by torchrun "
        "only (LaunchedRankGroup); this group's ranks map the I/O segment"
    )

    def _send_io(self, command: dict[str, Any], io: dict[int, Any]) -> dict[int, Any]:
        raise TypeError(self._NO_IO)

    def _receive_io(
        self, command: dict[str, Any], io: dict[int, Any], before: dict[int, Any], ran: list[int]
    ) -> None:
        raise TypeError(self._NO_IO)

    def close(self) -> None:
        """Ask the ranks to exit and wait for them; terminate any that does not."""
        if self._closed:
            self.kill()
            return
        self._closed = True
        try:
            self.channel.put(f"cmd/{self._seq}", {"op": "close"})
            deadline = time.monotonic() + min(self.timeout, 30.0)
            handlers = self.context.subprocess_handlers.values()
            while any(h.proc.poll() is None for h in handlers) and time.monotonic() < deadline:
                time.sleep(POLL)
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
