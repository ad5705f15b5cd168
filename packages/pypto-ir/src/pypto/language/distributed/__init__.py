"""Multi-chip programs (``import pypto.language.distributed as pld``).

A ``@pl.jit.host`` orchestrator launches one ``@pl.jit`` program per rank (``device=r``). What it
can use here:

- ``pld.world_size()``: the number of ranks the program is compiled for (host body only).
- ``pld.alloc_window_buffer(shape, dtype)``: a window buffer, one window of ``shape`` in every
  rank, visible to the group (host body only).
- ``pld.window(buf, shape, dtype)``: a typed view of the launched rank's own window of ``buf``,
  passed to a per-device program as a ``pld.DistributedTensor`` argument (host body only).
- ``pld.DistributedTensor[[dims], dtype]``: the parameter annotation of a window view in a
  ``@pl.jit`` or ``@pl.jit.incore`` function; the kernel reads and writes it like an ``InOut``
  tensor in device memory.

Cross-rank operations on windows (remote loads/stores, put/get, notify/wait, barriers) are not
available yet: see docs/distributed.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.param_info import ParamDirection
from pypto.language import typing as _lt
from pypto.language.host_trace import WindowBufferDecl, WindowView, require_trace

__all__ = [
    "DistributedTensor",
    "DistributedTensorAnnotation",
    "alloc_window_buffer",
    "window",
    "world_size",
]


@dataclass(frozen=True)
class DistributedTensorAnnotation(_lt.TensorAnnotation):
    """The tensor annotation of a window view (``pld.DistributedTensor[[dims], dtype]``)."""


class _DistributedTensorMeta(type):
    def __getitem__(cls, item: Any) -> _lt.DirectionAnnotation:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"pld.DistributedTensor[...]: expected [shape, dtype], got {item!r}")
        tensor: Any = _lt.Tensor
        plain: _lt.TensorAnnotation = tensor[item[0], item[1]]
        ann = DistributedTensorAnnotation(plain.shape, plain.dtype, plain.layout)
        # a window is device memory the kernel both reads and writes
        return _lt.DirectionAnnotation(ParamDirection.INOUT, ann)


class DistributedTensor(metaclass=_DistributedTensorMeta):
    """A rank's window view, as a parameter annotation: ``pld.DistributedTensor[[1, 256], pl.FP32]``."""


def is_distributed_annotation(ann: Any) -> bool:
    """True for ``pld.DistributedTensor[...]`` (with or without its direction wrapper)."""
    if isinstance(ann, _lt.DirectionAnnotation):
        ann = ann.inner
    return isinstance(ann, DistributedTensorAnnotation)


def world_size() -> int:
    """The number of ranks of the program being compiled (in a ``@pl.jit.host`` body)."""
    return require_trace("pld.world_size()").world_size


def _shape(shape: Sequence[int], what: str) -> tuple[int, ...]:
    if isinstance(shape, int) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
    ):
        raise TypeError(f"{what}: expected a list of ints > 0, got {shape!r}")
    return tuple(shape)


def alloc_window_buffer(shape: Sequence[int], dtype: Any) -> WindowBufferDecl:
    """Declare a window buffer: every rank gets one window of ``shape`` and ``dtype``."""
    trace = require_trace("pld.alloc_window_buffer()")
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
    if got_shape != buf.shape or got_dtype is not buf.dtype:
        raise ValueError(
            f"pld.window(buf, shape, dtype): expected the buffer's shape {list(buf.shape)} and dtype "
            f"{buf.dtype.value}, got {list(got_shape)} and {got_dtype.value}"
        )
    return WindowView(buf, got_shape, got_dtype)
