"""Shared fixtures: an emulated NPU platform over real CPU storage, and temporary libraries; this
folder on sys.path for the shared test programs of torch_test_programs.py.

The emulated NPU replaces only the platform queries (device label, storage format, physical
NZ descriptor, current device and stream); everything else in call description runs on
the real CPU tensors and their storage.
"""

from __future__ import annotations

import os

# pypto.torch.init would load (or first build) the native describe_call path on a background
# thread; the suites test that path through explicit build_native() calls and the start itself
# with a stand-in, so their many init() calls do not start it (tests may set it back).
os.environ.setdefault("PYPTO_NATIVE_DESCRIBE", "0")

import sys
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from pypto.torch._platform import PhysicalDescriptor
from pypto.torch._platform.npu import NpuPlatform

HERE = Path(__file__).resolve().parent

# Test modules import shared programs by name (``from torch_test_programs import add``); with
# --import-mode=importlib this folder is not on sys.path, so conftest (loaded before any test
# module) puts it there.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


class FakeNpuStream:
    """Stands in for a torch_npu stream: an object with a device index."""

    def __init__(self, device_index: int, name: str) -> None:
        self.device_index = device_index
        self.name = name

    def __repr__(self) -> str:
        return f"FakeNpuStream({self.name!r}, device={self.device_index})"


class EmulatedNpu(NpuPlatform):
    """An NPU platform whose device tensors are CPU tensors tagged with an ``npu:<k>`` label."""

    def __init__(self, name: str = "a2a3") -> None:
        super().__init__(name)
        # Keyed by object identity (tensors compare elementwise), holding no strong reference.
        self._labels: dict[int, tuple[weakref.ref[Any], int, int, PhysicalDescriptor | None]] = {}
        self.device = 0
        self.stream: object = FakeNpuStream(0, "default")
        self.log: list[str] = []
        self.capturing = False

    def place(
        self,
        tensor: Any,
        device: int = 0,
        *,
        fmt: int | None = None,
        physical: PhysicalDescriptor | None = None,
    ) -> Any:
        """Label ``tensor`` as living on ``npu:<device>`` (and optionally its format)."""
        self._labels[id(tensor)] = (weakref.ref(tensor), device, 2 if fmt is None else fmt, physical)
        return tensor

    def _label(self, tensor: object) -> tuple[Any, int, int, PhysicalDescriptor | None] | None:
        entry = self._labels.get(id(tensor))
        return entry if entry is not None and entry[0]() is tensor else None

    def tensor_device_index(self, tensor: object) -> int | None:
        entry = self._label(tensor)
        return None if entry is None else entry[1]

    def tensor_format(self, tensor: object) -> int:
        self.log.append("format")
        entry = self._label(tensor)
        return 2 if entry is None else entry[2]

    def physical_descriptor(self, tensor: object) -> PhysicalDescriptor:
        self.log.append("physical")
        entry = self._label(tensor)
        if entry is None or entry[3] is None:
            raise AssertionError(f"no physical descriptor was given for {tensor!r}")
        return entry[3]

    def current_device(self) -> int:
        self.log.append("device")
        return self.device

    def wrap_framework_teardown(self, close: Any) -> bool:
        self.log.append("teardown")
        return False

    def current_stream(self, device_index: int) -> object:
        self.log.append("stream")
        return self.stream

    def stream_device_index(self, stream: object) -> int:
        return int(getattr(stream, "device_index"))  # noqa: B009 - the stub's own attribute

    def is_capturing(self) -> bool:
        self.log.append("capturing")
        return self.capturing

    def bind_context(self, device_index: int) -> None:
        import threading

        self.log.append(f"bind:{device_index}:{threading.current_thread().name}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "npu: needs a real Ascend NPU with torch_npu and CANN (skipped elsewhere)"
    )


@pytest.fixture
def npu() -> EmulatedNpu:
    return EmulatedNpu()


@pytest.fixture
def make_npu() -> type[EmulatedNpu]:
    return EmulatedNpu


@pytest.fixture
def library() -> Iterator[torch.library.Library]:
    """A fresh ``DEF`` library in a namespace no other test uses, destroyed afterwards."""
    lib = torch.library.Library(f"pypto_test_{uuid.uuid4().hex[:10]}", "DEF")
    try:
        yield lib
    finally:
        lib._destroy()


@pytest.fixture(scope="session")
def kernel_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One artifact store for the kernel-mode tests of this session (kernels compile once)."""
    root = tmp_path_factory.mktemp("kernel-store")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYPTO_CACHE_DIR", str(root))
        for name in ("PYPTO_CACHE", "PYPTO_CACHE_READONLY", "PYPTO_CACHE_FAULT", "PYPTO_PLATFORM"):
            mp.delenv(name, raising=False)
        yield root


@pytest.fixture
def kernel_mode(kernel_store: Path) -> Iterator[None]:
    """A process with no mode claimed and an untouched kernel-mode manager, restored after the
    test (so that program-mode tests of other packages run in the same process)."""
    from pypto.runtime import mode_gate
    from pypto.torch._kernel import context

    context._reset_for_tests()
    mode_gate._reset_for_tests()
    try:
        yield
    finally:
        context._reset_for_tests()
        mode_gate._reset_for_tests()
