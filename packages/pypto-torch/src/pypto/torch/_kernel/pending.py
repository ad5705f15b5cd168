"""Per-call tickets: what a launch keeps alive until its run has been retired.

A ticket is created before the launch is enqueued and holds the context-bound registration
and the call's owners (the frame, with its borrowed tensors and their storages), and the
framework stream the launch was ordered on. The launch publishes its ``RunHandle`` to the
ticket without taking any manager lock. A ticket is complete only when a run was published and
reports done; even then ``wait()`` must retire the run's native resources before the borrowed
sources are released. A ticket whose retirement times out is kept (with its sources), and so is
the Worker. On a simulator the ticket also holds the pins of the borrowed storages
(:mod:`pypto.torch._kernel.pins`), released with them.

A retired ticket remembers its run's error (:attr:`PendingTicket.error`) until a
synchronisation point reports it (:attr:`PendingTicket.reported`): each failed run is reported
once, by the first synchronisation point that covers it.
"""

from __future__ import annotations

from typing import Any

from pypto.torch._kernel.pins import unpin

__all__ = ["PendingTicket"]


class PendingTicket:
    """One launch in flight: registration, call frame (owners), stream, and its published run."""

    __slots__ = ("callable", "error", "frame", "pins", "reported", "retired", "run", "stream")

    def __init__(self, callable_: Any, frame: Any, pins: Any = (), stream: object = None) -> None:
        self.callable = callable_
        self.frame = frame  # the borrowed tensors and storages, released by retire()
        self.pins = pins  # what pins.pin_frame returned: the storages held non-resizable for the run
        self.stream = stream  # the framework stream the launch was ordered on
        self.run: Any = None
        self.retired = False
        self.error: BaseException | None = None
        self.reported = False

    def publish(self, run: Any) -> None:
        """Attach the launch's RunHandle (lock-free: one reference store)."""
        self.run = run

    @property
    def complete(self) -> bool:
        """A run was published and it reports done (it still needs :meth:`retire`)."""
        run = self.run
        return run is not None and bool(run.done)

    def retire(self, timeout: float | None = None) -> BaseException | None:
        """Wait for the run, then release the borrowed sources; returns the run's error (None
        when it succeeded). Idempotent: a retired ticket returns the same error at once.

        Raises:
            RuntimeError: No run was published for this ticket.
            TimeoutError: The run did not finish in time (the ticket keeps its sources).
        """
        if self.retired:
            return self.error
        run = self.run
        if run is None:
            raise RuntimeError("PendingTicket.retire: no run was published for this ticket")
        if not run.wait(timeout):
            raise TimeoutError(f"pypto.torch: kernel run {run!r} did not finish within {timeout} s")
        self.release()
        try:
            run.result(0)
        except Exception as exc:  # the run's own error (simpler.DeviceError), kept for a report
            self.error = exc
        self.retired = True
        return self.error

    def take_error(self) -> BaseException | None:
        """The run's error if no synchronisation point reported it yet (then it counts as reported)."""
        if self.error is None or self.reported:
            return None
        self.reported = True
        return self.error

    def release(self) -> None:
        """Release the borrowed sources: unpin the storages, then drop the frame."""
        pins, self.pins = self.pins, ()
        unpin(pins)
        self.frame = None

    def __repr__(self) -> str:
        state = "unpublished" if self.run is None else ("done" if self.run.done else "running")
        return f"PendingTicket({getattr(self.callable, 'name', '?')}, {state})"
