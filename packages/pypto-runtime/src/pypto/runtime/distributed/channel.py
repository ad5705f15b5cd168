"""The trust boundary of the rank engine: authenticated control messages, the run's secret, and
loopback-only listening sockets. This module needs no torch.

The engine's control messages (the ``boot`` plans, ``cmd/<seq>`` commands, each rank's
``done``/``time``/``ready`` answers, torchrun's ``session``/``bye`` keys) travel through a
``torch.distributed`` store, which anyone who reaches its port can read and write. Every such
value is ``<HMAC-SHA256 hex>.<JSON>``: the MAC covers the value's full key (its sequence number,
session and restart prefix included) and the JSON text, under a per-run secret
(``secrets.token_bytes``). A reader checks the MAC (``hmac.compare_digest``) before it parses a
byte of the JSON, so a forged value, a value copied from another key (a replayed command) or a
truncated one is dropped (:class:`ForgedMessage`) without being parsed. Nothing read from the
store is unpickled.

The secret never appears in argv or the environment: the parent writes it to a 0600 file in a
0700 directory (:func:`write_secret`) and names that file to the processes it starts; a reader
(:func:`read_secret`) refuses a file or directory that is a symlink, is not this user's, or that
another user may read.

The protocol on top: :func:`read_verified`/:func:`await_verified` read a key's verified value
(dropping and reporting forged ones), :class:`Sent` puts back a message another client of the
store overwrote, and :func:`check_command` checks a command's fields before a rank acts on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import socket
import stat
import sys
import time
from typing import Any

from pypto.runtime.errors import PyptoRuntimeError

__all__ = [
    "COMMAND_TYPES",
    "POLL",
    "REASSERT",
    "SECRET_BYTES",
    "Channel",
    "ForgedMessage",
    "Sent",
    "await_verified",
    "check_command",
    "listen_socket",
    "loopback_interface",
    "new_secret",
    "private_problem",
    "read_secret",
    "read_verified",
    "report_forged",
    "write_secret",
]

SECRET_BYTES = 32
_MAC_HEX = 64  # an HMAC-SHA256 in hex


class ForgedMessage(PyptoRuntimeError, ValueError):
    """A store value whose MAC does not verify (forged, replayed from another key, or truncated)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"{key}: dropped a message with a bad or missing MAC (not from this run)")
        self.key = key


def new_secret() -> bytes:
    return secrets.token_bytes(SECRET_BYTES)


def write_secret(directory: str, secret: bytes) -> str:
    """Write ``secret`` to ``<directory>/secret`` (created 0600, never an existing file) and return
    the path; ``directory`` must be this user's and closed to others (``tempfile.mkdtemp``)."""
    _check_private(directory, stat.S_ISDIR, "directory")
    path = os.path.join(directory, "secret")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, secret)
    finally:
        os.close(fd)
    return path


def private_problem(st: os.stat_result, kind: Any, what: str) -> str:
    """Why ``st`` is not a ``what`` (``kind`` tests the mode) of this user that no other user may
    read or write, or "" when it is one."""
    if stat.S_ISLNK(st.st_mode):
        return "a symlink"
    if not kind(st.st_mode):
        return f"not a {what}"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}"
    if st.st_mode & 0o077:
        return f"mode {stat.S_IMODE(st.st_mode):04o}"
    return ""


def _check_private(path: str, kind: Any, what: str, st: os.stat_result | None = None) -> None:
    problem = private_problem(os.lstat(path) if st is None else st, kind, what)
    if problem:
        raise PermissionError(
            f"pypto distributed secret: expected {path} to be a {what} of this user (uid {os.geteuid()}) "
            f"that no other user may read or write (0700/0600, no symlink), found {problem}; "
            "remove it, or name a private file (chmod 600) in a private directory (chmod 700)"
        )


def read_secret(path: str) -> bytes:
    """The secret in ``path``, after checking that ``path`` and its directory are this user's,
    are no symlinks and are closed to other users; PermissionError names what is wrong."""
    _check_private(os.path.dirname(os.path.abspath(path)), stat.S_ISDIR, "directory")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        _check_private(path, stat.S_ISREG, "regular file", os.fstat(fd))
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    if len(data) < 16:
        raise PermissionError(
            f"pypto distributed secret: expected at least 16 bytes in {path}, found {len(data)}"
        )
    return data


