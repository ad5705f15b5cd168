"""Synchronisation points of kernel mode: stream and device synchronisation, and events.

They order the host after launches the way ``torch.npu`` streams and events do:

- :func:`synchronize_stream` waits for every launch made on a framework stream, and for the
  launches that stream was made to wait for (:func:`wait_tickets`, through events);
- :func:`record` captures what a stream has launched so far (an event);
- :func:`synchronize_tickets` waits for such a capture;
- :func:`synchronize_device` waits for every launch of the process.

Each retires what it waited for (the run's native resources first, then the borrowed tensors)
and raises the first error among the covered runs that no synchronisation point reported yet
(each failed run is reported once). Device-side ordering needs nothing here: the simulated
chip takes launches from all streams in enqueue order and a later run's tasks wait for the
earlier runs' tasks whose tensors they overlap, so a launch enqueued after an event was
recorded already runs after what the event captured.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pypto.torch._kernel.pending import PendingTicket

__all__ = ["record", "synchronize_device", "synchronize_stream", "synchronize_tickets", "wait_tickets"]


def record(manager: Any, stream: object) -> tuple[PendingTicket, ...]:
    """The published launches of ``stream`` not yet retired, with those it waits on."""
    with manager.lock:
        own = [t for t in manager.pending if t.stream is stream and t.run is not None]
        waited = [t for t in manager.waits.get(stream, ()) if not t.retired or (t.error and not t.reported)]
        failed = [t for t in manager.failed if t.stream is stream]
    return tuple(own + waited + failed)


def wait_tickets(manager: Any, stream: object, tickets: tuple[PendingTicket, ...]) -> None:
    """Make ``stream``'s later synchronisation points (and events) cover ``tickets`` too."""
    with manager.lock:
        waits = manager.waits.setdefault(stream, [])
        waits[:] = [t for t in waits if not t.retired] + [t for t in tickets if not t.retired]


def query(tickets: tuple[PendingTicket, ...]) -> bool:
    """Whether every captured launch has finished (nothing is retired or reported)."""
    return all(t.retired or t.complete for t in tickets)


def synchronize_tickets(
    manager: Any, tickets: tuple[PendingTicket, ...], timeout: float | None = None
) -> None:
    """Wait for ``tickets``, retire them, and raise the first error not reported yet.

    Raises:
        TimeoutError: A run did not finish in time (it keeps its ticket and tensors).
        simpler.DeviceError: A covered run failed (its tensors are released all the same).
    """
    errors: list[BaseException] = []
    for ticket in tickets:
        ticket.retire(timeout)
        with manager.lock:
            with contextlib.suppress(ValueError):
                manager.pending.remove(ticket)
            with contextlib.suppress(ValueError):
                manager.failed.remove(ticket)
        error = ticket.take_error()
        if error is not None:
            errors.append(error)
    if errors:
        raise errors[0]


def synchronize_stream(manager: Any, stream: object, timeout: float | None = None) -> None:
    """Wait for every launch made on ``stream`` (and what it was made to wait for)."""
    tickets = record(manager, stream)
    with manager.lock:
        manager.waits.pop(stream, None)
    synchronize_tickets(manager, tickets, timeout)


def synchronize_device(manager: Any, timeout: float | None = None) -> None:
    """Wait for every launch of the process, on every stream."""
    with manager.lock:
        tickets = tuple(t for t in manager.pending if t.run is not None) + tuple(manager.failed)
        manager.waits.clear()
    synchronize_tickets(manager, tickets, timeout)
