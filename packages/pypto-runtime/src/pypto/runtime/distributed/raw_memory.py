"""The raw-pointer side of a ``DistributedWorker``'s memory: ``malloc``, ``free`` and byte copies.

``worker.malloc(nbytes)`` returns the address (an int) of a block of ``nbytes`` bytes of the
worker's memory, a resident tensor of its own (``uint8``, ``[nbytes]``) that lives until
``worker.free(ptr)`` or ``close``. ``worker.copy_to(dst_ptr, src_host_ptr, nbytes)`` and
``worker.copy_from(dst_host_ptr, src_ptr, nbytes)`` copy bytes between a host address and the
worker's memory: ``dst_ptr``/``src_ptr`` may be any address inside a live block of this worker
(a ``malloc`` block or a resident tensor's ``data_ptr`` range), and the whole range must lie in
that block. :class:`RawMemory` keeps the blocks and checks each pointer.
"""

from __future__ import annotations

import ctypes
from typing import Any

from pypto.runtime.distributed.tensors import SharedDeviceTensor

__all__ = ["RawMemory"]


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"DistributedWorker.{what}: expected an int > 0, got {value!r}")
    return value


def _address(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TypeError(f"DistributedWorker.{what}: expected an address (an int > 0), got {value!r}")
    return value


class RawMemory:
    """The ``malloc`` blocks of one worker (address -> the resident tensor holding it) and the
    addresses freed since, so that a second ``free`` is told apart from an unknown pointer."""

    def __init__(self) -> None:
        self.blocks: dict[int, SharedDeviceTensor] = {}
        self.freed: set[int] = set()

    def add(self, block: SharedDeviceTensor) -> int:
        ptr = block.data_ptr
        self.blocks[ptr] = block
        self.freed.discard(ptr)  # the address of a freed block may come back
        return ptr

    def take(self, ptr: Any, worker_id: int) -> SharedDeviceTensor:
        """The block ``ptr`` starts, removed from the live ones (``free``)."""
        address = _address(ptr, "free(ptr)")
        block = self.blocks.pop(address, None)
        if block is None:
            if address in self.freed:
                raise ValueError(
                    f"DistributedWorker.free(ptr): {address:#x} was already freed (a second free of one block)"
                )
            raise ValueError(
                f"DistributedWorker.free(ptr): {address:#x} is not a block of this worker; expected an "
                f"address malloc(..., worker_id={worker_id}) returned"
            )
        self.freed.add(address)
        return block

    def span(self, tensors: Any, ptr: Any, nbytes: Any, what: str) -> Any:
        """A writable byte view of ``[ptr, ptr + nbytes)`` of the worker's memory, which must lie
        inside one live block (``malloc``) or resident tensor (``tensors``: the live ones)."""
        import numpy

        address = _address(ptr, f"{what}(ptr)")
        size = _positive_int(nbytes, f"{what}(nbytes)")
        live: list[SharedDeviceTensor] = [*self.blocks.values(), *tensors]
        for t in live:
            base = t.data_ptr
            if base <= address < base + t.nbytes:
                if address + size > base + t.nbytes:
                    raise ValueError(
                        f"DistributedWorker.{what}: {size} bytes at {address:#x} run past the end of the "
                        f"block at {base:#x} ({t.nbytes} bytes; {base + t.nbytes - address} left from that address)"
                    )
                flat = numpy.frombuffer(t.segment.buf, dtype=numpy.uint8, count=t.nbytes)
                return flat[address - base : address - base + size]
        if address in self.freed:
            raise ValueError(f"DistributedWorker.{what}: {address:#x} was freed; malloc another block")
        raise ValueError(
            f"DistributedWorker.{what}: {address:#x} is not in this worker's memory; expected an address "
            "inside a block from malloc or a resident tensor (alloc_tensor) of this worker"
        )

    @staticmethod
    def host(ptr: Any, nbytes: int, what: str) -> Any:
        """A byte view of ``nbytes`` of this process's memory at the host address ``ptr``."""
        import numpy

        address = _address(ptr, what)
        return numpy.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))
