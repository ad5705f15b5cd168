"""pypto.torch._kernel.pins: a borrowed storage cannot be resized while a launch holds it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from pypto.torch import _native_describe
from pypto.torch._kernel import pins


@pytest.fixture(autouse=True, params=["native", "python"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs on the native pins (the describe_call extension, built on first use) and
    on the Python fallback used while the extension is unavailable."""
    if request.param == "native":
        assert _native_describe.build_native(), _native_describe.native_error()
        monkeypatch.setattr(pins._pins, "native", _native_describe.loaded_module())
    else:
        monkeypatch.setattr(pins._pins, "native", None)
        monkeypatch.setattr(_native_describe, "loaded_module", lambda: None)
    return str(request.param)


def _frame(*tensors: torch.Tensor) -> Any:
    records = []
    for k, t in enumerate(tensors):
        storage = t.untyped_storage()
        records.append(
            SimpleNamespace(
                name=f"t{k}", storage=storage, storage_ptr=storage.data_ptr(), storage_nbytes=storage.nbytes()
            )
        )
    return SimpleNamespace(tensors=tuple(records))


def test_this_torch_can_pin() -> None:
    assert pins.pinning_available()


def test_a_pinned_storage_refuses_a_resize_until_the_last_unpin() -> None:
    t = torch.rand(1024)
    storage = t.untyped_storage()
    first = pins.pin_frame(_frame(t, t[4:]))  # two views of one storage
    second = pins.pin_frame(_frame(t))
    with pytest.raises(RuntimeError, match="not resizable"):
        storage.resize_(0)
    with pytest.raises(RuntimeError, match="not resizable"):
        t.resize_(4096)
    pins.unpin(first)
    assert not storage.resizable()  # still held by the second launch
    pins.unpin(second)
    assert storage.resizable()
    storage.resize_(0)
    assert storage.nbytes() == 0


def test_a_storage_that_was_never_resizable_stays_so() -> None:
    t = torch.frombuffer(bytearray(64), dtype=torch.uint8)
    held = pins.pin_frame(_frame(t))
    pins.unpin(held)
    assert not t.untyped_storage().resizable()


def test_a_storage_resized_before_the_pin_is_refused() -> None:
    t, u = torch.rand(1024), torch.rand(16)
    frame = _frame(u, t)
    t.untyped_storage().resize_(0)
    with pytest.raises(pins.StorageChangedError, match=r"argument 't1'.*the kernel was not run"):
        pins.pin_frame(frame)
    assert t.untyped_storage().resizable()  # nothing stays pinned
    assert u.untyped_storage().resizable()


def test_a_native_pin_nobody_released_is_released_with_its_handle(implementation: str) -> None:
    t = torch.rand(64)
    held = pins.pin_frame(_frame(t))
    assert not t.untyped_storage().resizable()
    if implementation == "python":  # plain addresses: only unpin releases them
        kept = held
        del held
        assert not t.untyped_storage().resizable()
        pins.unpin(kept)
    else:
        del held  # the capsule's destructor releases the pin
    assert t.untyped_storage().resizable()


def test_native_pins_start_only_when_no_python_pin_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _native_describe.build_native(), _native_describe.native_error()
    module = _native_describe._state.module
    monkeypatch.setattr(pins._pins, "native", None)
    t = torch.rand(64)
    monkeypatch.setattr(_native_describe, "loaded_module", lambda: None)
    python_held = pins.pin_frame(_frame(t))  # the extension is not there yet
    assert type(python_held) is tuple
    assert python_held
    monkeypatch.setattr(_native_describe, "loaded_module", lambda: module)
    still_python = pins.pin_frame(_frame(t))  # a Python pin is held: stay on Python
    assert type(still_python) is tuple
    assert still_python
    pins.unpin(python_held)
    pins.unpin(still_python)
    assert t.untyped_storage().resizable()
    native_held = pins.pin_frame(_frame(t))  # nothing held: switch for good
    assert type(native_held) is not tuple
    assert pins._pins.native is module
    assert not t.untyped_storage().resizable()
    pins.unpin(native_held)
    assert t.untyped_storage().resizable()
