"""Call frames on borrowed tensors: one torch call described for a kernel-mode launch.

:class:`CallSignature` keeps a kernel's immutable ParamInfo signature and its return
aliases. :meth:`CallSignature.describe_call` validates one call's arguments and returns a
new immutable :class:`CallFrame`: the tensors (with their storage facts), the scalars (typed
values), the current device and stream, and the caller's objects that the operator returns.

The order of work is fixed: bind every parameter (Out/InOut included) first, then validate
each argument, then query the current device and stream. Nothing here switches devices,
caches a stream, synchronizes, enqueues work, copies a tensor, converts a format or
allocates an output.

A frame retains each tensor and its storage object. Python ownership alone does not protect
asynchronous device use after the frame is released (that is the launch layer's job), and
callers must not resize or free borrowed storage while a frame is in use.

Example:
    >>> import torch
    >>> from pypto.ir.param_info import ParamInfo
    >>> sig = CallSignature(
    ...     [ParamInfo("x", "In", [-1], "FP32"), ParamInfo("out", "Out", [-1], "FP32"),
    ...      ParamInfo("alpha", "In", None, "FP32")],
    ...     return_aliases=[1], platform="a2a3sim")
    >>> x, out = torch.ones(4), torch.empty(4)
    >>> frame = sig.describe_call([x, out, 2.0])
    >>> frame.alias_result() is out, frame.device_index, frame.scalars[0].value
    (True, 0, 2.0)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Any

import torch
from pypto.ir.dtypes import DataType
from pypto.ir.param_info import (
    Layout,
    ParamDirection,
    ParamInfo,
    SignatureError,
    bind_complete_args,
    validate_param_names,
    validate_return_aliases,
)
from pypto.torch._dtypes import to_torch_dtype
from pypto.torch._platform import (
    FORMAT_FRACTAL_NZ,
    FORMAT_NCHW,
    FORMAT_ND,
    DevicePlatform,
    PhysicalDescriptor,
    platform_for,
)
from pypto.torch._validation import ArgumentError, check_scalar, check_tensor_signature, describe_param
from torch._subclasses.fake_tensor import is_fake
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

__all__ = [
    "ArgumentError",
    "CallFrame",
    "CallSignature",
    "ScalarArgument",
    "TensorArgument",
    "nz_physical_shape",
]

_BASE_FORMATS = (FORMAT_NCHW, FORMAT_ND)
_NZ_DTYPES = (DataType.FP16, DataType.BF16, DataType.INT8)
_SCALAR_FLOATS = (DataType.FP32, DataType.FP16, DataType.BF16)
_NZ_PLATFORM = "a2a3"
_NZ_BLOCK_ROWS = 16
_NZ_BLOCK_BYTES = 32


def nz_physical_shape(logical: Sequence[int], itemsize: int) -> tuple[int, ...] | None:
    """The complete, unpadded fractal NZ storage shape of a logical [R, C] or [B, R, C] matrix.

    ``[R, C]`` is stored as ``[C / C0, R / 16, 16, C0]`` with ``C0 = 32 / itemsize``
    elements (one 32-byte block row); a leading batch dimension stays in front. Returns
    None when R or C is not a whole number of blocks (the storage would be padded).
    """
    if len(logical) not in (2, 3) or itemsize <= 0 or _NZ_BLOCK_BYTES % itemsize:
        return None
    c0 = _NZ_BLOCK_BYTES // itemsize
    *batch, rows, cols = logical
    if rows % _NZ_BLOCK_ROWS or cols % c0:
        return None
    return (*batch, cols // c0, rows // _NZ_BLOCK_ROWS, _NZ_BLOCK_ROWS, c0)


@dataclass(frozen=True, slots=True, eq=False)
class TensorArgument:
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
    tensor: Any = field(repr=False)
    storage: Any = field(repr=False)

    @property
    def element_size(self) -> int:
        return self.dtype.itemsize


@dataclass(frozen=True, slots=True)
class ScalarArgument:
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


@dataclass(frozen=True, slots=True, eq=False)
class CallFrame:
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

    signature: CallSignature = field(repr=False)
    platform: str
    tensors: tuple[TensorArgument, ...]
    scalars: tuple[ScalarArgument, ...]
    device_index: int
    stream: object
    return_tensors: tuple[Any, ...] = field(repr=False)

    def alias_result(self) -> Any:
        """None, the one returned tensor, or a tuple of them: existing objects, never new ones."""
        if not self.return_tensors:
            return None
        if len(self.return_tensors) == 1:
            return self.return_tensors[0]
        return self.return_tensors


@dataclass(frozen=True, slots=True)
class _TensorSlot:
    index: int
    param: ParamInfo
    torch_dtype: Any
    nz_admitted: bool
    rank: int
    itemsize: int
    static_dims: tuple[tuple[int, int], ...]  # (axis, extent) of every static dimension


# Exactly these types take the fast path; any other tensor type (FakeTensor, functional or
# other wrapper subclasses) is examined by _reject_non_plain_tensor first.
_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def _fail(slot: _TensorSlot, problem: str) -> ArgumentError:
    return ArgumentError(f"describe_call: {describe_param(slot.index, slot.param)}: {problem}")


def _reject_non_plain_tensor(slot: _TensorSlot, arg: object) -> None:
    """Raise for anything but a real tensor; return for a subclass that holds real storage."""
    if not isinstance(arg, torch.Tensor):
        module = type(arg).__module__
        if module.split(".")[0] in ("simpler", "pypto"):
            raise _fail(
                slot,
                f"got a Worker-owned {module}.{type(arg).__qualname__}; kernel mode borrows framework tensors only",
            )
        raise _fail(slot, f"expected a torch.Tensor, got {type(arg).__name__}")
    if is_fake(arg):
        raise _fail(
            slot, "got a Fake tensor, which has no device storage; describe_call needs real device tensors"
        )
    if is_traceable_wrapper_subclass(arg):
        raise _fail(
            slot,
            f"got a {type(arg).__name__} wrapper tensor; describe_call needs the real device tensor it wraps",
        )


class CallSignature:
    """A kernel's signature as call description sees it: ParamInfo list, return aliases, platform.

    Args:
        params: The logical ParamInfo signature (kept as an immutable tuple).
        return_aliases: Indices into ``params`` (scalar slots counted) of the tensors the
            operator returns; they may repeat.
        platform: A platform string (``"a2a3sim"`` by default, ``"a2a3"``, ...) or a
            :class:`~pypto.torch._platform.DevicePlatform` that answers device and stream
            queries.

    Raises:
        SignatureError: Repeated names, invalid aliases or a dtype this torch cannot carry.
        ValueError: An unknown platform.
    """

    __slots__ = ("_platform", "_scalar_slots", "_tensor_slots", "params", "return_aliases")

    def __init__(
        self,
        params: Iterable[ParamInfo],
        return_aliases: Iterable[int] = (),
        *,
        platform: str | DevicePlatform = "a2a3sim",
    ) -> None:
        self.params: tuple[ParamInfo, ...] = tuple(params)
        validate_param_names(self.params)
        self.return_aliases: tuple[int, ...] = validate_return_aliases(self.params, return_aliases)
        self._platform = platform_for(platform)
        slots = []
        for i, p in enumerate(self.params):
            if p.is_tensor:
                if p.layout is Layout.NZ and p.rank not in (2, 3):
                    raise SignatureError(
                        f"CallSignature: {describe_param(i, p)}: NZ shape {list(p.shape or ())} is a lowered "
                        "blocked shape, never a torch shape; pass the logical params ([R, C] or [B, R, C])"
                    )
                try:
                    torch_dtype = to_torch_dtype(p.dtype, what=describe_param(i, p))
                except ValueError as exc:
                    raise SignatureError(str(exc)) from None
                nz = (
                    p.layout is Layout.NZ
                    and p.direction is ParamDirection.IN
                    and p.dtype in _NZ_DTYPES
                    and self._platform.name == _NZ_PLATFORM
                )
                shape = p.shape or ()
                static = tuple((axis, d) for axis, d in enumerate(shape) if d >= 0)
                slots.append(_TensorSlot(i, p, torch_dtype, nz, len(shape), p.dtype.itemsize, static))
        self._tensor_slots = tuple(slots)
        self._scalar_slots = tuple(i for i, p in enumerate(self.params) if p.is_scalar)
        for i in self._scalar_slots:
            p = self.params[i]
            if not (
                p.dtype.is_signed_int
                or p.dtype.is_unsigned_int
                or p.dtype in _SCALAR_FLOATS
                or p.dtype is DataType.BOOL
            ):
                raise SignatureError(
                    f"CallSignature: {describe_param(i, p)}: {p.dtype.value} has no scalar argument type"
                )

    @property
    def platform(self) -> DevicePlatform:
        return self._platform

    def __repr__(self) -> str:
        names = ", ".join(f"{p.name}:{p.direction.value}" for p in self.params)
        return f"CallSignature([{names}], return_aliases={list(self.return_aliases)}, platform={self._platform.name!r})"

    def describe_call(self, args: Sequence[object]) -> CallFrame:
        """Validate one call's arguments and snapshot them with the current device and stream.

        Args:
            args: One argument per parameter, in signature order (Out/InOut included).

        Returns:
            A new :class:`CallFrame`.

        Raises:
            SignatureError: Missing or surplus arguments (raised before any framework query).
            ArgumentError: An argument breaks its parameter's contract, tensors span devices,
                Out/InOut views partially overlap another view, or the current device or
                stream does not match the tensors.
            NpuRuntimeUnavailable: An NPU platform query needs torch_npu and it is missing.
        """
        bound = bind_complete_args(self.params, args)
        platform = self._platform
        grad_enabled = torch.is_grad_enabled()
        devices: list[int] = []
        tensors = tuple(
            self._describe_tensor(slot, bound[slot.index][1], grad_enabled, devices)
            for slot in self._tensor_slots
        )
        scalars = tuple(
            ScalarArgument(
                i,
                self.params[i].name,
                self.params[i].dtype,
                check_scalar(i, self.params[i], bound[i][1], caller="describe_call"),
            )
            for i in self._scalar_slots
        )
        tensor_device = self._common_device(tensors, devices)
        _check_overlaps(tensors)
        # Context queries come last, and are made afresh on every call.
        device_index = platform.current_device()
        if tensor_device is not None and device_index != tensor_device:
            raise ArgumentError(
                f"describe_call: the tensors are on {platform.device_type}:{tensor_device} but the current "
                f"device is {platform.device_type}:{device_index}; make their device current "
                "(PyPTO never switches devices)"
            )
        stream = platform.current_stream(device_index)
        stream_device = platform.stream_device_index(stream)
        if stream_device != device_index:
            raise ArgumentError(
                f"describe_call: the current stream {stream!r} belongs to device {stream_device}, "
                f"but the current device is {device_index}"
            )
        by_index = {t.param_index: t.tensor for t in tensors}
        return CallFrame(
            signature=self,
            platform=platform.name,
            tensors=tensors,
            scalars=scalars,
            device_index=device_index,
            stream=stream,
            return_tensors=tuple(by_index[i] for i in self.return_aliases),
        )

    def _common_device(self, tensors: tuple[TensorArgument, ...], devices: list[int]) -> int | None:
        for t, device in zip(tensors, devices, strict=True):
            if device != devices[0]:
                first = tensors[0]
                raise ArgumentError(
                    f"describe_call: tensors span devices: parameter {first.name!r} is on "
                    f"{self._platform.device_type}:{devices[0]}, parameter {t.name!r} is on "
                    f"{self._platform.device_type}:{device}"
                )
        return devices[0] if devices else None

    def _describe_tensor(
        self, slot: _TensorSlot, arg: object, grad_enabled: bool, devices: list[int]
    ) -> TensorArgument:
        platform = self._platform
        if type(arg) not in _PLAIN_TENSOR_TYPES:
            _reject_non_plain_tensor(slot, arg)
        tensor: Any = arg
        if tensor.is_meta:
            raise _fail(
                slot,
                "got a Meta tensor, which has no device storage; describe_call needs real device tensors",
            )
        device = platform.tensor_device_index(tensor)
        if device is None:
            raise _fail(
                slot,
                f"expected a tensor on the {platform.device_type} device of platform {platform.name!r}, "
                f"got a tensor on {tensor.device}",
            )
        devices.append(device)
        if grad_enabled and tensor.requires_grad:
            raise _fail(
                slot,
                "the tensor requires grad while autograd is enabled; PyPTO kernels have no backward "
                "(call under torch.no_grad() or pass a detached tensor)",
            )
        if tensor.is_conj():
            raise _fail(slot, "got an unresolved conjugate view; call .resolve_conj() first")
        if tensor.is_neg():
            raise _fail(slot, "got an unresolved negative view; call .resolve_neg() first")
        shape = tuple(tensor.shape)
        if (
            tensor.dtype is not slot.torch_dtype
            or len(shape) != slot.rank
            or any(shape[axis] != want for axis, want in slot.static_dims)
        ):
            check_tensor_signature(slot.index, slot.param, tensor, slot.torch_dtype, caller="describe_call")
        fmt = platform.tensor_format(tensor)
        storage = tensor.untyped_storage()
        storage_ptr = storage.data_ptr()
        storage_nbytes = storage.nbytes()
        offset = tensor.storage_offset()
        itemsize = slot.itemsize
        numel = prod(shape)
        physical: tuple[int, ...] | None = None
        if fmt in _BASE_FORMATS:
            if not tensor.is_contiguous():
                raise _fail(
                    slot,
                    f"expected a contiguous view, got shape {list(shape)} with strides {list(tensor.stride())} "
                    "(transposed or strided views are not copied; pass .contiguous())",
                )
            nbytes = numel * itemsize
        elif fmt == FORMAT_FRACTAL_NZ and slot.nz_admitted:
            if not tensor.is_contiguous():
                raise _fail(slot, f"expected a contiguous NZ tensor, got strides {list(tensor.stride())}")
            physical = self._check_nz(slot, tensor, shape, itemsize)
            nbytes = prod(physical) * itemsize if numel else 0
        elif fmt == FORMAT_FRACTAL_NZ:
            param = slot.param
            raise _fail(
                slot,
                f"got storage format {fmt} (fractal NZ); it is admitted only for a read-only FP16/BF16/INT8 "
                f"input declared layout='NZ' on platform {_NZ_PLATFORM!r}, not for this "
                f"{param.direction.value} {param.dtype.value} {param.layout.value} parameter on {platform.name!r}; "
                "formats are never converted",
            )
        else:
            raise _fail(
                slot,
                f"got storage format {fmt}; expected base format ND ({FORMAT_ND}) or NCHW ({FORMAT_NCHW}); "
                "formats are never converted",
            )
        if numel:
            end = offset * itemsize + nbytes
            if storage_ptr == 0 or end > storage_nbytes:
                raise _fail(
                    slot,
                    f"invalid storage bounds: the view reaches byte {end} (storage offset {offset} elements, "
                    f"{nbytes} bytes) of a storage of {storage_nbytes} bytes at address {storage_ptr:#x}",
                )
        param = slot.param
        return TensorArgument(
            slot.index,
            param.name,
            param.direction,
            param.dtype,
            param.layout,
            shape,
            _row_major(shape),
            offset,
            fmt,
            storage_ptr + offset * itemsize,
            storage_ptr,
            storage_nbytes,
            nbytes,
            physical,
            tensor,
            storage,
        )

    def _check_nz(
        self, slot: _TensorSlot, tensor: Any, shape: tuple[int, ...], itemsize: int
    ) -> tuple[int, ...]:
        def fail(problem: str) -> ArgumentError:
            return _fail(slot, problem)

        if tensor.storage_offset() != 0:
            raise fail(f"an NZ input must start at storage offset 0, got {tensor.storage_offset()}")
        expected = nz_physical_shape(shape, itemsize)
        if expected is None:
            raise fail(
                f"logical shape {list(shape)} is not a whole number of NZ blocks (rows of 16, "
                f"columns of {_NZ_BLOCK_BYTES // itemsize}); padded NZ storage is not accepted"
            )
        desc: PhysicalDescriptor = self._platform.physical_descriptor(tensor)
        if desc.format != FORMAT_FRACTAL_NZ:
            raise fail(f"the physical storage reports format {desc.format}, expected {FORMAT_FRACTAL_NZ}")
        if desc.storage_offset != 0:
            raise fail(f"the physical NZ storage offset must be 0, got {desc.storage_offset}")
        if desc.storage_shape != expected:
            raise fail(
                f"physical NZ dimensions {list(desc.storage_shape)} are not the complete unpadded "
                f"matrix {list(expected)} of logical shape {list(shape)}"
            )
        need = prod(expected) * itemsize
        if desc.storage_nbytes < need:
            raise fail(f"the NZ storage holds {desc.storage_nbytes} bytes, the matrix needs {need}")
        return expected


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * max(shape[axis + 1], 1)
    return tuple(strides)


def _check_overlaps(tensors: tuple[TensorArgument, ...]) -> None:
    """Accept exact byte-span aliases, disjoint views and overlapping read-only views;
    reject a partial overlap in which an Out/InOut view takes part."""
    spans = sorted(
        ((t.data_ptr, t.data_ptr + t.nbytes, k) for k, t in enumerate(tensors) if t.nbytes),
    )
    for i, (start, end, k) in enumerate(spans):
        for other_start, other_end, m in spans[i + 1 :]:
            if other_start >= end:
                break
            if (other_start, other_end) == (start, end):
                continue
            a, b = tensors[k], tensors[m]
            if a.direction.writes or b.direction.writes:
                raise ArgumentError(
                    f"describe_call: parameters {a.name!r} ({a.direction.value}, bytes "
                    f"[{start:#x}, {end:#x})) and {b.name!r} ({b.direction.value}, bytes "
                    f"[{other_start:#x}, {other_end:#x})) partially overlap; a written view may "
                    "only alias another view exactly or be disjoint from it"
                )
