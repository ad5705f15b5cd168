"""The simulated chip's platform: CPU tensors are the device memory.

On the simulator a device address is a host address, so a CPU tensor's storage is device
storage as it stands. There is one device (index 0). Streams are :class:`SimulatorStream`
objects; each thread starts on the default stream and :func:`use_stream` switches the
current one for a block, the way ``torch.npu.stream`` does. Streams and
:class:`SimulatorEvent` objects have ``torch.npu``'s synchronisation methods; in kernel mode's
asynchronous mode they are how the host waits for launches (see
:mod:`pypto.torch._kernel.ordering`), in the default synchronous mode every launch has already
finished when its call returns, so they return at once.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pypto.ir import DEFAULT_PLATFORM
from pypto.torch._platform import (
    FORMAT_ND,
    SIMULATOR_PLATFORMS,
    DevicePlatform,
    PhysicalDescriptor,
)

__all__ = [
    "DEFAULT_STREAM",
    "SimulatorEvent",
    "SimulatorPlatform",
    "SimulatorStream",
    "current_stream",
    "use_stream",
]

SIMULATOR_DEVICE_INDEX = 0

_ids = itertools.count(1)


class SimulatorStream:
    """An ordered queue on the simulated device; identity is the stream.

    Attributes:
        stream_id: Unique in this process; the default stream is 0.
        device_index: Always 0 (the simulator has one device).
    """

    __slots__ = ("__weakref__", "device_index", "stream_id")

    def __init__(self, *, _stream_id: int | None = None) -> None:
        self.stream_id = next(_ids) if _stream_id is None else _stream_id
        self.device_index = SIMULATOR_DEVICE_INDEX

    def synchronize(self) -> None:
        """Wait for every kernel launched on this stream (and for the events it waits on);
        raise the first error among them that no synchronisation point reported yet."""
        from pypto.torch._kernel import context, ordering

        ordering.synchronize_stream(context.current(), self)

    def query(self) -> bool:
        """Whether every kernel launched on this stream has finished."""
        return self.record_event().query()

    def record_event(self, event: SimulatorEvent | None = None) -> SimulatorEvent:
        """Record ``event`` (a new one when None) on this stream and return it."""
        event = SimulatorEvent() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: SimulatorEvent) -> None:
        """Order this stream's later work after ``event``: its synchronisation points and
        events cover what ``event`` captured."""
        if not isinstance(event, SimulatorEvent):
            raise TypeError(
                f"SimulatorStream.wait_event(event): expected a SimulatorEvent, got {type(event).__name__}"
            )
        event.wait(self)

    def wait_stream(self, stream: SimulatorStream) -> None:
        """Order this stream's later work after everything launched on ``stream`` so far."""
        if not isinstance(stream, SimulatorStream):
            raise TypeError(
                f"SimulatorStream.wait_stream(stream): expected a SimulatorStream, got {type(stream).__name__}"
            )
        self.wait_event(stream.record_event())

    def __repr__(self) -> str:
        return f"SimulatorStream(id={self.stream_id}, device={self.device_index})"


class SimulatorEvent:
    """A point in a :class:`SimulatorStream`: what was launched on it before :meth:`record`."""

    __slots__ = ("_tickets", "recorded")

    def __init__(self) -> None:
        self._tickets: tuple[object, ...] = ()
        self.recorded = False

    def record(self, stream: SimulatorStream | None = None) -> None:
        """Capture the kernels launched so far on ``stream`` (None: the current stream)."""
        from pypto.torch._kernel import context, ordering

        target = current_stream() if stream is None else stream
        if not isinstance(target, SimulatorStream):
            raise TypeError(
                f"SimulatorEvent.record(stream): expected a SimulatorStream, got {type(target).__name__}"
            )
        self._tickets = ordering.record(context.current(), target)
        self.recorded = True

    def query(self) -> bool:
        """Whether every captured kernel has finished (True for an event never recorded)."""
        from pypto.torch._kernel import ordering

        return ordering.query(self._tickets)  # type: ignore[arg-type]

    def synchronize(self) -> None:
        """Wait for the captured kernels; raise the first unreported error among them."""
        from pypto.torch._kernel import context, ordering

        ordering.synchronize_tickets(context.current(), self._tickets)  # type: ignore[arg-type]

    def wait(self, stream: SimulatorStream | None = None) -> None:
        """Make ``stream`` (None: the current stream) wait for this event."""
        from pypto.torch._kernel import context, ordering

        target = current_stream() if stream is None else stream
        ordering.wait_tickets(context.current(), target, self._tickets)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"SimulatorEvent(recorded={self.recorded}, captured={len(self._tickets)})"


DEFAULT_STREAM = SimulatorStream(_stream_id=0)
"""The stream every thread starts on."""


class _StreamStack(threading.local):
    """Each thread's stack of streams entered with :func:`use_stream` (empty at first, so
    reading it never raises: a missed attribute lookup would cost an exception per call)."""

    def __init__(self) -> None:
        self.stack: list[SimulatorStream] = []


_local = _StreamStack()


def current_stream() -> SimulatorStream:
    """This thread's current simulator stream."""
    stack = _local.stack
    return stack[-1] if stack else DEFAULT_STREAM


def _current_stream_on(device_index: int) -> SimulatorStream:
    """:meth:`SimulatorPlatform.current_stream`: one function, no forwarding call (call
    description asks it on every call; the simulator has one device)."""
    stack = _local.stack
    return stack[-1] if stack else DEFAULT_STREAM


@contextmanager
def use_stream(stream: SimulatorStream) -> Iterator[SimulatorStream]:
    """Make ``stream`` this thread's current simulator stream inside the block."""
    if not isinstance(stream, SimulatorStream):
        raise TypeError(f"use_stream(stream): expected a SimulatorStream, got {type(stream).__name__}")
    stack = _local.stack
    stack.append(stream)
    try:
        yield stream
    finally:
        stack.pop()


class SimulatorPlatform(DevicePlatform):
    """``a2a3sim`` / ``a5sim``: CPU tensors on device 0, simulator streams, ND format only."""

    device_type = "cpu"
    is_simulator = True
    cpu_device_index = SIMULATOR_DEVICE_INDEX
    names = SIMULATOR_PLATFORMS

    def __init__(self, name: str = DEFAULT_PLATFORM) -> None:
        super().__init__(name)

    def tensor_device_index(self, tensor: object) -> int | None:
        return SIMULATOR_DEVICE_INDEX if getattr(tensor, "is_cpu", False) else None

    def tensor_format(self, tensor: object) -> int:
        return FORMAT_ND

    def physical_descriptor(self, tensor: object) -> PhysicalDescriptor:
        raise NotImplementedError(
            f"platform {self.name!r}: the simulator stores tensors in ND form; no NZ storage exists"
        )

    def current_device(self) -> int:
        return SIMULATOR_DEVICE_INDEX

    current_stream = staticmethod(_current_stream_on)

    def is_capturing(self) -> bool:
        return False  # the simulated chip has no graph capture

    def bind_context(self, device_index: int) -> None:
        if device_index != SIMULATOR_DEVICE_INDEX:
            raise ValueError(
                f"platform {self.name!r}: the simulator has device {SIMULATOR_DEVICE_INDEX} only, got {device_index}"
            )

    def stream_device_index(self, stream: object) -> int:
        if not isinstance(stream, SimulatorStream):
            raise TypeError(
                f"platform {self.name!r}: expected a SimulatorStream, got {type(stream).__name__}"
            )
        return stream.device_index
