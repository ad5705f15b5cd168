"""The Ascend NPU platform: device and stream queries through torch_npu's public API.

This is the one module of pypto-torch that imports torch_npu (and the optional native
adapter ``pypto._torch_npu``), and only when a query needs it: importing this module
imports neither. A missing torch_npu raises :class:`NpuRuntimeUnavailable` naming the
query and the extra that provides it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from pypto.torch._platform import NPU_PLATFORMS, DevicePlatform, NpuRuntimeUnavailable, PhysicalDescriptor

__all__ = ["NpuPlatform"]


_loaded: dict[str, ModuleType] = {}
"""Modules imported successfully, by name: a query made on every call (the storage format of
each tensor, the current device and stream) then costs a dict lookup, not an import. A
failed import is not remembered, so it is attempted again (and reported) on the next query."""


def _load_torch_npu(platform: str, query: str) -> ModuleType:
    module = _loaded.get("torch_npu")
    if module is not None:
        return module
    try:
        module = _loaded["torch_npu"] = importlib.import_module("torch_npu")
        return module
    except ImportError as exc:
        raise NpuRuntimeUnavailable(
            f"platform {platform!r}: {query} needs torch_npu, which could not be imported ({exc}); "
            "install it with `pip install 'pypto-torch[npu]'`, or use a simulator platform such as 'a2a3sim'"
        ) from exc


def _load_native_adapter(platform: str, query: str) -> ModuleType:
    module = _loaded.get("pypto._torch_npu")
    if module is not None:
        return module
    try:
        module = _loaded["pypto._torch_npu"] = importlib.import_module("pypto._torch_npu")
        return module
    except ImportError as exc:
        raise NpuRuntimeUnavailable(
            f"platform {platform!r}: {query} needs the optional native adapter pypto._torch_npu, "
            f"which could not be imported: {exc} (without it, pass ND tensors: only NZ-format inputs need it)"
        ) from exc


class NpuPlatform(DevicePlatform):
    """``a2a3`` / ``a5``: tensors on ``npu:<index>``, torch_npu's current device and stream."""

    device_type = "npu"
    is_simulator = False

    def __init__(self, name: str = "a2a3") -> None:
        if name not in NPU_PLATFORMS:
            raise ValueError(f"NpuPlatform(name): expected one of {NPU_PLATFORMS}, got {name!r}")
        self.name = name

    def tensor_device_index(self, tensor: object) -> int | None:
        device: Any = getattr(tensor, "device", None)
        if getattr(device, "type", None) != self.device_type:
            return None
        index = device.index
        return 0 if index is None else int(index)

    def tensor_format(self, tensor: object) -> int:
        torch_npu = _load_torch_npu(self.name, "the storage format query")
        return int(torch_npu.get_npu_format(tensor))

    def physical_descriptor(self, tensor: object) -> PhysicalDescriptor:
        # The adapter returns (format, storage_shape, storage_offset, storage_nbytes).
        adapter = _load_native_adapter(self.name, "the physical NZ storage query")
        fmt, shape, offset, nbytes = adapter.storage_descriptor(tensor)
        return PhysicalDescriptor(int(fmt), tuple(int(d) for d in shape), int(offset), int(nbytes))

    def current_device(self) -> int:
        torch_npu = _load_torch_npu(self.name, "the current device query")
        return int(torch_npu.npu.current_device())

    def current_stream(self, device_index: int) -> object:
        torch_npu = _load_torch_npu(self.name, "the current stream query")
        stream: object = torch_npu.npu.current_stream(device_index)
        return stream

    def is_capturing(self) -> bool:
        torch_npu = _load_torch_npu(self.name, "the graph capture query")
        query = getattr(torch_npu.npu, "is_current_stream_capturing", None)
        return bool(query()) if query is not None else False

    def bind_context(self, device_index: int) -> None:
        # torch_npu's public set_device binds the calling thread to the device's context, the
        # one the framework itself uses; it is called on the lifecycle owner thread only.
        torch_npu = _load_torch_npu(self.name, "binding the device context")
        torch_npu.npu.set_device(device_index)

    def stream_device_index(self, stream: object) -> int:
        index = getattr(stream, "device_index", None)
        if index is None:
            index = getattr(getattr(stream, "device", None), "index", None)
        if index is None:
            raise TypeError(f"platform {self.name!r}: stream {stream!r} names no device")
        return int(index)
