"""The Ascend NPU platform: device and stream queries through torch_npu's public API.

This is the one module of pypto-torch that imports torch_npu (and the optional native
adapter ``pypto._torch_npu``), and only when a query needs it: importing this module
imports neither. A missing torch_npu raises :class:`NpuRuntimeUnavailable` naming the
query and the extra that provides it.
"""

from __future__ import annotations

import atexit
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from pypto._npu_advice import AUTOLOAD_FIX, explain_torch_import_failure, explain_torch_npu_failure
from pypto.ir import DEFAULT_PLATFORM, get_platform
from pypto.torch._platform import NPU_PLATFORMS, DevicePlatform, NpuRuntimeUnavailable, PhysicalDescriptor

# the chip the default (simulated) platform simulates
_DEFAULT_NPU = get_platform(DEFAULT_PLATFORM).hardware

__all__ = [
    "AUTOLOAD_FIX",
    "VERIFIED_TEARDOWN_HOOKS",
    "NpuPlatform",
    "explain_torch_import_failure",
    "explain_torch_npu_failure",
]

VERIFIED_TEARDOWN_HOOKS: dict[str, tuple[str, str]] = {
    "2.6.0.post2": ("torch_npu", "_npu_shutdown"),
    "2.6.0.post3": ("torch_npu", "_npu_shutdown"),
    "2.10.0.post2": ("torch_npu", "_npu_shutdown"),
    "2.13.0": ("torch_npu._init.core.runtime_lifecycle", "_npu_shutdown"),
}
"""torch_npu releases whose process-exit teardown hook is known: version (without a ``+build``
suffix) -> (module, function) that torch_npu registers with ``atexit``. 2.6.0.post3, 2.10.0.post2
and 2.13.0 were read from their released wheels; 2.6.0.post2 comes from the design note. Any
other version is not wrapped (kernel mode's own exit hook still runs, registered after init
imported the framework)."""


_loaded: dict[str, ModuleType] = {}
"""Modules imported successfully, by name: a query made on every call (the storage format of
each tensor, the current device and stream) then costs a dict lookup, not an import. A
failed import is not remembered, so it is attempted again (and reported) on the next query."""


def _import_once(name: str) -> ModuleType:
    """The module ``name`` from :data:`_loaded`, imported (and kept) on the first call that
    succeeds; the import's error propagates."""
    module = _loaded.get(name)
    if module is None:
        module = _loaded[name] = importlib.import_module(name)
    return module


def _load_torch_npu(platform: str, query: str) -> ModuleType:
    try:
        return _import_once("torch_npu")
    except (ImportError, OSError) as exc:
        raise NpuRuntimeUnavailable(
            f"platform {platform!r}: {query} needs torch_npu: {explain_torch_npu_failure(exc)}; "
            "or use a simulator platform such as 'a2a3sim'"
        ) from exc


def _load_native_adapter(platform: str, query: str) -> ModuleType:
    try:
        return _import_once("pypto._torch_npu")
    except ImportError as exc:
        raise NpuRuntimeUnavailable(
            f"platform {platform!r}: {query} needs the optional native adapter pypto._torch_npu, "
            f"which could not be imported: {exc} (without it, pass ND tensors: only NZ-format inputs need it)"
        ) from exc


def _optional_native_adapter() -> ModuleType | None:
    """The native adapter if it imports, else None (it is optional where a Python API serves)."""
    try:
        return _import_once("pypto._torch_npu")
    except ImportError:
        return None


class NpuPlatform(DevicePlatform):
    """``a2a3`` / ``a5``: tensors on ``npu:<index>``, torch_npu's current device and stream."""

    device_type = "npu"
    is_simulator = False
    names = NPU_PLATFORMS

    def __init__(self, name: str = _DEFAULT_NPU) -> None:
        super().__init__(name)

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

    def synchronize(self, device_index: int) -> None:
        torch_npu = _load_torch_npu(self.name, "device synchronisation")
        torch_npu.npu.synchronize(device_index)

    def bind_context(self, device_index: int) -> None:
        # Called on the lifecycle owner thread only. Both ways bind the calling thread to the
        # device's context, the one the framework itself uses: the native adapter through
        # torch_npu's SetDevice (and it reads the bound context back, failing loudly if none is
        # bound), or, without the adapter, torch_npu's public set_device.
        torch_npu = _load_torch_npu(self.name, "binding the device context")
        adapter = _optional_native_adapter()
        if adapter is not None:
            adapter.bind_context(device_index)
        else:
            torch_npu.npu.set_device(device_index)

    def wrap_framework_teardown(self, close: Callable[[], None]) -> bool:
        """Replace torch_npu's registered exit hook by one that calls ``close`` first.

        Only for a version in :data:`VERIFIED_TEARDOWN_HOOKS`; returns False (and changes
        nothing) for any other. The wrapper takes the end of the ``atexit`` list, so it runs
        before every exit hook registered earlier; ``close`` runs even if it raises, and the
        framework's teardown runs after it in any case. Wrapping twice is a no-op.
        """
        torch_npu = _load_torch_npu(self.name, "the framework teardown hook")
        version = str(getattr(torch_npu, "__version__", "")).split("+", 1)[0]
        where = VERIFIED_TEARDOWN_HOOKS.get(version)
        if where is None:
            return False
        hook = getattr(importlib.import_module(where[0]), where[1], None)
        if not callable(hook):
            return False
        if getattr(hook, "__pypto_closes_first__", False):
            return True

        def teardown() -> None:
            try:
                close()
            finally:
                hook()

        teardown.__pypto_closes_first__ = True  # type: ignore[attr-defined]
        atexit.unregister(hook)
        atexit.register(teardown)
        setattr(importlib.import_module(where[0]), where[1], teardown)
        return True

    def stream_device_index(self, stream: object) -> int:
        index = getattr(stream, "device_index", None)
        if index is None:
            index = getattr(getattr(stream, "device", None), "index", None)
        if index is None:
            raise TypeError(f"platform {self.name!r}: stream {stream!r} names no device")
        return int(index)
