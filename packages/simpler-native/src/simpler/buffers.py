"""Buffers (device storage, borrowed or owned) and Tensor views over them.

On the simulated chip device memory is host memory: ``Buffer.wrap`` borrows caller storage
(numpy or torch CPU data pointers) with no copy, ``Buffer.allocate`` owns fresh 64-byte aligned
storage. A :class:`Tensor` is an address-free view: buffer + shape + dtype + strides (elements)
+ byte offset; simpler turns it into a ChipTensor descriptor when a run is submitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simpler import _native
from simpler._dtypes import DataType, dtype_code, dtype_itemsize_bits, dtype_name

__all__ = ["Buffer", "Tensor"]

_MAX_DIMS: int = _native.kernel.MAX_TENSOR_DIMS  # bound from simpler/wire
_U32 = (1 << 32) - 1


class Buffer:
    """A span of device memory: ``ptr`` (an address) and ``nbytes``.

    Create with :meth:`wrap` (borrowed) or :meth:`allocate` (owned). Not constructed directly.

    Example::

        a = numpy.arange(8, dtype=numpy.float32)
        buf = Buffer.wrap(a.ctypes.data, a.nbytes, owner=a)
        t = buf.tensor((8,), "FLOAT32")
    """

    __slots__ = ("_nbytes", "_owner", "_ptr", "borrowed")

    def __init__(self, ptr: int, nbytes: int, owner: Any, borrowed: bool) -> None:
        self._ptr = ptr
        self._nbytes = nbytes
        self._owner = owner
        self.borrowed = borrowed

    @classmethod
    def wrap(cls, ptr: int, nbytes: int, *, owner: Any = None) -> Buffer:
        """Borrow ``nbytes`` at address ``ptr``; ``owner`` is kept alive as long as the Buffer."""
        if isinstance(ptr, bool) or not isinstance(ptr, int) or ptr <= 0 or ptr >= 1 << 64:
            raise ValueError(f"Buffer.wrap(ptr): expected a nonzero 64-bit address, got {ptr!r}")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0 or ptr + nbytes > 1 << 64:
            raise ValueError(
                f"Buffer.wrap(nbytes): expected a byte count >= 0 within the address space, got {nbytes!r}"
            )
        return cls(ptr, nbytes, owner, True)

    @classmethod
    def allocate(cls, nbytes: int) -> Buffer:
        """Own ``nbytes`` of fresh zero-filled, 64-byte aligned storage."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"Buffer.allocate(nbytes): expected a byte count > 0, got {nbytes!r}")
        block = _native.HostBlock(nbytes)
        return cls(int(block.ptr), nbytes, block, False)

    @property
    def ptr(self) -> int:
        return self._ptr

    @property
    def nbytes(self) -> int:
        return self._nbytes

    @property
    def owner(self) -> Any:
        return self._owner

    def tensor(
        self,
        shape: Sequence[int],
        dtype: Any,
        strides: Sequence[int] | None = None,
        byte_offset: int = 0,
    ) -> Tensor:
        """A view of this buffer (``strides`` in elements, row-major when None)."""
        return Tensor(self, shape, dtype, strides, byte_offset)

    def memoryview(self) -> memoryview:
        """Writable bytes of the whole buffer (the storage must stay alive)."""
        import ctypes

        return memoryview((ctypes.c_char * self._nbytes).from_address(self._ptr)).cast("B")

    def __repr__(self) -> str:
        kind = "borrowed" if self.borrowed else "owned"
        return f"Buffer(ptr=0x{self._ptr:x}, nbytes={self._nbytes}, {kind})"


class Tensor:
    """A typed, strided view of a :class:`Buffer` (use :meth:`Buffer.tensor`)."""

    __slots__ = ("_code", "buffer", "byte_offset", "dtype", "shape", "strides")

    def __init__(
        self,
        buffer: Buffer,
        shape: Sequence[int],
        dtype: Any,
        strides: Sequence[int] | None = None,
        byte_offset: int = 0,
    ) -> None:
        if not isinstance(buffer, Buffer):
            raise TypeError(f"Tensor(buffer): expected a simpler.Buffer, got {type(buffer).__name__}")
        code = dtype_code(dtype, what="tensor(dtype)")
        shape_t = tuple(shape)
        if not 1 <= len(shape_t) <= _MAX_DIMS:
            raise ValueError(f"tensor(shape): expected 1..{_MAX_DIMS} dimensions, got {len(shape_t)}")
        for i, d in enumerate(shape_t):
            if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= _U32:
                raise ValueError(f"tensor(shape): dimension {i} must be an int in [0, 2^32), got {d!r}")
        if strides is None:
            acc = 1
            rev = []
            for d in reversed(shape_t):
                rev.append(acc)
                acc *= max(d, 1)
            strides_t = tuple(reversed(rev))
        else:
            strides_t = tuple(strides)
            if len(strides_t) != len(shape_t):
                raise ValueError(f"tensor(strides): expected {len(shape_t)} strides, got {len(strides_t)}")
        for i, s in enumerate(strides_t):
            if isinstance(s, bool) or not isinstance(s, int) or not 0 < s <= _U32:
                raise ValueError(
                    f"tensor(strides): stride {i} must be an int in [1, 2^32) elements, got {s!r}"
                )
        bits = dtype_itemsize_bits(code)
        if isinstance(byte_offset, bool) or not isinstance(byte_offset, int) or byte_offset < 0:
            raise ValueError(f"tensor(byte_offset): expected an int >= 0, got {byte_offset!r}")
        if (byte_offset * 8) % bits != 0:
            raise ValueError(
                f"tensor(byte_offset): expected a multiple of the {dtype_name(code)} element size, got {byte_offset}"
            )
        if 0 not in shape_t:
            extent = 1 + sum((d - 1) * s for d, s in zip(shape_t, strides_t, strict=True))
            end_bits = (byte_offset * 8) + extent * bits
            if end_bits > buffer.nbytes * 8:
                raise ValueError(
                    f"tensor: view of shape {shape_t}, strides {strides_t}, byte_offset {byte_offset} "
                    f"needs {(end_bits + 7) // 8} bytes, but the buffer holds {buffer.nbytes}"
                )
        self.buffer = buffer
        self.shape = shape_t
        self._code = code
        self.dtype = DataType(code)
        self.strides = strides_t
        self.byte_offset = byte_offset

    @property
    def dtype_code(self) -> int:
        return self._code

    @property
    def nbytes(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return (n * dtype_itemsize_bits(self.dtype_code) + 7) // 8

    def descriptor(self) -> tuple[int, int, int, tuple[int, ...], tuple[int, ...], int]:
        """(addr, size, dtype, shape, strides, start_offset in elements): the ChipTensor fields."""
        start = self.byte_offset * 8 // dtype_itemsize_bits(self.dtype_code)
        return (self.buffer.ptr, self.buffer.nbytes, self.dtype_code, self.shape, self.strides, start)

    def __repr__(self) -> str:
        return (
            f"Tensor(shape={self.shape}, dtype={dtype_name(self.dtype_code)}, strides={self.strides}, "
            f"byte_offset={self.byte_offset}, buffer={self.buffer!r})"
        )
