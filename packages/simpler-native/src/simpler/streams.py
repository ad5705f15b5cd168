"""Streams and events of a kernel-mode Worker.

A launch is encoded into a TMR packet, copied at enqueue, and executed by the simulated AICPU
consumer. The consumer takes launches from every stream of a Worker in enqueue order, so a
stream is FIFO and an event wait is satisfied by construction: everything recorded before
``record()`` was enqueued before anything enqueued after ``wait_event()``. ``synchronize()``
waits for the stream's launches and raises the first device error among them.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from simpler.errors import DeviceError

if TYPE_CHECKING:
    from simpler.worker import RunHandle, Worker

__all__ = ["Event", "Stream"]


class Event:
    """A point in a stream: done when every launch enqueued on it before :meth:`Stream.record` is."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: tuple[RunHandle, ...] = ()

    def query(self) -> bool:
        return all(r.done for r in self._runs)

    def synchronize(self, timeout: float | None = None) -> bool:
        return all(r.wait(timeout) for r in self._runs)


class Stream:
    """FIFO launch queue of a kernel-mode Worker (use ``worker.create_stream()``)."""

    def __init__(self, worker: Worker, index: int) -> None:
        self.worker = worker
        self.index = index
        self._lock = threading.Lock()
        self._pending: list[RunHandle] = []
        self._waits: list[Event] = []

    def _enqueued(self, run: RunHandle) -> None:
        with self._lock:
            pending = self._pending
            # Drop finished, successful launches from the front (amortised O(1) per launch);
            # failed ones stay until synchronize() reports them.
            drop = 0
            while drop < len(pending) and pending[drop].done and not pending[drop]._native.error:
                drop += 1
            if drop:
                del pending[:drop]
            pending.append(run)

    def record(self, event: Event | None = None) -> Event:
        """Capture the launches enqueued so far (and the events this stream waited on)."""
        ev = event if event is not None else Event()
        with self._lock:
            captured = list(self._pending)
            for w in self._waits:
                captured.extend(w._runs)
        ev._runs = tuple(captured)
        return ev

    def wait_event(self, event: Event) -> None:
        """Order later launches on this stream after ``event`` (already true on the simulator's
        single in-order AICPU queue; recorded so that this stream's events include it)."""
        if not isinstance(event, Event):
            raise TypeError(f"Stream.wait_event(event): expected a simpler Event, got {type(event).__name__}")
        with self._lock:
            self._waits.append(event)

    def query(self) -> bool:
        with self._lock:
            return all(r.done for r in self._pending)

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait for every launch on this stream; raise the first failure as :class:`DeviceError`."""
        with self._lock:
            pending, self._pending = self._pending, []
            self._waits = []
        first: str | None = None
        for r in pending:
            if not r.wait(timeout):
                raise TimeoutError(f"Stream.synchronize: not finished after {timeout} s")
            err = r._native.error
            if err and first is None:
                first = err
        if first is not None:
            raise DeviceError(first)

    def __repr__(self) -> str:
        return f"Stream(index={self.index}, worker={self.worker!r})"
