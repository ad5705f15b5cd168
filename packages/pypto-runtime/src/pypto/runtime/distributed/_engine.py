"""The rank engine: torch.distributed starts, connects and watches the rank processes.

This is the one module of pypto-runtime that imports torch, and only when a distributed
program is prepared (its imports are inside the functions): single-chip programs never load it.

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

Under torchrun (``pypto.runtime.distributed.launch``) the ranks are torchrun's processes:
``serve_launched`` runs the same command loop (``_serve``) for each worker the host orchestrator
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
    Channel,
    ForgedMessage,
    listen_socket,
    loopback_interface,
    new_secret,
    read_secret,
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


_POLL = 0.02  # seconds between checks of the store and the processes
# A dispatch is waited for this much longer than the timeout: a
# kernel's pld.system.wait gives up after the timeout itself, and its error (naming the rank, the
# signal and the value seen) then reaches the parent before the parent stops waiting.
_DISPATCH_GRACE = 10.0
_PARENT_ENV = "PYPTO_DIST_PARENT"
_SECRET_ENV = "PYPTO_DIST_SECRET_FILE"  # the file of the run's secret (its path only: never the secret)
_REASSERT = 0.25  # seconds between checks that a message this process wrote is still in place


class _Sent:
    """The messages a process wrote last (key -> bytes): put back when another client of the
    store overwrote or deleted one before its reader took it, so a forged write cannot make a
    dispatch lose its command or a rank its answer."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.messages: dict[str, bytes] = {}
        self._next = 0.0

    def put(self, channel: Channel, key: str, value: Any) -> None:
        self.messages[key] = channel.put(key, value)

    def keep(self) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + _REASSERT
        for key, data in self.messages.items():
            with contextlib.suppress(Exception):  # the store is gone: the run is ending
                if not self.store.check([key]) or self.store.compare_set(key, data, data) != data:
                    self.store.set(key, data)


def _report_forged(who: str, key: str) -> None:
    """Say (on this process's stderr, the user's terminal) that a message was dropped."""
    print(
        f"pypto distributed: {who} dropped a message at {key!r} with a bad or missing MAC "
        "(written by another client of the store, not by this run); waiting for the run's own",
        file=sys.stderr,
        flush=True,
    )


def _read(channel: Channel, key: str, who: str, dropped: dict[str, bytes]) -> tuple[bool, Any]:
    """(True, value) when ``key`` holds a verified value, else (False, None); a forged value is
    dropped and reported once per distinct value (``dropped``: the last one seen per key)."""
    if not channel.store.check([key]):
        return False, None
    data = channel.store.get(key)
    try:
        return True, channel.decode(key, data)
    except ForgedMessage:
        if dropped.get(key) != data:
            dropped[key] = data
            _report_forged(who, channel.scope + key)
    return False, None


def _await(channel: Channel, key: str, alive: Any, who: str, sent: _Sent | None = None) -> Any:
    """The verified value at ``key``, polled until it is there; a forged value is dropped (and
    reported once per distinct value) and the wait goes on, as the writer's set replaces it.
    Returns None when ``alive()`` says the writer is gone."""
    dropped: dict[str, bytes] = {}
    while True:
        there, value = _read(channel, key, who, dropped)
        if there:
            return value
        if not alive():
            return None
        if sent is not None:
            sent.keep()
        time.sleep(_POLL)


_COMMAND_TYPES: dict[str, Any] = {
    "op": str,
    "program": int,
    "phase": int,
    "io": str,
    "windows": list,
    "host_offsets": dict,
    "host_segments": dict,
    "wait_timeout": (int, float),
    "reset_windows": bool,
    "call": (dict, type(None)),
    "forget": list,
    "gloo_io": bool,
}


