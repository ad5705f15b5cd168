"""Per-call tickets: what a launch keeps alive until its run has been retired.

A ticket is created before the launch is enqueued and holds the context-bound registration
and the call's owners (the frame, with its borrowed tensors and their storages). The launch
publishes its ``RunHandle`` to the ticket without taking any manager lock. A ticket is
complete only when a run was published and reports done; even then ``wait()`` must retire the
run's native resources before the borrowed sources are released. A ticket whose retirement or
release fails is kept (with its sources), and so is the Worker. On a simulator the ticket also
holds the pins of the borrowed storages (:mod:`pypto.torch._kernel.pins`), released with them.
"""

from __future__ import annotations

from typing import Any

from pypto.torch._kernel.pins import unpin

__all__ = ["PendingTicket"]


class PendingTicket:
    """One launch in flight: registration, call frame (owners), and its published run."""

    __slots__ = ("callable", "frame", "pins", "run")

    def __init__(self, callable_: Any, frame: Any, pins: tuple[int, ...] = ()) -> None:
        self.callable = callable_
        self.frame = frame  # the borrowed tensors and storages, released by retire()
        self.pins = pins  # the storages held non-resizable for the run, released with the frame
        self.run: Any = None

    def publish(self, run: Any) -> None:
        """Attach the launch's RunHandle (lock-free: one reference store)."""
        self.run = run

    @property
    def complete(self) -> bool:
        """A run was published and it reports done (it still needs :meth:`retire`)."""
        run = self.run
        return run is not None and bool(run.done)

    def retire(self, timeout: float | None = None) -> None:
        """Wait for the run, then release the borrowed sources; re-raise a device error.

        Raises:
            TimeoutError: The run did not finish in time (the ticket keeps its sources).
            simpler.DeviceError: The run failed (its sources are released: the run is over).
        """
        run = self.run
        if run is None:
            raise RuntimeError("PendingTicket.retire: no run was published for this ticket")
        if not run.wait(timeout):
            raise TimeoutError(f"pypto.torch: kernel run {run!r} did not finish within {timeout} s")
        self.release()
        run.result(0)

    def release(self) -> None:
        """Release the borrowed sources: unpin the storages, then drop the frame."""
        pins, self.pins = self.pins, ()
        unpin(pins)
        self.frame = None

    def __repr__(self) -> str:
        state = "unpublished" if self.run is None else ("done" if self.run.done else "running")
        return f"PendingTicket({getattr(self.callable, 'name', '?')}, {state})"
