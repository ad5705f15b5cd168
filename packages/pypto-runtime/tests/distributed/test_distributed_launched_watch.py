"""The watchdog of a rank started by torchrun (``launched._HostWatch``): a rank whose main thread
is stuck in a command (a gloo wait for a dead peer, a store call, a kernel) ends once the host
orchestrator has finished or stopped beating, instead of outliving it by a gloo timeout.

The watch runs against an in-process store (torch's ``HashStore``) and a fake clock; one test
lets it end a real process and reads the ``bye`` it leaves.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

pytest.importorskip("torch.distributed")

import torch.distributed as dist

from pypto.runtime.distributed import launched
from pypto.runtime.distributed.channel import Channel

SECRET = b"k" * 32


class _Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _watch(store: object) -> tuple[launched._HostWatch, _Clock, Channel]:
    clock = _Clock()
    watch = launched._HostWatch(3, now=clock)
    channel = Channel(store, SECRET, "pypto/0/")
    watch.arm(channel)
    return watch, clock, channel


def _reason(watch: launched._HostWatch) -> str:
    """The watch's reason to end the rank now (it must have one)."""
    why = watch.check()
    assert why is not None, "the watch let a stuck rank live on"
    return why


def test_an_unarmed_watch_never_ends_the_rank() -> None:
    clock = _Clock()
    watch = launched._HostWatch(0, now=clock)
    clock.t += 10 * launched._HOST_STALE
    assert watch.check() is None


def test_a_beating_host_keeps_the_rank() -> None:
    store = dist.HashStore()
    watch, clock, _ = _watch(store)
    for _ in range(100):
        store.add("beat/host", 1)
        clock.t += 1.0
        assert watch.check() is None


def test_a_host_whose_heartbeat_stands_still_ends_the_rank_after_the_margin() -> None:
    store = dist.HashStore()
    watch, clock, _ = _watch(store)
    store.add("beat/host", 5)
    assert watch.check() is None
    clock.t += launched._HOST_STALE + launched._WATCH_MARGIN - 0.1
    assert watch.check() is None  # a polling main thread says why first, at _HOST_STALE
    clock.t += 0.2
    why = _reason(watch)
    assert why.startswith("rank 3: the host orchestrator (torchrun RANK 0) has not answered"), why


def test_an_unreachable_store_counts_as_a_host_standing_still() -> None:
    class Gone:
        def add(self, key: str, amount: int) -> int:
            raise RuntimeError("Connection reset by peer")

        def check(self, keys: list[str]) -> bool:
            raise RuntimeError("Connection reset by peer")

    watch, clock, _ = _watch(Gone())
    assert watch.check() is None
    clock.t += launched._HOST_STALE + launched._WATCH_MARGIN + 0.1
    why = _reason(watch)
    assert "has not answered for 35 s" in why, why


def test_a_finished_host_gives_a_stuck_rank_the_grace_then_ends_it() -> None:
    store = dist.HashStore()
    watch, clock, channel = _watch(store)
    assert watch.check() is None
    channel.put("finished", 1)  # as LaunchContext.finish writes it
    for _ in range(int(launched._FINISH_GRACE)):
        store.add("beat/host", 1)  # still beating: it waits for the ranks' `gone`
        assert watch.check() is None
        clock.t += 1.0
    clock.t += 0.1
    why = _reason(watch)
    assert "finished 10 s ago and this rank is still busy" in why, why


def test_a_forged_finished_message_is_ignored() -> None:
    store = dist.HashStore()
    watch, clock, channel = _watch(store)
    store.set("finished", b"0" * 64 + b".1")  # no valid MAC: written without the secret
    for _ in range(3):
        store.add("beat/host", 1)
        clock.t += launched._FINISH_GRACE
        assert watch.check() is None
    assert channel.forged == 3  # read and dropped at every check


def test_the_heartbeat_thread_ends_the_process_only_while_it_is_not_stopped() -> None:
    store = dist.HashStore()
    ended: list[str] = []
    told = threading.Event()

    class Watch(launched._HostWatch):
        def check(self) -> str | None:
            return "stuck"

        def end(self, why: str) -> None:
            ended.append(why)
            told.set()

    halt = launched._beat_forever(store, "beat/3", Watch(3))
    assert told.wait(10.0)
    halt()
    count = len(ended)
    assert ended[0] == "stuck"
    assert store.add("beat/3", 0) >= 1
    told.clear()
    assert not told.wait(3 * launched._BEAT)
    assert len(ended) == count


def test_ending_says_why_on_stderr_and_in_the_store(tmp_path: object) -> None:
    path = f"{tmp_path}/store"
    code = f"""
import torch.distributed as dist
from pypto.runtime.distributed import launched
from pypto.runtime.distributed.channel import Channel
watch = launched._HostWatch(2)
watch.arm(Channel(dist.FileStore({path!r}, -1), {SECRET!r}, "pypto/0/"))
watch.end("rank 2: stuck")
print("not reached")
"""
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done
    assert "not reached" not in done.stdout
    assert "pypto distributed: rank 2: stuck" in done.stderr
    reader = Channel(dist.FileStore(path, -1), SECRET, "pypto/0/")
    assert reader.poll("bye/2") == (True, "rank 2: stuck")