def _check_command(command: Any, programs: int) -> dict[str, Any]:
    """``command`` (JSON data) checked against the commands' schema; ValueError names the field."""
    if not isinstance(command, dict):
        raise ValueError(f"command: expected a JSON object, got {type(command).__name__}")
    for field, value in command.items():
        kind = _COMMAND_TYPES.get(field)
        if kind is None:
            raise ValueError(
                f"command: unexpected field {field!r}; expected some of {sorted(_COMMAND_TYPES)}"
            )
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"command field {field!r}: expected {kind}, got {value!r}")
    if command.get("op") not in ("run", "close"):
        raise ValueError(f"command field 'op': expected 'run' or 'close', got {command.get('op')!r}")
    if not 0 <= command.get("program", 0) < programs:
        raise ValueError(
            f"command field 'program': expected 0..{programs - 1}, got {command.get('program')!r}"
        )
    names = [
        *command.get("windows", []),
        *command.get("forget", []),
        *command.get("host_segments", {}).values(),
    ]
    if not all(isinstance(n, str) for n in names):
        raise ValueError("command: expected segment names to be strings")
    offsets = command.get("host_offsets", {})
    if not all(
        k.isdigit() and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in offsets.items()
    ):
        raise ValueError(
            f"command field 'host_offsets': expected parameter index -> offset >= 0, got {offsets!r}"
        )
    return command


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
    boot = _await(channel, "boot", parent_alive, who)
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
    sent = _Sent(store)
    try:
        dist.barrier()
        sent.put(channel, f"ready/{rank}", rank)
        if boot.get("io") == "gloo":  # under torchrun: tensors travel between RANK 0 and the ranks
            io_group = _io_group(store, rank + 1, world_size + 1, timeout)
        seq = 0
        while True:
            command = _await(channel, f"cmd/{seq}", parent_alive, who, sent)
            if command is None:
                return  # the host orchestrator is gone: nobody will send a command
            sent.messages.clear()
            outgoing: list[Any] = []
            if isinstance(command, dict) and command.get("op") == "close":
                if data_path is not None:
                    data_path.close()
                return
            try:
                command = _check_command(command, len(runners))
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
        self._sent = _Sent(self.store)
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
                    there, value = _read(self.channel, k, "the host orchestrator", dropped)
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
            time.sleep(_POLL)

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
            time.sleep(_POLL)

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


# -- ranks started by torchrun (pypto.runtime.distributed.launch) ------------------------------

_BEAT = 0.2  # seconds between a launched process's heartbeats
_STALE = 5.0  # a launched rank whose heartbeat stood still this long is taken as dead
_STALE_AFTER_SIGTERM = 1.0  # the same once torchrun is stopping the host (SIGTERM)
_HOST_STALE = 30.0  # a launched rank whose host orchestrator's heartbeat stood still this long exits
_SECRET_WAIT = 300.0  # seconds a launched rank waits for the host orchestrator's secret file


