"""The trust boundary of multi-chip runs (docs/distributed.md, "Trust"), attacked as a second
client of the machine would.

The attacker is simulated as another connection (and, for the shared-memory checks, other files)
of the same OS user: a true second user is not needed to show that nothing it writes is parsed
before its MAC is checked, that nothing is unpickled, and that the sockets and segments are closed
to other users (loopback only, mode 0600). The checks run against real rank processes.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import secrets
import stat
import time
from datetime import timedelta
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import COLS, ROWS, accumulate_host, accumulated, assert_cleaned, config  # noqa: E402

from pypto.runtime.distributed import channel as channel_mod  # noqa: E402
from pypto.runtime.distributed import launched, shm  # noqa: E402
from pypto.runtime.distributed.channel import (  # noqa: E402
    Channel,
    ForgedMessage,
    read_secret,
    write_secret,
)


class _Payload:
    """What the attacker's pickle does when unpickled: create the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _close_promptly(w) -> None:
    started = time.monotonic()
    w.close()
    assert time.monotonic() - started < 20, "close() waited for ranks that no longer listened"


def _check(w, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-9, 10, (2, ROWS, COLS), generator=g).float()
    y = torch.full_like(x, -1.0)
    w(x, y)
    torch.testing.assert_close(y, accumulated(x), rtol=0, atol=0)


@pytest.fixture(scope="module")
def program():
    x = torch.zeros((2, ROWS, COLS))
    return accumulate_host.compile(x, torch.zeros_like(x), config=config(2, timeout=60))


def _listening_sockets(pid: int) -> list[tuple[str, str, str]]:
    """(local address hex, port hex, file) of every TCP socket in LISTEN state that process
    ``pid`` holds."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append((*fields[1].rsplit(":", 1), table))
    return found


_LOOPBACK = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1, ::1 (as /proc prints them)


def test_no_port_of_the_parent_and_only_the_ranks_gloo_sockets_on_loopback(program) -> None:
    before = _listening_sockets(os.getpid())
    with program.prepare() as w:
        _check(w, 1)
        assert _listening_sockets(os.getpid()) == before  # the control store is a file, no port
        store_dir = Path(w._group._log_dir)
        st = os.lstat(store_dir)
        assert stat.S_ISDIR(st.st_mode)
        assert st.st_uid == os.geteuid()
        assert stat.S_IMODE(st.st_mode) == 0o700  # what keeps other users from the store's file
        assert (store_dir / "control").is_file()
        for pid in w.rank_pids:
            sockets = _listening_sockets(pid)
            assert [s for s in sockets if s[0] not in _LOOPBACK] == [], (pid, sockets)
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            assert not [e for e in environ if e.startswith((b"MASTER_ADDR=", b"MASTER_PORT="))]
        assert any(_listening_sockets(pid) for pid in w.rank_pids)  # the ranks' gloo pairs


def test_the_secret_is_in_no_argv_environment_or_file_left_behind(program) -> None:
    with program.prepare() as w:
        secret = w._group.channel.secret
        assert secret is not None
        assert len(secret) >= 32
        for pid in w.rank_pids:
            for what in ("cmdline", "environ"):
                data = Path(f"/proc/{pid}/{what}").read_bytes()
                assert secret not in data, what
                assert secret.hex().encode() not in data, what
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            named = [e for e in environ if e.startswith(b"PYPTO_DIST_SECRET_FILE=")]
            assert len(named) == 1
            path = named[0].split(b"=", 1)[1].decode()
            assert not os.path.exists(path)  # removed once every rank read it
            assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        _check(w, 2)


# The attacker: another process that knows only what another user of the machine would (the
# listening ports in /proc/net/tcp*, with their owner's uid, and the names in /dev/shm). Against
# every loopback port of the victim's it tries to speak the store's protocol and, where that
# works, deletes and overwrites the keys of the run's messages and bumps heartbeats, for as long
# as the run lasts. It prints which ports it reached as a store.
_ATTACKER = r"""
import json, os, sys, threading, time
from datetime import timedelta
import torch.distributed as dist

ports, uid, until = set(json.loads(sys.argv[1])), int(sys.argv[2]), time.monotonic() + float(sys.argv[3])
found = []
for table in ("tcp", "tcp6"):
    for line in open(f"/proc/net/{table}").read().splitlines()[1:]:
        f = line.split()
        port = int(f[1].rsplit(":", 1)[1], 16)
        if f[3] == "0A" and int(f[7]) == uid and port in ports:  # LISTEN, the victim's
            found.append(port)
