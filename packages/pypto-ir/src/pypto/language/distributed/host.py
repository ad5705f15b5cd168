"""The host body's part of ``pld``: ``world_size``, ``alloc_window_buffer``, ``window`` (run while
a ``@pl.jit.host`` body is traced)."""

from __future__ import annotations

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


def alloc_window_buffer(shape: Sequence[int] | int, dtype: Any = None) -> WindowBufferDecl:
    """Declare a window buffer: every rank gets one window of ``shape`` and ``dtype``, or, given
    an int and no dtype (upstream's byte form), of that many bytes, which ``pld.window`` views
    as any shape and dtype that fit."""
    trace = require_trace("pld.alloc_window_buffer()")
    if isinstance(shape, int) and not isinstance(shape, bool) and dtype is None:
        if shape <= 0:
            raise ValueError(f"pld.alloc_window_buffer(size): expected a byte count > 0, got {shape}")
        return trace.alloc_window((shape,), DataType.UINT8, raw=True)
    if dtype is None:
        raise TypeError(
            "pld.alloc_window_buffer(shape, dtype): a shape needs its dtype (or pass a byte count alone)"
        )
    return trace.alloc_window(
        _shape(shape, "pld.alloc_window_buffer(shape)"),
        DataType.parse(dtype, what="pld.alloc_window_buffer(dtype)"),
    )


def window(buf: WindowBufferDecl, shape: Sequence[int], dtype: Any) -> WindowView:
    """A view of the launched rank's own window of ``buf`` (the buffer's shape and dtype)."""
    require_trace("pld.window()")
    if not isinstance(buf, WindowBufferDecl):
        raise TypeError(
            f"pld.window(buf): expected a pld.alloc_window_buffer(...) result, got {type(buf).__name__}"
        )
    got_shape = _shape(shape, "pld.window(shape)")
    got_dtype = DataType.parse(dtype, what="pld.window(dtype)")
    if buf.raw:
        nbytes = got_dtype.itemsize
        for d in got_shape:
            nbytes *= d
        if nbytes > buf.shape[0]:
            raise ValueError(
                f"pld.window(buf, shape, dtype): a {list(got_shape)} {got_dtype.value} view is {nbytes} bytes, "
                f"more than the buffer's {buf.shape[0]}"
            )
        return WindowView(buf, got_shape, got_dtype)
    if got_shape != buf.shape or got_dtype is not buf.dtype:
        raise ValueError(
            f"pld.window(buf, shape, dtype): expected the buffer's shape {list(buf.shape)} and dtype "
            f"{buf.dtype.value}, got {list(got_shape)} and {got_dtype.value}"
        )
    return WindowView(buf, got_shape, got_dtype)