def _launch_store(is_host: bool) -> tuple[Any, str]:
    """A connection to the store of torchrun's environment (``MASTER_ADDR``/``MASTER_PORT``): the
    agent's when it shares it (``TORCHELASTIC_USE_AGENT_STORE``), else served by the host (RANK 0)
    on the address ``MASTER_ADDR`` names only; the keys of this program live under
    ``pypto/<restart count>/`` (returned with the store, for the messages' MACs)."""
    import torch.distributed as dist

    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    master = is_host and not agent_store
    listen: dict[str, Any] = {}
    if master:
        sock = listen_socket(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
        listen["master_listen_fd"] = sock.detach()  # the store's from now on
    store = dist.TCPStore(  # type: ignore[attr-defined, unused-ignore]
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        is_master=master,
        wait_for_workers=False,
        timeout=timedelta(seconds=300),
        multi_tenant=True,
        **listen,
    )
    prefix = f"pypto/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/"
    return dist.distributed_c10d.PrefixStore(prefix, store), prefix


def _all_local() -> bool:
    """Whether every process of this torchrun run is on this host."""
    return os.environ.get("LOCAL_WORLD_SIZE", "0") == os.environ.get("WORLD_SIZE")


def _launch_secret(store: Any, is_host: bool) -> tuple[bytes | None, str]:
    """The run's secret under torchrun and the directory this process made for it ("" if none):
    the file ``PYPTO_DIST_SECRET_FILE`` names when set (every host's copy of one secret); else,
    with every process on this host, a 0600 file the host orchestrator writes in a 0700 directory
    and names in the store (a rank refuses a file that is not this user's and private); else None
    (ranks on several hosts and no shared secret: the messages are not authenticated)."""
    given = os.environ.get(_SECRET_ENV)
    if given:
        return read_secret(given), ""
    if not _all_local():
        return None, ""
    if is_host:
        directory = tempfile.mkdtemp(prefix="pypto-launch-")
        path = write_secret(directory, new_secret())
        store.set("secret_file", path)
        return read_secret(path), directory
    deadline = time.monotonic() + _SECRET_WAIT
    refused = b""
    while True:
        if store.check(["secret_file"]):
            path = store.get("secret_file")
            try:
                return read_secret(path.decode()), ""
            except (OSError, UnicodeDecodeError) as exc:  # not the host's: wait for the host's own
                if time.monotonic() > deadline:
                    raise
                if path != refused:
                    refused = path
                    print(
                        f"pypto distributed: refused the secret file named in the store: {exc}",
                        file=sys.stderr,
                    )
        elif time.monotonic() > deadline:
            raise TimeoutError(
                f"pypto distributed: the host orchestrator (torchrun RANK 0) named no secret file within "
                f"{_SECRET_WAIT:g} s"
            )
        time.sleep(_POLL)


def _beat_forever(store: Any, key: str) -> None:
    import threading

    def beat() -> None:
        while True:
            try:
                store.add(key, 1)
            except Exception:  # the store is gone: the run is ending
                return
            time.sleep(_BEAT)

    threading.Thread(target=beat, name="pypto-heartbeat", daemon=True).start()


class LaunchContext:
    """The host orchestrator's side of a run started by torchrun: torchrun's RANK 0 process, whose
    ``WORLD_SIZE - 1`` peers (RANK ``r`` is program rank ``r - 1``) serve its workers one after
    another (session ``g``'s keys live under ``s<g>/``)."""

    def __init__(self) -> None:
        import signal

        self.world_size = int(os.environ["WORLD_SIZE"]) - 1
        self.all_local = _all_local()
        self.store, scope = _launch_store(is_host=True)
        secret, self._secret_dir = _launch_secret(self.store, is_host=True)
        if secret is None:
            print(
                "pypto distributed: torchrun's ranks are on several hosts and PYPTO_DIST_SECRET_FILE names "
                "no shared secret: the ranks' commands are not authenticated (docs/distributed.md, Trust)",
                file=sys.stderr,
                flush=True,
            )
        self.channel = Channel(self.store, secret, scope)
        self._beats, _ = _launch_store(is_host=False)
        _beat_forever(self._beats, "beat/host")
        self.sessions = 0
        self.group: Any = None  # the open worker's LaunchedRankGroup
        self.terminating: float | None = None  # when torchrun's SIGTERM arrived
        self._seen: dict[int, tuple[int, float]] = {}
        self._beats_at_sigterm: dict[int, int] = {}  # each rank's heartbeat first read after SIGTERM
        previous = signal.getsignal(signal.SIGTERM)

        def on_sigterm(signum: int, frame: Any) -> None:
            if self.group is None:  # no worker to fail: leave as torchrun asks
                signal.signal(signal.SIGTERM, previous if callable(previous) else signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
                return
            self.terminating = time.monotonic()

        signal.signal(signal.SIGTERM, on_sigterm)

    def finish(self) -> None:
        """Close the worker still open, tell the launched ranks that no more workers come, and wait
        (at most 30 s) until each has read it or is gone: the store may be this process's."""
        try:
            if self.group is not None:
                self.group.close()
            self.channel.put(f"session/{self.sessions}", "exit")
            deadline = time.monotonic() + 30.0
            waiting = set(range(self.world_size))
            while waiting and time.monotonic() < deadline:
                waiting -= {
                    r for r in waiting if any(self.channel.poll(f"{k}/{r}")[0] for k in ("gone", "bye"))
                }
                found = self.dead_rank()
                if found is not None and found[0] is not None:
                    waiting.discard(found[0])
                time.sleep(_POLL)
        finally:
            if self._secret_dir:
                shutil.rmtree(self._secret_dir, ignore_errors=True)

    def dead_rank(self) -> tuple[int | None, str] | None:
        """A launched rank that is gone and why; None while all answer. A rank that said why it
        left (``bye/<rank>``) is gone; one whose heartbeat stands still is taken as dead.

        Once torchrun stops the run (SIGTERM), the ranks it stopped say so (``bye``: SIGTERM) and
        the one that died first cannot: it is named as soon as its heartbeat stood still for
        ``_STALE_AFTER_SIGTERM``. A stopped rank (or no rank) is named only once every rank
        without a ``bye`` has been seen beating after the SIGTERM, so which rank is named does
        not depend on how soon this process saw the SIGTERM or the heartbeats."""
        now = time.monotonic()
        stale = _STALE if self.terminating is None else _STALE_AFTER_SIGTERM
        stopped = []
        unproven = []  # ranks not yet seen alive since the SIGTERM
        for r in range(self.world_size):
            there, why = self.channel.poll(f"bye/{r}")
            if there:
                if why == "SIGTERM":
                    stopped.append(r)
                    continue
                return r, f"exited ({why})"
            beat = self.store.add(f"beat/{r}", 0)
            last = self._seen.get(r)
            if last is None or last[0] != beat:
                self._seen[r] = (beat, now)
            elif now - last[1] > stale:
                return r, (
                    f"stopped answering (no heartbeat for {now - last[1]:.1f} s: its process died or its "
                    "host is unreachable)"
                )
            if self.terminating is not None and self._beats_at_sigterm.setdefault(r, beat) == beat:
                unproven.append(r)
        if (
            self.terminating is not None
            and now - self.terminating > stale + _STALE_AFTER_SIGTERM
            and not unproven
        ):
            if stopped:
                return stopped[0], "was stopped by torchrun (SIGTERM)"
            return None, "torchrun is stopping this run (SIGTERM to the host orchestrator)"
        return None


class LaunchedRankGroup(RankGroup):
    """A :class:`RankGroup` over ranks that torchrun started: no processes of its own; the
    ranks' heartbeats in the store tell whether they are alive."""

    _AFTERMATH = "{which} ranks that still answer were sent back to wait for the next worker"

    def __init__(
        self,
        context: LaunchContext,
        plans_json: list[dict[str, Any]],
        world_size: int,
        *,
        timeout: float,
        aic_threads: int | None,
        aiv_threads: int | None,
        data_path: str = "shared_memory",
    ) -> None:
        import torch.distributed as dist

        if context.group is not None:
            raise RuntimeError(
                "DistributedWorker: under torchrun the launched ranks serve one worker at a time; close "
                "the open one first (worker.close() or its `with` block)"
            )
        self.world_size = world_size
        self.timeout = timeout
        self._seq = 0
        self._closed = False
        self.rank_seconds = ()
        self.context = context
        self._launch = context
        self._log_dir = ""
        session = context.sessions
        context.sessions += 1
        context.group = self
        self.store = dist.distributed_c10d.PrefixStore(f"s{session}/", context.store)
        self.channel = context.channel.sub(self.store, f"s{session}/")
        self._sent = _Sent(self.store)
        self._sent.put(
            self.channel,
            "boot",
            _boot_message(timeout, plans_json, aic_threads, aiv_threads, data_path, io="gloo"),
        )
        from pypto.runtime.distributed.plan import DistributedPlan

        self._plans = [DistributedPlan.from_json(p) for p in plans_json]
        self._io: Any = None
        self._in_flight: list[Any] = []  # the last dispatch's sends (their tensors stay alive)
        context.channel.put(f"session/{session}", "start")
        try:
            self._wait([f"ready/{r}" for r in range(world_size)], "start")
            self._io = _io_group(self.store, 0, world_size + 1, timedelta(seconds=timeout))
        except BaseException:
            self.kill()
            raise

    def _send_io(self, command: dict[str, Any], io: dict[int, Any]) -> dict[int, Any]:
        """Start sending each rank the tensors its launches of the command's phase use; returns
        the bytes sent (parameter index -> flat uint8 array), which the merge compares against."""
        import torch

        plan = self._plans[command.get("program", 0)]
        before = {i: array.reshape(-1).copy() for i, array in io.items()}
        sending = {i: torch.from_numpy(b) for i, b in before.items()}
        self._in_flight = [
            self._io.send([sending[i]], r + 1, i)
            for r in range(self.world_size)
            for i in _io_params(plan, r, command.get("phase", 0))
        ]
        return before

    def _receive_io(
        self, command: dict[str, Any], io: dict[int, Any], before: dict[int, Any], ran: list[int]
    ) -> None:
        """Receive each rank's copies of the tensors it may have written (the ranks that ``ran``)
        and write into ``io`` every byte a rank changed (ranks write disjoint parts)."""
        import numpy
        import torch

        plan = self._plans[command.get("program", 0)]
        for r in ran:
            for i in _io_params(plan, r, command.get("phase", 0)):
                if not _writes(plan, i):
                    continue
                got = numpy.empty_like(before[i])
                self._io.recv([torch.from_numpy(got)], r + 1, i).wait()
                changed = got != before[i]
                io[i].reshape(-1)[changed] = got[changed]

    @property
    def pids(self) -> tuple[int, ...]:
        """Each rank's process id, on the rank's own host."""
        return tuple(
            int(str(self._launch.channel.get(f"pid/{r}")).rsplit(":", 1)[1]) for r in range(self.world_size)
        )

    def _check_processes(self, what: str) -> None:
        found = self._launch.dead_rank()
        if found is not None:
            rank, why = found
            self.kill()
            who = f"rank {rank} " if rank is not None else ""
            raise DistributedRankError(
                f"{who}{why} during {what}; torchrun's agents stop the other ranks", rank
            )

    def close(self) -> None:
        """Send the ranks back to wait for the next worker (the launched processes stay)."""
        if self._closed:
            return
        self._closed = True
        self._launch.group = None
        self.channel.put(f"cmd/{self._seq}", {"op": "close"})

    def kill(self) -> None:
        """Stop using the ranks; the ranks that still answer are sent back to wait. Processes that
        failed are torchrun's to stop."""
        if not self._closed:
            self.close()


def serve_launched() -> None:
    """A rank process started by torchrun (RANK > 0, program rank ``RANK - 1``): serve the host
    orchestrator's workers, one session after another, until it says ``exit`` or is gone."""
    import signal
    import socket

    import torch.distributed as dist

    rank, world_size = int(os.environ["RANK"]) - 1, int(os.environ["WORLD_SIZE"]) - 1
    store, scope = _launch_store(is_host=False)
    beats, _ = _launch_store(is_host=False)  # its own connection: a blocking get elsewhere holds the other
    _beat_forever(beats, f"beat/{rank}")
    said: list[Channel] = []  # the channel a `bye` goes through, once the secret is known

    def on_sigterm(signum: int, frame: Any) -> None:  # torchrun stops this rank: say so, then go
        with contextlib.suppress(Exception):
            said[0].put(f"bye/{rank}", "SIGTERM")
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_sigterm)
    host_seen = [-1, time.monotonic()]

    def host_alive() -> bool:
        beat = beats.add("beat/host", 0)
        if beat != host_seen[0]:
            host_seen[:] = [beat, time.monotonic()]
        return time.monotonic() - host_seen[1] < _HOST_STALE

    try:
        secret, _ = _launch_secret(store, is_host=False)
        channel = Channel(store, secret, scope)
        said.append(Channel(beats, secret, scope))
        channel.put(f"pid/{rank}", f"{socket.gethostname()}:{os.getpid()}")
        session = 0
        while True:
            key = f"session/{session}"
            what = _await(channel, key, host_alive, f"rank {rank}")
            if what is None:
                raise RuntimeError(
                    f"rank {rank}: the host orchestrator (torchrun RANK 0) has not answered for "
                    f"{_HOST_STALE:g} s"
                )
            if what == "exit":
                channel.put(f"gone/{rank}", 1)
                return
            prefix = f"s{session}/"
            _serve(
                channel.sub(dist.distributed_c10d.PrefixStore(prefix, store), prefix),
                rank,
                world_size,
                host_alive,
            )
            session += 1
    except BaseException as exc:
        with contextlib.suppress(Exception):
            said[0].put(f"bye/{rank}", f"{type(exc).__name__}: {exc}")
        raise


if __name__ == "__main__":
    from torch.distributed.elastic.multiprocessing.errors import record

    record(_rank_main)()