class Channel:
    """MAC'd JSON values in a store (``set``/``get``/``check`` of a torch.distributed store).

    ``scope`` is the store's key prefix (a ``PrefixStore``'s), so the MAC covers a value's full
    key. With ``secret`` None the values carry no MAC and nothing is authenticated: torchrun's
    ranks on several hosts without a shared secret file (see docs/distributed.md, "Trust")."""

    def __init__(self, store: Any, secret: bytes | None, scope: str = "") -> None:
        self.store = store
        self.secret = secret
        self.scope = scope
        self.forged = 0  # messages dropped so far

    def sub(self, store: Any, prefix: str) -> Channel:
        """The channel of ``store`` (a PrefixStore of this one's under ``prefix``)."""
        return Channel(store, self.secret, self.scope + prefix)

    def _mac(self, key: str, body: bytes) -> bytes:
        if self.secret is None:
            return b"-" * _MAC_HEX
        return (
            hmac.new(self.secret, (self.scope + key).encode() + b"\0" + body, hashlib.sha256)
            .hexdigest()
            .encode()
        )

    def encode(self, key: str, value: Any) -> bytes:
        body = json.dumps(value, allow_nan=False).encode()
        return self._mac(key, body) + b"." + body

    def put(self, key: str, value: Any) -> bytes:
        """Set ``key`` to ``value`` (plain JSON data), MAC'd; returns the bytes written."""
        data = self.encode(key, value)
        self.store.set(key, data)
        return data

    def decode(self, key: str, data: bytes | str) -> Any:
        """``data`` (read at ``key``) parsed, once its MAC verifies; ForgedMessage otherwise."""
        if isinstance(data, str):
            data = data.encode()
        mac, body = data[:_MAC_HEX], data[_MAC_HEX + 1 :]
        if (
            len(data) <= _MAC_HEX
            or data[_MAC_HEX : _MAC_HEX + 1] != b"."
            or not hmac.compare_digest(mac, self._mac(key, body))
        ):
            self.forged += 1
            raise ForgedMessage(self.scope + key)
        try:
            return json.loads(body)
        except ValueError:  # a MAC'd body is ours: cannot happen unless the secret leaked
            self.forged += 1
            raise ForgedMessage(self.scope + key) from None

    def get(self, key: str) -> Any:
        """The value at ``key`` (blocks until it is set, as the store's get)."""
        return self.decode(key, self.store.get(key))

    def poll(self, key: str) -> tuple[bool, Any]:
        """(True, value) when ``key`` holds a verified value, (False, None) when it is absent or
        its value does not verify (dropped: the writer's value may still replace it)."""
        if not self.store.check([key]):
            return False, None
        with contextlib.suppress(ForgedMessage):
            return True, self.get(key)
        return False, None


def loopback_interface() -> str | None:
    """The name of the loopback network interface (``lo`` on Linux), None when there is none."""
    with contextlib.suppress(OSError):
        names = [name for _, name in socket.if_nameindex()]
        if "lo" in names:
            return "lo"
    return None


def listen_socket(host: str, port: int = 0) -> socket.socket:
    """A listening TCP socket bound to ``host`` only (an address or a name that resolves to one)
    and ``port`` (0: chosen by the system), for a ``TCPStore``'s ``master_listen_fd``."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    if not infos:
        raise OSError(f"pypto distributed: cannot resolve {host!r} to an address to listen on")
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


# -- the control protocol over the store: verified reads, waits, re-asserted writes, commands --

POLL = 0.02  # seconds between checks of the store (and of the processes, in the engine)
REASSERT = 0.25  # seconds between checks that a message this process wrote is still in place


class Sent:
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
        self._next = now + REASSERT
        for key, data in self.messages.items():
            with contextlib.suppress(Exception):  # the store is gone: the run is ending
                if not self.store.check([key]) or self.store.compare_set(key, data, data) != data:
                    self.store.set(key, data)


def report_forged(who: str, key: str) -> None:
    """Say (on this process's stderr, the user's terminal) that a message was dropped."""
    print(
        f"pypto distributed: {who} dropped a message at {key!r} with a bad or missing MAC "
        "(written by another client of the store, not by this run); waiting for the run's own",
        file=sys.stderr,
        flush=True,
    )


def read_verified(channel: Channel, key: str, who: str, dropped: dict[str, bytes]) -> tuple[bool, Any]:
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
            report_forged(who, channel.scope + key)
    return False, None


def await_verified(channel: Channel, key: str, alive: Any, who: str, sent: Sent | None = None) -> Any:
    """The verified value at ``key``, polled until it is there; a forged value is dropped (and
    reported once per distinct value) and the wait goes on, as the writer's set replaces it.
    Returns None when ``alive()`` says the writer is gone."""
    dropped: dict[str, bytes] = {}
    while True:
        there, value = read_verified(channel, key, who, dropped)
        if there:
            return value
        if not alive():
            return None
        if sent is not None:
            sent.keep()
        time.sleep(POLL)


COMMAND_TYPES: dict[str, Any] = {
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


def check_command(command: Any, programs: int) -> dict[str, Any]:
    """``command`` (JSON data) checked against the commands' schema; ValueError names the field."""
    if not isinstance(command, dict):
        raise ValueError(f"command: expected a JSON object, got {type(command).__name__}")
    for field, value in command.items():
        kind = COMMAND_TYPES.get(field)
        if kind is None:
            raise ValueError(f"command: unexpected field {field!r}; expected some of {sorted(COMMAND_TYPES)}")
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
