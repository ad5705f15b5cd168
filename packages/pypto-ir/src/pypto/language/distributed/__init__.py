"""Multi-chip programs (``import pypto.language.distributed as pld``).

A ``@pl.jit.host`` orchestrator launches one ``@pl.jit`` program per rank (``device=r``).

Host body (traced once at compile time):

- ``pld.world_size()``: the number of ranks the program is compiled for.
- ``pld.alloc_window_buffer(shape, dtype)`` (``pld.tensor.alloc_window_buffer``): a window
  buffer, one window of ``shape`` in every rank, visible to the group.
- ``pld.window(buf, shape, dtype)`` (``pld.tensor.window``): a typed view of the launched
  rank's own window of ``buf``, passed to a per-device program as a ``pld.DistributedTensor``.
- ``pld.DistributedTensor[[dims], dtype]``: the parameter annotation of a window view in a
  ``@pl.jit`` or ``@pl.jit.incore`` function; the kernel reads and writes it like an ``InOut``
  tensor in device memory.

Kernels (``@pl.jit.incore`` or ``pl.at`` scopes; each op becomes PTO-ISA communication
instructions, TPUT/TGET/TNOTIFY/TWAIT and the collectives' schedules of them, or TLOAD/TSTORE on a
peer's window; docs/tile-interface.md, "Communication instructions"):

- ``ctx = pld.get_comm_ctx(window)``, ``pld.rank(ctx)``, ``pld.nranks(ctx)`` (also under
  ``pld.system``);
- ``pld.system.notify(target, peer=, offsets=, value=, op=pld.NotifyOp.AtomicAdd|Set)`` and
  ``pld.system.wait(signal, offsets=, expected=, cmp=pld.WaitCmp.Eq|Ge)`` on INT32 windows;
- ``pld.tensor.barrier(signal)``: every rank waits for all (reusable; leaves no tally);
- ``pld.tile.remote_load(target, peer=, offsets=, shape=)`` (``pld.remote_load``) and
  ``pld.tile.remote_store(tile, target, peer=, offsets=, atomic=)`` (``pld.remote_store``);
- ``pld.tensor.put(dst, peer=, src=, atomic=pld.AtomicType.None_|Add)`` and
  ``pld.tensor.get(dst, peer=, src=)``: copies to or from a peer (whole windows, or regions with
  ``dst_offsets=``, ``src_offsets=``, ``shape=``);
- ``pld.system.defer_wait(signal, offsets=, expected=, cmp=pld.WaitCmp.Ge)``: the task completes
  once the cell holds;
- collectives: ``pld.tensor.allreduce(target, signal, op=pld.ReduceOp.Sum, mode="mesh"|"ring")``,
  ``broadcast(target, signal, root=)``, ``allgather(local_data, target, signal)``,
  ``reduce_scatter(target, signal, op=)``, ``all_to_all(input, target, signal)``,
  ``all_to_all_v(input, target, signal, send_counts, recv_counts)``.

What is simulated and how: docs/distributed.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pypto.ir.param_info import ParamDirection
from pypto.ir.types import AtomicType, NotifyOp, ReduceOp, WaitCmp
from pypto.language import typing as _lt
from pypto.language.distributed import system, tensor, tile
from pypto.language.distributed._ops import get_comm_ctx, nranks, rank, remote_load, remote_store
from pypto.language.distributed.host import alloc_window_buffer, window, world_size

__all__ = [
    "AtomicType",
    "DistributedTensor",
    "DistributedTensorAnnotation",
    "NotifyOp",
    "ReduceOp",
    "WaitCmp",
    "alloc_window_buffer",
    "get_comm_ctx",
    "nranks",
    "rank",
    "remote_load",
    "remote_store",
    "system",
    "tensor",
    "tile",
    "window",
    "world_size",
]


@dataclass(frozen=True)
class DistributedTensorAnnotation(_lt.TensorAnnotation):
    """The tensor annotation of a window view (``pld.DistributedTensor[[dims], dtype]``)."""

    window = True  # what the parser reads (it cannot import this package, which imports it)


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
