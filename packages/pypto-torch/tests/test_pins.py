"""pypto.torch._kernel.pins: a borrowed storage cannot be resized while a launch holds it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from pypto.torch._kernel import pins


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
