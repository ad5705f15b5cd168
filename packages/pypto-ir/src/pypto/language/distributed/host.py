"""The host body's part of ``pld``: ``world_size``, ``alloc_window_buffer``, ``window`` (run while
a ``@pl.jit.host`` body is traced)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.language.host_trace import WindowBufferDecl, WindowView, require_trace

__all__ = ["alloc_window_buffer", "window", "world_size"]


def world_size() -> int:
    """The number of ranks of the program being compiled (in a ``@pl.jit.host`` body)."""
    return require_trace("pld.world_size()").world_size


def _shape(shape: Sequence[int] | int, what: str) -> tuple[int, ...]:
    if isinstance(shape, int) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
    ):
        raise TypeError(f"{what}: expected a list of ints > 0, got {shape!r}")
    return tuple(shape)


def alloc_window_buffer(size: int | Sequence[int], dtype: Any = None) -> WindowBufferDecl:
    """Declare a window buffer, one window in every rank: ``alloc_window_buffer(nbytes)`` (a size
    in bytes, as upstream's canonical form) or ``alloc_window_buffer(shape, dtype=...)``."""
    trace = require_trace("pld.alloc_window_buffer()")
    if isinstance(size, int) and not isinstance(size, bool):
        if dtype is not None:
            raise ValueError(
                "pld.alloc_window_buffer(size, dtype=...): dtype is given with a shape (a list of dims), "
                f"not with a byte size; got size {size} and dtype {dtype!r}"
            )
        if size <= 0:
            raise ValueError(f"pld.alloc_window_buffer(size): expected a byte size > 0, got {size}")
        return trace.alloc_window((size,), DataType.UINT8)
    if dtype is None:
        raise ValueError(
            f"pld.alloc_window_buffer(shape): a shape {size!r} needs dtype=...; a byte size is an int"
        )
    if isinstance(size, bool):
        raise TypeError(f"pld.alloc_window_buffer(size): expected a byte size or a shape, got {size!r}")
    return trace.alloc_window(
        _shape(size, "pld.alloc_window_buffer(shape)"),
        DataType.parse(dtype, what="pld.alloc_window_buffer(dtype)"),
    )


def window(buf: WindowBufferDecl, shape: Sequence[int], dtype: Any) -> WindowView:
    """A view of ``shape`` and ``dtype`` of the launched rank's own window of ``buf``: at its start,
    at most the buffer's bytes."""
    require_trace("pld.window()")
    if not isinstance(buf, WindowBufferDecl):
        raise TypeError(
            f"pld.window(buf): expected a pld.alloc_window_buffer(...) result, got {type(buf).__name__}"
        )
    got_shape = _shape(shape, "pld.window(shape)")
    got_dtype = DataType.parse(dtype, what="pld.window(dtype)")
    need = math.prod(got_shape) * got_dtype.itemsize
    have = math.prod(buf.shape) * buf.dtype.itemsize
    if need > have:
        raise ValueError(
            f"pld.window(buf, shape, dtype): a {list(got_shape)} {got_dtype.value} view needs {need} bytes, "
            f"the buffer has {have}"
        )
    return WindowView(buf, got_shape, got_dtype)
