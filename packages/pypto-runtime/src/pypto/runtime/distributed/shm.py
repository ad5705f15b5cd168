"""Shared-memory segments of a distributed worker: created and removed by the parent only.

The parent creates every segment (``multiprocessing.shared_memory``; its resource tracker also
removes them if the parent is killed) and unlinks them when the worker closes, on every exit
path. A rank maps a segment through its ``/dev/shm`` file without registering it anywhere, so
only the parent ever owns or removes a segment.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
from multiprocessing import shared_memory
from typing import Any

__all__ = ["PrivateSegment", "Segment", "attach", "create", "private", "segment_prefix"]


def segment_prefix() -> str:
    """The name prefix of this process's segments (``pypto-dist-<pid>-``)."""
    return f"pypto-dist-{os.getpid()}-"


class Segment:
    """A parent-owned segment: ``buf`` is its memory; :meth:`release` unlinks it once."""

    def __init__(self, size: int) -> None:
        self._shm: shared_memory.SharedMemory | None = shared_memory.SharedMemory(
            name=segment_prefix() + secrets.token_hex(6), create=True, size=max(size, 1)
        )
        self.name = self._shm.name
        self.size = size

    @property
    def buf(self) -> Any:
        if self._shm is None:
            raise RuntimeError(f"shared-memory segment {self.name} is released")
        return self._shm.buf

    def release(self) -> None:
        shm, self._shm = self._shm, None
        if shm is None:
            return
        # a view still exporting the buffer keeps the mapping until the process exits; the
        # name is unlinked regardless
        with contextlib.suppress(BufferError):
            shm.close()
        with contextlib.suppress(FileNotFoundError):
            shm.unlink()


class PrivateSegment(Segment):
    """Memory of this process alone with a segment's interface (``name``, ``size``, ``buf``,
    :meth:`release`): the resident tensors of a worker whose ranks are torchrun's processes,
    which may be on other hosts (their bytes travel to the ranks with each dispatch)."""

    def __init__(self, size: int) -> None:  # no shared memory: Segment's __init__ is not run
        self._shm = None
        self._map: mmap.mmap | None = mmap.mmap(-1, max(size, 1))
        self.name = f"pypto-private-{os.getpid()}-{secrets.token_hex(6)}"
        self.size = size

    @property
    def buf(self) -> Any:
        if self._map is None:
            raise RuntimeError(f"private segment {self.name} is released")
        return memoryview(self._map)

    def release(self) -> None:
        m, self._map = self._map, None
        if m is not None:
            with contextlib.suppress(BufferError):  # a view still exporting it keeps the mapping
                m.close()


def create(size: int) -> Segment:
    return Segment(size)


def private(size: int) -> PrivateSegment:
    return PrivateSegment(size)


def attach(name: str) -> mmap.mmap:
    """Map the parent's segment ``name`` (in a rank) without taking ownership of it."""
    fd = os.open(f"/dev/shm/{name}", os.O_RDWR)
    try:
        return mmap.mmap(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
