"""Host tensors and windows of a multi-chip program as raw bytes, whatever their element type.

Host tensors and windows cross processes (shared memory, the store under torchrun) as bytes: a
*byte array* is a numpy ``uint8`` array of shape ``(*shape, itemsize)`` (its last axis the bytes
of one element), so BF16 and FP8 tensors, which numpy has no type for, move like any other and
``x[r]`` indexes one as it indexes the tensor. :func:`host_bytes` is such a view of the caller's
tensor (numpy, CPU torch, a resident tensor or a buffer); a rank hands its byte arrays to its
program as :class:`ByteTensor`, a host tensor that describes itself (bytes + DataType), which is
all the Worker's buffers need. Element types narrower than a byte (FP4) are refused.
"""

from __future__ import annotations

import ctypes
from typing import Any

from pypto.ir import DataType
from pypto.runtime.host_tensors import HostTensor, TensorBindingError, describe

__all__ = ["ByteTensor", "byte_array", "element_size", "host_bytes"]


def element_size(dtype: DataType, what: str) -> int:
    """Bytes per element of ``dtype``; an element narrower than a byte is an error naming ``what``."""
    if dtype.bits % 8:
        raise TypeError(
            f"{what}: dtype {dtype.value} packs {8 // dtype.bits} elements into a byte; distributed host "
            "tensors and windows hold whole-byte elements (FP32, FP16, BF16, FP8, integer and bool types)"
        )
    return dtype.itemsize


def byte_array(buffer: Any, shape: tuple[int, ...], dtype: DataType, offset: int = 0) -> Any:
    """The byte array of a row-major ``shape`` tensor of ``dtype`` at ``offset`` in ``buffer``."""
    import numpy

    size = element_size(dtype, "byte_array(dtype)")
    return numpy.ndarray((*shape, size), dtype=numpy.uint8, buffer=buffer, offset=offset)


def host_bytes(value: Any, what: str, *, write: bool = False) -> Any:
    """A byte array over the memory of the host tensor ``value`` (no copy): a numpy array, a CPU
    torch tensor, a resident tensor or a buffer-protocol object. ``write``: the caller writes
    through it, so a read-only array is refused."""
    import numpy

    view = describe(value, what=what)
    if write and view.readonly:
        raise TensorBindingError(f"{what}: the results are written into it, but the array is read-only")
    size = element_size(view.dtype, what)
    shape = (*view.shape, size)
    strides = (*(s * size for s in view.strides), 1)
    if view.span_bytes == 0:
        return numpy.zeros(shape, dtype=numpy.uint8)
    storage = numpy.ctypeslib.as_array((ctypes.c_uint8 * view.storage_nbytes).from_address(view.storage_ptr))
    return numpy.lib.stride_tricks.as_strided(storage[view.offset_bytes :], shape=shape, strides=strides)


class ByteTensor:
    """A host tensor given by its byte array and DataType: ``shape``, ``dtype`` (the DataType),
    ``data`` (the byte array); ``t[i]`` indexes it like the tensor. The program runner reads it
    through ``__pypto_host_tensor__``."""

    __slots__ = ("data", "dtype")

    def __init__(self, data: Any, dtype: DataType) -> None:
        self.data = data
        self.dtype = dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.data.shape[:-1])

    def __getitem__(self, index: Any) -> ByteTensor:
        if not isinstance(index, int):
            raise TypeError(f"ByteTensor[{index!r}]: expected an int index along the first axis")
        if not self.shape:
            raise IndexError("ByteTensor: a 0-d tensor has no axis to index")
        return ByteTensor(self.data[index], self.dtype)

    def __pypto_host_tensor__(self, what: str) -> HostTensor:
        import numpy

        a = self.data
        size = a.shape[-1]
        shape = self.shape
        strides = tuple(int(s) // size for s in a.strides[:-1])
        root = a
        while isinstance(root.base, numpy.ndarray):
            root = root.base
        ptr = int(a.__array_interface__["data"][0])
        base = int(root.__array_interface__["data"][0])
        span = (1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))) * size if a.size else 0
        return HostTensor(
            ptr, span, shape, strides, self.dtype, self, not a.flags.writeable, base, int(root.nbytes)
        )

    def __repr__(self) -> str:
        return f"ByteTensor(shape={self.shape}, dtype={self.dtype.value})"
