"""Worker-resident tensors of a ``DistributedWorker`` (one shared-memory segment each), and the
view a SubWorker callback receives of a dispatch's memory (:class:`ContinuousTensor`).

``worker.alloc_tensor(shape, dtype)`` gives a :class:`SharedDeviceTensor`: a row-major tensor in a
segment the worker owns, which every rank maps; it keeps its contents across dispatches and
across the programs of the worker until ``free_tensor`` or ``close``. Passed where a host tensor
is expected, a dispatch uses it in place (no copy in or out). ``alloc_stacked_tensor(host)``
gives a :class:`StackedDeviceTensor`: a ``[B, *tail]`` tensor whose shard ``i`` (``x[i]``) is
consumed by rank ``worker_ids[i]``.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import DataType
from pypto.runtime import host_tensors
from pypto.runtime.distributed import shm
from pypto.runtime.distributed.host_bytes import byte_array
from pypto.runtime.host_tensors import HostTensor, TensorBindingError, numpy_typestr

__all__ = ["ContinuousTensor", "SharedDeviceTensor", "StackedDeviceTensor"]


class SharedDeviceTensor:
    """A tensor resident in a ``DistributedWorker``'s shared memory, visible to every rank.

    ``shape``, ``dtype`` (as given to ``alloc_tensor``: a torch or numpy dtype or a DataType),
    ``data_type`` (that dtype as a DataType), ``nbytes``, ``data_ptr`` (its address in this
    process), ``worker`` and ``freed``. :meth:`numpy` is a view of its memory.
    """

    def __init__(
        self, worker: Any, segment: shm.Segment, shape: tuple[int, ...], dtype: Any, data_type: DataType
    ) -> None:
        self._worker = worker
        self._segment: shm.Segment | None = segment
        self.shape = shape
        self.dtype = dtype
        self.data_type = data_type
        self.nbytes = host_tensors.tensor_nbytes(shape, data_type)
        self._ptr = self._address()

    def _address(self) -> int:
        import numpy

        return int(numpy.frombuffer(self.segment.buf, dtype=numpy.uint8, count=1).ctypes.data)

    @property
    def worker(self) -> Any:
        """The DistributedWorker whose memory holds this tensor."""
        return self._worker

    @property
    def freed(self) -> bool:
        return self._segment is None

    @property
    def data_ptr(self) -> int:
        return self._ptr

    @property
    def segment(self) -> shm.Segment:
        if self._segment is None:
            raise TensorBindingError(
                f"{self!r}: this tensor was freed (free_tensor or the worker's close); allocate another"
            )
        return self._segment

    def numpy(self) -> Any:
        """A numpy view of this tensor's memory (valid until it is freed); a dtype numpy lacks
        (BF16, FP8) is a TypeError: copy it into a torch tensor with ``copy_from(t, out)``."""
        import numpy

        ts = numpy_typestr(self.data_type)
        if ts is None:
            raise TypeError(
                f"{self!r}.numpy(): numpy has no {self.data_type.value} type; copy it into a torch tensor "
                "with worker.copy_from(t, out)"
            )
        return numpy.ndarray(self.shape, dtype=numpy.dtype(ts), buffer=self.segment.buf)

    def bytes(self) -> Any:
        """A byte view of this tensor's memory (``host_bytes``: a uint8 array ``(*shape, itemsize)``)."""
        return byte_array(self.segment.buf, self.shape, self.data_type)

    def __pypto_host_tensor__(self, what: str) -> HostTensor:
        if self._segment is None:
            raise TensorBindingError(
                f"{what}: this SharedDeviceTensor was freed (free_tensor or close); allocate another"
            )
        return host_tensors.resident_view(self._ptr, self.shape, self.data_type, self)

    def __repr__(self) -> str:
        state = ", freed" if self._segment is None else ""
        return f"SharedDeviceTensor(shape={self.shape}, dtype={self.data_type.value}{state})"


class StackedDeviceTensor(SharedDeviceTensor):
    """A ``[B, *tail]`` worker-resident tensor whose shard ``i`` belongs to rank ``worker_ids[i]``:
    a host body's launch on rank ``r`` may take ``x[i]`` only where ``worker_ids[i] == r``."""

    def __init__(
        self,
        worker: Any,
        segment: shm.Segment,
        shape: tuple[int, ...],
        dtype: Any,
        data_type: DataType,
        *,
        worker_ids: tuple[int, ...],
    ) -> None:
        super().__init__(worker, segment, shape, dtype, data_type)
        self.worker_ids = worker_ids

    @property
    def full_shape(self) -> tuple[int, ...]:
        return self.shape

    def __repr__(self) -> str:
        state = ", freed" if self.freed else ""
        return (
            f"StackedDeviceTensor(full_shape={self.shape}, worker_ids={self.worker_ids}, "
            f"dtype={self.data_type.value}{state})"
        )


class ContinuousTensor:
    """A tensor argument of a SubWorker callback: a view of the dispatch's memory.

    ``buffer`` (a writable memoryview starting at the tensor's first element), ``shapes``,
    ``strides`` (in elements) and ``dtype`` (a ``pypto.ir.DataType``).
    ``pypto.runtime.distributed_runner._tensor_from_continuous(arg)`` makes a torch view of it;
    :meth:`numpy` a numpy view. Writes reach the caller's tensor when the dispatch ends.
    """

    __slots__ = ("buffer", "dtype", "shapes", "strides")

    def __init__(
        self, buffer: Any, shapes: tuple[int, ...], strides: tuple[int, ...], dtype: DataType
    ) -> None:
        self.buffer = buffer
        self.shapes = shapes
        self.strides = strides
        self.dtype = dtype

    def numpy(self) -> Any:
        import numpy

        ts = numpy_typestr(self.dtype)
        if ts is None:
            raise TypeError(
                f"ContinuousTensor.numpy(): numpy has no {self.dtype.value} type; view it as a torch tensor "
                "with pypto.runtime.distributed_runner._tensor_from_continuous(arg)"
            )
        item = self.dtype.itemsize
        return numpy.ndarray(
            self.shapes,
            dtype=numpy.dtype(ts),
            buffer=self.buffer,
            strides=tuple(s * item for s in self.strides),
        )

    def __repr__(self) -> str:
        return f"ContinuousTensor(shapes={self.shapes}, dtype={self.dtype.value})"
