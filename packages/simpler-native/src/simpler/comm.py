"""The comm context of a multi-chip program's rank process (``simpler/comm_context.hpp``).

A rank process runs one simulated chip; before its kernels use cross-rank operations (PTO-ISA's
communication instructions ``TPUT``, ``TNOTIFY``, ``TWAIT``, ..., and TLOAD/TSTORE on another rank's
window; ``pto/comm/pto_comm_inst.hpp``, ``simpler/kernel_comm.hpp``) it tells the
native runtime which rank it is and where the window buffers lie in its own memory. Every kernel
entered afterwards receives that context through its ``KernelContext``.

On the shared-memory path every rank maps every rank's window of a buffer, back to back: rank
``r``'s window starts at ``base + r * stride``. On the host path (``CommPath.Host``) the table has
the same layout but only this rank's window is memory of this process; every cross-rank access
(except a ``wait`` on this rank's own cell) calls ``host``, a Python callable of the rank process,
on the kernel's thread with the GIL held::

    host(op, peer, window, dtype, runs_address, run_count, data_address, nbytes, value)

``op`` is a :class:`HostOp`; ``runs_address`` points at ``run_count`` pairs of uint64
``(offset, nbytes)``: byte ranges of rank ``peer``'s window ``window``; ``data_address`` at
``nbytes`` bytes packed in run order (filled by ``Read``, read by ``Write``/``AtomicAdd``, whose
elements are of simpler DataType ``dtype``); ``value`` is a notify's INT32 value. The call returns
once the request is applied; an exception fails the kernel's task with its message.

The peer that receives a request applies it to its own window with :func:`apply_request`: the
same element-wise atomics (16-bit floats add in float and round once, integers wrap around) its
own kernels use on that memory, so a rank's adds and notifies and its peers' never lose one
another.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simpler._native import comm as _comm

__all__ = [
    "MAX_RANKS",
    "MAX_WINDOWS",
    "CommPath",
    "CommWindow",
    "HostOp",
    "apply_request",
    "clear_context",
    "context",
    "set_context",
]

MAX_WINDOWS: int = _comm.MAX_WINDOWS
MAX_RANKS: int = _comm.MAX_RANKS


class CommPath(enum.IntEnum):
    """How a rank reaches its peers' windows (``simpler::CommPath``)."""

    SharedMemory = _comm.PATH_SHARED_MEMORY
    Host = _comm.PATH_HOST  # through the rank's host process (set_context(host=...))


class HostOp(enum.IntEnum):
    """What a host-path request does to the peer's window (``simpler::CommHostOp``)."""

    Read = _comm.HOST_READ
    Write = _comm.HOST_WRITE
    AtomicAdd = _comm.HOST_ATOMIC_ADD
    NotifyAdd = _comm.HOST_NOTIFY_ADD
    NotifySet = _comm.HOST_NOTIFY_SET


@dataclass(frozen=True)
class CommWindow:
    """One window buffer as this process maps it: rank 0's window at ``base``."""

    base: int
    stride: int
    nbytes: int


def set_context(
    *,
    rank: int,
    nranks: int,
    windows: list[CommWindow],
    wait_timeout: float,
    path: CommPath = CommPath.SharedMemory,
    host: Callable[..., None] | None = None,
) -> None:
    """Make this process rank ``rank`` of ``nranks`` with these window buffers; a kernel's
    ``wait`` fails its task after ``wait_timeout`` seconds. ``host`` serves the requests of
    ``CommPath.Host`` (required there, refused on ``SharedMemory``). ``ValueError`` names a bad
    field."""
    for name, v in (("rank", rank), ("nranks", nranks)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"simpler.comm.set_context({name}): expected an int >= 0, got {v!r}")
    if not isinstance(path, CommPath):
        raise ValueError(f"simpler.comm.set_context(path): expected a simpler.comm.CommPath, got {path!r}")
    if (host is None) != (path is not CommPath.Host) or (host is not None and not callable(host)):
        raise ValueError(
            "simpler.comm.set_context(host): expected a callable with path=CommPath.Host and None "
            f"otherwise, got {host!r} with path={path.name}"
        )
    _comm.set_context(
        rank, nranks, int(path), [(w.base, w.stride, w.nbytes) for w in windows], float(wait_timeout), host
    )


def apply_request(op: HostOp, window: Any, runs: Any, data: Any, *, dtype: int = 0, value: int = 0) -> None:
    """Apply one host-path request to this rank's ``window`` (a writable 1-D uint8 array: a
    numpy array or CPU torch tensor): ``runs`` is an ``(n, 2)`` int64 array of ``(offset,
    nbytes)`` byte ranges of the window; ``data`` a writable 1-D uint8 array of their bytes in run
    order (filled by ``Read``, read by ``Write``/``AtomicAdd``; empty for a notify); ``dtype`` the
    simpler DataType code of an ``AtomicAdd``'s elements, ``value`` a notify's INT32 value.

    Every element of an ``AtomicAdd`` and every notify is one atomic operation on the window, the
    same a kernel of this process uses on it. The whole request is checked first: ``ValueError``
    says what is wrong (a run outside the window, lengths that do not add up to ``data``, an
    unsupported dtype, unaligned elements) and the window is left untouched."""
    if not isinstance(op, HostOp):
        raise ValueError(f"simpler.comm.apply_request(op): expected a simpler.comm.HostOp, got {op!r}")
    _comm.apply_request(int(op), window, runs, data, dtype, value)


def clear_context() -> None:
    """Kernels entered from now on have no comm context (their cross-rank operations fail)."""
    _comm.clear_context()


def context() -> tuple[int, int, CommPath, list[CommWindow], float] | None:
    """(rank, nranks, path, windows, wait_timeout) of the current context, or None."""
    got = _comm.context()
    if got is None:
        return None
    rank, nranks, path, windows, timeout = got
    return rank, nranks, CommPath(path), [CommWindow(*w) for w in windows], timeout