stores = []


def probe(port):
    try:  # a port that is not a store's may hold the handshake forever: probed in a thread
        stores.append(dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=2)))
    except Exception as exc:
        print("not a store:", port, type(exc).__name__, file=sys.stderr)


for port in found:
    threading.Thread(target=probe, args=(port,), daemon=True).start()
time.sleep(4.0)
keys = ["boot", *(f"ready/{r}" for r in range(2))]
keys += [f"{k}/{s}" for s in range(16) for k in ("cmd", "pypto/0/s0/cmd")]
keys += [f"{k}/{s}/{r}" for s in range(16) for r in range(2) for k in ("done", "time")]
shm = sorted(n for n in os.listdir("/dev/shm") if n.startswith("pypto-dist-"))
while time.monotonic() < until:
    for store in stores:
        for key in keys:
            try:
                store.delete_key(key)
                if key.startswith("cmd/"):
                    store.set(key, b'{"op": "close"}')
            except Exception:
                pass
        store.add("beat/0", 1)
print(json.dumps({"found": found, "stores": len(stores), "shm_names": len(shm)}), flush=True)
os._exit(0)  # a probe still stuck in a handshake
"""


def test_a_second_process_can_neither_reach_nor_delay_the_control_channel(program) -> None:
    import subprocess
    import sys

    w = program.prepare()
    pids, segments = w.rank_pids, w.segment_names
    try:
        _check(w, 1)
        # the run's ports (harness knowledge, only so that the attack spares other runs on this
        # machine; the attacker itself reads /proc/net like any user and needs nothing else)
        ports = {int(addr, 16) for pid in (os.getpid(), *pids) for _, addr, _ in _listening_sockets(pid)}
        assert ports  # the ranks' gloo listeners: something to attack
        attack = subprocess.Popen(
            [sys.executable, "-c", _ATTACKER, json.dumps(sorted(ports)), str(os.geteuid()), "20"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(5.0)  # the attacker has probed every port and is writing
            assert attack.poll() is None, attack.communicate()
            for i in range(6):  # each dispatch is as quick as without the attack: not delayed
                started = time.monotonic()
                _check(w, 10 + i)
                assert time.monotonic() - started < 10.0, f"dispatch {i} was delayed"
            out, err = attack.communicate(timeout=60)
        finally:
            attack.kill()
        report = json.loads(out.strip().splitlines()[-1])
        assert report["found"], err  # it saw the run's listening ports in /proc/net
        assert report["stores"] == 0, err  # none of them is a store: nothing to delete or forge
        _check(w, 30)
        _close_promptly(w)
    finally:
        w.close()
    assert_cleaned(pids, segments)


def test_forged_messages_in_the_store_run_nothing_and_do_not_disturb_the_run(
    program, tmp_path: Path, capfd
) -> None:
    import torch.distributed as dist

    marker = tmp_path / "pwned"
    evil = base64.b64encode(pickle.dumps(_Payload(marker))).decode()
    w = program.prepare()
    pids, segments = w.rank_pids, w.segment_names
    try:
        _check(w, 1)
        group = w._group
        # another client of the store's file: what a process of this user (or a leak of the
        # file) could do; the MACs still keep its messages from running or shifting the sequence
        attacker = dist.FileStore(os.path.join(group._log_dir, "control"), -1)
        replayed = attacker.get("cmd/0")  # a real command of this run, MAC'd for its own key
        seq = group._seq
        forged = {
            "op": "run",
            "program": 0,
            "io": "",
            "windows": [],
            "host_offsets": {},
            "call": evil,  # the pickled settings the ranks once unpickled
        }
        plans = [
            (f"cmd/{seq}", json.dumps(forged).encode()),  # no MAC at all
            (f"cmd/{seq + 1}", b"0" * 64 + b"." + json.dumps({"op": "close"}).encode()),  # a made-up MAC
            (f"cmd/{seq + 2}", replayed),  # an old command replayed under a later sequence number
            (f"cmd/{seq + 3}", pickle.dumps(_Payload(marker))),  # raw pickle
            (f"done/{seq}/0", json.dumps("ok").encode()),  # a forged answer for a rank
            (f"done/{seq}/1", b"x" * 64 + b'."ok"'),
        ]
        for key, value in plans:
            attacker.set(key, value)
        for i in range(4):  # the ranks drop every forged message and still run the real commands
            _check(w, 10 + i)
        assert not marker.exists()
        # forged values planted ahead for the sequence numbers still to come
        for s in range(group._seq, group._seq + 3):
            attacker.set(f"cmd/{s}", json.dumps({**forged, "op": "close"}).encode())
        _check(w, 20)
        _check(w, 21)
        _close_promptly(w)
    finally:
        w.close()
    assert_cleaned(pids, segments)
    assert not marker.exists()
    err = capfd.readouterr().err
    assert "rank 0 dropped a message at 'cmd/" in err, err
    assert "the host orchestrator dropped a message at 'done/" in err, err


# -- the control messages ------------------------------------------------------------------------


def test_a_message_another_client_overwrote_or_deleted_is_put_back() -> None:
    import torch.distributed as dist

    store = dist.TCPStore(
        "127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=10)
    )
    attacker = dist.TCPStore("127.0.0.1", store.port, is_master=False, timeout=timedelta(seconds=10))
    channel = Channel(store, secrets.token_bytes(32))
    sent = channel_mod.Sent(store)
    # TCPStore's set does not wait for the server; a read on the same connection does. So each
    # write is read back on its writer's connection before the next step: the message is in
    # place before the attacker overwrites it, and the forged value before the channel reads (a
    # busy machine showed both other orders)
    sent.put(channel, "cmd/0", {"op": "run"})
    assert store.get("cmd/0").endswith(b'{"op": "run"}')
    attacker.set("cmd/0", b'{"op": "close"}')
    assert attacker.get("cmd/0") == b'{"op": "close"}'
    with pytest.raises(ForgedMessage):
        channel.get("cmd/0")
    sent.keep()
    assert channel.get("cmd/0") == {"op": "run"}
    attacker.delete_key("cmd/0")
    time.sleep(channel_mod.REASSERT + 0.05)
    sent.keep()
    assert channel.get("cmd/0") == {"op": "run"}


class _DictStore:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def set(self, key: str, value: bytes | str) -> None:
        self.data[key] = value if isinstance(value, bytes) else value.encode()

    def get(self, key: str) -> bytes:
        return self.data[key]

    def check(self, keys: list[str]) -> bool:
        return all(k in self.data for k in keys)


def test_a_message_is_verified_before_it_is_parsed_and_bound_to_its_key() -> None:
    store = _DictStore()
    channel = Channel(store, secrets.token_bytes(32), "s0/")
    raw = channel.put("cmd/0", {"op": "run"})
    assert channel.get("cmd/0") == {"op": "run"}
    store.set("cmd/1", raw)  # replayed under another sequence number
    with pytest.raises(ForgedMessage, match="s0/cmd/1"):
        channel.get("cmd/1")
    other = Channel(_DictStore(), secrets.token_bytes(32), "s0/")  # another run's secret
    store.set("cmd/2", other.encode("cmd/2", {"op": "close"}))
    with pytest.raises(ForgedMessage):
        channel.get("cmd/2")
    for bad in (b"", b"{}", raw[:-1], raw[:64], b"not json at all" * 8, pickle.dumps({"op": "run"})):
        store.set("cmd/0", bad)
        with pytest.raises(ForgedMessage):  # not a JSON or pickle error: nothing was parsed
            channel.get("cmd/0")
    assert channel.poll("cmd/0") == (False, None)
    assert channel.poll("cmd/9") == (False, None)


def test_a_command_outside_the_schema_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="'call'"):
        channel_mod.check_command({"op": "run", "call": "gASV..."}, 1)
    with pytest.raises(ValueError, match="'op'"):
        channel_mod.check_command({"op": "exec"}, 1)
    with pytest.raises(ValueError, match="'program'"):
        channel_mod.check_command({"op": "run", "program": 3}, 1)
    with pytest.raises(ValueError, match="unexpected field 'code'"):
        channel_mod.check_command({"op": "run", "code": "x"}, 1)
    from pypto.runtime.distributed.rank import call_settings

    with pytest.raises(ValueError, match="call_config fields"):
        call_settings({"call_config": {"__reduce__": 1}, "enable_chip_swimlane": False, "swimlane_dir": None})


def test_the_secret_file_must_be_private(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    path = write_secret(str(private), b"k" * 32)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_secret(path) == b"k" * 32
    with pytest.raises(FileExistsError):  # never an existing (maybe planted) file
        write_secret(str(private), b"j" * 32)
    os.chmod(path, 0o644)
    with pytest.raises(PermissionError, match="mode 0644"):
        read_secret(path)
    os.chmod(path, 0o600)
    link = private / "link"
    link.symlink_to(path)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):  # O_NOFOLLOW
        read_secret(str(link))
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    os.chmod(open_dir, 0o755)
    with pytest.raises(PermissionError, match="mode 0755"):
        write_secret(str(open_dir), b"k" * 32)


# -- shared memory -------------------------------------------------------------------------------


def test_segments_are_0600_with_unguessable_names() -> None:
    a, b = shm.create(64), shm.create(64)
    try:
        for seg in (a, b):
            st = os.stat(f"/dev/shm/{seg.name}")
            assert stat.S_IMODE(st.st_mode) == 0o600
            assert st.st_uid == os.geteuid()
            suffix = seg.name[len(shm.segment_prefix()) :]
            assert len(suffix) == 32  # 128 random bits
            assert int(suffix, 16) >= 0
        assert a.name != b.name
        m = shm.attach(a.name)  # the stack's own segment maps
        m.close()
    finally:
        a.release()
        b.release()


def test_a_planted_segment_is_never_created_over_or_attached(monkeypatch) -> None:
    name = shm.segment_prefix() + "ab" * 16
    path = Path("/dev/shm", name)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
    try:
        os.ftruncate(fd, 64)
        os.fchmod(fd, 0o666)  # as another user would leave it: readable and writable by all
        with pytest.raises(PermissionError, match="mode 0666"):
            shm.attach(name)
        # the parent's create never opens an existing name, even one it would choose itself
        monkeypatch.setattr(shm.secrets, "token_hex", lambda n: "ab" * 16)
        with pytest.raises(FileExistsError):
            shm.create(64)
    finally:
        os.close(fd)
        path.unlink()
    fifo = Path("/dev/shm", shm.segment_prefix() + "cd" * 16)
    os.mkfifo(fifo, 0o600)
    try:
        with pytest.raises(PermissionError, match="not a regular file"):
            shm.attach(fifo.name)
    finally:
        fifo.unlink()
    for bad in ("../etc/passwd", "pypto-dist-1-abc", "psm_1234", shm.segment_prefix() + "zz" * 16):
        with pytest.raises(PermissionError, match="refused"):
            shm.attach(bad)


# -- torchrun: which rank is named ---------------------------------------------------------------


class _BeatStore:
    def __init__(self, beats: dict[str, int], byes: dict[str, bytes]) -> None:
        self.beats, self.byes = beats, byes

    def add(self, key: str, n: int) -> int:
        self.beats[key] = self.beats.get(key, 0) + n
        return self.beats[key]

    def check(self, keys: list[str]) -> bool:
        return all(k in self.byes for k in keys)

    def get(self, key: str) -> bytes:
        return self.byes[key]


def test_the_dead_rank_is_named_however_late_the_host_saw_the_sigterm(monkeypatch) -> None:
    # rank 1 was killed; torchrun then stopped rank 0 (bye: SIGTERM) and the host. The host was
    # starved: it first looks at the heartbeats 3 s after the SIGTERM. Rank 1 is named anyway.
    now = [100.0]
    monkeypatch.setattr(launched.time, "monotonic", lambda: now[0])
    secret = secrets.token_bytes(32)
    store = _BeatStore({"beat/0": 50, "beat/1": 40}, {})
    ctx = object.__new__(launched.LaunchContext)
    ctx.world_size = 2
    ctx.store = store
    ctx.channel = Channel(store, secret, "pypto/0/")
    ctx._seen = {}
    ctx._beats_at_sigterm = {}
    ctx.terminating = 97.0
    store.byes["bye/0"] = ctx.channel.encode("bye/0", "SIGTERM")
    assert ctx.dead_rank() is None  # rank 1 not yet seen standing still
    now[0] += 0.5
    assert ctx.dead_rank() is None
    now[0] += 0.6
    rank, why = ctx.dead_rank()
    assert rank == 1, why
    assert why.startswith("stopped answering"), why
    # a forged bye (not MAC'd) is dropped: it names no rank
    store.byes["bye/1"] = b'"Exploded"'
    assert ctx.dead_rank()[0] == 1
