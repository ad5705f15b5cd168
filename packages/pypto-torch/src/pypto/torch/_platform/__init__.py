"""The device and stream queries of one platform, behind one small interface.

Call description asks a platform four kinds of question: which device a tensor lives on,
what storage format it has (and, lazily, its physical NZ descriptor), which device is
current, and which stream is current. Two variants answer them:

- :class:`~pypto.torch._platform.npu.NpuPlatform` (``a2a3``, ``a5``) asks torch_npu's public
  Python API, loaded on first use; a missing torch_npu raises :class:`NpuRuntimeUnavailable`.
- :class:`~pypto.torch._platform.simulator.SimulatorPlatform` (``a2a3sim``, ``a5sim``) treats
  CPU tensors as the simulated device's memory: device index 0, and a
  :class:`~pypto.torch._platform.simulator.SimulatorStream` as the current stream.

Tests emulate an NPU by subclassing ``NpuPlatform`` and replacing only these queries.
Importing this package imports neither torch_npu nor any native extension.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pypto.ir import NPU_PLATFORMS, SIMULATOR_PLATFORMS

__all__ = [
    "FORMAT_FRACTAL_NZ",
    "FORMAT_NCHW",
    "FORMAT_ND",
    "NPU_PLATFORMS",
    "SIMULATOR_PLATFORMS",
    "DevicePlatform",
    "NpuRuntimeUnavailable",
    "PhysicalDescriptor",
    "platform_for",
]

FORMAT_NCHW = 0
"""Base 4-D format; for a plain strided tensor it means the same bytes as ND."""
FORMAT_ND = 2
"""Base row-major format."""
FORMAT_FRACTAL_NZ = 29
"""The blocked NZ format that torch_npu reports for fractal (cube-friendly) storage."""


class NpuRuntimeUnavailable(ImportError):
    """An NPU platform was asked a question, but torch_npu (or the native adapter) is missing."""


@dataclass(frozen=True)
class PhysicalDescriptor:
    """What the device storage behind a tensor really holds (needed only for NZ inputs).

    Attributes:
        format: The storage format code (29 for fractal NZ).
        storage_shape: Physical dimensions, in elements of the tensor's dtype.
        storage_offset: Offset of the tensor's first element in the storage, in elements.
        storage_nbytes: Capacity of the storage in bytes.
    """

    format: int
    storage_shape: tuple[int, ...]
    storage_offset: int
    storage_nbytes: int


class DevicePlatform:
    """The queries that call description makes of a device platform.

    Subclasses answer each query; the base class only names them. Every query is made
    afresh on every call: a platform caches no device and no stream.
    """

    name: str = ""
    """The PyPTO platform string, e.g. ``"a2a3"`` or ``"a2a3sim"``."""
    device_type: str = ""
    """The torch device type of this platform's device tensors (``"npu"`` or ``"cpu"``)."""
    is_simulator: bool = False
    cpu_device_index: int | None = None
    """Set when CPU memory is this platform's device memory (the simulators): every CPU tensor
    is then on this device index, in ND format, and no other tensor is a device tensor, which
    lets call description read ``tensor.is_cpu`` instead of asking :meth:`tensor_device_index`
    and :meth:`tensor_format`. None (the default): those queries are made for every tensor."""
    names: tuple[str, ...] = ()
    """The platform strings this class serves: its constructor refuses any other."""

    def __init__(self, name: str) -> None:
        if name not in self.names:
            raise ValueError(f"{type(self).__name__}(name): expected one of {self.names}, got {name!r}")
        self.name = name

    def tensor_device_index(self, tensor: object) -> int | None:
        """The device index of ``tensor`` if it is one of this platform's device tensors, else None."""
        raise NotImplementedError(f"{type(self).__name__} needs tensor_device_index")

    def tensor_format(self, tensor: object) -> int:
        """The storage format code of a device tensor (0 NCHW, 2 ND, 29 fractal NZ, ...)."""
        raise NotImplementedError(f"{type(self).__name__} needs tensor_format")

    def physical_descriptor(self, tensor: object) -> PhysicalDescriptor:
        """The physical storage of a device tensor; asked only for NZ-format inputs."""
        raise NotImplementedError(f"{type(self).__name__} needs physical_descriptor")

    def current_device(self) -> int:
        """The framework's current device index (never changed by PyPTO)."""
        raise NotImplementedError(f"{type(self).__name__} needs current_device")

    def current_stream(self, device_index: int) -> object:
        """The framework's current stream on ``device_index``, as a fresh query."""
        raise NotImplementedError(f"{type(self).__name__} needs current_stream")

    def stream_device_index(self, stream: object) -> int:
        """The device index that ``stream`` belongs to."""
        raise NotImplementedError(f"{type(self).__name__} needs stream_device_index")

    def is_capturing(self) -> bool:
        """Whether the current stream is being captured into a graph (kernel-mode init refuses)."""
        raise NotImplementedError(f"{type(self).__name__} needs is_capturing")

    def bind_context(self, device_index: int) -> None:
        """Bind the calling thread to the framework's context of ``device_index``.

        The kernel-mode lifecycle owner thread calls this before it initialises a Worker,
        registers a callable or closes the Worker, so that native work runs in the device
        context the user's thread had current. It never changes the user's thread.
        """
        raise NotImplementedError(f"{type(self).__name__} needs bind_context")

    def synchronize(self, device_index: int) -> None:
        """Wait for the framework's work queued on ``device_index`` (a simulator has none)."""

    def wrap_framework_teardown(self, close: Callable[[], None]) -> bool:
        """Make the framework's process-exit teardown call ``close`` before it tears down.

        Returns whether a teardown hook was wrapped. A simulator has no framework teardown,
        so the base answer is False; kernel mode then relies on its own exit hook alone.
        """
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


_PLATFORMS: dict[str, DevicePlatform] = {}


def platform_for(platform: str | DevicePlatform) -> DevicePlatform:
    """The platform object for a platform string (or ``platform`` itself if it is one).

    Raises:
        ValueError: ``platform`` names no known platform.
    """
    if isinstance(platform, DevicePlatform):
        return platform
    found = _PLATFORMS.get(platform) if isinstance(platform, str) else None
    if found is not None:
        return found
    if platform in SIMULATOR_PLATFORMS:
        from pypto.torch._platform.simulator import SimulatorPlatform

        found = SimulatorPlatform(platform)
    elif platform in NPU_PLATFORMS:
        from pypto.torch._platform.npu import NpuPlatform

        found = NpuPlatform(platform)
    else:
        known = ", ".join((*NPU_PLATFORMS, *SIMULATOR_PLATFORMS))
        raise ValueError(f"platform: expected one of {known} or a DevicePlatform, got {platform!r}")
    return _PLATFORMS.setdefault(platform, found)
