"""The immutable records of one described call: TensorArgument, ScalarArgument, CallFrame.

They are named tuples so that describing a call costs one tuple allocation per record
(a frozen dataclass pays one ``object.__setattr__`` per field, which was most of the cost of
``describe_call``). The attributes are the public surface; assignment raises AttributeError.
TensorArgument and CallFrame compare and hash by identity (a frame is one call's snapshot,
and tensors compare elementwise); ScalarArgument compares by value, only with another
ScalarArgument. Their reprs leave out the retained tensor, storage and signature objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from pypto.ir import DataType, Layout, ParamDirection

if TYPE_CHECKING:
    from pypto.torch.interop import CallSignature

__all__ = ["CallFrame", "ScalarArgument", "TensorArgument"]


def _fields_repr(record: tuple[Any, ...], names: tuple[str, ...], hidden: frozenset[str]) -> str:
    shown = ", ".join(f"{n}={v!r}" for n, v in zip(names, record, strict=True) if n not in hidden)
    return f"{type(record).__name__}({shown})"


class TensorArgument(NamedTuple):
    """One borrowed tensor of a call, in signature order.

    Attributes:
        param_index: Index of its parameter in the complete signature (scalars counted).
        name, direction, dtype, layout: From the parameter.
        shape: The logical torch shape (dynamic dimensions filled in).
        strides: Row-major strides of that shape in elements. The view is contiguous, so
            these address exactly its elements (torch may report other strides for
            size-1 dimensions).
        storage_offset: Offset of the first element in the storage, in elements.
        format: The storage format code (0 NCHW, 2 ND, 29 fractal NZ).
        data_ptr: The logical pointer: storage base + storage_offset * element size.
        storage_ptr: Base address of the storage.
        storage_nbytes: Capacity of the storage in bytes.
        nbytes: Bytes the call may access from ``data_ptr`` (0 for an empty view; the
            whole physical matrix for an NZ input).
        physical_shape: The physical NZ dimensions, or None for base-format tensors.
        tensor: The caller's tensor object (retained).
        storage: Its storage object (retained).
    """

    param_index: int
    name: str
    direction: ParamDirection
    dtype: DataType
    layout: Layout
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    storage_offset: int
    format: int
    data_ptr: int
    storage_ptr: int
    storage_nbytes: int
    nbytes: int
    physical_shape: tuple[int, ...] | None
    tensor: Any
    storage: Any

    @property
    def element_size(self) -> int:
        return self.dtype.itemsize

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return object.__hash__(self)

    def __repr__(self) -> str:
        return _fields_repr(self, self._fields, _TENSOR_HIDDEN)


_TENSOR_HIDDEN = frozenset({"tensor", "storage"})


class ScalarArgument(NamedTuple):
    """One scalar of a call: its validated value and declared dtype, not encoded.

    Attributes:
        param_index: Index of its parameter in the complete signature.
        name, dtype: From the parameter.
        value: A Python bool, int or float (a copy of a ctypes input).
    """

    param_index: int
    name: str
    dtype: DataType
    value: bool | int | float

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return tuple.__hash__(self)


class CallFrame(NamedTuple):
    """One call's immutable snapshot: everything a kernel-mode encoder consumes.

    Tensor and scalar order is signature order; it does not define a native layout. The
    addresses, scalar values and stream are per-call state, never compilation keys.

    Attributes:
        signature: The CallSignature that described the call.
        platform: The platform string (``"a2a3"``, ``"a2a3sim"``, ...).
        tensors: Tensor arguments in signature order.
        scalars: Scalar arguments in signature order.
        device_index: The current device, equal to every tensor's device.
        stream: This call's current stream object (retained).
        return_tensors: The caller's tensor objects chosen by the return aliases.
    """

    signature: CallSignature
    platform: str
    tensors: tuple[TensorArgument, ...]
    scalars: tuple[ScalarArgument, ...]
    device_index: int
    stream: object
    return_tensors: tuple[Any, ...]

    def alias_result(self) -> Any:
        """None, the one returned tensor, or a tuple of them: existing objects, never new ones."""
        returned = self.return_tensors
        if not returned:
            return None
        if len(returned) == 1:
            return returned[0]
        return returned

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return object.__hash__(self)

    def __repr__(self) -> str:
        return _fields_repr(self, self._fields, _FRAME_HIDDEN)


_FRAME_HIDDEN = frozenset({"signature", "return_tensors"})
