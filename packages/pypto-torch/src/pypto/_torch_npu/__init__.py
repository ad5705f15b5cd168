"""The optional native adapter between pypto.torch and torch_npu.

This pure-Python part ships in every pypto-torch wheel; the native module
``pypto._torch_npu._native`` exists only where the adapter was built
(``packages/pypto-torch/native``, configured with ``-Dtorch_npu=enabled`` in a Python that has
torch and torch_npu). Importing this package imports torch_npu and then the native module, and
each failure raises :class:`AdapterUnavailable` (an ImportError) that says which part is missing
and how to get it. pypto.torch imports it lazily, from its NPU platform only.

The native module answers what torch_npu's Python API does not: ``storage_descriptor(tensor)``
(format code, storage dimensions, storage offset and bytes of an NPU tensor's storage),
``current_device()``, ``bind_context(device)`` (bind the calling thread to the framework's
context of ``device``; returns the context's address) and ``anchor(obj)`` (keep ``obj`` alive
until the process exits, for state that must not be destroyed after the framework's teardown).
"""

from __future__ import annotations

import importlib

from pypto._npu_advice import explain_torch_npu_failure

__all__ = [
    "AdapterUnavailable",
    "anchor",
    "anchored_count",
    "bind_context",
    "current_device",
    "storage_descriptor",
]


class AdapterUnavailable(ImportError):
    """torch_npu, its CANN runtime, or the adapter's native module cannot be loaded."""


def _load() -> object:
    try:
        importlib.import_module("torch_npu")
    except (ImportError, OSError) as exc:
        raise AdapterUnavailable(
            f"pypto._torch_npu needs torch_npu: {explain_torch_npu_failure(exc)}"
        ) from exc
    try:
        return importlib.import_module("pypto._torch_npu._native")
    except ImportError as exc:
        raise AdapterUnavailable(
            f"pypto._torch_npu's native module is not built in this installation ({exc}); build it with "
            "`meson setup build packages/pypto-torch/native -Dtorch_npu=enabled && meson install -C build` "
            "in this Python (see docs/pypto-torch.md, 'The optional torch_npu adapter')"
        ) from exc


_native = _load()
storage_descriptor = _native.storage_descriptor  # type: ignore[attr-defined]
current_device = _native.current_device  # type: ignore[attr-defined]
bind_context = _native.bind_context  # type: ignore[attr-defined]
anchor = _native.anchor  # type: ignore[attr-defined]
anchored_count = _native.anchored_count  # type: ignore[attr-defined]
