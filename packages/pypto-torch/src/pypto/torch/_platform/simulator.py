"""The simulated chip's platform: CPU tensors are the device memory.

On the simulator a device address is a host address, so a CPU tensor's storage is device
storage as it stands. There is one device (index 0). Streams are :class:`SimulatorStream`
objects; each thread starts on the default stream and :func:`use_stream` switches the
current one for a block, the way ``torch.cuda.stream`` does.
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

__all__ = ["DEFAULT_STREAM", "SimulatorPlatform", "SimulatorStream", "current_stream", "use_stream"]

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

    def __repr__(self) -> str:
        return f"SimulatorStream(id={self.stream_id}, device={self.device_index})"


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

    def __init__(self, name: str = DEFAULT_PLATFORM) -> None:
        if name not in SIMULATOR_PLATFORMS:
            raise ValueError(f"SimulatorPlatform(name): expected one of {SIMULATOR_PLATFORMS}, got {name!r}")
        self.name = name

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

    def current_stream(self, device_index: int) -> object:
        return current_stream()

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
