"""Ranks started by torchrun (``pypto.runtime.distributed.launch``): the host orchestrator's side
(torchrun's RANK 0, :class:`LaunchContext`), its worker's handle (:class:`LaunchedRankGroup`,
which tells a dead rank by its heartbeat in the store instead of by its process) and the ranks'
side (:func:`serve_launched`, the engine's command loop once per worker session).

The store is torchrun's (``MASTER_ADDR``/``MASTER_PORT``) and carries control only; host and
resident tensors travel over each session's io group (gloo: the orchestrator and every rank),
point-to-point between the orchestrator and each rank that uses them. The run's secret comes
from ``PYPTO_DIST_SECRET_FILE`` or, with every process on one host, from a private file the
orchestrator names in the store (:func:`_launch_secret`). torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pypto.runtime.distributed._engine import (
    _SECRET_ENV,
    _STALE,
    RankGroup,
    _boot_message,
    _io_group,
    _io_params,
    _serve,
    _writes,
)
from pypto.runtime.distributed.channel import (
    POLL,
    Channel,
    Sent,
    await_verified,
    listen_socket,
    new_secret,
    read_secret,
    write_secret,
)
from pypto.runtime.distributed.errors import DistributedRankError

__all__ = ["LaunchContext", "LaunchedRankGroup", "serve_launched"]


_BEAT = 0.2  # seconds between a launched process's heartbeats
_STALE_AFTER_SIGTERM = 1.0  # the same once torchrun is stopping the host (SIGTERM)
_HOST_STALE = 30.0  # a launched rank whose host orchestrator's heartbeat stood still this long exits
_WATCH_MARGIN = 5.0  # the watchdog's extra wait past _HOST_STALE: a rank that can still poll says why itself
_FINISH_GRACE = 10.0  # seconds a launched rank has to leave once the host orchestrator has finished
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
        time.sleep(POLL)


def _beat_forever(store: Any, key: str, watch: _HostWatch | None = None) -> Callable[[], None]:
    """Add 1 to ``key`` every ``_BEAT`` seconds on a daemon thread; the returned function stops
    it and waits for it (up to 5 s). Stop it before the process ends: a daemon thread still inside
    a store call when the interpreter finalises is ended with pthread_exit through torch's C++
    frames, which aborts the process ("terminate called without an active exception").

    Without ``watch`` the thread ends when the store is gone (the run is ending). With it (a
    launched rank's), the thread keeps beating and asks ``watch`` after every beat whether the
    process must end; if so, and the thread is not being stopped, it ends the process."""
    import threading

    stop = threading.Event()

    def beat() -> None:
        while not stop.is_set():
            try:
                store.add(key, 1)
            except Exception:  # the store is gone: the run is ending (a watch decides when)
                if watch is None:
                    return
            if watch is not None:
                why = watch.check()
                if why is not None and not stop.is_set():
                    watch.end(why)
            stop.wait(_BEAT)

    thread = threading.Thread(target=beat, name="pypto-heartbeat", daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join(timeout=5.0)  # a store call stuck on a dead server does not hold the exit

    return halt


class _HostWatch:
    """A launched rank's watchdog (run on its heartbeat thread), for a main thread that cannot
    notice the host orchestrator leaving: blocked in a gloo wait for a peer that died, in a store
    call or in a kernel. It names a reason to end the process once the orchestrator has finished
    (its ``finished`` message) ``_FINISH_GRACE`` s ago, or its heartbeat (or the store it is read
    from) stood still for ``_HOST_STALE`` + ``_WATCH_MARGIN`` s. A main thread that is polling
    leaves earlier on its own (``exit``, or its own ``_HOST_STALE`` rule), so the watch only ever
    ends a rank that would otherwise outlive its orchestrator by a gloo timeout or more.

    It watches once :meth:`arm` gave it the channel (the run's secret is known then);
    ``now`` and ``end`` are the clock and what ends the process (replaced in tests)."""

    def __init__(
        self,
        rank: int,
        *,
        now: Callable[[], float] = time.monotonic,
        end: Callable[[str], None] | None = None,
    ) -> None:
        self.rank = rank
        self.channel: Channel | None = None
        self._now = now
        self._end = end
        self._beat = -1
        self._beat_at = 0.0
        self._finished_at: float | None = None

    def arm(self, channel: Channel) -> None:
        """Start watching the orchestrator through ``channel`` (over the heartbeat's store)."""
        self._beat_at = self._now()
        self.channel = channel

    def check(self) -> str | None:
        """Why this rank must end now, or None."""
        channel = self.channel
        if channel is None:
            return None
        now = self._now()
        finished = False
        with contextlib.suppress(Exception):  # the store is unreachable: the host stands still
            beat = channel.store.add("beat/host", 0)
            if beat != self._beat:
                self._beat, self._beat_at = beat, now
            finished = channel.poll("finished")[0]
        if finished and self._finished_at is None:
            self._finished_at = now
        if self._finished_at is not None and now - self._finished_at > _FINISH_GRACE:
            return (
                f"rank {self.rank}: the host orchestrator (torchrun RANK 0) finished {_FINISH_GRACE:g} s ago "
                "and this rank is still busy with a command nobody waits for: ending it"
            )
        if now - self._beat_at > _HOST_STALE + _WATCH_MARGIN:
            return (
                f"rank {self.rank}: the host orchestrator (torchrun RANK 0) has not answered for "
                f"{now - self._beat_at:.0f} s and this rank is stuck in a command: ending it"
            )
        return None

    def end(self, why: str) -> None:
        """Say ``why`` (stderr, and ``bye/<rank>`` for the orchestrator) and end the process."""
        if self._end is not None:
            self._end(why)
            return
        print(f"pypto distributed: {why}", file=sys.stderr, flush=True)
        if self.channel is not None:
            with contextlib.suppress(Exception):
                self.channel.put(f"bye/{self.rank}", why)
        os._exit(1)


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
        self._stop_beat = _beat_forever(self._beats, "beat/host")
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
            self.channel.put("finished", 1)  # for a rank stuck in a command: its watchdog ends it
            deadline = time.monotonic() + 30.0
            waiting = set(range(self.world_size))
            while waiting and time.monotonic() < deadline:
                waiting -= {
                    r for r in waiting if any(self.channel.poll(f"{k}/{r}")[0] for k in ("gone", "bye"))
                }
                found = self.dead_rank()
                if found is not None and found[0] is not None:
                    waiting.discard(found[0])
                time.sleep(POLL)
        finally:
            self._stop_beat()
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
        self._sent = Sent(self.store)
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
    watch = _HostWatch(rank)
    stop_beat = _beat_forever(beats, f"beat/{rank}", watch)
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
        watch.arm(said[0])
        channel.put(f"pid/{rank}", f"{socket.gethostname()}:{os.getpid()}")
        session = 0
        while True:
            key = f"session/{session}"
            what = await_verified(channel, key, host_alive, f"rank {rank}")
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
    finally:
        stop_beat()
