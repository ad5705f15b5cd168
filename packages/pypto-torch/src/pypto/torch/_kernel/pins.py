"""Borrowed CPU storages are held for the length of a simulator launch.

On a simulator the kernel works on the caller's CPU memory directly. A frame keeps each
storage object alive, but that does not keep its memory: another thread's
``t.untyped_storage().resize_(0)`` (or a ``resize_`` that grows a tensor past its storage)
frees the memory in place, and the running kernel then faults (SIGSEGV). So for the launch each
borrowed storage is made non-resizable, which makes such a resize raise ``RuntimeError:
Trying to resize storage that is not resizable`` in the other thread instead, and after the
pin the launch checks that every storage still has the address it was described with,
so a resize that finished between description and pin raises :class:`StorageChangedError`
here instead of running the kernel on freed memory. The flag is restored when the run is
retired (by the last launch holding that storage).

Two implementations, one at a time:

- Native (the describe_call extension, :mod:`pypto.torch._native_describe`): c10's public
  ``StorageImpl::set_resizable``, with the pin counts in C++; a pin is a capsule that
  :func:`unpin` releases (and its destructor, if nobody did). Used from the first pin taken
  while the extension is loaded and no Python pin is held, and from then on.
- Python, while the extension is unavailable: torch's Python API reads the flag
  (``UntypedStorage.resizable()``) but cannot set it, so it is set through ctypes on the
  ``c10::StorageImpl``: its offset is found once per process among the bytes right after the
  storage's size (see :func:`_find_offset`), by comparing a resizable and a non-resizable
  storage, and used only after toggling it on a probe storage has been seen to flip
  ``resizable()`` and to make ``resize_`` raise. If no single offset passes (another torch
  build), nothing is pinned (:func:`pinning_available` is False) and the launch is as
  unprotected as a torch op.

The two never hold pins at once: each keeps its own counts, and a flag restored by one while
the other holds the storage would unpin it early.

What it does not cover: a ``Tensor.resize_`` that grows a tensor runs without the GIL in torch
and checks the flag before copying; one that passed that check before the pin and finishes
during the kernel still frees the memory. ``resize_`` of the Python storage object runs under
the GIL and cannot interleave this way.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

from pypto.torch import _native_describe

__all__ = ["StorageChangedError", "pin_frame", "pinning_available", "unpin"]

_PROBE_BYTES = 128  # how much of a StorageImpl is searched for the flag
_MAX_FLAG_VIEWS = 4096  # cached one-byte views of StorageImpl flags (cleared when full)


class StorageChangedError(RuntimeError):
    """A borrowed storage was resized or replaced between describing a call and launching it."""


class _Pins:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.offset: int | None = None
        self.probed = False
        self.counts: dict[int, int] = {}  # StorageImpl address -> launches holding it
        self.restore: dict[int, int] = {}  # StorageImpl address -> its flag before the first pin
        self.flags: dict[int, Any] = {}  # StorageImpl address -> one-byte view of its flag
        self.native: Any = None  # the extension module once pins are taken natively


_pins = _Pins()


def _size_offset(image: bytes, nbytes: int) -> int | None:
    """Where ``image`` holds ``nbytes`` as a 64-bit integer (once), else None."""
    needle = nbytes.to_bytes(8, "little")
    first = image.find(needle)
    return first if first >= 0 and image.find(needle, first + 1) < 0 else None


def _find_offset() -> int | None:
    """The offset of ``StorageImpl::resizable_``, or None.

    c10 keeps the flag among the bools that follow the storage's byte size, so only the 8 bytes
    after that size (found by its value, inside the object) are candidates: nothing outside
    the StorageImpl is ever written. A candidate must read 1 in a resizable storage and 0 in a
    non-resizable one, and clearing it on a probe storage must make ``resizable()`` False and
    ``resize_`` raise, with the probe's memory unchanged.
    """
    import torch

    resizable = torch.UntypedStorage(4099)
    fixed = torch.frombuffer(bytearray(4101), dtype=torch.uint8).untyped_storage()
    if not resizable.resizable() or fixed.resizable():
        return None
    a = ctypes.string_at(resizable._cdata, _PROBE_BYTES)
    b = ctypes.string_at(fixed._cdata, _PROBE_BYTES)
    size_at = _size_offset(a, 4099)
    # _cdata is the StorageImpl only if it holds the data pointer and the size
    if size_at is None or size_at != _size_offset(b, 4101):
        return None
    if resizable.data_ptr().to_bytes(8, "little") not in a[:size_at]:
        return None
    found = []
    for offset in range(size_at + 8, size_at + 16):
        if a[offset] != 1 or b[offset] != 0:
            continue
        probe = torch.UntypedStorage(4099)
        if ctypes.string_at(probe._cdata + size_at, 8) != (4099).to_bytes(8, "little"):
            continue
        address = probe._cdata + offset
        ptr, size = probe.data_ptr(), probe.nbytes()
        ctypes.memset(address, 0, 1)
        try:
            refused = not probe.resizable()
            if refused:  # resizable() reads this byte, so resize_ checks it too
                try:
                    probe.resize_(0)
                    refused = False
                except RuntimeError:
                    pass
            unchanged = (probe.data_ptr(), probe.nbytes()) == (ptr, size)
        finally:
            ctypes.memset(address, 1, 1)
        if refused and unchanged and probe.resizable():
            found.append(offset)
    return found[0] if len(found) == 1 else None


def _native() -> Any:
    """The extension module that pins natively, once it is in use (see the module docstring)."""
    native = _pins.native
    if native is None:
        module = _native_describe.loaded_module()
        if module is None:
            return None
        with _pins.lock:
            if _pins.native is None and not _pins.counts:  # no Python pin is held
                _pins.native = module
            native = _pins.native
    return native


def pinning_available() -> bool:
    """Whether storages can be pinned with this torch (found on first use)."""
    if _pins.native is not None:
        return True
    with _pins.lock:
        if not _pins.probed:
            try:
                _pins.offset = _find_offset()
            except Exception:  # any surprise: leave storages alone
                _pins.offset = None
            _pins.probed = True
        return _pins.offset is not None


def _flag(impl: int, offset: int) -> Any:
    """The one-byte view of the flag of the StorageImpl at ``impl``. Cached by address: a view
    stays right for whichever StorageImpl lives at that address later (the layout is fixed)."""
    flags = _pins.flags
    view = flags.get(impl)
    if view is None:
        if len(flags) >= _MAX_FLAG_VIEWS:
            flags.clear()
        view = flags[impl] = (ctypes.c_ubyte * 1).from_address(impl + offset)
    return view


def pin_frame(frame: Any) -> Any:
    """Make every storage of ``frame`` non-resizable and check it was not changed since it
    was described; returns what :func:`unpin` releases.

    Raises:
        StorageChangedError: A storage no longer has the address in the frame (a resize always
            moves the memory; nothing stays pinned).
    """
    tensors = frame.tensors
    if not tensors:
        return ()
    native = _pins.native or _native()
    if native is not None:
        token = native.pin(tensors)
        if type(token) is int:
            raise _changed(tensors[token])
        return token
    if _pins.offset is None and not pinning_available():
        return ()
    offset = _pins.offset
    assert offset is not None
    held: list[int] = []
    with _pins.lock:
        counts, restore = _pins.counts, _pins.restore
        for t in tensors:
            storage = t.storage
            impl = storage._cdata
            count = counts.get(impl)
            if count is None:
                view = _flag(impl, offset)
                flag = view[0]
                restore[impl] = flag
                if flag:
                    view[0] = 0
                counts[impl] = 1
            else:
                counts[impl] = count + 1
            held.append(impl)
            # pinned: from here on its memory stays; check it is the memory described
            if storage.data_ptr() != t.storage_ptr:
                _release(held, offset)
                raise _changed(t)
    return tuple(held)


def _changed(t: Any) -> StorageChangedError:
    storage = t.storage
    return StorageChangedError(
        f"argument {t.name!r}: its storage was resized or replaced while the call was "
        f"being launched (described with {t.storage_nbytes} bytes at {t.storage_ptr:#x}, "
        f"now {storage.nbytes()} bytes at {storage.data_ptr():#x}); the kernel was not run"
    )


def unpin(pinned: Any) -> None:
    """Release pins taken by :func:`pin_frame` (once); the last release restores the flag."""
    if type(pinned) is not tuple:  # a native pin
        native = _pins.native
        assert native is not None
        native.unpin(pinned)
    elif pinned:
        offset = _pins.offset
        assert offset is not None
        with _pins.lock:
            _release(pinned, offset)


def _release(pinned: Sequence[int], offset: int) -> None:
    counts, restore = _pins.counts, _pins.restore
    for impl in pinned:
        count = counts[impl] - 1
        if count:
            counts[impl] = count
            continue
        del counts[impl]
        if restore.pop(impl):
            _flag(impl, offset)[0] = 1
